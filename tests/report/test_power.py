"""Power section: totals, budgets, PUE, FLOPS per watt and tokens per kWh against hand arithmetic."""

import json
from pathlib import Path

import pytest

from clusterctl.report.power import build
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, plan_of, shipped

SHIPPED = sorted(p.stem for p in Path(BLUEPRINTS).glob("*.yaml"))

# catalog maxima used below: DGX H100 10.2 kW, QM9700 1.72 kW, SN4600C 0.85 kW, SN2201 0.3 kW, cpu-2u 1.2 kW
SU_RACK_KW = 4 * 10.2 + 0.3  # four DGX and the rack's OOB leaf
SU_IB_KW = 16 * 1.72  # compute 8 + 4, storage 2 + 2 QM9700, over ib01 and ib02
SU_MGMT_KW = 4 * 1.2 + 2 * 0.3 + 7 * 0.85  # head/login, mgmt01's and mgmt02's OOB leaves, 5 in-band + 2 OOB spine SN4600C
SU_IT_KW = 8 * SU_RACK_KW + SU_IB_KW + SU_MGMT_KW  # 367.67 kW


def section(data: dict, **kw):
    plan = plan_of(data)
    return plan, build(ReportContext(plan=plan, **kw))


def test_superpod_totals_equal_the_sum_of_racks():
    plan, sec = section(shipped("dgx-h100-superpod-1su"))
    d = sec.data
    assert d["it_kw"] == pytest.approx(SU_IT_KW)
    assert d["rack_kw"] == pytest.approx(sum(r["kw_total"] for r in d["racks"]))
    assert d["it_kw"] == pytest.approx(plan.it_power_kw)
    dgx = d["racks"][0]
    assert (dgx["racks"], dgx["count"], dgx["profile"]) == ("r[01-08]", 8, "dgx")
    assert dgx["kw_each"] == pytest.approx(SU_RACK_KW)
    assert dgx["budget_pct"] == pytest.approx(100 * SU_RACK_KW / 44)
    assert not dgx["over_budget"] and d["racks_over_budget"] == 0
    assert sum(r["count"] for r in d["racks"]) == len(plan.racks) == 12
    assert d["cooling"]["air_kw"] == pytest.approx(SU_IT_KW) and d["cooling"]["liquid_kw"] == 0


def test_over_budget_rack_is_flagged():
    bp = shipped("dgx-h100-superpod-1su")
    bp["rack_profiles"]["dgx"]["power_kw"] = 40  # 41.1 kW of DGX + OOB leaf
    _, sec = section(bp)
    dgx = sec.data["racks"][0]
    assert dgx["over_budget"] and dgx["budget_pct"] == pytest.approx(100 * SU_RACK_KW / 40)
    assert sec.data["racks_over_budget"] == 8
    assert "**over budget**" in sec.markdown


def test_facility_power_from_site_pue_and_override():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    assert sec.data["pue"] == 1.3 and sec.data["pue_source"] == "site.pue"
    assert sec.data["facility_kw"] == pytest.approx(SU_IT_KW * 1.3)
    _, sec = section(shipped("dgx-h100-superpod-1su"), pue=1.5)
    assert sec.data["facility_kw"] == pytest.approx(SU_IT_KW * 1.5)


def test_no_pue_declared_reports_it_only():
    _, sec = section(shipped("lab-2node"))  # site without pue
    assert sec.data["pue"] is None and sec.data["facility_kw"] is None
    assert sec.data["it_kw"] == pytest.approx(2 * 10.2 + 0.8 + 1.72 + 0.3)
    assert "facility power is not reported" in sec.markdown
    _, sec = section(shipped("lab-2node"), pue=1.3)  # the report passes the schema default on
    assert sec.data["facility_kw"] == pytest.approx(sec.data["it_kw"] * 1.3)
    assert sec.data["pue_source"] == "site.pue default 1.3 (not declared)"


def test_flops_per_watt_and_gpu_share():
    _, sec = section(shipped("dgx-h100-superpod-1su"))
    e = sec.data["efficiency"]
    assert e["gpu_tdp"][0]["tflops_per_w"] == pytest.approx(989 / 700)  # 1.41
    dgx = e["node_types"][0]
    assert dgx["tflops_per_w"] == pytest.approx(8 * 989 / 10_200)  # 0.78
    assert dgx["catalog"] == ["accelerators.h100-sxm.bf16_dense_tflops", "servers.dgx-h100.power_kw"]
    assert e["cluster_it_tflops_per_w"] == pytest.approx(256 * 989 / (SU_IT_KW * 1000))
    assert e["cluster_facility_tflops_per_w"] == pytest.approx(256 * 989 / (SU_IT_KW * 1300))
    assert e["gpu_kw"] == pytest.approx(256 * 0.7)
    assert e["gpu_share_of_it"] == pytest.approx(256 * 0.7 / SU_IT_KW)


def test_tokens_per_kwh():
    _, sec = section(shipped("dgx-h100-superpod-1su"), tokens_per_s=250_000)
    t = sec.data["tokens"]
    kw = SU_IT_KW * 1.3
    assert t["power_basis"] == "facility" and t["kw"] == pytest.approx(kw)
    assert t["tokens_per_kwh"] == pytest.approx(250_000 * 3600 / kw)  # ~1.45 M tokens/kWh
    assert t["joules_per_token"] == pytest.approx(kw * 1000 / 250_000)  # ~1.91 J
    _, lab = section(shipped("lab-2node"), tokens_per_s=10_000)
    assert lab.data["tokens"]["power_basis"] == "it"
    assert lab.data["tokens"]["tokens_per_kwh"] == pytest.approx(10_000 * 3600 / lab.data["it_kw"])


def test_identical_racks_are_one_row():
    plan, sec = section(shipped("frontier-3tier-100k"))
    rows = sec.data["racks"]
    assert rows[0]["racks"] == "c[0001-3328]" and rows[0]["count"] == 3328
    assert rows[0]["kw_each"] == pytest.approx(4 * 14.3 + 0.3)
    assert len(rows) < 12
    assert sum(r["count"] for r in rows) == len(plan.racks) == 3692
    assert sec.data["it_kw"] == pytest.approx(sum(r["kw_total"] for r in rows) + plan.unplaced_switch_kw)


def test_liquid_cooled_racks_split_heat():
    _, sec = section(shipped("gb200-nvl72-8rack"))
    c = sec.data["cooling"]
    nvl = sec.data["racks"][0]
    # 18 trays x 6.7 kW x 0.8 liquid; the OOB leaf is air cooled
    assert nvl["liquid_kw_each"] == pytest.approx(18 * 6.7 * 0.8)
    assert c["liquid_kw"] == pytest.approx(8 * 18 * 6.7 * 0.8)
    assert c["liquid_kw"] + c["air_kw"] == pytest.approx(sec.data["it_kw"])


def test_cloud_power_is_not_reported():
    _, sec = section(shipped("aws-p5"), tokens_per_s=50_000)
    d = sec.data
    assert d["it_kw"] is None and d["facility_kw"] is None and d["racks"] == []
    assert d["tokens"]["tokens_per_kwh"] is None
    assert d["efficiency"]["gpu_tdp"][0]["tflops_per_w"] == pytest.approx(989 / 700)
    assert "providers do not publish their power" in sec.markdown


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_blueprint_builds(name):
    _, sec = section(shipped(name), tokens_per_s=1e6)
    assert sec.key == "power" and sec.markdown.endswith("\n")
    assert json.loads(json.dumps(sec.data)) == sec.data
