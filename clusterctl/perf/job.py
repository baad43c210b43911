"""The training job the performance model estimates: the model's shape, its parallel layout, the
accelerator it runs on, and the error for a combination that does not fit.

Shared by every module of the model (memory, layout rules, training estimate, workload); imports no other
module of clusterctl.perf.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.blueprint.training import ModelSpec


class ModelShape(ModelSpec):
    """A decoder-only transformer in Megatron-LM terms: the blueprint's ``workload.model`` with a name."""

    name: str

    @property
    def q(self) -> int:
        return self.heads * (self.head_dim or self.hidden // self.heads)

    @property
    def kv(self) -> int:
        return (self.kv_heads or self.heads) * (self.head_dim or self.hidden // self.heads)

    @property
    def ffn(self) -> int:
        return self.ffn_hidden or 4 * self.hidden

    @property
    def expert_ffn(self) -> int:
        return self.moe_ffn_hidden or self.ffn

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.swiglu else 2

    # --- parameters ----------------------------------------------------------------------------
    @property
    def attention_params(self) -> int:
        return self.hidden * (self.q + 2 * self.kv) + self.q * self.hidden

    @property
    def mlp_params(self) -> int:
        """all experts"""
        if self.experts:
            return self.experts * self.mlp_matrices * self.hidden * self.expert_ffn + self.hidden * self.experts
        return self.mlp_matrices * self.hidden * self.ffn

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> int:
        return self.layers * (self.attention_params + self.mlp_params + 4 * self.hidden) + self.embedding_params

    @property
    def active_params(self) -> int:
        if not self.experts:
            return self.params
        active_mlp = self.topk * self.mlp_matrices * self.hidden * self.expert_ffn
        return self.layers * (self.attention_params + active_mlp + 4 * self.hidden) + self.embedding_params

    # --- FLOPs per token (Megatron-LM, forward + backward) -------------------------------------------
    @property
    def dense_flops_per_token_layer(self) -> float:
        mlp_width = self.expert_ffn * self.topk if self.experts else self.ffn
        return 6.0 * (2 * self.hidden * self.q + 2 * self.hidden * self.kv) + \
            6.0 * self.mlp_matrices * self.hidden * mlp_width

    @property
    def attention_flops_per_token_layer(self) -> float:
        return 12.0 * self.seq_len * self.q

    @property
    def logit_flops_per_token(self) -> float:
        return 6.0 * self.hidden * self.vocab

    @property
    def flops_per_token(self) -> float:
        return self.layers * (self.dense_flops_per_token_layer + self.attention_flops_per_token_layer) + \
            self.logit_flops_per_token


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
