"""Per-GPU memory of a training layout, term by term: weights, gradients, optimizer state, activations.

The GPU modelled is one of the first pipeline stage, as in Megatron-LM's estimator
(megatron/training/theoretical_memory_usage.py): it holds the input embedding and, with the 1F1B
schedules, the most microbatches in flight. Every term is in bytes; ``memory`` reports decimal GB.

Weights and optimizer (``weight_and_optimizer_bytes``) follow Megatron-LM's
``compute_weight_and_optimizer_memory``: bf16 weights (2 bytes) and fp32 main gradients (4; Megatron-core's
grad buffer, ``grad_reduce_in_fp32``; ``Parallelism.grad_bytes`` = 2 where a run reduces in bf16) on every
GPU holding the parameter, and fp32 master weights + Adam m, v (``Parallelism.optimizer_bytes`` = 12)
sharded over the data-parallel ranks with the distributed optimizer (``6 + 12/dp`` bytes per parameter; 18
without it). Dense weights are
split over TP; routed-expert weights over TP x EP, their optimizer state over the expert-data-parallel group
``dp cp / ep``. ``Parallelism.shard_gradients`` (FSDP/ZeRO-2, as Llama 3 ran: Dubey et al. 2024 sec. 3.3.2
"Our use of FSDP for Llama 3 shards optimizer states and gradients") shards the gradients like the
optimizer state.

Activations (``activation_bytes_per_token``) are the tensors the forward pass saves for the backward, per
token and transformer layer, as Megatron-core with Transformer Engine saves them:

===============================  ===========================================  =================================
tensor                           elements per token                           split over
===============================  ===========================================  =================================
input of the two norms           2 h  (each norm saves its input)             tp with sequence parallelism
output of the two norms          2 h  (inputs of the QKV and FC1 GEMMs)       tp with sequence parallelism
dropout masks (legacy models)    2 h  bytes (after attention and MLP)         tp with sequence parallelism
Q, K, V after RoPE               q + 2 kv  (GQA: kv = kv heads x head dim;   tp
                                 MLA: the up-projected Q, K, V, and the
                                 query and KV latents; with the
                                 ``mla_up_proj`` recompute the latents only)
attention output                 q  (saved by flash attention and the         tp
                                 output projection: one tensor)
flash attention log-sum-exp      a  fp32                                      tp
scores (no flash attention)      softmax 2 a s + dropout mask a s + dropout   tp
                                 output 2 a s  bytes
MLP                              SwiGLU: FC1 output 2 f + activation output   tp
                                 f; GeLU/squared ReLU: f + f (MoE: f = topk
                                 x expert width)
MoE expert input                 topk h  (tokens after dispatch, FC1 input)   tp with sequence parallelism
===============================  ===========================================  =================================

in bf16 (2 bytes; masks 1 byte). With FP8 (Transformer Engine) the inputs of the four linear layers are
saved as their FP8 casts (1 byte): the two norm outputs, the FC2 input, and an FP8 copy of the attention
output next to flash attention's bf16 one. For a GPT-3 shape (q = kv = h, f = 4 h, GeLU, dropout, no flash
attention) this is Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198) Table 2: ``sbh (34 + 5 a s / h)`` per layer, ``sbh (10 + 24/t + 5 a s / h t)``
with TP, ``sbh/t (34 + 5 a s / h)`` with TP and sequence parallelism, ``34 sbh / t`` with selective
recomputation (which drops the score terms only; flash attention has none). Full recomputation keeps the
layer input only (``2 sbh / t`` with sequence parallelism). Recomputed element-wise modules (``Parallelism.recompute_modules``,
Megatron-core ``--recompute-modules`` with selective granularity; Megatron-Bridge performance configs set
them per GPU, e.g. ``recompute_modules=["layernorm", "moe_act"]``): "layernorm" drops a norm output where
the norm is its own module - with Transformer Engine only an MoE layer's pre-MLP norm (the input norm is
fused into the QKV LayerNormLinear, a dense layer's pre-MLP norm into FC1, and Megatron-core skips fused
norms: ``IdentityOp``); "moe_act" drops the experts' activation output (FC2 input, ``f`` per routed token). Dropout: models are taken to have none
(Llama, Nemotron, GPT-3 as NVIDIA benchmarks it with Megatron-core: dropout 0 saves no mask, since
``torch.nn.functional.dropout`` with p = 0 returns its input) unless ``Parallelism.dropout`` says so; the
default ``None`` means "dropout iff no flash attention" (the 2021 Megatron-LM / Narayanan et al. setting).

Microbatches in flight on the first stage (``layer_microbatches_in_flight``): with 1F1B ``min(m, p)``
microbatches of its layers; with the interleaved schedule Megatron-core's first stage runs
``2 (p-1) + (v-1) p`` warm-up forward passes of model chunks and holds one more in the steady state
(``get_pp_rank_microbatches`` and ``get_schedule_table`` in megatron/core/pipeline_parallel/schedules.py:
forwards go through the chunks in groups of p microbatches), which for equal chunks is Megatron's
``p (1 + (p-1)/(p v))`` microbatches of the stage's layers. The first stage holds the layers Megatron's split gives it
(``layout_rules.stage_layers``: ``ceil(L / p)``, fewer with ``--decoder-first-pipeline-num-layers`` or
``--account-for-embedding-in-pipeline-split``; Llama 3 put one layer less on the first and last stages,
Dubey et al. 2024 sec. 3.3.2). With pp = 1 the
first stage is also the last and holds one microbatch's logits (Megatron: ``4 sbh (1 + V/h) / t``).

Capacity (``capacity_bytes``): the catalog's ``hbm_gb`` is the marketed capacity, which for HBM is binary
(H100 "80 GB" = 5 stacks x 16 GiB = 80 GiB; ``nvidia-smi`` shows 81,559 MiB total for "NVIDIA H100 80GB
HBM3", i.e. 79.6 GiB visible; H200 "141 GB" shows 143,771 MiB = 140.4 GiB, B200 "180 GB" 183,359 MiB =
179.1 GiB); the plan may use ``USABLE_HBM`` of ``hbm_gb x 2^30`` bytes.

Constants of this module (for clusterctl/perf/published/constants.py, which is not on this branch):
CONSTANTS = ["USABLE_HBM", "LOGIT_BYTES"].
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from clusterctl.perf.layout_rules import stage_layers

if TYPE_CHECKING:
    from clusterctl.perf.job import Accelerator, ModelShape, Parallelism

GIB = 2**30
GB = 1e9

USABLE_HBM = 0.96
"""Share of the marketed HBM (``hbm_gb x 2^30`` bytes) a layout may plan for. H100: 0.96 x 85.9 GB = 82.5 GB,
3.0 GB below the 81,559 MiB (85.5 GB) nvidia-smi shows as total for "NVIDIA H100 80GB HBM3" ([S] nvidia-smi
outputs copied in public READMEs), left for the CUDA context, NCCL communicator buffers, cuBLAS workspaces
and the caching allocator's fragmentation ([D]: no published breakdown was found). A calibration constant,
set from the layouts that ran: the tightest is NVIDIA's DGX Cloud Llama 3.1 405B on 576 GPUs (TP 8, PP 9,
CP 2, VP 7, apex distributed Adam, fp32 gradients), 80.9 GB = 0.942 of 80 GiB (tests/perf/test_memory.py);
bounded above by nvidia-smi's 0.995. The Megatron-Bridge Llama 3 70B measurements (tests) show
fragmentation alone can make a 59 GB peak fail without ``expandable_segments``. The earlier 0.9 of 80
decimal GB (72 GB) refused layouts that ran."""

LOGIT_BYTES = 4
"""Bytes per logit of one microbatch on the last stage (fp32 logits for the cross entropy; Megatron-LM
theoretical_memory_usage.py ``4 sbh (1 + V/h)``, which also counts the final norm's output at 4 bytes)."""

BF16 = 2


def _first_stage_layers(model: ModelShape, par: Parallelism) -> int:
    """the first stage's transformer layers, as Megatron's split options give them"""
    return stage_layers(model, par)[0]


def weight_and_optimizer_bytes(model: ModelShape, par: Parallelism, dp: int) -> dict[str, float]:
    """bf16 weights, main gradients and sharded optimizer state of one first-stage GPU, bytes.

    Megatron-LM ``compute_weight_and_optimizer_memory``: the most loaded shard holds ``1/pp`` of the
    layers and the embedding (``V h / tp``; with pp = 1 also the untied output layer); per parameter ``6 + 12/dp`` bytes with the distributed optimizer
    (2 weights + 4 gradients + 12 sharded), 18 without; routed experts with the expert-data-parallel size.
    """
    layers = _first_stage_layers(model, par)
    dense = model.attention_params + 4 * model.hidden + model.dense_params_per_layer_mlp
    experts = model.expert_params_per_layer
    # the input embedding; with pp = 1 this GPU also holds the output layer unless it is tied
    embedding = model.vocab * model.hidden * (2 if par.pp == 1 and not model.tied_embeddings else 1)
    dense_local = (layers * dense + embedding) / par.tp
    expert_local = layers * experts / (par.tp * par.ep)
    params = dense_local + expert_local
    replicas = dp * par.cp
    if par.distributed_optimizer:
        optimizer = par.optimizer_bytes * (dense_local / replicas + expert_local / max(1, replicas // par.ep))
    else:
        optimizer = par.optimizer_bytes * params
    grads = params * par.grad_bytes
    if par.shard_gradients:
        grads = par.grad_bytes * (dense_local / replicas + expert_local / max(1, replicas // par.ep))
    return {"params": params, "weights": params * BF16, "gradients": grads, "optimizer": optimizer}


RECOMPUTE_MODULES = ("layernorm", "moe_act", "mla_up_proj")
"""Megatron-core ``recompute_modules`` entries the model represents (``Parallelism.recompute_modules``)."""


def recomputed_modules(par: Parallelism) -> frozenset[str]:
    """``par.recompute_modules`` checked against what the model represents; full recomputation keeps
    the layer input only, so it supersedes them."""
    unknown = set(par.recompute_modules) - set(RECOMPUTE_MODULES)
    if unknown:
        raise ValueError(f"recompute_modules {sorted(unknown)} not modelled ({', '.join(RECOMPUTE_MODULES)} are)")
    return frozenset() if par.recompute == "full" else frozenset(par.recompute_modules)


def mla_latent_width(model: ModelShape) -> int:
    """Elements per token the MLA up-projections read: the query latent (or the input), the KV latent and the
    rotary key (Megatron-core's ``mla_up_proj`` recomputation saves these instead of Q, K and V)."""
    return (model.q_lora_rank or model.hidden) + model.kv_lora_rank + model.qk_rope_head_dim


def recompute_gemm_flops_per_token_layer(model: ModelShape, par: Parallelism) -> float:
    """GEMM FLOPs per token and layer the recomputed modules add (forward once more): ``mla_up_proj`` re-runs
    the query and key/value up-projections (``2 (q_lora q + kv_lora a (d_nope + d_v))``)."""
    if not (model.mla and "mla_up_proj" in recomputed_modules(par)):
        return 0.0
    q_up = (model.q_lora_rank or 0) * model.q
    kv_up = model.kv_lora_rank * model.heads * (model.qk_nope_head_dim + model.v_head_dim)
    return 2.0 * (q_up + kv_up)


def has_dropout(par: Parallelism) -> bool:
    return (not par.flash_attention) if par.dropout is None else par.dropout


def activation_bytes_per_token(model: ModelShape, par: Parallelism, seq: float | None = None) -> float:
    """Bytes saved for the backward pass per token and transformer layer on one GPU (table in the module
    docstring); ``seq`` is the sequence length one attention sees (default ``model.seq_len``)."""
    t = par.tp
    sp = t if par.sequence_parallel else 1
    h, a = model.hidden, model.heads
    s = model.seq_len if seq is None else seq
    if par.recompute == "full":
        return BF16 * h / sp  # the layer input only
    fp8 = par.precision == "fp8"
    lin = 1 if fp8 else BF16  # bytes of a saved linear-layer input
    mlp_width = model.mlp_width
    replicated = BF16 * 2 * h + lin * 2 * h + (2 * h if has_dropout(par) else 0)
    attention = BF16 * (model.q + 2 * model.kv) + BF16 * model.attention_out + (model.attention_out if fp8 else 0)
    if model.mla:  # the up-projections' inputs: query and KV latents (linear-layer inputs)
        attention += lin * mla_latent_width(model)
    if par.flash_attention:
        attention += 4 * a  # log-sum-exp, fp32
    elif par.recompute != "selective":
        attention += 5 * a * s
    if model.swiglu:
        mlp = BF16 * 2 * mlp_width + lin * mlp_width
    else:
        mlp = BF16 * mlp_width + lin * mlp_width
    if model.experts:  # the tokens dispatched to the experts: FC1 input, topk copies of each token
        replicated += lin * model.topk * h * model.moe_layer_share
    modules = recomputed_modules(par)
    if model.mla and "mla_up_proj" in modules:  # Q, K, V rebuilt from the saved latents in the backward
        attention -= BF16 * (model.q + 2 * model.kv)
    if model.experts and "layernorm" in modules:  # the pre-MLP norm output (router and dispatch input)
        replicated -= lin * h * model.moe_layer_share
    if model.experts and "moe_act" in modules:  # the experts' activation output (FC2 input)
        mlp -= lin * model.expert_ffn * model.topk * model.moe_layer_share
    return replicated / sp + (attention + mlp) / t


def chunk_layers(layers: int, v: int) -> list[int]:
    """The first stage's layers over its ``v`` model chunks, the smaller chunks first (Megatron-LM puts
    the embedding-reduced chunk first)."""
    base, extra = divmod(layers, v)
    return [base] * (v - extra) + [base + 1] * extra


def layer_microbatches_in_flight(model: ModelShape, par: Parallelism, m: int) -> float:
    """Layer x microbatch activations the first stage holds at its peak.

    1F1B: ``min(m, p)`` microbatches of its layers. Interleaved (v > 1): Megatron-core's first stage runs
    ``2 (p-1) + (v-1) p`` warm-up forward chunks (capped at ``m v``) and holds one more in the steady state;
    forwards go through the chunks in groups of ``p`` microbatches (the last group: the rest), so the layers
    held are the sum over those chunks' sizes: ``L_stage p (1 + (p-1)/(p v))`` for equal chunks.
    """
    p, v = par.pp, par.virtual_stages
    layers = _first_stage_layers(model, par)
    if v == 1:
        return layers * min(m, p)
    chunks = chunk_layers(layers, v)
    in_flight = min(m * v, 2 * (p - 1) + (v - 1) * p + 1)
    order = []  # chunk of each forward pass: get_schedule_table, groups of p microbatches (the last: the rest)
    for first in range(0, m, p):
        group = p if first + p < m else m - first
        order += [c for c in range(v) for _ in range(group)]
        if len(order) >= in_flight:
            break
    return sum(chunks[c] for c in order[:in_flight])


def capacity_bytes(acc: Accelerator) -> float:
    """The catalog's HBM is the marketed binary capacity: ``hbm_gb`` GiB."""
    return acc.hbm_gb * GIB


def memory(model: ModelShape, par: Parallelism, dp: int, m: int, acc: Accelerator) -> dict[str, float]:
    """Per-GPU memory of the first pipeline stage, decimal GB; ``hbm`` is the capacity in the same unit and
    ``usable`` the share a layout may fill (``USABLE_HBM``)."""
    w = weight_and_optimizer_bytes(model, par, dp)
    tokens = par.micro_batch * model.seq_len / par.cp
    per_layer = tokens * activation_bytes_per_token(model, par)
    acts = per_layer * layer_microbatches_in_flight(model, par, m)
    # the embedding's input ids (int64) of each microbatch in flight (Megatron: 8 s b p)
    acts += 8 * tokens * min(m, par.pp)
    if par.pp == 1:  # the first stage is the last: one microbatch's logits and final norm output
        acts += tokens * LOGIT_BYTES * (model.hidden + model.vocab) / par.tp
    total = w["weights"] + w["gradients"] + w["optimizer"] + acts
    cap = capacity_bytes(acc)
    return {"weights": w["weights"] / GB, "gradients": w["gradients"] / GB, "optimizer": w["optimizer"] / GB,
            "activations": acts / GB, "total": total / GB, "hbm": cap / GB, "usable": cap * USABLE_HBM / GB,
            "activations_per_layer": per_layer / GB}


__all__ = ["RECOMPUTE_MODULES", "USABLE_HBM", "mla_latent_width", "recompute_gemm_flops_per_token_layer", "activation_bytes_per_token", "capacity_bytes", "chunk_layers",
           "has_dropout", "layer_microbatches_in_flight", "memory", "recomputed_modules", "weight_and_optimizer_bytes"]
