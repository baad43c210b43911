"""Numbered host names as runs: ``gpu0001..gpu0128`` is one run (prefix ``gpu``, width 4, 1 to 128). The
Ansible inventory writes each run as a range (``gpu[0001:0128]``) and the RoCE variables carry them so the
roce_network role finds a host's index from its name; both take the runs from here.

Zero padding is kept: Ansible pads to the width of the lower bound when it starts with 0 and then requires both
bounds to have that width, so a run only continues while the number keeps its width (``gpu09, gpu10`` is one
run, ``n9, n10`` too).
"""

from __future__ import annotations

_DIGITS = "0123456789"


def host_runs(names: tuple[str, ...] | list[str]) -> list[list]:
    """Host names as runs ``[prefix, width, first, last, index]``: the names ``prefix`` + number for
    ``first..last`` (zero-padded to ``width`` digits, 0 = unpadded) are hosts ``index..`` of the group.
    A name without a trailing number is its own run with width -1. Linear in the number of hosts."""
    runs: list[list] = []
    last: list | None = None
    for i, name in enumerate(names):
        prefix = name.rstrip(_DIGITS)
        digits = name[len(prefix):]
        if not digits or not digits.isascii():
            runs.append([name, -1, 0, 0, i])
            last = None
            continue
        num = int(digits)
        if (last is not None and last[0] == prefix and last[1] >= 0 and num == last[3] + 1
                and (len(digits) == last[1] if last[1] else digits[0] != "0")):
            last[3] = num  # a padded run continues while the number keeps its width
            continue
        last = [prefix, len(digits) if digits[0] == "0" and len(digits) > 1 else 0, num, num, i]
        runs.append(last)
    return runs
