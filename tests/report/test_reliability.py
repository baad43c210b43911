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
    for any rate: the Kokolis et al. 2024 RSC-1/RSC-2 node failure rates (6.50 and 2.34 per 1,000 node-days)
    and the RSC 1,024-GPU job MTTF (7.9 h) in failure_rates.yaml's cross_checks could serve, but they are A100
    clusters with a different failure accounting, quoted second-hand ([S]), and the report only shows them
    beside its own figure; none is asserted here. (For a 1,024-GPU job on 128 nodes the rates give a mean time
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
