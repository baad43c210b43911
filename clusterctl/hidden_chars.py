"""Characters that make text read differently from what it is: refused in what clusterctl reads from the user,
escaped in what it prints.

A reviewer reads a blueprint as ``git diff`` or an editor shows it: a line ends at LF, and a CRLF pair is one
line end. YAML 1.1, which PyYAML and libyaml implement, also ends a line at a lone CR, NEL (U+0085), LINE
SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029): inside a comment, one of them makes the rest of the
"comment" a new line of YAML that the diff shows as part of the comment. Bidirectional controls reorder how
the text around them is displayed ("Trojan Source", CVE-2021-42574), zero-width and other format characters
are invisible, and control characters drive the terminal instead of being shown. A file that holds any of
them does not read as it parses, so :func:`find_hidden` finds them (one pass of a compiled expression) for
the readers to refuse, located as the diff shows them; :func:`escape_hidden` escapes the same characters
(``\\u202e``, ``\\x1b``) in anything printed for a person, so text from a blueprint or a stack output never
drives the terminal or reorders a message; :func:`shown` is the one way a message quotes an untrusted value
(one line, quoted, escaped, cut).

What is hidden: every control character (Unicode category Cc) but tab and LF (and CR directly before LF),
every format character (Cf: bidi controls and marks, zero-width characters, the soft hyphen, tag
characters, ...), and the line and paragraph separators (Zl, Zp). A byte order mark (U+FEFF) is allowed as
the first character of a file, where editors write it and the YAML reader drops it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from itertools import islice

_FORMAT_BMP = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
               "\u2060-\u206f\ufeff\ufff9-\ufffb")
_FORMAT_ASTRAL = ("\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                  "\U000e0020-\U000e007f")
"""the format characters (Cf) of Unicode 15.1, ranges closed over unassigned neighbours
(tests/security/test_yaml_reading.py checks the set against the running Python's Unicode database)"""
_SEPARATORS = "\u2028\u2029"
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
"""C0 but tab, LF and CR; DEL; C1 (NEL among them)"""

# A reader refuses these. Three expressions, because one class holding the astral ranges costs ~75 ns a
# character (0.3 s for 4 MiB) while these cost ~15: the astral one runs only on text that has a character
# beyond U+FFFF, the lone-CR one only on text with a CR (a CR is allowed as the first half of a CRLF).
_HIDDEN_BMP = re.compile(f"[{_CONTROLS}{_SEPARATORS}{_FORMAT_BMP}]")
_HIDDEN_ASTRAL = re.compile(f"[{_FORMAT_ASTRAL}]")
_ANY_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LONE_CR = re.compile("\r(?!\n)")
_UNSHOWN = re.compile(f"[{_CONTROLS}{_SEPARATORS}{_FORMAT_BMP}{_FORMAT_ASTRAL}\r]")
"""what a printer escapes: every CR too (it returns the cursor over the line printed so far)"""

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_ENDS = frozenset("\r\x85\u2028\u2029")

_C0_NAMES = ("NULL", "START OF HEADING", "START OF TEXT", "END OF TEXT", "END OF TRANSMISSION", "ENQUIRY",
             "ACKNOWLEDGE", "BELL", "BACKSPACE", "CHARACTER TABULATION", "LINE FEED", "LINE TABULATION", "FORM FEED",
             "CARRIAGE RETURN", "SHIFT OUT", "SHIFT IN", "DATA LINK ESCAPE", "DEVICE CONTROL ONE",
             "DEVICE CONTROL TWO", "DEVICE CONTROL THREE", "DEVICE CONTROL FOUR", "NEGATIVE ACKNOWLEDGE",
             "SYNCHRONOUS IDLE", "END OF TRANSMISSION BLOCK", "CANCEL", "END OF MEDIUM", "SUBSTITUTE", "ESCAPE",
             "FILE SEPARATOR", "GROUP SEPARATOR", "RECORD SEPARATOR", "UNIT SEPARATOR")
"""the names of the C0 controls (Unicode name aliases; ``unicodedata.name`` knows none of them)"""


def hint(what: str = "a blueprint") -> str:
    """How to fix a file ``what`` that holds a hidden character."""
    return (f"delete it (or retype the line): {what} may hold only what a diff shows as it is parsed - printable "
            f"text, tabs and line ends (LF or CRLF)")


def char_label(ch: str) -> str:
    """``U+2028 LINE SEPARATOR``: the code point and its name, never the character itself."""
    cp = ord(ch)
    if cp < 0x20:
        name = _C0_NAMES[cp]
    elif cp == 0x7F:
        name = "DELETE"
    elif cp == 0x85:
        name = "NEXT LINE (NEL)"
    elif 0x80 <= cp <= 0x9F:
        name = "(a C1 control character)"
    else:
        name = unicodedata.name(ch, "(unnamed)")
    return f"U+{cp:04X} {name}"


def why_hidden(ch: str) -> str:
    """Why a reviewer cannot read ``ch`` as it is parsed, in a few words."""
    if ch in _LINE_ENDS:
        return ("YAML 1.1 ends a line here, a diff does not: what follows is parsed as a new line of YAML "
                "while the diff shows it inside this one (a comment hides it)")
    if ch in _BIDI:
        return "a bidirectional control: it reorders how the text around it is shown, so a diff reads otherwise"
    if unicodedata.category(ch) == "Cc":
        return "a control character: a terminal acts on it instead of showing it"
    return "an invisible format character: a diff does not show it"


@dataclass(frozen=True, slots=True)
class Hidden:
    """One hidden character, where a diff shows it: ``line`` counts LF line ends, ``col`` characters (1-based)."""

    line: int
    col: int
    char: str

    @property
    def message(self) -> str:
        return f"{char_label(self.char)}: {why_hidden(self.char)}"


def _positions(text: str, start: int, limit: int) -> list[int]:
    """The offsets of the first ``limit`` hidden characters of ``text`` from ``start``, in order."""
    found = list(islice((m.start() for m in _HIDDEN_BMP.finditer(text, start)), limit))
    if "\r" in text:
        found += islice((m.start() for m in _LONE_CR.finditer(text, start)), limit)
    if _ANY_ASTRAL.search(text, start):
        found += islice((m.start() for m in _HIDDEN_ASTRAL.finditer(text, start)), limit)
    return sorted(found)[:limit]


def find_hidden(text: str, limit: int = 20) -> list[Hidden]:
    """The first ``limit`` hidden characters of ``text`` with their places; ``[]`` for clean text (a few
    scans of compiled expressions: under 0.1 s for 4 MiB)."""
    start = 1 if text.startswith("\ufeff") else 0
    found: list[Hidden] = []
    line, line_start, counted_to = 1, start, start
    for at in _positions(text, start, limit):
        breaks = text.count("\n", counted_to, at)
        if breaks:
            line += breaks
            line_start = text.rfind("\n", counted_to, at) + 1
        counted_to = at
        found.append(Hidden(line, at - line_start + 1, text[at]))
    return found


def count_hidden(text: str, cap: int = 100_000) -> int:
    """How many hidden characters ``text`` holds, counting up to ``cap`` (a summary needs no more, and a
    file of millions of them is answered as fast as one of a few)."""
    return len(_positions(text, 1 if text.startswith("\ufeff") else 0, cap))


def lines_as_shown(text: str) -> list[str]:
    """The lines of ``text`` as a diff shows them: split at LF only, the CR of a CRLF line end dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _escape(m: re.Match) -> str:
    ch = m.group()
    if ch == "\r":
        return "\\r"
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def escape_hidden(text: str) -> str:
    """``text`` safe to print for a person: every control, format and separator character but LF and tab
    written as an escape (``\\x1b``, ``\\r``, ``\\u202e``); the rest unchanged. Idempotent."""
    return _UNSHOWN.sub(_escape, text)


def escaped_column(text: str, col: int) -> int:
    """The column, in :func:`escape_hidden` ``(text)``, of the character at ``col`` (1-based) of ``text``: where a
    caret goes under an escaped line."""
    return len(escape_hidden(text[:col - 1])) + 1


SHOWN_CHARS = 60
"""the most characters of a value a message quotes: a 50 MB value is reported, not printed"""
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'"}


def _shown_char(ch: str) -> str:
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    if ch.isprintable() and not _UNSHOWN.match(ch):
        return ch
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def shown(value: object, limit: int = SHOWN_CHARS, *, what: str = "") -> str:
    """An untrusted value as it may stand in one line of a message: the one way clusterctl quotes a value from
    a blueprint, a stack output or a node.

    Text is single-quoted; line ends, tabs, control, bidi, format and every other non-printable character are
    written as escapes (``\\n``, ``\\x1b``, ``\\u202e``), and ``\\`` and ``'`` as ``\\\\`` and ``\\'``, so
    the message is one line that reads as the value is, and cannot drive the terminal. Other values are
    shown as JSON (``null``, ``["1"]``), unquoted, non-ASCII written as ``\\u`` escapes. A value longer than ``limit``
    characters is cut there and its length said: ``'xxx...' (50,000,000 characters)``. ``what`` names
    the kind of value after it: ``'4' (text)``, ``'xxx...' (50,000,000 characters of text)``."""
    if isinstance(value, str):
        cut = "".join(_shown_char(ch) for ch in value[:limit])
        return _cut_said(f"'{cut}", "'", len(value), limit, what)
    try:  # JSON with ensure_ascii (or ascii()) is printable ASCII already: nothing left to escape
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = ascii(value)
    return _cut_said(text[:limit], "", len(text), limit, what)


def _cut_said(shown_part: str, quote: str, length: int, limit: int, what: str) -> str:
    if length > limit:
        return f"{shown_part}...{quote} ({length:,} characters{f' of {what}' if what else ''})"
    return f"{shown_part}{quote}" + (f" ({what})" if what else "")
