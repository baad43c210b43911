"""Every model constant of the training and collective models, and whether the validation rows constrain it.

A constant is ``constrained`` when moving it by +5 % takes at least one *validation* row (a holdout, see
clusterctl/perf/published/__init__.py) outside its family's band, and so does moving it by -5 %. Otherwise
it is ``unconstrained``: the rows that were not used to set it cannot tell its value from one 5 % away (in at
least one direction), whatever the calibration rows say. tests/perf/test_published.py moves each constant
both ways and checks the label (a constrained constant must move a row out both ways; an unconstrained one
must leave every validation row inside its band in at least one direction), so a label cannot go stale
silently; docs/report.md lists the table with the rows that leave (``python -m clusterctl.perf.published``).

``DEFINITIONS`` are module-level numbers that are units or conventions, not fitted (bf16 is 2 bytes): they are
listed so that the completeness test can tell that every other upper-case number of training.py and
interconnect.py is here.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass

from clusterctl.perf.published.all_rows import families, rows
from clusterctl.perf.published.rows import VALIDATION, evaluate

CONSTRAINED = "constrained"
UNCONSTRAINED = "unconstrained"
STEP = 0.05
"""the relative move of the sensitivity test"""

TRAINING = "clusterctl.perf.training"
INTERCONNECT = "clusterctl.perf.interconnect"
NCCL = "clusterctl.perf.nccl_algorithms"
MOE = "clusterctl.perf.moe"
MODULES = (TRAINING, INTERCONNECT, NCCL, MOE)


@dataclass(frozen=True)
class Constant:
    module: str
    name: str
    key: str | None
    """for a dict constant: the entry"""
    label: str
    why: str

    @property
    def ref(self) -> str:
        return self.name + (f"[{self.key!r}]" if self.key is not None else "")

    def value(self) -> float:
        v = getattr(importlib.import_module(self.module), self.name)
        return v[self.key] if self.key is not None else v


@contextmanager
def perturbed(c: Constant, factor: float):
    """``c`` multiplied by ``factor`` while the block runs (module attribute or dict entry), then restored."""
    mod = importlib.import_module(c.module)
    old = getattr(mod, c.name)
    if c.key is None:
        setattr(mod, c.name, old * factor)
    else:
        setattr(mod, c.name, {**old, c.key: _scaled(old[c.key], factor)})
    try:
        yield
    finally:
        setattr(mod, c.name, old)


def _scaled(value, factor: float):
    """``value`` times ``factor``; a tuple (NCCL's per-protocol latencies) element by element."""
    return tuple(v * factor for v in value) if isinstance(value, tuple) else value * factor


def outside_band(factor: float, c: Constant) -> list[str]:
    """Ids of the validation rows outside their family's band while ``c`` is multiplied by ``factor``."""
    bands = {f.name: f.band for f in families().values()}
    with perturbed(c, factor):
        return [r.id for r in rows() if r.role == VALIDATION and abs(evaluate(r).error) > bands[r.family]]


def sensitivity(c: Constant) -> dict[float, list[str]]:
    """The validation rows that leave their band at ``1 - STEP`` and at ``1 + STEP`` times ``c``."""
    return {f: outside_band(f, c) for f in (1 - STEP, 1 + STEP)}


def _c(module, name, label, why, key=None) -> Constant:
    return Constant(module, name, key, label, why)


C, U = CONSTRAINED, UNCONSTRAINED
CONSTANTS: list[Constant] = [
    _c(TRAINING, "SUSTAINED_GEMM", C,
       "every validation family is GEMM-bound: -5 % takes the Llama 3.1 405B proxy rows (BF16 and FP8) below "
       "their bands, +5 % the Llama 3.1 8B rows above theirs"),
    _c(TRAINING, "GEMM_SHAPE_HALF", U,
       "5 % moves no validation prediction by 1 %: their per-GPU widths are h/tp >= 768, where d/(d+128) "
       "hardly moves; only the small Narayanan models (calibration) feel it"),
    _c(TRAINING, "FLASH_ATTENTION_EFFICIENCY", U,
       "bounded on one side only: +5 % takes the 128K-context Llama 3 row (the largest attention share) above "
       "its band, -5 % leaves every validation row inside"),
    _c(TRAINING, "UNFUSED_ATTENTION_EFFICIENCY", U,
       "no validation row runs without flash attention: only Narayanan Table 1 (calibration) uses it"),
    _c(TRAINING, "HBM_EFFICIENCY", U,
       "element-wise work and the Adam step are a small share of the validation steps: 5 % moves no prediction "
       "by 1 %"),
    _c(TRAINING, "ELEMENTWISE_REPLICATED", U,
       "with sequence parallelism (every TP > 1 validation row) the replicated bytes are split by TP: 5 % moves "
       "no prediction by 1 %"),
    _c(TRAINING, "USABLE_HBM", U,
       "decides fits_memory only, never a throughput: no throughput row can constrain it"),
    _c(TRAINING, "ADAM_BYTES_PER_PARAM_STEP", U,
       "the optimizer step is sharded over dp x cp: 5 % moves no validation prediction by 1 %"),
    _c(TRAINING, "FP8_CAST_BYTES", U,
       "the casts are a small share of an FP8 step: 5 % moves no FP8 prediction by 1 %"),
    _c(MOE, "EXPERT_WEIGHT_BYTES", U,
       "derived (weight reads for forward and data gradient plus the fp32 main-gradient accumulate), not fitted; "
       "the expert GEMMs of the MoE validation rows are rarely weight-bound: 5 % moves no prediction by 1 %",
       "bf16"),
    _c(MOE, "EXPERT_WEIGHT_BYTES", U,
       "derived as for bf16 with 1-byte FP8 weights; 5 % moves no MoE validation prediction by 1 %", "fp8"),
    _c(MOE, "MOE_PERMUTE_ELEMENTS", U,
       "derived from Megatron-Core's token permute/unpermute reads and writes; 5 % moves the MoE rows by ~1 %"),
    _c(MOE, "MOE_ROUTER_ELEMENTS", U, "derived (router logits, softmax, top-k): invisible in a step"),
    _c(MOE, "A2A_NVLINK_EFFICIENCY", U,
       "taken from HybridEP's GB200 NVL72 dispatch/combine bandwidths (DeepEP hybrid-ep README), not fitted on "
       "a row; no validation row can tell it: the one row with the flex dispatcher on NVLink (DeepSeek-V3 on "
       "GB200) overlaps its all-to-all with compute, the other (H100) exchanges through the NICs"),
    _c(MOE, "FP8_GROUPED_GEMM_FLOOR", U,
       "solved from pytorch/ao's two MXFP8 MoE kernel timings (calibration on kernels, no training row); "
       "5 % moves the FP8 MoE rows by up to 3 %, inside their bands"),
    _c(MOE, "FP8_CAST_WIDTH", U,
       "solved with FP8_GROUPED_GEMM_FLOOR from the same two kernel timings; 5 % takes no FP8 MoE row out"),
    _c(TRAINING, "STEP_JITTER_CV", U,
       "the median of three weak-scaling fits (GPT-3 175B, Nemotron-4 340B, Llama 3.1 70B DGX Cloud tables, "
       "calibration); a 5 % move shifts a step by < 0.2 %, inside every band; the holdout Nemotron-4 15B creep "
       "needs the term (tests/perf/test_fabric_scale.py)"),
    _c(INTERCONNECT, "NVLINK_RING_EFFICIENCY", U,
       "set from the no-NVLS H100 and the A100 nccl-tests rows (calibration); every validation row is H100 with "
       "NVLS, whose TP all-reduces do not use it: no validation prediction moves"),
    _c(INTERCONNECT, "NVLS_EFFICIENCY", U,
       "set from the 480 GB/s nccl-tests row (calibration); it caps the two-node NVLS-Tree holdouts (nccl-tests#309 "
       "470 GB/s, p5 487.09), which a 5 % move shifts by 5 %, inside their band both ways; the TP all-reduces it "
       "times are a small share of the training steps", "hopper"),
    _c(INTERCONNECT, "NVLS_EFFICIENCY", U,
       "set from the one-rack GB200 NVL72 row (calibration); no holdout runs one whole rack: at -5 % NVLS caps "
       "the 2-rack figure (795 GB/s), still inside the band, at +5 % the network does", "blackwell"),
    _c(INTERCONNECT, "NIC_EFFICIENCY", C,
       "set from the NDR/HDR nccl-tests rows (calibration); the holdouts bound it both ways: -5 % takes the "
       "NVIDIA/nccl#1801 ring rows, the 3-node A100 and the Spectrum-X rows below their bands, +5 % the 20-rack "
       "GB200 8 GiB row above. (The training validation rows hide data-parallel traffic behind the backward "
       "pass and cannot tell it.)", "rdma"),
    _c(INTERCONNECT, "NIC_EFFICIENCY", U,
       "set from the two-node A3 Mega row (calibration, 0.90); no holdout runs on GPUDirect-TCPXO at a large size",
       "tcp"),
    _c(INTERCONNECT, "ECMP_EFFICIENCY", U,
       "1 - 1/e by derivation, checked on the static-ECMP calibration row; 5 % moves the MegaScale holdouts by "
       "about 1 %, inside their band"),
    _c(INTERCONNECT, "LEAF_DOMAINS", U,
       "a default leaf group (one 32-node DGX SuperPOD scalable unit) where the plan gives none; no row uses it"),
    _c(INTERCONNECT, "NET_HEAD_GPUS", U,
       "set from the 20-rack GB200 NVL72 16 GiB row (calibration, 8.6); bounded on one side: +5 % takes the "
       "20-rack 8 GiB holdout above its band, -5 % leaves the 2-rack and 20-rack holdouts inside (-5.5 %, "
       "+0.2 %)"),
    _c(INTERCONNECT, "NVLINK_STEP_LATENCY_US", U,
       "an assumption, now used only by all-to-all and send/recv: microseconds per step are invisible in steps "
       "of seconds"),
    _c(INTERCONNECT, "NETWORK_STEP_LATENCY_US", U,
       "an assumption, now used only by all-to-all and send/recv: invisible in steps of seconds", "infiniband"),
    _c(INTERCONNECT, "NETWORK_STEP_LATENCY_US", U, "an assumption (all-to-all, send/recv); no validation row "
       "runs on RoCE in the model", "roce"),
    _c(INTERCONNECT, "NETWORK_STEP_LATENCY_US", U, "an assumption (all-to-all, send/recv); no validation row runs "
       "on this fabric", "ethernet"),
    _c(INTERCONNECT, "NETWORK_STEP_LATENCY_US", U, "an assumption (all-to-all, send/recv); no validation row runs "
       "on EFA", "efa"),
    _c(INTERCONNECT, "NETWORK_STEP_LATENCY_US", U, "an assumption (all-to-all, send/recv); no validation row runs "
       "on a TCP fabric", "tcp"),
]
_NCCL_TABLE = "adopted from NCCL 2.26.2 src/graph/tuning.cc, not fitted; "
CONSTANTS += [
    _c(NCCL, "NCCL_BASE_LATENCY_US", U, _NCCL_TABLE + "a 5 % move shifts a Tree latency by < 0.7 µs, inside the "
       "latency bands", "tree"),
    _c(NCCL, "NCCL_BASE_LATENCY_US", U, _NCCL_TABLE + "part of the single-node Ring latency of the holdouts",
       "ring"),
    _c(NCCL, "NCCL_NVLINK_LATENCY_US", U, _NCCL_TABLE + "Tree inside a domain", "tree"),
    _c(NCCL, "NCCL_NVLINK_LATENCY_US", U, _NCCL_TABLE + "Ring steps on NVLink", "ring"),
    _c(NCCL, "NCCL_NVLINK_LATENCY_US", U, _NCCL_TABLE + "NVLS inside one domain", "nvls"),
    _c(NCCL, "NCCL_NVLINK_LATENCY_US", U, _NCCL_TABLE + "NVLS-Tree's intra-domain part", "nvls_tree"),
    _c(NCCL, "NCCL_NVLINK_LATENCY_US", U, _NCCL_TABLE + "CollNet (SHARP): no published row runs it", "collnet"),
    _c(NCCL, "NCCL_NET_LATENCY_US", U, _NCCL_TABLE + "Tree network steps", "tree"),
    _c(NCCL, "NCCL_NET_LATENCY_US", U, _NCCL_TABLE + "Ring network steps", "ring"),
    _c(NCCL, "NCCL_NET_LATENCY_US", U, _NCCL_TABLE + "NVLS across nodes needs CollNet: not modelled", "nvls"),
    _c(NCCL, "NCCL_NET_LATENCY_US", U, _NCCL_TABLE + "bounded on one side: +5 % takes the two-node H20 NVLS-Tree "
       "512 B holdout above its band, -5 % leaves it inside", "nvls_tree"),
    _c(NCCL, "NCCL_NET_LATENCY_US", U, _NCCL_TABLE + "CollNet (SHARP): no published row runs it", "collnet"),
    _c(NCCL, "NET_OVERHEAD_US", U, _NCCL_TABLE + "multi-node Ring steps; no small-message holdout runs a ring "
       "across nodes"),
    _c(NCCL, "NET_PLUGIN_LATENCY_US", U, "NCCL's built-in InfiniBand transport adds none: 0 by definition",
       "infiniband"),
    _c(NCCL, "NET_PLUGIN_LATENCY_US", U, "NCCL's built-in verbs transport on RoCE adds none: 0", "roce"),
    _c(NCCL, "NET_PLUGIN_LATENCY_US", U, "0 (NCCL's socket and verbs transports report none)", "ethernet"),
    _c(NCCL, "NET_PLUGIN_LATENCY_US", U, "set from the 8-byte two-node p5 row (calibration); its only holdout is "
       "the same run's 1 KiB point, which a 5 % move keeps inside the band", "efa"),
    _c(NCCL, "NET_PLUGIN_LATENCY_US", U, "set from the 8-byte two-node A3 Mega row (calibration); its only holdout "
       "is the same run's 1 KiB point", "tcp"),
    _c(NCCL, "LAUNCH_LATENCY_US", U,
       "set from the 1 KiB GB200 tray row (calibration, 5.2 µs rounded to 5); a 5 % move shifts a small message "
       "by 0.25 µs, inside the latency bands"),
    _c(NCCL, "PROTOCOL_BANDWIDTH", U, _NCCL_TABLE + "LL is used below a few hundred KiB, where time is latency",
       "ring_ll"),
    _c(NCCL, "PROTOCOL_BANDWIDTH", U, _NCCL_TABLE + "LL128 at mid sizes, which no row covers", "ring_ll128"),
    _c(NCCL, "PROTOCOL_BANDWIDTH", U, _NCCL_TABLE + "Tree LL at small sizes, where time is latency", "tree_ll"),
    _c(NCCL, "PROTOCOL_BANDWIDTH", U, _NCCL_TABLE + "single-domain Tree LL128: not chosen on any row",
       "tree_ll128_one_domain"),
    _c(NCCL, "PROTOCOL_BANDWIDTH", U, _NCCL_TABLE + "Tree LL128 at mid sizes, which no row covers", "tree_ll128"),
    _c(NCCL, "LL_MAX_GB_PER_S", U, _NCCL_TABLE + "the LL cap binds only at sizes no row covers", "ampere"),
    _c(NCCL, "LL_MAX_GB_PER_S", U, _NCCL_TABLE + "the LL cap binds only at sizes no row covers", "hopper"),
    _c(NCCL, "LL_MAX_GB_PER_S", U, _NCCL_TABLE + "the LL cap binds only at sizes no row covers", "blackwell"),
    _c(NCCL, "TUNER_TREE_SHARE", U, _NCCL_TABLE + "decides Ring vs Tree only; bounded on one side: +5 % makes "
       "the tuner pick the tree for the 3-node A100 holdout (nccl-tests#119), which then comes out above its "
       "band; -5 % changes no choice"),
]

DEFINITIONS = {
    (TRAINING, "BYTES_BF16"): "bytes of a bf16 element: a unit",
    (NCCL, "SIMPLE"): "the index of NCCL's Simple protocol in (LL, LL128, Simple): a convention",
    (MOE, "BYTES_BF16"): "bytes of a bf16 element: a unit",
}
