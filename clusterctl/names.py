"""What a name may not mean: an address, a word the tools reserve, or another name in a different case.

Host, node group, rack, partition, QOS and node type names end up where a resolver, Ansible or Slurm reads
them. A name that parses as an address is not a name: ``getaddrinfo`` and ``inet_aton`` read ``2130706433``,
``0x7f000001``, ``0177.0.0.1`` and ``127.1`` as 127.0.0.1, so ssh, Ansible and Slurm connect to the address
(and hand it the MUNGE key) without asking DNS. A reserved word means something else to its reader:
``localhost*`` and ``ip6-*`` are in every ``/etc/hosts`` (the loopback and IPv6 multicast names); ``ALL`` and
``DEFAULT`` are Slurm keywords (``Nodes=ALL``, ``NodeName=DEFAULT``, ``PartitionName=DEFAULT``) in any case;
``all`` and ``ungrouped`` are Ansible's implicit groups (a node group ``all`` replaces ``group_vars/all.yml``).
And names that differ only in case are one name to DNS, glibc and case-insensitive disks, two to Slurm.

These checks are used by the kinds (single names, at load) and by the naming rules (expanded host lists,
100,000+ names: :func:`suspect` is one C-level regex match per name, the exact reason is asked only of the
few names it lets through).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

_NUMBER = r"(?:0[xX][0-9A-Fa-f]*|[0-9]+)"
_NUMERIC = re.compile(rf"{_NUMBER}(?:\.{_NUMBER})*\.?")
"""numbers (decimal, 0-octal or 0x-hex) joined by dots: every form ``inet_aton`` accepts (``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``10.1.2``) and the few numeric shapes it does not (five parts, a
trailing dot, out of range) that a resolver may still read as one; RFC 1123 2.1: a host name is never
all-numeric"""

RESERVED_EXACT = frozenset({"all", "default", "ungrouped"})
"""reserved in any case: Slurm's ALL and DEFAULT, Ansible's all and ungrouped"""
RESERVED_PREFIXES = ("localhost", "ip6-")
"""reserved as a prefix in any case: localhost, localhost.localdomain, ip6-localhost, ip6-loopback, ip6-allnodes"""

_SUSPECT = re.compile(r"[0-9]|0x|localhost|ip6-|(?:all|default|ungrouped)$|[^:]*:", re.IGNORECASE)
"""matches (at the start) every name :func:`why_not_a_name` refuses, and few others"""

HINT = ("rename it (gpu01, r07, batch): a name may not be an address, localhost*, ip6-*, "
        "all, default or ungrouped")


def address_reason(name: str) -> str | None:
    """Why ``name`` reads as an IP address, or None."""
    if _NUMERIC.fullmatch(name):
        return (f"'{name}' reads as an IPv4 address (getaddrinfo and inet_aton take numbers joined by dots, "
                "in decimal, octal or hex: 2130706433, 0x7f000001 and 127.1 are all 127.0.0.1)")
    if ":" in name:
        try:
            ipaddress.ip_address(name.partition("%")[0])
        except ValueError:
            return None
        return f"'{name}' is an IPv6 address"
    return None


def reserved_reason(name: str) -> str | None:
    """Why ``name`` is a word a resolver, Slurm or Ansible reserves, or None."""
    low = name.lower()
    if low.startswith(RESERVED_PREFIXES):
        return f"'{name}' is a loopback or multicast name of every /etc/hosts (localhost*, ip6-*)"
    if low in ("all", "default"):
        return f"'{name}' is a Slurm keyword in any case (Nodes=ALL, NodeName=DEFAULT, PartitionName=DEFAULT)"
    if low == "ungrouped":
        return f"'{name}' is an Ansible implicit group (all, ungrouped)"
    return None


def why_not_a_name(name: str) -> str | None:
    """Why ``name`` cannot be a name (an address or a reserved word), or None."""
    if not _SUSPECT.match(name):
        return None
    return address_reason(name) or reserved_reason(name)


def suspect(name: str) -> bool:
    """A fast filter: False means :func:`why_not_a_name` is None."""
    return _SUSPECT.match(name) is not None


def case_collisions(names: Iterable[str], fold=str.lower) -> list[list[str]]:
    """Groups of distinct spellings of one name under ``fold`` (default: lower case), in first-seen order;
    exact repeats are not collisions (the duplicate-name checks report those)."""
    spellings: dict[str, list[str]] = {}
    for n in names:
        same = spellings.get(key := fold(n))
        if same is None:
            spellings[key] = [n]
        elif n not in same:
            same.append(n)
    return [s for s in spellings.values() if len(s) > 1]


def ansible_group_name(text: str) -> str:
    """The Ansible group a name becomes: letters, digits and underscores only (``ib-core`` -> ``ib_core``),
    never starting with a digit."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if name and not name[0].isdigit() else "_" + name
