"""Fabric intent -> switch tiers, scalable units and link bundles.

The builder follows the folded-Clos (fat tree) construction used by NVIDIA's DGX SuperPOD reference
architectures: a scalable unit (SU) of nodes gets one leaf per rail when rail-optimized; every leaf
splits its native ports into downlinks and uplinks by the declared oversubscription; spines take every
leaf uplink, their count rounded up so that each leaf's uplinks spread evenly over them; with three
tiers, leaves and spines form pods of ``radix/2`` leaves and pod spines uplink 1:1 to cores.

The builder never refuses a design: it plans what was asked and records the numbers (ports needed vs
available, achieved vs declared ratio, size limit) for the rules to judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from clusterctl import hostlist
from clusterctl.blueprint.network import _Fabric
from clusterctl.catalog.models import Switch
from clusterctl.plan.model import FabricPlan, GroupPlan, LinkBundle, ScalableUnit, SwitchTier


def ports_at(switch: Switch, gbps: float) -> tuple[int, int, float]:
    """(native ports, logical links per native port, native speed) for links of ``gbps``.

    A speed the switch lists as a port mode is reached by splitting native ports (breakout); a speed
    below every mode runs on native ports at reduced rate (one link per port).
    """
    native = switch.port_modes[0]
    for mode in switch.port_modes:
        if math.isclose(mode.speed_gbps, gbps):
            per_port = max(1, round(mode.ports / native.ports))
            return native.ports, per_port, native.speed_gbps
    return native.ports, 1, native.speed_gbps


def _names(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}{str(i).zfill(width)}" for i in range(1, count + 1)]


def _even_divisor_count(minimum: int, per_leaf_uplinks: int) -> int:
    """Smallest switch count >= minimum over which ``per_leaf_uplinks`` spread evenly, when one exists."""
    s = max(1, minimum)
    while s <= per_leaf_uplinks and per_leaf_uplinks % s:
        s += 1
    return s if s <= per_leaf_uplinks else max(1, minimum)


def build_fabric(index: int, fab: _Fabric, switches: dict[str, Switch], groups: Sequence[GroupPlan],
                 attached: list[tuple[int, str]]) -> FabricPlan:
    leaf_sw = switches[fab.switch]
    spine_name = fab.spine_switch or fab.switch
    core_name = fab.core_switch or spine_name
    spine_sw, core_sw = switches[spine_name], switches[core_name]

    # --- endpoints ---------------------------------------------------------------------------------
    rails_by_group: dict[int, int] = {}
    speeds, models = [], set()
    for gi, role in attached:
        nics = groups[gi].type.nics_of(role)
        rails_by_group[gi] = rails_by_group.get(gi, 0) + sum(n.count for n in nics)
        for n in nics:
            speeds.append(n.speed_gbps)
            models.add(n.model)
    nic_gbps = max(speeds) if speeds else (fab.link_gbps or leaf_sw.port_modes[0].speed_gbps)
    down_gbps = fab.link_gbps or nic_gbps
    rails = max(rails_by_group.values()) if rails_by_group else 0
    member_groups = [gi for gi in dict.fromkeys(gi for gi, _ in attached) if rails_by_group.get(gi, 0) > 0]

    native_ports, breakout, native_gbps = ports_at(leaf_sw, down_gbps)
    if leaf_sw.uplinks is not None:
        up_gbps, dedicated = leaf_sw.uplinks.speed_gbps, True
    else:
        up_gbps, dedicated = native_gbps, False
    o = fab.oversubscription
    if fab.tiers == 1 or dedicated:
        down_cap = native_ports * breakout
    else:
        down_cap = max(1, int(native_ports / (1 / breakout + down_gbps / (o * up_gbps))))

    # --- scalable units and leaves -----------------------------------------------------------------
    sus: list[ScalableUnit] = []
    leaf_loads: list[int] = []  # endpoints per leaf, in leaf order
    leaf_su: list[int] = []
    if fab.su_by == "rack":
        by_rack: dict[int, list[str]] = {}
        ep_rack: dict[int, int] = {}
        for gi in member_groups:
            g = groups[gi]
            for host, r in zip(g.hosts, g.rack_index):
                by_rack.setdefault(r, []).append(host)
                ep_rack[r] = ep_rack.get(r, 0) + rails_by_group[gi]
        units = sorted(by_rack.items())
        su_nodes = max((len(h) for _, h in units), default=0)
        for r, hosts in units:
            eps = ep_rack[r]
            n_leaf = rails if fab.rail_optimized else max(1, -(-eps // down_cap))
            per = eps // n_leaf if fab.rail_optimized else None
            for k in range(n_leaf):
                leaf_loads.append(per if per is not None else eps // n_leaf + (1 if k < eps % n_leaf else 0))
                leaf_su.append(len(sus))
            sus.append(ScalableUnit(len(sus), len(hosts), hostlist.compress(hosts), "", rack=r))
    else:
        all_hosts: list[str] = []
        ep_per_host: list[int] = []
        for gi in member_groups:
            all_hosts.extend(groups[gi].hosts)
            ep_per_host.extend([rails_by_group[gi]] * groups[gi].count)
        if fab.su_nodes:
            su_nodes = fab.su_nodes
        elif fab.rail_optimized:
            su_nodes = down_cap
        else:
            su_nodes = max(1, down_cap // max(1, rails))
        for start in range(0, len(all_hosts), su_nodes):
            chunk = all_hosts[start:start + su_nodes]
            eps = sum(ep_per_host[start:start + su_nodes])
            if fab.rail_optimized:
                n_leaf = rails
                loads = [len(chunk)] * n_leaf
            else:
                n_leaf = max(1, -(-eps // down_cap))
                loads = [eps // n_leaf + (1 if k < eps % n_leaf else 0) for k in range(n_leaf)]
            leaf_loads.extend(loads)
            leaf_su.extend([len(sus)] * n_leaf)
            sus.append(ScalableUnit(len(sus), len(chunk), hostlist.compress(chunk), ""))
    # extra endpoints (UFM, gateways) go to the least loaded leaves, last first
    for _ in range(fab.extra_endpoints):
        if not leaf_loads:
            break
        k = min(range(len(leaf_loads) - 1, -1, -1), key=lambda i: leaf_loads[i])
        leaf_loads[k] += 1
    n_leaves = len(leaf_loads)
    leaf_names = _names(f"{fab.name}-leaf", n_leaves)
    named_sus = []
    for su in sus:
        mine = [leaf_names[i] for i, s in enumerate(leaf_su) if s == su.index]
        named_sus.append(ScalableUnit(su.index, su.nodes, su.hostlist, hostlist.compress(mine), su.rack))
    endpoints = sum(leaf_loads)
    node_count = sum(groups[gi].count for gi in member_groups)
    max_down = max(leaf_loads, default=0)

    # --- leaf uplinks ------------------------------------------------------------------------------
    if fab.tiers == 1:
        up = 0
    elif fab.leaf_uplinks:
        up = fab.leaf_uplinks
    else:
        up = max(1, math.ceil(max_down * down_gbps / (o * up_gbps))) if max_down else 0
    leaf_ports_needed = max_down / breakout + (0 if dedicated else up)
    leaf_ports_avail = native_ports
    tiers = [SwitchTier(1, "leaf", fab.switch, leaf_sw, n_leaves, hostlist.compress(leaf_names), native_ports,
                        native_gbps, down_gbps, breakout, max_down, up_gbps, up, dedicated,
                        leaf_ports_needed if not dedicated else max_down / breakout, leaf_ports_avail)]
    links = [LinkBundle("node", "leaf", endpoints, down_gbps, breakout)]
    ratios = [(max_down * down_gbps / (up * up_gbps) if up else (math.inf if n_leaves > 1 else 1.0), "leaf")]
    pods = 1
    max_endpoints = down_cap * (1 if fab.tiers == 1 else 0)

    if fab.tiers >= 2 and n_leaves:
        s_native, s_break, _ = ports_at(spine_sw, up_gbps)
        s_ports = s_native * s_break
        total_up = n_leaves * up
        if fab.tiers == 2:
            spines = fab.spine_count or _even_divisor_count(-(-total_up // s_ports), up)
            connected = min(total_up, spines * s_ports)
            spine_down = -(-connected // spines)
            tiers.append(SwitchTier(2, "spine", spine_name, spine_sw, spines,
                                    hostlist.compress(_names(f"{fab.name}-spine", spines)), s_native,
                                    spine_sw.port_modes[0].speed_gbps, up_gbps, s_break, spine_down, 0.0, 0, False,
                                    -(-total_up // spines) / s_break, s_native))
            links.append(LinkBundle("leaf", "spine", total_up, up_gbps, s_break))
            if connected < total_up:
                ratios.append((n_leaves * max_down * down_gbps / (connected * up_gbps), "spine"))
            max_endpoints = s_ports * down_cap
        else:
            spine_down_cap = s_ports // 2
            leaves_per_su = max(1, n_leaves // max(1, len(named_sus)))
            leaves_per_pod = max(leaves_per_su, (spine_down_cap // leaves_per_su) * leaves_per_su)
            pods = -(-n_leaves // leaves_per_pod)
            pod_leaves = min(leaves_per_pod, n_leaves)
            pod_up = pod_leaves * up
            spines_per_pod = fab.spine_count or _even_divisor_count(-(-pod_up // spine_down_cap), up)
            connected_per_pod = min(pod_up, spines_per_pod * s_ports)
            spine_down = -(-connected_per_pod // spines_per_pod)
            spine_up = spine_down  # pod spines uplink 1:1
            spine_ports_needed = (spine_down + spine_up) / s_break
            n_spines = spines_per_pod * pods
            c_native, c_break, _ = ports_at(core_sw, up_gbps)
            c_ports = c_native * c_break
            total_spine_up = n_spines * spine_up
            cores = max(1, -(-total_spine_up // c_ports))
            tiers.append(SwitchTier(2, "spine", spine_name, spine_sw, n_spines,
                                    hostlist.compress(_names(f"{fab.name}-spine", n_spines)), s_native,
                                    spine_sw.port_modes[0].speed_gbps, up_gbps, s_break, spine_down, up_gbps,
                                    spine_up, False, spine_ports_needed, s_native))
            tiers.append(SwitchTier(3, "core", core_name, core_sw, cores,
                                    hostlist.compress(_names(f"{fab.name}-core", cores)), c_native,
                                    core_sw.port_modes[0].speed_gbps, up_gbps, c_break,
                                    -(-total_spine_up // cores), 0.0, 0, False,
                                    -(-total_spine_up // cores) / c_break, c_native))
            links.append(LinkBundle("leaf", "spine", n_leaves * up, up_gbps, s_break))
            links.append(LinkBundle("spine", "core", total_spine_up, up_gbps, c_break))
            if connected_per_pod < pod_up:
                ratios.append((pod_leaves * max_down * down_gbps / (connected_per_pod * up_gbps), "spine"))
            max_endpoints = c_ports * leaves_per_pod * down_cap

    worst, where = max(ratios, key=lambda r: r[0])
    return FabricPlan(
        index=index, name=fab.name, kind=fab.kind, path=("fabrics", index), tiers_declared=fab.tiers,
        rail_optimized=fab.rail_optimized, oversubscription_declared=o, attached=tuple(attached),
        endpoints=endpoints, nodes=node_count, rails=rails, nic_gbps=nic_gbps, nic_models=tuple(sorted(models)),
        sus=tuple(named_sus), su_nodes=su_nodes, tiers=tuple(tiers), links=tuple(links), pods=pods,
        oversubscription_achieved=worst, oversubscription_where=where, max_endpoints=max_endpoints,
        disconnected_leaves=fab.tiers == 1 and n_leaves > 1)
