"""Capacity section: figures checked against arithmetic done here from the blueprint and catalog files."""

import json
from pathlib import Path

import pytest
import yaml

from clusterctl.report.capacity import build
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, REPO, plan_of, shipped

ACCELERATORS = yaml.safe_load((REPO / "clusterctl/catalog/accelerators.yaml").read_text())["accelerators"]
SHIPPED = sorted(p.stem for p in Path(BLUEPRINTS).glob("*.yaml"))


def section(data: dict, **kw):
    return build(ReportContext(plan=plan_of(data), **kw))


def fabric(sec, name: str) -> dict:
    return next(f for f in sec.data["fabrics"] if f["name"] == name)


def test_peak_bf16_of_1024_hopper_gpus_is_exact_and_sourced():
    sec = section(shipped("hgx-h200-roce-1024"))
    d = sec.data
    assert d["gpus"] == 1024
    peak = d["peak_bf16"]
    assert peak["value"] == 1024 * 989 / 1000  # 1,012.736 PFLOP/s
    assert peak["unit"] == "PFLOP/s"
    assert peak["per_gpu"] == 989
    assert peak["catalog"] == "accelerators.h200-sxm.bf16_dense_tflops"
    assert peak["source"] == ACCELERATORS["h200-sxm"]["sources"]["bf16_dense_tflops"]
    assert "| Peak dense BF16 | 1,012.7 | PFLOP/s |" in sec.markdown
    assert "`accelerators.h200-sxm.bf16_dense_tflops`" in sec.markdown


def test_fp8_hbm_and_hbm_bandwidth_of_1024_h200():
    d = section(shipped("hgx-h200-roce-1024")).data
    assert d["peak_fp8"]["value"] == pytest.approx(1024 * 1979 / 1000)
    assert d["hbm"]["value"] == pytest.approx(1024 * 141 / 1000)  # 144.4 TB
    assert d["hbm_bandwidth"]["value"] == pytest.approx(1024 * 4.8)  # 4,915 TB/s


def test_fp8_is_na_when_the_catalog_has_none():
    bp = shipped("lab-2node")
    bp["node_types"]["hgx"] = {"server": "dgx-a100"}  # A100: no FP8 in the catalog
    sec = section(bp)
    assert sec.data["peak_fp8"]["value"] is None
    assert sec.data["peak_fp8"]["missing"] == ["a100-sxm-80gb"]
    assert sec.data["peak_bf16"]["value"] == pytest.approx(16 * 312 / 1000)
    assert "| Peak dense FP8 | n/a | PFLOP/s |" in sec.markdown


def test_superpod_1su_injection_and_bisection():
    sec = section(shipped("dgx-h100-superpod-1su"))
    ib = fabric(sec, "ib")
    # 32 DGX x 8 x 400G = 102.4 Tb/s injection; non-blocking 2 tiers -> bisection half of it
    assert ib["endpoint_gbps"] == 32 * 8 * 400
    assert ib["leaf_up_gbps"] == 8 * 32 * 400  # 8 leaves x 32 uplinks
    assert ib["bisection_gbps"] == 51_200
    assert ib["bisection_tbps"] == pytest.approx(51.2)
    assert ib["bisection_per_gpu_gbps"] == pytest.approx(200)
    assert ib["limited_by"].startswith("endpoints")
    inj = sec.data["injection"]
    dgx = next(r for r in inj["per_node_type"] if r["node_type"] == "dgx" and r["role"] == "compute")
    assert dgx["gbps_per_node"] == 3200 and dgx["gb_per_s_per_node"] == 400
    assert inj["compute_total_gbps"] == 102_400
    assert "| Bisection, fabric ib | 51.2 | Tb/s |" in sec.markdown
    assert "min(E, U_leaf, U_spine) / 2" in sec.markdown


def test_oversubscribed_leaves_halve_the_bisection():
    bp = shipped("dgx-h100-superpod-1su")
    bp["fabrics"][0]["oversubscription"] = 2.0
    ib = fabric(section(bp), "ib")
    assert ib["endpoint_gbps"] == 102_400
    assert ib["leaf_up_gbps"] == 51_200  # 16 uplinks per leaf instead of 32
    assert ib["bisection_gbps"] == 25_600
    assert ib["limited_by"] == "leaf uplinks"


def test_frontier_three_tiers_match_the_tier_counts():
    plan = plan_of(shipped("frontier-3tier-100k"))
    sec = build(ReportContext(plan=plan))
    roce = fabric(sec, "roce")
    leaf, spine = plan.fabrics[0].tier("leaf"), plan.fabrics[0].tier("spine")
    # 13,312 nodes x 8 x 400G; 1,664 leaves x 32 x 800G up; spines carry as many links up as down
    assert roce["endpoint_gbps"] == 13_312 * 8 * 400 == 42_598_400
    assert roce["leaf_up_gbps"] == leaf.count * leaf.up_links * leaf.up_gbps == 42_598_400
    assert roce["spine_up_gbps"] == spine.count * spine.up_links * spine.up_gbps == 42_598_400
    assert roce["bisection_gbps"] == 21_299_200
    assert roce["bisection_per_gpu_gbps"] == pytest.approx(200)
    front = fabric(sec, "frontend")
    fleaf = plan.fabrics[1].tier("leaf")
    fspine = plan.fabrics[1].tier("spine")
    assert front["endpoint_gbps"] == (13_312 * 4 + 1024) * 200  # 4 x 200G per server + 1,024 storage ports
    assert front["leaf_up_gbps"] == fleaf.count * fleaf.up_links * 800 == 333 * 21 * 800
    assert front["spine_up_gbps"] <= fspine.count * fspine.up_links * fspine.up_gbps  # busiest spine x count
    assert front["bisection_gbps"] == 333 * 21 * 800 / 2  # 2:1 leaves limit it
    assert front["limited_by"].startswith("leaf uplinks")


def test_one_switch_and_unconnected_leaves():
    lab = section(shipped("lab-2node"))
    ib = fabric(lab, "ib")
    assert ib["bisection_gbps"] == 2 * 8 * 400 / 2  # one QM9700: endpoints / 2
    assert ib["switch_gbps"] == 64 * 400
    bp = shipped("lab-2node")
    bp["fabrics"][0]["su_nodes"] = 1  # one leaf per node, no tier above
    split = fabric(section(bp), "ib")
    assert split["bisection_gbps"] == 0
    assert "not connected" in split["limited_by"]


def test_nvlink_domains():
    d = section(shipped("gb200-nvl72-8rack")).data["nvlink"]
    gb = d["groups"][0]
    assert (gb["domain_gpus"], gb["domains"], gb["gpus"]) == (72, 8, 576)
    assert gb["domain_catalog"] == "node_groups[0].nvlink_domain_gpus"
    assert gb["scaleup_gb_per_s_per_gpu"] == 1800
    assert gb["domain_gb_per_s"] == 72 * 1800
    sp = section(shipped("dgx-h100-superpod-1su")).data["nvlink"]
    assert sp["domains"] == 32 and sp["groups"][0]["domain_catalog"] == "servers.dgx-h100.nvlink_domain_gpus"
    assert sp["groups"][0]["scaleup_gb_per_s_per_gpu"] == 900


def test_cloud_injection_from_the_instance_and_no_bisection():
    sec = section(shipped("aws-p5"))
    d = sec.data
    assert d["fabrics"] == []
    p5 = d["cloud_networks"][0]
    assert (p5["instance"], p5["gpu_nics"], p5["gbps_per_node"]) == ("p5.48xlarge", 32, 3200)
    assert p5["bisection_gbps"] is None and "not published by the provider" in p5["note"]
    assert d["injection"]["compute_total_gbps"] == 16 * 3200
    assert d["peak_bf16"]["value"] == 128 * 989 / 1000
    assert "not published by the provider" in sec.markdown


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_blueprint_builds(name):
    sec = section(shipped(name), tokens_per_s=1e6, pue=1.2)
    assert sec.key == "capacity" and sec.markdown.endswith("\n")
    assert json.loads(json.dumps(sec.data)) == sec.data
    assert list(sec.data) == list(section(shipped(name)).data)  # fixed key order


def test_a_catalog_source_cannot_open_an_html_tag_in_the_report():
    from clusterctl.report.capacity import Sources

    s = Sources()
    s.ref("accelerators.x.tdp_w", "[P] vendor <img src=x onerror=alert(1)> & co")
    text = s.markdown()
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)> &amp; co" in text
