"""End-to-end tests boot rehearsal nodes (namespaces, overlays, a bridge, sshd) as root: their fixtures. The
``e2e`` marker is registered in tests/conftest.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.image.catalog import IMAGES
from clusterctl.rehearse.image.schedmd import ensure_slurm_debs
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]


def require_rehearsal() -> None:
    """Skip when this machine cannot host rehearsal nodes; in CI that is a failure, not a skip."""
    from clusterctl.rehearse.node import probe

    found = probe.problems()
    if found:
        require("cannot boot rehearsal nodes: " + "; ".join(f"{m} ({h})" for m, h in found), hint="")


def require_deploy() -> None:
    """Every scenario but ``nodes`` also needs ansible-runner (the packages the roles install come from the site
    mirror, built from Debian's registry: docs/rehearse.md)."""
    problems = []
    try:
        import ansible_runner  # noqa: F401
    except ImportError:
        problems.append("ansible-runner is not installed")
    require(problems)


def rehearse(blueprint: Path, out: Path, *args: str, timeout: int = 2400):
    """``clusterctl rehearse BLUEPRINT -o OUT --format json ARGS`` through the real CLI: (process, summary)."""
    argv = [sys.executable, "-m", "clusterctl", "rehearse", str(blueprint), "-o", str(out), "--format", "json", *args]
    with subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL) as p:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except BaseException:  # a timeout or an interrupted test run: SIGTERM, so the CLI stops its nodes
            p.terminate()      # (subprocess.run would SIGKILL it and leave them running)
            p.communicate(timeout=300)
            raise
    r = subprocess.CompletedProcess(argv, p.returncode, stdout, stderr)
    try:
        summary = json.loads(r.stdout)
    except ValueError:
        summary = None
    else:  # beside the output directory, for benchmarks/profile_suite.py's table of rehearsal steps
        (out.parent / "rehearsal-summary.json").write_text(r.stdout)
    return r, summary


@pytest.fixture(scope="session")
def lab_rehearsal(tmp_path_factory):
    """The acceptance command itself, once per session: ``clusterctl rehearse blueprints/lab-2node.yaml
    --format json`` (every scenario that applies: version-guard, deploy, node-failure, add-node)."""
    require_rehearsal()
    require_deploy()
    # SchedMD's packages the lab installs, built before the rehearsal's clock starts: on a fresh machine the build
    # (10-17 minutes on 2 cores, benchmarks/README.md) would otherwise run inside the rehearsal's mirror step and its
    # timeout; on a warm cache this finds the packages at once
    ensure_slurm_debs(IMAGES["debian-12"], "24.11")
    out = tmp_path_factory.mktemp("lab") / "r"
    r, summary = rehearse(REPO / "blueprints" / "lab-2node.yaml", out)
    return r, summary, out


def steps(summary: dict) -> dict[str, dict]:
    return {s["name"]: s for s in summary["steps"]}
