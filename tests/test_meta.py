"""Meta-tests: the rule set is registered, documented and tested; the shipped blueprints match the JSON schema
(tests/test_blueprints.py validates each of them without a finding).

Every rule has a triggering and a quiet test in tests/rules/, found by reading the tests' asserts (the convention
of tests/rules/, with ``hits`` and ``codes`` from tests/helpers.py):

- triggering: ``(h,) = hits(data, "CODE")`` (any tuple or list unpacking), ``hits(data, "CODE")[i]``,
  ``assert hits(data, "CODE")``, ``assert len(hits(data, "CODE")) == n`` with n >= 1,
  ``assert "CODE" in codes(data)``, or ``assert <anything over hits(data, "CODE")> == <non-empty literal>``;
- quiet: ``assert hits(data, "CODE") == []``, ``assert not hits(data, "CODE")`` or
  ``assert "CODE" not in codes(data)``, best on a near miss (just below the threshold).

The code is a string literal, a module-level tuple of literals (or a slice of one) a ``for`` loop runs over,
or a ``pytest.mark.parametrize`` argument; ``assert a and b`` counts both parts.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from clusterctl.blueprint.schema import blueprint_schema
from clusterctl.rules import all_rules
from clusterctl.rules.registry import RULE_MODULES
from tests.helpers import BLUEPRINTS, REPO

RULES = all_rules()
SHIPPED = sorted(BLUEPRINTS.glob("*.yaml"))
RULE_TEST_FILES = sorted((REPO / "tests" / "rules").glob("test_*.py"))


def _strings(node: ast.AST, env: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The rule codes an expression stands for: a literal, a name bound to literals, a tuple of them, a slice."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Name):
        return env.get(node.id, ())
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return tuple(s for e in node.elts for s in _strings(e, env))
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        try:
            bounds = [None if b is None else ast.literal_eval(b)
                      for b in (node.slice.lower, node.slice.upper, node.slice.step)]
        except ValueError:
            return ()
        return _strings(node.value, env)[slice(*bounds)]
    return ()


def _call_of(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _hits_codes(node: ast.AST, env) -> tuple[str, ...]:
    if _call_of(node, "hits") and len(node.args) == 2:
        return _strings(node.args[1], env)
    return ()


def _codes_within(node: ast.AST, env, bound: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The codes of every ``hits`` call in an expression, and of the names bound to one earlier in the test."""
    out: list[str] = []
    for sub in ast.walk(node):
        out += _hits_codes(sub, env)
        if isinstance(sub, ast.Name):
            out += bound.get(sub.id, ())
    return tuple(out)


def _classify(atom: ast.AST, env, bound) -> tuple[str | None, tuple[str, ...]]:
    """(role, codes) of one asserted expression: role "fires", "quiet" or None."""
    if isinstance(atom, ast.UnaryOp) and isinstance(atom.op, ast.Not):
        return "quiet", _hits_codes(atom.operand, env)
    if _hits_codes(atom, env):
        return "fires", _hits_codes(atom, env)
    if isinstance(atom, ast.Compare) and len(atom.ops) == 1:
        op, left, right = atom.ops[0], atom.left, atom.comparators[0]
        if isinstance(op, ast.Eq) and isinstance(right, ast.List) and not right.elts:
            return "quiet", _hits_codes(left, env)
        if isinstance(op, ast.NotIn) and _call_of(right, "codes"):
            return "quiet", _strings(left, env)
        if isinstance(op, ast.In) and _call_of(right, "codes"):
            return "fires", _strings(left, env)
        if (_call_of(left, "len") and isinstance(op, (ast.Eq, ast.GtE)) and isinstance(right, ast.Constant)
                and isinstance(right.value, int) and right.value >= 1):
            return "fires", _codes_within(left, env, bound)
        if (isinstance(op, ast.Eq) and isinstance(right, (ast.List, ast.Set, ast.Tuple, ast.Dict))
                and (right.keys if isinstance(right, ast.Dict) else right.elts)):
            return "fires", _codes_within(left, env, bound)
    return None, ()


def rule_test_roles(files) -> dict[str, dict[str, set[str]]]:
    """{rule code: {"fires": {test}, "quiet": {test}}} from the asserts of the test functions in ``files``."""
    roles: dict[str, dict[str, set[str]]] = {}
    for path in files:
        tree = ast.parse(Path(path).read_text())
        module_env = {n.targets[0].id: _strings(n.value, {}) for n in tree.body
                      if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        for func in tree.body:
            if not (isinstance(func, ast.FunctionDef) and func.name.startswith("test_")):
                continue
            env = dict(module_env)
            for dec in func.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "parametrize"
                        and isinstance(dec.args[0], ast.Constant) and "," not in dec.args[0].value):
                    env[dec.args[0].value.strip()] = _strings(dec.args[1], module_env)
            bound: dict[str, tuple[str, ...]] = {}
            for node in ast.walk(func):
                if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                    env[node.target.id] = _strings(node.iter, env)
                elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    bound[node.targets[0].id] = _codes_within(node.value, env, {})
            found: list[tuple[str | None, tuple[str, ...]]] = []
            for node in ast.walk(func):
                if isinstance(node, ast.Assert):
                    test = node.test
                    atoms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
                    found += [_classify(a, env, bound) for a in atoms]
                elif isinstance(node, ast.Assign) and isinstance(node.targets[0], (ast.Tuple, ast.List)):
                    found.append(("fires", _hits_codes(node.value, env)))
                elif isinstance(node, ast.Subscript):
                    found.append(("fires", _hits_codes(node.value, env)))
            for role, codes in found:
                for code in codes if role else ():
                    test_id = f"{Path(path).name}::{func.name}"
                    roles.setdefault(code, {"fires": set(), "quiet": set()})[role].add(test_id)
    return roles


ROLES = rule_test_roles(RULE_TEST_FILES)


def test_at_least_thirty_rules_with_unique_stable_codes():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(codes) >= 30, f"only {len(codes)} rules"
    for code in codes:
        assert re.fullmatch(r"[A-Z][A-Z0-9]*[A-Z]\d{3}", code), code  # K8S001: a digit inside the area prefix


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_is_documented(rule):
    assert rule.title and rule.title == rule.title.strip()
    assert len(rule.doc) > 40, f"{rule.code} needs a docstring that says what it checks and why"
    assert rule.area == rule.func.__module__.rsplit(".", 1)[-1], "one module per area"


def test_every_rule_module_is_registered():
    # as ParallelCluster's test_all_validators_are_called: a rule module missing from the registry never runs
    defining = set()
    for info in pkgutil.iter_modules([str(REPO / "clusterctl" / "rules")]):
        mod = importlib.import_module(f"clusterctl.rules.{info.name}")
        if any(getattr(obj, "__rule__", None) is not None and obj.__rule__.func is obj for obj in vars(mod).values()):
            defining.add(mod.__name__)
    assert len(defining) >= 12
    assert {m.__name__ for m in RULE_MODULES} == defining
    assert len(RULE_MODULES) == len(set(RULE_MODULES))
    assert {r.func.__module__ for r in RULES} == defining


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_a_triggering_and_a_quiet_test(rule):
    # each rule is triggered by a test that asserts it fires, and kept quiet by one that asserts it does not
    # (see the module docstring for the forms that count); a rule nobody triggers is untested, and a rule
    # never asserted quiet could fire on everything
    roles = ROLES.get(rule.code, {"fires": set(), "quiet": set()})
    assert roles["fires"], f"no test in tests/rules/ asserts that {rule.code} fires"
    assert roles["quiet"], f"no test in tests/rules/ asserts that {rule.code} stays quiet"


def test_the_test_reader_knows_both_roles_and_ignores_other_asserts(tmp_path):
    (tmp_path / "test_x.py").write_text('''
A = ("X001", "X002", "X003")
def test_fires():
    (h,) = hits(data, "X001")
    assert len(hits(data, "X002")) == 2 and hits(data, "X004")[0].path
def test_quiet():
    for code in A[1:]:
        assert hits(data, code) == []
    assert "X001" not in codes(data)
def test_neither():
    hits(data, "X005")
    assert len(hits(data, "X005")) == 0
    assert hits(data, "X005") != []
''')
    roles = rule_test_roles([tmp_path / "test_x.py"])
    assert {c: sorted(r["fires"]) for c, r in roles.items() if r["fires"]} == {
        c: ["test_x.py::test_fires"] for c in ("X001", "X002", "X004")}
    assert {c: sorted(r["quiet"]) for c, r in roles.items() if r["quiet"]} == {
        c: ["test_x.py::test_quiet"] for c in ("X001", "X002", "X003")}


def test_there_are_shipped_blueprints():
    assert len(SHIPPED) >= 9, [p.name for p in SHIPPED]


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
