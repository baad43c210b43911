"""How much input clusterctl accepts: the bounds that keep every command fast and small, whatever it is fed.

A blueprint describes a cluster with host ranges (``gpu[00001-87500]``), so even the largest valid design is
a few tens of KB. The limits are far above that and far below what could make a command run for minutes or
use gigabytes: a 4 MiB file, 64 levels of nesting, and a number of YAML values (after expanding aliases) that
scales with the size limit, so one option (``--max-input-size`` or ``CLUSTERCTL_MAX_INPUT_SIZE``) raises all
of them together.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

ENV_VAR = "CLUSTERCTL_MAX_INPUT_SIZE"
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
BYTES_PER_VALUE = 40
"""one YAML value (scalar, list or mapping) per this many bytes of the size limit: ``k: 1`` is 5 bytes and
two values, so a file of tiny keys is stopped by the value count before the size limit; real blueprints use
a few hundred values"""
MAX_DEPTH = 64
"""nesting depth (lists and mappings, aliases expanded); the deepest shipped blueprint uses 6"""
MAX_PLANNED = 2_000_000
"""hosts, racks and switches one plan may name in all, counted from the host ranges and fabric figures before
anything is expanded (clusterctl/plan/size.py): twenty times the largest shipped design (frontier-3tier-100k)
and far above any cluster built, while expanding it stays within a few hundred MB; not scaled by
``--max-input-size`` (a few bytes of range can name millions of hosts)"""
MIN_VALUES = 10_000
MIN_BYTES = 1000

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


@dataclass(frozen=True, slots=True)
class InputLimits:
    """The bounds applied to one input file."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = MAX_DEPTH

    @property
    def max_values(self) -> int:
        """YAML values allowed after alias expansion; grows with the size limit."""
        return max(MIN_VALUES, self.max_bytes // BYTES_PER_VALUE)


def parse_size(text: str) -> int:
    """``4MiB``, ``64M``, ``1000000`` -> bytes; raises ValueError with a sentence for anything else."""
    m = re.fullmatch(r"\s*(\d{1,15})\s*([kmg]i?b?|b)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"'{text}' is not a size (write e.g. 4MiB, 64M or 1000000)")
    value = int(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    if value < MIN_BYTES:
        raise ValueError(f"'{text}' is below the smallest input limit, {MIN_BYTES} bytes")
    return value


_configured: InputLimits | None = None


def configure(max_bytes: int | None) -> None:
    """Set the limits for this process (the command line's ``--max-input-size``); None goes back to the
    environment variable and the defaults (each command-line run sets it, so in-process runs do not leak)."""
    global _configured
    _configured = None if max_bytes is None else InputLimits(max_bytes=max_bytes)


def input_limits() -> InputLimits:
    """The limits in force: ``configure()`` first, then the environment variable, then the defaults.

    An unparsable environment value is ignored here (the command line reports it as misuse)."""
    if _configured is not None:
        return _configured
    raw = os.environ.get(ENV_VAR)
    if raw:
        try:
            return InputLimits(max_bytes=parse_size(raw))
        except ValueError:
            pass
    return InputLimits()


# --- the per-host inventory CSV (docs/inventory.md) ----------------------------------------------------------
# A row is about 80 bytes (``gpu000001,SN0123456789,02:00:00:00:00:01,02:00:00:01:00:01,vault_bmc_default``), so
# one file of the limits below holds 100,000 hosts; a larger site lists several files (one per hall or scalable
# unit) in ``site.inventory``, up to INVENTORY_MAX_FILES of them (800,000 hosts). Not raised by --max-input-size.

INVENTORY_MAX_BYTES = 8 * 1024 * 1024
"""one inventory file: 8 MiB, 100,000 rows of 80 bytes with room to spare; a 10 MB file is refused unread"""
INVENTORY_MAX_ROWS = 100_000
"""data rows in one inventory file (comments and blank lines not counted)"""
INVENTORY_MAX_LINE = 512
"""characters in one line of an inventory file: the longest valid row (a 253-character host name, a 64-character
serial, three MACs' cells, a 70-character secret name; in fact no row has all three: a device's row has only
mgmt_mac) has 443"""
INVENTORY_MAX_FILES = 8
"""inventory files one blueprint names"""
