"""One install rehearsal on the debian-13 image (trixie): Slurm 24.11 from its distribution, installed from the site
mirror, converged, tested and run by srun on clean nodes (docs/rehearse.md, "Images", "Site mirror"). The fewest
nodes that prove it: the controller and one compute host (``--nodes-per-group 1``); the fewest steps: the install
scenario, which is deploy without the second converge (the roles' idempotence is the lab's deploy to show, on
Debian 12, and lab-ha's; a second converge here took about two minutes of the suite). The lab's blueprint with its
in-band network moved to 10.73.0.0/24 and its compute hosts renamed (a rehearsal beside the lab's shares no
network and no slurm_<node> cgroup: tests/conftest.py, XDIST_GROUPS), Slurm's install kind distro."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import load
from tests.e2e.conftest import rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.test_nodes import leftovers
from tests.e2e.test_scenarios import blueprint_copy

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
HOSTS = ["head01", "tgpu01"]
MIRROR = "http://10.73.0.254:8080"
"""the host's address on the rehearsal bridge (the highest of 10.73.0.0/24), port 8080"""


def trixie_lab(tmp: Path) -> Path:
    path = blueprint_copy(tmp, "lab-2node.yaml", "10.73.0.0/24", "t")
    text = path.read_text()
    for old, new in (('install: {kind: debs, path: /srv/slurm-debs, version: "24.05.4-1"}', "install: {kind: distro}"),
                     ('version: "24.05"', 'version: "24.11"'),
                     # options the release table gates on 24.05 and 23.11 (plan/slurm.py FEATURES: BLOCK_SIZES,
                     # BLOCK_PLUGIN), proven on the real 24.11 daemons
                     ("  topology: tree\n", "  topology: block\n  block_sizes: [1, 2]\n"),
                     # the monitoring stack is the lab's to prove (its scenario): Prometheus and its ~100 packages
                     # on the head node add minutes to this deploy and nothing to its claim
                     ("monitoring: {server: head01, retention_days: 30}\n", "")):
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def trixie(tmp_path_factory):
    require_rehearsal()
    require_deploy()
    tmp = tmp_path_factory.mktemp("trixie")
    out = tmp / "r"
    r, summary = rehearse(trixie_lab(tmp), out, "--image", "debian-13", "--scenario", "install",
                          "--nodes-per-group", "1", "--keep")
    try:  # kept up for this one look: the Slurm each node runs, as the node's own slurmd says, and the topology
        versions = {h: _slurmd_version(out, h) for h in HOSTS} if r.returncode == 0 else {}
        versions["topology"] = _run(out, "head01", "scontrol show topology") if r.returncode == 0 else ""
        versions["config"] = _run(out, "head01", "scontrol show config") if r.returncode == 0 else ""
    finally:
        r_down = subprocess.run([sys.executable, "-m", "clusterctl", "rehearse", "--down", str(out)], cwd=REPO,
                                capture_output=True, text=True, timeout=120)
    return r, summary, out, versions, r_down


def _run(out: Path, host: str, command: str) -> str:
    r = ssh(load(out), host, command)
    return r.stdout if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()}"


def _slurmd_version(out: Path, host: str) -> str:
    r = ssh(load(out), host, "slurmd -V 2>/dev/null || slurmctld -V")  # the daemon the host runs
    return r.stdout.strip() if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()}"


def test_deploy_on_debian_13_runs_slurm_24_11_from_the_site_mirror(trixie):
    r, summary, out, versions, r_down = trixie
    assert r.returncode == 0, r.stderr[-6000:]
    assert summary["image"] == {"name": "debian-13", "suite": "trixie", "reason": "--image"}
    assert summary["slurm_version"] == {"blueprint": "24.11", "rehearsed": "24.11"}
    assert [s["name"] for s in summary["steps"]] == ["boot", "ssh-check", "mirror", "converge", "packages",
                                                     "testinfra", "srun"]
    assert {s["name"]: s["status"] for s in summary["steps"]} == {s["name"]: "ok" for s in summary["steps"]}
    assert {h: versions[h] for h in HOSTS} == {h: "slurm-wlm 24.11.5" for h in HOSTS}  # Debian's name, SchedMD's release
    installed = summary["installed_packages"]
    assert installed["tgpu01"]["slurmd"]["version"].startswith("24.11.5-")
    assert installed["head01"]["slurmctld"]["version"].startswith("24.11.5-")
    assert {p["origin"] for packages in installed.values() for p in packages.values()} == {MIRROR}
    assert steps(summary)["srun"]["hosts"]["tgpu01"]["rank"] == 0
    assert r_down.returncode == 0, r_down.stderr
    assert leftovers(load(out)) == []


def test_release_gated_topology_block_runs_on_the_real_24_11_daemons(trixie):
    """topology/block (Slurm >= 23.11) with BlockSizes (>= 24.05, BlockLevels before), rendered for 24.11 and
    accepted by slurmctld 24.11: the block the plan made of the GPU group, at the sizes the blueprint asks."""
    r, summary, out, found, _ = trixie
    assert r.returncode == 0, r.stderr[-3000:]
    config = {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in found["config"].splitlines()
                                                 if "=" in line)}
    assert config.get("TopologyPlugin") == "topology/block", found["config"][-2000:]
    topology = found["topology"]
    # slurmctld 24.11 read BlockSizes (a key 23.11 refuses) and made the one block of the GPU group
    assert "BlockName=gpu" in topology and "Nodes=tgpu[01-02]" in topology, topology
