"""The generic NCCL tuning of a bare-metal node type from its compute fabric: InfiniBand and RoCE (compute
HCAs only, rail policy, QPs per connection on multi-tier fabrics, a longer IB timeout on very large fabrics;
RoCE adds the traffic class and GID handling) or TCP sockets, and the bootstrap socket interface.

Values and their sources: docs/nccl.md. The compute RDMA device and in-band interface names come from
:mod:`clusterctl.plan.interfaces` (the catalog's vendor tables or the blueprint's ``interfaces``); a
per-node-type override replaces them (:func:`~clusterctl.targets.nccl.settings.overrides`).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan, FabricPlan, NodeTypePlan
from clusterctl.plan.interfaces import compute_hcas, netdevs, role_ports
from clusterctl.targets.nccl.settings import ANY_IFNAME, Setting, nccl_version, overrides, version_text
from clusterctl.targets.roce import fabric_qos

# --- documented defaults (docs/nccl.md explains each) ------------------------------------------------

INBAND_IFNAME = "bond0"
"""bootstrap interface on bare metal with several in-band ports: the bond the host_network role builds from
them (DGX BasePOD deployment guide: the in-band ports bonded)"""
QPS_IB_ADAPTIVE = 2
"""queue pairs per connection on multi-tier InfiniBand with adaptive routing (the switches spread packets)"""
QPS_ECMP = 4
"""queue pairs per connection where only per-flow hashing (ECMP) spreads traffic: RoCE, IB without AR"""
LARGE_FABRIC_TIERS = 3
LARGE_FABRIC_ENDPOINTS = 2048
"""more ports than a two-tier non-blocking fat tree of 64-port NDR switches connects (64 x 64 / 2)"""
LARGE_FABRIC_IB_TIMEOUT = 22
"""4.096 us x 2^22 = 17.2 s per try, ~2 min with 7 retries (NCCL's default 20: 4.3 s, ~30 s)"""
GID_INDEX_FALLBACK = 3
"""the RoCEv2 IPv4 GID on a port with one IPv4 address, for NCCL < 2.21 (no GID auto-selection)"""


@dataclass(frozen=True)
class ComputeFabric:
    """The compute fabric(s) of a node type, merged conservatively when its groups sit on several."""

    fabrics: tuple[FabricPlan, ...]
    kind: str
    rail_optimized: bool
    tiers: int
    endpoints: int
    adaptive_routing: bool
    sharp: bool
    traffic_classes: tuple[int, ...]
    pfc_priority: int | None


def compute_fabric(plan: ClusterPlan, nt: NodeTypePlan) -> ComputeFabric | None:
    of_type = [g for g in plan.groups if g.type.name == nt.name]
    fabrics = plan.compute_fabrics(*of_type) if of_type else ()
    if not fabrics or nt.nic_count("compute") == 0:
        return None
    rdma = tuple(f for f in fabrics if f.kind in ("infiniband", "roce"))
    fabrics = rdma + tuple(f for f in fabrics if f not in rdma)  # RDMA fabrics decide, listed first
    used = rdma or fabrics
    specs = [plan.fabric_spec(f) for f in used]
    return ComputeFabric(
        fabrics=fabrics,
        kind=used[0].kind,
        rail_optimized=all(f.rail_optimized for f in used),
        tiers=max(len(f.tiers) or f.tiers_declared for f in used),
        endpoints=max(f.endpoints for f in used),
        adaptive_routing=all(s.adaptive_routing for s in specs if s.kind == "infiniband"),
        sharp=any(s.sharp for s in specs if s.kind == "infiniband"),
        traffic_classes=tuple(dict.fromkeys(s.traffic_class for s in specs if s.kind == "roce")),
        pfc_priority=next((s.pfc_priority for s in specs if s.kind == "roce"), None),
    )


def fabric_line(comp: ComputeFabric) -> str:
    f = comp.fabrics[0]
    rail = "rail-optimized" if comp.rail_optimized else "not rail-optimized"
    more = (f" (+{len(comp.fabrics) - 1} more; the most conservative setting of each is used)"
            if len(comp.fabrics) > 1 else "")
    return (f"Compute fabric: '{f.name}' ({f.kind}, {comp.tiers} tier{'s' if comp.tiers != 1 else ''}, {rail}, "
            f"{comp.endpoints:,} endpoints){more}.")


# --- InfiniBand and RoCE ------------------------------------------------------------------------------

def rdma(plan: ClusterPlan, nt: NodeTypePlan, comp: ComputeFabric) -> list[Setting]:
    roce = comp.kind == "roce"
    out: list[Setting] = []
    if len({f.kind for f in comp.fabrics}) > 1:
        out.append(Setting(((f"WARNING: groups of this node type sit on compute fabrics of different kinds "
                            f"({', '.join(sorted({f.kind for f in comp.fabrics}))}); settings follow {comp.kind}."),)))
    out.append(hca_setting(plan, nt, "NICs" if roce else "HCAs"))
    out.append(socket_setting(plan, nt))
    ports = nt.nic_count("compute")
    if ports > 1 and comp.rail_optimized:
        out.append(Setting((
            "Rail-optimized fabric: each compute NIC has its own rail leaf; rails meet only at the spines.",
            "0 keeps a ring/tree on the same NIC index on every node, so its traffic stays on one rail",
            "(NCCL's default 2 only prefers that)."), "NCCL_CROSS_NIC", "0"))
    elif ports > 1:
        out.append(Setting((
            "Not rail-optimized: all compute NICs of a node reach the same leaves, so using different NICs on",
            "different nodes avoids no flow collision; 1 lets NCCL pair NICs freely."), "NCCL_CROSS_NIC", "1"))
    if comp.tiers >= 2:
        if roce or not comp.adaptive_routing:
            qps, how = QPS_ECMP, ("only per-flow hashing (ECMP) spreads traffic over the uplinks, and every QP is "
                                  "its own flow" + (" (own RoCEv2 UDP source port)." if roce else "."))
        else:
            qps, how = QPS_IB_ADAPTIVE, "adaptive routing already spreads packets, so a few QPs suffice."
        out.append(Setting((
            f"{comp.tiers}-tier fabric: several queue pairs per connection give the uplinks 'routing entropy'",
            f"(NCCL docs: for multi-level fabrics); {how}"), "NCCL_IB_QPS_PER_CONNECTION", str(qps)))
    else:
        out.append(Setting((
            "Single-tier fabric: no path choice between leaves, so NCCL_IB_QPS_PER_CONNECTION stays at 1.",)))
    if comp.tiers >= LARGE_FABRIC_TIERS or comp.endpoints > LARGE_FABRIC_ENDPOINTS:
        out.append(Setting((
            f"Very large fabric ({comp.tiers} tiers, {comp.endpoints:,} endpoints): rerouting after a link or switch",
            (f"failure takes longer. {LARGE_FABRIC_IB_TIMEOUT} means 4.096 us x 2^{LARGE_FABRIC_IB_TIMEOUT}, "
             "17.2 s per try, ~2 min with 7 retries"),
            "(NCCL's default 20: ~30 s), before NCCL fails with ibv_poll_cq error 12."),
            "NCCL_IB_TIMEOUT", str(LARGE_FABRIC_IB_TIMEOUT)))
    if roce:
        out += roce_settings(plan, comp)
    else:
        ar = ("has adaptive routing on" if comp.adaptive_routing
              else "has adaptive routing off, which NCCL's AR-capable transfers do not mind")
        out.append(Setting((
            f"NCCL_IB_ADAPTIVE_ROUTING left at NCCL's default (1 on InfiniBand); the fabric {ar}.",)))
        if comp.sharp:
            out.append(Setting((
                "The fabric has SHARP: NCCL uses it through the CollNet plugin (nccl-rdma-sharp-plugins / HPC-X)",
                "when NCCL_COLLNET_ENABLE is 1. Not set here: enable it per job once the SHARP aggregation manager",
                "works (NCCL's default 0).")))
    return out


def roce_settings(plan: ClusterPlan, comp: ComputeFabric) -> list[Setting]:
    out: list[Setting] = []
    qos = fabric_qos(plan, comp.fabrics[0])
    assert qos is not None  # comp.kind is roce: its first fabric is a RoCE fabric
    tc = qos.traffic_class
    why = [f"RoCE traffic class: the fabric's traffic_class, the IP ToS byte: DSCP {qos.dscp} (TC >> 2), ECN bits "
           f"{qos.ecn_bits}. It must match the switches' lossless class (PFC priority {qos.pfc_priority}); "
           "a mismatch is",
           "silent: RDMA then runs lossy. The same fabric QoS sets the hosts (roce_network role: DSCP trust, PFC, ECN)",
           f"and the switch files (switches/{qos.fabric}-*.nvue.yaml): docs/roce.md."]
    if len(comp.traffic_classes) > 1:
        why.append(f"WARNING: this node type's compute fabrics use different traffic classes "
                   f"({', '.join(map(str, comp.traffic_classes))}); the first is used.")
    out.append(Setting(tuple(why), "NCCL_IB_TC", str(tc)))
    version = nccl_version(plan)
    v6 = any(p.role == "compute" and p.version == 6 for p in plan.addresses)
    if version is not None and version >= (2, 21):
        out.append(Setting((
            f"NCCL_IB_GID_INDEX left unset: NCCL {version_text(version)} (2.21 or later) selects the RoCEv2 GID itself",
            "(NCCL_IB_ROCE_VERSION_NUM default 2, NCCL_IB_ADDR_FAMILY default AF_INET).")))
        if v6:
            out.append(Setting((
                "The compute address pool is IPv6: GID auto-selection must look for IPv6 GIDs.",),
                "NCCL_IB_ADDR_FAMILY", "AF_INET6"))
    else:
        known = f"NCCL {version_text(version)} predates" if version else "software.nccl is not set, so NCCL may predate"
        v6_note = (" The compute pool is IPv6: find the IPv6 RoCEv2 index with show_gids instead."
                   if v6 else "")
        out.append(Setting((
            f"{known} 2.21 (RoCE GID auto-selection); before it the default index 0 is the RoCEv1 link-local GID.",
            "3 is usually the RoCEv2 IPv4 GID (check with show_gids); drop this line on NCCL 2.21 or later." + v6_note),
            "NCCL_IB_GID_INDEX", str(GID_INDEX_FALLBACK)))
    out.append(Setting((
        "NCCL_IB_ROCE_VERSION_NUM left at its default 2 (RoCEv2); NCCL_IB_ADAPTIVE_ROUTING at its RoCE default 0.",)))
    return out


def hca_setting(plan: ClusterPlan, nt: NodeTypePlan, what: str) -> Setting:
    hcas, how = compute_hcas(plan, nt)
    if hcas is None:
        return Setting(("NCCL_IB_HCA not set: neither the catalog nor the blueprint names the compute RDMA devices",
                        f"(rule NET001); declare node_types.{nt.name}.interfaces.compute as ibdev2netdev shows them."))
    value = hcas if isinstance(hcas, str) else "=" + ",".join(h if ":" in h else f"{h}:1" for h in hcas)
    return Setting((
        (f"Compute {what} only, exact names (the leading equals sign: plain mlx5_1 would also match "
         "mlx5_10..19), so NCCL never"),
        "puts collectives on the storage or in-band ports.", *how), "NCCL_IB_HCA", value)


def socket_setting(plan: ClusterPlan, nt: NodeTypePlan) -> Setting:
    override = overrides(plan, nt).get("socket_ifname")
    if override:
        return Setting(("Bootstrap and out-of-band TCP: interface from the node type's override.",),
                       "NCCL_SOCKET_IFNAME", str(override))
    ports = role_ports(plan, nt, "inband")
    names = netdevs(ports)
    if len(ports) > 1:
        how = (f"the host_network role bonds {', '.join(names)} ({ports[0].source})" if names else
               "the DGX BasePOD convention; the ports' names are not known, so the host_network role cannot build "
               f"the bond: declare node_types.{nt.name}.interfaces.inband")
        return Setting((
            f"Bootstrap and out-of-band TCP on the in-band network, exact name {INBAND_IFNAME}: the in-band ports",
            f"bonded ({how})."), "NCCL_SOCKET_IFNAME", "=" + INBAND_IFNAME)
    if names:
        return Setting((f"Bootstrap and out-of-band TCP on the in-band port {names[0]} ({ports[0].source}).",),
                       "NCCL_SOCKET_IFNAME", "=" + names[0])
    if ports:
        return Setting((
            "Bootstrap and out-of-band TCP: the single in-band port's name is not known, so any interface but",
            f"loopback and docker bridges (declare node_types.{nt.name}.interfaces.inband)."),
            "NCCL_SOCKET_IFNAME", ANY_IFNAME)
    return Setting((
        "Bootstrap and out-of-band TCP: this node type has no in-band NIC, so any interface but loopback and",
        "docker bridges (override with the real name)."), "NCCL_SOCKET_IFNAME", ANY_IFNAME)


def sockets_only(plan: ClusterPlan, nt: NodeTypePlan, comp: ComputeFabric | None) -> list[Setting]:
    if comp is None:
        why = ("No RDMA compute fabric: inter-node NCCL traffic uses TCP sockets. 1 keeps NCCL off the storage",
               "and in-band RDMA ports, which it would otherwise use as IB/RoCE devices.")
        return [Setting(why, "NCCL_IB_DISABLE", "1"), socket_setting(plan, nt)]
    plain = Setting(("The compute fabric is plain Ethernet (no lossless class for RoCE): NCCL uses TCP sockets.",),
                    "NCCL_IB_DISABLE", "1")
    if overrides(plan, nt).get("socket_ifname"):
        return [plain, socket_setting(plan, nt)]
    ports = role_ports(plan, nt, "compute")
    names = netdevs(ports)
    if names:
        return [plain, Setting((f"TCP sockets on the compute ports, exact names ({ports[0].source}).",),
                               "NCCL_SOCKET_IFNAME", "=" + ",".join(names))]
    return [plain, Setting((("NCCL_SOCKET_IFNAME not set: it should name the compute ports, whose interface names "
                            f"no source gives (declare node_types.{nt.name}.interfaces.compute)."),))]
