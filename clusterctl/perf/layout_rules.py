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
    are set (megatron/core/transformer/transformer_block.py:150-158, transformer_config.py:2368-2415,
    arguments.py:985-999). When the layout gives none of the four split options, the report chooses e = 0, 1
    or 2 (Llama 3 405B's 126 layers on 16 stages are (126 + 2) / 16 = 8 per stage) and says which options the
    layout needs; given options are checked as given.
``split_options``
    ``--decoder-first/last-pipeline-num-layers`` cannot be combined with the ``--account-for-*`` options
    (transformer_config.py:2229-2239; transformer_block.py:112).
``uneven_layers``
    with ``--decoder-first-pipeline-num-layers`` and/or ``--decoder-last-pipeline-num-layers``: each given count
    > 0 (transformer_config.py:2304, 2323) and, with interleaving, divisible by the chunks per stage (2306-2317,
    2325-2336); the remaining ``num_layers - first - last`` layers split evenly over the remaining stages
    (no middle layers exactly when no middle stages, 2341-2345; divisible, 2348-2353; each middle stage's
    layers divisible by the chunks, 2355-2367; transformer_block.py:129-133). DeepSeek-V3's 61 layers on
    pp 16: last 1 (15 x 4 + 1), on pp 8: last 5 (7 x 8 + 5).
``pipeline_layout``
    ``--pipeline-model-parallel-layout`` (clusterctl/perf/pipeline_layout.py): the stages a multiple of PP, VP =
    stages / PP equal to the layout's virtual stages, the embedding first and the loss last, each once, the
    transformer layers all there, MTP layers after them in the last virtual stage of their rank
    (pipeline_parallel_layer_layout.py:41-151, arguments.py:941-952); not combined with the four options above
    (transformer_config.py:2242-2259).
``virtual_pp``
    interleaving needs ``pipeline_model_parallel_size > 1`` (parallel_state.py:827-830; arguments.py:1000-1008
    asks for > 2 only with ``--no-overlap-p2p-communication``, overlap being the default).
``virtual_layers``
    each stage's layers split evenly into its chunks: ``num_layers_per_pipeline_rank % vp_size == 0``
    (transformer_block.py:174-178, arguments.py:972; with the ``--account-for-*`` options on the stage's
    layers counted with them, transformer_config.py:2404-2415).
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

The search for the fastest layout that passes them is clusterctl/perf/layout_search.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from clusterctl.perf import pipeline_layout
from clusterctl.perf.job import ModelShape, Parallelism, TrainingConfigError

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
    "split_options": "num_layers_in_first/last_pipeline_stage cannot be set with account_for_embedding/loss_in_"
                     "pipeline_split, megatron/core/transformer/transformer_config.py:2229-2239 (nor either with "
                     "pipeline_model_parallel_layout, 2242-2259)",
    "uneven_layers": "num_layers - first - last split evenly over the middle stages, each given count > 0 and "
                     "divisible by the virtual stages, megatron/core/transformer/transformer_config.py:2295-2367",
    "pipeline_layout": "pipeline_model_parallel_layout: stages a multiple of PP, embedding first and loss last once "
                       "each, num_layers decoder layers, MTP in the last virtual stage, megatron/core/transformer/"
                       "pipeline_parallel_layer_layout.py:41-151",
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
    "split_options": "first/last stage layers given with embedding/loss accounting",
    "uneven_layers": "first/last stage layers leave an uneven middle",
    "pipeline_layout": "pipeline layout string refused",
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


def split_given(par: Parallelism) -> bool:
    """The layout states at least one of Megatron's four split options (else the rules choose)."""
    return any(x is not None for x in (par.first_stage_layers, par.last_stage_layers, par.account_for_embedding,
                                       par.account_for_loss, par.pipeline_layout))


def split_options(model: ModelShape, par: Parallelism) -> tuple[bool, bool]:
    """(embedding, loss) counted as a layer in the split: as given, or, with no split option given, what
    `pipeline_split` needs (embedding first, then the loss too)."""
    if split_given(par):
        return bool(par.account_for_embedding), bool(par.account_for_loss)
    extra = pipeline_split(model.pipeline_layers, par.pp, par.virtual_stages) or 0
    return extra >= 1, extra >= 2


def stage_layers(model: ModelShape, par: Parallelism) -> tuple[int, ...]:
    """Transformer layers on each pipeline rank (all its interleaved chunks), first to last, as Megatron-core
    builds them (transformer_block.py:76-203, ``get_num_layers_to_build``). For a layout the rules refuse, the
    middle stages get the rest rounded up (what memory and time would be at the worst)."""
    pp, n = par.pp, model.pipeline_layers
    if par.pipeline_layout is not None and not _layout_conflict(par):
        try:
            return pipeline_layout.rank_layers(par.pipeline_layout, pp)
        except ValueError:
            pass  # refused by the rules; the even split stands in
    if pp == 1:
        return (n,)
    first, last = par.first_stage_layers, par.last_stage_layers
    if first is not None or last is not None:
        ends = (first is not None) + (last is not None)
        mid_stages = pp - ends
        mid = math.ceil(max(0, n - (first or 0) - (last or 0)) / mid_stages) if mid_stages > 0 else 0
        out = [mid] * pp
        if first is not None:
            out[0] = first
        if last is not None:
            out[-1] = last
        return tuple(out)
    emb, loss = split_options(model, par)
    per = math.ceil((n + emb + loss) / pp)
    out = [per] * pp
    out[0] -= emb
    out[-1] -= loss
    return tuple(out)


def with_pipeline_split(model: ModelShape, par: Parallelism) -> Parallelism:
    """``par`` with Megatron-LM's split options stated: the ``--account-for-*`` options `pipeline_split` needs
    (Llama 3 405B: 126 + 2 = 128 on 16 stages, 7 on the first and the last, as Dubey et al. 2024 sec. 3.3.2
    ran it), or, where no even split exists even with them, a shorter last stage
    (``--decoder-last-pipeline-num-layers``: ``ceil(L / pp)`` layers, rounded up to a multiple of the chunks,
    on every other stage; DeepSeek-V3's 61 layers on pp 16 as Megatron-Bridge splits them, 15 x 4 + 1).
    Options that are already given are kept."""
    if split_given(par) or par.pp == 1:
        return par
    extra = pipeline_split(model.pipeline_layers, par.pp, par.virtual_stages)
    if extra is not None:
        return replace(par, account_for_embedding=extra >= 1, account_for_loss=extra >= 2) if extra else par
    v = par.virtual_stages
    per = -(-math.ceil(model.pipeline_layers / par.pp) // v) * v
    last = model.pipeline_layers - (par.pp - 1) * per
    return replace(par, last_stage_layers=last) if last > 0 and last % v == 0 else par


SPLIT_OPTIONS = {0: "", 1: "--account-for-embedding-in-pipeline-split",
                 2: "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"}


def split_arguments(model: ModelShape, par: Parallelism) -> list[str]:
    """Megatron-LM's command-line options for the layout's pipeline split (empty for an even split)."""
    if par.pipeline_layout is not None:
        return [f"--pipeline-model-parallel-layout {par.pipeline_layout}"]
    if par.pp == 1:
        return []
    out = [f"--decoder-{k}-pipeline-num-layers {x}" for k, x in (("first", par.first_stage_layers),
                                                                  ("last", par.last_stage_layers)) if x is not None]
    if out:
        return out
    emb, loss = split_options(model, par)
    return [o for o, on in (("--account-for-embedding-in-pipeline-split", emb),
                            ("--account-for-loss-in-pipeline-split", loss)) if on]


def _layout_conflict(par: Parallelism) -> bool:
    """the layout string is combined with another split option (transformer_config.py:2242-2259)"""
    return par.pipeline_layout is not None and (par.first_stage_layers is not None or par.last_stage_layers
                                                is not None or bool(par.account_for_embedding or par.account_for_loss))


def _split_violations(model: ModelShape, par: Parallelism) -> list[Violation]:
    """The ``layers``, ``split_options``, ``uneven_layers``, ``pipeline_layout`` and ``virtual_layers`` rules
    (module docstring)."""
    pp, v, n = par.pp, par.virtual_stages, model.pipeline_layers
    first, last = par.first_stage_layers, par.last_stage_layers
    emb, loss = bool(par.account_for_embedding), bool(par.account_for_loss)
    if par.pipeline_layout is not None:
        if _layout_conflict(par):
            return [Violation("split_options", f"pp {pp}: the pipeline layout cannot be combined with first/last "
                                               "stage layers or counting the embedding or loss as a layer")]
        return [Violation("pipeline_layout", p) for p in
                pipeline_layout.problems(par.pipeline_layout, pp, v, n, getattr(model, "mtp_layers", 0) or 0)]
    if first is not None or last is not None:
        given = ", ".join(f"{k} stage {x}" for k, x in (("first", first), ("last", last)) if x is not None)
        if emb or loss:
            return [Violation("split_options", f"pp {pp}: layers on the {given} cannot be combined with counting "
                                               "the embedding or loss as a layer")]
        out = [Violation("uneven_layers", f"pp {pp}: the {k} stage's {x} layers must be at least 1")
               for k, x in (("first", first), ("last", last)) if x is not None and x < 1]
        out += [Violation("uneven_layers", f"virtual stages {v}: the {k} stage's {x} layers are not divisible by "
                                           f"{v} chunks") for k, x in (("first", first), ("last", last))
                if x is not None and v > 1 and x % v]
        mid_layers = n - (first or 0) - (last or 0)
        mid_stages = pp - (first is not None) - (last is not None)
        if mid_layers < 0 or mid_stages < 0 or bool(mid_layers) != bool(mid_stages):
            out.append(Violation("uneven_layers", f"pp {pp}: {n} layers with the {given} leave {mid_layers} layers "
                                                  f"for {max(mid_stages, 0)} middle stages"))
        elif mid_stages and mid_layers % mid_stages:
            out.append(Violation("uneven_layers", f"pp {pp}: {n} layers with the {given} leave {mid_layers} layers, "
                                                  f"not divisible by the {mid_stages} middle stages"))
        elif mid_stages and v > 1 and (mid_layers // mid_stages) % v:
            out.append(Violation("uneven_layers", f"virtual stages {v}: {mid_layers // mid_stages} layers per middle "
                                                  f"stage are not divisible by {v} chunks"))
        return out
    if split_given(par):
        counted = n + emb + loss
        what = f"{n} layers" + (f" + {emb + loss} for {' and '.join(k for k, x in (('embedding', emb), ('loss', loss)) if x)}"
                                if emb or loss else "")
        if counted % pp:
            return [Violation("layers", f"pp {pp}: {what} = {counted} do not split evenly over pp {pp}")]
        if v > 1 and (counted // pp) % v:
            return [Violation("virtual_layers", f"virtual stages {v}: {counted // pp} layers per pipeline stage are "
                                                f"not divisible by {v} chunks")]
        return []
    if pipeline_split(n, pp) is None:
        return [Violation("layers", f"pp {pp}: {n} layers (+0, +1 or +2 for embedding and loss) do not split "
                                    f"evenly over pp {pp}; give first_stage_layers / last_stage_layers for an "
                                    f"uneven split")]
    if v > 1 and pp > 1 and pipeline_split(n, pp, v) is None:
        per = [(n + e) // pp for e in (0, 1, 2) if (n + e) % pp == 0]
        return [Violation("virtual_layers", f"virtual stages {v}: {per[0]} layers per pipeline stage are not "
                                            f"divisible by {v} chunks")]
    return []


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
    if (not model.experts or model.leading_dense_layers) and model.ffn % tp:
        out.append(Violation("ffn", f"tp {tp}: MLP width {model.ffn:,} is not divisible by tp {tp}"))
    out += _split_violations(model, par)
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


__all__ = ["NOT_MEGATRON", "RULES", "SHORT", "SPLIT_OPTIONS", "Violation", "check", "dp_of", "etp_of",
           "pipeline_split", "split_arguments", "split_given", "split_options", "stage_layers", "violations", "with_pipeline_split"]
