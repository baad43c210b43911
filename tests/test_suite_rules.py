"""Rules of the test suite itself (docs/testing.md, "Skips and requirements"), read from its source with ``ast``.

- No module skips on its own: no skip call, no ``skipif``/``skip`` mark, no ``importorskip``, no reading of
  ``CI``. Only tests/conftest.py does, in ``require()``, so that in CI a missing tool is a failure, never a skip.
- ``time.sleep`` only inside a loop (a poll with a deadline): a test waits for the event, not for a time that is
  "long enough" (tests/e2e, run separately, is not held to it).
- ``require()`` and ``refresh_requested()`` behave as documented with and without ``CI``.

tests/golden holds rendered files, not the suite's code, and is not read.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import TESTS, refresh_requested, require, require_tool

CONFTEST = TESTS / "conftest.py"
SKIP_CALLS = {"skip", "importorskip", "skipTest"}
SKIP_ATTRIBUTES = {"skipif", "skipIf", "skipUnless", "SkipTest"}


def suite_modules() -> list[Path]:
    golden = TESTS / "golden"
    return sorted(p for p in TESTS.rglob("*.py") if golden not in p.parents and "__pycache__" not in p.parts)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_ci(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "CI"


def skip_violations(source: str) -> list[str]:
    """``line: what`` for every way ``source`` skips a test or reads ``CI`` itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        what = ""
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.rsplit(".", 1)[-1] in SKIP_CALLS:
                what = f"{name}() call"
            elif name.rsplit(".", 1)[-1] in ("get", "getenv") and node.args and _is_ci(node.args[0]):
                what = f"{name}('CI')"
        elif isinstance(node, ast.Attribute):
            if node.attr in SKIP_ATTRIBUTES or _dotted(node).endswith("mark.skip"):
                what = _dotted(node)
        elif isinstance(node, ast.ImportFrom) and node.module in ("pytest", "unittest"):
            names = [a.name for a in node.names if a.name in SKIP_CALLS | SKIP_ATTRIBUTES]
            what = f"from {node.module} import {', '.join(names)}" if names else ""
        elif isinstance(node, ast.Subscript) and _dotted(node.value).endswith("environ") and _is_ci(node.slice):
            what = "environ['CI']"
        elif isinstance(node, ast.Compare) and _is_ci(node.left) and \
                any(_dotted(c).endswith("environ") for c in node.comparators):
            what = "'CI' in environ"
        if what:
            found.append(f"{node.lineno}: {what}")
    return found


def unlooped_sleeps(source: str) -> list[int]:
    """Lines of ``time.sleep``/``sleep`` calls not inside a ``while`` or ``for`` of their own function."""
    lines = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
                continue
            if isinstance(child, ast.Call) and _dotted(child.func) in ("time.sleep", "sleep") and not in_loop:
                lines.append(child.lineno)
            visit(child, in_loop or isinstance(child, (ast.While, ast.For)))

    visit(ast.parse(source), False)
    return lines


def test_no_module_but_the_root_conftest_skips_or_reads_ci():
    offenders = {}
    for path in suite_modules():
        if path != CONFTEST:
            found = skip_violations(path.read_text())
            if found:
                offenders[str(path.relative_to(TESTS.parent))] = found
    assert offenders == {}, "use require()/require_tool()/require_root() of tests/conftest.py instead"


def test_the_skip_rule_sees_every_form():
    samples = ["pytest.skip('x')", "skip('x')", "pytest.importorskip('yaml')", "self.skipTest('x')",
               "@pytest.mark.skipif(True, reason='x')\ndef f(): pass", "@pytest.mark.skip\ndef f(): pass",
               "pytestmark = pytest.mark.skip(reason='x')", "from pytest import skip", "raise unittest.SkipTest('x')",
               "os.environ.get('CI')", "os.getenv('CI')", "environ['CI']", "'CI' in os.environ"]
    for sample in samples:
        assert skip_violations(sample), sample
    assert skip_violations("pytest.fail('x'); os.environ.get('CIX'); env = {'CI': ''}; pytest.skip.Exception") == []


def test_sleeps_are_polls_outside_e2e():
    offenders = {}
    for path in suite_modules():
        if (TESTS / "e2e") not in path.parents:
            lines = unlooped_sleeps(path.read_text())
            if lines:
                offenders[str(path.relative_to(TESTS.parent))] = lines
    assert offenders == {}, "wait for the event (tests.helpers.wait_until), not for a fixed time"


def test_the_sleep_rule_sees_a_sleep_outside_a_loop():
    assert unlooped_sleeps("import time\ntime.sleep(1)\n") == [2]
    assert unlooped_sleeps("def f():\n    while True:\n        time.sleep(1)\n") == []
    assert unlooped_sleeps("while True:\n    def f():\n        time.sleep(1)\n") == [3]


def test_require_skips_locally_and_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    require([])  # nothing missing: the test goes on
    require(["", ""])
    with pytest.raises(pytest.skip.Exception, match=r"^frob is missing; no frobnicator \(`bash scripts/test`"):
        require(["frob is missing", "no frobnicator"])
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"frob is missing \(get it\) \[CI is set: this must not be"):
        require("frob is missing", hint="get it")
    with pytest.raises(pytest.fail.Exception, match="no-such-tool-clusterctl is not installed"):
        require_tool("no-such-tool-clusterctl")
    assert require_tool("python3")


def test_refresh_is_refused_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CLUSTERCTL_UPDATE_GOLDEN", raising=False)
    assert not refresh_requested("CLUSTERCTL_UPDATE_GOLDEN")
    monkeypatch.setenv("CLUSTERCTL_UPDATE_GOLDEN", "1")
    assert refresh_requested("CLUSTERCTL_UPDATE_GOLDEN")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="refreshing expected files is refused in CI"):
        refresh_requested("CLUSTERCTL_UPDATE_GOLDEN")
    monkeypatch.setenv("CLUSTERCTL_UPDATE_GOLDEN", "0")  # set at all: refused, whatever the value
    with pytest.raises(pytest.fail.Exception):
        refresh_requested("CLUSTERCTL_UPDATE_GOLDEN")
