"""Layouts Megatron-LM runs: the rules a parallel layout must pass, and the search for the fastest one.

Each rule has a short stable key (used in the report's rejection counts and in JSON) and restates an
assertion of Megatron-LM as read at NVIDIA/Megatron-LM commit d98e8a6 (2026-08-22, Megatron-Core 0.20.0);
file:line below are at that commit:

``gpus``
    world size = TP x PP x CP x DP: ``world_size % (tp * pp * cp) == 0`` and ``data_parallel_size =
    world_size // (tp * pp * cp)`` (megatron/training/arguments.py:432, megatron/core/parallel_state.py:822).
    The GPUs a layout launches on must exist; a layout on fewer GPUs than asked is allowed but is stated
    (first line of the estimate and its ``notes``).
``heads``
    ``num_attention_heads % tensor_model_parallel_size == 0`` (megatron/core/transformer/transformer_config.py:1446).
``kv_heads``
    ``num_query_groups`` a multiple or a divisor of ``tensor_model_parallel_size`` (transformer_config.py:1461-1467;
    with TP larger than the KV heads each KV head is replicated).
``ffn``
    dense MLP width ``ffn_hidden_size % tensor_model_parallel_size == 0``: ColumnParallelLinear splits its
    output with ``divide(output_size, world_size)``, which asserts divisibility
    (megatron/core/tensor_parallel/layers.py:1038, megatron/core/utils.py:590-599). Not checked for the
    experts' width (no assertion found for the grouped expert GEMMs).
``layers``
    ``(num_layers + e) % pipeline_model_parallel_size == 0`` where ``e`` counts the embedding and the loss
    as a layer each when ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``
    are set (megatron/core/transformer/transformer_block.py:150-158, transformer_config.py:2370-2410,
    arguments.py:960-999). The report allows e = 0, 1 or 2 (Llama 3 405B's 126 layers on 16 stages are
    (126 + 2) / 16 = 8 per stage) and says which options the layout needs. Megatron's other uneven splits
    (``--decoder-first/last-pipeline-num-layers``) are not searched or accepted: the step model assumes
    balanced stages.
``virtual_pp``
    interleaving needs ``pipeline_model_parallel_size > 1`` (parallel_state.py:827-830; arguments.py:1000-1008
    asks for > 2 only with ``--no-overlap-p2p-communication``, overlap being the default).
``virtual_layers``
    each stage's layers split evenly into its chunks: ``num_layers_per_pipeline_rank % vp_size == 0``
    (transformer_block.py:174-178, arguments.py:972).
``virtual_microbatches``
    the interleaved schedule runs microbatches in groups of ``microbatch_group_size_per_vp_stage`` (default:
    the pipeline size, megatron/core/model_parallel_config.py:567-568) and raises unless
    ``PP <= group <= num_microbatches`` and ``num_microbatches % group`` is 0 or at least PP
    (megatron/core/pipeline_parallel/schedules.py:1160-1179): with the default group, ``num_microbatches %
    PP == 0``, as Megatron-Core up to core_r0.9.0 required outright (schedules.py:631 at that tag).
``global_batch``
    ``global_batch_size % (micro_batch_size * data_parallel_size) == 0``
    (megatron/core/num_microbatches_calculator.py:381).
``seq_cp``
    ``seq_length % (2 * context_parallel_size) == 0`` for CP > 1 (arguments.py:1335-1338: the load-balanced
    causal split gives each rank two chunks).
``experts_ep``
    expert parallelism needs experts, ``num_experts % expert_model_parallel_size == 0`` (arguments.py:1655-1658,
    megatron/core/transformer/moe/moe_layer.py:186).
``ep_grid``
    the expert layers' grid ETP x EP x EDP x PP is the same world: ``world_size % (etp * ep * pp) == 0``
    (parallel_state.py:870-881), ETP defaulting to TP (arguments.py:587-588); with ETP = TP this is EP
    dividing DP x CP.

Policy of the search, not a Megatron assertion (explicitly given layouts are not refused for it):

``pp_fill``
    PP > 1 needs at least PP microbatches per step; with fewer, Megatron runs (1F1B warms up with
    ``min(PP - rank - 1, M)`` microbatches) but stages never all work at once.

Not rules: sequence parallelism at TP 1 is switched off by Megatron with a warning (arguments.py:1432-1439),
and the report's model is the same with or without it at TP 1.

For MoE Megatron lays the same GPUs out twice (parallel_state.py:856-892): attention and the dense parts
as TP x CP x DP x PP, the experts as ETP x EP x EDP x PP, so EDP = TP x CP x DP / (ETP x EP). The search
(`search`) enumerates TP (powers of two up to the NVLink domain, 72 on NVL72), PP from 1 to
min(64, layers, GPUs / (TP x CP)), 1/2/4 interleaved chunks and no, selective or full recomputation unless given;
for each it picks the largest DP that passes the batch and expert rules (`_dp_and_batch`), counts the
candidate under the first rule it still breaks or estimates it, and keeps the fastest that fits in HBM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from clusterctl.report.training import (
    ModelShape,
    Parallelism,
    TrainingConfigError,
    TrainingEstimate,
    estimate,
)

if TYPE_CHECKING:
    from clusterctl.blueprint.training import TrainingSpec
    from clusterctl.report.interconnect import Interconnect
    from clusterctl.report.training import Accelerator

RULES: dict[str, str] = {
    "setting": "a setting out of range (not a Megatron rule)",
    "gpus": "world_size % (tensor_model_parallel_size * pipeline_model_parallel_size * context_parallel_size) "
            "== 0, megatron/training/arguments.py:432",
    "heads": "num_attention_heads % tensor_model_parallel_size == 0, megatron/core/transformer/transformer_config.py:1446",
    "kv_heads": "num_query_groups must be a multiple or divisor of tensor_model_parallel_size"
                ", megatron/core/transformer/transformer_config.py:1461",
    "ffn": "ffn_hidden_size % tensor_model_parallel_size == 0, ColumnParallelLinear divide(), "
           "megatron/core/tensor_parallel/layers.py:1038",
    "layers": "(num_layers [+1 --account-for-embedding-in-pipeline-split] [+1 --account-for-loss-in-pipeline-split]) "
              "% pipeline_model_parallel_size == 0, megatron/core/transformer/transformer_block.py:158",
    "virtual_pp": "pipeline_model_parallel_size > 1 with an interleaved schedule, megatron/core/parallel_state.py:828",
    "virtual_layers": "num_layers_per_pipeline_rank % virtual_pipeline_model_parallel_size == 0"
                      ", megatron/core/transformer/transformer_block.py:176",
    "virtual_microbatches": "num_microbatches % pipeline_model_parallel_size == 0 with an interleaved schedule "
                            "with the default microbatch_group_size_per_vp_stage = PP, "
                            "megatron/core/pipeline_parallel/schedules.py:1160-1179",
    "global_batch": "global_batch_size % (micro_batch_size * data_parallel_size) == 0"
                    ", megatron/core/num_microbatches_calculator.py:381",
    "seq_cp": "seq_length % (2 * context_parallel_size) == 0, megatron/training/arguments.py:1336",
    "experts_ep": "num_experts % expert_model_parallel_size == 0, megatron/training/arguments.py:1657",
    "ep_grid": "world_size % (expert_tensor_parallel_size * expert_model_parallel_size * "
               "pipeline_model_parallel_size) == 0, megatron/core/parallel_state.py:878",
    "pp_fill": "search policy, not a Megatron rule: at least PP microbatches per step so that every stage works",
}
"""rule key -> what Megatron-LM asserts, with the file and line at commit d98e8a6"""

SHORT: dict[str, str] = {
    "setting": "a setting out of range",
    "gpus": "more GPUs than available",
    "heads": "attention heads not divisible by TP",
    "kv_heads": "KV heads neither a multiple nor a divisor of TP",
    "ffn": "MLP width not divisible by TP",
    "layers": "layers not split evenly over PP",
    "virtual_pp": "interleaving without PP",
    "virtual_layers": "stage layers not divisible by the interleaved chunks",
    "virtual_microbatches": "microbatches not a multiple of PP with interleaving",
    "global_batch": "global batch not divisible by micro batch x DP",
    "seq_cp": "sequence not divisible by 2 x CP",
    "experts_ep": "experts not divisible by EP",
    "ep_grid": "ETP x EP x PP not dividing the GPUs",
    "pp_fill": "fewer microbatches than PP stages",
}
"""rule key -> a few words for the report's rejection counts"""

NOT_MEGATRON = frozenset({"setting", "pp_fill"})
"""keys that are not Megatron-LM assertions: settings out of range, and the search's own policy"""


@dataclass(frozen=True)
class Violation:
    key: str
    message: str
    """names the parallel size and the numbers, e.g. ``tp 3: attention heads 64 are not divisible by tp 3``"""

    def __str__(self) -> str:
        rule = RULES[self.key]
        return f"{self.message} ({'' if self.key in NOT_MEGATRON else 'Megatron-LM: '}{rule})"


def etp_of(par: Parallelism) -> int:
    """expert tensor parallel size: Megatron's default is TP (arguments.py:587-588)"""
    return getattr(par, "etp", None) or par.tp


def dp_of(par: Parallelism, gpus: int) -> int:
    return par.dp if par.dp is not None else gpus // (par.tp * par.pp * par.cp)


def pipeline_split(layers: int, pp: int, v: int = 1) -> int | None:
    """Layers counted for the embedding and loss (0, 1 or 2) so that the layers split evenly over ``pp``
    stages of ``v`` chunks each; None if no such split exists."""
    if pp == 1:
        return 0
    for extra in (0, 1, 2):
        n = layers + extra
        if n % pp == 0 and (n // pp) % v == 0:
            return extra
    return None


def with_pipeline_split(model: ModelShape, par: Parallelism) -> Parallelism:
    """``par`` with the first stage's transformer layers that Megatron-LM's split gives it: with
    ``--account-for-embedding-in-pipeline-split`` the embedding counts as a layer of the first stage, which
    then holds one transformer layer fewer (Llama 3 405B: 126 + 2 = 128 on 16 stages, 7 on the first, as
    Dubey et al. 2024 sec. 3.3.2 ran it). A first-stage size that is already given is kept."""
    if par.first_stage_layers is not None or par.pp == 1:
        return par
    extra = pipeline_split(model.layers, par.pp, par.virtual_stages)
    if not extra:
        return par
    return replace(par, first_stage_layers=(model.layers + extra) // par.pp - 1)


SPLIT_OPTIONS = {0: "", 1: "--account-for-embedding-in-pipeline-split",
                 2: "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"}


def violations(model: ModelShape, par: Parallelism, gpus: int, search: bool = False) -> list[Violation]:
    """Every rule the layout breaks, in the order of `RULES` (empty: Megatron-LM runs it).

    ``search``: also apply the search's own policy (``pp_fill``)."""
    out: list[Violation] = []
    for name in ("tp", "pp", "cp", "ep", "micro_batch", "virtual_stages", "global_batch"):
        v = getattr(par, name)
        if not isinstance(v, int) or v < 1:
            return [Violation("setting", f"{name} must be an integer >= 1, got {v!r}")]
    if par.recompute not in ("none", "selective", "full"):
        out.append(Violation("setting", f"recompute must be none, selective or full, got {par.recompute!r}"))
    if par.precision not in ("bf16", "fp8"):
        out.append(Violation("setting", f"precision must be bf16 or fp8, got {par.precision!r}"))
    tp, pp, cp, v, ep = par.tp, par.pp, par.cp, par.virtual_stages, par.ep
    mp = tp * pp * cp
    dp = dp_of(par, gpus)
    if dp < 1 or mp * dp > gpus:
        out.append(Violation("gpus", f"tp x pp x cp x dp = {tp} x {pp} x {cp} x {max(dp, 1)} = "
                                     f"{mp * max(dp, 1):,} GPUs, but {gpus:,} are available"))
        dp = max(dp, 1)
    if model.heads % tp:
        out.append(Violation("heads", f"tp {tp}: attention heads {model.heads} are not divisible by tp {tp}"))
    kv = model.kv_heads or model.heads
    if kv % tp and tp % kv:
        out.append(Violation("kv_heads", f"tp {tp}: KV heads (query groups) {kv} are neither a multiple nor a "
                                         f"divisor of tp {tp}"))
    if not model.experts and model.ffn % tp:
        out.append(Violation("ffn", f"tp {tp}: MLP width {model.ffn:,} is not divisible by tp {tp}"))
    if pipeline_split(model.layers, pp) is None:
        out.append(Violation("layers", f"pp {pp}: {model.layers} layers (+0, +1 or +2 for embedding and loss) "
                                       f"do not split evenly over pp {pp}"))
    elif v > 1 and pp > 1 and pipeline_split(model.layers, pp, v) is None:
        per = [(model.layers + e) // pp for e in (0, 1, 2) if (model.layers + e) % pp == 0]
        out.append(Violation("virtual_layers", f"virtual stages {v}: {per[0]} layers per pipeline stage are not "
                                               f"divisible by {v} chunks"))
    if v > 1 and pp == 1:
        out.append(Violation("virtual_pp", f"virtual stages {v}: interleaving needs pp > 1, got pp 1"))
    unit = dp * par.micro_batch
    m = par.global_batch // unit
    if par.global_batch % unit:
        out.append(Violation("global_batch", f"global batch {par.global_batch:,} is not divisible by micro batch "
                                             f"{par.micro_batch} x dp {dp:,} = {unit:,}"))
    elif v > 1 and pp > 1 and (m % pp or m < pp):
        out.append(Violation("virtual_microbatches", f"virtual stages {v}: {m:,} microbatches per step are not a "
                                                     f"multiple of pp {pp}"))
    if cp > 1 and model.seq_len % (2 * cp):
        out.append(Violation("seq_cp", f"cp {cp}: sequence length {model.seq_len:,} is not divisible by "
                                       f"2 x cp = {2 * cp}"))
    if ep > 1 and (not model.experts or model.experts % ep):
        out.append(Violation("experts_ep", f"ep {ep}: the model has {model.experts} experts" +
                             (", not divisible by ep" if model.experts else " (not an MoE model)")))
    etp = etp_of(par)
    if ep > 1 and (mp * dp) % (etp * ep * pp):
        out.append(Violation("ep_grid", f"ep {ep}: the expert grid etp x ep x pp = {etp} x {ep} x {pp} does not "
                                        f"divide the {mp * dp:,} GPUs of tp x pp x cp x dp"))
    if search and pp > 1 and not par.global_batch % unit and m < pp:
        out.append(Violation("pp_fill", f"pp {pp}: {m:,} microbatches per step leave stages idle"))
    return out


def check(model: ModelShape, par: Parallelism, gpus: int) -> int:
    """Refuse a layout Megatron-LM would refuse (TrainingConfigError naming the first rule and its numbers);
    returns the data-parallel size."""
    for viol in violations(model, par, gpus):
        raise TrainingConfigError(str(viol))
    return dp_of(par, gpus)


@dataclass(frozen=True)
class SearchResult:
    best: TrainingEstimate | None
    """the fastest layout that fits in HBM, else the one needing the least memory, else None"""
    tried: int
    """candidates (TP x PP x interleaving x recomputation, each with the largest DP that passes)"""
    accepted: int
    """candidates passing every rule (and estimated)"""
    fitting: int
    """accepted candidates that fit in USABLE_HBM of HBM"""
    rejected: dict[str, int] = field(default_factory=dict)
    """rule key -> candidates rejected for it (the first rule each breaks)"""
    example: dict[str, str] = field(default_factory=dict)
    """rule key -> the message of the first candidate rejected for it"""
    batch_note: str = ""
    layouts: tuple[Parallelism, ...] = ()
    """every accepted candidate (DP set), for tests and callers that want more than the best"""

    @property
    def fits(self) -> bool:
        return self.best is not None and self.best.fits_memory

    def rejections(self) -> str:
        """``"heads 96, layers 12"``, most frequent first"""
        return ", ".join(f"{k} {n:,}" for k, n in sorted(self.rejected.items(), key=lambda kv: (-kv[1], kv[0])))


def _divisors_desc(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]), reverse=True)


def _dp_and_batch(base: Parallelism, gpus: int, batch_given: bool, divisors: list[int]) -> tuple[int, int]:
    """The largest data-parallel size (and the global batch) for which the layout passes the batch rules.

    A given global batch stays: DP is the largest divisor (``divisors``: of ``batch / micro_batch``) within
    the GPUs that gives at least PP microbatches (a multiple of PP with interleaving) and a multiple of
    what expert parallelism needs. The default batch (~4M tokens) is rounded down to a multiple of DP x
    micro batch (x PP with interleaving), DP being capped at what that batch can feed. Either way a layout
    may use fewer GPUs than available; the estimate says so."""
    pp, v, mbs, cp = base.pp, base.virtual_stages, base.micro_batch, base.cp
    dp_max = gpus // (base.tp * pp * cp)
    q = base.ep // math.gcd(base.ep, cp) if base.ep > 1 else 1  # ep | dp x cp  <=>  q | dp

    def feeds(m: int) -> bool:
        return pp == 1 or (m >= pp and (v == 1 or m % pp == 0))

    if batch_given:
        seqs = base.global_batch // mbs
        for d in ([base.dp] if base.dp is not None else divisors):
            if d <= dp_max and seqs % d == 0 and d % q == 0 and feeds(seqs // d):
                return d, base.global_batch
        return base.dp or dp_max, base.global_batch  # none passes: the rules say why for this one
    k = pp if pp > 1 else 1
    fed = min(dp_max, max(1, base.global_batch // (mbs * k)))
    d = base.dp or fed // q * q or fed  # no multiple of q fits: the rules say why (ep_grid)
    step = d * mbs * (pp if v > 1 and pp > 1 else 1)
    return d, max(d * mbs * k, base.global_batch // step * step)


def search(model: ModelShape, t: TrainingSpec, gpus: int, acc: Accelerator, ic: Interconnect) -> SearchResult:
    """The fastest layout Megatron-LM accepts that fits in HBM, with counts of what was rejected and why.

    Tries TP within one NVLink domain (powers of two, and 72 on NVL72), PP 1..min(64, layers), 1, 2 or 4
    interleaved chunks (unless virtual_stages is set or TP and PP both are), no, selective and full
    recomputation (unless recompute is set), and for an MoE model EP in powers of two dividing the experts
    (unless ep is set); a value the blueprint or command line gives is the only one.
    Each candidate gets the largest DP that passes (`_dp_and_batch`); a candidate breaking a rule is counted
    under the first rule it breaks and not estimated. Without any accepted layout that fits in HBM, the one
    needing the least memory is returned (the report says it does not fit)."""
    from clusterctl.report.workload import parallelism  # workload imports this module

    tps = [x for x in (1, 2, 4, 8, 16, 32, 64, 72) if x <= ic.gpus_per_domain]
    if t.tp is not None:
        tps = [t.tp]
    vs = [t.virtual_stages] if t.virtual_stages != 1 or (t.tp is not None and t.pp is not None) else [1, 2, 4]
    recomputes = [t.recompute] if "recompute" in t.model_fields_set else ["none", "selective", "full"]
    # expert parallelism for an MoE model unless given: powers of two dividing the experts (the rules and
    # _dp_and_batch keep EP within DP x CP)
    eps = [t.ep] if "ep" in t.model_fields_set or not model.experts else \
        [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if e <= model.experts and model.experts % e == 0]
    batch_given = t.global_batch is not None
    policy = t.tp is None or t.pp is None or len(vs) * len(recomputes) > 1  # one given in full: checked as given
    divisors = _divisors_desc(t.global_batch // t.micro_batch) if batch_given and t.global_batch % t.micro_batch == 0 else []
    best: TrainingEstimate | None = None
    least: TrainingEstimate | None = None
    tried = accepted = fitting = 0
    rejected: dict[str, int] = {}
    example: dict[str, str] = {}
    layouts: list[Parallelism] = []
    for tp in tps:  # PP up to 64, the layers, and the GPUs left by TP x CP
        pps = [t.pp] if t.pp is not None else range(1, min(64, model.layers, max(1, gpus // (tp * t.cp))) + 1)
        for pp in pps:
            for v, ep in ((v, ep) for v in vs for ep in eps):
                if v > 1 and pp == 1 and len(vs) > 1:
                    continue  # interleaving needs pipeline stages: not a candidate unless asked for
                base = replace(parallelism(t, model, tp, pp, gpus), virtual_stages=v, ep=ep)
                if tp * pp * base.cp <= gpus:
                    dp, batch = _dp_and_batch(base, gpus, batch_given, divisors)
                    base = replace(base, dp=dp, global_batch=batch)
                for rc in recomputes:
                    tried += 1
                    par = with_pipeline_split(model, replace(base, recompute=rc))
                    bad = violations(model, par, gpus, search=policy)
                    if bad:
                        rejected[bad[0].key] = rejected.get(bad[0].key, 0) + 1
                        example.setdefault(bad[0].key, str(bad[0]))
                        continue
                    e = estimate(model, par, gpus, acc, ic)
                    layouts.append(e.par)
                    accepted += 1
                    if least is None or e.memory_gb["total"] < least.memory_gb["total"]:
                        least = e
                    if e.fits_memory:
                        fitting += 1
                        if best is None or e.tokens_per_s > best.tokens_per_s:
                            best = e
    chosen = best or least
    note = ""
    if chosen is not None and not batch_given:
        from clusterctl.report.workload import default_global_batch
        default = default_global_batch(model, gpus)
        if chosen.par.global_batch != default:
            note = (f"the default global batch of {default:,} sequences is rounded to {chosen.par.global_batch:,}, a "
                    f"multiple of micro batch x dp{' x pp' if chosen.par.virtual_stages > 1 else ''} "
                    "(Megatron-LM: global_batch_size % (micro_batch_size * data_parallel_size) == 0)")
    return SearchResult(chosen, tried, accepted, fitting, rejected, example, note, tuple(layouts))


def no_layout_error(model: ModelShape, gpus: int, r: SearchResult) -> TrainingConfigError:
    """The error for a search that accepted nothing: the most frequent rule's message, then the counts."""
    top = min(r.rejected, key=lambda k: (-r.rejected[k], k))
    return TrainingConfigError(
        f"{r.example[top]}; no layout of {model.name} on {gpus:,} GPUs passes Megatron-LM's rules with the given "
        f"settings: of {r.tried:,} tried, rejected: {r.rejections()}")


def gpu_note(e: TrainingEstimate, gpus: int, dp_given: bool = False) -> str | None:
    """Why a layout uses fewer GPUs than asked, or None when it uses them all."""
    if e.gpus >= gpus:
        return None
    p = e.par
    mp = p.tp * p.pp * p.cp
    full = gpus // mp
    if e.dp == full:
        why = f"tp x pp x cp = {p.tp} x {p.pp} x {p.cp} = {mp} does not divide {gpus:,}"
    elif dp_given:
        why = f"dp {e.dp:,} is given"
    elif violations(e.model, replace(p, dp=full), gpus, search=True):
        why = (f"the global batch of {p.global_batch:,} sequences at micro batch {p.micro_batch}"
               + (f" with at least {p.pp} microbatches per step" if p.pp > 1 else "")
               + f" feeds {e.dp:,} data-parallel ranks, not {full:,} (a larger --global-batch uses more GPUs)")
    else:
        why = f"dp {e.dp:,} is what the search chose"
    return f"uses {e.gpus:,} of the {gpus:,} GPUs asked for: {why}"


__all__ = ["NOT_MEGATRON", "RULES", "SHORT", "SPLIT_OPTIONS", "SearchResult", "Violation", "check", "dp_of",
           "etp_of", "gpu_note", "no_layout_error", "pipeline_split", "search", "violations"]
