"""Errors that stop clusterctl before rules can run, and the documented exit codes.

Problems that make a blueprint unreadable carry codes of their own (BP001-BP007) so that machine
formats can tell them apart from rule findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterctl.source import Position, SourceMap

#: the blueprint is valid (warnings and infos allowed)
EXIT_OK = 0
#: findings at or above the ``--fail-on`` severity (default: error)
EXIT_FINDINGS = 1
#: the blueprint could not be read (YAML, shape, unknown catalog names) or the command was misused
EXIT_UNREADABLE = 2


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a blueprint cannot be read: a path into the document, a message and a hint."""

    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    code: str = "BP003"
    """BP001 YAML syntax, BP002 duplicate key, BP003 shape (schema), BP004 unknown reference,
    BP005 bad host list, BP006 unreadable file (missing, not a regular file, over the size limit),
    BP007 over an input limit (nesting depth, YAML values after alias expansion)"""
    key: bool = False  # locate the key rather than the value (unknown / duplicate keys)
    position: "Position | None" = None  # explicit position (YAML syntax errors)


class BlueprintError(Exception):
    """The blueprint cannot be turned into a model. Carries every problem found, each located."""

    def __init__(self, source: "SourceMap", problems: list[Problem]):
        self.source = source
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))
