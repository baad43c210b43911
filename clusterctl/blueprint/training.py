"""The model a cluster is sized for and how it is trained: what `clusterctl report` estimates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from clusterctl.blueprint.base import StrictModel


class ModelSpec(StrictModel):
    """A decoder-only transformer, in Megatron-LM's terms."""

    layers: PositiveInt
    hidden: PositiveInt
    """hidden size (d_model)"""
    heads: PositiveInt
    """attention heads"""
    vocab: PositiveInt
    """vocabulary size (padded, as the embedding has it)"""
    seq_len: PositiveInt
    kv_heads: PositiveInt | None = None
    """query groups for grouped-query attention; default: heads"""
    ffn_hidden: PositiveInt | None = None
    """MLP width; default 4 x hidden"""
    swiglu: bool = False
    """gated MLP with three matrices (Llama) instead of two (GPT)"""
    experts: int = Field(default=0, ge=0)
    """routed experts per MoE layer (0 for a dense model)"""
    topk: PositiveInt = 1
    """experts each token is routed to"""
    moe_ffn_hidden: PositiveInt | None = None
    """width of one expert's MLP; default ffn_hidden"""
    tied_embeddings: bool = True
    """input embedding and output layer share weights (GPT) or not (Llama)"""
    head_dim: PositiveInt | None = None
    """attention head dimension; default hidden / heads"""


class TrainingSpec(StrictModel):
    """How the model is trained: batch, parallel layout and the switches that change step time."""

    global_batch: PositiveInt | None = None
    """sequences per optimizer step; default: enough for ~4M tokens"""
    tp: PositiveInt | None = None
    """tensor parallel size; leave tp/pp/cp unset to let the report pick the fastest layout that fits"""
    pp: PositiveInt | None = None
    cp: PositiveInt = 1
    ep: PositiveInt = 1
    dp: PositiveInt | None = None
    """default: the GPUs left over"""
    micro_batch: PositiveInt = 1
    virtual_stages: PositiveInt = 1
    """interleaved pipeline chunks per stage"""
    recompute: Literal["none", "selective", "full"] = "selective"
    precision: Literal["bf16", "fp8"] = "bf16"
    """fp8: the transformer layers' linear GEMMs in FP8 (Transformer Engine); MFU stays against the BF16 peak"""
    sequence_parallel: bool = True
    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    distributed_optimizer: bool = True
    mfu: PositiveFloat | None = Field(default=None, le=1)
    """model FLOPs utilisation to use for the simple throughput form (batch x seq x MFU x peak / FLOPs)"""
    restart_min: PositiveFloat = 10.0
    """minutes from an interruption to training again (reschedule, load the checkpoint, warm up)"""
    gpus: PositiveInt | None = None
    """GPUs the job uses; default all GPUs of the largest GPU node group"""
