"""Which slice of each routed Ethernet/RoCE fabric the ``fabric`` scenario boots, from the plan's underlay
(:mod:`clusterctl.plan.underlay`) and the rendered switch files (``switches/<fabric>/<switch>/frr.conf`` and
``interfaces``: :mod:`clusterctl.targets.switches`); docs/rehearse.md, "The fabric scenario".

Per fabric: leaf A is the fabric's first leaf and host A the host on its first host port; leaf B is the last leaf
whose first host port carries the same rail (or NIC role) of another host and that shares at least two spines
with leaf A, so traffic between the two hosts crosses the spines (on a rail-optimized fabric: the same rail in
another scalable unit); the two spines are the first two both leaves reach. Every cable the plan lays between
these four switches is booted (a leaf may have several links to one spine), and each host's addressed ports
cabled to leaf A or B: the compute rails of a RoCE fabric, or the storage ports of a converged one (L3 to the host
as well: :func:`clusterctl.plan.underlay.routed_ports`; its in-band ports stay L2 and are not booted). A fabric whose leaves have no host ports (or no addressed ones) is sliced the same way with the
leaves' loopbacks as the addresses that must reach each other.
"""

from __future__ import annotations

from clusterctl.plan import underlay
from clusterctl.plan.model import ClusterPlan, FabricPlan
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.fabric_slice import FabricSlice, SliceRail, SliceSwitch
from clusterctl.rehearse.node.links import Link
from clusterctl.targets.common import path_part
from clusterctl.targets.switches import render as switch_files

MIN_TIERS = 2
ADDRESSED_ROLES = ("compute", "storage")
"""the NIC roles L3 to the host on a routed RoCE fabric (plan/expand.py routed_roles)"""
ETHERNET_MTU = 1500


def sliceable_fabrics(plan: ClusterPlan) -> list[FabricPlan]:
    """The fabrics the scenario slices: routed (Ethernet/RoCE), two tiers or more, with hosts attached."""
    return [f for f in underlay.routed_fabrics(plan) if len(f.tiers) >= MIN_TIERS and f.attached]


def routed_fabrics_unmet(plan: ClusterPlan) -> str:
    return "" if sliceable_fabrics(plan) else "no Ethernet/RoCE fabric of two tiers or more with hosts attached"


def _first_host_port(sw: underlay.Switch) -> underlay.Port | None:
    return next((p for p in sw.ports if p.kind == "host"), None)


def _spines(sw: underlay.Switch, spines: set[str]) -> list[str]:
    return list(dict.fromkeys(p.peer for p in sw.ports if p.kind == "fabric" and p.peer in spines))


def pick(switches: tuple[underlay.Switch, ...]) -> tuple[underlay.Switch, underlay.Switch, list[str]]:
    """(leaf A, leaf B, two spines) of a fabric's switches (the module docstring)."""
    leaves = [s for s in switches if s.role == "leaf"]
    spine_names = {s.name for s in switches if s.role == "spine"}
    a = leaves[0]
    first = _first_host_port(a)
    a_spines = _spines(a, spine_names)
    for b in reversed(leaves[1:]):
        port = _first_host_port(b)
        same = first is None or (port is not None and port.peer_port == first.peer_port and port.peer != first.peer)
        common = [s for s in a_spines if s in _spines(b, spine_names)]
        if same and len(common) >= 2:
            return a, b, common[:2]
    raise RehearsalError(f"fabric {a.fabric}: no second leaf shares two spines with {a.name}",
                         "a fabric slice needs two leaves under two common spines")


def _switch_files(plan: ClusterPlan, files: dict[str, str], sw: underlay.Switch) -> SliceSwitch:
    """The switch's rendered files: from the render, or (a blueprint whose render holds one table per tier
    instead: more than ``PER_SWITCH_LIMIT`` routed switches) from the same renderer for this switch alone."""
    base = f"switches/{path_part(sw.fabric, 'fabric')}/{path_part(sw.name, 'switch')}/"
    if base + "frr.conf" not in files:
        files = switch_files(plan, frozenset({sw.name}))
    if base + "frr.conf" not in files:
        raise RehearsalError(f"no rendered {base}frr.conf for switch {sw.name}",
                             "give the blueprint a pool of role loopback (rule UNDERLAY001)")
    return SliceSwitch(sw.name, sw.role, files[base + "frr.conf"], files.get(base + "interfaces", ""),
                       base + "frr.conf")


def fabric_slice(plan: ClusterPlan, fp: FabricPlan, files: dict[str, str]) -> FabricSlice:
    """The slice of one routed fabric (the module docstring)."""
    switches = underlay.switches(plan, fp)
    a, b, spines = pick(switches)
    chosen = {a.name, b.name, *spines}
    links: list[Link] = []
    hosts: list[str] = []
    for leaf in (a, b):
        links += [Link(leaf.name, p.name, p.peer, p.peer_port) for p in leaf.ports
                  if p.kind == "fabric" and p.peer in chosen]
        first = _first_host_port(leaf)
        if first is not None and first.address:
            hosts.append(first.peer)
    rails: list[SliceRail] = []
    for host in dict.fromkeys(hosts):
        for role in ADDRESSED_ROLES:
            for r in underlay.host_links(plan, host, role):
                if r.fabric == fp.name and r.leaf in (a.name, b.name):
                    netdev = _netdev(r)
                    rails.append(SliceRail(host, r.rail, netdev, r.address, r.prefix, r.gateway, r.table, r.leaf,
                                           role))
                    links.append(Link(host, netdev, r.leaf, r.leaf_port))
    group = next((g.name for g in plan.groups if rails and rails[0].host in g.hosts), "")
    return FabricSlice(fp.name, _host_mtu(plan, fp), tuple(_switch_files(plan, files, s) for s in switches if s.name in chosen),
                       tuple(rails), tuple(links), group,
                       loopbacks=((a.name, a.loopback), (b.name, b.loopback)))


def _host_mtu(plan: ClusterPlan, fp: FabricPlan) -> int:
    """The MTU the hosts send at on the fabric: a RoCE fabric's ``mtu`` (the switch ports run larger), else
    Ethernet's 1500."""
    return int(getattr(plan.fabric_spec(fp), "mtu", None) or ETHERNET_MTU)


def fabric_slices(plan: ClusterPlan, files: dict[str, str]) -> list[FabricSlice]:
    """A slice of every routed fabric of ``plan`` (two tiers or more, hosts attached), from the rendered
    ``files``."""
    return [fabric_slice(plan, fp, files) for fp in sliceable_fabrics(plan)]


def _netdev(rail: underlay.HostRail) -> str:
    if not rail.netdev:
        raise RehearsalError(f"the plan names no network interface for rail {rail.rail} of the hosts on "
                             f"{rail.fabric}: a cable's end is named as the host names its port",
                             "declare the server model's port names (docs/network.md)")
    return rail.netdev


def role_interfaces(plan: ClusterPlan, sl: FabricSlice) -> list[str] | None:
    """The plan's netdev of every rail of the slice's hosts, in rail order: ``roce_network_interfaces`` for the
    roce_network role, whose own lookup (the RDMA device's ``/sys/class/infiniband/<dev>/device/net``) finds
    nothing in a node without RDMA devices. None without host rails."""
    rails = [r for r in sl.rails if r.role == "compute"]
    if not rails:
        return None
    return [_netdev(r) for r in underlay.host_rails(plan, rails[0].host)]
