"""Issue 13 "Also fix": the report shows validation findings, states no figure without a network path,
counts data-loading bytes per token as Megatron-LM stores token ids, and lists model presets whole."""

from __future__ import annotations

import json

import pytest

from clusterctl.report.workload import presets
from tests.helpers import cli


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
