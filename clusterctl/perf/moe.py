"""Mixture of experts: what a step pays for its experts beyond the dense GEMM model of training.py.

training.py times every linear GEMM of a layer at the dense rate (``dense_flops_per_token_layer``: attention
projections, dense MLPs, shared experts and the routed experts' top-k). This module gives the routed experts'
corrections and the MoE-only work, each with its source:

* **Token imbalance** (``moe_load``): the busiest expert-parallel rank's routed tokens over the mean. NVIDIA's
  published MoE benchmarks force-balance the router (Megatron-Bridge performance summary: "we force-balance
  the token distribution among experts and all benchmarks are token-dropless"; Megatron-LM
  ``--moe-router-force-load-balancing``), so their rows set ``expert_load = 1``: they are an upper bound for
  real routing. Otherwise the sampling maximum of a balanced router; a capacity factor with token dropping
  (``Parallelism.capacity_factor``, Switch Transformer) caps it.
* **Grouped-GEMM efficiency** (``expert_gemm_factor``): the experts' narrower matrix and a weight-traffic
  roofline at the tokens per local expert ``M``. Cross-checked, not fitted, against DeepGEMM's H800 tables
  (tests/perf/test_moe_model.py).
* **FP8 per layer** (``fp8_expert_time_factor``): in the DeepSeek-V3 recipe (report sec. 3.3) and Transformer
  Engine every Linear GEMM runs in FP8 (forward, data and weight gradient); the embedding, the output head,
  the router, the norms and attention stay BF16 - training.py already runs those at the BF16 rate. A routed
  expert's GEMM is small: quantising its inputs (MXFP8 row- and column-wise scales per expert) costs a share
  that grows as the expert narrows, so FP8 gains less than the FP8/BF16 matmul ratio. From pytorch/ao's
  MXFP8 MoE benchmark: 1.36x over BF16 at the Llama 4 expert shape (width 8,192), 1.15x at DeepSeek-V3's
  (2,048); for Qwen3-30B-A3B's 768 it predicts no gain, as a Qwen3-30B-A3B run reports (FP8 18.2k, BF16
  19.7k tokens/s/GPU, mlc-ai/pith-train#79 [S]).
* **Dispatch and combine** (``dispatch_combine``): the all-to-all over the NVLink domain while EP x TP fits
  it, through the NICs beyond. With the flex dispatcher (DeepEP/HybridEP, ``Parallelism.moe_flex_dispatcher``)
  NVLink runs at the bandwidth those kernels reach (``A2A_NVLINK_EFFICIENCY``), not NCCL's ring rate, and a
  token crosses the NICs once per remote domain its experts sit in, not once per routed copy
  (``remote_copy_share``); hidden behind the other microbatch's compute when the
  run overlaps it (``Parallelism.overlap_moe_comm``: Megatron-Core ``overlap_moe_expert_parallel_comm``).
* **Permutation and router** traffic through HBM (``permute_router_bytes``).
"""

from __future__ import annotations

import math
from dataclasses import replace

from clusterctl.perf import interconnect
from clusterctl.perf.collectives import ALL_TO_ALL
from clusterctl.perf.interconnect import Interconnect, collective, placement
from clusterctl.perf.job import Accelerator, ModelShape, Parallelism

BYTES_BF16 = 2

EXPERT_WEIGHT_BYTES = {"bf16": 2 * 2 + 8, "fp8": 2 * 1 + 8}
"""HBM bytes per weight element of a GEMM, per microbatch, forward + backward: the weight read for the
forward and for the data gradient (2 bytes in BF16, 1 in FP8), and the weight gradient accumulated into the
fp32 main gradient (read 4 + write 4: Megatron's gradient-accumulation fusion). Against ``6 n`` FLOPs per
weight element for ``n`` tokens, a GEMM is weight-bandwidth-bound below ``n* = rate x bytes / (6 x HBM
bandwidth)`` tokens (its roofline ridge): ``n*`` is ~600-900 tokens on B200/GB200/H100 in FP8. Derived from
the kernels' traffic, not calibrated; dense GEMMs see whole microbatches (thousands of tokens) and their
share of it is inside ``SUSTAINED_GEMM``, experts see ``tokens x topk x ep / experts`` - see
``expert_gemm_factor``."""

MOE_PERMUTE_ELEMENTS = 8
"""Elements moved through HBM per routed token copy and hidden element, forward pass, by the token
dispatcher outside the GEMMs: permute (read h, write h) before the all-to-all, the inverse permutation
after it (read h, write h), and the same pair on the way back with the top-k weighted sum (read h x topk,
write h) - Megatron-Core's ``moe_permute``/``moe_unpermute`` fused kernels. Derived from those kernels'
reads and writes, not calibrated; passes (backward, recomputation) apply as for other element-wise work."""

MOE_ROUTER_ELEMENTS = 6
"""Elements per token and expert moved by the router outside its (tiny) GEMM: the logits written and read
by softmax/sigmoid, the top-k selection and the auxiliary-loss statistics (read, write, read ...). Derived,
not calibrated; only visible for many experts on a narrow model."""

A2A_NVLINK_EFFICIENCY = 0.53
"""Dispatch/combine bandwidth the expert-parallel kernels reach over NVLink / the one-direction NVLink
bandwidth. HybridEP (deepseek-ai/DeepEP branch hybrid-ep, docs/README_Hybrid-EP.md [P]) on GB200 NVL72
(MNNVL), Torch API, 32 SMs, BF16: 32 ranks dispatch 484.2 / combine 464.5 GB/s, 36 ranks 479.0 / 447.9 GB/s
of 900 GB/s: 0.53 and 0.51 [D]. The same kernels on 8 B200 ranks (16 SMs): 535.9 / 530.9 GB/s, 0.59; DeepEP's
own intranode kernels on H800 (EP 8, docs/legacy.md): 153 / 158 GB/s of its ~160 GB/s practical NVLink
maximum (200 GB/s each way: 0.78). Taken from the GB200 figure (the systems of the DeepSeek-V3 rows); NCCL's
ring rate (NVLINK_RING_EFFICIENCY, 0.8) is not what a token dispatcher reaches: it moves uneven, scattered
rows with a few SMs. Through the NICs the dispatchers reach RDMA line rate (DeepEP internode EP 16-64: 43-58
GB/s "bottleneck bandwidth" of 50 GB/s CX7; HybridEP H100 64 ranks 41.5 / 47.7 GB/s), as NIC_EFFICIENCY
already has it."""

FP8_GROUPED_GEMM_FLOOR = 0.69
"""FP8 grouped-GEMM time / BF16 time for an infinitely wide expert: ``f(N) = FLOOR + FP8_CAST_WIDTH / N`` for
expert width ``N`` (per GPU). Solved from the two shapes of pytorch/ao PR #3193 "[mxfp8 moe training] update
benchmarks to force load balancing" [P, PR thread]: Llama 4 16E (total M 131,072, N 8,192, K 5,120) BF16
252.799 ms, MXFP8 185.525 ms (f = 0.734); DeepSeek-V3 (N 2,048, K 7,168) 96.285 vs 83.764 ms (f = 0.870):
``0.870 - 0.734 = c (1/2048 - 1/8192)`` gives c = 371, FLOOR = 0.689 [D]. Two kernel measurements on one
(unnamed, Blackwell: MXFP8) GPU, no training row: a calibration on kernels."""

FP8_CAST_WIDTH = 371
"""The quantisation share of an FP8 expert GEMM, in expert-width units: see FP8_GROUPED_GEMM_FLOOR."""


def moe_load(model: ModelShape, par: Parallelism, local_tokens: float) -> float:
    """Routed tokens on the busiest expert-parallel rank / the mean (>= 1).

    ``par.expert_load`` when the run states it (1.0: NVIDIA's MoE benchmarks force-balance the routing).
    Otherwise the expected maximum of ``ep`` ranks under a balanced router whose top-k choices fall on the
    ranks at random: each rank's load is binomial with mean ``mu = local_tokens x topk`` and variance
    ``mu (1 - 1/ep)``, and the expected maximum of ``ep`` such loads is ``mu + sigma sqrt(2 ln ep)``
    (Gaussian extreme value). An auxiliary-loss router is balanced on average over the batch, so this
    sampling term is what remains per microbatch; it is small for large microbatches (``mu`` of 10^5
    tokens: +0.5 %) and grows as microbatches shrink or EP widens. A capacity factor with token dropping
    (``par.capacity_factor``) caps it: no rank takes more than that times its share.
    """
    if par.expert_load is not None:
        load = max(1.0, par.expert_load)
    elif par.ep <= 1 or not model.experts:
        load = 1.0
    else:
        mu = local_tokens * model.topk
        load = 1.0 + math.sqrt(2 * math.log(par.ep) * (1 - 1 / par.ep) / mu)
    if par.capacity_factor is not None:
        load = min(load, max(1.0, par.capacity_factor))
    return load


def moe_tokens_per_expert(model: ModelShape, par: Parallelism, local_tokens: float) -> float:
    """Mean tokens each local expert's GEMM sees for one microbatch (``M``): the EP group's routed tokens
    over the experts (the all-to-all gathers ``ep`` ranks' tokens onto ``experts / ep`` local experts)."""
    return local_tokens * model.topk * par.ep / model.experts


def gemm_roofline(acc: Accelerator, rate: float, precision: str, n: float, hbm_efficiency: float) -> float:
    """Share of the GEMM rate ``rate`` (FLOP/s) a GEMM over ``n`` tokens reaches when its weights and weight
    gradient also move through HBM (``EXPERT_WEIGHT_BYTES``): ``n / (n + n*)``, the smooth roofline."""
    ridge = rate * EXPERT_WEIGHT_BYTES[precision] / (6 * acc.hbm_tb_per_s * 1e12 * hbm_efficiency)
    return n / (n + ridge)


def expert_gemm_factor(model: ModelShape, par: Parallelism, local_tokens: float, acc: Accelerator, rate: float,
                       shape_half: float, hbm_efficiency: float) -> float:
    """Expert GEMM rate / the dense GEMM rate ``rate`` of the same layout: the narrower expert matrix
    (``moe_ffn / tp`` against ``hidden / tp``, the dense shape factor ``d / (d + shape_half)``) times the
    weight-traffic roofline at the tokens per local expert against the same roofline at the microbatch's
    tokens (which the dense calibration already contains)."""
    d = model.hidden / par.tp
    de = min(model.hidden, model.expert_ffn) / par.tp
    width = (de / (de + shape_half)) / (d / (d + shape_half))
    n = moe_tokens_per_expert(model, par, local_tokens)
    return width * gemm_roofline(acc, rate, par.precision, n, hbm_efficiency) / gemm_roofline(
        acc, rate, par.precision, local_tokens, hbm_efficiency)


def routed_flops_per_token_layer(model: ModelShape) -> float:
    """The routed experts' share of ``dense_flops_per_token_layer`` (forward + backward), the mean per layer."""
    if not model.experts:
        return 0.0
    return 6.0 * model.mlp_matrices * model.hidden * model.expert_ffn * model.topk * model.moe_layer_share


def fp8_expert_time_factor(model: ModelShape, par: Parallelism, fp8_rate: float, bf16_rate: float) -> float:
    """Routed-expert GEMM time in FP8 / its time at the FP8 matmul rate (1 in BF16): the grouped GEMM runs at
    ``FP8_GROUPED_GEMM_FLOOR + FP8_CAST_WIDTH / N`` of its BF16 time (``N`` the expert width per GPU), never
    faster than the FP8 rate itself."""
    if par.precision != "fp8" or not model.experts:
        return 1.0
    n = model.expert_ffn / par.tp
    return max(1.0, (FP8_GROUPED_GEMM_FLOOR + FP8_CAST_WIDTH / n) * fp8_rate / bf16_rate)


def routed_expert_extra_s(model: ModelShape, par: Parallelism, acc: Accelerator, stage_tokens_flops: float,
                          local_tokens: float, load: float, fp8_rate: float, bf16_rate: float, shape_half: float,
                          hbm_efficiency: float) -> float:
    """Seconds the routed experts add to the dense-rate GEMM time of one microbatch on one stage.

    ``stage_tokens_flops``: the stage's layers x the microbatch's tokens x recomputation / (tp x cp), the
    factor training.py times per-layer FLOPs by; ``fp8_rate``: the linear-GEMM rate of the run (FP8 or not).
    The busiest rank's ``load``, the grouped-GEMM factor and the FP8 quantisation share scale the experts'
    time at that rate."""
    if not model.experts:
        return 0.0
    t_expert = stage_tokens_flops * routed_flops_per_token_layer(model) / fp8_rate
    factor = expert_gemm_factor(model, par, local_tokens, acc, fp8_rate, shape_half, hbm_efficiency)
    return t_expert * (load * fp8_expert_time_factor(model, par, fp8_rate, bf16_rate) / factor - 1)


def permute_router_bytes(model: ModelShape, par: Parallelism, load: float) -> float:
    """Bytes per token and layer (forward pass) the token permutation around the all-to-all and the router's
    softmax/top-k move through HBM, the mean over the layers."""
    if not model.experts:
        return 0.0
    return (MOE_PERMUTE_ELEMENTS * model.hidden * model.topk * load
            + MOE_ROUTER_ELEMENTS * model.experts) / par.tp * BYTES_BF16 * model.moe_layer_share


def remote_copy_share(model: ModelShape, ranks: int, per_domain: int) -> float:
    """Bytes a domain-aware dispatcher sends through the NICs / the bytes of the routed copies bound for other
    NVLink domains: DeepEP and HybridEP send a token once to each remote domain that holds one of its experts
    and fan it out over NVLink there (DeepSeek-V3 report sec. 3.2.2). With the top-k experts of a token on
    random ranks, a remote domain of ``g`` of the ``n`` ranks receives the token with probability
    ``1 - (1 - g/n)^k``, against ``k (n - g)/n`` remote copies [D]; 1 when the group fits one domain."""
    n, g, k = ranks, per_domain, model.topk
    domains = -(-n // g)
    if domains <= 1 or k <= 1:
        return 1.0
    distinct = (domains - 1) * (1 - (1 - g / n) ** k)
    return min(1.0, distinct / (k * (n - g) / n))


def dispatch_combine(model: ModelShape, par: Parallelism, ic: Interconnect, layers: int, local_tokens: float,
                     load: float, passes: int, overlap_window_s: float) -> tuple[float, dict | None]:
    """(exposed seconds of one microbatch on one stage, the report's ``communication`` entry) of the expert-
    parallel all-to-all: dispatch + combine per MoE layer and pass (``passes``: 4, 6 with full recomputation).

    Megatron folds EP into DP x CP (expert rank order tp-ep-dp-pp, expert TP = TP): EP ranks are TP apart, so
    EP x TP GPUs of one NVLink domain exchange over NVLink (at ``A2A_NVLINK_EFFICIENCY``) and a wider group
    over the NICs. The busiest rank receives ``load`` x the mean. With ``par.overlap_moe_comm`` the exchange
    hides behind ``overlap_window_s`` of the other microbatch's compute."""
    if par.ep <= 1 or not model.experts:
        return 0.0, None
    size = local_tokens * model.hidden * model.topk * BYTES_BF16 * load
    pl = placement(par.ep, ic, par.tp)
    # the dispatcher's NVLink rate in place of NCCL's ring rate (interconnect.py times NVLink at the latter),
    # and its NICs carrying each token once per remote NVLink domain, not once per routed copy
    if par.moe_flex_dispatcher:
        ring = interconnect.NVLINK_RING_EFFICIENCY
        ic = replace(ic, nvlink_gb_per_s=ic.nvlink_gb_per_s * A2A_NVLINK_EFFICIENCY / ring,
                     nic_gb_per_s=ic.nic_gb_per_s / remote_copy_share(model, pl.ranks, pl.per_domain))
    est, algo = collective(ALL_TO_ALL, size, ic, pl)
    moe_layers = layers * model.moe_layer_share
    total = moe_layers * passes * est.time_s
    exposed = max(0.0, total - overlap_window_s) if par.overlap_moe_comm else total
    return exposed, {"op": "all_to_all", "ranks": par.ep, "bytes": size, "time_s": est.time_s, "algorithm": algo,
                     "ranks_per_nvlink_domain": pl.per_domain, "load": load, "exposed_s": exposed,
                     "tokens_per_expert": moe_tokens_per_expert(model, par, local_tokens)}


__all__ = ["A2A_NVLINK_EFFICIENCY", "EXPERT_WEIGHT_BYTES", "FP8_CAST_WIDTH", "FP8_GROUPED_GEMM_FLOOR",
           "MOE_PERMUTE_ELEMENTS", "MOE_ROUTER_ELEMENTS", "dispatch_combine", "expert_gemm_factor",
           "fp8_expert_time_factor", "gemm_roofline", "moe_load", "moe_tokens_per_expert", "permute_router_bytes",
           "routed_expert_extra_s", "routed_flops_per_token_layer"]
