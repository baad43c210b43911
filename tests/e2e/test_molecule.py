"""``molecule test`` of a role runs for real on a rehearsal node: create boots one, converge applies the role
over SSH, idempotence demands changed=0 on the second converge, verify asserts on the node, destroy leaves
nothing behind (docs/rehearse.md, "Role tests with Molecule")."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from clusterctl.rehearse.nodes import rehearsal_id
from clusterctl.rehearse.state import load
from tests.conftest import require_tool
from tests.e2e.conftest import require_rehearsal

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 360  # about 45 s on an idle 2-core machine; up to ~150 s when it is shared
STEPS = ("create", "converge", "idempotence", "verify", "destroy")


@pytest.fixture(autouse=True)
def _capable():
    require_rehearsal()
    require_tool("molecule")


def molecule(role: str, eph: Path, *args: str) -> subprocess.CompletedProcess:
    """``molecule ARGS`` in the role's directory, with its own ephemeral directory (so a contributor's
    own run of the same scenario is never touched), output as plain text."""
    env = {**os.environ, "MOLECULE_EPHEMERAL_DIRECTORY": str(eph), "NO_COLOR": "1", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "PY_COLORS": "0"}
    return subprocess.run(["molecule", *args], cwd=REPO / "roles" / role, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)


def leftovers(eph: Path) -> list[str]:
    """Netns, bridge and veths of the scenario's rehearsal still on the machine, found by the rehearsal id
    (Molecule prunes the ephemeral directory, state file included, after destroy)."""
    rid = rehearsal_id(eph / "rehearsal")
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    out = [f"netns {n}" for n in netns if n.startswith(f"rh-{rid}-")]
    out += [f"link {name}" for name in re.findall(r"^\d+: ([^:@]+)", links, re.M) if name.startswith(f"rh{rid}")
            or name == f"rh-{rid}"]
    return out


@pytest.mark.parametrize("role", ["munge", "node_health"])
def test_molecule_test_converges_idempotently_verifies_and_cleans_up(role, tmp_path):
    eph = tmp_path / "eph"
    r = molecule(role, eph, "test", "-s", "default")
    out = r.stdout
    assert r.returncode == 0, out[-4000:]
    for step in STEPS:
        assert f"[default > {step}] Executed: Successful" in out, f"{step} did not run: {out[-3000:]}"
    second = out.split("[default > idempotence] Executing")[1].split("[default > idempotence] Executed")[0]
    assert re.search(r"(?m)^.*\S+\s+: ok=\d+\s+changed=0\s", second), second[-2000:]
    assert leftovers(eph) == []


def test_verify_fails_when_the_role_s_result_is_broken(tmp_path):
    """verify.yml asserts something real: a MUNGE key with the wrong mode fails it."""
    eph = tmp_path / "eph"
    try:
        r = molecule("munge", eph, "converge", "-s", "default")
        assert r.returncode == 0, r.stdout[-4000:]
        state = load(eph / "rehearsal")
        assert state is not None
        broke = subprocess.run(["ssh", "-F", state.ssh_config, "head01", "chmod 0644 /etc/munge/munge.key"],
                               capture_output=True, text=True, timeout=30)
        assert broke.returncode == 0, broke.stderr
        r = molecule("munge", eph, "verify", "-s", "default")
        assert r.returncode != 0
        assert "munge_verify_key.stat.mode == '0400'" in r.stdout
    finally:
        d = molecule("munge", eph, "destroy", "-s", "default")
        assert d.returncode == 0, d.stdout[-2000:]
    assert leftovers(eph) == []
