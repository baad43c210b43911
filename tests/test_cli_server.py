"""tests/cli_server.py, which tests.helpers.cli forks the command line from, answers as ``python -m clusterctl`` does:
the same exit status, standard output and standard error, in the request's directory, environment and input."""

from __future__ import annotations

import pytest

from tests.helpers import REPO, cli


def _both(monkeypatch, *args: str, **kw):
    forked = cli(*args, **kw)
    monkeypatch.setenv("CLUSTERCTL_TEST_CLI", "subprocess")
    fresh = cli(*args, **kw)
    monkeypatch.delenv("CLUSTERCTL_TEST_CLI")
    return forked, fresh


@pytest.mark.parametrize("args", [
    ("--version",),
    ("validate", "blueprints/lab-2node.yaml"),
    ("validate", "tests/blueprints/broken/leaf-over-ports.yaml"),
    ("validate", "no-such-file.yaml"),
    ("no-such-command",),
    ("validate", "blueprints/lab-2node.yaml", "--format", "json"),
])
def test_a_forked_run_answers_as_python_m_clusterctl(monkeypatch, args):
    forked, fresh = _both(monkeypatch, *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_directory_environment_and_input_are_the_request_s(monkeypatch, tmp_path):
    (tmp_path / "bp.yaml").write_text((REPO / "blueprints" / "lab-2node.yaml").read_text())
    forked, fresh = _both(monkeypatch, "validate", "bp.yaml", cwd=tmp_path, env={"CLUSTERCTL_MAX_INPUT_SIZE": "1KB"})
    assert forked.returncode == fresh.returncode == 2
    assert (forked.stdout, forked.stderr) == (fresh.stdout, fresh.stderr)
    text = (REPO / "blueprints" / "lab-2node.yaml").read_text()
    forked, fresh = _both(monkeypatch, "validate", "-", input=text)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
