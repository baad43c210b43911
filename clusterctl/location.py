"""Where things are in a blueprint file: positions, and the source map from document paths to positions.

A leaf: the loader (clusterctl/source.py) fills a :class:`SourceMap`, load errors (clusterctl/errors.py) carry
:class:`Position` s and the source they came from, and diagnostics turn paths into ``file:line:col`` with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Path_ = tuple[str | int, ...]
"""a path into a loaded document: ``("node_groups", 1, "count")``"""


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 1-based
    col: int  # 1-based

    def where(self, file: str) -> str:
        """``file:line:col``, as compilers and editors write a location."""
        return f"{file}:{self.line}:{self.col}"


@dataclass(slots=True)
class SourceMap:
    """Where each path of a loaded document sits in its file."""

    file: str
    lines: list[str]
    values: dict[Path_, Position] = field(default_factory=dict)
    keys: dict[Path_, Position] = field(default_factory=dict)

    def locate(self, path: Path_, *, key: bool = False) -> Position:
        """The position of ``path``; falls back to the nearest ancestor that exists."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if p in self.values:
                return self.values[p]
            p = p[:-1]
        return self.values.get((), Position(1, 1))

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def plain_scalar(self, path: Path_) -> str | None:
        """The text of the unquoted scalar at ``path`` as written in the file (``24.10`` where YAML read
        the number 24.1), or None when no value starts at ``path``'s own position."""
        pos = self.values.get(tuple(path))
        if pos is None:
            return None
        m = _PLAIN_WORD.match(self.line_text(pos.line), pos.col - 1)
        return m.group(0) if m else None


_PLAIN_WORD = re.compile(r"[^\s,\[\]{}#&*!|>'\"%@`]+")
"""a plain scalar without spaces up to where flow or comment syntax ends it (numbers, booleans)"""
