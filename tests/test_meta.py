"""Meta-tests: the rule set is documented and tested, and every shipped blueprint validates clean."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from clusterctl.blueprint.schema import blueprint_schema
from clusterctl.rules import Severity, all_rules
from clusterctl.validate import validate_file
from tests.helpers import BLUEPRINTS, REPO

RULES = all_rules()
SHIPPED = sorted(BLUEPRINTS.glob("*.yaml"))
RULE_TESTS = "\n".join(p.read_text() for p in (REPO / "tests" / "rules").glob("test_*.py"))


def test_at_least_thirty_rules_with_unique_stable_codes():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(codes) >= 30, f"only {len(codes)} rules"
    for code in codes:
        assert re.fullmatch(r"[A-Z]+\d{3}", code), code


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_is_documented(rule):
    assert rule.title and rule.title == rule.title.strip()
    assert len(rule.doc) > 40, f"{rule.code} needs a docstring that says what it checks and why"
    assert rule.area == rule.func.__module__.rsplit(".", 1)[-1], "one module per area"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_a_test_that_names_it(rule):
    # each rule module's tests trigger the rule and assert its code; a rule nobody triggers is untested
    assert f'"{rule.code}"' in RULE_TESTS, f"no test in tests/rules/ names {rule.code}"


def test_there_are_shipped_blueprints():
    assert len(SHIPPED) >= 9, [p.name for p in SHIPPED]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_blueprint_validates_clean(path):
    v = validate_file(path)
    errors = [f"{f.code} {f.message}" for f in v.result.active() if f.severity >= Severity.ERROR]
    assert errors == []
    assert v.plan.gpus > 0


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_blueprint_matches_json_schema(path):
    schema = blueprint_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_schema_rejects_unknown_keys():
    data = yaml.safe_load(SHIPPED[0].read_text())
    data["node_groupz"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, blueprint_schema())
    json.dumps(blueprint_schema())  # serialisable
