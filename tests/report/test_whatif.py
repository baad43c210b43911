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
from tests.helpers import BLUEPRINTS, cli, hits, shipped, superpod_one_network_rack

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


def test_a_rack_holding_every_compute_switch_isolates_every_gpu():
    plan = validate_loaded(load_blueprint_text(yaml.safe_dump(superpod_one_network_rack()), "one.yaml")).plan
    d = _run(plan, each=["rack"])
    worst = d["ranked"][0]
    # 8 leaves and 4 spines (and the storage fabric's switches) in rack ib01
    assert (worst["name"], worst["gpus_out"], worst["training_left"]) == ("ib01", 256, 0.0)
    mgmt = next(r for r in d["ranked"] if r["name"] == "mgmt01")
    assert mgmt["all_controllers_down"] and mgmt["accounting_down"]  # both head nodes in one rack


def test_the_shipped_superpod_spreads_its_switches_and_heads_over_two_racks(superpod):
    d = _run(superpod, each=["rack"])
    ib01 = next(r for r in d["ranked"] if r["name"] == "ib01")
    # switches round-robin over ib[01-02]: ib01 holds rail leaves 1, 3, 5, 7 and spines 1 and 3 of the compute
    # fabric; every node keeps 4 of its 8 rails (degraded, not cut off). Leaf uplinks lost: 4 leaves x 32 + 2 spines
    # x 64 - the 4 x 2 x 8 links between them (counted once) = 192 of 256; (256 - 192) x 400 / 2 = 12,800 Gb/s
    assert ib01["gpus_out"] == 0 and ib01["gpus_degraded"] == 256
    assert ib01["bisection_left"]["ib"] == 0.25
    a = _run(superpod, ["ib01"])["analysis"]
    assert next(b for b in a["bisection"] if b["fabric"] == "ib")["after_gbps"] == 12_800
    assert a["degraded"]["network_share_left"] == 0.5
    assert not any(r["all_controllers_down"] for r in d["ranked"])  # head01 in mgmt01, head02 in mgmt02


def test_gb200_nvlink_switch_tray_failure_degrades_its_racks_domain():
    plan = validate_loaded(load_blueprint(BLUEPRINTS / "gb200-nvl72-8rack.yaml")).plan
    a = _run(plan, ["nvl01-nvsw1"])["analysis"]
    # NVL72: each GPU's 18 NVLink links spread over 9 switch trays; one tray down leaves 8/9
    assert a["nvlink_trays_down"] == [{"rack": "nvl01", "trays": 1, "of": 9, "nvlink_share_left": 0.888889}]
    assert a["drain"]["nvlink_domains"] == ["nvlink_gb200_1"]
    assert a["gpus"]["lost"] == 0 and a["largest_job_gpus"]["nvlink_domain"] == 72  # the other racks' domains


def test_cdu_failure_under_n_plus_1_and_without_a_partner():
    plan = validate_loaded(load_blueprint(BLUEPRINTS / "gb200-nvl72-8rack.yaml")).plan
    # each NVL72 rack rejects 96.48 kW to liquid (the catalog's 120.6 kW of the rack's liquid-cooled hardware x 0.8):
    # 771.84 kW on the row's loop, three 600 kW CDUs in parallel. One stops: the other two carry 385.92 kW each,
    # 385.92 / (1.02 kg/L x 3.85 kJ/(kg K) x 10 K) x 60 = 589.64 L/min of their 1,200 (PG25)
    assert plan.racks[0].liquid_heat_kw == pytest.approx(96.48)
    a = _run(plan, ["cdu-a"])["analysis"]
    cooling = a["failed"][0]["cooling"]
    assert cooling["carried"] and cooling["racks"] == [f"nvl0{k}" for k in range(1, 9)]
    assert [(c["cdu"], c["load_kw"], c["carries"]) for c in cooling["cdus_left"]] == [
        ("cdu-b", 385.92, True), ("cdu-c", 385.92, True)]
    assert cooling["cdus_left"][0]["flow_needed_lpm"] == pytest.approx(589.64, abs=0.01)
    assert a["gpus"]["lost"] == 0
    # two stop together: cdu-c alone would carry 771.84 kW of its 600: the loop, all eight racks, stops
    a = _run(plan, ["cdu-a", "cdu-b"])["analysis"]
    assert not a["failed"][0]["cooling"]["carried"] and a["gpus"]["lost"] == 576
    # the same racks with one CDU per four racks and no partner (the design before N+1): 288 GPUs each
    data = shipped("gb200-nvl72-8rack")
    data["rack_profiles"]["nvl72-b"] = dict(data["rack_profiles"]["nvl72"], cdus=["cdu-b"])
    data["rack_profiles"]["nvl72"]["cdus"] = ["cdu-a"]
    data["racks"][0] = dict(data["racks"][0], names="nvl[01-04]")
    data["racks"].insert(1, dict(data["racks"][0], names="nvl[05-08]", profile="nvl72-b"))
    data["cooling"]["cdus"].pop()
    plan = validate_loaded(load_blueprint_text(yaml.safe_dump(data), "gb.yaml")).plan
    d = _run(plan, each=["cdu"])
    assert [(r["name"], r["gpus_out"]) for r in d["ranked"]] == [("cdu-a", 288), ("cdu-b", 288)]
    assert [h.message for h in hits(data, "BLAST001")] == [  # 50 % each, over the default 25 %
        f"cdu {c} takes 288 of the 576 GPUs (50 %, over validation.max_blast_radius 25 %) with it"
        for c in ("cdu-a", "cdu-b")]
    # cdu-a on two duty pumps of 1,100 L/min together: one gives 550 of the 589.64 its 4 racks need
    data["cooling"]["cdus"][0].update(pumps=2, flow_lpm=1100)
    assert [h.message for h in hits(data, "BLAST001") if h.subject[0] == "pump"] == [
        f"pump cdu-a-pump{k} takes 288 of the 576 GPUs (50 %, over validation.max_blast_radius 25 %) with it"
        for k in (1, 2)]


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
    # leaf uplinks left: 256 - 32 (the leaf's) - 64 (the spine's) + 8 (between the two, counted once) = 168;
    # node links 256 - 32 = 224: min(224, 168) x 400 / 2 = 33,600
    assert "bisection ib: 51,200 -> 33,600 Gb/s (65.6 %)" in r.stdout
    d = json.loads((tmp_path / "w" / "whatif.json").read_text())
    assert [f["name"] for f in d["analysis"]["failed"]] == ["ib-leaf01", "ib-spine01"]
    assert ET.fromstring((tmp_path / "w" / "whatif.svg").read_text()).tag == SVG
    assert (tmp_path / "w" / "whatif.md").read_text().startswith("# What if: dgx-h100-superpod-1su\n")
    r = cli("whatif", "blueprints/dgx-h100-superpod-1su.yaml", "--each", "leaf", "--each", "spine", "--format", "json")
    d = json.loads(r.stdout)
    assert d["mode"] == "each" and len(d["ranked"]) == 23 + 10  # every leaf and spine of the four fabrics


@pytest.mark.parametrize("args, words", [
    (["--fail", "leaf:ib-leaf99"], "no leaf named 'ib-leaf99' in this design"),
    (["--fail", "switch:ib-leaf01"], "expected KIND:NAME, KIND one of feed, cdu, pump, rack, leaf, spine, core, nvlink-tray, storage"),
    (["--fail", "cdu:cdu01"], "this design has no cdu"),
    (["--each", "fan"], "--each fan: unknown component kind"),
    ([], "give --fail KIND:NAME[,...] or --each KIND"),
])
def test_bad_failures_exit_2_with_the_known_names(args, words):
    r = cli("whatif", "blueprints/dgx-h100-superpod-1su.yaml", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    if args[-1:] == ["leaf:ib-leaf99"]:
        assert "did you mean ib-leaf08" in r.stderr and "the leaves: ib-leaf01" in r.stderr


def test_report_whatif_lists_the_worst_of_each_kind_and_the_single_points_of_failure(superpod):
    plan = validate_loaded(load_blueprint_text(yaml.safe_dump(superpod_one_network_rack()), "one.yaml")).plan
    rep = document.build(plan, {}, pictures=False, whatif=True)
    sec = next(s for s in rep.sections if s.key == "blast_radius")
    d = sec.data
    # 12 racks: 8 x 3 + 4 x 2 feeds; Lustre's 8 building blocks
    assert d["components"] == {"feed": 32, "rack": 12, "leaf": 22, "spine": 10, "storage": 8}
    assert [r["name"] for r in d["worst_by_kind"]] == ["ib01-pdu1", "ib01", "ib-leaf01", "stor-spine01",
                                                       "lustre-bb01"]
    # ib01 holds every switch of the compute and storage fabrics: 100 % out; mgmt01 both Slurm controllers
    assert [(r["name"], r["takes"]) for r in d["single_points_of_failure"]] == [
        ("ib01", ["256 of the 256 GPUs in other racks (100 %, over validation.max_blast_radius 25 %)"]),
        ("mgmt01", ["every Slurm controller (head01, head02)"])]
    assert "**Single points of failure** (2, rule BLAST001)" in sec.markdown and "(blueprint: racks[1])" in \
        sec.markdown.replace("\\[", "[").replace("\\]", "]")
    shipped_sec = next(s for s in document.build(superpod, {}, pictures=False, whatif=True).sections
                       if s.key == "blast_radius")
    assert shipped_sec.data["single_points_of_failure"] == [] and "No single component takes" in shipped_sec.markdown
    assert "blast_radius" not in document.build(superpod, {}, pictures=False).to_json()  # only when asked


def test_storage_building_block_failures_slow_the_checkpoint_then_stop_the_job():
    data = shipped("dgx-h100-superpod-1su")
    lustre = data["storage"][0]
    assert lustre["name"] == "lustre" and lustre["building_blocks"] == 8 and lustre["blocks_tolerated"] == 1
    plan = validate_loaded(load_blueprint_text(yaml.safe_dump(data), "sp.yaml")).plan
    a = _run(plan, ["lustre-bb01"])["analysis"]
    (st,) = a["storage"]
    # 8 OSS in failover pairs: one down, its partner serves its OSTs; the tier keeps 7/8 of 120 GB/s write and
    # 240 GB/s read (the 32 DGX's 2 x 200 Gb/s storage ports, 1,600 GB/s, do not limit it)
    assert (st["serving"], st["share_left"]) == (True, 0.875)
    assert st["write_gb_per_s"] == {"healthy": 120.0, "after": 105.0}
    assert st["read_gb_per_s"] == {"healthy": 240.0, "after": 210.0}
    # Llama 3 70B: 70.6e9 parameters x 14 bytes = 987.8 GB: 8.23 s at 120 GB/s, 9.41 s at 105 (budget 60 s)
    ck = st["checkpoint"]
    assert ck["healthy_write_s"] == pytest.approx(8.23, abs=0.01)
    assert ck["after_write_s"] == pytest.approx(9.41, abs=0.01) and ck["within_budget"]
    assert a["gpus"]["lost"] == 0 and a["training"]["after_tokens_per_s"] == a["training"]["tokens_per_s"]
    # two down: more than the one the pairs tolerate; files on a pair with both servers down are unreachable
    a = _run(plan, ["lustre-bb01", "lustre-bb02"])["analysis"]
    assert not a["storage"][0]["serving"] and a["training"]["after_tokens_per_s"] == 0.0
    assert "I/O to the unreachable files hangs" in a["training"]["basis"]
    d = _run(plan, each=["storage"])
    assert [(r["name"], r["storage_left"], r["checkpoint_write_s"]) for r in d["ranked"][:1]] == [
        ("lustre-bb01", {"lustre": 0.875}, ck["after_write_s"])]
    assert len(d["ranked"]) == 8


def _liquid_lab(**cdu) -> object:
    """the lab with direct-liquid-cooled HGX servers (tests/rules/test_cooling.py's dlc): 2 x 10.2 kW x 0.75 =
    15.3 kW of liquid heat on one water CDU"""
    from tests.rules.test_cooling import dlc

    data = dlc()
    data["cooling"]["cdus"][0].update(cdu)
    return validate_loaded(load_blueprint_text(yaml.safe_dump(data), "dlc.yaml")).plan


def test_a_cdu_pump_failure_with_and_without_a_standby_pump():
    # 15.3 kW / (0.997 x 4.18 x 10) x 60 = 22.03 L/min needed
    a = _run(_liquid_lab(pumps=2, standby_pumps=1, flow_lpm=30), ["cdu1-pump1"])["analysis"]
    pumps = a["failed"][0]["cooling"]["pumps"]
    assert (pumps["flow_lpm"], pumps["carried"]) == (30.0, True) and a["gpus"]["lost"] == 0  # the standby takes over
    # two duty pumps, no standby: one left gives 30 / 2 = 15 L/min of the 22.03 needed: the CDU stops, and with it
    # the liquid-cooled servers (16 GPUs)
    a = _run(_liquid_lab(pumps=2, flow_lpm=30), ["cdu1-pump2"])["analysis"]
    pumps = a["failed"][0]["cooling"]["pumps"]
    assert (pumps["flow_lpm"], round(pumps["flow_needed_lpm"], 2), pumps["carried"]) == (15.0, 22.03, False)
    assert a["gpus"]["lost"] == 16 and "so the CDU stops" in a["failed"][0]["effect"]
    # with 50 L/min, one pump's 25 carries it
    a = _run(_liquid_lab(pumps=2, flow_lpm=50), ["cdu1-pump2"])["analysis"]
    assert a["failed"][0]["cooling"]["pumps"]["carried"] and a["gpus"]["lost"] == 0
    assert [r["name"] for r in _run(_liquid_lab(pumps=3, standby_pumps=1), each=["pump"])["ranked"]] == [
        "cdu1-pump1", "cdu1-pump2", "cdu1-pump3"]
    assert _run(_liquid_lab(), each=["pump"])["ranked"] == []  # one pump: its failure is the CDU's
