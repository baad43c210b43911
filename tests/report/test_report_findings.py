"""Issue 13 "Also fix": the report shows validation findings, states no figure without a network path,
counts data-loading bytes per token as Megatron-LM stores token ids, and lists model presets whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterctl.perf.model_presets import presets
from tests.helpers import cli, shipped, to_yaml


def test_list_models_needs_no_blueprint_and_prints_whole_sources():
    r = cli("report", "--list-models")
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    text = " ".join(words)
    for name, entry in presets().items():
        assert name in words
        # every source appears whole: the words of the output, joined, contain the source's words joined
        assert " ".join(entry["source"].split()) in text, name
    assert all(len(line) <= 100 for line in r.stdout.splitlines())


def test_report_without_blueprint_is_misuse():
    r = cli("report")
    assert r.returncode == 2 and "BLUEPRINT" in r.stderr and "--list-models" in r.stderr


def _report_json(*args: str) -> dict:
    r = cli("report", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("model_args, expected", [
    (("--model", "gpt3-175b"), 2),          # 51,200 ids: uint16
    (("--model", "llama3-8b"), 4),          # 128,256 ids: int32
    (("--layers", "4", "--hidden", "1024", "--heads", "8", "--seq-len", "2048", "--vocab", "65499"), 2),
    (("--layers", "4", "--hidden", "1024", "--heads", "8", "--seq-len", "2048", "--vocab", "65500"), 4),
    (("--params-b", "7", "--mfu", "0.4"), 4),  # no vocabulary known: int32, Megatron's optimal_dtype(None)
])
def test_data_loading_bytes_per_token_follow_megatron_indexed_dataset(model_args, expected):
    # megatron/core/datasets/indexed_dataset.py DType.optimal_dtype: uint16 if cardinality < 65500 else int32
    data = _report_json("blueprints/dgx-h100-superpod-1su.yaml", *model_args)
    dl = data["storage"]["data_loading"]
    assert dl["bytes_per_token"] == expected
    assert dl["need_gb_per_s"] == pytest.approx(dl["tokens_per_s"] * expected / 1e9, rel=1e-5)
    md = cli("report", "blueprints/dgx-h100-superpod-1su.yaml", *model_args).stdout
    assert f"× {expected} bytes/token ({'uint16' if expected == 2 else 'int32'} token ids)" in md


def _tp16(tmp_path: Path, suppress: bool = False) -> Path:
    """The 1-SU SuperPOD (8-GPU NVLink domains) with TP 16 in the blueprint: validate warns WORKLOAD003."""
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["training"] = {"tp": 16, "pp": 4}
    if suppress:
        data["validation"] = {"suppress": [{"rule": "WORKLOAD003", "reason": "measuring TP across nodes"}]}
    bp = tmp_path / f"tp16{'-suppressed' if suppress else ''}.yaml"
    bp.write_text(to_yaml(data))
    return bp


def test_report_lists_validation_warnings_first_with_location(tmp_path):
    bp = _tp16(tmp_path)
    v = cli("validate", str(bp), "--format", "json")
    assert v.returncode == 0
    warned = [f for f in json.loads(v.stdout)["findings"] if f["code"] == "WORKLOAD003"]
    line = next(n for n, text in enumerate(bp.read_text().splitlines(), 1) if "tp: 16" in text)
    assert warned and warned[0]["location"]["line"] == line

    data = _report_json(str(bp))
    assert list(data)[2] == "validation"  # report_format, cluster, then the findings before every figure
    val = data["validation"]
    assert (val["errors"], val["warnings"], val["suppressed"]) == (0, 1, 0)
    f = val["findings"][0]
    assert (f["code"], f["severity"], f["location"]) == ("WORKLOAD003", "warning", f"{bp}:{line}")
    assert f["message"] == warned[0]["message"]
    assert data["training"]["tp_beyond_nvlink_domain"] == {"tp": 16, "nvlink_domain_gpus": 8}

    md = cli("report", str(bp)).stdout
    assert md.index("## Validation findings") < md.index("## Capacity")
    assert f"| warning | WORKLOAD003 | {bp}:{line} | tp 16 is larger than the NVLink domain" in md
    training = md[md.index("## Training estimate"):md.index("## Storage")]
    assert "Note: TP 16 is larger than the NVLink domain (8 GPUs)" in training


def test_suppressed_findings_stay_suppressed_in_the_report(tmp_path):
    for bp, extra in ((_tp16(tmp_path, suppress=True), ()), (_tp16(tmp_path), ("--suppress", "WORKLOAD003"))):
        data = _report_json(str(bp), *extra)
        assert data["validation"]["findings"] == [] and data["validation"]["suppressed"] == 1
        md = cli("report", str(bp), *extra).stdout
        assert "WORKLOAD003 |" not in md and "1 suppressed finding(s) not listed" in md


def test_tp_from_the_command_line_beyond_the_domain_is_noted(tmp_path):
    data = _report_json("blueprints/dgx-h100-superpod-1su.yaml", "--tp", "16", "--pp", "4")
    assert data["validation"]["warnings"] == 0  # validate sees the blueprint only
    assert data["training"]["tp_beyond_nvlink_domain"] == {"tp": 16, "nvlink_domain_gpus": 8}
    assert "tp_beyond_nvlink_domain" not in _report_json("blueprints/dgx-h100-superpod-1su.yaml", "--tp", "8",
                                                         "--pp", "4")["training"]


def test_blueprint_with_errors_is_still_not_reported(tmp_path):
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["model"] = "no-such-model"  # WORKLOAD001, an error
    bp = tmp_path / "bad.yaml"
    bp.write_text(to_yaml(data))
    r = cli("report", str(bp))
    assert r.returncode == 1 and "not reported" in r.stderr and "WORKLOAD001" in r.stderr and r.stdout == ""


def _no_storage_fabric(tmp_path: Path) -> Path:
    """The 1-SU SuperPOD without its storage fabric: the DGX storage NICs are cabled to nothing, and the Lustre
    servers' only NID is in the storage address pool, so no fabric joins the GPU nodes to Lustre. /home (on
    head01, in-band) stays reachable over the in-band fabric."""
    data = shipped("dgx-h100-superpod-1su")
    data["fabrics"] = [f for f in data["fabrics"] if f["name"] != "stor"]
    data["storage"][0]["servers"] = "10.31.1.250@tcp:/lustre"
    # validate refuses the design (STORAGE008, an error): the tests suppress it on the command line (only there
    # can an error be suppressed) to see what the report says of it
    bp = tmp_path / "no-storage-fabric.yaml"
    bp.write_text(to_yaml(data))
    return bp


def test_no_network_path_to_storage_states_no_bandwidth_or_checkpoint_time(tmp_path):
    bp = _no_storage_fabric(tmp_path)
    r = cli("validate", str(bp), "--format", "json", "--suppress", "STORAGE008")  # STORAGE008 reports it, suppressed
    assert any(f["code"] == "STORAGE008" and f["suppressed"] for f in json.loads(r.stdout)["findings"]), r.stdout
    data = _report_json(str(bp), "--suppress", "STORAGE008")
    st = data["storage"]
    lustre, home = st["tiers"][0], st["tiers"][1]
    assert lustre["name"] == "lustre" and not lustre["available"]
    assert [lustre[k] for k in ("write_gb_per_s", "read_gb_per_s", "write_s", "restore_s")] == [None] * 4
    reason = lustre["no_path_reason"]
    assert "group dgx has no network path to storage tier lustre" in reason
    assert "10.31.1.250" in reason and "storage NICs are attached to no fabric" in reason
    assert home["available"] and home["write_s"] > 0 and "fabric inband" in home["path"]
    ck = st["checkpoint"]
    assert ck["tier"] == "lustre" and not ck["available"] and ck["write_s"] is None and ck["reason"] == reason
    dl = st["data_loading"]
    assert not dl["available"] and dl["available_gb_per_s"] is None and dl["share"] is None
    assert data["reliability"]["goodput"]["write_s"] is None  # no checkpoint time to build goodput on
    assert st["client"]["basis"] == "inband NICs"  # the uncabled storage NICs are not counted

    md = cli("report", str(bp), "--suppress", "STORAGE008").stdout
    storage_md = md[md.index("## Storage"):md.index("## Reliability")]
    assert "**lustre is not reachable from the GPU nodes**: group dgx has no network path" in storage_md
    assert "| lustre (checkpoint) | parallel | 2,000 | n/a | no network path | n/a | n/a | n/a |" in storage_md
    assert "s to write" not in storage_md and "no checkpoint write or restore time can be stated" in storage_md
    assert "**lustre** has no network path from the GPU nodes" in storage_md


@pytest.mark.parametrize("name", ["dgx-h100-superpod-1su", "hgx-h200-roce-1024", "lab-2node", "aws-p5"])
def test_shipped_blueprints_reach_their_storage(name):
    from clusterctl.plan.paths import storage_path
    from tests.helpers import plan_of

    plan = plan_of(shipped(name))
    paths = {(g.name, t.name): storage_path(plan, g, t) for g in plan.groups if g.type.gpus
             for t in plan.blueprint.storage}
    assert all(p is not None for p in paths.values()), paths
    if name == "dgx-h100-superpod-1su":  # Lustre's o2ib NID is in the storage pool; home is on head01 (in-band)
        assert (paths["dgx", "lustre"].fabric.name, paths["dgx", "lustre"].nic_role) == ("stor", "storage")
        assert (paths["dgx", "home"].fabric.name, paths["dgx", "home"].nic_role) == ("inband", "inband")
    if name == "hgx-h200-roce-1024":  # home on a file server outside the head pair (HA002), reached like the
        # WEKA servers over the converged fabric's storage NICs
        assert (paths["gpu", "home"].fabric.name, paths["gpu", "home"].nic_role) == ("converged", "storage")
    if name == "lab-2node":  # no fabric models the in-band network: a flat one
        assert paths["gpu", "home"].fabric is None and paths["gpu", "home"].nic_role == "inband"
    if name == "aws-p5":
        assert paths["gpu", "fsx"].via == "the instance network"


def test_storage_path_is_none_without_a_shared_fabric():
    from clusterctl.plan.paths import storage_path
    from tests.helpers import plan_of

    data = shipped("dgx-h100-superpod-1su")
    data["fabrics"] = [f for f in data["fabrics"] if f["name"] != "stor"]
    plan = plan_of(data)
    dgx, lustre = plan.group("dgx"), plan.blueprint.storage[0]
    assert storage_path(plan, dgx, lustre).fabric.name == "inband"  # the @tcp NID is in the in-band pool
    data["storage"][0]["servers"] = "10.31.1.250@tcp:/lustre"
    plan = plan_of(data)
    assert storage_path(plan, plan.group("dgx"), plan.blueprint.storage[0]) is None


def test_injection_counts_only_nics_cabled_to_a_fabric():
    # 1-SU SuperPOD: the DGX storage ports (2 x 200G) are on fabric stor; the head and login nodes' storage
    # NIC (1 x 100G) is cabled to no fabric, so it injects nothing
    data = _report_json("blueprints/dgx-h100-superpod-1su.yaml")
    inj = data["capacity"]["injection"]
    rows = {(r["node_type"], r["role"]): r for r in inj["per_node_type"]}
    assert rows["dgx", "storage"]["cabled_to"] == ["stor"]
    assert rows["service", "storage"]["cabled_to"] == []
    assert rows["service", "inband"]["cabled_to"] == ["inband"]
    assert inj["total_gbps_by_role"]["storage"] == 32 * 2 * 200
    assert inj["compute_total_gbps"] == 32 * 8 * 400
    md = cli("report", "blueprints/dgx-h100-superpod-1su.yaml").stdout
    assert "| service | storage | 1 x eth-100g (100G) | **no fabric** |" in md
