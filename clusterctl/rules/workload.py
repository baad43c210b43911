"""Workload: the training job the blueprint is sized for must be runnable on it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from clusterctl.blueprint.load import did_you_mean
from clusterctl.blueprint.storage import Workload
from clusterctl.blueprint.training import TrainingSpec
from clusterctl.perf.interconnect import Interconnect, compute_group, interconnect_of
from clusterctl.perf.job import ModelShape, TrainingConfigError
from clusterctl.perf.layout_rules import violations, with_pipeline_split
from clusterctl.perf.model_presets import presets
from clusterctl.perf.training import estimate
from clusterctl.perf.workload import accelerator_of, parallelism, resolve
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.rules.base import Hit, Severity, rule


class _Job(NamedTuple):
    workload: Workload
    """the blueprint's workload section"""
    model: ModelShape | None
    """None when the blueprint names no model or an unknown preset (WORKLOAD001)"""
    training: TrainingSpec
    group: GroupPlan
    ic: Interconnect


def _job(plan: ClusterPlan) -> _Job | None:
    """The training job as the report resolves it, or None without a workload or GPU nodes with a network."""
    w = plan.blueprint.workload
    group = compute_group(plan)
    if w is None or group is None or group.type.accelerator is None:
        return None
    ic = interconnect_of(plan, group)
    if ic is None:
        return None
    try:
        model = resolve(plan).model
    except TrainingConfigError:  # an unknown preset: WORKLOAD001 says so
        model = None
    return _Job(w, model, w.training or TrainingSpec(), group, ic)


@rule("WORKLOAD001", "workload", Severity.ERROR, "unknown model preset")
def unknown_preset(plan: ClusterPlan) -> Iterator[Hit]:
    """``workload.model`` names a preset (``clusterctl report --list-models``) or gives the shape
    (layers, hidden, heads, vocab, seq_len, ...). An unknown name would leave the report without a model."""
    w = plan.blueprint.workload
    if w is not None and isinstance(w.model, str) and w.model not in presets():
        yield Hit(("workload", "model"), f"unknown model preset '{w.model}'",
                  did_you_mean(w.model, sorted(presets())) or f"one of {', '.join(sorted(presets()))}, "
                  "or a mapping with layers, hidden, heads, vocab, seq_len")


@rule("WORKLOAD002", "workload", Severity.ERROR, "training layout does not fit the cluster or the model")
def layout(plan: ClusterPlan) -> Iterator[Hit]:
    """The parallel layout in ``workload.training`` must pass Megatron-LM's layout rules
    (clusterctl/perf/layout_rules.py, each citing the Megatron-LM source line): tp x pp x cp x dp at most the
    GPUs of the largest GPU group; attention heads, KV heads and the MLP width split over tp; layers split
    over pp as Megatron splits them (evenly; with the embedding and/or loss counted as a layer,
    ``account_for_embedding`` / ``account_for_loss``; or with ``first_stage_layers`` / ``last_stage_layers`` and
    the rest even over the middle stages, never both kinds) and over interleaved chunks; with
    interleaving, microbatches a multiple of pp; global batch a multiple of dp x micro batch; sequence a
    multiple of 2 x cp; experts divisible by ep and ep x tp x pp dividing the GPUs. Checked only for the
    parts that are given: the report chooses tp and pp itself when they are left out."""
    job = _job(plan)
    if job is None or job.model is None or plan.blueprint.workload.training is None:
        return
    model, t, group = job.model, job.training, job.group
    gpus = t.gpus or group.gpus
    if gpus > group.gpus:
        yield Hit(("workload", "training", "gpus"),
                  f"the job asks for {gpus:,} GPUs; the {group.name} group has {group.gpus:,}",
                  "lower workload.training.gpus or add nodes")
        return
    if t.tp is None or t.pp is None:
        return
    bad = violations(model, parallelism(t, model, t.tp, t.pp, gpus), gpus)
    if bad:
        field = next((f for f in _SPLIT_FIELDS.get(bad[0].key, ()) if getattr(t, f) is not None), None)
        yield Hit(("workload", "training") + ((field,) if field else ()), f"{model.name}: {bad[0]}",
                  _SPLIT_HINT if field else
                  "change tp/pp/cp/dp/global_batch, or leave tp and pp out to let `clusterctl report` choose")


_SPLIT_FIELDS = {
    "split_options": ("first_stage_layers", "last_stage_layers"),
    "uneven_layers": ("first_stage_layers", "last_stage_layers"),
    "layers": ("account_for_embedding", "account_for_loss"),
    "virtual_layers": ("account_for_embedding", "account_for_loss"),
}
"""rule key -> the split options a finding of it is located at (the first one the blueprint gives)"""
_SPLIT_HINT = ("give first_stage_layers / last_stage_layers (the rest split evenly over the middle stages) or the "
               "account_for_* options, not both; or leave the four out to let the report count the embedding and loss")


@rule("WORKLOAD003", "workload", Severity.WARNING, "tensor parallelism spans more than one NVLink domain")
def tp_beyond_nvlink(plan: ClusterPlan) -> Iterator[Hit]:
    """Tensor parallelism all-reduces activations several times per layer on the critical path; across
    the network instead of NVLink (tp larger than the NVLink domain: 8 on HGX, 72 on NVL72) it runs at a
    fraction of the bandwidth and training slows badly. Megatron-LM practice keeps tp within a domain."""
    job = _job(plan)
    if job is None:
        return
    t, group, ic = job.training, job.group, job.ic
    if t.tp is not None and t.tp > ic.gpus_per_domain:
        yield Hit(("workload", "training", "tp"),
                  f"tp {t.tp} is larger than the NVLink domain of the {group.name} nodes ({ic.gpus_per_domain} GPUs): "
                  f"tensor-parallel traffic would cross the network at {ic.per_gpu_network_gb_per_s:.0f} GB/s per "
                  f"GPU instead of NVLink",
                  f"use tp <= {ic.gpus_per_domain} and more pipeline or context parallelism")


@rule("WORKLOAD004", "workload", Severity.WARNING, "model does not fit in GPU memory with this layout")
def memory(plan: ClusterPlan) -> Iterator[Hit]:
    """With tp, pp and recompute fixed in ``workload.training``, the first pipeline stage must hold its
    bf16 weights, gradients, Adam state (sharded over data parallelism with the distributed optimizer)
    and activations (clusterctl/perf/memory.py) in the usable share of HBM (``memory.USABLE_HBM``): the
    CUDA context, NCCL buffers, allocator fragmentation and framework workspaces take the rest."""
    job = _job(plan)
    if job is None or job.model is None:
        return
    model, t, group, ic = job.model, job.training, job.group, job.ic
    if t.tp is None or t.pp is None or "recompute" not in t.model_fields_set:
        return
    gpus = min(t.gpus or group.gpus, group.gpus)
    acc, _ = accelerator_of(group)
    try:
        e = estimate(model, with_pipeline_split(model, parallelism(t, model, t.tp, t.pp, gpus)), gpus, acc, ic)
    except TrainingConfigError:
        return  # WORKLOAD002 says why
    if not e.fits_memory:
        m = e.memory_gb
        yield Hit(("workload", "training"),
                  f"{model.name} with tp {t.tp} × pp {t.pp}, recompute {t.recompute}: ~{m['total']:.0f} GB per GPU "
                  f"(weights {m['weights']:.0f}, gradients {m['gradients']:.0f}, optimizer {m['optimizer']:.0f}, "
                  f"activations {m['activations']:.0f}) of {m['hbm'] * 1e9 / 2**30:.0f} GiB HBM "
                  f"({m['hbm']:.1f} GB), of which {m['usable']:.1f} GB is usable",
                  "raise pp or tp, use recompute: full, or let `clusterctl report` search a layout (leave tp/pp out)")


@rule("WORKLOAD005", "workload", Severity.WARNING, "params_b disagrees with the model's parameter count")
def params_mismatch(plan: ClusterPlan) -> Iterator[Hit]:
    """``workload.params_b`` sizes checkpoints (STORAGE001/002); when ``workload.model`` is given too, the
    two should describe the same model. More than 10 % apart, one of them is wrong."""
    job = _job(plan)
    if job is None or job.model is None:
        return
    w, model = job.workload, job.model
    actual = model.params / 1e9
    if abs(w.params_b / actual - 1) > 0.10:
        yield Hit(("workload", "params_b"),
                  f"params_b is {w.params_b:g} but {model.name} has {actual:.1f} B parameters",
                  f"set params_b: {actual:.0f}")
