"""The training job the performance model estimates: the model's shape, its parallel layout, the
accelerator it runs on, and the error for a combination that does not fit.

Shared by every module of the model (memory, layout rules, training estimate, workload); imports no other
module of clusterctl.perf.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.blueprint.training import ModelSpec


class ModelShape(ModelSpec):
    """A decoder-only transformer in Megatron-LM terms: the blueprint's ``workload.model`` with a name.

    Layers are counted as Megatron-LM's pipeline places them: the ``layers`` decoder layers and the
    ``mtp_depth`` multi-token prediction layers (``pipeline_layers``). Per-layer figures (FLOPs, parameters)
    are means over those layers, so that ``pipeline_layers x`` the mean is the whole model: an MoE model's
    leading dense layers and its MoE layers differ, and a stage's share is its layers times the mean.
    """

    name: str

    # --- widths --------------------------------------------------------------------------------
    @property
    def mla(self) -> bool:
        """multi-head latent attention (DeepSeek-V2/V3, Kimi-K2)"""
        return self.kv_lora_rank is not None

    @property
    def qk_head_dim(self) -> int:
        """per-head query/key width (MLA: the non-rotary and the rotary part)"""
        if self.mla:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim or self.hidden // self.heads

    @property
    def q(self) -> int:
        return self.heads * self.qk_head_dim

    @property
    def kv(self) -> int:
        """K and V width per token (MLA: the mean of the up-projected K and V, so that ``q + 2 kv`` is Q, K
        and V together)"""
        if self.mla:
            return self.heads * (self.qk_head_dim + self.v_head_dim) // 2
        return (self.kv_heads or self.heads) * self.qk_head_dim

    @property
    def attention_out(self) -> int:
        """width of the attention output, the output projection's input (MLA: heads x v_head_dim)"""
        return self.heads * self.v_head_dim if self.mla else self.q

    @property
    def ffn(self) -> int:
        return self.ffn_hidden or 4 * self.hidden

    @property
    def expert_ffn(self) -> int:
        return self.moe_ffn_hidden or self.ffn

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.swiglu else 2

    # --- layers --------------------------------------------------------------------------------
    @property
    def pipeline_layers(self) -> int:
        """transformer layers the pipeline places: the decoder's and the multi-token prediction layers"""
        return self.layers + self.mtp_depth

    @property
    def moe_layers(self) -> int:
        """layers with experts, among ``pipeline_layers`` (an MTP layer is MoE like the last decoder layer)"""
        if not self.experts:
            return 0
        return (self.layers - self.leading_dense_layers) // self.moe_layer_interval + self.mtp_depth

    @property
    def decoder_moe_layers(self) -> int:
        """layers with experts among the decoder's ``layers`` (the MTP layers left out)"""
        return self.moe_layers - (self.mtp_depth if self.experts else 0)

    @property
    def dense_mlp_layers(self) -> int:
        return self.pipeline_layers - self.moe_layers

    @property
    def moe_layer_share(self) -> float:
        """share of the pipeline layers with experts (1 for an MoE model without dense layers)"""
        return self.moe_layers / self.pipeline_layers

    @property
    def mlp_width(self) -> float:
        """MLP width a token passes through, the mean per layer: ffn_hidden in a dense layer, (top-k + shared
        experts) x moe_ffn_hidden in an MoE layer"""
        moe = (self.topk + self.shared_experts) * self.expert_ffn
        return (self.dense_mlp_layers * self.ffn + self.moe_layers * moe) / self.pipeline_layers

    # --- parameters (per layer: the mean over pipeline_layers) ------------------------------------
    @property
    def attention_params(self) -> int:
        h, a = self.hidden, self.heads
        if not self.mla:
            return h * (self.q + 2 * self.kv) + self.q * h
        # DeepSeek-V3 sec. 2.1.1: W^DQ, W^UQ (+ W^QR) or W^Q; W^DKV, W^KR; W^UK, W^UV; W^O; latent norms
        q = (h * self.q_lora_rank + self.q_lora_rank * self.q + self.q_lora_rank) if self.q_lora_rank else h * self.q
        kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank * a * (
            self.qk_nope_head_dim + self.v_head_dim) + self.kv_lora_rank
        return q + kv + a * self.v_head_dim * h

    @property
    def dense_mlp_params(self) -> int:
        """one dense MLP of ffn_hidden"""
        return self.mlp_matrices * self.hidden * self.ffn

    @property
    def shared_expert_params(self) -> int:
        """the shared experts of one MoE layer (dense weights: split over TP, replicated over EP)"""
        return self.shared_experts * self.mlp_matrices * self.hidden * self.expert_ffn

    @property
    def routed_expert_params(self) -> int:
        """the routed experts and the router of one MoE layer (split over EP)"""
        return self.experts * self.mlp_matrices * self.hidden * self.expert_ffn + self.hidden * self.experts

    @property
    def dense_params_per_layer_mlp(self) -> float:
        """mean per layer of the MLP weights split over TP only: dense MLPs and shared experts"""
        total = self.dense_mlp_layers * self.dense_mlp_params + self.moe_layers * self.shared_expert_params
        return total / self.pipeline_layers

    @property
    def expert_params_per_layer(self) -> float:
        """mean per layer of the routed experts' weights (split over TP x EP)"""
        return self.moe_layers * self.routed_expert_params / self.pipeline_layers

    @property
    def mtp_params(self) -> int:
        """parameters of the MTP modules beyond their transformer layer: the 2h x h projection and two norms
        (the embedding and output layer are the main model's)"""
        return self.mtp_depth * (2 * self.hidden * self.hidden + 2 * self.hidden)

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> int:
        """the main model's parameters (DeepSeek-V3: 671 B; without the MTP modules, as the report counts)"""
        moe = self.decoder_moe_layers
        return self.layers * (self.attention_params + 4 * self.hidden) + (self.layers - moe) * self.dense_mlp_params \
            + moe * (self.shared_expert_params + self.routed_expert_params) + self.embedding_params

    @property
    def active_params(self) -> int:
        if not self.experts:
            return self.params
        active_moe = self.shared_expert_params + self.topk * self.mlp_matrices * self.hidden * self.expert_ffn
        moe = self.decoder_moe_layers
        return self.layers * (self.attention_params + 4 * self.hidden) + (self.layers - moe) * self.dense_mlp_params \
            + moe * active_moe + self.embedding_params

    # --- FLOPs per token (Megatron-LM, forward + backward; per layer: the mean over pipeline_layers) ----
    @property
    def attention_linear_flops_per_token_layer(self) -> float:
        """Q, K, V and output projections. MLA as Megatron-LM counts it (``num_floating_point_operations``:
        query down/up projection, KV down projection with the rotary key, K/V up projection, output)."""
        if not self.mla:
            return 6.0 * (2 * self.hidden * self.q + 2 * self.hidden * self.kv)
        h, a = self.hidden, self.heads
        q = (self.q_lora_rank * (h + self.q + 1)) if self.q_lora_rank else h * self.q
        kv = self.kv_lora_rank * (h + a * (self.qk_nope_head_dim + self.v_head_dim) + 1) + h * self.qk_rope_head_dim
        return 6.0 * (q + kv + a * self.v_head_dim * h)

    @property
    def mlp_flops_per_token_layer(self) -> float:
        """dense MLPs, shared experts and the routed experts' top-k, the mean per layer"""
        return 6.0 * self.mlp_matrices * self.hidden * self.mlp_width

    @property
    def dense_flops_per_token_layer(self) -> float:
        """every linear GEMM of a layer (projections, MLPs, experts), the mean per layer"""
        return self.attention_linear_flops_per_token_layer + self.mlp_flops_per_token_layer

    @property
    def attention_flops_per_token_layer(self) -> float:
        """attention scores ``QK^T`` and ``softmax V`` over the whole (non-causal) sequence, as Megatron-LM
        counted them until 2025 and NeMo 2.0 (25.02) still did: ``6 s a (d_qk + d_v)`` (``12 s q`` for MHA/GQA)"""
        return 6.0 * self.seq_len * (self.q + self.attention_out)

    @property
    def logit_flops_per_token(self) -> float:
        """the output layer, once more per MTP module, and the MTP modules' projection and norms"""
        return 6.0 * self.hidden * self.vocab * (1 + self.mtp_depth) + \
            6.0 * self.mtp_depth * (2 * self.hidden * self.hidden + 3 * self.hidden)

    @property
    def flops_per_token(self) -> float:
        return self.pipeline_layers * (self.dense_flops_per_token_layer + self.attention_flops_per_token_layer) + \
            self.logit_flops_per_token

    @property
    def flops_per_token_causal(self) -> float:
        """``flops_per_token`` with the causal half of the attention scores only, as Megatron-LM (2025 on),
        Megatron-Bridge and NeMo from 25.04 count it: the FLOPs behind their published TFLOP/s"""
        return self.flops_per_token - self.pipeline_layers * self.attention_flops_per_token_layer / 2


@dataclass(frozen=True)
class Parallelism:
    """How the job is laid out and run (Megatron-LM options in brackets)."""

    global_batch: int
    """sequences per step"""
    tp: int = 1
    pp: int = 1
    dp: int | None = None
    """default: the GPUs left over, ``gpus / (tp pp cp)``"""
    cp: int = 1
    ep: int = 1
    micro_batch: int = 1
    virtual_stages: int = 1
    """interleaved 1F1B model chunks per stage [--num-layers-per-virtual-pipeline-stage]"""
    recompute: str = "none"
    """none | selective | full [--recompute-granularity]"""
    sequence_parallel: bool = True
    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    distributed_optimizer: bool = True
    grad_bytes: int = 4
    """bytes per gradient element in the data-parallel reduction (4: fp32 accumulation and reduce)"""
    precision: str = "bf16"
    """bf16 | fp8: FP8 runs the transformer layers' linear GEMMs in FP8 (Transformer Engine); attention,
    the logits and everything element-wise stay in BF16"""
    expert_load: float | None = None
    """MoE: routed tokens on the busiest expert-parallel rank / the mean. None: derived (``moe_load``);
    1.0: force-balanced routing (NVIDIA's MoE benchmarks); a capacity factor with token dropping caps it"""
    capacity_factor: float | None = None
    """MoE with token dropping: no expert-parallel rank takes more than this times its share of the routed
    tokens (the rest are dropped; Switch Transformer's capacity factor, Megatron-LM
    ``--moe-expert-capacity-factor``); None: dropless"""
    overlap_moe_comm: bool = False
    """MoE: the dispatch/combine all-to-all of one microbatch overlaps the other microbatch's compute
    (Megatron-Core ``overlap_moe_expert_parallel_comm``, the 1F1B A2A overlap; DeepSeek-V3's DualPipe does the
    same); False: exposed"""
    moe_flex_dispatcher: bool = False
    """MoE: Megatron-Core's flex token dispatcher with DeepEP or HybridEP (``--moe-token-dispatcher-type flex``):
    a token crosses the NICs once per remote NVLink domain and NVLink runs at the dispatcher's measured rate
    (clusterctl/perf/moe.py); False: the NCCL all-to-all dispatcher (Megatron's default), every routed copy sent"""
    dropout: bool | None = None
    """the model trains with dropout (masks saved for the backward); None: only without flash attention
    (2021 Megatron-LM GPT runs); modern models (Llama, Nemotron) use none"""
    shard_gradients: bool = False
    """gradients sharded over the data-parallel ranks like the optimizer state (FSDP / ZeRO-2, Llama 3)"""
    first_stage_layers: int | None = None
    """transformer layers on the first pipeline stage; the middle stages split the rest evenly
    [--decoder-first-pipeline-num-layers]"""
    last_stage_layers: int | None = None
    """transformer layers on the last pipeline stage [--decoder-last-pipeline-num-layers]"""
    account_for_embedding: bool | None = None
    """the embedding counts as one layer of the first stage in the split [--account-for-embedding-in-pipeline-split];
    None with the three other split options None too: the layout rules choose (layout_rules.split_options)"""
    account_for_loss: bool | None = None
    """the loss counts as one layer of the last stage [--account-for-loss-in-pipeline-split]"""
    pipeline_layout: str | None = None
    """every stage's layers [--pipeline-model-parallel-layout]: clusterctl/perf/pipeline_layout.py"""
    optimizer_bytes: int = 12
    """optimizer state per parameter: fp32 master weights + Adam m, v (12); 6 with bf16 state (NeMo
    ``optim.dtype: bf16``)"""
    recompute_modules: tuple[str, ...] = ()
    """element-wise modules recomputed in the backward instead of saved [--recompute-modules, with
    --recompute-granularity selective]; modelled: "layernorm" (Megatron-core recomputes a norm only where
    it is a separate module: with Transformer Engine the input norm is fused into the QKV LayerNormLinear and
    a dense layer's pre-MLP norm into FC1, so it frees the MoE layers' pre-MLP norm output) and "moe_act"
    (the experts' activation output, FC2's input). Others are rejected (``memory.RECOMPUTE_MODULES``)"""


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_tflops: float
    mamf_tflops: float
    mamf_source: str
    hbm_gb: float
    hbm_tb_per_s: float
    fp8_mamf_tflops: float | None = None
    fp8_peak_tflops: float | None = None


class TrainingConfigError(ValueError):
    """The model and parallelism do not fit together (message says what to change)."""


__all__ = ["Accelerator", "ModelShape", "Parallelism", "TrainingConfigError"]
