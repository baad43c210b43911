"""One Molecule cycle of the munge role on a rehearsal node, step by step (docs/rehearse.md, "Role tests with
Molecule"): create boots the node, converge applies the role over SSH, idempotence demands changed=0 on the second
converge, verify asserts on the node; then the key's mode is broken over SSH and verify must fail naming the
assertion; destroy leaves nothing behind.

node_health's scenario is not run here: the lab rehearsal converges that role on every compute host, converges it
again with changed=0 (tests/e2e/test_deploy.py) and exercises the health check in its node-failure scenario
(tests/e2e/test_scenarios.py). The scenario stays for role contributors (``cd roles/node_health && molecule test``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from clusterctl.rehearse.node.lifecycle import rehearsal_id
from clusterctl.rehearse.node.state import load
from tests.conftest import require_tool
from tests.e2e.conftest import require_rehearsal

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 360  # per molecule command; the whole cycle takes about 40 s on a shared 2-core machine


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


def step(role: str, eph: Path, name: str) -> str:
    """``molecule NAME -s default``, which must succeed and say so; its output."""
    r = molecule(role, eph, name, "-s", "default")
    assert r.returncode == 0, f"molecule {name}: exit {r.returncode}\n{r.stdout[-4000:]}"
    assert f"[default > {name}] Executed: Successful" in r.stdout, f"{name} did not run: {r.stdout[-3000:]}"
    return r.stdout


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


def test_munge_scenario_converges_idempotently_verifies_catches_a_broken_key_and_cleans_up(tmp_path):
    # a short directory: Ansible's SSH control socket lives under it, and a socket path has at most 107 bytes
    # (under pytest-xdist, tmp_path is /tmp/pytest-of-USER/pytest-N/popen-gwK/<test name>: too long)
    eph = Path(tempfile.mkdtemp(prefix="mol-", dir="/tmp")) / "eph"
    try:
        step("munge", eph, "create")
        step("munge", eph, "converge")
        second = step("munge", eph, "idempotence")
        assert re.search(r"(?m)^.*\S+\s+: ok=\d+\s+changed=0\s", second), second[-2000:]
        step("munge", eph, "verify")

        # verify.yml asserts something real: the same node with the key's mode broken fails it
        state = load(eph / "rehearsal")
        assert state is not None
        broke = subprocess.run(["ssh", "-F", state.ssh_config, "head01", "chmod 0644 /etc/munge/munge.key"],
                               capture_output=True, text=True, timeout=30)
        assert broke.returncode == 0, broke.stderr
        r = molecule("munge", eph, "verify", "-s", "default")
        assert r.returncode != 0, r.stdout[-3000:]
        assert "munge_verify_key.stat.mode == '0400'" in r.stdout, r.stdout[-3000:]
    finally:
        d = molecule("munge", eph, "destroy", "-s", "default")
        assert d.returncode == 0, d.stdout[-2000:]
    assert "[default > destroy] Executed: Successful" in d.stdout, d.stdout[-2000:]
    assert leftovers(eph) == []
