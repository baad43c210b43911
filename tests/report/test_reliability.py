"""Tests for the reliability report section and its sourced failure rates."""

import json
import math
import re

import pytest
import yaml

from clusterctl.report import reliability
from clusterctl.report.reliability import (
    RATES_FILE,
    goodput,
    interruptions_per_day,
    load_rates,
    optimal_interval_s,
    wasted_fraction,
)
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, plan_of, shipped

TAG = re.compile(r"^\[(P|Q|S|D)\] \S")

# Llama 3 405B pre-training, 54-day snapshot: 419 unexpected interruptions on 16,384 GPUs / 2,048 servers
LLAMA3_PER_DAY = 419 / 54  # 7.76


def raw():
    return yaml.safe_load(RATES_FILE.read_text())


def test_every_rate_has_a_tagged_source_and_derivation():
    data = raw()
    assert data["rates"]
    for key, r in data["rates"].items():
        assert TAG.match(r["source"]), key
        assert r["derivation"].startswith("[D] "), key
        assert r["per"] in reliability.UNITS and r["category"] in reliability.CATEGORIES, key
        assert r["rate_per_day"] > 0, key
    for key, src in data["calibration"]["sources"].items():
        assert TAG.match(src), key
    for key, x in data["cross_checks"].items():
        assert TAG.match(x["source"]), key
    for section in ("logs", "class_logs"):
        for key, x in data[section].items():
            assert TAG.match(x["source"]), key
            assert x["derivation"].startswith("[D] "), key


def test_rates_are_the_source_counts_over_component_days():
    data = raw()
    cal = data["calibration"]
    exposure = {"gpu": cal["gpus"], "node": cal["nodes"], "link": cal["links"]}
    for key, r in data["rates"].items():
        assert r["rate_per_day"] == pytest.approx(r["events"] / (exposure[r["per"]] * cal["days"]), rel=1e-3), key
    assert sum(r["events"] for r in data["rates"].values()) == cal["unexpected_interruptions"] == 419
    assert cal["nodes"] * 8 == cal["gpus"] == 16384
    # 16,384 host links + 16,384 ToR uplinks (full bisection) + 16,384 / 7 aggregation links
    assert cal["links"] == 16384 + 16384 + round(16384 / 7)


def test_fit_rates_reproduce_the_419_interruptions_they_were_computed_from():
    """A fit, not a validation: the rates are the Llama 3 snapshot's 419 interruptions divided by its component
    days, so summing rate x count over the same cluster gives 419 / 54 back by construction (it checks the
    arithmetic and the component counts, nothing about other clusters). A holdout would be a figure not used
    for any rate: the band's logs (failure_rates.yaml ``logs``; BLOOM and the B200 cluster set no point) are
    checked against the band in the band tests below. The RSC 1,024-GPU job MTTF (7.9 h, ``cross_checks``) is
    an A100 figure with a different failure accounting, quoted second-hand ([S]), and is only shown. (For a 1,024-GPU job on 128 nodes the rates give a mean time
    between interruptions of ~49 h against RSC's 7.9 h: as a holdout, the RSC MTTF would fail.)"""
    rates = load_rates().rates
    per_day = interruptions_per_day(16384, 2048, 0, 35109, rates)
    assert per_day == pytest.approx(LLAMA3_PER_DAY, rel=2e-3)


def test_interruptions_scale_linearly_with_size():
    rates = load_rates().rates
    one = interruptions_per_day(16384, 2048, 100, 35109, rates)
    assert interruptions_per_day(32768, 4096, 200, 70218, rates) == pytest.approx(2 * one)
    assert interruptions_per_day(1024, 128, 0, 35109 / 16, rates) == pytest.approx(one / 16)
    # each unit contributes its summed rate x count
    assert interruptions_per_day(1, 0, 0, 0, {"gpu": 0.5}) == 0.5
    assert interruptions_per_day(0, 0, 3, 0, {"switch": 0.1}) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        interruptions_per_day(1, 1, 1, 1, {"rack": 1.0})


def test_plan_at_llama3_size_matches_the_source():
    """A 1-SU blueprint scaled to 2,048 DGX H100 (16,384 GPUs): GPU, host and software causes give exactly
    the source's 384 non-network interruptions in 54 days; the network term follows the planned links."""
    bp = shipped("dgx-h100-superpod-1su")
    group = bp["node_groups"][0]
    group["count"], group["hostnames"] = 2048, "dgx[0001-2048]"
    bp["fabrics"][0]["tiers"] = 3
    s = reliability.build(ReportContext(plan_of(bp)))
    d = s.data
    assert d["counts"]["gpus"] == 16384 and d["counts"]["gpu_nodes"] == 2048
    non_network = sum(c["per_day"] for c in d["by_category"] if c["category"] != "network")
    assert non_network == pytest.approx((419 - 35) / 54, rel=2e-3)
    network = next(c for c in d["by_category"] if c["category"] == "network")
    assert network["per_day"] == pytest.approx(35 / 54 * d["counts"]["links"] / 35109, rel=2e-3)
    assert d["interruptions_per_day"] == pytest.approx(LLAMA3_PER_DAY, rel=0.1)
    assert d["mtbi_h"] == pytest.approx(24 / d["interruptions_per_day"], rel=1e-5)


def test_young_optimal_interval_and_goodput():
    delta, m, r = 60.0, 10 * 3600.0, 600.0
    tau_star = optimal_interval_s(delta, m)
    assert tau_star == pytest.approx(math.sqrt(2 * 60 * 36000))  # 2,078 s
    assert wasted_fraction(1800, delta, r, m) == pytest.approx(60 / 1800 + (900 + 600) / 36000)
    assert goodput(1800, delta, r, m) == pytest.approx(1 - 60 / 1800 - 1500 / 36000)
    best = goodput(tau_star, delta, r, m)
    assert best == pytest.approx(1 - math.sqrt(2 * delta / m) - r / m)
    for tau in (300, 900, 0.8 * tau_star, 1.25 * tau_star, 3600, 7200):
        assert best >= goodput(tau, delta, r, m)
    assert goodput(3600, delta, r, 1800) == 0.0  # clamped


def test_section_goodput_uses_storage_write_time():
    plan = plan_of(shipped("dgx-h100-superpod-1su"))
    d = reliability.build(ReportContext(plan, restart_s=300)).data
    gp = d["goodput"]
    delta = 980e9 / 120e9  # 70B x 14 bytes on lustre at 120 GB/s
    m = d["mtbi_h"] * 3600
    assert gp["write_s"] == pytest.approx(delta, rel=1e-5)
    assert gp["interval_s"] == 1800 and gp["restart_s"] == 300
    assert gp["goodput"] == pytest.approx(1 - delta / 1800 - (900 + 300) / m, rel=1e-5)
    assert gp["optimal_interval_s"] == pytest.approx(math.sqrt(2 * delta * m), rel=1e-5)
    assert gp["goodput_at_optimal"] >= gp["goodput"]


def test_whole_cluster_vs_1024_gpu_job():
    d = reliability.build(ReportContext(plan_of(shipped("frontier-3tier-100k")))).data
    whole, ref = d["jobs"]
    assert whole["gpus"] == 106496 and ref["gpus"] == 1024
    assert ref["per_day"] == pytest.approx(whole["per_day"] * 1024 / 106496, rel=1e-5)
    assert whole["mtbi_h"] < ref["mtbi_h"]
    s = reliability.build(ReportContext(plan_of(shipped("frontier-3tier-100k"))))
    assert "applied to this cluster's size" in s.markdown


def test_cloud_without_fabric_estimates_links():
    d = reliability.build(ReportContext(plan_of(shipped("aws-p5")))).data
    assert d["counts"]["links"] == round(128 * 35109 / 16384)
    assert d["counts"]["links_basis"].startswith("estimated")


def test_missing_inputs_skip_goodput():
    s = reliability.build(ReportContext(plan_of(shipped("lab-2node"))))
    assert s.data["goodput"]["goodput"] is None
    assert "checkpoint" in s.data["goodput"]["missing"]
    assert "Goodput is not computed" in s.markdown


@pytest.mark.parametrize("name", sorted(p.stem for p in BLUEPRINTS.glob("*.yaml")))
def test_every_shipped_blueprint_builds(name):
    s = reliability.build(ReportContext(plan_of(shipped(name))))
    assert s.key == "reliability" and s.markdown.endswith("\n")
    assert json.loads(json.dumps(s.data)) == s.data
    assert s.data["interruptions_per_day"] > 0


# Overall unexpected-interruption rates of published logs, per 1,000 GPU-days, from the sources' own figures
# (research note on published failure logs, section 4); none is computed by the code under test.
LLAMA3_PER_KGPUD = 419 / (16384 * 54) * 1000  # Llama 3 Table 5: 419 in 54 days on 16,384 H100 (Meta) = 0.474
BLOOM_PER_KGPUD = (1 / (384 * 7) * 1000, 2 / (384 * 7) * 1000)  # "1-2 GPU failures a week", 384 A100 (IDRIS)
B200_PER_KGPUD = 10 / (504 * 55) * 1000  # 10 Xid GPU failures, 504 B200, 55 days (SKT / Lablup) = 0.361
RSC1_PER_KGPUD = 6.50 / 8  # Kokolis et al.: 6.50 per 1,000 node-days, 8 GPUs per node (Meta) = 0.8125
RSC2_PER_KGPUD = 2.34 / 8  # 2.34 per 1,000 node-days (Meta) = 0.2925
OPT_PER_KGPUD = (35 + 70) / (992 * 60) * 1000  # OPT-175B: 35 manual + 70 automatic restarts, 992 A100, 2 months


def band_data(name="dgx-h100-superpod-1su", **ctx):
    return reliability.build(ReportContext(plan_of(shipped(name)), **ctx)).data["band"]


def test_band_points_are_the_named_logs_in_order():
    pts = {p["point"]: p for p in band_data()["points"]}
    assert [p for p in pts] == ["low", "central", "high"]
    assert pts["low"]["per_1000_gpu_days"] <= pts["central"]["per_1000_gpu_days"] <= pts["high"]["per_1000_gpu_days"]
    assert pts["low"]["per_1000_gpu_days"] == pytest.approx(RSC2_PER_KGPUD, rel=1e-3)
    assert pts["central"]["per_1000_gpu_days"] == pytest.approx(LLAMA3_PER_KGPUD, rel=1e-3)
    assert pts["high"]["per_1000_gpu_days"] == pytest.approx(OPT_PER_KGPUD, rel=1e-3)
    for p in pts.values():
        assert p["interruptions_per_day"] > 0 and p["mtbi_h"] == pytest.approx(24 / p["interruptions_per_day"], rel=1e-5)
    assert pts["low"]["mtbi_h"] > pts["central"]["mtbi_h"] > pts["high"]["mtbi_h"]


def test_band_contains_three_independent_logs():
    """The acceptance of issue 31: the band [low, high] holds the overall rates of at least three logs from
    different operators. Llama 3 (Meta) is the central point; BLOOM (BigScience on IDRIS) and the B200
    cluster (SKT / Upstage / Lablup) set no point, so they are holdouts; Meta RSC-1 lies inside too."""
    pts = {p["point"]: p["per_1000_gpu_days"] for p in band_data()["points"]}
    low, high = pts["low"], pts["high"]
    independent = {"Meta": [LLAMA3_PER_KGPUD], "BigScience (IDRIS)": list(BLOOM_PER_KGPUD),
                   "SKT / Upstage / Lablup": [B200_PER_KGPUD]}
    for operator, rates in independent.items():
        for r in rates:
            assert low <= r <= high, (operator, r)
    assert low <= RSC1_PER_KGPUD <= high
    assert len(independent) >= 3


def test_band_logs_in_the_file_are_the_published_figures():
    logs = {g["key"]: g for g in band_data()["logs"]}
    assert logs["llama3_405b"]["per_1000_gpu_days"] == pytest.approx(LLAMA3_PER_KGPUD, rel=1e-3)
    assert logs["bloom_176b"]["per_1000_gpu_days"] == pytest.approx(BLOOM_PER_KGPUD[0], rel=1e-3)
    assert logs["bloom_176b"]["per_1000_gpu_days_upper"] == pytest.approx(BLOOM_PER_KGPUD[1], rel=1e-3)
    assert logs["b200_skt"]["per_1000_gpu_days"] == pytest.approx(B200_PER_KGPUD, rel=1e-3)
    assert logs["meta_rsc1"]["per_1000_gpu_days"] == pytest.approx(RSC1_PER_KGPUD, rel=1e-3)
    assert logs["opt_175b"]["per_1000_gpu_days"] == pytest.approx(OPT_PER_KGPUD, rel=1e-3)
    assert {k: g["position"] for k, g in logs.items() if g["use"] == "band"} == {
        "llama3_405b": "sets central", "meta_rsc2": "sets low", "meta_rsc1": "inside", "opt_175b": "sets high",
        "bloom_176b": "inside", "b200_skt": "inside", "crusoe_h200": "inside"}
    assert logs["ft_hsdp"]["use"] == "excluded" and logs["ft_hsdp"]["excluded_why"]
    for g in logs.values():
        assert g["evidence"] in "PQS" and g["era"] and g["gpu"] and g["gpus"] > 0 and g["counted"]


def test_band_scales_every_class_at_low_and_high():
    pts = {p["point"]: p for p in band_data()["points"]}
    central = {k["category"]: k for k in pts["central"]["by_category"]}
    for name, rate in (("low", RSC2_PER_KGPUD), ("high", OPT_PER_KGPUD)):
        scale = rate / LLAMA3_PER_KGPUD
        assert pts[name]["scale"] == pytest.approx(scale, rel=1e-3)
        assert pts[name]["per_class"].startswith("scaled")
        for k in pts[name]["by_category"]:
            c = central[k["category"]]
            assert k["per_1000_component_days"] == pytest.approx(c["per_1000_component_days"] * scale, rel=1e-3)
            assert k["per_day"] == pytest.approx(c["per_day"] * scale, rel=1e-3)
        assert pts[name]["interruptions_per_day"] == pytest.approx(
            pts["central"]["interruptions_per_day"] * scale, rel=1e-3)
    assert pts["central"]["per_class"].startswith("measured")
    # central per class = Llama 3 Table 5 counts per component-day (GPU causes 268 of 419, per GPU-day)
    assert central["gpu"]["per_1000_component_days"] == pytest.approx(268 / (16384 * 54) * 1000, rel=2e-3)


def test_band_goodput_and_young_interval_at_each_point():
    """δ = 70B x 14 bytes on lustre at 120 GB/s, τ = 30 min, R = 5 min: goodput and τ* = √(2δM) at each
    point's MTBI; a higher interruption rate gives a shorter τ* and a lower goodput."""
    b = band_data(restart_s=300)
    delta = 980e9 / 120e9
    for p in b["points"]:
        gp, m = p["goodput"], p["mtbi_h"] * 3600
        assert gp["write_s"] == pytest.approx(delta, rel=1e-5) and gp["mtbi_s"] == pytest.approx(m, rel=1e-5)
        assert gp["goodput"] == pytest.approx(1 - delta / 1800 - (900 + 300) / m, rel=1e-5)
        assert gp["optimal_interval_s"] == pytest.approx(math.sqrt(2 * delta * m), rel=1e-5)
        assert gp["goodput_at_optimal"] == pytest.approx(1 - math.sqrt(2 * delta / m) - 300 / m, rel=1e-4)
    low, central, high = b["points"]
    assert low["goodput"]["optimal_interval_s"] > central["goodput"]["optimal_interval_s"] > \
        high["goodput"]["optimal_interval_s"]
    assert low["goodput"]["goodput"] > central["goodput"]["goodput"] > high["goodput"]["goodput"]
    top = reliability.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su")), restart_s=300)).data
    assert central["goodput"] == top["goodput"] and central["mtbi_h"] == top["mtbi_h"]


def test_band_in_report_json_and_markdown():
    from clusterctl.report import document

    rep = document.build(plan_of(shipped("dgx-h100-superpod-1su")))
    band = rep.to_json()["reliability"]["band"]
    assert band["unit"] == "unexpected interruptions per 1,000 GPU-days"
    assert "low = Meta RSC-2" in band["basis"] and "central = Llama 3" in band["basis"]
    assert "high = OPT-175B" in band["basis"] and "scaled" in band["basis"]
    assert [p["log"] for p in band["points"]] == ["meta_rsc2", "llama3_405b", "opt_175b"]
    assert band["not_separated"] and any("NVLink" in x for x in band["not_separated"])
    md = rep.to_markdown()
    assert "**Band across 7 published logs.**" in md
    assert "| low | 0.292 | Meta RSC-2 research cluster \\[S\\] |" in md
    assert "not independent of each other" in md and "Young's τ*" in md


def test_class_logs_are_compared_per_component():
    classes = {c["key"]: c for c in band_data()["class_logs"]}
    # BLOOM and the B200 cluster count GPU failures only: inside the band's GPU class (0.187 to 1.13)
    assert classes["bloom_gpu"]["position"] == classes["b200_gpu"]["position"] == "inside"
    assert classes["bloom_gpu"]["kind"] == "interruptions"
    # Fire-Flyer's IB flash cuts are events (flaps included), far above Llama 3's switch/cable interruptions
    assert classes["fireflyer_ib_flash_cuts"]["kind"] == "events"
    assert classes["fireflyer_ib_flash_cuts"]["position"] == "above"
