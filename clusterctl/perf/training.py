"""Training-step estimate for a transformer on this cluster: FLOPs, step time, tokens/s, MFU, memory.

FLOPs are counted as Megatron-LM counts them (``num_floating_point_operations`` in
megatron/training/training.py): per token, forward + backward = 3 x forward,

    12 h^2 [ (1 + g/a + s/h) q/h  +  f/h x topk x (3/2 if SwiGLU)  ]  per layer,  +  6 h V  for the logits

which for a GPT-3-shaped model is Narayanan et al. 2021's ``72 B s l h^2 (1 + s/6h + V/12lh)``. With full
activation recomputation the layers run their forward twice; the *hardware* count is then Narayanan's
``96 B s l h^2 (1 + s/6h + V/16lh)``. MFU uses the model count (no recomputation) against the datasheet
peak; ``hardware TFLOP/s`` includes recomputation (what Narayanan et al. Table 1 reports).

The step time is built bottom-up for one pipeline stage and one microbatch, then scheduled:

* GEMMs run at the accelerator's measured maximum achievable matmul throughput (``bf16_mamf_tflops``
  in the catalog) times a shape factor for the per-GPU matrix width ``h/tp`` and ``SUSTAINED_GEMM``;
* attention scores run at ``FLASH_ATTENTION_EFFICIENCY`` of that (flash attention skips the masked
  half of a causal score matrix; without it the full matrix is computed and softmax/dropout go through
  HBM);
* element-wise work (layer norms, residual adds, activations) moves its bytes through HBM at
  ``HBM_EFFICIENCY``;
* tensor-parallel all-reduces (or reduce-scatter/all-gather pairs with sequence parallelism) sit on the
  critical path (Megatron-LM's default); context-parallel KV exchange hides behind attention compute;
  expert-parallel all-to-all is exposed; pipeline sends are exposed once per microbatch;
* mixture of experts (clusterctl/perf/moe.py): routed-expert GEMMs on the busiest expert-parallel rank's
  tokens at the grouped-GEMM rate for the tokens per local expert and, in FP8, with the experts' quantisation
  share; token permutation and router traffic through HBM; the all-to-all over NVLink while EP x TP fits the
  domain, exposed unless the run overlaps it;
* 1F1B pipeline schedule: ``(m + (p-1)/v)`` microbatch slots of the slowest stage, which holds the most
  layers of Megatron's split (``layout_rules.stage_layers``; the last one also computes the logits);
* the data-parallel gradient reduction overlaps with the backward pass of the last microbatch only;
  the optimizer step is HBM-bound.

The collective times come from clusterctl.perf.interconnect on the planned NVLink domain and NICs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from statistics import NormalDist

from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    REDUCE_SCATTER,
    SEND_RECV,
)
from clusterctl.perf.interconnect import Interconnect, collective, placement
from clusterctl.perf.job import (
    Accelerator,
    ModelShape,
    Parallelism,
    TrainingConfigError,
)
from clusterctl.perf.layout_rules import check, stage_layers
from clusterctl.perf.memory import USABLE_HBM, memory, recompute_gemm_flops_per_token_layer, recomputed_modules
from clusterctl.perf.moe import dispatch_combine, moe_load, permute_router_bytes, routed_expert_extra_s

SUSTAINED_GEMM = 0.86
"""Training GEMMs against the best-shape MAMF: sustained clocks under full-node power and thermal load,
and GEMM tails/launch gaps between kernels. One constant for every accelerator."""

GEMM_SHAPE_HALF = 128
"""Shape factor ``d / (d + GEMM_SHAPE_HALF)`` for the per-GPU matrix width ``d = h/tp``: narrow matrices
(small hidden sizes split over many GPUs) leave tensor cores idle at tile edges and waves."""

FLASH_ATTENTION_EFFICIENCY = 0.6
"""Attention-score FLOP rate relative to GEMMs (softmax, masking and the online rescale inside the
flash-attention kernel; head dimension 128 kernels reach well below GEMM rates)."""

UNFUSED_ATTENTION_EFFICIENCY = 0.7
"""Batched score GEMMs without flash attention (s x s x d_head per head) relative to large GEMMs."""

HBM_EFFICIENCY = 0.7
"""Element-wise kernels: fraction of HBM bandwidth reached."""

ELEMENTWISE_REPLICATED = 11
"""Elements moved per token and layer in the forward pass by work that is replicated across tensor-
parallel ranks unless sequence parallelism splits it: two layer norms (read h, write h) and two fused
bias-dropout-residual adds (read 2h, write h, mask h/2)."""

BYTES_BF16 = 2
ADAM_BYTES_PER_PARAM_STEP = 30
"""Adam step traffic per parameter: read fp32 param, m, v, grad; write fp32 param, m, v, bf16 param."""


@dataclass(frozen=True)
class TrainingEstimate:
    model: ModelShape
    par: Parallelism
    gpus: int
    dp: int
    microbatches: int
    step_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    breakdown_s: dict[str, float]
    memory_gb: dict[str, float]
    notes: tuple[str, ...] = ()
    comm: dict[str, dict] = field(default_factory=dict)

    @property
    def fits_memory(self) -> bool:
        return self.memory_gb["total"] <= self.memory_gb["hbm"] * USABLE_HBM


def gemm_rate(acc: Accelerator, model: ModelShape, tp: int, precision: str = "bf16") -> float:
    """Sustained FLOP/s of the model's GEMMs on one GPU."""
    d = model.hidden / tp
    mamf = acc.mamf_tflops
    if precision == "fp8":
        if acc.fp8_mamf_tflops is None:
            raise TrainingConfigError(f"{acc.name} has no FP8 matmul rate in the catalog: use precision bf16")
        mamf = acc.fp8_mamf_tflops
    return mamf * 1e12 * SUSTAINED_GEMM * d / (d + GEMM_SHAPE_HALF)


FP8_CAST_BYTES = 3
"""Quantising a GEMM input to FP8: read 2 bytes (BF16), write 1 byte, per element (Transformer Engine
casts activations before each FP8 GEMM and the gradients in the backward pass)."""

STEP_JITTER_CV = 0.014
"""Relative spread (standard deviation / mean) of one node's step time from step to step: OS and daemon
noise, clock and thermal throttling, NIC and PCIe hiccups, uneven kernel tails. Every step ends on
synchronising collectives, so the job waits for the slowest of its N nodes: the expected maximum of N
normal deviations, ``STEP_JITTER_CV x E[max of N standard normals] x step`` (``scale_synchronisation``).
Fitted, not measured directly, on three DGX Cloud weak-scaling tables (same layout and batch per GPU, the
step grows with the node count while the rest of the model stays nearly flat): GPT-3 175B 16 -> 256 nodes
(README_175b: +2.2 %, the rest of the model +0.5 %; CV 0.0167), Nemotron-4 340B 16 -> 256 nodes
(README_340b: +5.0 % vs +3.5 %; 0.0137), Llama 3.1 70B 8 -> 256 nodes (README_70b: +1.8 % vs +0.4 %;
0.0101); 0.014 is their median. Calibration rows: ``scale-dgxc-gpt3-175b-*``,
``scale-dgxc-nemotron4-340b-*``, ``scale-dgxc-llama3.1-70b-*`` (clusterctl/perf/published/fabric.py);
the other ``scale-*`` rows and the MegaScale rows are holdouts."""


def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals], Blom's approximation ``Phi^-1((n - 0.375) / (n + 0.25))``
    (0 for one node; within 5 % of the exact value at 2, 10 and 1,000: tests/perf/test_fabric_scale.py)."""
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def scale_synchronisation(step_s: float, gpus: int, ic: Interconnect) -> float:
    """Seconds per step lost waiting for the slowest node: ``STEP_JITTER_CV x E[max of N] x step`` over the
    job's N nodes (NVLink domains), zero on one node."""
    return STEP_JITTER_CV * expected_max_normal(math.ceil(gpus / max(1, ic.gpus_per_domain))) * step_s


def estimate(model: ModelShape, par: Parallelism, gpus: int, acc: Accelerator, ic: Interconnect) -> TrainingEstimate:
    dp = check(model, par, gpus)
    used = par.tp * par.pp * par.cp * dp
    m = par.global_batch // (dp * par.micro_batch)
    pp, cp, v = par.pp, par.cp, par.virtual_stages
    # the busiest stage sets the pace: Megatron's split (layout_rules.stage_layers) gives each pipeline rank
    # its layers, all v interleaved chunks together (Llama 3's 126 on 16 stages: 7, 14 x 8, 7)
    counts = stage_layers(model, par)
    layers = max(counts)
    tokens = par.micro_batch * model.seq_len          # tokens of one microbatch
    local_tokens = tokens / cp                         # tokens one GPU's layers see
    full = par.recompute == "full"
    rc_dense = 4 / 3 if full else 1.0
    rc_attn = 4 / 3 if par.recompute in ("full", "selective") else 1.0

    load = moe_load(model, par, local_tokens)
    t_gemm, t_attn, t_logit = _matmul_s(model, par, acc, layers, load, rc_dense, rc_attn)
    t_mem = _elementwise_s(model, par, acc, layers, local_tokens, load)

    t_tp, t_cp, t_ep, t_pp, comm = _model_parallel_comm(model, par, ic, layers, local_tokens, load, t_attn,
                                                         t_gemm + t_attn + t_mem)

    stage = t_gemm + t_attn + t_mem + t_tp + t_cp + t_ep + t_pp
    # one microbatch on the slowest stage. The last stage also computes the logits on top of its own layers,
    # which are fewer when the split counts the loss as a layer or gives the last stage fewer layers
    # (--account-for-loss-in-pipeline-split: Llama 3 405B's 126 on 16 stages; --decoder-last-pipeline-num-layers:
    # DeepSeek-V3's 61 on 16 stages, 1 on the last)
    last = (stage - t_pp) * counts[-1] / layers + t_pp + t_logit
    slot = max(stage, last)
    bubble_slots = (pp - 1) / v
    t_pipeline = (m + bubble_slots) * slot

    # data-parallel gradient reduction over the dp x cp ranks that hold the same weights
    params_local = _params_per_gpu(model, par)
    replicas = dp * cp
    dp_exposed, dp_comm = _gradient_reduction(par, ic, params_local, replicas, stage - t_pp)
    if dp_comm is not None:
        comm["dp"] = dp_comm
    opt_params = params_local / (replicas if par.distributed_optimizer else 1)  # sharded as in memory.py
    t_opt = opt_params * ADAM_BYTES_PER_PARAM_STEP / (acc.hbm_tb_per_s * 1e12 * HBM_EFFICIENCY)

    t_sync = scale_synchronisation(t_pipeline + dp_exposed + t_opt, used, ic)
    step = t_pipeline + dp_exposed + t_opt + t_sync
    tokens_step = par.global_batch * model.seq_len
    model_flops = tokens_step * model.flops_per_token
    layer_flops = model.pipeline_layers * (model.dense_flops_per_token_layer * rc_dense
                                  + model.attention_flops_per_token_layer * rc_attn)
    hw_flops = tokens_step * (layer_flops + model.logit_flops_per_token)
    breakdown = {
        "compute": m * (t_gemm + t_attn + t_mem),
        "logits (last stage)": m * (slot - stage),
        "tp communication": m * t_tp,
        "cp communication": m * t_cp,
        "ep communication": m * t_ep,
        "pp communication": m * t_pp,
        "pipeline bubble": bubble_slots * slot,
        "dp communication (exposed)": dp_exposed,
        "optimizer": t_opt,
        "stragglers and jitter (scale)": t_sync,
    }
    mem = memory(model, par, dp, m, acc)
    notes = []
    if used < gpus:
        notes.append(f"the layout uses {used:,} of {gpus:,} GPUs")
    return TrainingEstimate(
        model=model, par=replace(par, dp=dp), gpus=used, dp=dp, microbatches=m, step_s=step,
        tokens_per_s=tokens_step / step,
        model_tflops_per_gpu=model_flops / step / used / 1e12,
        hardware_tflops_per_gpu=hw_flops / step / used / 1e12,
        mfu=model_flops / step / used / (acc.peak_tflops * 1e12),
        breakdown_s=breakdown, memory_gb=mem, notes=tuple(notes), comm=comm)


def _matmul_s(model: ModelShape, par: Parallelism, acc: Accelerator, layers: int, load: float, rc_dense: float,
            rc_attn: float) -> tuple[float, float, float]:
    """(GEMM, attention, logits) seconds of one microbatch on one stage, recomputation included."""
    tp, cp = par.tp, par.cp
    tokens = par.micro_batch * model.seq_len
    local_tokens = tokens / cp
    r_gemm = gemm_rate(acc, model, tp)
    r_linear = gemm_rate(acc, model, tp, par.precision)
    # GEMMs (fwd + bwd [+ recompute]) of one microbatch on one stage
    t_gemm = layers * tokens * model.dense_flops_per_token_layer * rc_dense / (tp * cp) / r_linear
    t_gemm += layers * tokens * recompute_gemm_flops_per_token_layer(model, par) / (tp * cp) / r_linear
    # routed experts (clusterctl/perf/moe.py): the busiest rank's tokens, grouped-GEMM rate, FP8 share
    t_gemm += routed_expert_extra_s(model, par, acc, layers * tokens * rc_dense / (tp * cp), local_tokens, load,
                                    r_linear, r_gemm, GEMM_SHAPE_HALF, HBM_EFFICIENCY)
    if par.flash_attention:
        t_attn = layers * tokens * model.attention_flops_per_token_layer * rc_attn * 0.5 / (tp * cp) / (
            r_gemm * FLASH_ATTENTION_EFFICIENCY)
    else:
        t_attn = layers * tokens * model.attention_flops_per_token_layer * rc_attn / (tp * cp) / (
            r_gemm * UNFUSED_ATTENTION_EFFICIENCY)
    return t_gemm, t_attn, tokens * model.logit_flops_per_token / (tp * cp) / r_gemm


def _elementwise_s(model: ModelShape, par: Parallelism, acc: Accelerator, layers: int, local_tokens: float,
                   load: float) -> float:
    """Seconds of element-wise HBM traffic of one microbatch on one stage (norms, activations, residuals,
    FP8 casts, MoE permutation; recomputed modules once more)."""
    tp, cp = par.tp, par.cp
    full = par.recompute == "full"
    rep = ELEMENTWISE_REPLICATED * model.hidden / (tp if par.sequence_parallel else 1)
    mlp_width = model.mlp_width
    part = ((3 if model.swiglu else 2) * mlp_width + 2 * (model.q + 2 * model.kv)) / tp
    if not par.flash_attention:
        part += 4.5 * model.heads * model.seq_len / tp / cp
    passes = 4 if full else 3
    elem_bytes = (rep + part) * BYTES_BF16
    if par.precision == "fp8":  # inputs of the four linear layers (qkv, proj, fc1, fc2) are cast to FP8
        elem_bytes += (2 * model.hidden + model.q + mlp_width) / tp * FP8_CAST_BYTES
    elem_bytes += permute_router_bytes(model, par, load)  # MoE: token permutation, router softmax/top-k
    # recomputed element-wise modules (Parallelism.recompute_modules): one more forward pass of each
    modules, rc_elements = recomputed_modules(par), 0.0
    if model.experts and "layernorm" in modules:  # the pre-MLP norm: read h, write h
        rc_elements += 2 * model.hidden / (tp if par.sequence_parallel else 1)
    if model.experts and "moe_act" in modules:  # the experts' activation: read the FC1 output, write f
        rc_elements += (3 if model.swiglu else 2) * model.expert_ffn * model.topk * model.moe_layer_share / tp
    return layers * local_tokens * (elem_bytes * passes + rc_elements * BYTES_BF16) / (
        acc.hbm_tb_per_s * 1e12 * HBM_EFFICIENCY)


def _model_parallel_comm(model: ModelShape, par: Parallelism, ic: Interconnect, layers: int, local_tokens: float,
                         load: float, t_attn: float, overlap_window_s: float = 0.0
                         ) -> tuple[float, float, float, float, dict[str, dict]]:
    """(tp, cp, ep, pp) seconds of one microbatch on one stage, and what each collective is (the report's
    ``communication``); ``overlap_window_s``: the stage's compute an overlapped all-to-all can hide behind."""
    tp, pp, cp, v = par.tp, par.pp, par.cp, par.virtual_stages
    full = par.recompute == "full"
    comm: dict[str, dict] = {}
    # tensor- and expert-parallel collectives: 2 per layer forward, 2 backward, 2 more when recomputing
    per_layer = 6 if full else 4
    t_tp = 0.0
    if tp > 1:
        size = local_tokens * model.hidden * BYTES_BF16
        est, algo = collective(ALL_REDUCE, size, ic, placement(tp, ic, 1))
        t_tp = layers * per_layer * est.time_s
        comm["tp"] = {"op": "all_reduce", "ranks": tp, "bytes": size, "per_microbatch": int(layers * per_layer),
                      "time_s": est.time_s, "busbw_gb_per_s": est.busbw_gb_per_s, "algorithm": algo}
    # context parallel: ring exchange of K and V, hidden behind attention when it can be
    t_cp = 0.0
    if cp > 1:
        size = 2 * local_tokens * model.kv / tp * BYTES_BF16  # this rank's K and V heads
        est, algo = collective(SEND_RECV, size, ic, placement(2, ic, tp))
        t_cp = max(0.0, layers * 3 * (cp - 1) * est.time_s - t_attn)  # forward once, backward twice
        comm["cp"] = {"op": "send_recv", "ranks": cp, "bytes": size, "time_s": est.time_s, "algorithm": algo}
    # expert parallel: dispatch + combine all-to-all, forward and backward (+ recompute): clusterctl/perf/moe.py
    t_ep, ep_comm = dispatch_combine(model, par, ic, layers, local_tokens, load, per_layer, overlap_window_s)
    if ep_comm is not None:
        comm["ep"] = ep_comm
    # pipeline: activations forward, gradients backward, scattered over the tp ranks
    t_pp = 0.0
    if pp > 1:
        size = local_tokens * model.hidden * BYTES_BF16 / tp
        est, algo = collective(SEND_RECV, size, ic, placement(2, ic, ic.gpus_per_domain))
        t_pp = 2 * v * est.time_s
        comm["pp"] = {"op": "send_recv", "ranks": 2, "bytes": size, "time_s": est.time_s, "algorithm": algo}
    return t_tp, t_cp, t_ep, t_pp, comm


def _gradient_reduction(par: Parallelism, ic: Interconnect, params_local: float, replicas: int,
                        stage_work: float) -> tuple[float, dict | None]:
    """(seconds of it left exposed, its ``communication`` entry; 0 and None on one replica). With the
    distributed optimizer: reduce-scatter of the gradients (grad_bytes) after the last microbatch's
    backward, all-gather of the updated bf16 weights before the next step's first forward; without it,
    one all-reduce of the gradients. With overlap_grad_reduce they hide behind the backward (2/3 of the
    stage's work, ``stage_work``) and the forward (1/3)."""
    if replicas <= 1:
        return 0.0, None
    bwd_window = (2 / 3) * stage_work if par.overlap_grad_reduce else 0.0
    fwd_window = (1 / 3) * stage_work if par.overlap_grad_reduce else 0.0
    pl = placement(replicas, ic, par.tp)
    grads = params_local * par.grad_bytes
    if par.distributed_optimizer:
        rs, algo = collective(REDUCE_SCATTER, grads, ic, pl)
        ag, _ = collective(ALL_GATHER, params_local * BYTES_BF16, ic, pl)
        t_dp = rs.time_s + ag.time_s
        return (max(0.0, rs.time_s - bwd_window) + max(0.0, ag.time_s - fwd_window),
                {"op": "reduce_scatter + all_gather", "ranks": replicas, "bytes": grads,
                 "param_bytes": params_local * BYTES_BF16, "time_s": t_dp,
                 "busbw_gb_per_s": rs.busbw_gb_per_s, "algorithm": algo})
    ar, algo = collective(ALL_REDUCE, grads, ic, pl)
    return (max(0.0, ar.time_s - bwd_window),
            {"op": "all_reduce", "ranks": replicas, "bytes": grads, "time_s": ar.time_s,
             "busbw_gb_per_s": ar.busbw_gb_per_s, "algorithm": algo})


def _params_per_gpu(model: ModelShape, par: Parallelism) -> float:
    """Parameters one GPU holds (the first pipeline stage, which also holds the embedding)."""
    dense_layer = model.attention_params + 4 * model.hidden
    per_layer = (dense_layer + model.dense_params_per_layer_mlp) / par.tp + model.expert_params_per_layer / (
        par.tp * par.ep)
    return max(stage_layers(model, par)) * per_layer + model.vocab * model.hidden / par.tp


def simple_throughput(flops_per_token: float, gpus: int, peak_tflops: float, mfu: float) -> float:
    """The brief's simple form: tokens/s = GPUs x peak x MFU / FLOPs per token."""
    if not 0 < mfu <= 1:
        raise TrainingConfigError(f"mfu must be in (0, 1], got {mfu!r}")
    return gpus * peak_tflops * 1e12 * mfu / flops_per_token


def dense_flops_per_token(params: float) -> float:
    """6 N FLOPs per token (forward + backward) when only the parameter count is known."""
    return 6.0 * params


__all__ = ["TrainingEstimate", "dense_flops_per_token", "estimate", "gemm_rate", "simple_throughput"]
