"""`clusterctl whatif`: hand-checked failures of the shipped designs (a SuperPOD leaf and spine, a GB200 NVLink
switch tray, rack feeds under N+1, 2N and N, a CDU), the sweep, the outputs and the refusals."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint, load_blueprint_text
from clusterctl.report import document
from clusterctl.report.whatif import whatif
from clusterctl.validate import validate_loaded
from tests.helpers import BLUEPRINTS, cli, shipped

SVG = "{http://www.w3.org/2000/svg}svg"


def _run(plan, fail=None, each=None):
    return whatif(plan, document.build(plan, {}, pictures=False).to_json(), fail, each)


@pytest.fixture(scope="module")
def superpod():
    return validate_loaded(load_blueprint(BLUEPRINTS / "dgx-h100-superpod-1su.yaml")).plan


def test_superpod_leaf_failure_loses_one_rail_on_the_scalable_units_nodes(superpod):
    a = _run(superpod, ["ib-leaf01"])["analysis"]
    # rail-optimized SU of 32 DGX H100: leaf k carries NIC k of all 32 nodes; each node keeps 7 of 8 rails
    assert a["gpus"] == {"total": 256, "lost": 0, "isolated": 0, "degraded": 256, "usable": 256, "share_lost": 0.0}
    assert a["degraded"] == {"nodes": 32, "hostlist": "dgx[001-032]", "network_share_left": 0.875}
    assert a["drain"]["nodes"] == 0  # a node short of a rail still runs jobs
    # E = 256 node links x 400 = 102,400 Gb/s, U_leaf = 8 leaves x 32 uplinks x 400 = 102,400; the leaf takes 32 of
    # each: min(89,600, 89,600) / 2 = 44,800 Gb/s of 51,200
    ib = next(b for b in a["bisection"] if b["fabric"] == "ib")
    assert (ib["healthy_gbps"], ib["after_gbps"], ib["share_left"]) == (51_200, 44_800, 0.875)
    # NCCL spreads a node's rings over its NICs: a job spanning those nodes runs its inter-node share at 7/8
    big = next(c for c in a["collectives"] if c["ranks"] == 256)
    assert big["factor"] == 0.875
    assert big["spanning_degraded_busbw_gb_per_s"] == pytest.approx(big["healthy_busbw_gb_per_s"] * 7 / 8, abs=1e-3)
    assert a["largest_job_gpus"]["nvlink_domain"] == 8  # one DGX's baseboard
    t = a["training"]
    assert t["after_gpus_used"] == 252 and t["after_step_s"] > t["step_s"]


def test_superpod_spine_failure_takes_its_share_of_the_bisection(superpod):
    a = _run(superpod, ["ib-spine01"])["analysis"]
    # 4 spines share the 256 leaf uplinks: 64 each; U_leaf = (256 - 64) x 400 = 76,800: 38,400 Gb/s, 3/4
    ib = next(b for b in a["bisection"] if b["fabric"] == "ib")
    assert (ib["after_gbps"], ib["share_left"]) == (38_400, 0.75)
    assert a["gpus"]["degraded"] == 0 and a["gpus"]["lost"] == 0


def test_a_rack_holding_every_compute_switch_isolates_every_gpu(superpod):
    d = _run(superpod, each=["rack"])
    worst = d["ranked"][0]
    # the blueprint puts its 8 leaves and 4 spines (and the storage fabric's switches) in rack ib01
    assert (worst["name"], worst["gpus_out"], worst["training_left"]) == ("ib01", 256, 0.0)
    mgmt = next(r for r in d["ranked"] if r["name"] == "mgmt01")
    assert mgmt["all_controllers_down"] and mgmt["accounting_down"]  # both head nodes in one rack


def test_gb200_nvlink_switch_tray_failure_degrades_its_racks_domain():
    plan = validate_loaded(load_blueprint(BLUEPRINTS / "gb200-nvl72-8rack.yaml")).plan
    a = _run(plan, ["nvl01-nvsw1"])["analysis"]
    # NVL72: each GPU's 18 NVLink links spread over 9 switch trays; one tray down leaves 8/9
    assert a["nvlink_trays_down"] == [{"rack": "nvl01", "trays": 1, "of": 9, "nvlink_share_left": 0.888889}]
    assert a["drain"]["nvlink_domains"] == ["nvlink_gb200_1"]
    assert a["gpus"]["lost"] == 0 and a["largest_job_gpus"]["nvlink_domain"] == 72  # the other racks' domains
    d = _run(plan, each=["cdu"])
    # cdu-a cools nvl01-04 (profile nvl72-a), cdu-b nvl05-08: four NVL72 racks = 288 GPUs each
    assert [(r["name"], r["gpus_out"]) for r in d["ranked"]] == [("cdu-a", 288), ("cdu-b", 288)]


def _lab(redundancy: str, feed_kw: float) -> object:
    data = shipped("lab-2node")
    data["rack_profiles"]["lab"].update(redundancy=redundancy, feed_kw=feed_kw)
    return validate_loaded(load_blueprint_text(yaml.safe_dump(data), "lab.yaml"), {"POWER002": "test"}).plan


def test_rack_feed_failure_under_2n_n_plus_1_and_n():
    # lab01 draws 2 x 10.2 (HGX H100) + 0.8 (cpu-1u) + 1.72 (QM9700) + 0.3 (SN2201) = 23.22 kW (planning maxima)
    a = _run(_lab("2N", 43.2), ["lab01-pdu1"])["analysis"]
    power = a["failed"][0]["power"]
    # 2 feeds, one left: 1 x 43.2 kW x 0.8 continuous = 34.56 kW >= 23.22: carried
    assert (power["load_kw"], power["remaining_kw"], power["carried"]) == (23.22, 34.56, True)
    assert a["gpus"]["lost"] == 0
    a = _run(_lab("N+1", 43.2), ["lab01-pdu2"])["analysis"]
    assert a["failed"][0]["power"]["carried"] and a["gpus"]["lost"] == 0
    # N with 20 kW feeds: the one left carries 16 kW < 23.22: the rack goes down, both servers and their 16 GPUs
    a = _run(_lab("N", 20), ["lab01-pdu1"])["analysis"]
    assert a["failed"][0]["power"]["remaining_kw"] == 16.0 and not a["failed"][0]["power"]["carried"]
    assert a["gpus"]["lost"] == 16 and a["drain"]["hostlist"] == "gpu[01-02],head01"


def test_whatif_through_the_command_line(tmp_path):
    r = cli("whatif", "blueprints/dgx-h100-superpod-1su.yaml", "--fail", "leaf:ib-leaf01,spine:ib-spine01",
            "-o", str(tmp_path / "w"))
    assert r.returncode == 0, r.stderr
    assert "bisection ib: 51,200 -> 32,000 Gb/s (62.5 %)" in r.stdout  # (256 - 32 - 64) x 400 / 2
    d = json.loads((tmp_path / "w" / "whatif.json").read_text())
    assert [f["name"] for f in d["analysis"]["failed"]] == ["ib-leaf01", "ib-spine01"]
    assert ET.fromstring((tmp_path / "w" / "whatif.svg").read_text()).tag == SVG
    assert (tmp_path / "w" / "whatif.md").read_text().startswith("# What if: dgx-h100-superpod-1su\n")
    r = cli("whatif", "blueprints/dgx-h100-superpod-1su.yaml", "--each", "leaf", "--each", "spine", "--format", "json")
    d = json.loads(r.stdout)
    assert d["mode"] == "each" and len(d["ranked"]) == 22 + 10  # every leaf and spine of the four fabrics


@pytest.mark.parametrize("args, words", [
    (["--fail", "leaf:ib-leaf99"], "no leaf named 'ib-leaf99' in this design"),
    (["--fail", "switch:ib-leaf01"], "expected KIND:NAME, KIND one of feed, cdu, rack, leaf, spine, core, nvlink-tray"),
    (["--fail", "cdu:cdu01"], "this design has no cdu"),
    (["--each", "pump"], "--each pump: unknown component kind"),
    ([], "give --fail KIND:NAME[,...] or --each KIND"),
])
def test_bad_failures_exit_2_with_the_known_names(args, words):
    r = cli("whatif", "blueprints/dgx-h100-superpod-1su.yaml", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    if args[-1:] == ["leaf:ib-leaf99"]:
        assert "did you mean ib-leaf08" in r.stderr and "the leaves: ib-leaf01" in r.stderr


def test_report_whatif_lists_the_worst_of_each_kind_and_the_single_points_of_failure(superpod):
    rep = document.build(superpod, {}, pictures=False, whatif=True)
    sec = next(s for s in rep.sections if s.key == "blast_radius")
    d = sec.data
    assert d["components"] == {"feed": 28, "rack": 10, "leaf": 22, "spine": 10}  # 10 racks: 8 x 3 + 2 x 2 feeds
    assert [r["name"] for r in d["worst_by_kind"]] == ["ib01-pdu1", "ib01", "ib-leaf01", "stor-spine01"]
    # ib01 holds every switch of the compute and storage fabrics: 100 % out; mgmt01 both Slurm controllers
    assert [(r["name"], r["share_out"], r["all_controllers_down"]) for r in d["single_points_of_failure"]] == [
        ("ib01", 1.0, False), ("mgmt01", 0.0, True)]
    assert "**Single points of failure** (2)" in sec.markdown and "(blueprint: racks[1])" in sec.markdown.replace(
        "\\[", "[").replace("\\]", "]")
    assert "blast_radius" not in document.build(superpod, {}, pictures=False).to_json()  # only when asked
