"""Issue 13 "Also fix": the report shows validation findings, states no figure without a network path,
counts data-loading bytes per token as Megatron-LM stores token ids, and lists model presets whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterctl.report.workload import presets
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
