"""SchedMD's ``slurm-smd-*`` packages as clusterctl builds them (clusterctl/rehearse/image/schedmd.py), read back
from the built .deb files, and :func:`place_debs` putting them into a node as a site does.

The build is a session fixture on the real cache (``cache_root()/slurm-debs``, shared with the rehearsals that
install ``kind: debs``): the first run on a machine builds (benchmarks/README.md has the time), every later
run finds the packages. Every expectation below was read by hand from the built files first
(docs/slurm.md, "Packages and PMIx", has the commands).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.image import catalog, schedmd
from clusterctl.rehearse.node.state import NodeRecord, Proc, State
from tests.conftest import require_root, require_tool

IMAGE = catalog.IMAGES["debian-13"]
VERSION = "24.11.5-1"
PACKAGES = [
    "slurm-smd", "slurm-smd-client", "slurm-smd-dev", "slurm-smd-doc", "slurm-smd-libnss-slurm",
    "slurm-smd-libpam-slurm-adopt", "slurm-smd-libpmi0", "slurm-smd-libpmi2-0", "slurm-smd-libslurm-perl",
    "slurm-smd-openlava", "slurm-smd-sackd", "slurm-smd-slurmctld", "slurm-smd-slurmd", "slurm-smd-slurmdbd",
    "slurm-smd-slurmrestd", "slurm-smd-sview", "slurm-smd-torque",
]


@pytest.fixture(scope="session")
def smd_debs() -> Path:
    require_root("the build root is made with mmdebstrap and the build runs in a private mount namespace")
    for tool in ("mmdebstrap", "unshare", "dpkg-deb"):
        require_tool(tool)
    return schedmd.ensure_slurm_debs(IMAGE, "24.11")


def _deb(debs: Path, package: str) -> Path:
    found = sorted(debs.glob(f"{package}_*.deb"))
    assert len(found) == 1, (package, found)
    return found[0]


def _field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True).stdout.strip()


def _contents(deb: Path) -> list[str]:
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    return [line.split(None, 5)[5].split(" -> ")[0].lstrip(".") for line in out.splitlines()]


def _chrooted(root: Path) -> subprocess.Popen:
    """A process whose root is ``root`` (as a node's PID 1 is in its node), waiting until its stdin closes."""
    code = "import os, sys; os.chroot(sys.argv[1]); os.chdir('/'); print('in', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "in\n"
    return proc


def test_place_debs_writes_into_the_node_as_the_node_sees_it(tmp_path):
    require_root("place_debs chowns to root and the stand-in node chroots")
    debs = tmp_path / "debs"
    debs.mkdir()
    (debs / "slurm-smd_24.11.5-1_amd64.deb").write_bytes(b"smd")
    (debs / "slurm-smd-slurmd_24.11.5-1_amd64.deb").write_bytes(b"slurmd")
    (debs / "build.log").write_text("not a package")
    root = tmp_path / "node"
    (root / "data").mkdir(parents=True)
    (root / "srv").symlink_to("/data")  # the node's /srv is its /data, not this machine's
    node = _chrooted(root)
    try:
        state = State(id="t", dir=str(tmp_path), bridge="b", host_address="10.0.0.254/24", prefix=24, key="k",
                      known_hosts="h", ssh_config="c",
                      nodes=[NodeRecord(name="n1", address="10.0.0.1", netns="x", veth_host="a", veth_node="b",
                                        root=str(tmp_path / "rec"), init=Proc(node.pid, 0))])
        schedmd.place_debs(state, ["n1"], "/srv/slurm-debs", debs)
    finally:
        node.communicate("")
    placed = root / "data" / "slurm-debs"
    assert sorted(p.name for p in placed.iterdir()) == ["slurm-smd-slurmd_24.11.5-1_amd64.deb",
                                                        "slurm-smd_24.11.5-1_amd64.deb"]
    assert (placed / "slurm-smd_24.11.5-1_amd64.deb").read_bytes() == b"smd"
    assert oct(placed.stat().st_mode & 0o7777) == "0o755"
    assert [oct(p.stat().st_mode & 0o7777) for p in placed.iterdir()] == ["0o644", "0o644"]
    assert {(p.stat().st_uid, p.stat().st_gid) for p in [placed, *placed.iterdir()]} == {(0, 0)}
