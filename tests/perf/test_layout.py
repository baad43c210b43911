"""Layouts Megatron-LM runs: the search returns only those, counts what it rejects, and says when it leaves
GPUs idle or a layout does not fit (issue 13, "Layouts Megatron rejects").

`megatron_accepts` below restates Megatron-LM's assertions independently of clusterctl/perf/layout_rules.py
(read at NVIDIA/Megatron-LM d98e8a6): the property test holds every layout the search accepts against it.
"""

from __future__ import annotations

import json
from dataclasses import replace
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterctl.blueprint.training import TrainingSpec
from clusterctl.perf.interconnect import Interconnect
from clusterctl.perf.job import (
    Accelerator,
    ModelShape,
    Parallelism,
    TrainingConfigError,
)
from clusterctl.perf.layout_rules import check, pipeline_split, violations
from clusterctl.perf.layout_search import gpu_note, search
from clusterctl.perf.model_presets import preset
from clusterctl.perf.training import estimate
from tests.helpers import cli

H100 = Accelerator("h100-sxm", 989, 794.5, "", 80, 3.35)
B200 = Accelerator("b200", 2250, 1745, "", 180, 8.0)
HGX = Interconnect(8, 450, True, 8, 50)
NVL72 = Interconnect(72, 900, True, 72, 50)


def megatron_accepts(model: ModelShape, par: Parallelism, gpus: int) -> list[str]:
    """What Megatron-LM would assert on this layout (empty: it runs), written from Megatron's source."""
    tp, pp, cp, dp, v, ep = par.tp, par.pp, par.cp, par.dp, par.virtual_stages, par.ep
    world = tp * pp * cp * dp
    bad = []
    if world > gpus:
        bad.append("world")
    if model.heads % tp:                                          # transformer_config.py:1446
        bad.append("heads")
    groups = model.kv_heads or model.heads
    if groups % tp != 0 and tp % groups != 0:                     # transformer_config.py:1461
        bad.append("query groups")
    if not model.experts and model.ffn % tp:                      # layers.py:1038 divide()
        bad.append("ffn")
    bad += _megatron_split(model, par)
    if v > 1 and pp < 2:                                          # parallel_state.py:828
        bad.append("vpp")
    if par.global_batch % (par.micro_batch * dp):                 # num_microbatches_calculator.py:381
        bad.append("batch")
    m = par.global_batch // (par.micro_batch * dp)
    if v > 1:  # schedules.py:1160-1179, microbatch_group_size_per_vp_stage defaults to pp
        group = pp
        if not pp <= group <= m or 0 < m % group < pp:
            bad.append("interleaved microbatches")
    if cp > 1 and model.seq_len % (2 * cp):                      # arguments.py:1336
        bad.append("cp")
    if ep > 1 and (not model.experts or model.experts % ep):     # arguments.py:1657
        bad.append("experts")
    if ep > 1 and world % (tp * ep * pp):                         # parallel_state.py:878, etp = tp
        bad.append("expert grid")
    return bad


def _megatron_split(model: ModelShape, par: Parallelism) -> list[str]:
    """transformer_config.py:2229-2415 and transformer_block.get_num_layers_to_build: first/last stage counts
    (not with the account options; each > 0 and divisible by vp; the rest split evenly over the middle stages,
    each middle stage's layers divisible by vp), or the embedding and/or loss counted as a layer (the total
    divisible by pp, a stage's layers by vp). With no option stated the layout may use whichever account
    options make the split even."""
    pp, v, n = par.pp, par.virtual_stages, model.layers
    first, last = par.first_stage_layers, par.last_stage_layers
    if first is not None or last is not None:
        if par.account_for_embedding or par.account_for_loss:
            return ["uneven with account"]
        ends = [x for x in (first, last) if x is not None]
        if any(x <= 0 or x % v for x in ends):
            return ["first/last"]
        rest, stages = n - sum(ends), pp - len(ends)
        if rest < 0 or stages < 0 or bool(rest) != bool(stages) or (stages and (rest % stages or rest // stages % v)):
            return ["middle"]
        return []
    if par.account_for_embedding is not None or par.account_for_loss is not None:
        extras = [bool(par.account_for_embedding) + bool(par.account_for_loss)]
    else:
        extras = [0] if pp == 1 else [0, 1, 2]
    if not any((n + extra) % pp == 0 and (n + extra) // pp % v == 0 for extra in extras):
        return ["layers"]
    return []


@st.composite
def problems(draw):
    heads = draw(st.sampled_from([8, 12, 16, 24, 32, 40, 48, 56, 64, 96, 128]))
    kv = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    head_dim = draw(st.sampled_from([64, 128]))
    moe = draw(st.booleans()) and draw(st.booleans())
    experts = draw(st.sampled_from([8, 16, 64])) if moe else 0
    model = ModelShape(
        name="random", layers=draw(st.one_of(st.integers(1, 96), st.sampled_from([32, 48, 60, 80, 96, 126]))), hidden=heads * head_dim, heads=heads,
        kv_heads=kv, ffn_hidden=draw(st.integers(1, 64)) * 96 * draw(st.sampled_from([1, 3, 7])),
        vocab=32000, seq_len=draw(st.sampled_from([2048, 4096, 6000, 8192])), swiglu=True,
        experts=experts, topk=draw(st.integers(1, 2)) if moe else 1)
    ic = draw(st.sampled_from([HGX, NVL72]))
    gpus = draw(st.one_of(st.integers(1, 64).map(lambda n: n * ic.gpus_per_domain), st.integers(1, 3000)))
    spec = {"recompute": "full"}
    if draw(st.booleans()):
        spec["global_batch"] = draw(st.integers(1, 4096))
    spec["micro_batch"] = draw(st.sampled_from([1, 1, 2]))
    spec["cp"] = draw(st.sampled_from([1, 1, 2, 4]))
    if moe:
        spec["ep"] = draw(st.sampled_from([1, 2, 4, 8]))
    if draw(st.booleans()):
        spec["tp"] = draw(st.sampled_from([1, 2, 3, 4, 8]))
    return model, TrainingSpec(**spec), gpus, ic


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_the_search_returns_only_layouts_megatron_accepts(problem):
    model, spec, gpus, ic = problem
    try:
        r = search(model, spec, gpus, B200 if ic is NVL72 else H100, ic)
    except TrainingConfigError:
        return
    assert r.accepted == len(r.layouts) and r.tried == r.accepted + sum(r.rejected.values())
    for par in r.layouts:
        assert megatron_accepts(model, par, gpus) == [], par
        m = par.global_batch // (par.micro_batch * par.dp)
        assert par.pp == 1 or m >= par.pp  # the search's own policy: every stage gets work
    e = r.best
    if e is None:
        assert r.accepted == 0
        return
    assert e.par in r.layouts and e.gpus == e.par.tp * e.par.pp * e.par.cp * e.dp <= gpus
    note = gpu_note(e, gpus)
    assert (note is None) == (e.gpus == gpus)
    if note:
        assert note.startswith(f"uses {e.gpus:,} of the {gpus:,} GPUs asked for")


def test_the_interleaved_layout_with_one_microbatch_is_rejected():
    # the pick: TP 2 x PP 2, 4 chunks, 512 sequences on 2,048 GPUs = 1 microbatch per step
    model, _ = preset("llama3-70b")
    par = Parallelism(512, tp=2, pp=2, dp=512, virtual_stages=4)
    assert [v.key for v in violations(model, par, 2048)] == ["virtual_microbatches"]
    with pytest.raises(TrainingConfigError, match=r"1 microbatches per step are not a multiple of pp 2 .*"
                                                   r"num_microbatches % pipeline_model_parallel_size == 0"):
        check(model, par, 2048)


@pytest.mark.parametrize("change,key,message", [
    (dict(tp=3), "heads", "tp 3: attention heads 64 are not divisible by tp 3"),
    (dict(tp=16, dp=1), "ffn", None),  # 64 heads / 16 fine, 8 KV heads divide 16, MLP 28,672 / 16 fine
    (dict(pp=7), "layers", "pp 7: 80 layers (+0, +1 or +2 for embedding and loss) do not split evenly over pp 7"),
    (dict(pp=4, virtual_stages=3), "virtual_layers", "20 layers per pipeline stage are not divisible by 3"),
    (dict(pp=1, virtual_stages=2), "virtual_pp", "interleaving needs pp > 1"),
    (dict(global_batch=100), "global_batch", "global batch 100 is not divisible by micro batch 1 x dp 16 = 16"),
    (dict(cp=2, dp=8, seq_len=None), "seq_cp", None),
    (dict(ep=2), "experts_ep", "ep 2: the model has 0 experts (not an MoE model)"),
])
def test_each_rule_names_its_numbers(change, key, message):
    model, _ = preset("llama3-70b")
    change = dict(change)
    change.pop("seq_len", None)
    par = Parallelism(**({"global_batch": 512, "tp": 8, "pp": 2} | change))
    keys = [v.key for v in violations(model, par, 256)]
    if key in ("ffn", "seq_cp"):  # llama3-70b passes these: the model is changed to break them
        bad = model.model_copy(update={"ffn_hidden": 28680} if key == "ffn" else {"seq_len": 8190})
        keys = [v.key for v in violations(bad, par, 256)]
    assert keys[0] == key
    if message:
        assert message in str(violations(model, par, 256)[0])


def test_gqa_and_mla_style_kv_heads_follow_megatron():
    # Megatron accepts TP larger than the KV heads when TP is a multiple of them (transformer_config.py:1461)
    model = ModelShape(name="m", layers=8, hidden=4096, heads=32, kv_heads=8, vocab=32000, seq_len=4096)
    assert [v.key for v in violations(model, Parallelism(64, tp=16, dp=1), 16)] == []
    odd = model.model_copy(update={"kv_heads": 6, "heads": 48, "hidden": 6144})
    assert [v.key for v in violations(odd, Parallelism(64, tp=4, dp=1), 4)] == ["kv_heads"]


def test_uneven_layers_use_megatrons_embedding_and_loss_accounting():
    assert pipeline_split(126, 16, 4) == 2   # Llama 3 405B on 16 stages: (126 + 2) / 16 = 8, 2 per chunk
    assert pipeline_split(80, 3) == 1        # (80 + 1) / 3 = 27
    assert pipeline_split(80, 7) is None
    assert pipeline_split(96, 8, 12) == 0    # GPT-3 175B, 12 chunks of one layer


def test_moe_layout_is_stated_both_ways():
    r = cli("report", "blueprints/dgx-h100-superpod-1su.yaml", "--format", "json", "--model", "mixtral-8x7b",
            "--tp", "2", "--pp", "4", "--ep", "8", "--recompute", "full", "--global-batch", "256")
    assert r.returncode == 0, r.stderr
    lay = json.loads(r.stdout)["training"]["layout"]
    assert lay["attention"] == {"tp": 2, "cp": 1, "dp": 32, "pp": 4}
    assert lay["experts"] == {"etp": 2, "ep": 8, "edp": 4, "pp": 4}
    assert 2 * 1 * 32 * 4 == 2 * 8 * 4 * 4 == lay["gpus_used"]


# --- the three cases of the issue, through the real command line -----------------------------------------
BP = "blueprints/frontier-3tier-100k.yaml"
CASE = ["--gpus", "2048", "--model", "llama3-70b"]


def report(tmp_path, *args: str) -> tuple[list[str], dict]:
    """The training section's Markdown lines and JSON of one ``report -o`` run."""
    r = cli("report", BP, *CASE, *args, "-o", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    section = md.split("## Training estimate", 1)[1].split("\n## ", 1)[0]
    data = json.loads((tmp_path / "r" / "report.json").read_text())["training"]
    return [line for line in section.splitlines() if line.strip()], data


def test_cli_search_picks_only_what_megatron_runs_and_counts_rejections(tmp_path):
    md, t = report(tmp_path)
    lay = t["layout"]
    m = lay["microbatches"]
    assert lay["pp"] == 1 or m >= lay["pp"]
    assert lay["virtual_stages"] == 1 or m % lay["pp"] == 0  # was: TP 2 x PP 2 x 4 chunks, 1 microbatch
    s = lay["search"]
    assert s["tried"] == s["accepted"] + sum(s["rejected"].values()) and s["rejected"]["layers"] > 0
    assert lay["gpus_used"] == 2048 and t["notes"] == [] and t["fits_memory"]
    assert md[0].startswith("Model **llama3-70b**")
    assert any(line.startswith(f"Search: of {s['tried']:,} layouts tried") and "rejected because layers not "
               f"split evenly over PP (`layers`) {s['rejected']['layers']:,}" in line for line in md)


def test_cli_idle_gpus_and_a_layout_that_does_not_fit_open_the_estimate(tmp_path):
    md, t = report(tmp_path / "a", "--tp", "2", "--pp", "1")
    assert md[0].startswith("**Uses 1,024 of the 2,048 GPUs asked for") and "fits in memory" in md[0]
    assert not any("the fastest that fits" in line for line in md)
    assert t["layout"]["gpus_used"] == 1024 and not t["fits_memory"]
    assert t["notes"][0].startswith("uses 1,024 of the 2,048 GPUs asked for")
    assert "no layout Megatron-LM accepts with TP 2, PP 1 fits in memory" in t["notes"][1]
    # given in full: said plainly
    md, t = report(tmp_path / "b", "--tp", "2", "--pp", "1", "--recompute", "full")
    assert md[0].startswith("**Uses 1,024 of the 2,048 GPUs") and "the given layout does not fit in memory" in md[0]
    assert t["notes"][1].startswith("the given layout does not fit in memory")


@pytest.mark.parametrize("extra", [[], ["--pp", "2", "--recompute", "full"]])
def test_cli_a_given_layout_that_breaks_a_rule_names_it(extra):
    r = cli("report", BP, *CASE, "--tp", "3", *extra)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "tp 3: attention heads 64 are not divisible by tp 3 (Megatron-LM: num_attention_heads % " \
           "tensor_model_parallel_size == 0" in r.stderr
    # searched (tp given alone): every candidate is counted under the heads rule
    assert bool(re.search(r"of ([\d,]+) tried, rejected: heads \1\b", r.stderr)) == (not extra)


def test_search_finds_a_layout_for_405b_on_16k_gpus():
    model, _ = preset("llama3-405b")
    r = search(model, TrainingSpec(), 16384, H100, HGX)  # its time: benchmarks/bench_hotspots.py
    par = r.best.par
    assert r.best.gpus == par.tp * par.pp * par.dp * par.cp == 16384
    assert par.tp <= 8 and r.best.memory_gb["total"] <= r.best.memory_gb["usable"]  # TP in the NVLink domain; fits


def test_stage_layers_follow_megatrons_split():
    from clusterctl.perf.layout_rules import stage_layers
    deepseek = ModelShape(name="deepseek-v3-like", layers=61, hidden=7168, heads=128, vocab=129280, seq_len=4096)
    assert stage_layers(deepseek, Parallelism(256, pp=16, last_stage_layers=1)) == (4,) * 15 + (1,)
    assert stage_layers(deepseek, Parallelism(256, pp=8, last_stage_layers=5)) == (8,) * 7 + (5,)
    assert stage_layers(deepseek, Parallelism(256, pp=16, first_stage_layers=3, last_stage_layers=2)) == \
        (3,) + (4,) * 14 + (2,)
    llama, _ = preset("llama3-405b")
    both = Parallelism(2048, pp=16, virtual_stages=4, account_for_embedding=True, account_for_loss=True)
    assert stage_layers(llama, both) == (7,) + (8,) * 14 + (7,)
    assert stage_layers(llama, Parallelism(2048, pp=16)) == (7,) + (8,) * 14 + (7,)  # chosen: both counted
    assert violations(deepseek, Parallelism(256, pp=16, last_stage_layers=1), 256) == []
    assert [v.key for v in violations(deepseek, Parallelism(256, pp=16), 256)] == ["layers"]


def test_the_search_splits_unevenly_where_no_even_split_exists():
    # 61 layers on pp 16 split only with a short last stage (Megatron-Bridge's DeepSeek-V3 layout: 15 x 4 + 1)
    model = ModelShape(name="deepseek-v3-like", layers=61, hidden=7168, heads=128, vocab=129280, seq_len=4096,
                       ffn_hidden=18432, swiglu=True, tied_embeddings=False)
    r = search(model, TrainingSpec(tp=8, pp=16, global_batch=512, recompute="full"), 1024, H100, HGX)
    assert r.best is not None and r.best.par.last_stage_layers == 1 and r.rejected.get("layers", 0) == 0


def test_the_busiest_stage_sets_the_step():
    # 62 layers on 2 stages: 31 + 31 against 41 + 21 (--decoder-first-pipeline-num-layers 41): the first
    # stage's 41 layers set every microbatch slot, 41 / 31 = 1.32 times the even split's compute
    model = ModelShape(name="m", layers=62, hidden=8192, heads=64, vocab=32000, seq_len=4096, swiglu=True)
    even = estimate(model, Parallelism(512, tp=8, pp=2), 64, H100, HGX)
    uneven = estimate(model, Parallelism(512, tp=8, pp=2, first_stage_layers=41), 64, H100, HGX)
    ratio = uneven.breakdown_s["compute"] / even.breakdown_s["compute"]
    assert ratio == pytest.approx(41 / 31, rel=1e-6)


def test_a_pipeline_layout_string_gives_each_rank_its_layers():
    from clusterctl.perf.layout_rules import split_arguments, stage_layers
    from clusterctl.perf.pipeline_layout import parse, problems
    model = ModelShape(name="deepseek-v3-like", layers=61, hidden=7168, heads=128, vocab=129280, seq_len=4096)
    # Megatron-LM's GB200 guide: 32 stages on pp 8 x vp 4; stage i is virtual stage i // 8 of rank i % 8
    par = Parallelism(256, pp=8, virtual_stages=4, pipeline_layout="Et|(tt|)*30L")
    assert stage_layers(model, par) == (7, 8, 8, 8, 8, 8, 8, 6)
    assert violations(model, par, 256) == []
    assert split_arguments(model, par) == ["--pipeline-model-parallel-layout Et|(tt|)*30L"]
    # parse_str_to_list's own example (pipeline_parallel_layer_layout.py:286-288)
    assert parse("Ettt|(tt|)*29,m|L") == ["Ettt"] + ["tt"] * 29 + ["m", "L"]
    assert problems("Et*4|(t*4|)*14tmL", 16, 1, 61, mtp_layers=1) == []   # Megatron-Bridge GB300 recipe
    assert problems("tE|(tt|)*30L", 8, 4, 61) == ["pipeline layout 'tE|(tt|)*30L': the first layer must be the "
                                                  "embedding E, exactly once"]
    assert problems("Et*4|(t*4|)*14tmL", 16, 1, 61)[0].endswith("has 1 MTP layers, the model 0")
    # refused, naming Megatron's rule: a layer too many; VP that is not the layout's; combined with a first/last count
    (bad,) = violations(model, replace(par, pipeline_layout="Et|(tt|)*30tL"), 256)
    assert bad.key == "pipeline_layout" and "has 62 transformer layers, the model 61" in str(bad)
    assert "pipeline_parallel_layer_layout.py:41-151" in str(bad)
    (bad,) = violations(model, replace(par, virtual_stages=2), 256)
    assert "32 stages on pp 8 are 4 virtual stages per rank, not the layout's virtual_stages 2" in str(bad)
    (bad,) = violations(model, replace(par, last_stage_layers=6), 256)
    assert bad.key == "split_options" and "transformer_config.py:2229-2239" in str(bad)
