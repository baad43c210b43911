"""``clusterctl inventory template BLUEPRINT [-o FILE]``: the per-host inventory CSV a site fills in
(docs/inventory.md).

One row per planned on-prem host (cloud instances have no ports a site records), in blueprint order, the
``host`` column filled and the others empty, then (unless the template is limited to node groups) one row per
management device (switches, PDUs, CDUs by their DNS names, plan/devices.py) for its ``serial`` and ``mgmt_mac``;
when the blueprint already names inventory files, each row's values from them are kept, so the template of a grown
blueprint adds the new hosts' and devices' rows to the filled ones.
Not a render target: the file is the site's input, which ``site.inventory`` then names.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusterctl.blueprint.inventory_csv import COLUMNS
from clusterctl.limits import INVENTORY_MAX_ROWS
from clusterctl.plan.devices import planned_device_names
from clusterctl.plan.host_identity import host_identities, on_prem_hosts
from clusterctl.plan.model import ClusterPlan


class TemplateTooLarge(ValueError):
    """The template would hold more rows than one inventory file may (the CLI says how to split it)."""


def template_hosts(plan: ClusterPlan, groups: Iterable[str] = ()) -> list[str]:
    """The on-prem hosts of ``groups`` (node group names; every group when empty), in blueprint order."""
    wanted = set(groups)
    return on_prem_hosts(g for g in plan.groups if not wanted or g.name in wanted)


def template_devices(plan: ClusterPlan, groups: Iterable[str] = ()) -> list[str]:
    """The management devices' DNS names, in plan order; none when the template is limited to node groups
    (a device belongs to none)."""
    if any(True for _ in groups):
        return []
    return planned_device_names(plan)


def inventory_template(plan: ClusterPlan, groups: Iterable[str] = ()) -> str:
    """The CSV text: a comment naming the cluster and the columns, the header, one row per host, then one per
    management device."""
    groups = tuple(groups)
    hosts = template_hosts(plan, groups)
    devices = template_devices(plan, groups)
    if len(hosts) + len(devices) > INVENTORY_MAX_ROWS:
        raise TemplateTooLarge(f"{len(hosts):,} hosts and {len(devices):,} management devices, more than one "
                               f"inventory file holds ({INVENTORY_MAX_ROWS:,})")
    known = host_identities(plan)
    lines = [f"# per-host inventory of {plan.name} (docs/inventory.md): fill in serial, inband_mac, bmc_mac and",
             "# bmc_secret (the name of an ansible-vault variable holding {user: ..., password: ...}, never the",
             "# credentials); the management devices' rows (after the hosts') take serial and mgmt_mac only; empty",
             "# cells are reported by clusterctl validate (INVENTORY001, INVENTORY002)",
             ",".join(COLUMNS)]
    for host in hosts:
        ident = known.get(host)
        values = (host,) if ident is None else (host, ident.serial, ident.inband_mac, ident.bmc_mac, ident.bmc_secret)
        lines.append(",".join(v or "" for v in values) + "," * (len(COLUMNS) - len(values)))
    rows = {row.host: row for inv in plan.inventory for row in inv.devices}
    for device in devices:
        row = rows.get(device)
        serial, mac = (row.serial, row.mgmt_mac) if row is not None else (None, None)
        lines.append(f"{device},{serial or ''},,,,{mac or ''}")
    return "\n".join(lines) + "\n"
