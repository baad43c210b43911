"""Issue 24, "Policy over suppression": a blueprint may suppress warnings and infos; an error finding is
suppressed only by ``--suppress`` on the command line and then printed in every output; a rule declared
``suppressible=False`` is suppressed by nothing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers import cli, lab, to_yaml


def _write(tmp_path: Path, data: dict, name: str = "bp.yaml") -> str:
    path = tmp_path / name
    path.write_text(to_yaml(data))
    return str(path)


def _line(path: str, text: str) -> int:
    return next(n for n, line in enumerate(Path(path).read_text().splitlines(), 1) if text in line)


def _attacker_names(tmp_path: Path) -> str:
    """The reproducer: host names in the attacker's domain, NAME002 suppressed by the blueprint itself."""
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu[01-02].attacker.example"
    data["validation"] = {"suppress": [{"rule": "NAME002", "reason": "our DNS search domain"}]}
    return _write(tmp_path, data)


def _over_power(tmp_path: Path) -> str:
    """The lab with a 5 kW rack budget: POWER001 and POWER002 errors."""
    data = lab()
    data["rack_profiles"]["lab"]["power_kw"] = 5
    return _write(tmp_path, data, "power.yaml")


def test_a_blueprint_entry_does_not_suppress_an_error_finding(tmp_path):
    path = _attacker_names(tmp_path)
    r = cli("validate", path)
    assert r.returncode == 1, r.stderr
    assert "error[NAME002]: invalid host name\n" in r.stderr
    assert "'gpu01.attacker.example' has a dot" in r.stderr
    # the entry is reported where it is
    assert f"warning[META002]: blueprint suppression of an error\n   --> {path}:{_line(path, 'rule: NAME002')}:" in r.stderr
    assert ("validation.suppress[0] names NAME002, whose 1 error finding(s) it does not suppress: errors can be "
            "suppressed only on the command line with --suppress") in r.stderr
    doc = json.loads(cli("validate", path, "--format", "json").stdout)
    (name002,) = [f for f in doc["findings"] if f["code"] == "NAME002"]
    assert name002["severity"] == "error" and "suppressed" not in name002
    assert doc["summary"]["error"] == 1 and doc["summary"]["suppressed"] == 0


def test_render_refuses_a_blueprint_that_suppresses_its_own_error(tmp_path):
    out = tmp_path / "out"
    r = cli("render", _attacker_names(tmp_path), "-o", str(out))
    assert r.returncode == 1, r.stderr
    assert "not rendered" in r.stderr and "error[NAME002]" in r.stderr
    assert not out.exists()


def test_a_blueprint_entry_still_suppresses_warnings(tmp_path):
    data = lab()
    data["node_groups"][0]["hostnames"] = "GPU[01-02]"  # NAME002 at warning severity (upper case)
    data["validation"] = {"suppress": [{"rule": "NAME002", "reason": "the vendor's BMC names"}]}
    path = _write(tmp_path, data)
    r = cli("validate", path, "--format", "json")
    assert r.returncode == 0, r.stdout
    doc = json.loads(r.stdout)
    (name002,) = [f for f in doc["findings"] if f["code"] == "NAME002"]
    assert (name002["severity"], name002["suppressed"]) == ("warning", "the vendor's BMC names")
    assert not [f for f in doc["findings"] if f["code"] == "META002"]


def test_a_command_line_suppressed_error_is_printed_by_validate_in_every_format(tmp_path):
    path = _over_power(tmp_path)
    text = cli("validate", path, "--suppress", "POWER001,POWER002")  # no --show-suppressed
    assert text.returncode == 0, text.stderr
    assert "error[POWER001]: rack power over budget (suppressed: --suppress)\n" in text.stderr
    assert "rack lab01 draws 23.2 kW of a 5.0 kW budget" in text.stderr
    assert "1 suppressed (1 error(s), by --suppress)" in text.stderr
    doc = json.loads(cli("validate", path, "--suppress", "POWER001", "--format", "json").stdout)
    (p1,) = [f for f in doc["findings"] if f["code"] == "POWER001"]
    assert (p1["severity"], p1["suppressed"]) == ("error", "--suppress")
    assert doc["summary"]["suppressed_errors"] == 1
    sarif = json.loads(cli("validate", path, "--suppress", "POWER001", "--format", "sarif").stdout)
    (res,) = [x for x in sarif["runs"][0]["results"] if x["ruleId"] == "POWER001"]
    assert res["level"] == "error"
    assert res["suppressions"] == [{"kind": "external", "status": "accepted",
                                    "justification": "error suppressed on the command line with --suppress POWER001"}]


def test_commands_that_write_files_print_each_suppressed_error(tmp_path):
    path = _over_power(tmp_path)
    notice = f"warning: {path}:{_line(path, 'power_kw: 5')}:15: error POWER001 (rack power over budget) suppressed (--suppress): rack lab01 draws 23.2 kW"
    r = cli("render", path, "-o", str(tmp_path / "out"), "--suppress", "POWER001")
    assert r.returncode == 0, r.stderr
    assert notice in r.stderr
    r = cli("report", path, "-o", str(tmp_path / "rep"), "--suppress", "POWER001")
    assert r.returncode == 0, r.stderr
    assert notice in r.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "**1 error(s) suppressed on the command line (`--suppress`)**" in md
    line = _line(path, 'power_kw: 5')
    assert f"| POWER001 | {path}:{line} | rack lab01 draws 23.2 kW of a 5.0 kW budget" in md
    listed = json.loads((tmp_path / "rep" / "report.json").read_text())["validation"]["suppressed_errors"]
    assert [(e["code"], e["location"], e["suppressed"]) for e in listed] == [("POWER001", f"{path}:{line}", "--suppress")]


@pytest.fixture
def name002_locked(monkeypatch):
    """NAME002 declared ``suppressible=False`` for this test (the names rules of issue 24 are)."""
    from clusterctl import cli as cli_module, cli_app, validate
    from clusterctl.rules import registry

    real = registry.all_rules()
    locked = tuple(dataclasses.replace(r, suppressible=False) if r.code == "NAME002" else r for r in real)
    for module in (registry, cli_module, cli_app, validate):
        monkeypatch.setattr(module, "all_rules", lambda: locked)
    return cli_module.app


def test_an_unsuppressible_rule_is_refused_in_the_blueprint(tmp_path, name002_locked):
    path = _attacker_names(tmp_path)
    r = CliRunner().invoke(name002_locked, ["validate", path])
    assert r.exit_code == 2, r.output
    assert f"{path}:{_line(path, 'rule: NAME002')}:" in r.output
    assert "validation.suppress[0] names NAME002 (invalid host name), a rule that cannot be suppressed" in r.output


def test_an_unsuppressible_rule_is_refused_on_the_command_line(tmp_path, name002_locked):
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu[01-02].attacker.example"
    path = _write(tmp_path, data)
    for command in (["validate", path], ["render", path, "-o", str(tmp_path / "out")]):
        r = CliRunner().invoke(name002_locked, [*command, "--suppress", "NAME002"])
        assert r.exit_code == 2, r.output
        assert "error: --suppress NAME002: rule NAME002 (invalid host name) cannot be suppressed" in r.output
    assert not (tmp_path / "out").exists()


def test_an_unsuppressible_rule_ignores_suppressions_given_to_the_library(name002_locked):
    from clusterctl.rules import registry
    from tests.helpers import plan_of

    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu[01-02].attacker.example"
    result = registry.run_rules(plan_of(data), {"NAME002": "--suppress"})
    assert [(f.code, f.suppressed) for f in result.findings if f.code == "NAME002"] == [("NAME002", None)]
