"""Report section: the training estimate (detailed model, or the simple MFU form)."""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.perf.interconnect import Interconnect, compute_group, interconnect_of
from clusterctl.perf.job import Accelerator, TrainingConfigError
from clusterctl.perf.layout_rules import SHORT, etp_of, split_arguments, stage_layers
from clusterctl.perf.layout_search import (
    SearchResult,
    gpu_note,
    no_layout_error,
    search,
)
from clusterctl.perf.training import (
    FLASH_ATTENTION_EFFICIENCY,
    GEMM_SHAPE_HALF,
    HBM_EFFICIENCY,
    SUSTAINED_GEMM,
    USABLE_HBM,
    TrainingEstimate,
    dense_flops_per_token,
    simple_throughput,
)
from clusterctl.perf.workload import Workload, accelerator_of, resolve
from clusterctl.plan.model import ClusterPlan
from clusterctl.report.markdown import text
from clusterctl.report.section import ReportContext, Section, fmt, md_table


@dataclass(frozen=True)
class TrainingResult:
    workload: Workload
    estimate: TrainingEstimate | None
    layouts_tried: int
    simple_tokens_per_s: float | None
    gpus: int
    accelerator: str
    """the catalog key of the GPUs' accelerator"""
    acc: Accelerator
    """its peak and measured matmul rates (and their source)"""
    search: SearchResult | None = None
    """what the layout search tried, accepted and rejected (per rule); one candidate for a layout given in full"""
    interconnect: Interconnect | None = None
    """the links the estimate ran on"""

    @property
    def tokens_per_s(self) -> float | None:
        if self.estimate is not None:
            return self.estimate.tokens_per_s
        return self.simple_tokens_per_s


def run(plan: ClusterPlan, overrides: dict | None = None) -> TrainingResult | None:
    """Resolve the workload and estimate it; None when the cluster has no GPUs (or they have no NIC).

    Raises TrainingConfigError for a workload that cannot be estimated as given (bad layout)."""
    group = compute_group(plan)
    ic = interconnect_of(plan, group)
    if group is None or ic is None or group.type.accelerator is None:
        return None
    w = resolve(plan, overrides)
    acc, key = accelerator_of(group)
    gpus = w.training.gpus or group.gpus
    if gpus > group.gpus:
        raise TrainingConfigError(f"the job asks for {gpus:,} GPUs; the {group.name} group has {group.gpus:,}")
    if w.training.precision == "fp8" and acc.fp8_mamf_tflops is None:
        raise TrainingConfigError(f"{key} has no FP8 matmul rate in the catalog (no FP8 tensor cores, or not "
                                  "measured): use precision bf16")
    est, tried, found = None, 0, None
    if w.model is not None:
        found = search(w.model, w.training, gpus, acc, ic)
        if found.best is None:  # every candidate breaks a rule: name it
            raise TrainingConfigError(next(iter(found.example.values()))) if found.tried == 1 else \
                no_layout_error(w.model, gpus, found)
        est, tried = found.best, found.tried
    simple = None
    if w.training.mfu is not None and w.params is not None:
        fpt = w.model.flops_per_token if w.model is not None else dense_flops_per_token(w.params)
        simple = simple_throughput(fpt, gpus, acc.peak_tflops, w.training.mfu)
    return TrainingResult(w, est, tried, simple, gpus, key, acc, search=found, interconnect=ic)


def notes_of(r: TrainingResult) -> tuple[list[str], list[str]]:
    """(headline, other) notes of the estimate: the headline ones (fewer GPUs than asked, a layout that does
    not fit in memory) open the section's Markdown; all go to the JSON ``notes`` list."""
    e, found = r.estimate, r.search
    if e is None:
        return [], []
    head: list[str] = []
    idle = gpu_note(e, r.gpus, r.workload.training.dp is not None)
    if idle:
        head.append(idle)
    if not e.fits_memory:
        mem = e.memory_gb
        need = f"{fmt(mem['total'])} GB per GPU, more than {USABLE_HBM:.0%} of {fmt(mem['hbm'])} GB HBM"
        if r.layouts_tried == 1:
            head.append(f"the given layout does not fit in memory: {need}")
        else:
            t = r.workload.training
            given = ", ".join(f"{k.upper()} {getattr(t, k)}" for k in ("tp", "pp") if getattr(t, k) is not None)
            head.append(f"no layout Megatron-LM accepts{' with ' + given if given else ''} fits in memory "
                        f"({found.accepted:,} accepted of {found.tried:,} tried): the one needing the least "
                        f"memory is shown, {need}")
    other: list[str] = []
    if found is not None and found.batch_note:
        other.append(found.batch_note)
    split = split_arguments(e.model, e.par)
    if split:
        counts = stage_layers(e.model, e.par)
        other.append(f"{e.model.layers} layers on pp {e.par.pp}: {counts[0]} on the first stage, {counts[-1]} on the "
                     f"last, {max(counts[1:-1], default=counts[0])} on each other ({' '.join(split)})")
    own = f"the layout uses {e.gpus:,} of {r.gpus:,} GPUs"
    other += [n for n in e.notes if not (idle and n == own)]
    return head, other


def tokens_per_s_of(data: dict | None) -> float | None:
    """The cluster's tokens/s in a training section's data (the layout estimate's, or the simple form's); None
    without an estimate."""
    if not data or not data.get("available"):
        return None
    if data.get("tokens_per_s") is not None:
        return data["tokens_per_s"]
    return (data.get("simple") or {}).get("tokens_per_s")


def gpus_used_of(data: dict | None) -> int | None:
    """The GPUs the estimate's job uses in a training section's data (the layout's, else all it was given)."""
    if not data or not data.get("available"):
        return None
    return (data.get("layout") or {}).get("gpus_used") or data.get("gpus")


def build(ctx: ReportContext) -> Section:
    r: TrainingResult | None = ctx.extra.get("training")
    if r is None:
        return Section("training", "Training estimate", {"available": False},
                       "No training estimate: the cluster has no GPU nodes with a network.\n")
    w = r.workload
    md: list[str] = []
    head, other = notes_of(r)
    if head:
        first = "; ".join(head)
        md.append(f"**{first[0].upper()}{first[1:]}.**")
        md.append("")
    data: dict = {"available": r.estimate is not None or r.simple_tokens_per_s is not None,
                  "gpus": r.gpus, "accelerator": r.accelerator,
                  "peak_bf16_tflops": r.acc.peak_tflops, "mamf_bf16_tflops": r.acc.mamf_tflops,
                  "mamf_source": r.acc.mamf_source, "notes": []}
    if w.model is None and r.simple_tokens_per_s is None:
        md.append("No model is given: set `workload.model` (a preset or layers/hidden/heads/vocab/seq_len) or "
                  "`workload.training.mfu`, or pass `--model PRESET` / `--mfu` to `clusterctl report`. "
                  "Presets: `clusterctl report --list-models`.")
        return Section("training", "Training estimate", data, "\n".join(md) + "\n")
    if w.model is not None:
        data["model"] = _model_data(w)
        md += [_model_markdown(w), ""]
    if r.estimate is not None:
        data.update(_estimate_data(r))
        md += _layout_markdown(r) + _figures_markdown(r) + [f"Note: {n}." for n in other]
        beyond = _tp_beyond_nvlink(r)
        if beyond:
            data["tp_beyond_nvlink_domain"], note = beyond
            md.append(note)
        data["notes"] = head + other  # [] without a model: the simple form has no layout
    if r.simple_tokens_per_s is not None:
        data["simple"], simple = _simple_form(r)
        md += [simple, ""]
    return Section("training", "Training estimate", data, "\n".join(md) + "\n")


def _model_data(w: Workload) -> dict:
    m = w.model
    return {"name": m.name, "source": w.model_source, "params": m.params,
            "active_params": m.active_params, "layers": m.layers, "hidden": m.hidden,
            "heads": m.heads, "kv_heads": m.kv_heads or m.heads, "ffn_hidden": m.ffn,
            "vocab": m.vocab, "seq_len": m.seq_len, "swiglu": m.swiglu, "experts": m.experts,
            "topk": m.topk, "flops_per_token": m.flops_per_token, **_moe_options(m)}


def _moe_options(m) -> dict:
    """The MoE and attention options a model sets (absent when it sets none, so other reports are unchanged)."""
    out = {k: getattr(m, k) for k in ("shared_experts", "leading_dense_layers", "mtp_depth") if getattr(m, k)}
    if m.moe_layer_interval > 1:
        out["moe_layer_interval"] = m.moe_layer_interval
    if m.mla:
        out["mla"] = {k: getattr(m, k) for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                                 "qk_rope_head_dim", "v_head_dim")}
    return out


def _model_markdown(w: Workload) -> str:
    m = w.model
    return (f"Model **{text(m.name)}**: {fmt(m.params / 1e9)} B parameters"
            + (f" ({fmt(m.active_params / 1e9)} B active)" if m.experts else "")
            + f", {m.layers} layers, hidden {m.hidden:,}, {m.heads} heads"
            + (f" ({m.kv_heads} KV)" if m.kv_heads else "")
            + (f" with multi-head latent attention (KV latent {m.kv_lora_rank:,}"
               + (f", query latent {m.q_lora_rank:,}" if m.q_lora_rank else "") + ")" if m.mla else "")
            + (f", {m.experts} experts top {m.topk}" if m.experts else "")
            + (f" + {m.shared_experts} shared" if m.shared_experts else "")
            + (f", {m.leading_dense_layers} dense leading layers" if m.leading_dense_layers else "")
            + (f", experts in one layer of every {m.moe_layer_interval}" if m.moe_layer_interval > 1 else "")
            + (f", {m.mtp_depth} multi-token prediction layer(s)" if m.mtp_depth else "")
            + f", sequence {m.seq_len:,}, vocabulary {m.vocab:,}; {fmt(m.flops_per_token / 1e9)} GFLOP per token "
            f"(Megatron-LM count, forward + backward). Source: {text(w.model_source)}.")


def _estimate_data(r: TrainingResult) -> dict:
    """the JSON of the estimate: layout (and what the search tried), step, throughput, breakdown, memory"""
    e = r.estimate
    p = e.par
    layout = {"tp": p.tp, "pp": p.pp, "dp": e.dp, "cp": p.cp, "ep": p.ep, "micro_batch": p.micro_batch,
              "virtual_stages": p.virtual_stages, "global_batch": p.global_batch,
              "microbatches": e.microbatches, "recompute": p.recompute,
              "sequence_parallel": p.sequence_parallel, "flash_attention": p.flash_attention,
              "precision": p.precision,
              "gpus_used": e.gpus, "chosen_by_search": r.layouts_tried > 1,
              "layouts_tried": r.layouts_tried}
    if r.search is not None:
        layout["search"] = {"tried": r.search.tried, "accepted": r.search.accepted,
                            "fit": r.search.fitting, "rejected": dict(sorted(r.search.rejected.items()))}
    layout["pipeline_split_options"] = [w for o in split_arguments(e.model, p) for w in o.split()]
    layout["stage_layers"] = list(stage_layers(e.model, p))
    if e.model.experts:
        etp = etp_of(p)
        layout["attention"] = {"tp": p.tp, "cp": p.cp, "dp": e.dp, "pp": p.pp}
        layout["experts"] = {"etp": etp, "ep": p.ep, "edp": e.gpus // (etp * p.ep * p.pp), "pp": p.pp}
    return {"layout": layout, "step_s": e.step_s, "tokens_per_s": e.tokens_per_s,
            "model_tflops_per_gpu": e.model_tflops_per_gpu, "hardware_tflops_per_gpu": e.hardware_tflops_per_gpu,
            "mfu": e.mfu, "breakdown_s": e.breakdown_s, "memory_gb": e.memory_gb, "fits_memory": e.fits_memory,
            "communication": e.comm,
            "assumptions": {"sustained_gemm_of_mamf": SUSTAINED_GEMM, "gemm_shape_half_width": GEMM_SHAPE_HALF,
                            "flash_attention_of_gemm": FLASH_ATTENTION_EFFICIENCY, "hbm_efficiency": HBM_EFFICIENCY}}


def _layout_markdown(r: TrainingResult) -> list[str]:
    """the layout sentence (how it was chosen) and, after a search, what the search rejected and why"""
    e, found = r.estimate, r.search
    p = e.par
    etp = etp_of(p)
    if r.layouts_tried == 1:
        chosen = "as given"
    elif e.fits_memory:
        chosen = f"the fastest that fits in {USABLE_HBM:.0%} of HBM, of {found.accepted:,} that Megatron-LM accepts"
    else:
        chosen = (f"none of the {found.accepted:,} layouts Megatron-LM accepts fits in {USABLE_HBM:.0%} of HBM; "
                  "this one needs the least memory")
    md = [f"Layout ({chosen}): TP {p.tp} × PP {p.pp}"
          + (f" (interleaved ×{p.virtual_stages})" if p.virtual_stages > 1 else "")
          + f" × CP {p.cp} × DP {e.dp}" + (f", EP {p.ep}" if p.ep > 1 else "")
          + f" = {e.gpus:,} GPUs"
          + (f" (experts: ETP {etp} × EP {p.ep} × EDP {e.gpus // (etp * p.ep * p.pp)} × PP {p.pp})"
             if e.model.experts else "")
          + f"; global batch {p.global_batch:,} sequences "
          f"({fmt(p.global_batch * e.model.seq_len / 1e6)} M tokens), micro batch {p.micro_batch}, "
          f"{e.microbatches} microbatches per step; recompute {p.recompute}; "
          f"{'FP8 linear layers' if p.precision == 'fp8' else 'BF16'}."]
    if found is not None and found.tried > 1:
        rejected = sum(found.rejected.values())
        why = "; ".join(f"{SHORT[k]} (`{k}`) {n:,}" for k, n in
                        sorted(found.rejected.items(), key=lambda kv: (-kv[1], kv[0])))
        md.append("")
        md.append(f"Search: of {found.tried:,} layouts tried (TP × PP × interleaving × recomputation), "
                  f"{rejected:,} rejected" + (f" because {why}" if rejected else "")
                  + f"; {found.accepted:,} accepted, {found.fitting:,} of them fit in memory.")
    return md


def _figures_markdown(r: TrainingResult) -> list[str]:
    """the figures table, where the step goes, memory per GPU and the compute model's assumptions"""
    e = r.estimate
    mem = e.memory_gb
    verdict = "fits" if e.fits_memory else "**does not fit** — more pipeline/tensor parallelism, full " \
                                          "recomputation or a smaller micro batch is needed"
    return [
        "",
        md_table(["figure", "value"], [
            ["step time", f"{fmt(e.step_s)} s"],
            ["tokens per second (cluster)", f"{fmt(e.tokens_per_s)}"],
            ["TFLOP/s per GPU (model FLOPs, Megatron-LM count)", fmt(e.model_tflops_per_gpu)],
            ["TFLOP/s per GPU incl. recomputation (Narayanan et al. 2021 count)", fmt(e.hardware_tflops_per_gpu)],
            ["MFU (model FLOPs / BF16 peak)", f"{e.mfu:.1%}"],
        ], "lr"),
        "Where the step goes:",
        "",
        md_table(["part", "seconds", "share"],
                 [[k, fmt(v), f"{v / e.step_s:.1%}"] for k, v in e.breakdown_s.items() if v > 0], "lrr"),
        f"Memory per GPU (first pipeline stage): weights {fmt(mem['weights'])} GB, gradients "
        f"{fmt(mem['gradients'])} GB, optimizer {fmt(mem['optimizer'])} GB, activations "
        f"{fmt(mem['activations'])} GB = **{fmt(mem['total'])} GB** of {fmt(mem['usable'])} GB usable "
        f"({USABLE_HBM:.0%} of {mem['hbm'] * 1e9 / 2**30:.0f} GiB HBM): {verdict}.",
        "",
        f"Compute model: GEMMs at {SUSTAINED_GEMM:.0%} of the measured maximum achievable matmul rate "
        f"({fmt(r.acc.mamf_tflops)} TFLOP/s BF16 for {text(r.accelerator)}: {text(r.acc.mamf_source)}) "
        "with a shape factor "
        f"h/tp ÷ (h/tp + {GEMM_SHAPE_HALF}); flash attention at {FLASH_ATTENTION_EFFICIENCY:.0%} of that; "
        f"element-wise work at {HBM_EFFICIENCY:.0%} of HBM bandwidth; communication from the Collectives "
        "section's model on this interconnect. Derivation: docs/report.md.",
        "",
    ]


def _tp_beyond_nvlink(r: TrainingResult) -> tuple[dict, str] | None:
    """validate's WORKLOAD003, for any TP the report used: (its JSON, its note), or None"""
    ic, tp = r.interconnect, r.estimate.par.tp
    if ic is None or tp <= ic.gpus_per_domain:
        return None
    return ({"tp": tp, "nvlink_domain_gpus": ic.gpus_per_domain},
            f"Note: TP {tp} is larger than the NVLink domain ({ic.gpus_per_domain} GPUs): the tensor-parallel "
            f"all-reduces cross the network at {fmt(ic.per_gpu_network_gb_per_s)} GB/s per GPU instead of "
            "NVLink, on the critical path (validate's WORKLOAD003 warning).")


def _simple_form(r: TrainingResult) -> tuple[dict, str]:
    """the simple MFU form: (its JSON, its sentence)"""
    w = r.workload
    mfu = w.training.mfu
    fpt = w.model.flops_per_token if w.model is not None else 6 * w.params
    return ({"mfu": mfu, "flops_per_token": fpt, "tokens_per_s": r.simple_tokens_per_s,
             "formula": "tokens/s = GPUs x peak x MFU / FLOPs per token"},
            f"Simple form with the given MFU {mfu:.0%}: tokens/s = {r.gpus:,} GPUs × {fmt(r.acc.peak_tflops)} "
            f"TFLOP/s × {mfu:.0%} / {fmt(fpt / 1e9)} GFLOP per token = **{fmt(r.simple_tokens_per_s)} tokens/s**"
            + (" (6 × parameters per token: no model shape given)" if w.model is None else "") + ".")


__all__ = ["TrainingConfigError", "TrainingResult", "build", "run"]
