"""The per-host inventory CSV a blueprint names in ``site.inventory`` (docs/inventory.md): read and checked
when the blueprint is loaded, before anything is planned or rendered.

A site's inventory comes from a spreadsheet, a vendor's delivery list or a scan of the racks: it is input a
reviewer does not read line by line, and its values reach DHCP reservations, DNS, BMC plays and provisioner
files. So every cell has a kind, checked here, and every refusal is located at ``FILE.csv:line:col`` (exit 2):

* the file: a regular file inside the blueprint's directory (a symlink leaving it is refused), at most
  :data:`~clusterctl.limits.INVENTORY_MAX_BYTES` (refused unread beyond), UTF-8, no character a reviewer
  cannot see (clusterctl/hidden_chars.py), lines of at most :data:`~clusterctl.limits.INVENTORY_MAX_LINE`
  characters, at most :data:`~clusterctl.limits.INVENTORY_MAX_ROWS` rows;
* the header: the first line that is neither blank nor a ``#`` comment, naming columns of :data:`COLUMNS`
  (``host`` required, the others optional, any order; an unknown one gets a did-you-mean);
* ``host``: a host name (the plan checks that it is a planned on-prem host or a management device, a switch, a
  PDU or a CDU, by its DNS name: clusterctl/plan/host_identity.py), one row per host or device;
* ``serial``: a token of letters, digits, ``.``, ``_`` and ``-``, at most :data:`MAX_SERIAL` characters;
* ``inband_mac``, ``bmc_mac``, ``mgmt_mac`` (a management device's port; the plan refuses it on a host's row
  and the other MACs and ``bmc_secret`` on a device's): ``aa:bb:cc:dd:ee:ff``, ``AA-BB-CC-DD-EE-FF`` or ``aabb.ccdd.eeff``, kept in
  lower-case colon form; not multicast, broadcast or all-zero; no MAC twice in any row or column of any file;
* ``bmc_secret``: the NAME of an ansible-vault variable (``vault_`` then lower-case letters, digits and
  ``_``), never a value: anything else is refused without being shown, and its line is masked in the message.

Empty cells are "not known yet" (the coverage rules INVENTORY001 and INVENTORY002 count them); cells are split at commas, with
spaces around a cell ignored; no column's value may hold a comma or a quote, so there is no quoting.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.hidden_chars import lines_as_shown
from clusterctl.kinds import HOST_NAME, char_name
from clusterctl.limits import INVENTORY_MAX_BYTES, INVENTORY_MAX_LINE, INVENTORY_MAX_ROWS, InputLimits
from clusterctl.location import Path_, Position, SourceMap
from clusterctl.names import suspect, why_not_a_name
from clusterctl.source import read_input, refuse_hidden

COLUMNS = ("host", "serial", "inband_mac", "bmc_mac", "bmc_secret", "mgmt_mac")
"""the columns an inventory may have; ``host`` is required; ``mgmt_mac`` (a management device's port) came last, so
a file without it is still a valid inventory"""
MAX_SERIAL = 64
"""characters in a serial number: a bound of ours (no standard fixes one), far above a chassis serial's usual
length"""
SECRET_NAME = re.compile(r"vault_[a-z0-9_]{1,64}")
"""a bmc_secret cell: the name of an ansible-vault variable (docs/ansible.md, "Secrets")"""
_SERIAL = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_SERIAL - 1}}}")
_HEX = r"[0-9A-Fa-f]"
_MAC = re.compile(rf"{_HEX}{{2}}([:-]){_HEX}{{2}}(?:\1{_HEX}{{2}}){{4}}|{_HEX}{{4}}\.{_HEX}{{4}}\.{_HEX}{{4}}")
_CANONICAL_MAC = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}")
_MAC_SEPARATORS = re.compile(r"[:.-]")
_FAST_ROW = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]{0,252}),"
                       rf"({_SERIAL.pattern})?,({_CANONICAL_MAC.pattern})?,({_CANONICAL_MAC.pattern})?,"
                       rf"({SECRET_NAME.pattern})?(?:,({_CANONICAL_MAC.pattern})?)?")
"""a row of the template's columns, in order (``mgmt_mac`` last or absent), its values already in their canonical
form: read in one match (100,000 rows in about a second); any other row goes through the cell-by-cell checks that
locate its problem"""
MAC_FORMS = "aa:bb:cc:dd:ee:ff, AA-BB-CC-DD-EE-FF or aabb.ccdd.eeff"
SECRETS_HINT = ("write the name of an ansible-vault variable (e.g. vault_bmc_default) that holds {user: ..., "
                "password: ...} in secrets/vault.yml; never the credentials themselves (docs/ansible.md, \"Secrets\")")
MAX_PROBLEMS_PER_KIND = 20
"""problems listed per kind (a whole column of bad MACs is one mistake repeated); the rest are counted"""


@dataclass(frozen=True, slots=True)
class InventoryRow:
    """One host's row, its values checked and canonical (None for an empty cell or an absent column)."""

    line: int
    host: str
    host_col: int
    serial: str | None = None
    inband_mac: str | None = None
    bmc_mac: str | None = None
    bmc_secret: str | None = None
    inband_col: int = 0
    """where the in-band MAC's cell starts (0: no in-band column)"""
    bmc_col: int = 0
    mgmt_mac: str | None = None
    """a management device's port (switch, PDU, CDU): the plan allows it only on a device's row"""
    mgmt_col: int = 0
    secret_col: int = 0
    """where the bmc_secret cell starts (0: no bmc_secret column)"""


@dataclass(frozen=True)
class InventoryFile:
    """One inventory file as read: its name in ``site.inventory``, its text (for locating), its rows."""

    name: str
    source: SourceMap
    columns: tuple[str, ...]
    rows: tuple[InventoryRow, ...]
    """the hosts' rows (before the plan sorts them out: every row)"""
    devices: tuple[InventoryRow, ...] = ()
    """the management devices' rows, which the plan moves here from :attr:`rows`
    (clusterctl/plan/host_identity.py)"""


def canonical_mac(text: str) -> tuple[str | None, str]:
    """(``aa:bb:cc:dd:ee:ff``, "") for a MAC in one of :data:`MAC_FORMS`; (None, why) otherwise."""
    if _CANONICAL_MAC.fullmatch(text):  # the common case, already canonical: 100,000 rows in a blink
        mac = text
    elif len(text) <= 17 and _MAC.fullmatch(text):
        digits = _MAC_SEPARATORS.sub("", text).lower()
        mac = ":".join(digits[i:i + 2] for i in range(0, 12, 2))
    else:
        bad = next((ch for ch in text if ch not in "0123456789abcdefABCDEF:-."), None)
        why = f"may not contain {char_name(bad)}" if bad else "is not a MAC address"
        return None, f"{why}: write it as {MAC_FORMS}"
    if mac == "00:00:00:00:00:00":
        return None, "is all zero, which no port has"
    if mac == "ff:ff:ff:ff:ff:ff":
        return None, "is the broadcast address, which no port has"
    if mac[1] in "13579bdf":
        return None, "is a multicast address (the first octet is odd), which no port has"
    return mac, ""


def _cell_problem(column: str, value: str) -> tuple[str, str]:
    """(why ``value`` is not a ``column`` value, hint) or ("", "") when it is; ``value`` is never quoted for
    ``bmc_secret`` (it may be a password). MACs: :func:`canonical_mac`."""
    if value.startswith('"') or value.startswith("'"):
        return "is quoted", "write values without quotes: no column's value holds a comma or a quote"
    if column == "host":
        why = HOST_NAME.explain(value) or why_not_a_name(value)
        return (f"is not a host name: {why}", HOST_NAME.allowed) if why else ("", "")
    if column == "serial":
        if _SERIAL.fullmatch(value):
            return "", ""
        if len(value) > MAX_SERIAL:
            return f"has {len(value):,} characters, more than {MAX_SERIAL}", "check the column"
        bad = next((ch for ch in value if not (ch.isascii() and (ch.isalnum() or ch in "._-"))), None)
        return (f"may not contain {char_name(bad)}" if bad else "must start with a letter or digit",
                f"a serial is letters, digits, '.', '_' and '-', at most {MAX_SERIAL} characters")
    if SECRET_NAME.fullmatch(value):
        return "", ""
    what = "looks like user:password" if ":" in value else "is not the name of an ansible-vault variable"
    return f"{what} (the value is not shown: it may be a credential)", SECRETS_HINT


class _Collected:
    """Problems of one file, at most :data:`MAX_PROBLEMS_PER_KIND` of each kind listed, the rest counted."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.problems: list[Problem] = []
        self.per_kind: dict[str, int] = {}
        self.first_left_out: dict[str, Problem] = {}

    def add(self, kind: str, line: int, col: int, message: str, hint: str = "",
            code: LoadCode = LoadCode.INVENTORY_VALUE) -> None:
        n = self.per_kind[kind] = self.per_kind.get(kind, 0) + 1
        problem = Problem((), message, hint=hint, code=code, position=Position(line, col))
        if n <= MAX_PROBLEMS_PER_KIND:
            self.problems.append(problem)
        elif kind not in self.first_left_out:
            self.first_left_out[kind] = problem

    def raise_any(self) -> None:
        problems = list(self.problems)
        for kind, first in self.first_left_out.items():
            more = self.per_kind[kind] - MAX_PROBLEMS_PER_KIND
            problems.append(Problem((), f"... and {more:,} more problems of this kind ({kind}), the first here",
                                    hint="fix the ones above first; they are often one mistake repeated",
                                    code=first.code, position=first.position))
        if problems:
            _mask_secrets(self.smap)
            raise BlueprintError(self.smap, problems)


def _cells(line: str) -> list[tuple[str, int]]:
    """The cells of ``line`` with their 1-based columns, spaces and tabs around each cell dropped."""
    out, start = [], 0
    if " " not in line and "\t" not in line:  # the common case: nothing to strip
        for raw in line.split(","):
            out.append((raw, start + 1))
            start += len(raw) + 1
        return out
    for raw in line.split(","):
        stripped = raw.lstrip(" \t")
        out.append((stripped.rstrip(" \t"), start + len(raw) - len(stripped) + 1))
        start += len(raw) + 1
    return out


def _header(cells: list[tuple[str, int]], line: int, found: _Collected) -> tuple[str, ...]:
    columns = []
    for name, col in cells:
        if name not in COLUMNS:
            close = difflib.get_close_matches(name.lower(), COLUMNS, n=1, cutoff=0.6)
            found.add("header", line, col, f"unknown column '{name}'" if name.isprintable() else "unknown column",
                      f"did you mean '{close[0]}'?" if close else f"the columns are {','.join(COLUMNS)} (host "
                      "required)")
        elif name in columns:
            found.add("header", line, col, f"column '{name}' is named twice", "name each column once")
        columns.append(name)
    if "host" not in columns:
        found.add("header", line, 1, "the header has no 'host' column",
                  f"the first line that is not a comment names the columns: {','.join(COLUMNS)}")
    found.raise_any()
    return tuple(columns)


def _mask_secrets(smap: SourceMap) -> None:
    """Mask, in the lines shown with diagnostics, every ``bmc_secret`` cell that is not a vault variable's name (it
    may be a password): whatever problem a line has, a credential in it is never printed. Only on the way to an
    error, so a clean file costs nothing."""
    lines = smap.lines
    header = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), None)
    if header is None:
        return
    names = [name for name, _ in _cells(lines[header])]
    if "bmc_secret" not in names:
        return
    k = names.index("bmc_secret")
    for i in range(header + 1, len(lines)):
        cells = _cells(lines[i])
        if len(cells) > k and cells[k][0] and not SECRET_NAME.fullmatch(cells[k][0]):
            value, col = cells[k]
            lines[i] = lines[i][:col - 1] + "*" * 8 + lines[i][col - 1 + len(value):]


def _row(columns: tuple[str, ...], cells: list[tuple[str, int]], line: int, found: _Collected) -> InventoryRow | None:
    if len(cells) != len(columns):
        found.add("cells", line, 1, f"{len(cells)} cells, the header names {len(columns)} columns",
                  "one cell per column, empty ones too (gpu01,,02:00:00:00:00:01,,)")
        return None
    values: dict[str, str | None] = {}
    cols: dict[str, int] = {}
    ok = True
    for column, (value, col) in zip(columns, cells):
        if not value:
            if column == "host":
                found.add("host", line, col, "the host cell is empty", "every row names a planned host")
                ok = False
            values[column] = None
            continue
        cols[column] = col
        if column.endswith("_mac"):
            mac, why = canonical_mac(value)
            hint = f"a port's MAC as {MAC_FORMS} (locally administered ones too: 02:...)"
        else:
            mac, (why, hint) = None, _cell_problem(column, value)
        if why:
            shown = "" if column == "bmc_secret" or not value.isprintable() else f" '{value}'"
            found.add(column, line, col, f"{column}{shown} {why}", hint)
            ok = False
            continue
        values[column] = mac or value
    if not ok:
        return None
    return InventoryRow(line, values["host"], cells[columns.index("host")][1], values.get("serial"),
                        values.get("inband_mac"), values.get("bmc_mac"), values.get("bmc_secret"),
                        cols.get("inband_mac", 0), cols.get("bmc_mac", 0), values.get("mgmt_mac"),
                        cols.get("mgmt_mac", 0), cols.get("bmc_secret", 0))


def _fast_row(line: str, number: int, with_mgmt: bool) -> InventoryRow | None:
    """The row ``line`` if :data:`_FAST_ROW` reads it with ``mgmt_mac``'s cell exactly when ``with_mgmt`` and its
    host and MACs need no closer look; else None."""
    m = _FAST_ROW.fullmatch(line)
    if m is None or suspect(m.group(1)) or len(m.group(1)) > HOST_NAME.max_length:
        return None
    if with_mgmt != (line.count(",") == 5):  # no cell the pattern reads holds a comma
        return None  # a sixth cell in a five-column file, or a missing one
    inband, bmc, mgmt = m.group(3), m.group(4), m.group(6)
    for mac in (inband, bmc, mgmt):
        if mac is not None and (mac[1] in "13579bdf" or mac == "00:00:00:00:00:00"):
            return None
    return InventoryRow(number, m.group(1), 1, m.group(2), inband, bmc, m.group(5), m.start(3) + 1 if inband else 0,
                        m.start(4) + 1 if bmc else 0, mgmt, m.start(6) + 1 if mgmt else 0,
                        m.start(5) + 1 if m.group(5) else 0)


def parse_inventory_text(text: str, file: str, name: str | None = None) -> InventoryFile:
    """The inventory in ``text`` (the file ``file``); raises :class:`BlueprintError` with every problem located
    in it. Duplicates within the file are found here, across files by :func:`read_inventories`."""
    text = text[1:] if text.startswith("\ufeff") else text  # a spreadsheet's UTF-8 byte order mark
    smap = SourceMap(file=file, lines=lines_as_shown(text))
    try:
        refuse_hidden(text, smap, "an inventory file")
    except BlueprintError:
        _mask_secrets(smap)
        raise
    found = _Collected(smap)
    columns: tuple[str, ...] | None = None
    rows: list[InventoryRow] = []
    fast = with_mgmt = False
    for number, line in enumerate(smap.lines, 1):
        if len(line) > INVENTORY_MAX_LINE:
            found.add("line length", number, INVENTORY_MAX_LINE + 1, f"line of {len(line):,} characters, more than "
                      f"{INVENTORY_MAX_LINE}", "one row per host, five short cells", LoadCode.INPUT_LIMIT)
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if columns is None:
            columns = _header(_cells(line), number, found)
            fast = columns in (COLUMNS, COLUMNS[:-1])
            with_mgmt = columns == COLUMNS
            continue
        if len(rows) >= INVENTORY_MAX_ROWS:
            found.add("rows", number, 1, f"more than {INVENTORY_MAX_ROWS:,} rows in one inventory file",
                      "split the inventory into several files (one per hall or scalable unit) and list them in "
                      "site.inventory (docs/inventory.md)", LoadCode.INPUT_LIMIT)
            break
        row = (fast and _fast_row(line, number, with_mgmt)) or _row(columns, _cells(line), number, found)
        if row is not None:
            rows.append(row)
    found.raise_any()
    if columns is None:
        raise BlueprintError(smap, [Problem((), "the inventory has no header line", hint=f"start it with the "
                                            f"line {','.join(COLUMNS)}", code=LoadCode.INVENTORY_VALUE,
                                            position=Position(1, 1))])
    return InventoryFile(name or file, smap, columns, tuple(rows))


def _duplicates(files: tuple[InventoryFile, ...]) -> None:
    """A host with two rows, a MAC on two ports (any row, any column, any file): a located problem at the second,
    naming the first."""
    hosts: dict[str, tuple[str, int]] = {}
    macs: dict[str, tuple[str, int, str]] = {}
    for inv in files:
        found = _Collected(inv.source)
        file = inv.source.file
        for row in inv.rows:
            first = hosts.setdefault(row.host, (file, row.line))
            if first[1] != row.line or first[0] != file:
                found.add("duplicate host", row.line, row.host_col, f"host {row.host} has a second row; the first is "
                          f"at {first[0]}:{first[1]}", "keep one row per host")
            for column, mac, col in (("inband_mac", row.inband_mac, row.inband_col),
                                     ("bmc_mac", row.bmc_mac, row.bmc_col), ("mgmt_mac", row.mgmt_mac, row.mgmt_col)):
                if mac is None:
                    continue
                seen = macs.setdefault(mac, (file, row.line, column))
                if seen != (file, row.line, column):
                    found.add("duplicate MAC", row.line, col, f"{column} {mac} is also at {seen[0]}:{seen[1]} "
                              f"({seen[2]})", "a MAC belongs to one port: check both rows against the hardware")
        found.raise_any()


def resolved_inside(base: Path, name: str) -> Path | None:
    """``base/name`` if it resolves (symlinks followed) to a file inside ``base``; None otherwise."""
    root = Path(os.path.realpath(base))
    target = Path(os.path.realpath(base / name))
    return target if target.is_relative_to(root) else None


def read_inventories(names: list[str], base: Path, blueprint: SourceMap) -> tuple[InventoryFile, ...]:
    """The inventory files ``names`` (``site.inventory``) beside the blueprint in ``base``, checked; a file that
    is missing or leaves ``base`` is located at its ``site.inventory`` entry in ``blueprint``."""
    files = []
    seen: dict[Path, str] = {}
    for i, name in enumerate(names):
        at: Path_ = ("site", "inventory", i)
        path = base / name
        resolved = resolved_inside(base, name)
        if resolved in seen:
            raise BlueprintError(blueprint, [Problem(at, f"site.inventory[{i}] {name} is the file {seen[resolved]} "
                                                         "again", hint="list each inventory file once")])
        seen[resolved] = name
        if resolved is None:
            raise BlueprintError(blueprint, [Problem(at, f"site.inventory[{i}] {name} is a symlink that leads out of "
                                                         "the blueprint's directory", hint="copy the inventory "
                                                         "beside the blueprint (or in a directory under it)",
                                                     code=LoadCode.UNREADABLE_FILE)])
        if not path.exists():
            raise BlueprintError(blueprint, [Problem(at, f"site.inventory[{i}]: {path} does not exist", hint=
                                                     "write it with `clusterctl inventory template BLUEPRINT -o "
                                                     f"{path}`, or fix the name", code=LoadCode.UNREADABLE_FILE)])
        raw = read_input(path, InputLimits(max_bytes=INVENTORY_MAX_BYTES), "inventory file",
                         f"one inventory file holds at most {INVENTORY_MAX_ROWS:,} hosts; list several files in "
                         "site.inventory (docs/inventory.md)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BlueprintError(SourceMap(file=str(path), lines=[]), [Problem(
                (), f"not UTF-8 text (byte {exc.start})", hint="save the inventory as UTF-8 CSV",
                code=LoadCode.UNREADABLE_FILE, position=Position(1, 1))]) from None
        files.append(parse_inventory_text(text, str(path), name))
    out = tuple(files)
    _duplicates(out)
    return out
