"""Messages a new user meets first (issue 14, "Messages"), through the real command line."""

from __future__ import annotations

import json

import yaml

from tests.helpers import REPO, cli, shipped, to_yaml

LOCAL_HGX = {
    "description": "HGX with a GPU model the catalog does not know", "vendor": "oem",
    "gpus": {"model": "r100", "count": 8},  # Rubin: not in the shipped catalog
    "cpu": {"model": "Xeon", "sockets": 2, "cores_per_socket": 52, "threads_per_core": 2},
    "memory_gb": 2048,
    "nics": [{"model": "cx7-400g", "count": 8, "role": "compute"},
             {"model": "bf3-2x200g", "count": 1, "role": "storage"},
             {"model": "bf3-2x200g", "count": 1, "role": "inband"},
             {"model": "eth-1g-bmc", "count": 1, "role": "bmc"}],
    "power_kw": 10.2, "height_u": 6,
}


def _write(tmp_path, data: dict):
    path = tmp_path / "bp.yaml"
    text = to_yaml(data)
    path.write_text(text)
    return path, text.splitlines()


def _json_findings(path) -> list[dict]:
    r = cli("validate", str(path), "--format", "json")
    assert r.returncode == 2, r.stderr
    return json.loads(r.stdout)["findings"]


def test_unknown_gpu_model_of_an_inline_server_is_reported_at_its_model_line_alone(tmp_path):
    data = shipped("hgx-h200-roce-1024")
    data["node_types"]["hgx"] = {"spec": LOCAL_HGX, "features": ["h200"]}
    path, lines = _write(tmp_path, data)
    findings = _json_findings(path)
    assert [f["message"] for f in findings] == ["unknown accelerator (in server hgx) 'r100'"]
    loc = findings[0]["location"]
    assert lines[loc["line"] - 1][loc["column"] - 1:].startswith("r100")
    assert findings[0]["path"] == "node_types.hgx.spec.gpus.model"


def test_unknown_gpu_model_of_a_blueprint_catalog_server_is_reported_in_the_catalog(tmp_path):
    data = shipped("hgx-h200-roce-1024")
    data["node_types"]["hgx"]["server"] = "my-hgx"
    data["catalog"] = {"servers": {"my-hgx": LOCAL_HGX}}
    data["node_types"]["hgx2"] = {"server": "my-hgx"}  # a second user of the entry: still one problem
    path, lines = _write(tmp_path, data)
    findings = _json_findings(path)
    assert [f["path"] for f in findings] == ["catalog.servers.my-hgx.gpus.model"]
    loc = findings[0]["location"]
    assert lines[loc["line"] - 1][loc["column"] - 1:].startswith("r100")


def test_unknown_node_type_of_a_group_does_not_cascade_into_unknown_group_errors(tmp_path):
    data = shipped("hgx-h200-roce-1024")
    data["node_groups"][0]["type"] = "hgxx"
    path, _ = _write(tmp_path, data)
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert "unknown node type 'hgxx'" in r.stderr and "did you mean 'hgx'?" in r.stderr
    assert "unknown node group" not in r.stderr
    assert "1 problem(s)" in r.stderr


def test_an_unknown_group_name_is_still_reported(tmp_path):
    data = shipped("hgx-h200-roce-1024")
    data["fabrics"][0]["attach"][0]["group"] = "gpus"
    path, _ = _write(tmp_path, data)
    r = cli("validate", str(path))
    assert r.returncode == 2 and "unknown node group 'gpus'" in r.stderr and "did you mean 'gpu'?" in r.stderr


def test_unquoted_version_is_quoted_as_typed(tmp_path):
    text = (REPO / "blueprints/lab-2node.yaml").read_text()
    assert 'version: "24.05"' in text
    path = tmp_path / "bp.yaml"
    path.write_text(text.replace('version: "24.05"', "version: 24.10   # the newest"))
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert "slurm.version must be text, got 24.10, which YAML reads as the number 24.1" in r.stderr
    assert 'hint: quote it: "24.10"' in r.stderr and '"24.1"' not in r.stderr


def test_unquoted_version_in_a_flow_mapping_is_quoted_as_typed(tmp_path):
    data = shipped("lab-2node")
    data["slurm"]["version"] = "@VERSION@"
    path = tmp_path / "bp.yaml"
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=True, width=100_000)
    assert "{version: '@VERSION@', " in text
    path.write_text(text.replace("'@VERSION@'", "24.20"))
    r = cli("validate", str(path))
    assert r.returncode == 2 and 'hint: quote it: "24.20"' in r.stderr


def _over_budget(tmp_path, power_kw: float, gpu_nodes: int = 128):
    data = shipped("hgx-h200-roce-1024")
    data["rack_profiles"]["hgx"]["power_kw"] = power_kw
    data["node_groups"][0].update(count=gpu_nodes, hostnames=f"gpu[001-{gpu_nodes:03d}]")
    return _write(tmp_path, data)


def test_rack_power_over_many_racks_is_one_grouped_finding_at_the_profile_field(tmp_path):
    path, lines = _over_budget(tmp_path, 38)
    r = cli("validate", str(path))
    assert r.returncode == 1
    assert r.stderr.count("error[POWER001]") == 1
    assert "= racks c[01-32]: 41.1 kW of 38.0 kW each" in r.stderr
    assert "= e.g. rack c01 draws 41.1 kW of a 38.0 kW budget" in r.stderr
    assert "more POWER001" not in r.stderr and "32 error(s)" in r.stderr
    (where,) = [ln for ln in r.stderr.splitlines() if ln.lstrip().startswith("-->")]
    line, col = map(int, where.rsplit(":", 2)[1:])
    assert lines[line - 2].strip() == "hgx:" and lines[line - 1][col - 1:] == "38" and "power_kw" in lines[line - 1]
    # JSON keeps every rack's finding, each at the field to change and naming its rack
    r = cli("validate", str(path), "--format", "json")
    found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "POWER001"]
    assert len(found) == 32
    assert {f["path"] for f in found} == {"rack_profiles.hgx.power_kw"}
    assert [f["subject"]["name"] for f in found] == [f"c{i:02d}" for i in range(1, 33)]


def test_grouped_finding_lists_each_figure_over_its_racks(tmp_path):
    path, _ = _over_budget(tmp_path, 30, gpu_nodes=127)  # c32 holds three servers, the others four
    r = cli("validate", str(path))
    assert r.returncode == 1 and r.stderr.count("error[POWER001]") == 1
    assert "= racks c[01-31]: 41.1 kW of 30.0 kW; rack c32: 30.9 kW of 30.0 kW" in r.stderr


def test_grouped_line_counts_the_racks_past_three_figures():
    from clusterctl.output.diagnostics import Diagnostic, group_message
    from clusterctl.rules.base import Severity

    members = [Diagnostic("POWER001", Severity.ERROR, "t", f"m{i}", "h", (), "bp.yaml", 3, 5, "", None,
                          ("rack", f"r{i:02d}"), f"{40 + i // 2} kW of 38 kW") for i in range(10)]
    assert group_message(members) == ("racks r[00-01]: 40 kW of 38 kW; racks r[02-03]: 41 kW of 38 kW; "
                                      "racks r[04-05]: 42 kW of 38 kW (+4 more racks)")


def test_a_number_yaml_reads_otherwise_is_quoted_as_typed(tmp_path):
    text = (REPO / "blueprints/lab-2node.yaml").read_text()
    path = tmp_path / "bp.yaml"
    path.write_text(text.replace("name: lab-2node\n", "name: 0755\n", 1))
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert "name must be text, got 0755, which YAML reads as the number 493" in r.stderr
    assert 'hint: quote it: "0755"' in r.stderr
