"""Issue 24, "Policy over suppression": a blueprint's catalog entry that replaces a shipped one is listed as a
notice (META003 info at the entry, with the fields that differ) in every validate format."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from tests.helpers import REPO, cli, lab, to_yaml

SHIPPED_H100 = yaml.safe_load((REPO / "clusterctl" / "catalog" / "accelerators.yaml").read_text())["accelerators"]["h100-sxm"]


def _with_h100(tmp_path: Path, **changes) -> str:
    data = lab()
    entry = copy.deepcopy(SHIPPED_H100)
    entry.update(changes)
    data["catalog"] = {"accelerators": {"h100-sxm": entry}}
    path = tmp_path / "bp.yaml"
    path.write_text(to_yaml(data))
    return str(path)


def _line(path: str, text: str) -> int:
    return next(n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


def test_a_catalog_override_of_a_shipped_entry_is_a_notice_in_every_format(tmp_path):
    path = _with_h100(tmp_path, tdp_w=1)  # the power rules pass on a 1 W GPU
    where = f"{path}:{_line(path, 'tdp_w: 1')}:"
    text = cli("validate", path)
    assert text.returncode == 0, text.stderr
    assert f"info[META003]: catalog entry overrides a shipped one\n   --> {where}" in text.stderr
    assert "catalog entry accelerators.h100-sxm replaces the shipped entry of that name: tdp_w 700 → 1" in text.stderr
    doc = json.loads(cli("validate", path, "--format", "json").stdout)
    (notice,) = [f for f in doc["findings"] if f["code"] == "META003"]
    assert notice["severity"] == "info" and notice["path"] == "catalog.accelerators.h100-sxm.tdp_w"
    assert notice["message"].endswith("tdp_w 700 → 1")
    assert f"{notice['location']['file']}:{notice['location']['line']}:" == where
    sarif = json.loads(cli("validate", path, "--format", "sarif").stdout)
    (res,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "META003"]
    assert res["level"] == "note" and "tdp_w 700 → 1" in res["message"]["text"]


def test_every_changed_field_is_named_with_old_and_new_values(tmp_path):
    path = _with_h100(tmp_path, tdp_w=350, hbm_gb=40)
    doc = json.loads(cli("validate", path, "--format", "json").stdout)
    (notice,) = [f for f in doc["findings"] if f["code"] == "META003"]
    assert "hbm_gb 80 → 40" in notice["message"] and "tdp_w 700 → 350" in notice["message"]


def test_a_copy_with_the_shipped_values_or_a_new_name_is_no_override(tmp_path):
    path = _with_h100(tmp_path)
    doc = json.loads(cli("validate", path, "--format", "json").stdout)
    assert not [f for f in doc["findings"] if f["code"] == "META003"]
    data = lab()
    data["catalog"] = {"accelerators": {"h100-site": copy.deepcopy(SHIPPED_H100) | {"tdp_w": 1}}}
    (tmp_path / "new.yaml").write_text(to_yaml(data))
    doc = json.loads(cli("validate", str(tmp_path / "new.yaml"), "--format", "json").stdout)
    assert not [f for f in doc["findings"] if f["code"] == "META003"]


def test_a_catalog_override_cannot_be_silenced_by_the_blueprint(tmp_path):
    data = yaml.safe_load(Path(_with_h100(tmp_path, tdp_w=1)).read_text())
    data["validation"] = {"suppress": [{"rule": "META003", "reason": "ours"}]}
    (tmp_path / "s.yaml").write_text(to_yaml(data))
    doc = json.loads(cli("validate", str(tmp_path / "s.yaml"), "--format", "json").stdout)
    assert [f.get("suppressed") for f in doc["findings"] if f["code"] == "META003"] == [None]
    assert cli("validate", str(tmp_path / "s.yaml"), "--suppress", "META003").returncode == 2
