"""Tests for the storage report section (expected figures computed here from the blueprint and catalog
files, not from the plan the section reads)."""

import json
from pathlib import Path

import pytest
import yaml

from clusterctl.perf import storage_io
from clusterctl.report import storage
from clusterctl.report.section import ReportContext
from tests.helpers import BLUEPRINTS, plan_of, shipped

CATALOG = Path(storage.__file__).resolve().parent.parent / "catalog"


def catalog(section: str) -> dict:
    return yaml.safe_load((CATALOG / f"{section}.yaml").read_text())[section]


def su1_storage_gb_per_s() -> float:
    """Storage-NIC bandwidth of the 1-SU blueprint's DGX nodes, from the blueprint and catalog files."""
    bp = shipped("dgx-h100-superpod-1su")
    group = next(g for g in bp["node_groups"] if g["name"] == "dgx")
    server = catalog("servers")[bp["node_types"][group["type"]]["server"]]
    nics = catalog("nics")
    per_node_gbps = sum(s["count"] * nics[s["model"]]["ports"] * nics[s["model"]]["speed_gbps"]
                        for s in server["nics"] if s["role"] == "storage")
    return group["count"] * per_node_gbps / 8  # 32 x 2 ports x 200 Gb/s / 8 = 1,600 GB/s


def lustre(bp: dict) -> dict:
    return next(t for t in bp["storage"] if t["name"] == "lustre")


def test_checkpoint_size_70b_times_14_bytes():
    assert storage_io.checkpoint_bytes(70e9, 14) == pytest.approx(980e9)
    s = storage.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su"))))
    assert s.data["model"]["params"] == 70e9
    assert s.data["model"]["params_from"] == "workload.params_b"
    assert s.data["model"]["checkpoint_bytes"] == pytest.approx(980e9)
    assert "0.98 TB" in s.markdown
    assert "Adam" in s.markdown  # says what the 14 bytes are


def test_1su_lustre_write_time_is_size_over_min_of_tier_and_nics():
    bp = shipped("dgx-h100-superpod-1su")
    nic_limit = su1_storage_gb_per_s()
    assert nic_limit == 1600
    expected = 980e9 / (min(lustre(bp)["write_gb_per_s"], nic_limit) * 1e9)  # 980 / 120 = 8.17 s
    expected_read = 980e9 / (min(lustre(bp)["read_gb_per_s"], nic_limit) * 1e9)  # 980 / 240
    plan = plan_of(bp)
    s = storage.build(ReportContext(plan))
    tier = s.data["tiers"][0]
    assert tier["name"] == "lustre" and tier["checkpoint"]
    assert tier["write_s"] == pytest.approx(expected, rel=1e-5)
    assert tier["write_limited_by"] == "tier"
    assert tier["restore_s"] == pytest.approx(expected_read, rel=1e-5)
    assert storage_io.checkpoint_write_s(plan, 980e9) == pytest.approx(expected)
    assert s.data["client"]["gb_per_s"] == pytest.approx(nic_limit)
    assert s.data["checkpoint"]["tier"] == "lustre"


def test_storage_nics_limit_a_fast_tier():
    bp = shipped("dgx-h100-superpod-1su")
    lustre(bp)["write_gb_per_s"] = 5000
    s = storage.build(ReportContext(plan_of(bp)))
    tier = s.data["tiers"][0]
    assert tier["write_limited_by"] == "node NICs"
    assert tier["write_gb_per_s"] == pytest.approx(su1_storage_gb_per_s())
    assert tier["write_s"] == pytest.approx(980e9 / (su1_storage_gb_per_s() * 1e9), rel=1e-5)


def test_local_nvme_checkpoint_is_sharded_across_gpu_nodes():
    bp = shipped("dgx-h100-superpod-1su")
    server = dict(catalog("servers")["dgx-h100"])
    server["nvme"] = {"count": 8, "size_tb": 3.84, "read_gb_per_s": 50, "write_gb_per_s": 25}
    bp["catalog"] = {"servers": {"dgx-h100-nvme": server}}
    bp["node_types"]["dgx"]["server"] = "dgx-h100-nvme"
    s = storage.build(ReportContext(plan_of(bp)))
    raid = next(t for t in s.data["tiers"] if t["tier"] == "local")
    nodes = 32
    assert raid["write_s"] == pytest.approx(980e9 / nodes / 25e9, rel=1e-5)  # 1.225 s
    assert raid["restore_s"] == pytest.approx(980e9 / nodes / 50e9, rel=1e-5)
    assert raid["write_limited_by"] == "node NVMe"
    assert raid["capacity_tb"] == pytest.approx(nodes * 8 * 3.84)


def test_local_tier_without_nvme_bandwidth_says_so():
    s = storage.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su"))))
    raid = next(t for t in s.data["tiers"] if t["tier"] == "local")
    assert raid["write_s"] is None and "catalog" in raid["write_limited_by"]


def test_overhead_and_retained_checkpoints():
    bp = shipped("dgx-h100-superpod-1su")
    s = storage.build(ReportContext(plan_of(bp), checkpoint_interval_s=600))
    ck = s.data["checkpoint"]
    write = 980e9 / 120e9
    assert ck["interval_s"] == 600
    assert ck["overhead_fraction"] == pytest.approx(write / 600, rel=1e-5)
    assert ck["retained"] == bp["workload"]["checkpoints_retained"] == 5
    assert ck["retained_tb"] == pytest.approx(5 * 0.98)
    assert ck["retained_share"] == pytest.approx(5 * 0.98 / 2000, rel=1e-5)
    # without an override the workload's 30 min apply
    s = storage.build(ReportContext(plan_of(bp)))
    assert s.data["checkpoint"]["overhead_fraction"] == pytest.approx(write / 1800, rel=1e-5)


def test_context_params_win_over_workload():
    s = storage.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su")), params=8e9,
                                    checkpoint_bytes_per_param=16))
    assert s.data["model"]["params_from"] == "model"
    assert s.data["model"]["checkpoint_bytes"] == pytest.approx(128e9)
    assert s.data["tiers"][0]["write_s"] == pytest.approx(128e9 / 120e9, rel=1e-5)


def test_no_model_reports_bandwidths_only():
    s = storage.build(ReportContext(plan_of(shipped("lab-2node"))))
    assert s.data["model"]["params"] is None
    assert all(t["write_s"] is None for t in s.data["tiers"])
    assert s.data["tiers"][0]["write_gb_per_s"] == 1.5
    assert "No model is given" in s.markdown


def test_data_loading_need_vs_available():
    s = storage.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su")), tokens_per_s=3e6))
    dl = s.data["data_loading"]
    assert dl["bytes_per_token"] == 4  # no model, so no vocabulary: int32 ids, as Megatron-LM stores them then
    assert dl["tier"] == "lustre"
    assert dl["need_gb_per_s"] == pytest.approx(3e6 * 4 / 1e9)
    assert dl["available_gb_per_s"] == pytest.approx(min(240, su1_storage_gb_per_s()))
    assert dl["share"] == pytest.approx(0.012 / 240, rel=1e-5)


def test_data_loading_without_throughput_says_so():
    s = storage.build(ReportContext(plan_of(shipped("dgx-h100-superpod-1su"))))
    assert s.data["data_loading"]["need_gb_per_s"] is None
    assert "no training throughput" in s.markdown


def test_data_tier_prefers_parallel_then_object_then_nfs():
    bp = shipped("dgx-h100-superpod-1su")
    obj = {"name": "s3", "tier": "object", "endpoint": "https://s3.example", "mount": "/s3",
           "capacity_tb": 10, "read_gb_per_s": 30, "write_gb_per_s": 20}
    bp["storage"].insert(0, obj)
    assert storage_io.data_tier(plan_of(bp))[1].name == "lustre"
    bp["storage"] = [t for t in bp["storage"] if t["tier"] != "parallel"]
    assert storage_io.data_tier(plan_of(bp))[1].name == "s3"
    bp["storage"] = [t for t in bp["storage"] if t["tier"] != "object"]
    assert storage_io.data_tier(plan_of(bp))[1].name == "home"


def test_cloud_nodes_use_instance_network_as_upper_bound():
    s = storage.build(ReportContext(plan_of(shipped("aws-p5"))))
    assert "instance network" in s.data["client"]["basis"]
    inst = catalog("instances")["p5.48xlarge"]
    assert s.data["client"]["gb_per_s"] == pytest.approx(16 * inst["network"]["total_gbps"] / 8)


@pytest.mark.parametrize("name", sorted(p.stem for p in BLUEPRINTS.glob("*.yaml")))
def test_every_shipped_blueprint_builds(name):
    s = storage.build(ReportContext(plan_of(shipped(name)), tokens_per_s=1e6))
    assert s.key == "storage" and s.markdown.endswith("\n")
    assert json.loads(json.dumps(s.data)) == s.data
    assert list(s.data) == ["model", "client", "checkpoint", "tiers", "data_loading"]
