"""From blueprint + command line to the model, the layout and the accelerator the estimate runs on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterctl.blueprint.training import ModelSpec, TrainingSpec
from clusterctl.perf.job import (
    Accelerator,
    ModelShape,
    Parallelism,
    TrainingConfigError,
)
from clusterctl.perf.model_presets import preset
from clusterctl.plan.model import ClusterPlan, GroupPlan

TOKENS_PER_STEP_DEFAULT = 4 * 2**20
"""default global batch: ~4M tokens per step (GPT-3 175B used 3.2M, Llama 3 4M-16M)"""


def shape_of(name: str, spec: ModelSpec) -> ModelShape:
    return ModelShape(name=name, **spec.model_dump())


def accelerator_of(group: GroupPlan) -> tuple[Accelerator, str]:
    """The accelerator with its measured GEMM rate; second value: the catalog key."""
    acc, key = group.type.accelerator, group.type.gpu_model
    if acc.bf16_mamf_tflops is not None:
        mamf, src = acc.bf16_mamf_tflops, acc.sources.get("bf16_mamf_tflops", "")
    else:
        mamf, src = acc.bf16_dense_tflops * 0.8, "[D] no measured MAMF in the catalog: 0.8 x datasheet peak assumed"
    return Accelerator(key, acc.bf16_dense_tflops, mamf, src, acc.hbm_gb, acc.hbm_tb_per_s,
                       acc.fp8_mamf_tflops, acc.fp8_dense_tflops), key


@dataclass(frozen=True)
class Workload:
    model: ModelShape | None
    model_source: str
    training: TrainingSpec
    params: float | None
    """parameter count the report uses (the model's, else workload.params_b)"""


def resolve(plan: ClusterPlan, overrides: dict[str, Any] | None = None) -> Workload:
    """Merge the blueprint's workload with command-line overrides (None values are ignored).

    ``overrides`` keys: model (preset name), params_b, any ModelSpec field, any TrainingSpec field."""
    o = {k: v for k, v in (overrides or {}).items() if v is not None}
    w = plan.workload
    model: ModelShape | None = None
    source = ""
    bp_model = w.model if w is not None else None
    name = o.pop("model", None)
    if name is not None:
        model, source = preset(name)
    elif isinstance(bp_model, str):
        model, source = preset(bp_model)
    elif bp_model is not None:
        model, source = shape_of("blueprint model", bp_model), "blueprint workload.model"
    shape_keys = set(ModelSpec.model_fields)
    shape_over = {k: o.pop(k) for k in list(o) if k in shape_keys}
    if shape_over:
        if model is None:
            missing = [k for k in ("layers", "hidden", "heads", "vocab", "seq_len") if k not in shape_over]
            if missing:
                raise TrainingConfigError(
                    f"a model given on the command line needs {', '.join('--' + m.replace('_', '-') for m in missing)}"
                    " (or --model PRESET)")
            model, source = shape_of("command-line model", ModelSpec(**shape_over)), "command line"
        else:
            model = ModelShape.model_validate(model.model_dump() | shape_over)
            source += " (changed on the command line: " + ", ".join(sorted(shape_over)) + ")"
    params_b = o.pop("params_b", None)
    base = w.training if (w is not None and w.training is not None) else TrainingSpec()
    unknown = set(o) - set(TrainingSpec.model_fields)
    if unknown:
        raise TrainingConfigError(f"unknown workload option(s): {', '.join(sorted(unknown))}")
    # validated as a whole, so command-line values get the blueprint's range checks and count as set
    training = TrainingSpec.model_validate(base.model_dump(exclude_unset=True) | o)
    if model is not None:
        params = float(model.params)
    elif params_b is not None:
        params = params_b * 1e9
    elif w is not None:
        params = w.params_b * 1e9
    else:
        params = None
    return Workload(model, source, training, params)


def default_global_batch(model: ModelShape, gpus: int) -> int:
    """~4M tokens per step, or one sequence per 8 GPUs on clusters too large for that (Llama 3 405B ran
    2,048 sequences of 8K tokens on 16,384 GPUs), so that data parallelism can use the whole cluster."""
    return max(1, round(TOKENS_PER_STEP_DEFAULT / model.seq_len), gpus // 8)


def parallelism(t: TrainingSpec, model: ModelShape, tp: int, pp: int, gpus: int) -> Parallelism:
    batch = t.global_batch or default_global_batch(model, gpus)
    return Parallelism(global_batch=batch, tp=tp, pp=pp, dp=t.dp, cp=t.cp, ep=t.ep, micro_batch=t.micro_batch,
                       virtual_stages=t.virtual_stages, recompute=t.recompute,
                       sequence_parallel=t.sequence_parallel, flash_attention=t.flash_attention,
                       overlap_grad_reduce=t.overlap_grad_reduce, distributed_optimizer=t.distributed_optimizer,
                       precision=t.precision, shard_gradients=t.shard_gradients,
                       first_stage_layers=t.first_stage_layers, last_stage_layers=t.last_stage_layers,
                       account_for_embedding=t.account_for_embedding, account_for_loss=t.account_for_loss,
                       expert_load=t.expert_load, capacity_factor=t.capacity_factor,
                       moe_flex_dispatcher=t.moe_flex_dispatcher, overlap_moe_comm=t.overlap_moe_comm)
