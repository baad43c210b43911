"""Fabric: switch port budgets, oversubscription, speeds and protocols, fat-tree size, rails, attachments.

The fabric builder (:mod:`clusterctl.plan.fabric`) plans whatever the blueprint asks for and records the
numbers; these rules judge them. Messages name the busiest switch of a tier, because every switch of a
tier is built the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from clusterctl.plan.fabric import uplinks_for
from clusterctl.plan.model import BPath, ClusterPlan, FabricPlan, SwitchTier
from clusterctl.rules.base import Hit, Severity, rule

PROTOCOL = {"infiniband": "infiniband", "roce": "ethernet", "ethernet": "ethernet"}
"""the link protocol NICs and switches must speak for each fabric kind"""
RDMA_KINDS = ("infiniband", "roce")


def _intent(plan: ClusterPlan, fp: FabricPlan):
    return plan.blueprint.fabrics[fp.index]


def _g(gbps: float) -> str:
    return f"{gbps:g}G"


def _attach_path(plan: ClusterPlan, fp: FabricPlan, gi: int, role: str) -> BPath:
    """The attach entry that cables group ``gi``'s ``role`` NICs to ``fp`` (by name first, then ``all``)."""
    name = plan.groups[gi].name
    attach = _intent(plan, fp).attach
    for want in (name, "all"):
        for ai, att in enumerate(attach):
            if att.group == want and att.nic_role == role:
                return fp.path + ("attach", ai)
    return fp.path + ("attach",)


def _pairs(fp: FabricPlan) -> list[tuple[int, str]]:
    """(group index, role) pairs attached to ``fp``, each once."""
    return list(dict.fromkeys(fp.attached))


def _switch_path(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier) -> BPath:
    """Where the tier's switch model is written: its own key if set, else the one it defaults to."""
    fab = _intent(plan, fp)
    keys = {"leaf": ("switch",), "spine": ("spine_switch", "switch"),
            "core": ("core_switch", "spine_switch", "switch")}[tier.role]
    for key in keys:
        if getattr(fab, key) is not None:
            return fp.path + (key,)
    return fp.path + ("switch",)


def _budget_path(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier) -> BPath:
    """The value that sizes a tier: su_nodes / leaf_uplinks for leaves, spine_count for spines."""
    fab = _intent(plan, fp)
    keys = {"leaf": ("su_nodes", "leaf_uplinks"), "spine": ("spine_count",), "core": ()}[tier.role]
    for key in keys:
        if getattr(fab, key) is not None:
            return fp.path + (key,)
    return _switch_path(plan, fp, tier)


def _leaf_fixes(fp: FabricPlan, fab, t: SwitchTier, cap: int) -> list[str]:
    """What frees leaf ports, with the arithmetic done: ``su_nodes`` lowered by the downlinks over the leaf's
    capacity (never suggested at or above its value), room for the extra endpoints, fewer uplinks, a higher
    ratio, a bigger switch."""
    over = max(0, t.down_links - cap)
    fixes = []
    if fab.su_nodes and over:
        per_node = 1 if fp.rail_optimized else max(1, fp.rails) / max(1, fp.leaves_per_su)
        fit = fab.su_nodes - math.ceil(over / per_node)
        if 1 <= fit < fab.su_nodes:
            fixes.append(f"lower su_nodes to {fit:,}")
    if fab.extra_endpoints and over:
        fixes.append(f"leave the {fab.extra_endpoints:,} extra endpoint(s) room: fewer nodes in the last scalable unit "
                     f"(the DGX SuperPOD RA gives one node's ports to UFM), or tiers: 3 with more scalable units")
    if fab.leaf_uplinks:
        fixes.append("lower leaf_uplinks")
    return fixes + ["raise oversubscription", "use a switch with more ports"]


@rule("FABRIC001", "fabric", Severity.ERROR, "switch port budget exceeded")
def port_budget(plan: ClusterPlan) -> Iterator[Hit]:
    """The busiest switch of every tier must have the native ports its links take. A downlink takes
    1/breakout of a native port (one 800G port carries two 400G links through a splitter), an uplink a
    whole port; leaves of a declared ``su_nodes`` reserve downlinks for the full scalable unit, as the
    DGX SuperPOD reference architectures cable a partly filled SU in full. Switches with dedicated
    uplink ports (SN2201: 4 x 100G) must also have enough of those. A plan that needs more ports than a
    switch has cannot be cabled: the extra nodes or uplinks have nowhere to go."""
    for fp in plan.fabrics:
        fab = _intent(plan, fp)
        for t in fp.tiers:
            if t.ports_needed > t.ports_available + 1e-9:
                down = f"{t.down_links:,} downlinks"
                if t.down_breakout > 1:
                    down += f" ({t.down_ports:,} ports at {t.down_breakout} × {_g(t.down_gbps)})"
                up = f" + {t.up_links:,} uplinks" if t.up_links and not t.up_dedicated else ""
                msg = (f"{t.role} {t.busiest} ({t.model}) needs {down}{up} = {math.ceil(t.ports_needed):,} "
                       f"ports of {t.ports_available:,}")
                if t.role == "leaf":
                    cap = fp.leaf_down_capacity
                    fixes = _leaf_fixes(fp, fab, t, cap)
                    hint = (f"at {fp.oversubscription_declared:g}:1 a {t.model} leaf takes at most {cap:,} "
                            f"downlinks: {', '.join(fixes[:-1])} or {fixes[-1]}")
                else:
                    hint = ("raise spine_count (or drop it and let the plan size the tier)" if fab.spine_count
                            else f"use a {t.role} switch with more ports")
                yield Hit(_budget_path(plan, fp, t), msg, hint)
            if t.up_dedicated and t.switch.uplinks is not None and t.up_links > t.switch.uplinks.ports:
                path = fp.path + ("leaf_uplinks",) if fab.leaf_uplinks else _switch_path(plan, fp, t)
                yield Hit(path,
                          f"{t.role} {t.busiest} ({t.model}) needs {t.up_links:,} uplinks of its "
                          f"{t.switch.uplinks.ports} dedicated {_g(t.switch.uplinks.speed_gbps)} uplink ports",
                          f"set leaf_uplinks to {t.switch.uplinks.ports} or fewer, or raise oversubscription")


@rule("FABRIC002", "fabric", Severity.ERROR, "fabric more oversubscribed than declared")
def oversubscription(plan: ClusterPlan) -> Iterator[Hit]:
    """The down:up bandwidth ratio the plan achieves at its worst switch tier must not exceed the
    declared ``oversubscription`` (1 % tolerance). Collective operations of a training job cross the
    spines at line rate, so a leaf with half the uplinks it should have halves every job's all-reduce
    bandwidth across scalable units; the declared ratio is what the cluster is sized and sold on. A
    ``leaf_uplinks`` or a three-tier ``spine_count`` set too low is the usual cause."""
    for fp in plan.fabrics:
        declared, achieved = fp.oversubscription_declared, fp.oversubscription_achieved
        if achieved <= declared * 1.01:
            continue
        t = fp.tier(fp.oversubscription_where)
        if t is None:
            continue
        msg = (f"fabric {fp.name} is declared {declared:g}:1 but its {t.role} tier runs {achieved:.2f}:1: "
               f"{t.busiest} has {t.down_links:,} × {_g(t.down_gbps)} = {t.down_capacity_gbps:,.0f} Gb/s down "
               f"vs {t.up_links:,} × {_g(t.up_gbps)} = {t.up_capacity_gbps:,.0f} Gb/s up")
        if t.role == "leaf":
            need = uplinks_for(t.down_links, t.down_gbps, declared, t.up_gbps)
            hint = f"give each leaf {need:,} uplinks (leaf_uplinks), or declare oversubscription: {achieved:.3g}"
        else:
            hint = "raise spine_count so that every spine keeps as many ports up as down"
        yield Hit(fp.path + ("oversubscription",), msg, hint)


@rule("FABRIC003", "fabric", Severity.ERROR, "NIC speed does not match the switch ports")
def nic_speed(plan: ClusterPlan) -> Iterator[Hit]:
    """A node link runs at the NIC's speed (or the fabric's ``link_gbps``), which the leaf must offer as a
    native port speed or a listed breakout mode. A NIC faster than every port of the switch trains down
    to the port speed: an 800G ConnectX-8 on a 400G QM9700 loses half its bandwidth, and since the rail
    bandwidth is what the cluster was bought for this is an error, not a warning. A speed the switch can
    neither run natively nor reach by a listed breakout (a 25G NIC on an NDR switch) does not link at
    all. ``link_gbps`` above the NIC's speed is impossible. Leaf uplinks must likewise land on spine
    ports of their speed (an SN2201's 100G uplinks on an 800G-only spine)."""
    for fp in plan.fabrics:
        fab = _intent(plan, fp)
        leaf = fp.tier("leaf")
        if leaf is None:
            continue
        sw = leaf.switch
        speeds = sorted({m.speed_gbps for m in sw.port_modes}, reverse=True)
        native = sw.port_modes[0].speed_gbps
        offered = "/".join(_g(s) for s in speeds)
        path = fp.path + ("link_gbps",) if fab.link_gbps else _switch_path(plan, fp, leaf)
        seen: set[tuple[str, str]] = set()
        for gi, role in _pairs(fp):
            g = plan.groups[gi]
            for nic in g.type.nics_of(role):
                if (nic.model, g.type.name) in seen:
                    continue
                seen.add((nic.model, g.type.name))
                want = fab.link_gbps or nic.speed_gbps
                who = f"{nic.model} NICs ({role}) of group {g.name}"
                if fab.link_gbps and fab.link_gbps > nic.speed_gbps + 1e-9:
                    yield Hit(fp.path + ("link_gbps",),
                              f"fabric {fp.name} sets link_gbps {fab.link_gbps:g} but the {who} run at most "
                              f"{_g(nic.speed_gbps)}", f"set link_gbps to {nic.speed_gbps:g} or less")
                    continue
                if any(math.isclose(s, want) for s in speeds):
                    continue
                if want > native:
                    yield Hit(path,
                              f"{who} run at {_g(want)} but {leaf.model} ports run at most {_g(native)}: each link "
                              f"trains at {_g(native)} and the node loses {1 - native / want:.0%} of its fabric "
                              f"bandwidth ({nic.count} × {_g(want)} → {nic.count} × {_g(native)})",
                              f"use a switch with {_g(want)} ports (e.g. q3400-ra for XDR), or NICs of {_g(native)}")
                else:
                    yield Hit(path,
                              f"{who} run at {_g(want)}, which {leaf.model} offers neither natively nor by a "
                              f"breakout mode (it runs {offered})",
                              f"use a switch with {_g(want)} ports, or set link_gbps to a speed both support")
        below = leaf
        for upper in fp.tiers[1:]:
            if below.up_links and not any(math.isclose(m.speed_gbps, below.up_gbps) for m in upper.switch.port_modes):
                modes = "/".join(_g(m.speed_gbps) for m in upper.switch.port_modes)
                yield Hit(_switch_path(plan, fp, upper),
                          f"{below.role} uplinks of fabric {fp.name} run at {_g(below.up_gbps)} ({below.model}) but "
                          f"{upper.role} switch {upper.model} ports run {modes}",
                          f"use a {upper.role} switch with {_g(below.up_gbps)} ports")
            below = upper


@rule("FABRIC004", "fabric", Severity.ERROR, "fat tree too large for its tier count")
def fat_tree_size(plan: ClusterPlan) -> Iterator[Hit]:
    """A fat tree of radix-k switches reaches a bounded number of endpoints per tier count: non-blocking,
    k²/2 with two tiers (k leaves of k/2 downlinks, every spine port down) and k³/4 with three (k pods of
    k/2 leaves under k/2 spines each, every core port to a different pod); an oversubscribed leaf has
    more downlinks and reaches proportionally more. Past the limit the builder still plans spines, but
    leaves no longer reach every spine (or pods every core), so traffic between them has no path."""
    for fp in plan.fabrics:
        if fp.tiers_declared < 2 or not fp.max_endpoints or fp.endpoints <= fp.max_endpoints:
            continue
        top = fp.tiers[-1]
        k = top.native_ports * top.down_breakout
        hint = ("use tiers: 3" if fp.tiers_declared == 2 else
                "split the cluster into several fabrics, or use switches of a higher radix")
        yield Hit(fp.path + ("tiers",),
                  f"a {fp.tiers_declared}-tier fat tree of {k}-port {top.model} switches reaches "
                  f"{fp.max_endpoints:,} endpoints at {fp.oversubscription_declared:g}:1; fabric {fp.name} has "
                  f"{fp.endpoints:,}", hint)


@rule("FABRIC005", "fabric", Severity.ERROR, "rail-optimized fabric with uneven rails")
def rails(plan: ClusterPlan) -> Iterator[Hit]:
    """In a rail-optimized fabric NIC k of every node goes to rail leaf k of its scalable unit, so every
    attached node must have the same number of NIC ports of the attached roles: that number is the rail
    count and the number of leaves per SU. A node with fewer ports leaves rails without a path to it
    (NCCL's rail-aligned rings break), and one with more has ports that no leaf takes. With one NIC per
    node there is a single rail and rail optimization changes nothing: a warning."""
    for fp in plan.fabrics:
        if not fp.rail_optimized:
            continue
        ports: dict[int, int] = {}
        roles: dict[int, list[str]] = {}
        for gi, role in _pairs(fp):
            n = plan.groups[gi].type.nic_count(role)
            if n:
                ports[gi] = ports.get(gi, 0) + n
                roles.setdefault(gi, []).append(role)
        if not ports:
            continue
        if len(set(ports.values())) > 1:
            for gi, n in ports.items():
                if n == fp.rails:
                    continue
                g = plan.groups[gi]
                yield Hit(_attach_path(plan, fp, gi, roles[gi][0]),
                          f"rail-optimized fabric {fp.name} has {fp.rails} rails ({fp.leaves_per_su} leaves per SU) "
                          f"but group {g.name} ({g.type.name}) has {n} {'+'.join(roles[gi])} NIC port(s) per node; "
                          f"every node needs one port per rail",
                          "attach groups with the same NIC count, or give them separate fabrics")
        elif fp.rails == 1:
            yield Hit(fp.path + ("rail_optimized",),
                      f"rail-optimized fabric {fp.name}: its nodes have 1 NIC port each, so there is one rail and "
                      f"rail optimization changes nothing", "set rail_optimized: false",
                      Severity.WARNING)


@rule("FABRIC006", "fabric", Severity.WARNING, "fewer compute NICs than GPUs")
def gpu_nic_ratio(plan: ClusterPlan) -> Iterator[Hit]:
    """GPUDirect RDMA moves data between a GPU and the NIC under the same PCIe switch without touching
    host memory; DGX and HGX boards pair each GPU with its own compute NIC for that reason. With fewer
    compute NIC ports than GPUs, GPUs share a NIC (or cross the CPU to reach one) and each gets a
    fraction of the rail bandwidth: a warning. More ports than GPUs is reported as info (the extra ports
    add bandwidth only if NCCL is told to use them). Cloud instance types are exempt: their provider
    fixes the network."""
    seen: set[str] = set()
    for g in plan.groups:
        nt = g.type
        if nt.name in seen or nt.server is None or not nt.gpus:
            continue
        seen.add(nt.name)
        n = nt.nic_count("compute")
        if n < nt.gpus:
            share = f"{nt.gpus / n:.3g} GPUs share each NIC" if n else "its GPUs have no RDMA path to other nodes"
            yield Hit(nt.path + ("server",),
                      f"node type {nt.name} ({nt.server_name}) has {nt.gpus} GPUs but {n} compute NIC port(s): {share}",
                      "use a server with one compute NIC per GPU (8 × 400G for 8 GPUs)")
        elif n > nt.gpus:
            yield Hit(nt.path + ("server",),
                      f"node type {nt.name} ({nt.server_name}) has {n} compute NIC ports for {nt.gpus} GPUs "
                      f"({n / nt.gpus:.3g} per GPU)", "list all of them in NCCL_IB_HCA to use the extra bandwidth",
                      Severity.INFO)


@rule("FABRIC007", "fabric", Severity.ERROR, "GPU nodes not on a compute fabric")
def gpu_nodes_on_compute_fabric(plan: ClusterPlan) -> Iterator[Hit]:
    """Every bare-metal group with GPUs must be attached with ``nic_role: compute`` to an InfiniBand or
    RoCE fabric: multi-node training moves its gradients over RDMA, and a GPU node that is only on
    Ethernet management networks cannot take part in a multi-node job at useful speed. Cloud groups
    are exempt (the provider's network is their compute fabric), and so is a cluster with a single GPU
    node, which has nothing to talk to."""
    on_rdma: set[int] = set()
    plain: dict[int, str] = {}
    for fp in plan.fabrics:
        for gi, role in fp.attached:
            if role == "compute":
                if fp.kind in RDMA_KINDS:
                    on_rdma.add(gi)
                else:
                    plain.setdefault(gi, fp.name)
    bare = [(k, g) for k, g in enumerate(plan.groups) if g.type.server is not None and g.type.gpus]
    if sum(g.count for _, g in bare) <= 1:
        return
    for k, g in bare:
        if k in on_rdma:
            continue
        why = (f"; fabric {plain[k]} carries its compute NICs but is plain ethernet (no RDMA)" if k in plain else "")
        yield Hit(g.path + ("name",),
                  f"node group {g.name} ({g.count:,} × {g.type.server_name}, {g.gpus:,} GPUs) is on no infiniband "
                  f"or roce fabric with nic_role compute{why}",
                  f"add {{group: {g.name}, nic_role: compute}} to the attach list of an infiniband or roce fabric")


@rule("FABRIC008", "fabric", Severity.ERROR, "single-tier fabric with several leaves")
def single_tier(plan: ClusterPlan) -> Iterator[Hit]:
    """``tiers: 1`` means one switch layer and nothing above it. When the endpoints need more than one
    leaf (or a rail-optimized fabric has one leaf per rail), the leaves are not connected to each other
    and nodes on different leaves cannot talk. A rail-only design that relies on NVLink to cross rails
    is not modeled: suppress this rule if that is the intent."""
    for fp in plan.fabrics:
        if not fp.disconnected_leaves:
            continue
        leaf = fp.tier("leaf")
        why = ("one per rail of a rail-optimized fabric" if fp.rail_optimized else
               f"{fp.endpoints:,} endpoints at {fp.max_endpoints:,} per {leaf.model}")
        yield Hit(fp.path + ("tiers",),
                  f"fabric {fp.name} has tiers: 1 but {leaf.count} leaves ({why}): the leaves have no path to "
                  f"each other", "use tiers: 2 (spines join the leaves)")


@rule("FABRIC009", "fabric", Severity.ERROR, "NIC or switch does not speak the fabric's protocol")
def protocol(plan: ClusterPlan) -> Iterator[Hit]:
    """An InfiniBand fabric needs NICs and switches that speak InfiniBand; RoCE and Ethernet fabrics need
    Ethernet on both ends. VPI NICs (ConnectX-7, BlueField-3) do both, but an Ethernet-only NIC cannot
    join an InfiniBand subnet, an InfiniBand switch (QM9700) carries no Ethernet, and a cloud instance's
    EFA or TCPX network is neither."""
    for fp in plan.fabrics:
        need = PROTOCOL[fp.kind]
        seen: set[tuple[int, str]] = set()
        for gi, role in _pairs(fp):
            g = plan.groups[gi]
            for nic in g.type.nics_of(role):
                if need in nic.protocols or (gi, nic.model) in seen:
                    continue
                seen.add((gi, nic.model))
                yield Hit(_attach_path(plan, fp, gi, role),
                          f"fabric {fp.name} is {fp.kind} but the {nic.model} NICs ({role}) of group {g.name} speak "
                          f"{', '.join(nic.protocols)}, not {need}",
                          f"attach NICs that speak {need}, or change the fabric's kind")
        models: set[str] = set()
        for t in fp.tiers:
            if need in t.switch.protocols or t.model in models:
                continue
            models.add(t.model)
            yield Hit(_switch_path(plan, fp, t),
                      f"fabric {fp.name} is {fp.kind} but its {t.role} switch {t.model} speaks "
                      f"{', '.join(t.switch.protocols)}, not {need}",
                      f"use {'an InfiniBand' if need == 'infiniband' else 'an Ethernet'} switch")


@rule("FABRIC010", "fabric", Severity.ERROR, "group attached by a NIC role it has no NIC of")
def attached_without_nics(plan: ClusterPlan) -> Iterator[Hit]:
    """An attach entry cables the NICs of one role of a group to the fabric; if the group's servers have
    no NIC of that role, nothing is cabled and the group is silently missing from the fabric (usually a
    role mix-up: compute vs storage vs inband). ``group: all`` skips groups without the role, and is
    reported only when no group has it."""
    for fp in plan.fabrics:
        for ai, att in enumerate(_intent(plan, fp).attach):
            path = fp.path + ("attach", ai, "nic_role")
            if att.group == "all":
                if plan.groups and not any(g.type.nic_count(att.nic_role) for g in plan.groups):
                    yield Hit(path, f"fabric {fp.name} attaches {att.nic_role} NICs of all groups, but no "
                                    f"node type has a {att.nic_role} NIC",
                              "attach a role the servers have (see `clusterctl catalog servers`)")
                continue
            g = plan.group(att.group)
            if g is None or g.type.nic_count(att.nic_role):
                continue
            has = sorted({n.role for n in g.type.nics})
            kind = g.type.server_name or g.type.instance_name
            yield Hit(path,
                      f"group {g.name} is attached to fabric {fp.name} with nic_role {att.nic_role}, but {kind} "
                      f"has no {att.nic_role} NIC (it has: {', '.join(has) or 'none'})",
                      f"attach it with one of its roles ({', '.join(has)})" if has else "remove the attach entry")


@rule("FABRIC011", "fabric", Severity.WARNING, "NICs attached to two fabrics")
def double_attached(plan: ClusterPlan) -> Iterator[Hit]:
    """A NIC port is cabled to one switch. When the same role of a group is attached to two fabrics, the
    plan counts its ports twice: both fabrics get leaves and uplinks for them, addresses are drawn
    twice, and one of the two fabrics is never cabled as planned."""
    first: dict[tuple[int, str], FabricPlan] = {}
    for fp in plan.fabrics:
        for gi, role in _pairs(fp):
            g = plan.groups[gi]
            if not g.type.nic_count(role):
                continue
            other = first.setdefault((gi, role), fp)
            if other is not fp:
                n = g.type.nic_count(role)
                yield Hit(_attach_path(plan, fp, gi, role),
                          f"the {role} NICs of group {g.name} ({g.count:,} nodes × {n} port{'s' if n != 1 else ''}) "
                          f"are attached to fabrics {other.name} and {fp.name}",
                          "attach each NIC role of a group to one fabric")


@rule("FABRIC012", "fabric", Severity.ERROR, "RoCE QoS that cannot be lossless")
def roce_qos(plan: ClusterPlan) -> Iterator[Hit]:
    """A RoCE fabric's QoS is declared once (``traffic_class``, ``pfc_priority``, ``ecn``, ``cnp_dscp``) and
    becomes NCCL_IB_TC, the hosts' DSCP trust / PFC / ECN and the switch files. Checked: the ECN bits of the
    traffic class (``traffic_class & 3``) are not 3 (CE, "congestion experienced", on every packet: DCQCN
    would throttle all traffic); with ``ecn`` on they are not 0 (a Not-ECT packet is never marked, so
    congestion control never reacts; NVIDIA's 106 is DSCP 26 with ECT(0)); the CNP DSCP differs from the
    data DSCP, and the CNP priority (DSCP >> 3 in the default map: 48 -> 6) is not the lossless priority
    (CNPs must not wait behind the paused data class; NVIDIA puts them on priority 6, strict)."""
    for fp in plan.fabrics:
        spec = _intent(plan, fp)
        if spec.kind != "roce":
            continue
        tc, dscp, ecn_bits = spec.traffic_class, spec.traffic_class >> 2, spec.traffic_class & 3
        if ecn_bits == 3:
            yield Hit(fp.path + ("traffic_class",),
                      f"fabric {fp.name}: traffic_class {tc} sets the ECN bits to 3 (CE, congestion experienced) on "
                      f"every RDMA packet", f"use DSCP x 4 + 2 (ECT(0)): {dscp * 4 + 2}")
        elif ecn_bits == 0 and spec.ecn:
            yield Hit(fp.path + ("traffic_class",),
                      f"fabric {fp.name}: traffic_class {tc} has ECN bits 0 (not ECN-capable) while ecn is on: the "
                      f"switches never mark RDMA packets and congestion control never reacts",
                      f"use DSCP x 4 + 2 (ECT(0)): {dscp * 4 + 2}, or set ecn: false", Severity.WARNING)
        if spec.cnp_dscp == dscp:
            yield Hit(fp.path + ("cnp_dscp",),
                      f"fabric {fp.name}: cnp_dscp {spec.cnp_dscp} is the RDMA data DSCP (traffic_class {tc} >> 2)",
                      "give CNPs their own DSCP (NVIDIA: 48)")
        elif spec.cnp_dscp >> 3 == spec.pfc_priority:
            yield Hit(fp.path + ("cnp_dscp",),
                      f"fabric {fp.name}: cnp_dscp {spec.cnp_dscp} maps to priority {spec.cnp_dscp >> 3}, the "
                      f"lossless priority (pfc_priority {spec.pfc_priority}): CNPs wait behind paused data",
                      "give CNPs a DSCP of another priority (NVIDIA: 48, priority 6)", Severity.WARNING)


@rule("FABRIC013", "fabric", Severity.ERROR, "node type on RoCE fabrics with different QoS")
def roce_qos_per_node_type(plan: ClusterPlan) -> Iterator[Hit]:
    """NCCL reads one NCCL_IB_TC per node (/etc/nccl.conf is rendered per node type). When the compute NICs
    of one node type's groups sit on RoCE fabrics with different ``traffic_class`` or ``pfc_priority``, the
    file can carry only one: the other fabric's traffic then runs in a class its switches do not keep
    lossless, silently."""
    seen: dict[str, tuple[FabricPlan, tuple[int, int]]] = {}
    for fp in plan.fabrics:
        spec = _intent(plan, fp)
        if spec.kind != "roce":
            continue
        for gi, role in _pairs(fp):
            if role != "compute":
                continue
            nt = plan.groups[gi].type.name
            mine = (spec.traffic_class, spec.pfc_priority)
            first, qos = seen.setdefault(nt, (fp, mine))
            if qos != mine:
                yield Hit(fp.path + ("traffic_class",),
                          f"node type {nt} has compute NICs on RoCE fabrics {first.name} (traffic_class {qos[0]}, "
                          f"pfc_priority {qos[1]}) and {fp.name} (traffic_class {mine[0]}, pfc_priority {mine[1]}); "
                          f"its nccl.conf holds one NCCL_IB_TC",
                          "give both fabrics the same traffic_class and pfc_priority")
                break


UNCABLED_ERROR = ("storage",)
"""NIC roles of a GPU group that must be on their fabric (compute: FABRIC007 reports those)"""
UNCABLED_WARN = ("inband", "bmc", "mgmt")
"""management roles: a node left off them is unreachable for provisioning or power control, not for training"""


@rule("FABRIC014", "fabric", Severity.ERROR, "NICs left off the fabric of their role")
def nic_role_uncabled(plan: ClusterPlan) -> Iterator[Hit]:
    """A bare-metal group has NICs of a role (storage, inband, bmc, mgmt) that no fabric attaches, while a
    fabric carries that role for other groups: the network exists and this group was left out of its
    ``attach`` list. A GPU group's storage NICs are an error (its nodes read data and write checkpoints over
    them, and the storage fabric is planned without their ports); in-band, BMC and management NICs are a
    warning on any group (the nodes cannot be provisioned, reached by Slurm or power-controlled over a network
    that was planned without them). Compute NICs of GPU groups are FABRIC007's. Not reported: a role no
    fabric carries at all (small labs model only the compute and BMC fabrics; the in-band network is then
    taken as flat, and STORAGE008 reports a storage tier that becomes unreachable), the storage or compute
    NICs of groups without GPUs (head and login nodes often reach storage over in-band), and cloud groups
    (the provider's network)."""
    carriers: dict[str, list[FabricPlan]] = {}
    for fp in plan.fabrics:
        for gi, role in _pairs(fp):
            if plan.groups[gi].type.nic_count(role) and fp not in carriers.setdefault(role, []):
                carriers[role].append(fp)
    for g in plan.groups:
        if g.type.instance is not None or not g.count:
            continue
        roles = (UNCABLED_ERROR if g.type.gpus else ()) + UNCABLED_WARN
        for role in roles:
            n = g.type.nic_count(role)
            if not n or role not in carriers or plan.fabrics_on(role, g):
                continue
            fp = carriers[role][0]
            others = sorted({plan.groups[gi].name for gi, r in fp.attached if r == role})
            severity = None if role in UNCABLED_ERROR else Severity.WARNING
            yield Hit(fp.path + ("attach",),
                      f"the {role} NICs of group {g.name} ({g.count:,} nodes × {n} port{'s' if n != 1 else ''}, "
                      f"{g.type.server_name}) are attached to no fabric; fabric {fp.name} carries the {role} NICs of "
                      f"{', '.join(others)}",
                      f"add {{group: {g.name}, nic_role: {role}}} to the attach list of fabric {fp.name}", severity)


@rule("FABRIC015", "fabric", Severity.ERROR, "fabric attached to nothing")
def fabric_unattached(plan: ClusterPlan) -> Iterator[Hit]:
    """Every attach entry of the fabric resolves to no NIC (each names a group without NICs of that role, or
    ``group: all`` with a role no node type has; FABRIC010 points at each entry): the fabric connects no node,
    yet its switches are planned, racked and counted in power and cost. Usually a role mix-up (storage vs
    inband) or a group renamed; a fabric that only serves appliances still needs the nodes that use them."""
    for fp in plan.fabrics:
        if any(plan.groups[gi].type.nic_count(role) for gi, role in fp.attached):
            continue
        entries = ", ".join(f"{a.group}/{a.nic_role}" for a in _intent(plan, fp).attach)
        yield Hit(fp.path + ("attach",),
                  f"fabric {fp.name} ({fp.kind}) connects no node: its attach entries ({entries}) name no NIC; "
                  + (f"{fp.switch_count:,} switch{'es' if fp.switch_count != 1 else ''} planned for nothing"
                     if fp.switch_count else "no switch is planned for it"),
                  "attach the NIC role the groups have (see `clusterctl catalog servers`), or remove the fabric")
