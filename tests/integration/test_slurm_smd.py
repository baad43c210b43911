"""SchedMD's ``slurm-smd-*`` packages as clusterctl builds them (clusterctl/rehearse/image/schedmd.py), read back
from the built .deb files, and :func:`place_debs` putting them into a node as a site does.

The build is a session fixture on the real cache (``cache_root()/slurm-debs``, shared with the rehearsals that
install ``kind: debs``): the first run on a machine builds (benchmarks/README.md has the time), every later
run finds the packages. Every expectation below was read by hand from the built files first
(docs/slurm.md, "Packages and PMIx", has the commands).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.image import catalog, schedmd
from clusterctl.rehearse.node.state import NodeRecord, Proc, State
from tests.conftest import require_root, require_tool

IMAGE = catalog.IMAGES["debian-12"]
"""the build the lab rehearsal installs (debian-12 is the image nearest its ubuntu-22.04): one cold build per machine"""
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



def test_the_build_makes_schedmds_packages_at_the_tarballs_version(smd_debs):
    built = sorted(smd_debs.glob("*.deb"))
    assert sorted(_field(d, "Package") for d in built if not d.name.split("_")[0].endswith("-dbgsym")) == PACKAGES
    assert {_field(d, "Version") for d in built} == {VERSION}
    assert {_field(d, "Architecture") for d in built} == {"amd64", "all"}


def test_the_pmix_plugin_is_in_slurm_smd_and_no_package_depends_on_libpmix(smd_debs):
    assert sorted(f for f in _contents(_deb(smd_debs, "slurm-smd")) if "/mpi_pmix" in f) == [
        "/usr/lib/x86_64-linux-gnu/slurm/mpi_pmix.so", "/usr/lib/x86_64-linux-gnu/slurm/mpi_pmix_v4.so"]
    depends = {_field(d, "Package"): _field(d, "Depends") for d in sorted(smd_debs.glob("*.deb"))}
    assert [p for p, dep in depends.items() if "pmix" in dep] == []


def test_the_plugin_dlopens_the_versioned_libpmix_through_its_runpath(smd_debs, tmp_path):
    require_tool("objdump")
    subprocess.run(["dpkg-deb", "-x", str(_deb(smd_debs, "slurm-smd")), str(tmp_path)], check=True)
    plugin = tmp_path / "usr/lib/x86_64-linux-gnu/slurm/mpi_pmix_v4.so"
    dynamic = subprocess.run(["objdump", "-p", str(plugin)], capture_output=True, text=True, check=True).stdout
    assert [line.split() for line in dynamic.splitlines() if line.split()[:1] in (["NEEDED"], ["RUNPATH"])] == [
        ["NEEDED", "libhwloc.so.15"], ["NEEDED", "libc.so.6"],
        ["RUNPATH", "/usr/lib64:/usr/lib/x86_64-linux-gnu/pmix2/lib"]]
    assert b"libpmix.so.2\0" in plugin.read_bytes()
    assert b"libpmix.so\0" not in plugin.read_bytes()


def test_the_depends_the_roles_rely_on(smd_debs):
    assert _field(_deb(smd_debs, "slurm-smd-slurmd"), "Depends") == (
        "libc6 (>= 2.34), libhwloc15 (>= 2.9.0), liblz4-1 (>= 0.0~r130), libnuma1 (>= 2.0.11), "
        "libpam0g (>= 0.99.7.1), slurm-smd (= 24.11.5-1), munge")
    assert _field(_deb(smd_debs, "slurm-smd-slurmdbd"), "Depends") == "libc6 (>= 2.34), slurm-smd (= 24.11.5-1), munge"
    assert _field(_deb(smd_debs, "slurm-smd-dev"), "Depends") == "slurm-smd (= 24.11.5-1), munge"
    smd = _field(_deb(smd_debs, "slurm-smd"), "Depends").split(", ")
    assert [d for d in smd if d.split()[0] in ("libmariadb3", "libmunge2", "libhwloc15", "libjson-c5",
                                                "libyaml-0-2", "libjwt0", "munge")] == [
        "libhwloc15 (>= 2.9.0)", "libjson-c5 (>= 0.15)", "libjwt0 (>= 1.10.1)", "libmariadb3 (>= 3.0.0)",
        "libmunge2 (>= 0.5.8)", "libyaml-0-2", "munge"]


def test_the_headers_pyxis_needs_are_in_slurm_smd_dev_and_pam_slurm_adopt_is_built(smd_debs):
    headers = set(_contents(_deb(smd_debs, "slurm-smd-dev")))
    assert {"/usr/include/slurm/spank.h", "/usr/include/slurm/slurm.h"} <= headers
    assert "/lib/security/pam_slurm_adopt.so" in _contents(_deb(smd_debs, "slurm-smd-libpam-slurm-adopt"))
    plugins = {f.rsplit("/", 1)[1] for f in _contents(_deb(smd_debs, "slurm-smd")) if "/slurm/" in f}
    assert {"accounting_storage_mysql.so", "auth_munge.so", "cgroup_v1.so", "cgroup_v2.so", "serializer_json.so",
            "serializer_yaml.so", "auth_jwt.so", "gpu_generic.so"} <= plugins
    assert "gpu_nvml.so" not in plugins  # no NVML in the build root (docs/slurm.md, "Packages and PMIx")


def test_no_maintainer_script_creates_a_user(smd_debs, tmp_path):
    scripts = {}
    for deb in sorted(smd_debs.glob("*.deb")):
        control = tmp_path / deb.name
        subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
        for script in ("preinst", "postinst", "prerm", "postrm"):
            if (control / script).exists():
                scripts.setdefault(_field(deb, "Package"), []).append(script)
                text = (control / script).read_text()
                assert not any(word in text for word in ("adduser", "useradd", "groupadd", "sysusers")), deb.name
    assert scripts == {name: ["postinst", "prerm", "postrm"] for name in (
        "slurm-smd-sackd", "slurm-smd-slurmctld", "slurm-smd-slurmd", "slurm-smd-slurmdbd", "slurm-smd-slurmrestd")}


def test_a_second_ask_reuses_the_build(smd_debs):
    assert schedmd.ensure_slurm_debs(IMAGE, "24.11") == smd_debs
    assert schedmd.build_seconds(smd_debs) > 60


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
