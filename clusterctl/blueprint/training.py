"""The model a cluster is sized for and how it is trained: what `clusterctl report` estimates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterctl.strict import StrictModel


class ModelSpec(StrictModel):
    """A decoder-only transformer, in Megatron-LM's terms."""

    layers: int = Field(gt=0, le=10_000)  # ten times the deepest transformer trained
    hidden: int = Field(gt=0, le=1_000_000)  # forty times the widest
    """hidden size (d_model)"""
    heads: int = Field(gt=0, le=100_000)
    """attention heads"""
    vocab: int = Field(gt=0, le=100_000_000)
    """vocabulary size (padded, as the embedding has it)"""
    seq_len: int = Field(gt=0, le=1_000_000_000)  # a billion tokens of context
    kv_heads: int | None = Field(default=None, gt=0, le=100_000)
    """query groups for grouped-query attention; default: heads"""
    ffn_hidden: int | None = Field(default=None, gt=0, le=10_000_000)
    """MLP width; default 4 x hidden"""
    swiglu: bool = False
    """gated MLP with three matrices (Llama) instead of two (GPT)"""
    experts: int = Field(default=0, ge=0, le=1_000_000)
    """routed experts per MoE layer (0 for a dense model)"""
    topk: int = Field(default=1, gt=0, le=100_000)
    """experts each token is routed to"""
    moe_ffn_hidden: int | None = Field(default=None, gt=0, le=10_000_000)
    """width of one expert's MLP; default ffn_hidden"""
    tied_embeddings: bool = True
    """input embedding and output layer share weights (GPT) or not (Llama)"""
    head_dim: int | None = Field(default=None, gt=0, le=100_000)
    """attention head dimension; default hidden / heads"""


class TrainingSpec(StrictModel):
    """How the model is trained: batch, parallel layout and the switches that change step time."""

    global_batch: int | None = Field(default=None, gt=0, le=1_000_000_000)
    """sequences per optimizer step; default: enough for ~4M tokens"""
    tp: int | None = Field(default=None, gt=0, le=100_000_000)  # parallel sizes: at most the GPUs of the largest cluster
    """tensor parallel size; leave tp/pp/cp unset to let the report pick the fastest layout that fits"""
    pp: int | None = Field(default=None, gt=0, le=100_000_000)
    cp: int = Field(default=1, gt=0, le=100_000_000)
    ep: int = Field(default=1, gt=0, le=100_000_000)
    dp: int | None = Field(default=None, gt=0, le=100_000_000)
    """default: the GPUs left over"""
    micro_batch: int = Field(default=1, gt=0, le=1_000_000)
    virtual_stages: int = Field(default=1, gt=0, le=100_000)
    """interleaved pipeline chunks per stage"""
    first_stage_layers: int | None = Field(default=None, gt=0, le=10_000)
    """transformer layers on the first pipeline stage, the middle stages splitting the rest evenly
    (Megatron-LM --decoder-first-pipeline-num-layers; DeepSeek-V3's 61 layers on pp 16: last_stage_layers 1)"""
    last_stage_layers: int | None = Field(default=None, gt=0, le=10_000)
    """transformer layers on the last pipeline stage (--decoder-last-pipeline-num-layers)"""
    account_for_embedding: bool | None = None
    """the embedding counts as a layer of the first stage (--account-for-embedding-in-pipeline-split); leave
    the four split options unset to let the report count the embedding and loss where the layers need it"""
    account_for_loss: bool | None = None
    """the loss counts as a layer of the last stage (--account-for-loss-in-pipeline-split; Llama 3 405B's 126
    layers on pp 16 with both: 7, 14 x 8, 7)"""
    recompute: Literal["none", "selective", "full"] = "selective"
    precision: Literal["bf16", "fp8"] = "bf16"
    """fp8: the transformer layers' linear GEMMs in FP8 (Transformer Engine); MFU stays against the BF16 peak"""
    sequence_parallel: bool = True
    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    distributed_optimizer: bool = True
    shard_gradients: bool = False
    """gradients sharded over the data-parallel ranks like the optimizer state (FSDP / ZeRO-2, as Llama 3 ran;
    Megatron-LM's distributed optimizer keeps a full fp32 gradient buffer per GPU): memory only, the
    per-microbatch reduce-scatter this implies is not charged"""
    mfu: float | None = Field(default=None, gt=0, le=1)
    """model FLOPs utilisation to use for the simple throughput form (batch x seq x MFU x peak / FLOPs)"""
    restart_min: float = Field(default=10.0, gt=0, le=525_600)  # a year
    """minutes from an interruption to training again (reschedule, load the checkpoint, warm up)"""
    gpus: int | None = Field(default=None, gt=0, le=100_000_000)  # count x GPUs per server of the largest valid blueprint
    """GPUs the job uses; default all GPUs of the largest GPU node group"""
