"""``clusterctl inventory template BLUEPRINT [-o FILE]``: the per-host inventory CSV a site fills in
(docs/inventory.md).

One row per planned on-prem host (cloud instances have no ports a site records), in blueprint order, the
``host`` column filled and the others empty; when the blueprint already names inventory files, each host's
values from them are kept, so the template of a grown blueprint adds the new hosts' rows to the filled ones.
Not a render target: the file is the site's input, which ``site.inventory`` then names.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusterctl.blueprint.inventory_csv import COLUMNS
from clusterctl.limits import INVENTORY_MAX_ROWS
from clusterctl.plan.host_identity import host_identities, on_prem_hosts
from clusterctl.plan.model import ClusterPlan


class TemplateTooLarge(ValueError):
    """The template would hold more rows than one inventory file may (the CLI says how to split it)."""


def template_hosts(plan: ClusterPlan, groups: Iterable[str] = ()) -> list[str]:
    """The on-prem hosts of ``groups`` (node group names; every group when empty), in blueprint order."""
    wanted = set(groups)
    return on_prem_hosts(g for g in plan.groups if not wanted or g.name in wanted)


def inventory_template(plan: ClusterPlan, groups: Iterable[str] = ()) -> str:
    """The CSV text: a comment naming the cluster and the columns, the header, one row per host."""
    hosts = template_hosts(plan, groups)
    if len(hosts) > INVENTORY_MAX_ROWS:
        raise TemplateTooLarge(f"{len(hosts):,} hosts, more than one inventory file holds ({INVENTORY_MAX_ROWS:,})")
    known = host_identities(plan)
    lines = [f"# per-host inventory of {plan.name} (docs/inventory.md): fill in serial, inband_mac, bmc_mac and",
             "# bmc_secret (the name of an ansible-vault variable holding {user: ..., password: ...}, never the",
             "# credentials); empty cells are reported by clusterctl validate (INVENTORY001, INVENTORY002)",
             ",".join(COLUMNS)]
    for host in hosts:
        ident = known.get(host)
        values = (host,) if ident is None else (host, ident.serial, ident.inband_mac, ident.bmc_mac, ident.bmc_secret)
        lines.append(",".join(v or "" for v in values) + "," * (len(COLUMNS) - len(values)))
    return "\n".join(lines) + "\n"
