"""The design mistakes validate exists to catch, through the real command line: each broken blueprint
(a copy of the lab with one mistake) exits 1 and names the rule, the blueprint line and the numbers."""

from __future__ import annotations

import json

import pytest

from tests.helpers import BROKEN, cli, line_of

CASES = [
    # file, rule, text of the offending line, a piece of the message with its numbers
    ("rack-over-power.yaml", "POWER001", "lab: {power_kw: 20,", "of a 20.0 kW budget"),
    ("cdu-over-capacity.yaml", "COOL001", "capacity_kw: 10", "15.3 kW of liquid heat"),
    ("leaf-over-ports.yaml", "FABRIC001", "su_nodes: 48", "needs 48 downlinks + 48 uplinks = 96 ports of 64"),
    ("oversubscribed-1to1.yaml", "FABRIC002", "oversubscription: 1.0",
     "6,400 Gb/s down vs 8 × 400G = 3,200 Gb/s up"),
    ("storage-unreachable.yaml", "STORAGE008", 'servers: "10.13.0.250@tcp:/lustre"', "10.13.0.250 (address pool storage"),
]


@pytest.mark.parametrize("name,code,line_text,numbers", CASES, ids=[c[0] for c in CASES])
def test_broken_blueprint_fails_with_rule_line_and_numbers(name, code, line_text, numbers):
    path = BROKEN / name
    r = cli("validate", str(path))
    assert r.returncode == 1, r.stderr
    assert f"error[{code}]" in r.stderr
    assert f"{path}:{line_of(path, line_text)}:" in r.stderr
    assert numbers in r.stderr and "Traceback" not in r.stderr
    # the one mistake is the only error
    doc = json.loads(cli("validate", str(path), "--format", "json").stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == [code]
