"""The command line as users run it: exit codes, located messages, machine formats."""

from __future__ import annotations

import json

from tests.helpers import REPO, cli, plan_of, shipped, to_yaml

LAB = "blueprints/lab-2node.yaml"


def test_validate_shipped_lab_exits_0():
    r = cli("validate", LAB)
    assert r.returncode == 0, r.stderr
    assert "valid" in r.stderr and "Traceback" not in r.stderr


def test_version():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("clusterctl ")


def write(tmp_path, text: str, name: str = "bp.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_unknown_key_is_located_with_did_you_mean(tmp_path):
    text = to_yaml(shipped("lab-2node")).replace("node_groups:", "node_grups:", 1)
    path = write(tmp_path, text)
    r = cli("validate", path)
    assert r.returncode == 2
    line = text.splitlines().index("node_grups:") + 1
    assert f"{path}:{line}:1" in r.stderr
    assert "did you mean 'node_groups'" in r.stderr
    assert "Traceback" not in r.stderr


def test_broken_yaml_is_located(tmp_path):
    path = write(tmp_path, "name: x\nnode_types: {a: [\n  b: c\n")
    r = cli("validate", path)
    assert r.returncode == 2
    assert "not valid YAML" in r.stderr and f"{path}:" in r.stderr
    assert "Traceback" not in r.stderr


def test_wrong_type_says_what_was_expected(tmp_path):
    data = shipped("lab-2node")
    data["node_groups"][0]["count"] = "two"
    r = cli("validate", write(tmp_path, to_yaml(data)))
    assert r.returncode == 2
    assert "node_groups[0].count must be a whole number, got 'two' (text)" in r.stderr


def test_unknown_catalog_name_is_located(tmp_path):
    data = shipped("lab-2node")
    data["node_types"]["hgx"]["server"] = "hgx-h100-8gpus"
    r = cli("validate", write(tmp_path, to_yaml(data)))
    assert r.returncode == 2
    assert "unknown server model 'hgx-h100-8gpus'" in r.stderr and "did you mean 'hgx-h100-8gpu'" in r.stderr


def test_missing_file_exits_2(tmp_path):
    r = cli("validate", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "cannot read blueprint" in r.stderr


def test_json_and_sarif_outputs(tmp_path):
    data = shipped("lab-2node")
    data["rack_profiles"]["lab"]["power_kw"] = 5
    path = write(tmp_path, to_yaml(data))
    r = cli("validate", path, "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["status"] == "failed"
    hit = [f for f in doc["findings"] if f["code"] == "POWER001"][0]
    assert hit["location"]["file"] == path and hit["location"]["line"] > 1
    r = cli("validate", path, "--format", "sarif")
    sarif = json.loads(r.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    res = [x for x in run["results"] if x["ruleId"] == "POWER001"][0]
    assert res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == hit["location"]["line"]
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "POWER001"


def test_suppress_on_cli_and_in_blueprint(tmp_path):
    data = shipped("lab-2node")
    data["rack_profiles"]["lab"]["power_kw"] = 5
    path = write(tmp_path, to_yaml(data))
    assert cli("validate", path).returncode == 1
    assert cli("validate", path, "--suppress", "POWER001,POWER002").returncode == 0
    data.setdefault("validation", {})["suppress"] = [{"rule": "POWER001", "reason": "temporary feed"},
                                                     {"rule": "POWER002", "reason": "temporary feed"}]
    r = cli("validate", write(tmp_path, to_yaml(data), "b.yaml"), "--format", "json")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert any(f.get("suppressed") == "temporary feed" for f in doc["findings"])
    bad = cli("validate", path, "--suppress", "POWER01")
    assert bad.returncode == 2 and "did you mean 'POWER001'" in bad.stderr


def test_fail_on_warning(tmp_path):
    data = shipped("lab-2node")
    data["site"]["it_power_kw"] = round(plan_of(data).it_power_kw / 0.95, 1)  # 95 % used: a warning only
    path = write(tmp_path, to_yaml(data))
    r = cli("validate", path, "--format", "json")
    doc = json.loads(r.stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "warning"] == ["POWER004"]
    assert r.returncode == 0
    assert cli("validate", path, "--fail-on", "warning").returncode == 1
    assert cli("validate", path, "--fail-on", "never").returncode == 0


def test_bad_option_is_misuse():
    r = cli("validate", LAB, "--format", "xml")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_rules_list_and_explain():
    r = cli("rules", "list")
    assert r.returncode == 0 and "POWER001" in r.stdout
    r = cli("rules", "explain", "power001")
    assert r.returncode == 0 and "continuous" not in r.stdout.split("\n")[0]
    assert "POWER001" in r.stdout and "suppress" in r.stdout
    r = cli("rules", "explain", "POWER999")
    assert r.returncode == 2


def test_schema_and_catalog_commands():
    r = cli("schema")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "clusterctl blueprint"
    r = cli("catalog", "switches")
    assert r.returncode == 0 and "qm9700" in r.stdout
    r = cli("catalog", "switchs")
    assert r.returncode == 2 and "did you mean 'switches'" in r.stderr
    r = cli("catalog", "--format", "json")
    assert "h100-sxm" in json.loads(r.stdout)["accelerators"]


def test_init_from_preset(tmp_path):
    out = tmp_path / "mine.yaml"
    r = cli("init", "lab-2node", "-o", str(out))
    assert r.returncode == 0 and out.read_text() == (REPO / LAB).read_text()
    assert cli("init", "lab-2node", "-o", str(out)).returncode == 2
