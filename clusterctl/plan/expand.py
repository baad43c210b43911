"""Blueprint -> ClusterPlan: resolve names, place nodes in racks, build fabrics, size address pools.

References the plan cannot be built without (node types, catalog models, rack profiles, racks named
by groups, groups attached to fabrics) are checked first; every broken one is reported at once as a
located problem (exit 2) with a "did you mean". Everything else is left to the rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from clusterctl import hostlist
from clusterctl.blueprint.load import LoadedBlueprint, did_you_mean
from clusterctl.blueprint.model import Blueprint
from clusterctl.catalog import Catalog, load_shipped_catalog
from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.plan import size
from clusterctl.plan.devices import device_names, management_device_count
from clusterctl.plan.fabric import build_fabric, tier_switch_names
from clusterctl.plan.host_identity import check_inventory_hosts
from clusterctl.plan.model import (AddressPool, ClusterPlan, FabricPlan, GroupPlan, NicPlan, NodeTypePlan,
                                   PowerItem, RackPlan)


MAX_HOSTLIST_NAMES = 1_000_000
"""more names than any cluster has: a typo'd range bound (gpu[1-100000000]) is reported, not expanded"""
MAX_FABRIC_COUNT = 65_536
"""upper bound for a fabric's su_nodes, extra_endpoints, leaf_uplinks and spine_count: the builder names
every switch and cables every endpoint, so an absurd value (a typo, 1e12) would never finish"""


class _Refs:
    """Collects unresolved references."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def need(self, name: str, table, path: tuple, what: str, listing: str = "") -> bool:
        if name in table:
            return True
        if any(p.path == path and p.code == LoadCode.UNKNOWN_REFERENCE for p in self.problems):
            return False  # one catalog entry used by several node types: one problem at its own line
        hint = did_you_mean(name, table) or (f"known: {', '.join(sorted(table)[:12])}" if table else "")
        if listing:
            hint = (hint + "; " if hint else "") + f"see `{listing}`"
        self.problems.append(Problem(path, f"unknown {what} '{name}'", hint=hint, code=LoadCode.UNKNOWN_REFERENCE))
        return False

    def hostlist(self, expr: str, path: tuple) -> list[str] | None:
        try:
            n = hostlist.count(expr)
            if n > MAX_HOSTLIST_NAMES:  # expanding it would exhaust memory before any rule could say so
                self.problems.append(Problem(path, f"host list '{expr}' names {n:,} hosts; clusterctl plans at "
                                                   f"most {MAX_HOSTLIST_NAMES:,}",
                                             hint="check the range bounds", code=LoadCode.HOST_LIST))
                return None
            return hostlist.expand(expr)
        except hostlist.HostlistError as exc:
            self.problems.append(Problem(path, f"bad host list: {exc}",
                                         hint="write names like gpu[0001-0128] or head[01-02],login01",
                                         code=LoadCode.HOST_LIST))
            return None


def _node_type(name: str, bp: Blueprint, cat: Catalog, refs: _Refs) -> NodeTypePlan | None:
    nt = bp.node_types[name]
    path = ("node_types", name)
    if sum(x is not None for x in (nt.server, nt.spec, nt.instance)) != 1:
        refs.problems.append(Problem(path, f"node type '{name}' needs exactly one of server:, spec: or instance:",
                                     hint="server: names catalog hardware, spec: describes it inline, "
                                          "instance: names a cloud instance type", key=True, code=LoadCode.SCHEMA))
        return None
    if nt.server is not None or nt.spec is not None:
        if nt.spec is not None:
            s, server_name, spec_path = nt.spec, name, path + ("spec",)
        elif refs.need(nt.server, cat.servers, path + ("server",), "server model", "clusterctl catalog servers"):
            s, server_name = cat.servers[nt.server], nt.server
            # a server of the blueprint's own catalog: its names are reported at their own lines there
            spec_path = ("catalog", "servers", nt.server) if nt.server in bp.catalog.servers else None
        else:
            return None
        gpu_model = s.gpus.model if s.gpus else None
        gpus = s.gpus.count if s.gpus else 0
        nics = []
        for si, slot in enumerate(s.nics):
            where = spec_path + ("nics", si, "model") if spec_path else path + ("server",)
            if not refs.need(slot.model, cat.nics, where, f"NIC model (in server {server_name})",
                             "clusterctl catalog nics"):
                continue
            nic = cat.nics[slot.model]
            nics.append(NicPlan(slot.role, slot.model, slot.count * nic.ports, nic.speed_gbps, tuple(nic.protocols)))
        where = spec_path + ("gpus", "model") if spec_path else path + ("server",)
        if gpu_model and not refs.need(gpu_model, cat.accelerators, where, f"accelerator (in server {server_name})",
                                       "clusterctl catalog accelerators"):
            return None
        return NodeTypePlan(
            name=name, path=path, server=s, server_name=server_name, instance=None, instance_name=None,
            gpu_model=gpu_model, accelerator=cat.accelerators.get(gpu_model) if gpu_model else None, gpus=gpus,
            sockets=s.cpu.sockets, cores_per_socket=s.cpu.cores_per_socket, threads_per_core=s.cpu.threads_per_core,
            memory_gb=s.memory_gb, power_kw=s.power_kw, height_u=s.height_u, cooling=s.cooling,
            liquid_fraction=s.liquid_fraction if s.cooling != "air" else 0.0, nics=tuple(nics),
            nvlink_domain_gpus=s.nvlink_domain_gpus, rack_system=s.rack_system, features=tuple(nt.features))
    if not refs.need(nt.instance, cat.instances, path + ("instance",), "instance type", "clusterctl catalog instances"):
        return None
    inst = cat.instances[nt.instance]
    gpu_model = inst.gpus.model if inst.gpus else None
    gpus = inst.gpus.count if inst.gpus else 0
    net = inst.network
    per_nic = net.total_gbps / net.gpu_nics if net.gpu_nics else net.total_gbps
    nics = (NicPlan("compute", net.fabric, net.gpu_nics, per_nic, (net.fabric,)),) if net.gpu_nics else ()
    threads = 2
    return NodeTypePlan(
        name=name, path=path, server=None, server_name=None, instance=inst, instance_name=nt.instance,
        gpu_model=gpu_model, accelerator=cat.accelerators.get(gpu_model) if gpu_model else None, gpus=gpus,
        sockets=2, cores_per_socket=max(1, inst.vcpus // (2 * threads)), threads_per_core=threads,
        memory_gb=inst.memory_gb, power_kw=0.0, height_u=0, cooling="air", liquid_fraction=0.0, nics=nics,
        nvlink_domain_gpus=gpus if gpus > 1 else None, rack_system=None, features=tuple(nt.features))


def _rack_names(bp: Blueprint, refs: _Refs) -> list[tuple[str, int]]:
    out = []
    for i, rr in enumerate(bp.racks):
        refs.need(rr.profile, bp.rack_profiles, ("racks", i, "profile"), "rack profile")
        names = refs.hostlist(rr.names, ("racks", i, "names")) or []
        out.extend((n, i) for n in names)
    return out


def _place(bp: Blueprint, types: dict[str, NodeTypePlan], rack_names: list[tuple[str, int]], refs: _Refs):
    rack_idx = {}
    for n, _ in rack_names:
        rack_idx.setdefault(n, len(rack_idx))
    next_u = [1 + 0 for _ in rack_idx]  # bottom-up allocation
    groups: list[GroupPlan] = []
    occupancy: dict[int, dict[str, int]] = {}
    for gi, g in enumerate(bp.node_groups):
        path = ("node_groups", gi)
        refs.need(g.type, bp.node_types, path + ("type",), "node type")
        hosts = refs.hostlist(g.hostnames, path + ("hostnames",))
        nt = types.get(g.type)
        racks: list[int] = []
        if g.racks is not None:
            names = refs.hostlist(g.racks, path + ("racks",)) or []
            for n in names:
                if refs.need(n, rack_idx, path + ("racks",), "rack"):
                    racks.append(rack_idx[n])
        if hosts is None or nt is None:
            continue
        per_rack = g.per_rack or (-(-len(hosts) // len(racks)) if racks else 0)
        rack_of, u_of = [], []
        slot = 0
        for k in range(len(hosts)):
            ri = k // per_rack if per_rack else len(racks)
            if ri < len(racks) and nt.server is not None:
                r = racks[ri]
                rack_of.append(r)
                u_of.append(next_u[r])
                next_u[r] += nt.height_u
                occupancy.setdefault(r, {}).setdefault(g.type, 0)
                occupancy[r][g.type] += 1
            else:
                rack_of.append(-1)
                u_of.append(0)
            slot += 1
        groups.append(GroupPlan(
            index=gi, name=g.name, role=g.role, path=path, type=nt, hosts=tuple(hosts),
            hostlist=hostlist.compress(hosts), rack_index=tuple(rack_of), u_bottom=tuple(u_of), per_rack=per_rack,
            racks_requested=tuple(racks), nvlink_domain_gpus=g.nvlink_domain_gpus or nt.nvlink_domain_gpus))
    return groups, rack_idx, next_u, occupancy


def _switch_placement(bp: Blueprint, fabrics: Sequence[FabricPlan], rack_idx: dict[str, int], refs: _Refs):
    """(switch name -> rack index of every placed switch, rack index -> {model: count}, kW of switches with no
    rack). A fabric with ``su_by: rack`` puts each scalable unit's leaves in its rack; every other switch goes
    round-robin over the fabric's ``switch_racks``, tier by tier, in name order."""
    rack_of: dict[str, int] = {}
    placed: dict[int, dict[str, int]] = {}
    unplaced_kw = 0.0

    def place(name: str, model: str, r: int) -> None:
        rack_of[name] = r
        placed.setdefault(r, {}).setdefault(model, 0)
        placed[r][model] += 1

    for fp, fab in zip(fabrics, bp.fabrics):
        leaf = fp.tier("leaf")
        if fab.su_by == "rack" and leaf is not None:
            for su in fp.sus:
                try:
                    names = hostlist.expand(su.leaves) if su.leaves else []
                except hostlist.HostlistError:
                    # switch names built from a fabric name that is no host name (NAME002 reports it)
                    names = [f"{fp.name}-leaf-su{su.index}-{k}" for k in range(leaf.count // max(1, len(fp.sus)))]
                for name in names:
                    if su.rack >= 0:
                        place(name, leaf.model, su.rack)
                    else:
                        unplaced_kw += leaf.switch.power_w / 1000
        rest = [t for t in fp.tiers if not (fab.su_by == "rack" and t.role == "leaf")]
        target: list[int] = []
        if fab.switch_racks:
            for n in refs.hostlist(fab.switch_racks, fp.path + ("switch_racks",)) or []:
                if refs.need(n, rack_idx, fp.path + ("switch_racks",), "rack"):
                    target.append(rack_idx[n])
        k = 0
        for t in rest:
            if not target:
                unplaced_kw += t.count * t.switch.power_w / 1000
                continue
            for name in tier_switch_names(fp, t):
                place(name, t.model, target[k % len(target)])
                k += 1
    return rack_of, placed, unplaced_kw


def _racks(bp: Blueprint, cat: Catalog, rack_names, rack_idx, types, occupancy, switch_in_rack, next_u):
    racks = []
    first_path = {}
    for n, i in rack_names:
        first_path.setdefault(n, i)
    for name, r in rack_idx.items():
        entry = first_path[name]
        rr = bp.racks[entry]
        prof = bp.rack_profiles.get(rr.profile)
        system = cat.rack_systems.get(prof.system) if prof and prof.system else None
        items, used_u, liquid_only = [], 0, 0.0
        for tname, cnt in sorted(occupancy.get(r, {}).items()):
            nt = types[tname]
            items.append(PowerItem(f"{nt.server_name}", cnt, nt.power_kw, nt.liquid_fraction))
            used_u += cnt * nt.height_u
            if nt.cooling == "liquid":
                liquid_only += cnt * nt.power_kw * nt.liquid_fraction
        for model, cnt in sorted(switch_in_rack.get(r, {}).items()):
            sw = cat.switches[model]
            lf = 0.9 if sw.cooling == "liquid" else 0.0
            items.append(PowerItem(model, cnt, sw.power_w / 1000, lf))
            used_u += cnt * sw.height_u
            if sw.cooling == "liquid":
                liquid_only += cnt * sw.power_w / 1000 * lf
        if system is not None:
            tray = cat.servers.get(system.compute_tray)
            overhead = system.power_kw - system.compute_trays * (tray.power_kw if tray else 0.0)
            if overhead > 0:
                items.append(PowerItem(f"{prof.system} switch trays and power shelves", 1, round(overhead, 3),
                                       system.liquid_fraction))
                liquid_only += overhead * system.liquid_fraction
        used_u += prof.reserved_u if prof else 0
        racks.append(RackPlan(index=r, name=name, path=("racks", entry), profile_name=rr.profile,
                              profile_path=("rack_profiles", rr.profile), system=system, items=tuple(items),
                              used_u=used_u, liquid_only_kw=liquid_only))
    return tuple(racks)


ROUTED_ROLES = ("compute", "storage")
"""NIC roles that are L3 to the host (a /31 per port) when a routed RoCE fabric attaches them: the compute rails
and the storage ports of a converged fabric (in-band ports stay L2: their pool is shared with hosts on other
fabrics; docs/network.md)"""


def routed_roles(fabrics: Sequence[FabricPlan]) -> frozenset[str]:
    """The NIC roles cabled to a routed RoCE fabric (a leaf-spine with L3 to the host), so their pool gives every
    port a /31 link (AddressPool.point_to_point; clusterctl/plan/underlay.py)."""
    return frozenset(role for f in fabrics if f.kind == "roce" for _, role in f.attached
                     if role in ROUTED_ROLES)


def _addresses(bp: Blueprint, groups: Sequence[GroupPlan], fabrics: Sequence[FabricPlan], racks: Sequence[RackPlan],
               refs: _Refs):
    pools = []
    switches = sum(f.switch_count for f in fabrics)
    devices = management_device_count(racks, bp.rack_profiles, bp.cooling.cdus)
    routed = routed_roles(fabrics)
    for name, net in sorted(bp.addressing.items()):
        path = ("addressing", name)
        try:
            ipn = ipaddress.ip_network(net.cidr, strict=True)
        except ValueError as exc:
            refs.problems.append(Problem(path + ("cidr",), f"'{net.cidr}' is not a network prefix: {exc}",
                                         hint="write it as 10.10.0.0/16 with the host bits zero", code=LoadCode.SCHEMA))
            continue
        offsets, slot = [], 0
        p2p = net.role in routed
        for g in groups:
            if net.role in ("compute", "storage"):  # one address per port: rails, multi-rail storage (LNet)
                per_host = g.type.nic_count(net.role) * (2 if p2p else 1)  # p2p: a /31 per port
            else:
                per_host = 1 if (g.type.nic_count(net.role) or
                                 (net.role == "inband" and g.type.instance is not None)) else 0
            if per_host:
                offsets.append((g.index, slot, per_host))
                slot += per_host * g.count
        switch_offset = -1
        if net.role in ("mgmt", "loopback") and switches:
            switch_offset = slot
            slot += switches
        device_offset = -1
        if net.role == "mgmt" and devices:  # PDUs and CDUs after the switches (plan/devices.py)
            device_offset = slot
            slot += devices
        special = 2 if (ipn.version == 4 and ipn.prefixlen < 31) else 0
        first = (1 if special else 0) + net.reserved
        first += first % 2 if p2p else 0  # /31 pairs start on an even address
        capacity = max(0, ipn.num_addresses - first - (1 if special else 0))
        pools.append(AddressPool(name, path, net.cidr, net.role, ipn.version, capacity, slot, first,
                                 tuple(offsets), switch_offset, p2p, device_offset))
    return tuple(pools)


def expand(loaded: LoadedBlueprint, catalog: Catalog | None = None) -> ClusterPlan:
    bp = loaded.blueprint
    cat = (catalog or load_shipped_catalog()).with_entries(bp.catalog)
    refs = _Refs()
    types: dict[str, NodeTypePlan] = {}
    for name in bp.node_types:
        nt = _node_type(name, bp, cat, refs)
        if nt is not None:
            types[name] = nt
    for pname, prof in bp.rack_profiles.items():
        for key, names in (("cdu", [prof.cdu] if prof.cdu is not None else []), ("cdus", prof.cdus)):
            for i, name in enumerate(names):
                refs.need(name, {c.name for c in bp.cooling.cdus},
                          ("rack_profiles", pname, key) + ((i,) if key == "cdus" else ()), "CDU")
        if prof.system is not None:
            refs.need(prof.system, cat.rack_systems, ("rack_profiles", pname, "system"), "rack system",
                      "clusterctl catalog rack_systems")
    if bp.slurm is not None:  # rules expand it; a typo'd range must not exhaust memory there
        try:
            if hostlist.count(bp.slurm.controllers) > MAX_HOSTLIST_NAMES:
                refs.hostlist(bp.slurm.controllers, ("slurm", "controllers"))
        except hostlist.HostlistError:
            pass  # SLURM002 reports a malformed list
    too_big = size.check(bp, types, cat.switches)
    if too_big is not None:  # expanding it would take gigabytes and minutes before any rule could say so
        raise BlueprintError(loaded.source, refs.problems + [too_big])
    rack_names = _rack_names(bp, refs)
    groups, rack_idx, next_u, occupancy = _place(bp, types, rack_names, refs)
    by_name = {g.name: g.index for g in groups}
    # groups left out of the plan because their type or host list is broken (reported above): a name that
    # refers to one of them follows from that problem and is not reported again
    unplanned = {g.name for g in bp.node_groups} - set(by_name)
    pos = {g.index: k for k, g in enumerate(groups)}
    fabrics = []
    for fi, fab in enumerate(bp.fabrics):
        path = ("fabrics", fi)
        ok = True
        for key in ("su_nodes", "extra_endpoints", "leaf_uplinks", "spine_count"):
            value = getattr(fab, key)
            if value is not None and value > MAX_FABRIC_COUNT:
                ok = False
                refs.problems.append(Problem(path + (key,), f"fabric {fab.name}: {key} is {value:,}, more than "
                                                            f"clusterctl plans (at most {MAX_FABRIC_COUNT:,})",
                                             hint="check the value", code=LoadCode.SCHEMA))
        for key in ("switch", "spine_switch", "core_switch"):
            model = getattr(fab, key)
            if model is not None:
                ok &= refs.need(model, cat.switches, path + (key,), "switch model", "clusterctl catalog switches")
        attached = []
        for ai, att in enumerate(fab.attach):
            if att.group == "all":
                attached.extend((pos[g.index], att.nic_role) for g in groups)
            elif att.group in unplanned:
                continue
            elif refs.need(att.group, by_name | {"all": -1}, path + ("attach", ai, "group"), "node group"):
                if by_name[att.group] in pos:
                    attached.append((pos[by_name[att.group]], att.nic_role))
        if ok:
            fabrics.append(build_fabric(fi, fab, cat.switches, groups, attached))
    if refs.problems:
        raise BlueprintError(loaded.source, refs.problems)
    switch_rack, switch_in_rack, unplaced_kw = _switch_placement(bp, fabrics, rack_idx, refs)
    racks = _racks(bp, cat, rack_names, rack_idx, types, occupancy, switch_in_rack, next_u)
    addresses = _addresses(bp, groups, fabrics, racks, refs)
    if refs.problems:
        raise BlueprintError(loaded.source, refs.problems)
    inventory = check_inventory_hosts(loaded.inventory, groups,
                                      device_names(fabrics, racks, bp.rack_profiles, bp.cooling.cdus))
    return ClusterPlan(blueprint=bp, catalog=cat, node_types=types, groups=tuple(groups), racks=racks,
                       fabrics=tuple(fabrics), addresses=addresses, unplaced_switch_kw=unplaced_kw,
                       inventory=inventory, price_sheet=loaded.price_sheet, switch_rack=switch_rack)
