"""Slurm-style host lists: ``gpu[0001-0128]``, ``head[01-02],login01``, ``r[01-04,07]``.

``expand`` turns an expression into names, ``compress`` turns names back into the shortest expression
with the same order of ranges, ``count`` counts without building strings. Zero padding is kept: the
width of a range is the width of its lower bound as written (``[001-128]`` gives ``001``..``128``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import product

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_NAME = re.compile(r"^[A-Za-z0-9._-]*$")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


class HostlistError(ValueError):
    """A host list expression that cannot be expanded."""


def _split_top(expr: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in '{expr}'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise HostlistError(f"unbalanced '[' in '{expr}'")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _ranges(body: str, expr: str) -> list[tuple[int, int, int]]:
    """``01-04,07`` -> [(1, 4, 2), (7, 7, 2)] as (low, high, width)."""
    out = []
    for item in body.split(","):
        item = item.strip()
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise HostlistError(f"'[{body}]' in '{expr}' is not a list of numbers or ranges like 01-32")
        low, high = int(lo), int(hi) if sep else int(lo)
        if high < low:
            raise HostlistError(f"range {item} in '{expr}' runs backwards")
        out.append((low, high, len(lo)))
    return out


def _pieces(term: str, expr: str) -> list[str | list[tuple[int, int, int]]]:
    pieces: list = []
    pos = 0
    for m in _BRACKET.finditer(term):
        pieces.append(term[pos:m.start()])
        pieces.append(_ranges(m.group(1), expr))
        pos = m.end()
    pieces.append(term[pos:])
    for text in pieces[::2]:
        if not _NAME.match(text):
            raise HostlistError(f"'{expr}' has characters a host name cannot contain")
    return pieces


def _term_iter(term: str, expr: str) -> Iterator[str]:
    pieces = _pieces(term, expr)
    literals = pieces[::2]
    choices = []
    for rng in pieces[1::2]:
        choices.append([str(n).zfill(w) for lo, hi, w in rng for n in range(lo, hi + 1)])
    if not choices:
        yield literals[0]
        return
    for combo in product(*choices):
        out = [literals[0]]
        for num, lit in zip(combo, literals[1:]):
            out.append(num)
            out.append(lit)
        yield "".join(out)


def expand(expr: str) -> list[str]:
    """All names of ``expr`` in order. Raises :class:`HostlistError`."""
    if not isinstance(expr, str) or not expr.strip():
        raise HostlistError("an empty host list")
    names: list[str] = []
    for term in _split_top(expr.strip()):
        if not term:
            raise HostlistError(f"an empty name in '{expr}'")
        names.extend(_term_iter(term, expr))
    return names


def count(expr: str) -> int:
    """How many names ``expr`` has, without building them."""
    if not isinstance(expr, str) or not expr.strip():
        raise HostlistError("an empty host list")
    total = 0
    for term in _split_top(expr.strip()):
        if not term:
            raise HostlistError(f"an empty name in '{expr}'")
        n = 1
        for rng in _pieces(term, expr)[1::2]:
            n *= sum(hi - lo + 1 for lo, hi, _ in rng)
        total += n
    return total


def _fmt(n: int, width: int) -> str:
    return str(n).zfill(width) if width else str(n)


def compress(names: Iterable[str]) -> str:
    """The shortest Slurm host list of ``names``, keeping their order (consecutive runs merge)."""
    groups: list[tuple[str, int, list[tuple[int, int]]]] = []  # (prefix, width, [(lo, hi)])
    for name in names:
        m = _TRAILING_NUMBER.match(name)
        if not m:
            groups.append((name, -1, []))
            continue
        prefix, digits = m.group(1), m.group(2)
        num = int(digits)
        if groups:
            gp, gw, rngs = groups[-1]
            if gp == prefix and gw >= 0 and (str(num).zfill(gw) if gw else str(num)) == digits:
                lo, hi = rngs[-1]
                if num == hi + 1:
                    rngs[-1] = (lo, num)
                else:
                    rngs.append((num, num))
                continue
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.append((prefix, width, [(num, num)]))
    out = []
    for prefix, width, rngs in groups:
        if width < 0:
            out.append(prefix)
            continue
        if len(rngs) == 1 and rngs[0][0] == rngs[0][1]:
            out.append(prefix + _fmt(rngs[0][0], width))
            continue
        body = ",".join(_fmt(lo, width) if lo == hi else f"{_fmt(lo, width)}-{_fmt(hi, width)}" for lo, hi in rngs)
        out.append(f"{prefix}[{body}]")
    return ",".join(out)
