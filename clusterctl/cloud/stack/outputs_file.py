"""Reading ``pulumi stack output --json`` as untrusted input: bounded, strict JSON.

The outputs file comes from a stack the user (or a CI job, or whoever can write the state) controls, and
what it says ends up in ``ansible/inventory.yml`` and every node's ``/etc/hosts``. So before any of it is
used it must be a regular file of at most :data:`MAX_OUTPUTS_BYTES`, UTF-8, one JSON object with at most
:data:`MAX_CONTAINERS` objects and arrays nested at most :data:`MAX_DEPTH` levels, with no duplicate keys
(``json`` would silently keep the last one, so a second ``"private_ip"`` could hide behind the first in
review), no ``NaN``/``Infinity`` and no character a reader cannot see as it is parsed (a control, bidi or
invisible format character, a line end other than LF or CRLF: clusterctl/hidden_chars.py). Every refusal is an
:class:`OutputsError` naming the file, what was expected and how to produce the right file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from clusterctl.hidden_chars import char_label, find_hidden, hint

MAX_OUTPUTS_BYTES = 8 * 2**20
"""8 MiB: ``pulumi stack output --json`` takes ~150 bytes per node, so this holds ~50,000 nodes"""
MAX_CONTAINERS = 100_000
"""objects and arrays: one per node plus a few dozen; counted before parsing (a bracket inside a string counts
too, which only errs on the safe side), because millions of tiny ``[]`` in 8 MiB would cost seconds and
hundreds of MB to build"""
MAX_DEPTH = 32
"""the programs' outputs nest 4 levels deep (``file_systems.<tier>.<key>``); 32 leaves room"""
WRITE_HINT = "write it with: pulumi stack output --json --show-secrets > outputs.json"


class OutputsError(ValueError):
    """The Pulumi outputs cannot be read or do not match the blueprint. ``str()`` is the located message."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class _Object(dict):
    """A JSON object that remembers the keys it had more than once."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, object]]) -> dict:
    """A plain dict, or an :class:`_Object` naming its duplicate keys (rare: only then pay for the subclass)."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Object(pairs)
    seen: set[str] = set()
    marked.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return marked


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "named pipe"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _read_bytes(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file; opened non-blocking so a named pipe cannot hang us."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise OutputsError(f"{path}: cannot read the Pulumi outputs: {exc.strerror or exc}", WRITE_HINT) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputsError(f"{path}: the Pulumi outputs must be a regular file, this is a {_kind(st.st_mode)}",
                               "save the outputs to a file first: pulumi stack output --json --show-secrets "
                               "> outputs.json")
        if st.st_size > limit:
            raise OutputsError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} bytes a stack's outputs "
                               f"can take", "pass the file `pulumi stack output --json` wrote, nothing else")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise OutputsError(f"{path}: cannot read the Pulumi outputs: {exc.strerror or exc}", WRITE_HINT) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OutputsError(f"{path}: more than the {limit:,} bytes a stack's outputs can take (the file grew while "
                           f"it was read)", "pass the file `pulumi stack output --json` wrote, nothing else")
    return data


def _shape(data: object) -> tuple[int, bool]:
    """(nesting depth, whether any object has a duplicate key). A stack of iterators: memory grows with the
    depth, not with the width, so a list of millions of small values costs nothing here."""
    deepest, duplicates = 0, False
    stack = [iter((data,))]
    while stack:
        for value in stack[-1]:
            if isinstance(value, (dict, list)):
                deepest = max(deepest, len(stack))
                duplicates = duplicates or bool(getattr(value, "duplicates", ()))
                stack.append(iter(value.values() if isinstance(value, dict) else value))
                break
        else:
            stack.pop()
    return deepest, duplicates


def _duplicate_paths(value: object, where: str = "", found: list[str] | None = None, limit: int = 5) -> list[str]:
    """``a.b: "key"`` for the first ``limit`` objects holding a key twice (recursive: depth is checked first)."""
    found = [] if found is None else found
    if isinstance(value, dict):
        found += [f"{where or '(top level)'}: {json.dumps(k)}" for k in getattr(value, "duplicates", ())]
        children = ((f"{where}.{k}" if where else k, v) for k, v in value.items())
    elif isinstance(value, list):
        children = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return found
    for path, child in children:
        if len(found) >= limit:
            break
        if isinstance(child, (dict, list)):
            _duplicate_paths(child, path, found, limit)
    return found[:limit]


def read_outputs(path: Path | str, max_bytes: int = MAX_OUTPUTS_BYTES) -> dict:
    """The JSON object of ``pulumi stack output --json --show-secrets``, read within the limits above."""
    path = Path(path)
    raw = _read_bytes(path, max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise OutputsError(f"{path}:{line}: not UTF-8 text (byte {exc.start})", WRITE_HINT) from None
    hidden = find_hidden(text, limit=1)
    if hidden:  # Pulumi escapes these; a raw one was put there by hand, to read differently than it parses
        h = hidden[0]
        raise OutputsError(f"{path}:{h.line}:{h.col}: {char_label(h.char)}: a character a reader of the file "
                           f"cannot see as it is parsed", f"{hint('the outputs file')}; {WRITE_HINT}")
    containers = text.count("{") + text.count("[")
    if containers > MAX_CONTAINERS:
        raise OutputsError(f"{path}: {containers:,} JSON objects/arrays, more than the {MAX_CONTAINERS:,} a stack's "
                           f"outputs can have (one per node)", "pass the file `pulumi stack output --json` wrote, "
                           "nothing else")
    too_deep = OutputsError(f"{path}: JSON nested more than {MAX_DEPTH} levels deep; a stack's outputs need 4",
                            "pass the file `pulumi stack output --json` wrote, nothing else")
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise OutputsError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}",
                           "pass the output of `pulumi stack output --json --show-secrets`, not the text format") \
            from None
    except RecursionError:
        raise too_deep from None  # the C parser stops at Python's recursion limit, long before memory runs out
    except ValueError as exc:
        raise OutputsError(f"{path}: not JSON: {exc}", WRITE_HINT) from None
    if not isinstance(data, dict):
        raise OutputsError(f"{path}: expected a JSON object of stack outputs, got {type(data).__name__}",
                           "pass the output of `pulumi stack output --json --show-secrets`")
    depth, any_duplicate = _shape(data)
    if depth > MAX_DEPTH:
        raise too_deep
    duplicates = _duplicate_paths(data) if any_duplicate else []
    if duplicates:
        raise OutputsError(f"{path}: duplicate JSON key(s), which a JSON reader would silently resolve to the last "
                           f"value: " + "; ".join(duplicates),
                           "Pulumi never writes a key twice: regenerate the file with `pulumi stack output --json "
                           "--show-secrets` instead of editing it")
    return data
