"""Network paths in a plan: can a node group reach a storage tier, and over which fabric?

A storage tier names its servers in its source (NFS ``export: head01:/export/home``, a parallel file system's
``servers``: Lustre NIDs ``10.31.1.250@o2ib,10.20.3.250@tcp:/lustre``, a host list or comma list of backends;
an object store's ``endpoint``). Each name is placed on the network it is on:

* a host of a node group of the blueprint: the fabrics that group's data NICs (storage, compute, in-band)
  are attached to;
* an address inside an addressing pool: the fabrics that carry NICs of that pool's role (a Lustre NID in the
  ``role: storage`` pool is on the storage fabric);
* anything else (an appliance outside the blueprint): the storage network, that is the fabrics that carry
  storage NICs, or the in-band fabrics when there is no storage fabric.

A GPU group reaches the tier over a fabric it is attached to with a data NIC and that is one of those, or over
its in-band NICs when the servers are on an in-band fabric (the in-band fabrics are one routed network: the
head nodes' and the GPU nodes' in-band NICs share one address pool, and slurmctld reaches slurmd over it). An
in-band network that no fabric models (small labs declare only the compute and BMC fabrics) is taken as one
flat network between every node with an in-band NIC; cloud instances reach storage over their instance
network. Node-local tiers need no network.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from clusterctl.plan.model import ClusterPlan, FabricPlan, GroupPlan
from clusterctl.plan.roles import group_of
from clusterctl.plan.sources import SourceError, mount_source

DATA_ROLES = ("storage", "compute", "inband")
"""NIC roles that carry data, in the order a path over them is preferred (bmc and mgmt carry management only)"""
MAX_SERVER_NAMES = 1024
"""names of a host list in a tier's source looked up at most (a source is at most 4,095 characters)"""


@dataclass(frozen=True, slots=True)
class StoragePath:
    fabric: FabricPlan | None
    """the fabric both ends are on; None: node-local, the instance network, or an in-band network no fabric models"""
    nic_role: str | None
    """the role of the group's NICs that carry the traffic (None: node-local or the instance network)"""
    via: str
    """the path in words: ``fabric stor (storage NICs)``"""


def server_names(tier) -> list[str]:
    """The host names or addresses a tier's source names (empty: none given)."""
    from clusterctl import hostlist

    if tier.tier == "nfs":  # server:/path, the server a name, an IPv4 address or [an IPv6 address]
        return [tier.export.partition(":/")[0].removeprefix("[").removesuffix("]")]
    if tier.tier == "object":
        host = urlsplit(tier.endpoint if "//" in tier.endpoint else "//" + tier.endpoint).hostname
        return [host] if host else []
    source = getattr(tier, "servers", None)
    if not source:
        return []
    try:
        found = mount_source(tier)
    except SourceError:  # STORAGE009 reports it; the terms as written
        found = None
    if found is not None:
        source = found[1]
    names: list[str] = []
    if "@" in source:  # Lustre NIDs: addr@net[,addr@net][:addr@net][:/fsname]
        for nid in source.split(":/", 1)[0].replace(":", ",").split(","):
            names.append(nid.split("@", 1)[0])
        return names
    for term in source.split(":/", 1)[0].split("/", 1)[0].split(","):
        try:
            names.extend(hostlist.expand(term) if hostlist.count(term) <= MAX_SERVER_NAMES else [])
        except hostlist.HostlistError:
            names.append(term)
    return names


def _attached(plan: ClusterPlan, group: GroupPlan) -> list[tuple[FabricPlan, str]]:
    """(fabric, role) of every data NIC role of ``group`` cabled to a fabric, best role first."""
    return [(f, role) for role in DATA_ROLES if group.type.nics_of(role) for f in plan.fabrics_on(role, group)]


def _role_fabrics(plan: ClusterPlan, role: str) -> set[int]:
    return {f.index for f in plan.fabrics_on(role)}


def _server_fabrics(plan: ClusterPlan, name: str) -> tuple[set[int], bool, str]:
    """(fabric indices the server ``name`` is on, whether it is on an in-band network no fabric models, what
    it is in words)."""
    no_inband_fabric = not _role_fabrics(plan, "inband")
    try:
        addr = ipaddress.ip_address(name)
    except ValueError:
        addr = None
    if addr is not None:
        for pool in plan.addresses:
            if addr in ipaddress.ip_network(pool.cidr, strict=False):
                return (_role_fabrics(plan, pool.role), pool.role == "inband" and no_inband_fabric,
                        f"{name} (address pool {pool.name}, role {pool.role})")
    else:
        g = group_of(plan, name)
        if g is not None:
            return ({f.index for f, _ in _attached(plan, g)}, no_inband_fabric and bool(g.type.nics_of("inband")),
                    f"{name} (group {g.name})")
    fabrics = _role_fabrics(plan, "storage") or _role_fabrics(plan, "inband")
    return fabrics, not fabrics, f"{name or 'the servers'} (outside the blueprint: on the storage network)"


def storage_path(plan: ClusterPlan, group: GroupPlan, tier) -> StoragePath | None:
    """How ``group``'s nodes reach storage tier ``tier`` (a blueprint ``storage`` entry), or None when no network
    path exists: the tier's servers are on no fabric the group's data NICs are attached to."""
    if tier.tier == "local":
        return StoragePath(None, None, "node-local NVMe")
    if group.type.instance is not None:
        return StoragePath(None, None, "the instance network")
    servers = [_server_fabrics(plan, n) for n in server_names(tier) or [""]]
    mine = _attached(plan, group)
    for f, role in mine:  # best NIC role first, then the fabric order of the blueprint
        if any(f.index in fabrics for fabrics, _, _ in servers):
            return StoragePath(f, role, f"fabric {f.name} ({role} NICs)")
    inband = _role_fabrics(plan, "inband")
    joined = [plan.fabrics[i].name for fabrics, _, _ in servers for i in sorted(fabrics & inband)]
    for f, role in mine:  # the in-band fabrics are one routed network: one in-band address pool spans them
        if role == "inband" and joined:
            return StoragePath(f, role, f"fabric {f.name} ({role} NICs), routed to {joined[0]} over the in-band network")
    if group.type.nics_of("inband") and any(flat for _, flat, _ in servers):
        return StoragePath(None, "inband", "the in-band network (no fabric models it; in-band NICs)")
    return None


def no_path_reason(plan: ClusterPlan, group: GroupPlan, tier) -> str:
    """Why ``storage_path`` is None, in one sentence."""
    names = server_names(tier) or [""]
    where = "; ".join(desc + (" on fabric " + ", ".join(plan.fabrics[i].name for i in sorted(fabs)) if fabs else
                              " on no fabric") for fabs, _, desc in (_server_fabrics(plan, n) for n in names))
    mine = _attached(plan, group)
    nics = ", ".join(f"{role} NICs on fabric {f.name}" for f, role in mine) or "no data NIC attached to any fabric"
    unattached = [r for r in DATA_ROLES if group.type.nics_of(r) and not any(r == x for _, x in mine)]
    extra = f"; its {', '.join(unattached)} NICs are attached to no fabric" if unattached else ""
    return (f"group {group.name} has no network path to storage tier {tier.name}: the tier's servers are "
            f"{where}; the group has {nics}{extra}")
