"""The search for the fastest parallel layout Megatron-LM runs (the rules: clusterctl/perf/layout_rules.py).

For MoE Megatron lays the same GPUs out twice (parallel_state.py:856-892): attention and the dense parts
as TP x CP x DP x PP, the experts as ETP x EP x EDP x PP, so EDP = TP x CP x DP / (ETP x EP). The search
(`search`) enumerates TP (powers of two up to the NVLink domain, 72 on NVL72), PP from 1 to
min(64, layers, GPUs / (TP x CP)), 1/2/4 interleaved chunks and no, selective or full recomputation unless given;
for each it picks the largest DP that passes the batch and expert rules (`_dp_and_batch`), counts the
candidate under the first rule it still breaks or estimates it, and keeps the fastest that fits in HBM.
Where the layers split evenly over PP only with the embedding and/or loss counted as a layer, the candidate
says so (``--account-for-*-in-pipeline-split``); where they split evenly in no such way, it tries a shorter
last stage (``--decoder-last-pipeline-num-layers``, `layout_rules.with_pipeline_split`), whose busiest stage
then paces the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from clusterctl.perf.job import ModelShape, Parallelism, TrainingConfigError
from clusterctl.perf.layout_rules import violations, with_pipeline_split
from clusterctl.perf.training import TrainingEstimate, estimate
from clusterctl.perf.workload import default_global_batch, parallelism

if TYPE_CHECKING:
    from clusterctl.blueprint.training import TrainingSpec
    from clusterctl.perf.interconnect import Interconnect
    from clusterctl.perf.job import Accelerator


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
    divisors = _divisors_desc(t.global_batch // t.micro_batch) \
        if batch_given and t.global_batch % t.micro_batch == 0 else []
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


__all__ = ["SearchResult", "gpu_note", "no_layout_error", "search"]
