"""Errors that stop clusterctl before rules can run, and the codes of every diagnostic that is not a rule's.

Problems that make a blueprint unreadable carry codes of their own (:class:`LoadCode`, BP001-BP009) so that
machine formats can tell them apart from rule findings; the META codes are findings no rule makes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from clusterctl.location import Position, SourceMap


class LoadCode(StrEnum):
    """The one list of the codes that are not rules' (docs/cli.md): each member is the code itself (a ``str``,
    printed and compared as ``"BP001"``) with its ``title`` (the diagnostic's title in every output format)
    and ``meaning`` (as docs/cli.md words it; tests/test_codes.py holds the two together)."""

    title: str
    meaning: str
    unreadable: bool
    """the blueprint cannot be read (exit 2, before any rule); False: a finding of the rule run"""

    def __new__(cls, code: str, title: str, meaning: str, unreadable: bool = True) -> "LoadCode":
        member = str.__new__(cls, code)
        member._value_ = code
        member.title = title
        member.meaning = meaning
        member.unreadable = unreadable
        return member

    @property
    def code(self) -> str:
        return self.value

    YAML_SYNTAX = "BP001", "blueprint is not valid YAML", "YAML syntax"
    DUPLICATE_KEY = "BP002", "duplicate key", "duplicate key"
    SCHEMA = "BP003", "blueprint does not match the schema", "schema"
    UNKNOWN_REFERENCE = ("BP004", "unknown reference",
                         "unknown reference (catalog model, node type, rack profile, rack, group, CDU)")
    HOST_LIST = "BP005", "bad host list", "bad host list"
    UNREADABLE_FILE = ("BP006", "blueprint cannot be read",
                       "file cannot be read (missing, not a regular file, over the size limit)")
    INPUT_LIMIT = ("BP007", "blueprint exceeds an input limit",
                   "over an input limit (nesting, values, hosts, racks and switches planned)")
    HIDDEN_CHARACTER = ("BP008", "blueprint contains a character a reviewer cannot see",
                        "a character a diff does not show as it is parsed (a line end other than LF or CRLF, a "
                        "bidirectional control, a control or invisible format character)")
    INVENTORY_VALUE = ("BP009", "inventory file refused",
                       "a value of a per-host inventory CSV refused: an unknown column or host, a MAC, serial or "
                       "secret name of the wrong form, a host or MAC listed twice (docs/inventory.md)")
    PRICE_SHEET = ("BP010", "price sheet refused",
                   "a value of the site's price sheet (cost.price_sheet) refused: a negative, non-finite or reversed "
                   "price, an item the catalog does not know, a currency other than USD, a source without an "
                   "evidence tag, a date in the future (docs/report.md)")
    UNKNOWN_SUPPRESSION = ("META001", "suppression of an unknown rule",
                           "a suppression in the blueprint names an unknown rule (a warning)", False)
    ERROR_SUPPRESSION = ("META002", "blueprint suppression of an error",
                         "a suppression in the blueprint names a rule with error findings, which only "
                         "`--suppress` on the command line can suppress (a warning)", False)
    CATALOG_OVERRIDE = ("META003", "catalog entry overrides a shipped one",
                        "a blueprint catalog entry replaces a shipped entry of the same name; the fields that "
                        "differ, old and new (an info)", False)


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a blueprint cannot be read: a path into the document, a message and a hint."""

    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    code: LoadCode = LoadCode.SCHEMA
    key: bool = False  # locate the key rather than the value (unknown / duplicate keys)
    position: Position | None = None  # explicit position (YAML syntax errors)


class BlueprintError(Exception):
    """The blueprint cannot be turned into a model. Carries every problem found, each located."""

    def __init__(self, source: SourceMap, problems: list[Problem]):
        self.source = source
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))
