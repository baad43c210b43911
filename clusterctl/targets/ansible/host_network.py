"""The host_network role's group variables: the in-band bond, IPoIB on InfiniBand compute ports and the storage
ports, addressed from the plan's pools (clusterctl/plan/allocations.py) on the names clusterctl/plan/interfaces.py
decides; and the names the host_network_preflight guard compares with every host before anything is written.

The RoCE compute rails are the roce_network role's (clusterctl/targets/roce.py), not configured here. Like the
RoCE variables, nothing is per host: each interface carries the address of the group's first host as an integer
(``base``) and the addresses per host (``stride``); the role finds the host's index in ``host_network_hosts``.
Several addressed ports of one role share a subnet, so each gets its own routing table and ``from`` rule (source
routing, as the RoCE rails): traffic bound to a port's address leaves through that port. Storage ports on a
routed RoCE fabric (a converged storage/in-band fabric) are L3 to the host: each the host side of a /31 whose leaf
side is its gateway, the storage pool's prefix routed via the leaf in the port's table (``prefix``, ``routes``;
clusterctl/plan/underlay.py routed_ports, the same numbers as the leaves' files).
"""

from __future__ import annotations

import ipaddress

from clusterctl.plan.allocations import group_block
from clusterctl.plan.dhcp import serves_dhcp
from clusterctl.plan.host_identity import host_identities
from clusterctl.plan import underlay
from clusterctl.plan.interfaces import HostPort, host_ports, netdevs, role_ports
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.targets.host_runs import host_runs
from clusterctl.targets.roce import fabric_qos

BOND_NAME = "bond0"
"""the in-band bond, the name NCCL_SOCKET_IFNAME gives (docs/nccl.md, "Interface names")"""
BOND_PARAMETERS = {"mode": "802.3ad", "lacp-rate": "fast", "mii-monitor-interval": 100,
                   "transmit-hash-policy": "layer3+4"}
"""LACP (802.3ad) with fast LACPDUs, link monitoring every 100 ms and flows hashed on addresses and ports, so one
host's flows spread over both in-band ports (Linux kernel Documentation/networking/bonding.rst: mode, lacp_rate,
miimon, xmit_hash_policy; netplan.io "bonds" parameters). The DGX BasePOD deployment guide bonds the two in-band
ports but its exact bond options were not read; these are the kernel documentation's for an LACP switch pair."""
TABLE_BASE = {"compute": 300, "storage": underlay.STORAGE_TABLE_BASE}
"""routing table of port k: base + 1 + k (IPoIB 301.., storage 201..), clear of the RoCE rails' 101.. and main"""
PRIORITY_BASE = {"compute": 3000, "storage": underlay.STORAGE_PRIORITY_BASE}
"""``from`` rule priority of port k: base + k, before main's 32766 (the RoCE rails take 1000..)"""


def first_address(plan: ClusterPlan, role: str, g: GroupPlan) -> tuple[str, int, int] | None:
    """(pool cidr, the address of the group's first host as an integer, addresses per host), None without a
    pool of that role."""
    found = group_block(plan, role, g)
    if found is None:
        return None
    pool, first, per_host = found
    return pool.cidr, int(ipaddress.ip_network(pool.cidr).network_address) + pool.first_host_offset + first, per_host


def inband_interfaces(plan: ClusterPlan, g: GroupPlan) -> list[dict]:
    """The in-band address on the bond of the in-band ports (two or more) or on the one port."""
    names = netdevs(role_ports(plan, g.type, "inband"))
    block = first_address(plan, "inband", g)
    if not names or block is None:
        return []
    cidr, base, stride = block
    if len(names) == 1:
        return [{"name": names[0], "kind": "ethernet", "role": "inband", "cidr": cidr, "base": base, "stride": stride}]
    return [{"name": BOND_NAME, "kind": "bond", "role": "inband", "members": list(names), "cidr": cidr, "base": base,
             "stride": stride}]


def port_interfaces(plan: ClusterPlan, g: GroupPlan, role: str, kind: str, mtu: int | None) -> list[dict]:
    """One addressed interface per named port of ``role`` that has an address in its pool (port k of host i:
    base + i x stride + k, the odd side of its pair on a point-to-point pool), with a routing table and rule each
    when there are several; ports L3 to the host on a routed fabric take :func:`routed_interfaces`."""
    ports = [p for p in role_ports(plan, g.type, role) if p.netdev]
    routed = {r.index: r for r in underlay.routed_ports(plan, g, role)}
    if routed:
        return routed_interfaces(ports, routed, role, kind, mtu)
    block = first_address(plan, role, g)
    found = group_block(plan, role, g)
    if not ports or block is None or found is None:
        return []
    cidr, base, stride = block
    p2p = found[0].point_to_point
    ports = [p for p in ports if (2 * p.index + 1 if p2p else p.index) < stride]
    out = []
    for p in ports:
        entry: dict = {"name": p.netdev, "kind": kind, "role": role, "cidr": cidr,
                       "base": base + (2 * p.index + 1 if p2p else p.index), "stride": stride}
        if mtu is not None:
            entry["mtu"] = mtu
        if len(ports) > 1:
            entry["table"] = TABLE_BASE[role] + 1 + p.index
            entry["priority"] = PRIORITY_BASE[role] + p.index
        out.append(entry)
    return out


def routed_interfaces(ports: list[HostPort], routed: dict[int, underlay.RoutedPort], role: str, kind: str,
                      mtu: int | None) -> list[dict]:
    """Ports L3 to the host (clusterctl/plan/underlay.py routed_ports: the numbers the leaves' files and the
    roce_network rails use): the host side of a /31 whose other side, the leaf, is the gateway (``prefix``), the
    pool's prefix (``routes``) via the leaf in the port's own table with a ``from`` rule; the first port's leaf
    routes it in the main table too (``main``: traffic that chose no source, as the first RoCE rail)."""
    out: list[dict] = []
    for p in ports:
        r = routed.get(p.index)
        if r is None:
            continue
        entry: dict = {"name": p.netdev, "kind": kind, "role": role, "cidr": r.routes[0], "base": r.base,
                       "stride": r.stride, "prefix": r.prefix, "routes": list(r.routes), "fabric": r.fabric,
                       "table": r.table, "priority": r.priority}
        if not out:
            entry["main"] = True
        if mtu is not None:
            entry["mtu"] = mtu
        out.append(entry)
    return out


def storage_mtu(plan: ClusterPlan, g: GroupPlan) -> int | None:
    """The MTU of the storage ports: the RoCE storage fabric's (its QoS declaration), else the default."""
    for f in plan.fabrics_on("storage", g):
        qos = fabric_qos(plan, f)
        if qos is not None:
            return qos.mtu
    return None


def interfaces(plan: ClusterPlan, g: GroupPlan) -> list[dict]:
    """Every interface the role configures on a group's hosts: in-band, IPoIB (compute ports on an InfiniBand
    fabric with a compute pool), storage."""
    out = inband_interfaces(plan, g)
    if {f.kind for f in plan.compute_fabrics(g)} == {"infiniband"}:
        out += port_interfaces(plan, g, "compute", "ipoib", None)
    out += port_interfaces(plan, g, "storage", "ethernet", storage_mtu(plan, g))
    return out


def rdma_cm_tos(plan: ClusterPlan, g: GroupPlan) -> list[dict]:
    """The RDMA-CM default ToS of the storage ports on a RoCE storage fabric: the fabric's traffic class, so LNet's
    o2ib connections (RDMA-CM, which sets no ToS of its own) travel in the fabric's lossless class (Linux
    Documentation/ABI/testing/configfs-rdma_cm, ``default_roce_tos``). Only ports whose RDMA device is named."""
    qos = next((q for q in (fabric_qos(plan, f) for f in plan.fabrics_on("storage", g)) if q is not None), None)
    if qos is None:
        return []
    return [{"device": p.rdma.split(":")[0], "tos": qos.traffic_class}
            for p in role_ports(plan, g.type, "storage") if p.rdma]


def checked_port(p: HostPort) -> dict:
    return {"role": p.role, "index": p.index, "netdev": p.netdev or "", "rdma": p.rdma or ""}


def dhcp_macs(plan: ClusterPlan, g: GroupPlan) -> dict[str, str]:
    """{host: in-band MAC} of the group's hosts whose in-band port DHCP configures: those with an in-band MAC in
    the inventory, in a cluster that runs its DHCP servers, in a group whose in-band port the plan does not
    configure itself (a bond or a named port keeps its static address: docs/network.md, "DHCP")."""
    if not serves_dhcp(plan) or inband_interfaces(plan, g):
        return {}
    identities = host_identities(plan)
    if not identities:
        return {}
    return {h: ident.inband_mac for h in g.hosts if (ident := identities.get(h)) is not None and ident.inband_mac}


def group_vars(plan: ClusterPlan, g: GroupPlan) -> dict | None:
    """host_network's variables of a bare-metal group with named ports or in-band MACs; None otherwise."""
    if g.type.instance is not None:
        return None
    checked = [checked_port(p) for p in host_ports(plan, g.type) if p.netdev or p.rdma]
    configured = interfaces(plan, g)
    macs = dhcp_macs(plan, g)
    if not checked and not configured and not macs:
        return None
    out: dict = {"host_network_ports": checked}
    if macs:
        out["host_network_dhcp_macs"] = macs
    if configured:
        out["host_network_interfaces"] = configured
        out["host_network_hosts"] = host_runs(g.hosts)
    tos = rdma_cm_tos(plan, g)
    if tos:
        out["host_network_rdma_cm_tos"] = tos
    return out
