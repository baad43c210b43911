"""The links a GPU's collectives run over, and NCCL-like collective times on them.

``Interconnect`` describes one NVLink domain and the network it injects into:

* scale-up: per-GPU NVLink bandwidth *one direction* (vendors quote the two directions summed: H100's
  "900 GB/s" is 450 GB/s each way), the GPUs per NVLink domain, and whether NVLink SHARP (NVLS) exists;
* scale-out: NICs per domain, the line rate of one NIC, the fabric's worst oversubscription.

``collective()`` estimates one collective the way NCCL runs it (see docs/report.md for the derivation):

* **AllReduce, AllGather, ReduceScatter**: NCCL's algorithms (Ring, Tree, NVLS, NVLS-Tree, SHARP) and protocols
  with NCCL's own latencies, the one its tuner picks per size (clusterctl/perf/nccl_algorithms.py), on the
  links this module describes: NVLink ring and NVLS bandwidth inside a domain, and ``group_network_gb_per_s``,
  the network one group's traffic leaving a domain gets (its share of the NICs, those of at most
  ``NET_HEAD_GPUS`` of its GPUs per domain, and what routing leaves).
* **all-to-all**: each rank sends ``S/n`` to every other rank; off-domain bytes share the domain's NICs,
  on-domain bytes go over NVLink.
* **send/recv**: one message over NVLink (same domain) or the GPU's share of the NICs.

Efficiencies and latencies are the module constants below, each with where it comes from. Calibration
is on principles: an efficiency per *link class* (NCCL's protocol overhead on NVLink, RDMA goodput on a
NIC, NVSwitch reduction throughput for NVLS), never a per-test fudge. The nccl-tests figures they were
computed from are calibration rows (clusterctl/perf/published/nccl.py, nccl_domains.py): reproducing them is
a fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    GB,
    OPS,
    REDUCE_SCATTER,
    SEND_RECV,
    CollectiveEstimate,
    estimate_from_time,
)
from clusterctl.perf import nccl_algorithms
from clusterctl.perf.nccl_algorithms import Links

NVLINK_RING_EFFICIENCY = 0.80
"""NCCL ring bus bandwidth / NVLink one-direction bandwidth. nccl-tests all_reduce_perf on 8 x H100 SXM
reaches ~370 GB/s busbw without NVLS (NVIDIA/nccl-tests issues; 370/450 = 0.82) and ~230 GB/s on 8 x A100
(230/300 = 0.77): NCCL's Simple protocol and chunking cost ~20 % of the wire."""

NVLS_EFFICIENCY = {"hopper": 0.61, "blackwell": 0.473}
"""NVLS AllReduce: each GPU sends its buffer to the NVSwitch once and reads the reduced result once, so the
ideal algorithm bandwidth is the one-direction NVLink bandwidth; the NVSwitch's multimem reduction reaches a
share of it. Hopper: 0.61 from ~480 GB/s busbw on 8 x H100 (NVIDIA/nccl-tests issues: 480 / (450 x 2 x 7/8)).
Blackwell: 0.473 from 839.16 GB/s busbw on one 72-GPU GB200 NVL72 rack at 4 GiB (coreweave/nccl-tests README,
NCCL 2.26.2: 839.16 / (900 x 2 x 71/72)); NCCL's own model also rates Blackwell's NVLS below Hopper's
(2.28.3+ tuning.cc ``nvlsEfficiency``: 0.74 vs 0.85)."""

NET_HEAD_GPUS = 8.6
"""GPUs of one NVLink domain whose NICs carry one communicator's traffic between domains (rings leave a domain
from one GPU and its NIC each; NVLS-Tree sends through its "head" GPUs). On an 8-GPU HGX node every GPU is
one, so all the node's NICs work; on a 72-GPU NVL72 rack NCCL drives a few of the 72 NICs. Calibrated (an
effective count, NCCL 2.26.2): 405.74 GB/s all_reduce busbw on 20 GB200 NVL72 racks at 16 GiB (coreweave/
nccl-tests README) = 8.6 GPUs x 47 GB/s (one 400G NIC each at NIC_EFFICIENCY) across NCCL's double binary
tree (tree_traffic 2 past four domains). Holdout: the 2-rack row, where the same tree sends each byte once."""

NIC_EFFICIENCY = {"rdma": 0.94, "tcp": 0.90}
"""Goodput of one NIC under NCCL. RDMA (InfiniBand, RoCE, EFA): "For NDR @ 400Gbps you should see
46-48GB/s per NIC" (NVIDIA/nccl-tests#290) = 0.92-0.96 of 50 GB/s; HDR: 24 GB/s of 25 (NVIDIA/nccl#412).
TCP offload paths (GCP GPUDirect-TCPX/TCPXO): assumed 0.80, not calibrated here."""

NVLINK_STEP_LATENCY_US = 1.0
"""Per step of an all-to-all or a send/recv inside an NVLink domain - an assumption, not calibrated (AllReduce,
AllGather and ReduceScatter take NCCL's own latencies: clusterctl/perf/nccl_algorithms.py)."""

NETWORK_STEP_LATENCY_US = {"infiniband": 4.0, "roce": 5.0, "ethernet": 5.0, "efa": 10.0, "tcp": 20.0}
"""Per step of an all-to-all or a send/recv across the network (NIC + switch hops + NCCL proxy) - assumptions,
not calibrated."""

ECMP_EFFICIENCY = 1 - 1 / math.e
"""Share of the spine uplinks' capacity a collective gets when a RoCE/Ethernet fabric spreads its flows with
static ECMP hashing (no adaptive routing): 1 - 1/e = 0.632. Derivation (balls into bins): a collective's
cross-leaf traffic is a few long flows per NIC, about one per uplink; hashed independently onto ``u`` equal
uplinks, an uplink stays idle with probability (1 - 1/u)^u -> 1/e, while the flows that collide share one
link, so the fabric delivers 1 - 1/e of the bandwidth it has. Checked against NVIDIA's figures for
Spectrum-X, "up to 95 % effective bandwidth" with adaptive routing and "1.6x" the AI networking
performance of standard Ethernet (95 % / 1.6 = 59 %, so 0.59 / 0.95 = 0.625 of the adaptive-routing
figure: row ``ecmp-static-ethernet`` in clusterctl/perf/published/fabric.py, a calibration row), and
with Meta's "up to 40 %" AllReduce gain from enhanced ECMP with QP scaling over plain ECMP (SIGCOMM 2024;
1 / 1.4 = 0.71 >= 0.632: enhanced ECMP, still hashed, stays at or below adaptive routing). Holdouts: the
MegaScale Megatron-LM rows at 6,144-12,288 GPUs (RoCE, ECMP; published/fabric.py). Applied only
to a placement that spans more than one leaf (``Interconnect.leaf_domains``): within a leaf there is no
path choice (uccl-project/uccl#153: same-rack nodes see no ECMP congestion)."""

LEAF_DOMAINS = 32
"""Default NVLink domains (nodes) under one leaf group: a DGX SuperPOD scalable unit is 32 DGX nodes on
its rail leaves (NVIDIA DGX SuperPOD reference architecture); interconnect_of() sets the plan's own."""

@dataclass(frozen=True)
class Interconnect:
    """The links of one NVLink domain: what collectives of its GPUs run over."""

    gpus_per_domain: int
    nvlink_gb_per_s: float
    """per GPU, one direction (0 when the GPUs have no scale-up link)"""
    nvls: bool
    """NVLink SHARP: in-switch reduction (NVSwitch gen 3+, Hopper and later)"""
    nics_per_domain: float
    """compute-fabric NICs of all nodes in the domain (a fraction when a NIC serves several one-GPU domains)"""
    nic_gb_per_s: float
    """line rate of one NIC in GB/s (400 Gb/s = 50 GB/s)"""
    nic_kind: str = "rdma"
    """key of NIC_EFFICIENCY"""
    network: str = "infiniband"
    """key of NETWORK_STEP_LATENCY_US"""
    oversubscription: float = 1.0
    """worst down:up ratio of the compute fabric (bandwidth leaving a leaf is divided by it)"""
    adaptive_routing: bool = True
    """the fabric spreads traffic per packet over the uplinks (InfiniBand adaptive routing, Spectrum-X);
    False: static ECMP hashing of flows, ECMP_EFFICIENCY on placements that span several leaves"""
    leaf_domains: int = LEAF_DOMAINS
    """NVLink domains whose NICs share one leaf (group of rail leaves): larger placements cross spines"""
    generation: str = "hopper"
    """GPU generation: ampere, hopper, blackwell (NVLS efficiency, NCCL's LL protocol cap)"""
    sharp: bool = False
    """the compute fabric reduces in the switch (InfiniBand SHARP) and jobs enable NCCL's CollNet plugin"""

    def __post_init__(self) -> None:
        if self.gpus_per_domain > 1 and not self.nvlink_gb_per_s > 0:
            raise ValueError("a domain of several GPUs needs a scale-up bandwidth > 0 (else use one-GPU domains)")
        if not (self.nics_per_domain > 0 and self.nic_gb_per_s > 0):
            raise ValueError("the domain needs at least one NIC with a line rate > 0")

    # --- effective bandwidths, GB/s -------------------------------------------------------------
    @property
    def nvlink_ring_gb_per_s(self) -> float:
        return self.nvlink_gb_per_s * NVLINK_RING_EFFICIENCY

    @property
    def nic_effective_gb_per_s(self) -> float:
        return self.nic_gb_per_s * NIC_EFFICIENCY[self.nic_kind] / max(1.0, self.oversubscription)

    @property
    def domain_network_gb_per_s(self) -> float:
        return self.nics_per_domain * self.nic_effective_gb_per_s

    def routing_efficiency(self, span: int) -> float:
        """Share of the network bandwidth a placement spanning ``span`` NVLink domains gets from routing:
        ECMP_EFFICIENCY when static hashing has to spread it over spine uplinks (Ethernet without adaptive
        routing, more domains than one leaf holds), else 1."""
        static = not self.adaptive_routing and self.network in ("roce", "ethernet")
        return ECMP_EFFICIENCY if static and span > self.leaf_domains else 1.0

    @property
    def per_gpu_network_gb_per_s(self) -> float:
        return self.domain_network_gb_per_s / self.gpus_per_domain

    @property
    def network_latency_s(self) -> float:
        return NETWORK_STEP_LATENCY_US[self.network] * 1e-6

    @property
    def nvlink_latency_s(self) -> float:
        return NVLINK_STEP_LATENCY_US * 1e-6


@dataclass(frozen=True)
class Placement:
    """How a group of ``ranks`` GPUs sits on the domains: ``per_domain`` of them in each domain, and the
    fraction of the domain's NICs this group may use (1.0 when it runs alone; 1/8 for one of the eight
    data-parallel groups of a TP=8 job that run at the same time)."""

    ranks: int
    per_domain: int
    nic_share: float = 1.0
    spread: int = 1
    """NVLink domains between consecutive members' domains (8 for a data-parallel group of a TP 8 x PP 8
    job on 8-GPU nodes): the group's domains sit among ``domains x spread`` of the job's"""

    @property
    def domains(self) -> int:
        return -(-self.ranks // self.per_domain)

    @property
    def span(self) -> int:
        """NVLink domains the group's placement covers: whether it fits under one leaf group"""
        return self.domains * self.spread


def placement(ranks: int, ic: Interconnect, stride: int = 1) -> Placement:
    """The placement of a group whose consecutive members are ``stride`` GPUs apart (Megatron's rank
    order: a data-parallel group of a TP=8 job has stride 8). Members share a domain while the stride
    fits in it; parallel groups of the same kind share the domain's NICs evenly."""
    per_domain = max(1, min(ranks, ic.gpus_per_domain // max(1, stride)))
    parallel = max(1, min(stride, ic.gpus_per_domain))
    spread = max(1, stride // max(1, ic.gpus_per_domain))
    return Placement(ranks, per_domain, 1.0 / parallel if per_domain < ranks else 1.0, spread)


def group_network_gb_per_s(ic: Interconnect, pl: Placement) -> float:
    """The network bandwidth (GB/s, each direction) the group's traffic leaving one NVLink domain gets: its share
    of the domain's NICs, of which NCCL's channels drive those of at most NET_HEAD_GPUS of the group's GPUs in the
    domain, and what routing leaves of it."""
    heads = min(1.0, NET_HEAD_GPUS / pl.per_domain)
    return ic.domain_network_gb_per_s * pl.nic_share * heads * ic.routing_efficiency(pl.span)


def nvls_busbw(ic: Interconnect, g: int) -> float:
    """NVLS AllReduce bus bandwidth of ``g`` GPUs of one domain (0 without NVLink SHARP)."""
    if not ic.nvls or g < 2:
        return 0.0
    eff = NVLS_EFFICIENCY.get(ic.generation, NVLS_EFFICIENCY["hopper"])
    return ic.nvlink_gb_per_s * eff * 2 * (g - 1) / g


def links(ic: Interconnect, pl: Placement) -> Links:
    """What NCCL's algorithms run over for the group placed as ``pl`` (clusterctl/perf/nccl_algorithms.py)."""
    return Links(pl.ranks, pl.per_domain, pl.domains, ic.generation, ic.nvlink_ring_gb_per_s if pl.per_domain > 1
                 else 0.0, nvls_busbw(ic, pl.per_domain), group_network_gb_per_s(ic, pl),
                 ic.network if ic.nic_kind != "tcp" else "tcp", ic.sharp)


def _est(op: str, size: float, ranks: int, t: float, algo: str) -> tuple[CollectiveEstimate, str]:
    """The estimate of a collective whose transfer takes ``t`` (plus the launch cost when it moves data)."""
    return estimate_from_time(op, size, ranks, t + nccl_algorithms.LAUNCH_LATENCY_US * 1e-6 if t > 0 else 0.0), algo


def collective(op: str, size_bytes: float, ic: Interconnect, pl: Placement,
               algorithm: str | None = None) -> tuple[CollectiveEstimate, str]:
    """Estimated time and nccl-tests bandwidths of one collective, and the algorithm that won (NCCL's protocol
    for it: ``nccl_algorithms.choose``). ``algorithm`` forces one (ring, tree, nvls, nvls-tree, sharp) for
    AllReduce, AllGather and ReduceScatter, as ``NCCL_ALGO`` does."""
    if op not in OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(OPS)}")
    n, g, k = pl.ranks, pl.per_domain, pl.domains
    if n <= 1 or size_bytes <= 0:
        return _est(op, size_bytes, n, 0.0, "none")
    S = float(size_bytes)
    a_nv, a_net = ic.nvlink_latency_s, ic.network_latency_s
    if op == SEND_RECV:
        if k == 1:
            return _est(op, S, n, a_nv + S / (ic.nvlink_ring_gb_per_s * GB), "p2p-nvlink")
        per_gpu = ic.nics_per_domain * ic.nic_effective_gb_per_s / ic.gpus_per_domain
        return _est(op, S, n, a_net + S / (per_gpu * GB), "p2p-net")
    if op == ALL_TO_ALL:
        off = S * (n - g) / n
        on = S * (g - 1) / n
        net_per_gpu = ic.domain_network_gb_per_s * pl.nic_share * ic.routing_efficiency(pl.span) / g
        t_off = off / (net_per_gpu * GB) if off else 0.0
        t_on = on / (ic.nvlink_ring_gb_per_s * GB) if on else 0.0
        latency = (a_net if k > 1 else a_nv) * math.ceil(math.log2(n))
        return _est(op, S, n, latency + max(t_off, t_on), "alltoall")
    pick = nccl_algorithms.choose(op == ALL_REDUCE, S, links(ic, pl), algorithm)
    return estimate_from_time(op, S, n, pick.time_s), pick.algorithm


def compute_group(plan):
    """The GPU node group collectives are estimated for: the one with the most GPUs (first on a tie)."""
    groups = [g for g in plan.groups if g.gpus > 0]
    return max(groups, key=lambda g: g.gpus) if groups else None


def interconnect_of(plan, group=None) -> Interconnect | None:
    """The interconnect of ``group`` (default: ``compute_group(plan)``); None without GPUs or NICs.

    Without a catalogued scale-up bandwidth (no NVLink figure) every GPU is its own domain and talks to
    the others through the node's NICs - pessimistic, and said in the report. Without compute NICs, the
    GPUs fall back to the other data NICs (in-band, storage) at TCP socket efficiency, as NCCL falls back
    to sockets."""
    group = group or compute_group(plan)
    if group is None:
        return None
    nt = group.type
    acc = nt.accelerator
    gpn = nt.gpus
    nvlink = (acc.scaleup_gb_per_s or 0.0) / 2 if acc is not None else 0.0
    domain = (group.nvlink_domain_gpus or nt.nvlink_domain_gpus or gpn) if nvlink > 0 else 1

    def per_domain(nics_per_node: int) -> float:  # the domain's share of its nodes' NICs
        n = nics_per_node * domain / gpn
        return int(n) if n == int(n) else n

    nvls = bool(acc is not None and acc.generation in ("hopper", "blackwell") and domain >= 4 and nvlink > 0)
    generation = acc.generation if acc is not None and acc.generation in ("ampere", "hopper", "blackwell") else "hopper"
    if nt.instance is not None:
        net = nt.instance.network
        nics = max(1, net.gpu_nics)
        kind = "tcp" if net.fabric in ("tcpx", "tcpxo") else "rdma"
        network = {"efa": "efa", "tcpx": "tcp", "tcpxo": "tcp", "rdma-roce": "roce"}.get(net.fabric, net.fabric)
        return Interconnect(domain, nvlink, nvls, per_domain(nics), net.total_gbps / nics / 8, kind,
                            network, 1.0, generation=generation)
    role, kind = "compute", "rdma"
    if not nt.nics_of("compute"):
        role, kind = next((r for r in ("inband", "storage") if nt.nics_of(r)), None), "tcp"
        if role is None:
            return None
    nics = nt.nics_of(role)
    count = sum(n.count for n in nics)
    speed = max(n.speed_gbps for n in nics)
    fabric = next(iter(plan.fabrics_on(role, group)), None)
    network = "tcp" if kind == "tcp" else fabric.kind if fabric is not None else "ethernet"
    over = fabric.oversubscription_achieved if fabric is not None else 1.0
    if fabric is not None:
        speed = min(speed, fabric.nic_gbps or speed)
    adaptive, leaf = _routing_of(plan, fabric, gpn, domain)
    return Interconnect(domain, nvlink, nvls, per_domain(count), speed / 8, kind, network, over, adaptive, leaf,
                        generation)


def fabric_has_sharp(plan, group=None) -> bool:
    """Whether the compute fabric of ``group`` (default: ``compute_group(plan)``) is InfiniBand with SHARP. NCCL
    uses it only through its CollNet plugin with NCCL_COLLNET_ENABLE=1, which the rendered NCCL environment
    leaves off (clusterctl/targets/nccl/fabric.py): the report shows it beside the default, not instead."""
    group = group or compute_group(plan)
    if group is None or not group.type.nics_of("compute"):
        return False
    return any(f.kind == "infiniband" and plan.fabric_spec(f).sharp for f in plan.fabrics_on("compute", group))


def _routing_of(plan, fabric, gpus_per_node: int, domain: int) -> tuple[bool, int]:
    """(adaptive routing, NVLink domains under one leaf group) of the planned compute fabric.

    InfiniBand: the blueprint's ``adaptive_routing`` (default on). RoCE: adaptive routing only when every
    switch tier is a Spectrum-X switch (catalog description says "Spectrum-X": Spectrum-4 with RoCE adaptive
    routing), else static ECMP. One leaf group: a one-tier fabric holds all its nodes; otherwise one
    scalable unit (its nodes share their rail leaves, or one leaf when not rail-optimized)."""
    if fabric is None:
        return True, LEAF_DOMAINS
    if fabric.kind == "infiniband":
        adaptive = plan.fabric_spec(fabric).adaptive_routing
    else:
        adaptive = bool(fabric.tiers) and all("Spectrum-X" in (t.switch.description or "") for t in fabric.tiers)
    nodes = fabric.nodes if len(fabric.tiers) <= 1 else (fabric.su_nodes or fabric.nodes)
    return adaptive, max(1, nodes * gpus_per_node // max(1, domain))


def message_sizes(lo: int = 8, hi: int = 16 * 2**30) -> list[int]:
    """nccl-tests style sizes: powers of two from ``lo`` to ``hi`` bytes (``-b 8 -e 16G -f 2``)."""
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


__all__ = [
    "ALL_GATHER", "ALL_REDUCE", "ALL_TO_ALL", "REDUCE_SCATTER", "SEND_RECV", "Interconnect", "Placement",
    "collective", "message_sizes", "placement",
]
