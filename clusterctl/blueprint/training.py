"""The model a cluster is sized for and how it is trained: what `clusterctl report` estimates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from clusterctl.strict import StrictModel

MLA_FIELDS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
"""the multi-head latent attention sizes that go together (q_lora_rank is optional)"""


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
    shared_experts: int = Field(default=0, ge=0, le=100_000)
    """experts every token of an MoE layer passes through besides its routed ones, each moe_ffn_hidden wide
    (DeepSeek-V3 and Kimi-K2: 1; Llama 4: 1); their weights are dense (split over TP, not EP)"""
    leading_dense_layers: int = Field(default=0, ge=0, le=10_000)
    """the first layers of an MoE model with a dense MLP of ffn_hidden instead of experts (DeepSeek-V3: 3,
    ``first_k_dense_replace``; Megatron-LM ``--moe-layer-freq [0]*3+[1]*58``)"""
    moe_layer_interval: int = Field(default=1, gt=0, le=10_000)
    """every how many layers (after the leading dense ones) one has experts; the others have a dense MLP of
    ffn_hidden (Llama 4 Maverick: 2, NeMo ``moe_layer_freq=[0,1]*24``; Megatron-LM ``--moe-layer-freq``)"""
    mtp_depth: int = Field(default=0, ge=0, le=1_000)
    """multi-token prediction modules after the last layer (DeepSeek-V3: 1). Each is one more transformer
    layer (MoE when the model's last layer is), a 2h x h projection and one more pass of the output layer
    (Megatron-LM ``--mtp-num-layers``)"""
    q_lora_rank: int | None = Field(default=None, gt=0, le=1_000_000)
    """multi-head latent attention (MLA): width of the compressed query (DeepSeek-V3: 1536); default: the
    query is projected directly"""
    kv_lora_rank: int | None = Field(default=None, gt=0, le=1_000_000)
    """MLA: width of the compressed key-value latent (DeepSeek-V3: 512); set with qk_nope_head_dim,
    qk_rope_head_dim and v_head_dim, it makes the attention MLA"""
    qk_nope_head_dim: int | None = Field(default=None, gt=0, le=100_000)
    """MLA: per-head query/key width without rotary embedding (DeepSeek-V3: 128)"""
    qk_rope_head_dim: int | None = Field(default=None, gt=0, le=100_000)
    """MLA: per-head width of the decoupled rotary query/key, the rotary key shared by all heads (DeepSeek-V3: 64)"""
    v_head_dim: int | None = Field(default=None, gt=0, le=100_000)
    """MLA: per-head value width (DeepSeek-V3: 128)"""

    @model_validator(mode="after")
    def _mla_and_moe_options_fit(self) -> "ModelSpec":
        given = [f for f in MLA_FIELDS if getattr(self, f) is not None]
        if given and len(given) < len(MLA_FIELDS):
            missing = [f for f in MLA_FIELDS if getattr(self, f) is None]
            raise ValueError(f"multi-head latent attention needs {', '.join(MLA_FIELDS)} together; "
                             f"missing {', '.join(missing)}")
        if self.q_lora_rank is not None and not given:
            raise ValueError("q_lora_rank is a multi-head latent attention size: give kv_lora_rank, "
                             "qk_nope_head_dim, qk_rope_head_dim and v_head_dim with it")
        if (self.shared_experts or self.leading_dense_layers or self.moe_layer_interval > 1) and not self.experts:
            raise ValueError("shared_experts, leading_dense_layers and moe_layer_interval describe an MoE model: "
                             "set experts")
        if self.leading_dense_layers >= self.layers:
            raise ValueError(f"leading_dense_layers {self.leading_dense_layers} leaves no MoE layer of "
                             f"{self.layers}")
        return self


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
    expert_load: float | None = Field(default=None, ge=1, le=1000)
    """MoE: routed tokens on the busiest expert-parallel rank / the mean (1: a force-balanced router, as
    NVIDIA's benchmarks run; a trained router's skew, e.g. 1.2); default: the sampling maximum of a balanced
    router"""
    capacity_factor: float | None = Field(default=None, ge=1, le=1000)
    """MoE with token dropping: no expert-parallel rank takes more than this times its share; default dropless"""
    moe_flex_dispatcher: bool = False
    """MoE: Megatron-Core's flex token dispatcher (DeepEP / HybridEP) instead of the NCCL all-to-all"""
    overlap_moe_comm: bool = False
    """MoE: the dispatch/combine all-to-all overlaps the other microbatch's compute
    (``overlap_moe_expert_parallel_comm``)"""
    mfu: float | None = Field(default=None, gt=0, le=1)
    """model FLOPs utilisation to use for the simple throughput form (batch x seq x MFU x peak / FLOPs)"""
    restart_min: float = Field(default=10.0, gt=0, le=525_600)  # a year
    """minutes from an interruption to training again (reschedule, load the checkpoint, warm up)"""
    gpus: int | None = Field(default=None, gt=0, le=100_000_000)  # count x GPUs per server of the largest valid blueprint
    """GPUs the job uses; default all GPUs of the largest GPU node group"""
