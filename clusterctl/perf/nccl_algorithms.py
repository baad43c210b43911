"""NCCL's collective algorithms and protocols, and the one it picks for a size: time = latency + bytes / bandwidth.

NCCL's tuner (src/graph/tuning.cc, ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``) gives every pair of an
algorithm (Ring, Tree, NVLS, NVLS-Tree, CollNet) and a protocol (LL, LL128, Simple) a latency and a bandwidth and
runs the pair with the least ``latency + bytes / bandwidth``. This module does the same with:

* **bandwidths** from the physical links (``Links``: NVLink ring and NVLS bus bandwidth inside one NVLink domain,
  the network one NVLink domain gives this group), in nccl-tests' bus-bandwidth convention, and how much of the
  domain's network each algorithm moves per byte: a ring crosses each domain boundary once per step; NCCL's double
  binary tree sends a domain's share once on two domains and up to twice on four or more (``tree_traffic``,
  computed from NCCL's own tree layout, src/graph/trees.cc); SHARP (CollNet) reduces in the switch, so a domain
  sends and receives its data once however many domains there are;
* **latencies** adopted from NCCL 2.26.2 src/graph/tuning.cc (``baseLat``, ``hwLat``, ``getNetOverhead``) with
  their formulas, plus two measured terms: the cost of launching one collective as nccl-tests times it, and the
  extra latency of a network plugin NCCL's table does not know (EFA, GPUDirect-TCPXO);
* **protocol ratios** from the same file: LL moves half the bytes (8-byte lines with a 4-byte flag) and is capped
  at ``LL_MAX_GB_PER_S``, LL128 loses 8 of 128 bytes, Tree all-reduce gets 0.92 of its bandwidth.

The derivation is in docs/report.md, "Collectives"; every constant is in clusterctl/perf/published/constants.py
with its source and whether the validation rows constrain it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PROTOCOLS = ("LL", "LL128", "Simple")
SIMPLE = 2

NCCL_BASE_LATENCY_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
"""NCCL 2.26.2 src/graph/tuning.cc ``baseLat`` (LL, LL128, Simple), µs: the fixed cost of a Tree or Ring
collective. NVLS, NVLS-Tree and CollNet have a base latency of 0 in the same table. Adopted, not fitted."""

NCCL_NVLINK_LATENCY_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": 25.0, "nvls_tree": 25.0,
                          "collnet": 3.7}
"""NCCL 2.26.2 tuning.cc ``hwLat[NVLINK]``, µs per intra-domain step (Tree and Ring per protocol; NVLS, NVLS-Tree
and CollNetDirect run Simple only). Adopted, not fitted."""

NCCL_NET_LATENCY_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": 18.0, "nvls_tree": 14.0,
                       "collnet": 31.0}
"""NCCL 2.26.2 tuning.cc ``hwLat[NET]``, µs per network step (NVLS-Tree's 14 became 20.9 in 2.28.9). Adopted."""

NET_OVERHEAD_US = 1.0
"""NCCL 2.26.2 tuning.cc ``getNetOverhead``: 1 µs per intra-domain step of a ring that also crosses the network
(Intel x86 and Arm; 2 on AMD x86), three times that for Simple. Adopted."""

NET_PLUGIN_LATENCY_US = {"infiniband": 0.0, "roce": 0.0, "ethernet": 0.0, "efa": 19.5, "tcp": 52.8}
"""The network plugin's own latency (NCCL adds the plugin's ``latency`` property to each network step, twice for
Simple), µs. InfiniBand and RoCE (NCCL's built-in IB verbs transport): 0. EFA and GPUDirect-TCPXO: calibrated on
the 8-byte all_reduce of two p5.48xlarge (69.12 µs) and of two A3 Mega (135.8 µs), the rows
``small-p5-efa-2nodes-8b`` and ``small-a3mega-tcpxo-2nodes-8b`` (clusterctl/perf/published/nccl_small.py)."""

LAUNCH_LATENCY_US = 5.0
"""Fixed cost of any collective as nccl-tests times it (kernel launch, the proxy hand-off, the final
synchronisation), beyond NCCL's model: calibrated on the 1 KiB all_reduce of one GB200 compute tray (4 GPUs,
Ring, 15.4 µs; NCCL's Ring LL model gives 10.2 µs), row ``small-gb200-tray-1k``."""

PROTOCOL_BANDWIDTH = {"ring_ll": 0.5, "ring_ll128": 0.92, "tree_ll": 1 / 3.8, "tree_ll128_one_domain": 7 / 9,
                      "tree_ll128": 120 / 128}
"""NCCL 2.26.2 tuning.cc "Various model refinements": the share of the Simple bandwidth each protocol reaches
(Ring LL 0.5, Ring LL128 0.92, Tree LL 1/3.8, Tree LL128 7/9 on one node and 120/128 across nodes). Adopted."""

TUNER_TREE_SHARE = 0.92
"""NCCL 2.26.2 tuning.cc rates Tree all-reduce at 0.92 of its links' bandwidth, and counts a tree's network
bytes as a ring's, so its tuner picks Ring over plain Tree for large messages even where the tree moves fewer
bytes per domain (NVIDIA/nccl#1801: default Ring 196.72 GB/s, forced Tree 234.43 on three GB200 partitions).
Used only to choose, as NCCL does; the time of the chosen algorithm is the links'. Adopted."""

LL_MAX_GB_PER_S = {"ampere": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0), "blackwell": (282.0, 90.0, 70.0)}
"""NCCL 2.26.2 tuning.cc ``llMaxBws``: the LL protocol's bus-bandwidth cap, GB/s, on one, two, and three or more
nodes (NVLink domains). Adopted."""


@dataclass(frozen=True)
class Links:
    """What the algorithms of one group run over (GB/s are nccl-tests bus bandwidths)."""

    ranks: int
    per_domain: int
    """ranks in each NVLink domain"""
    domains: int
    generation: str
    """GPU generation (key of LL_MAX_GB_PER_S): ampere, hopper, blackwell"""
    nvlink_ring_gb_per_s: float
    """ring bus bandwidth inside one domain (0 when the GPUs have no scale-up link)"""
    nvls_gb_per_s: float
    """NVLS all-reduce bus bandwidth inside one domain of ``per_domain`` ranks (0: no NVLink SHARP)"""
    net_gb_per_s: float
    """the network bandwidth the group's traffic leaving one domain gets, each direction"""
    network: str
    """key of NET_PLUGIN_LATENCY_US"""
    sharp: bool = False
    """the fabric reduces in the switch (InfiniBand SHARP through NCCL's CollNet plugin)"""


@dataclass(frozen=True)
class Choice:
    algorithm: str
    protocol: str
    time_s: float


def tree_traffic(domains: int) -> float:
    """Bytes one domain sends (and receives) per byte of an all-reduce in NCCL's double binary tree: the
    largest over the domains of half the message times the domain's tree edges in both trees (parent and
    children; NCCL 2.26.2 src/graph/trees.cc ``ncclGetBtree`` and ``ncclGetDtree``: the second tree is the first
    mirrored on an even count, shifted by one on an odd one). 1 on two domains, 1.5 on three, 2 on most counts
    of four or more: trees past two domains carry up to twice a ring's bytes per domain."""
    if domains <= 1:
        return 0.0
    degree = [0] * domains
    for rank in range(domains):
        for tree in (0, 1):
            if tree == 0:
                up, down = _btree(domains, rank)
            elif domains % 2:
                u, d = _btree(domains, (rank - 1) % domains)
                up, down = (u + 1) % domains if u >= 0 else -1, [(x + 1) % domains for x in d]
            else:
                u, d = _btree(domains, domains - 1 - rank)
                up, down = domains - 1 - u if u >= 0 else -1, [domains - 1 - x for x in d]
            degree[rank] += (up >= 0) + len(down)
    return max(degree) / 2


def _btree(n: int, rank: int) -> tuple[int, list[int]]:
    """(parent or -1, children) of ``rank`` in NCCL's binary tree of ``n`` ranks (trees.cc ``ncclGetBtree``)."""
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, [bit >> 1] if n > 1 else []
    up = (rank ^ bit) | (bit << 1)
    if up >= n:
        up = rank ^ bit
    low = bit >> 1
    children = []
    if low:
        children.append(rank - low)
        down1 = rank + low
        while down1 >= n and low:
            low >>= 1
            down1 = rank + low
        if low:
            children.append(down1)
    return up, children


def _factor(op_is_allreduce: bool, n: int) -> float:
    return 2 * (n - 1) / n if op_is_allreduce else (n - 1) / n


def candidates(allreduce: bool, L: Links) -> list[tuple[str, str, float, float, float]]:
    """Every (algorithm, protocol, latency µs, bus bandwidth GB/s, the bus bandwidth NCCL's tuner expects) NCCL
    would weigh for this group. ``allreduce``: AllReduce; otherwise AllGather / ReduceScatter (Ring only, as NCCL
    without CollNet or NVLS across domains)."""
    n, g, k = L.ranks, L.per_domain, L.domains
    out: list[tuple[str, str, float, float, float]] = []
    node_index = 0 if k == 1 else 1 if k == 2 else 2
    ll_cap = LL_MAX_GB_PER_S.get(L.generation, LL_MAX_GB_PER_S["hopper"])[node_index]
    plugin = NET_PLUGIN_LATENCY_US[L.network]

    def net_lat(algo: str, p: int, one_rank: bool = False) -> float:
        table = NCCL_NET_LATENCY_US["tree" if one_rank else algo]
        lat = table[p] if isinstance(table, tuple) else table
        return lat + plugin * (2 if p == SIMPLE else 1)

    # Ring: one ring through every rank; across domains each ring enters and leaves every domain once
    if k == 1:
        ring_bw = L.nvlink_ring_gb_per_s
    elif g > 1:
        ring_bw = min(L.nvlink_ring_gb_per_s * g / (g - 1), L.net_gb_per_s)
    else:
        ring_bw = L.net_gb_per_s
    steps = 2 * (n - 1) if allreduce else n - 1
    inter_steps = (2 if allreduce else 1) * (k - 1)
    for p, proto in enumerate(PROTOCOLS):
        base, intra = NCCL_BASE_LATENCY_US["ring"][p], NCCL_NVLINK_LATENCY_US["ring"][p]
        if k > 1:
            intra = max(intra, NET_OVERHEAD_US * (3 if p == SIMPLE else 1))
        lat = base + (steps - inter_steps) * intra + inter_steps * net_lat("ring", p, one_rank=g == 1)
        bw = ring_bw * (PROTOCOL_BANDWIDTH["ring_ll"] if p == 0 else PROTOCOL_BANDWIDTH["ring_ll128"] if p == 1 else 1)
        bw = min(bw, ll_cap) if p == 0 else bw
        out.append(("ring", proto, lat, bw, bw))
    if not allreduce:
        return out
    factor = _factor(True, n)
    # the network part of a tree: the domain's share crosses tree_traffic(k) times, as bus bandwidth
    tree_net = L.net_gb_per_s * factor / tree_traffic(k) if k > 1 else math.inf
    hops = int(math.log2(k)) if k > 1 else 0
    # Tree: a chain inside each domain, NCCL's double binary tree across
    intra = L.nvlink_ring_gb_per_s if g > 1 else math.inf
    tree_bw = min(intra, tree_net)
    tuner_tree = TUNER_TREE_SHARE * min(intra, L.net_gb_per_s if k > 1 else math.inf)
    if math.isfinite(tree_bw):
        for p, proto in enumerate(PROTOCOLS):
            lat = NCCL_BASE_LATENCY_US["tree"][p] + 2 * ((g - 1) * NCCL_NVLINK_LATENCY_US["tree"][p]
                                                         + hops * net_lat("tree", p))
            share = (PROTOCOL_BANDWIDTH["tree_ll"] if p == 0 else
                     PROTOCOL_BANDWIDTH["tree_ll128_one_domain" if k == 1 else "tree_ll128"] if p == 1 else 1)
            bw, tuned = tree_bw * share, tuner_tree * share
            out.append(("tree", proto, lat, min(bw, ll_cap) if p == 0 else bw, min(tuned, ll_cap) if p == 0 else tuned))
    if L.nvls_gb_per_s > 0 and g > 1:
        if k == 1:  # NVLS: every GPU writes its buffer to the switch once and reads the sum once
            out.append(("nvls", "Simple", NCCL_NVLINK_LATENCY_US["nvls"], L.nvls_gb_per_s, L.nvls_gb_per_s))
        else:  # NVLS inside the domains, the double binary tree across them
            lat = NCCL_NVLINK_LATENCY_US["nvls_tree"] + 2 * hops * net_lat("nvls_tree", SIMPLE)
            bw = min(L.nvls_gb_per_s, tree_net)
            out.append(("nvls-tree", "Simple", lat, bw, bw))
    if L.sharp and k > 1:  # SHARP: the switch reduces, so a domain sends and receives its share once
        intra_bw = L.nvls_gb_per_s if L.nvls_gb_per_s > 0 else L.nvlink_ring_gb_per_s if g > 1 else math.inf
        # NCCL's CollNetDirect latency, with its 0.4 µs per local rank of "arity serialization"
        lat = 2 * (min(1, g - 1) * NCCL_NVLINK_LATENCY_US["collnet"] + (g - 1) * 0.4) + net_lat("collnet", SIMPLE)
        bw = min(intra_bw, L.net_gb_per_s * factor)
        out.append(("sharp", "Simple", lat, bw, bw))
    return out


def choose(allreduce: bool, size_bytes: float, L: Links, algorithm: str | None = None) -> Choice:
    """What NCCL's tuner picks for ``size_bytes`` (nccl-tests' total message size): the algorithm and protocol
    with the least expected time, and the time the links then give, with LAUNCH_LATENCY_US added (what
    nccl-tests measures). ``algorithm``: only that one, as ``NCCL_ALGO`` forces it."""
    factor = _factor(allreduce, L.ranks)
    best: tuple[float, Choice] | None = None
    for algo, proto, lat_us, busbw, tuned in candidates(allreduce, L):
        if not busbw > 0 or (algorithm is not None and algo != algorithm):
            continue
        expected = lat_us * 1e-6 + size_bytes * factor / (tuned * 1e9)
        if best is None or expected < best[0]:
            t = (LAUNCH_LATENCY_US + lat_us) * 1e-6 + size_bytes * factor / (busbw * 1e9)
            best = (expected, Choice(algo, proto, t))
    if best is None:
        raise ValueError(f"no algorithm{' ' + algorithm if algorithm else ''} has a bandwidth on these links")
    return best[1]


__all__ = ["Choice", "LAUNCH_LATENCY_US", "Links", "candidates", "choose", "tree_traffic"]
