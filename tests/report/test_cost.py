"""Cost per hour at list price: the report section's figures are the catalog's prices x the groups' counts."""

from __future__ import annotations

import json

import pytest

from clusterctl.catalog.prices import shipped_prices
from clusterctl.report.cost import build
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, cli, plan_of, shipped

PRICES = shipped_prices()
CLOUD = tuple(sorted(p.stem for p in BLUEPRINTS.glob("*.yaml") if "cloud" in shipped(p.stem)))
"""every shipped blueprint with a cloud: section (docs/cloud.md, "What it costs", shows each)"""


def section(data: dict):
    return build(ReportContext(plan=plan_of(data)))


def expected(data: dict) -> tuple[float, float, list[str]]:
    """(static, elastic at full size, unpriced types) from the blueprint's groups and the loaded prices."""
    region = data["cloud"]["region"]
    static = elastic = 0.0
    unpriced = []
    for g in data["node_groups"]:
        itype = data["node_types"][g["type"]]["instance"]
        p = PRICES.price(itype, region)
        if p is None:
            unpriced.append(itype)
            continue
        if g.get("cloud", {}).get("elastic"):
            elastic += p.usd_per_hour * g["count"]
        else:
            static += p.usd_per_hour * g["count"]
    return static, elastic, unpriced


@pytest.mark.parametrize("name", CLOUD)
def test_shipped_cloud_blueprints_cost_price_times_count(name):
    data = shipped(name)
    sec = section(data)
    static, elastic, unpriced = expected(data)
    assert sec.data["region"] == data["cloud"]["region"]
    assert sec.data["static_usd_per_hour"] == round(static, 6)
    assert sec.data["elastic_usd_per_hour_max"] == (round(elastic, 6) if elastic else None)  # lab-cloud: elastic only
    assert sec.data["full_usd_per_hour"] == round(static + elastic, 6)
    assert [u["instance_type"] for u in sec.data["unpriced"]] == unpriced
    for g, bg in zip(sec.data["groups"], data["node_groups"]):
        p = PRICES.price(data["node_types"][bg["type"]]["instance"], data["cloud"]["region"])
        assert g["count"] == bg["count"]
        assert g["usd_per_hour"] == (round(p.usd_per_hour * bg["count"], 6) if p else None)
        assert g["as_of"] == (p.as_of.isoformat() if p else None)
        assert g["source"] == (p.source if p else None)
    assert set(sec.data["sources"]) == {g["source"] for g in sec.data["groups"] if g["source"]} | {
        g["capacity_block"]["source"] for g in sec.data["groups"] if g["capacity_block"]}


def test_aws_p5_figures_and_capacity_block_rate():
    data = shipped("aws-p5")
    sec = section(data)
    p5 = PRICES.price("p5.48xlarge", "us-east-2")
    cb = PRICES.price("p5.48xlarge", "us-east-2", "capacity_block")
    gpu = sec.data["groups"][0]
    assert gpu["capacity_block"]["usd_per_hour"] == round(cb.usd_per_hour * 16, 6)
    md = sec.markdown
    assert f"**${p5.usd_per_hour * 16:,.2f} per hour**" in md
    assert "1 × c7i.8xlarge (group head): no list price in the catalog for us-east-2" in md
    assert cb.as_of.isoformat() in md
    assert "Not counted: storage services" in md


def test_elastic_groups_are_up_to_and_counted_apart():
    data = shipped("aws-p5")
    data["node_groups"][0]["cloud"] = {"elastic": True}
    data["node_groups"][0].update(count=12, hostnames="gpu[001-012]")
    data["node_groups"].insert(1, {"name": "gpustatic", "type": "p5", "count": 4, "hostnames": "gpu[013-016]"})
    data["slurm"]["partitions"][0]["groups"] = ["gpu", "gpustatic"]
    sec = section(data)
    p = PRICES.price("p5.48xlarge", "us-east-2").usd_per_hour
    assert sec.data["static_usd_per_hour"] == round(4 * p, 6)
    assert sec.data["elastic_usd_per_hour_max"] == round(12 * p, 6)
    assert sec.data["full_usd_per_hour"] == round(4 * p + 12 * p, 6)
    assert f"**up to ${16 * p:,.2f} per hour** with the elastic groups at full size" in sec.markdown
    assert "| gpu | p5.48xlarge | 12 | elastic (up to) |" in sec.markdown


def test_bare_metal_blueprint_has_no_cost_section():
    assert section(shipped("lab-2node")) is None
    r = cli("report", "blueprints/lab-2node.yaml", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "cost" not in json.loads(r.stdout)


def test_cli_json_and_markdown_carry_the_cost(tmp_path):
    out = tmp_path / "r"
    r = cli("report", "blueprints/azure-nd-h100-v5.yaml", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "report.json").read_text())
    p = PRICES.price("Standard_ND96isr_H100_v5", "eastus")
    assert data["cost"]["static_usd_per_hour"] == round(p.usd_per_hour * 32, 6)
    assert data["cost"]["groups"][0]["as_of"] == p.as_of.isoformat()
    md = (out / "report.md").read_text()
    assert "## Cost per hour at list price" in md
    assert f"${p.usd_per_hour * 32:,.2f} per hour" in md


@pytest.mark.parametrize("name", CLOUD)
def test_docs_show_the_section_as_the_report_prints_it(name):
    from tests.helpers import REPO

    doc = (REPO / "docs" / "cloud.md").read_text()
    assert "## What it costs" in doc
    assert f"### {name}\n\n" + section(shipped(name)).markdown in doc
