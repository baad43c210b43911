"""Fabric intent -> switch tiers, scalable units and link bundles.

The builder follows the folded-Clos (fat tree) construction of NVIDIA's DGX SuperPOD reference
architectures. Step by step:

1. **Endpoints** (:func:`_endpoints`). Every attached (group, NIC role) pair contributes its NIC ports; a
   node's ports of the attached roles are its *rails*. The node link runs at the fabric's ``link_gbps`` or
   the fastest attached NIC's speed, reached on the leaf natively, by a breakout mode the switch lists
   (one 800G port carries two 400G links), or else on one native port at the lower of the two speeds
   (:func:`leaf_port`).
2. **Leaf radix** (:func:`down_capacity`). A leaf's native ports are shared by downlinks (1/breakout port
   each) and uplinks (native speed) in the declared oversubscription ratio; the downlink capacity is the
   largest count whose ports and uplink ports fit in whole ports (64-port QM9700 at 1:1: 32 + 32).
   Switches with dedicated uplink ports (SN2201: 48 x 1G + 4 x 100G) give every access port to nodes.
3. **Scalable units** (:func:`_scalable_units`). Nodes are cut into SUs of ``su_nodes`` (default: what one
   leaf takes) or one SU per rack (``su_by: rack``). A rail-optimized SU has one leaf per rail, leaf *k*
   taking NIC *k* of every node; otherwise the SU's ports spread evenly over as many leaves as they need.
   With ``su_nodes`` declared every leaf reserves downlinks for the *full* SU, because the RA says to
   "design the fabric to support the full SU, including leaf switches and leaf-spine cables": a partly
   filled last SU is still cabled up in full. Extra endpoints (UFM appliances, gateways) take the least
   loaded leaves, last first: the H100 RA's 127-node design gives the 128th DGX's ports to 4 UFM ports.
4. **Leaf uplinks** (:func:`_leaf_tier`): ``leaf_uplinks`` as built, else enough for the declared ratio.
5. **Two tiers** (:func:`_two_tier`): spines take every leaf uplink. Their count is the fewest switches
   whose ports hold the uplinks, raised to the next count that divides one leaf's uplinks evenly (at most
   double), so every leaf reaches every spine over the same number of links: the H100 RA's 3-SU row has
   24 leaves x 32 uplinks = 768 links, 12 spines' worth, built as 16 spines of 48 links.
6. **Three tiers** (:func:`_three_tier`): leaves group into pods of radix/2 leaves (whole SUs); each pod
   has its own spines, half their ports down and half up (1:1), and cores take every spine uplink. A
   ``spine_count`` too small for the pod pushes spines past half their ports down: the spine tier is then
   oversubscribed (down:up recorded), or, with no port left for uplinks, over its port budget.

The builder never refuses a design: it plans what was asked and records the numbers (ports needed vs
available, achieved vs declared ratio, size limit) for the rules to judge.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from clusterctl import hostlist
from clusterctl.blueprint.network import _Fabric
from clusterctl.catalog.models import Switch
from clusterctl.plan.model import FabricPlan, GroupPlan, LinkBundle, ScalableUnit, SwitchTier

_EPS = 1e-9


# --- ports and speeds ------------------------------------------------------------------------------

def ports_at(switch: Switch, gbps: float) -> tuple[int, int, float]:
    """(native ports, logical links per native port, native speed) for links of ``gbps``.

    A speed the switch lists as a port mode is reached by splitting native ports (breakout); any other
    speed runs on native ports, one link per port.
    """
    native = switch.port_modes[0]
    for mode in switch.port_modes:
        if math.isclose(mode.speed_gbps, gbps):
            per_port = max(1, round(mode.ports / native.ports))
            return native.ports, per_port, native.speed_gbps
    return native.ports, 1, native.speed_gbps


def link_speed(switch: Switch, gbps: float) -> float:
    """The speed a ``gbps`` link trains at on ``switch``: ``gbps`` where a port mode lists it, else the
    lower of ``gbps`` and the native speed (an 800G NIC on a 400G port runs at 400G)."""
    if any(math.isclose(m.speed_gbps, gbps) for m in switch.port_modes):
        return gbps
    return min(gbps, switch.port_modes[0].speed_gbps)


@dataclass(frozen=True, slots=True)
class LeafPort:
    native_ports: int
    native_gbps: float
    breakout: int
    """node links per native port"""
    link_gbps: float
    """speed one node link runs at"""


def leaf_port(switch: Switch, gbps: float) -> LeafPort:
    native, per_port, native_gbps = ports_at(switch, gbps)
    return LeafPort(native, native_gbps, per_port, link_speed(switch, gbps))


def uplinks_for(down: int, down_gbps: float, ratio: float, up_gbps: float) -> int:
    """Uplinks that carry ``down`` downlinks at ``ratio``:1 (none for no downlinks)."""
    if down <= 0:
        return 0
    return max(1, math.ceil(down * down_gbps / (ratio * up_gbps) - _EPS))


def down_capacity(port: LeafPort, up_gbps: float, ratio: float, shared: bool) -> int:
    """Most downlinks one leaf takes. ``shared``: uplinks use the same native ports, so downlink ports
    plus the uplinks the ratio asks for must fit (QM9700 at 1:1: 32; at 2:1: 42 down + 21 up)."""
    total = port.native_ports * port.breakout
    if not shared:
        return total
    for d in range(total, 0, -1):
        if -(-d // port.breakout) + uplinks_for(d, port.link_gbps, ratio, up_gbps) <= port.native_ports:
            return d
    return 1


def spine_count(minimum: int, per_leaf_uplinks: int) -> int:
    """Fewest spines (at least ``minimum``) over which one leaf's uplinks spread evenly, looking no
    further than twice the minimum; ``minimum`` when no such count exists."""
    lo = max(1, minimum)
    for s in range(lo, min(per_leaf_uplinks, 2 * lo) + 1):
        if per_leaf_uplinks % s == 0:
            return s
    return lo


def tier_switch_names(fp: FabricPlan, t: SwitchTier) -> list[str]:
    """Every switch of tier ``t`` of ``fp`` by its planned name; a fabric name that makes no host name (NAME002
    reports it) numbers them ``<fabric>-<role>-<i>`` instead."""
    try:
        return hostlist.expand(t.names)
    except hostlist.HostlistError:
        return [f"{fp.name}-{t.role}-{i}" for i in range(t.count)]


def _names(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}{str(i).zfill(width)}" for i in range(1, count + 1)]


# --- endpoints and scalable units ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Endpoints:
    members: tuple[int, ...]
    """indices into ``groups`` of attached groups with at least one port of an attached role"""
    ports_per_host: dict[int, int]
    """group index -> ports of the attached roles on each of its hosts"""
    rails: int
    nic_gbps: float
    models: tuple[str, ...]


def _endpoints(groups: Sequence[GroupPlan], attached: Sequence[tuple[int, str]]) -> _Endpoints:
    per_host: dict[int, int] = {}
    speeds: list[float] = []
    models: set[str] = set()
    for gi, role in dict.fromkeys(attached):  # a pair attached twice (e.g. by name and by "all") is cabled once
        nics = groups[gi].type.nics_of(role)
        per_host[gi] = per_host.get(gi, 0) + sum(n.count for n in nics)
        speeds.extend(n.speed_gbps for n in nics)
        models.update(n.model for n in nics)
    members = tuple(gi for gi, n in per_host.items() if n > 0)
    return _Endpoints(members, per_host, max((per_host[g] for g in members), default=0),
                      max(speeds, default=0.0), tuple(sorted(models)))


@dataclass(slots=True)
class _Units:
    sus: list[ScalableUnit] = field(default_factory=list)
    load: list[int] = field(default_factory=list)
    """cabled endpoints per leaf, in leaf order"""
    design: list[int] = field(default_factory=list)
    """downlinks reserved per leaf (>= load)"""
    su_of: list[int] = field(default_factory=list)
    su_nodes: int = 0
    extra_leaves: list[int] = field(default_factory=list)
    """the leaf (index) of each extra endpoint, in the order they were cabled"""

    def add(self, hosts: list[str], ports: list[int], rail_optimized: bool, rails: int, down_cap: int,
            full_nodes: int | None, rack: int = -1) -> None:
        """One SU of ``hosts`` with ``ports`` attached ports each; ``full_nodes``: reserve for that many."""
        if rail_optimized:
            load = [sum(1 for p in ports if p > k) for k in range(rails)]
            design = [max(n, full_nodes or 0) for n in load]
        else:
            eps = sum(ports)
            full = max(eps, full_nodes * max(ports, default=0)) if full_nodes else eps
            n_leaf = max(1, -(-full // down_cap))
            load = [eps // n_leaf + (1 if k < eps % n_leaf else 0) for k in range(n_leaf)]
            design = [max(n, -(-full // n_leaf)) for n in load]
        self.load.extend(load)
        self.design.extend(design)
        self.su_of.extend([len(self.sus)] * len(load))
        self.sus.append(ScalableUnit(len(self.sus), len(hosts), hostlist.compress(hosts), "", rack=rack))

    def add_extra(self, count: int) -> None:
        """Cable ``count`` non-node endpoints to the least loaded leaves, last leaf first."""
        if not self.load:
            return
        heap = [(n, -k) for k, n in enumerate(self.load)]
        heapq.heapify(heap)
        for _ in range(count):
            n, neg_k = heapq.heappop(heap)
            k = -neg_k
            self.extra_leaves.append(k)
            self.load[k] = n + 1
            self.design[k] = max(self.design[k], n + 1)
            heapq.heappush(heap, (n + 1, neg_k))


def _scalable_units(fab: _Fabric, groups: Sequence[GroupPlan], ep: _Endpoints, down_cap: int) -> _Units:
    units = _Units()
    if fab.su_by == "rack":
        by_rack: dict[int, tuple[list[str], list[int]]] = {}
        for gi in ep.members:
            g = groups[gi]
            for host, r in zip(g.hosts, g.rack_index):
                hosts, ports = by_rack.setdefault(r, ([], []))
                hosts.append(host)
                ports.append(ep.ports_per_host[gi])
        for r, (hosts, ports) in sorted(by_rack.items()):
            units.add(hosts, ports, fab.rail_optimized, ep.rails, down_cap, None, rack=r)
        units.su_nodes = max((len(h) for h, _ in by_rack.values()), default=0)
    else:
        all_hosts: list[str] = []
        all_ports: list[int] = []
        for gi in ep.members:
            all_hosts.extend(groups[gi].hosts)
            all_ports.extend([ep.ports_per_host[gi]] * groups[gi].count)
        if fab.su_nodes:
            size = fab.su_nodes
        elif fab.rail_optimized:
            size = down_cap
        else:
            size = max(1, down_cap // max(1, ep.rails))
        for start in range(0, len(all_hosts), size):
            units.add(all_hosts[start:start + size], all_ports[start:start + size], fab.rail_optimized,
                      ep.rails, down_cap, fab.su_nodes)
        units.su_nodes = size
    units.add_extra(fab.extra_endpoints)
    return units


# --- tiers -------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Built:
    tiers: list[SwitchTier] = field(default_factory=list)
    links: list[LinkBundle] = field(default_factory=list)
    ratios: list[tuple[float, str]] = field(default_factory=list)
    max_endpoints: int = 0
    pods: int = 1
    leaves_per_pod: int = 0


def _leaf_tier(fab: _Fabric, leaf_sw: Switch, port: LeafPort, units: _Units, names: list[str], up_gbps: float,
               dedicated: bool, out: _Built) -> int:
    """Append the leaf tier and the node-leaf links; returns uplinks per leaf."""
    busiest = max(range(len(units.design)), key=lambda i: units.design[i], default=0)
    down = units.design[busiest] if units.design else 0
    if fab.tiers == 1 or not units.load:
        up = 0
    else:
        up = fab.leaf_uplinks or uplinks_for(down, port.link_gbps, fab.oversubscription, up_gbps)
    down_ports = -(-down // port.breakout)
    out.tiers.append(SwitchTier(
        1, "leaf", fab.switch, leaf_sw, len(names), hostlist.compress(names), port.native_ports,
        port.native_gbps, port.link_gbps, port.breakout, down, up_gbps, up, dedicated,
        down_ports + (0 if dedicated else up), port.native_ports, names[busiest] if names else ""))
    out.links.append(LinkBundle("node", "leaf", sum(units.load), port.link_gbps, port.breakout))
    if up:
        out.ratios.append((down * port.link_gbps / (up * up_gbps), "leaf"))
    return up


def _two_tier(fab: _Fabric, spine_name: str, spine_sw: Switch, up_gbps: float, n_leaves: int, up: int,
              down_cap: int, out: _Built) -> None:
    """Spines take every leaf uplink; nothing above them."""
    s_native, s_break, s_gbps = ports_at(spine_sw, up_gbps)
    s_ports = s_native * s_break
    total_up = n_leaves * up
    spines = fab.spine_count or spine_count(-(-total_up // s_ports), up)
    per_spine = -(-total_up // spines)
    names = _names(f"{fab.name}-spine", spines)
    out.tiers.append(SwitchTier(2, "spine", spine_name, spine_sw, spines, hostlist.compress(names), s_native,
                                s_gbps, up_gbps, s_break, per_spine, 0.0, 0, False, -(-per_spine // s_break),
                                s_native, names[0]))
    out.links.append(LinkBundle("leaf", "spine", total_up, up_gbps, s_break))
    out.max_endpoints = s_ports * down_cap  # one leaf per spine port


def _spine_uplinks(down: int, ports: int) -> int:
    """A pod spine's uplinks: as many as its downlinks (1:1) where the ports allow, else the ports left
    (an oversubscribed spine); when not even one port is left, still 1:1, which overruns the port budget."""
    left = ports - down
    return min(down, left) if left >= 1 else down


def _three_tier(fab: _Fabric, spine_name: str, spine_sw: Switch, core_name: str, core_sw: Switch,
                up_gbps: float, n_leaves: int, up: int, leaves_per_su: int, down_cap: int, out: _Built) -> None:
    """Pods of radix/2 leaves (whole SUs) with their own spines; cores above the pods."""
    s_native, s_break, s_gbps = ports_at(spine_sw, up_gbps)
    s_ports = s_native * s_break
    half = s_ports // 2
    lps = max(1, leaves_per_su)
    per_pod = max(lps, (half // lps) * lps)
    pods = -(-n_leaves // per_pod)
    pod_sizes = [min(per_pod, n_leaves - p * per_pod) for p in range(pods)]
    biggest = pod_sizes[0]
    spines_per_pod = fab.spine_count or spine_count(-(-biggest * up // half), up)
    spine_down = -(-biggest * up // spines_per_pod)
    spine_up = _spine_uplinks(spine_down, s_ports)
    total_spine_up = 0  # a partly filled last pod's spines carry fewer links, up as down
    for size in pod_sizes:
        q, r = divmod(size * up, spines_per_pod)  # r spines carry q + 1 leaf links, the others q
        total_spine_up += r * _spine_uplinks(q + 1, s_ports) + (spines_per_pod - r) * _spine_uplinks(q, s_ports)
    c_native, c_break, c_gbps = ports_at(core_sw, up_gbps)
    c_ports = c_native * c_break
    cores = max(1, -(-total_spine_up // c_ports))
    core_down = -(-total_spine_up // cores)
    n_spines = spines_per_pod * pods
    s_names = _names(f"{fab.name}-spine", n_spines)
    c_names = _names(f"{fab.name}-core", cores)
    out.tiers.append(SwitchTier(2, "spine", spine_name, spine_sw, n_spines, hostlist.compress(s_names), s_native,
                                s_gbps, up_gbps, s_break, spine_down, up_gbps, spine_up, False,
                                -(-spine_down // s_break) + -(-spine_up // s_break), s_native, s_names[0]))
    out.tiers.append(SwitchTier(3, "core", core_name, core_sw, cores, hostlist.compress(c_names), c_native,
                                c_gbps, up_gbps, c_break, core_down, 0.0, 0, False, -(-core_down // c_break),
                                c_native, c_names[0]))
    out.links.append(LinkBundle("leaf", "spine", n_leaves * up, up_gbps, s_break))
    out.links.append(LinkBundle("spine", "core", total_spine_up, up_gbps, c_break))
    if spine_up and spine_down > spine_up:
        out.ratios.append((spine_down / spine_up, "spine"))
    out.pods, out.leaves_per_pod = pods, per_pod
    out.max_endpoints = c_ports * per_pod * down_cap  # one pod per core port


# --- the fabric ----------------------------------------------------------------------------------------

def build_fabric(index: int, fab: _Fabric, switches: dict[str, Switch], groups: Sequence[GroupPlan],
                 attached: list[tuple[int, str]]) -> FabricPlan:
    """Plan fabric ``index`` of the blueprint; ``attached`` holds (index into ``groups``, NIC role) pairs."""
    leaf_sw = switches[fab.switch]
    spine_name = fab.spine_switch or fab.switch
    core_name = fab.core_switch or spine_name
    spine_sw, core_sw = switches[spine_name], switches[core_name]

    ep = _endpoints(groups, attached)
    nic_gbps = ep.nic_gbps or fab.link_gbps or leaf_sw.port_modes[0].speed_gbps
    port = leaf_port(leaf_sw, fab.link_gbps or nic_gbps)
    dedicated = leaf_sw.uplinks is not None
    up_gbps = leaf_sw.uplinks.speed_gbps if dedicated else port.native_gbps
    down_cap = down_capacity(port, up_gbps, fab.oversubscription, shared=fab.tiers > 1 and not dedicated)

    units = _scalable_units(fab, groups, ep, down_cap)
    n_leaves = len(units.load)
    leaf_names = _names(f"{fab.name}-leaf", n_leaves)
    leaves_of: dict[int, list[str]] = {}
    for name, s in zip(leaf_names, units.su_of):
        leaves_of.setdefault(s, []).append(name)
    leaves_per_su = max((len(v) for v in leaves_of.values()), default=0)
    sus = tuple(ScalableUnit(su.index, su.nodes, su.hostlist, hostlist.compress(leaves_of.get(su.index, [])),
                             su.rack) for su in units.sus)

    out = _Built(max_endpoints=down_cap if fab.tiers == 1 else 0)
    up = _leaf_tier(fab, leaf_sw, port, units, leaf_names, up_gbps, dedicated, out)
    if fab.tiers == 2 and n_leaves:
        _two_tier(fab, spine_name, spine_sw, up_gbps, n_leaves, up, down_cap, out)
    elif fab.tiers == 3 and n_leaves:
        _three_tier(fab, spine_name, spine_sw, core_name, core_sw, up_gbps, n_leaves, up, leaves_per_su,
                    down_cap, out)

    worst, where = max(out.ratios, key=lambda r: r[0], default=(1.0, ""))
    return FabricPlan(
        index=index, name=fab.name, kind=fab.kind, path=("fabrics", index), tiers_declared=fab.tiers,
        rail_optimized=fab.rail_optimized, oversubscription_declared=fab.oversubscription,
        attached=tuple(attached), endpoints=sum(units.load), nodes=sum(groups[gi].count for gi in ep.members),
        rails=ep.rails, nic_gbps=nic_gbps, nic_models=ep.models, sus=sus, su_nodes=units.su_nodes,
        tiers=tuple(out.tiers), links=tuple(out.links), pods=out.pods, oversubscription_achieved=worst,
        oversubscription_where=where, max_endpoints=out.max_endpoints,
        disconnected_leaves=fab.tiers == 1 and n_leaves > 1, leaves_per_su=leaves_per_su,
        leaves_per_pod=out.leaves_per_pod, leaf_down_capacity=down_cap, extra_leaves=tuple(units.extra_leaves))
