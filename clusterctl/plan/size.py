"""How big a plan would be, counted before it is built.

A host range stands for many hosts (``gpu[0000001-1000000]`` is 24 bytes), so a 4 KB blueprint of thirty
such groups asks for thirty million hosts: expanding them takes gigabytes and minutes before any rule can
say a word. :func:`check` counts what the plan would name - the names of every host list (racks, hosts, the
racks groups and fabrics are placed in), from the ranges without expanding them, and an upper bound of the switches the fabric planner
(clusterctl/plan/fabric.py) would create - and refuses a blueprint over
:data:`clusterctl.limits.MAX_PLANNED` with a ``BP007`` problem at the field that goes over, with the figures.
"""

from __future__ import annotations

from clusterctl import hostlist
from clusterctl.blueprint.model import Blueprint
from clusterctl.blueprint.network import _Fabric
from clusterctl.catalog.models import Switch
from clusterctl.errors import LoadCode, Problem
from clusterctl.limits import MAX_PLANNED
from clusterctl.plan.fabric import down_capacity, leaf_port, ports_at, uplinks_for
from clusterctl.plan.model import NodeTypePlan


def _count(expr: str | None) -> int:
    """Names in a host list; 0 for a malformed one (the planner reports it at its line)."""
    if not expr:
        return 0
    try:
        return hostlist.count(expr)
    except hostlist.HostlistError:
        return 0


def _ceil(a: float, b: float) -> int:
    return -(-int(a) // max(1, int(b)))


def switch_bound(fab: _Fabric, switches: dict[str, Switch], members: list[tuple[int, int, float]],
                 racks: int) -> int:
    """At least as many switches as :func:`clusterctl.plan.fabric.build_fabric` creates for ``fab``;
    ``members``: (hosts, attached ports per host, fastest attached NIC Gb/s) of each attached group."""
    leaf_sw = switches.get(fab.switch)
    spine_sw = switches.get(fab.spine_switch or fab.switch)
    core_sw = switches.get(fab.core_switch or fab.spine_switch or fab.switch)
    members = [(h, p, s) for h, p, s in members if p > 0 and h > 0]
    if leaf_sw is None or spine_sw is None or core_sw is None or not members:
        return 0  # an unknown switch is reported by the planner; no endpoints, no leaves
    nodes = sum(h for h, _, _ in members)
    ports = sum(h * p for h, p, _ in members)
    rails = max(p for _, p, _ in members)
    nic_gbps = max(s for _, _, s in members) or fab.link_gbps or leaf_sw.port_modes[0].speed_gbps
    port = leaf_port(leaf_sw, fab.link_gbps or nic_gbps)
    dedicated = leaf_sw.uplinks is not None
    up_gbps = leaf_sw.uplinks.speed_gbps if dedicated else port.native_gbps
    down_cap = down_capacity(port, up_gbps, fab.oversubscription, shared=fab.tiers > 1 and not dedicated)
    if fab.su_by == "rack":
        size, units = nodes, min(nodes, racks + 1)  # one unit per rack, one for hosts in no rack
    else:
        size = fab.su_nodes or (down_cap if fab.rail_optimized else max(1, down_cap // rails))
        units = _ceil(nodes, size)
    reserved = fab.su_nodes or 0
    if fab.rail_optimized:
        per_unit = rails
        leaves = rails * units
    else:
        per_unit = _ceil(max(size, reserved) * rails, down_cap)
        leaves = units + _ceil(ports + units * reserved * rails, down_cap)
    if fab.tiers == 1:
        return leaves
    down = max(down_cap, reserved, size) + fab.extra_endpoints
    up = fab.leaf_uplinks or uplinks_for(down, port.link_gbps, fab.oversubscription, up_gbps)
    native, breakout, _ = ports_at(spine_sw, up_gbps)
    spine_ports = native * breakout
    if fab.tiers == 2:
        return leaves + (fab.spine_count or 2 * _ceil(leaves * up, spine_ports) + 1)
    half = max(1, spine_ports // 2)
    # the planner's pod is max(lps, half // lps * lps) leaves for lps leaves per unit (<= per_unit): never
    # fewer than about half a spine's ports, never more than max(per_unit, half)
    pods = _ceil(leaves, max(1, (half + 1) // 2))
    biggest = min(leaves, max(per_unit, half))
    spines = pods * (fab.spine_count or 2 * _ceil(biggest * up, half) + 1)
    native, breakout, _ = ports_at(core_sw, up_gbps)
    return leaves + spines + _ceil(leaves * up, native * breakout) + 1


def check(bp: Blueprint, types: dict[str, NodeTypePlan], switches: dict[str, Switch]) -> Problem | None:
    """A problem at the field whose hosts, racks or switches take the plan over :data:`MAX_PLANNED`."""
    total = 0
    hosts: dict[str, int] = {}

    def add(n: int, path: tuple, what: str) -> Problem | None:
        nonlocal total
        total += n
        if total <= MAX_PLANNED:
            return None
        return Problem(path, f"{what} adds {n:,} to {total - n:,} hosts, racks and switches planned before it: "
                             f"{total:,} in all, more than clusterctl plans ({MAX_PLANNED:,})",
                       hint="check the range bounds and counts; a larger design is split into several blueprints",
                       code=LoadCode.INPUT_LIMIT)

    for i, rr in enumerate(bp.racks):
        if p := add(_count(rr.names), ("racks", i, "names"), f"racks[{i}].names"):
            return p
    racks = total
    for i, g in enumerate(bp.node_groups):
        hosts[g.name] = _count(g.hostnames)
        if p := add(hosts[g.name], ("node_groups", i, "hostnames"), f"node group {g.name}"):
            return p
        # the racks a group names are expanded too (each looked up among the racks)
        if p := add(_count(g.racks), ("node_groups", i, "racks"), f"node group {g.name}'s racks"):
            return p
    for i, fab in enumerate(bp.fabrics):
        roles: dict[str, set[str]] = {}  # group -> attached NIC roles (a pair attached twice is cabled once)
        for a in fab.attach:
            for g in bp.node_groups:
                if a.group in (g.name, "all"):
                    roles.setdefault(g.name, set()).add(a.nic_role)
        members = []
        for g in bp.node_groups:
            nt = types.get(g.type)
            if nt is not None and g.name in roles:
                nics = [n for role in sorted(roles.pop(g.name)) for n in nt.nics_of(role)]
                members.append((hosts[g.name], sum(n.count for n in nics),
                                max((n.speed_gbps for n in nics), default=0.0)))
        if p := add(switch_bound(fab, switches, members, racks), ("fabrics", i), f"fabric {fab.name}'s switches"):
            return p
        if p := add(_count(fab.switch_racks), ("fabrics", i, "switch_racks"), f"fabric {fab.name}'s switch racks"):
            return p
    return None
