"""Who each planned host is physically: its serial, the MACs of its in-band and BMC ports, and the vault variable
holding its BMC credentials, from the inventory CSV files ``site.inventory`` names (docs/inventory.md).

The loader reads and checks the files (clusterctl/blueprint/inventory_csv.py: every cell's form, duplicates);
:func:`check_inventory_hosts` checks, when the plan is built, that each row names a planned on-prem host (a cloud
host's ports are the provider's) or a management device (a switch, a PDU, a CDU: plan/devices.py names them), and
sorts the devices' rows out of the hosts': a device row gives only its ``mgmt_mac`` (and serial), a host row never
one. The DHCP reservations, the BMC inventory and the provisioner files ask :func:`host_identities` (hosts only);
the management devices' reservations ask :func:`device_macs`.

``bmc_secret`` is the NAME of an ansible-vault variable (``vault_bmc_default``), never a value: the variable,
kept in the site's ``secrets/vault.yml``, holds a mapping ``{user: ..., password: ...}`` (docs/ansible.md,
"Secrets").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from clusterctl.blueprint.inventory_csv import InventoryFile, InventoryRow
from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.location import Position
from clusterctl.plan.model import ClusterPlan, GroupPlan

DEVICE_ONLY_MAC = "mgmt_mac"
HOST_ONLY = (("inband_mac", "inband_col"), ("bmc_mac", "bmc_col"), ("bmc_secret", "secret_col"))
"""a host row's cells a device row leaves empty (with the row's attribute that says where the cell starts)"""

MAX_SUGGESTION_CANDIDATES = 2_000
"""planned names a did-you-mean compares an unknown host with (those of the same length and first letter):
difflib over 100,000 names would take seconds per unknown host"""


@dataclass(frozen=True, slots=True)
class HostIdentity:
    host: str
    """a planned host name"""
    serial: str | None
    inband_mac: str | None
    """canonical lower-case ``aa:bb:cc:dd:ee:ff``"""
    bmc_mac: str | None
    bmc_secret: str | None
    """the NAME of an ansible-vault variable (e.g. ``vault_bmc_default``), never a value; the variable holds a
    mapping ``{user: ..., password: ...}``"""


def host_identities(plan: ClusterPlan) -> Mapping[str, HostIdentity]:
    """host -> its identity, for every host with an inventory row (in file and row order); ``{}`` when the
    blueprint names no inventory."""
    return {row.host: HostIdentity(row.host, row.serial, row.inband_mac, row.bmc_mac, row.bmc_secret)
            for inv in plan.inventory for row in inv.rows}


def device_macs(plan: ClusterPlan) -> Mapping[str, str]:
    """management device (its DNS name: a switch, ``<rack>-pdu<k>``, a CDU) -> the MAC of its management port, for
    every device row with one; ``{}`` when the blueprint names no inventory."""
    return {row.host: row.mgmt_mac for inv in plan.inventory for row in inv.devices if row.mgmt_mac is not None}


def on_prem_hosts(groups: Iterable[GroupPlan]) -> list[str]:
    """Every planned host a site racks itself (not a cloud instance), in group order: the hosts an inventory
    lists."""
    return [h for g in groups if g.type.instance is None for h in g.hosts]


def _suggestion(host: str, planned: Iterable[str]) -> str:
    """"did you mean ...? " for the planned host or device name closest to ``host``, or ""."""
    near = [h for h in planned if len(h) == len(host) and h[:1] == host[:1]][:MAX_SUGGESTION_CANDIDATES]
    close = difflib.get_close_matches(host, near, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'? " if close else ""


def _row_problem(row: InventoryRow, cloud: dict[str, str], planned: set[str]) -> Problem:
    at = Position(row.line, row.host_col)
    if row.host in cloud:
        return Problem((), f"host {row.host} is a cloud instance (group {cloud[row.host]}): the provider owns its "
                           "ports and BMC", hint="list only the hosts you rack yourself", code=LoadCode.UNKNOWN_REFERENCE,
                       position=at)
    return Problem((), f"host {row.host} is neither a planned host nor a management device",
                   code=LoadCode.UNKNOWN_REFERENCE, position=at,
                   hint=_suggestion(row.host, planned) + "every row names a host of the blueprint's node_groups or a "
                        "switch, PDU or CDU by its DNS name (`clusterctl inventory template BLUEPRINT` lists them)")


def _cell_problems(row: InventoryRow, device: bool) -> list[Problem]:
    """A device row's host-only cells, a host row's ``mgmt_mac``: each located at its cell."""
    if not device:
        if row.mgmt_mac is None:
            return []
        return [Problem((), f"mgmt_mac on host {row.host}'s row: only a management device's row (a switch, PDU or CDU) "
                            "has one", code=LoadCode.INVENTORY_VALUE, position=Position(row.line, row.mgmt_col),
                        hint="write the host's ports in inband_mac and bmc_mac; leave mgmt_mac empty")]
    return [Problem((), f"{column} on {row.host}'s row: {row.host} is a management device, whose row gives only its "
                        "mgmt_mac (and serial)", code=LoadCode.INVENTORY_VALUE,
                    position=Position(row.line, getattr(row, col)),
                    hint="write the device's management port's MAC in mgmt_mac; leave inband_mac, bmc_mac and "
                         "bmc_secret empty (docs/inventory.md)")
            for column, col in HOST_ONLY if getattr(row, column) is not None]


def _too_many(rest: list[InventoryRow], what: str) -> Problem:
    return Problem((), f"... and {len(rest):,} more rows {what}, the first here", code=LoadCode.UNKNOWN_REFERENCE,
                   position=Position(rest[0].line, rest[0].host_col))


def check_inventory_hosts(files: tuple[InventoryFile, ...], groups: Iterable[GroupPlan],
                          devices: Iterable[str] = ()) -> tuple[InventoryFile, ...]:
    """``files`` with the rows naming a management device (one of ``devices``) moved to
    :attr:`InventoryFile.devices`. Raise a located :class:`BlueprintError` (in the first file that has any) for
    rows naming neither a planned on-prem host nor a device, and for a cell the row's kind may not have
    (:func:`_cell_problems`); at most 20 listed per file."""
    if not files:
        return files
    groups = list(groups)
    planned = set(on_prem_hosts(groups))
    known_devices = set(devices) - planned
    cloud = {h: g.name for g in groups if g.type.instance is not None for h in g.hosts}
    out = []
    for inv in files:
        unknown = [row for row in inv.rows if row.host not in planned and row.host not in known_devices]
        problems = [_row_problem(row, cloud, planned | known_devices) for row in unknown[:20]]
        if len(unknown) > 20:
            problems.append(_too_many(unknown[20:], "naming hosts that are not planned"))
        wrong = [p for row in inv.rows if row.host in planned or row.host in known_devices
                 for p in _cell_problems(row, row.host in known_devices)]
        problems += wrong[:20]
        if problems:
            raise BlueprintError(inv.source, sorted(problems, key=lambda p: (p.position.line, p.position.col)))
        hosts = tuple(row for row in inv.rows if row.host not in known_devices)
        out.append(inv if len(hosts) == len(inv.rows) else
                   replace(inv, rows=hosts, devices=tuple(row for row in inv.rows if row.host in known_devices)))
    return tuple(out)
