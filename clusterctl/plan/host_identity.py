"""Who each planned host is physically: its serial, the MACs of its in-band and BMC ports, and the vault variable
holding its BMC credentials, from the inventory CSV files ``site.inventory`` names (docs/inventory.md).

The loader reads and checks the files (clusterctl/blueprint/inventory_csv.py: every cell's form, duplicates);
:func:`check_inventory_hosts` checks, when the plan is built, that each row names a planned on-prem host (a cloud
host's ports are the provider's). The DHCP reservations, the BMC inventory and the provisioner files ask
:func:`host_identities`; the coverage rule (clusterctl/rules/inventory.py) asks :func:`inventory_rows_by_host`.

``bmc_secret`` is the NAME of an ansible-vault variable (``vault_bmc_default``), never a value: the variable,
kept in the site's ``secrets/vault.yml``, holds a mapping ``{user: ..., password: ...}`` (docs/ansible.md,
"Secrets").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clusterctl.blueprint.inventory_csv import InventoryFile, InventoryRow
from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.location import Position
from clusterctl.plan.model import ClusterPlan, GroupPlan

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


def on_prem_hosts(groups: Iterable[GroupPlan]) -> list[str]:
    """Every planned host a site racks itself (not a cloud instance), in group order: the hosts an inventory
    lists."""
    return [h for g in groups if g.type.instance is None for h in g.hosts]


def _suggestion(host: str, planned: Iterable[str]) -> str:
    near = [h for h in planned if len(h) == len(host) and h[:1] == host[:1]][:MAX_SUGGESTION_CANDIDATES]
    close = difflib.get_close_matches(host, near, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'? " if close else ""


def _row_problem(row: InventoryRow, cloud: dict[str, str], planned: set[str]) -> Problem:
    at = Position(row.line, row.host_col)
    if row.host in cloud:
        return Problem((), f"host {row.host} is a cloud instance (group {cloud[row.host]}): the provider owns its "
                           "ports and BMC", hint="list only the hosts you rack yourself", code=LoadCode.UNKNOWN_REFERENCE,
                       position=at)
    return Problem((), f"host {row.host} is not a planned host", code=LoadCode.UNKNOWN_REFERENCE, position=at,
                   hint=_suggestion(row.host, planned) + "every row names a host of the blueprint's node_groups "
                        "(`clusterctl inventory template BLUEPRINT` lists them)")


def check_inventory_hosts(files: tuple[InventoryFile, ...], groups: Iterable[GroupPlan]) -> None:
    """Raise a located :class:`BlueprintError` (in the first file that has any) for rows naming a host that is not
    a planned on-prem host; at most 20 listed per file."""
    groups = list(groups)
    planned = set(on_prem_hosts(groups))
    cloud = {h: g.name for g in groups if g.type.instance is not None for h in g.hosts}
    for inv in files:
        unknown = [row for row in inv.rows if row.host not in planned]
        if not unknown:
            continue
        problems = [_row_problem(row, cloud, planned) for row in unknown[:20]]
        if len(unknown) > 20:
            problems.append(Problem((), f"... and {len(unknown) - 20:,} more rows naming hosts that are not planned, "
                                        "the first here", code=LoadCode.UNKNOWN_REFERENCE,
                                    position=Position(unknown[20].line, unknown[20].host_col)))
        raise BlueprintError(inv.source, problems)
