"""Rehearsal nodes are isolated hosts: own name, address, /etc and PIDs; they reach each other over the
bridge; and ``down`` leaves no process, namespace, link or mount behind (docs/rehearse.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.lifecycle import NodeSpec, boot, down
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.select import node_specs
from clusterctl.rehearse.node.state import State, alive, load
from tests.e2e.conftest import require_rehearsal
from tests.helpers import cli, lab, plan_of

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _capable():
    require_rehearsal()


def lab_specs(rid: str = "000000") -> list[NodeSpec]:
    """head01, gpu01, gpu02 with the lab blueprint's in-band addresses."""
    return node_specs(plan_of(lab()), 2, rid)


def leftovers(state: State) -> list[str]:
    """Every resource of the rehearsal still present on the host (empty after a complete teardown)."""
    out = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    with open("/proc/mounts") as f:
        mounts = f.read()
    for n in state.nodes:
        if n.netns in netns.split():
            out.append(f"netns {n.netns}")
        for link in (n.veth_host, n.veth_node):
            if f" {link}:" in links or f" {link}@" in links:
                out.append(f"link {link}")
        if n.root in mounts:
            out.append(f"mount under {n.root}")
        for p in (n.init, n.launcher):
            if alive(p):
                out.append(f"process {p.pid}")
    if f" {state.bridge}:" in links:
        out.append(f"bridge {state.bridge}")
    if state.bmc_interface and f" {state.bmc_interface}:" in links:
        out.append(f"BMC interface {state.bmc_interface}")
    for backing in state.loop_files:  # the scratch scenario's stand-ins: the file and any loop device on it
        if Path(backing).exists():
            out.append(f"loop backing file {backing}")
        held = subprocess.run(["losetup", "--list", "--associated", backing, "--noheadings", "--output", "NAME"],
                              capture_output=True, text=True).stdout.split()
        out += [f"loop device {d} ({backing})" for d in held]
    return out


@pytest.fixture
def cluster(tmp_path):
    state = boot(tmp_path / "r", lab_specs())
    try:
        yield state
    finally:
        down(tmp_path / "r")
        assert leftovers(state) == []


def sh(state: State, node: str, command: str) -> str:
    r = ssh(state, node, command)
    assert r.returncode == 0, f"{node}: {command}: exit {r.returncode}: {r.stderr}"
    return r.stdout


def test_each_node_answers_ssh_with_its_own_name_and_address(cluster):
    assert [n.name for n in cluster.nodes] == ["head01", "gpu01", "gpu02"]
    for n in cluster.nodes:
        name, addrs = sh(cluster, n.name, "hostname; hostname -I").splitlines()
        assert name == n.name
        assert addrs.split() == [n.address]
        assert n.address.startswith("10.10.0.")  # the blueprint's in-band pool, not a rehearsal range


def test_etc_writes_stay_inside_one_node(cluster):
    marker = "/etc/clusterctl-rehearsal-marker"
    assert not Path(marker).exists()
    sh(cluster, "gpu01", f"echo gpu01-only > {marker}")
    assert sh(cluster, "gpu01", f"cat {marker}").strip() == "gpu01-only"
    assert not Path(marker).exists(), "a node wrote the host's /etc"
    assert sh(cluster, "gpu02", f"test -e {marker} && echo present || echo absent").strip() == "absent"
    assert (cluster.node("gpu01").upper / marker.lstrip("/")).read_text() == "gpu01-only\n"
    # the node's own /etc/hostname is its name; the host's is untouched
    assert sh(cluster, "gpu02", "cat /etc/hostname").strip() == "gpu02"
    assert Path("/etc/hostname").read_text().strip() != "gpu02"


def test_nodes_reach_each_other_over_the_bridge(cluster):
    b = cluster.node("gpu02")
    sh(cluster, "gpu01", f"ping -c 1 -W 2 {b.address}")
    # gpu01 resolves gpu02 by name (/etc/hosts) and reaches its sshd: the banner comes back
    banner = sh(cluster, "gpu01", "timeout 5 bash -c 'exec 3<>/dev/tcp/gpu02/22; head -c 8 <&3'")
    assert banner == "SSH-2.0-"
    # the node has no route anywhere else (no default route)
    assert "default" not in sh(cluster, "gpu01", "ip route")


def test_pid_namespace_starts_at_1_with_systemd_as_a_rehearsal_boots_it(cluster):
    for n in cluster.nodes:
        assert sh(cluster, n.name, "cat /proc/1/comm").strip() == "systemd"  # select.NODE_INIT
        pids = sorted(int(p) for p in sh(cluster, n.name, "ls /proc | grep -E '^[0-9]+$'").split())
        assert pids[0] == 1
        assert len(pids) < 40, f"{n.name} sees {len(pids)} processes: not its own PID namespace"
        assert n.init is not None and n.init.pid != 1  # the same init, as the host numbers it


def test_node_sees_none_of_the_hosts_mounts(cluster):
    mounts = sh(cluster, "head01", "cat /proc/mounts")
    points = [line.split()[1] for line in mounts.splitlines()]
    assert points[0] == "/" and mounts.splitlines()[0].split()[2] == "overlay"
    assert not any(p.startswith(str(cluster.dir)) for p in points)
    assert "/dev/shm" in points and "/run" in points and "/tmp" in points


def test_nothing_of_the_machine_is_visible_in_a_node(cluster):
    """A node boots from the clean image (docs/rehearse.md, "Images"): a program installed on this machine
    (scripts/test installs slurm-wlm for the host-daemon tests) is not in it, and its packages are exactly
    the image's, as the image's dpkg status lists them."""
    from clusterctl.rehearse.image.build import installed_packages

    assert Path("/usr/sbin/slurmctld").exists()
    assert cluster.image == "debian-12"
    listed = sh(cluster, "gpu01", "dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}\\n'")
    in_node = {f[0]: f[1] for f in (line.split() for line in listed.splitlines()) if f[2:] == ["installed"]}
    for n in cluster.nodes:
        assert sh(cluster, n.name, "test -e /usr/sbin/slurmctld && echo present || echo absent").strip() == "absent"
    assert "slurmctld" not in in_node and "munge" not in in_node
    assert {"openssh-server", "python3", "python3-apt", "systemd"} <= set(in_node)
    assert in_node == installed_packages(Path(cluster.image_root))
    assert sh(cluster, "gpu01", "cat /etc/debian_version").startswith("12.")
    assert sh(cluster, "gpu01", "ls /etc/apt/sources.list.d; test -e /etc/apt/sources.list || echo none").split() == ["none"]


def test_every_node_holds_a_job_namespace_made_on_any_cpu_and_runs_on_every_cpu(cluster):
    """Slurm's job_container/tmpfs holds each job's mount namespace by bind-mounting /proc/PID/ns/mnt onto a file;
    a kernel with per-CPU namespace ids refuses that from a node whose namespace was made on the wrong CPU
    (docs/rehearse.md). Made on every CPU in turn, several times, from each node; and the node is not left
    pinned to the CPU its namespaces were made on (slurmd counts the CPUs it may use)."""
    import os

    cpus = sorted(os.sched_getaffinity(0))
    probe = ("d=/root/ns-hold; mkdir -p $d; mount --bind $d $d; mount --make-private $d; touch $d/ns; "
             f"for c in {' '.join(map(str, cpus))}; do for i in 1 2 3; do "
             "if taskset -c $c unshare --mount=$d/ns true; then umount $d/ns; echo ok$c; else echo refused$c; fi; "
             "done; done")
    for n in cluster.nodes:
        lines = sh(cluster, n.name, probe).split()
        assert lines == [f"ok{c}" for c in cpus for _ in range(3)], f"{n.name}: {lines}"
        assert sh(cluster, n.name, "nproc").strip() == str(len(cpus))  # sshd's children: not pinned


def test_gpu_stand_in_devices_stay_in_their_node(cluster):
    on_host = Path("/dev/nvidia0").exists()
    sh(cluster, "gpu01", "mknod -m 666 /dev/nvidia0 c 195 0")
    assert sh(cluster, "gpu01", "stat -c %t:%T /dev/nvidia0").strip() == "c3:0"
    assert sh(cluster, "gpu02", "test -e /dev/nvidia0 && echo present || echo absent").strip() == "absent"
    assert Path("/dev/nvidia0").exists() == on_host  # the host's /dev is not the node's


def test_down_leaves_nothing_and_is_idempotent(tmp_path):
    state = boot(tmp_path / "r", lab_specs())
    assert leftovers(state), "the booted rehearsal should be visible"
    stopped = down(tmp_path / "r")
    assert stopped.stopped and leftovers(state) == []
    assert not state.node("gpu01").upper.exists()
    if state.netns_mount_created:  # iproute2's self-bind of /run/netns, when this rehearsal made it
        assert "/run/netns" not in [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    assert down(tmp_path / "r").stopped  # again: nothing to do, no error


def test_down_after_the_booting_process_crashed(tmp_path):
    """The state file is written before each resource: a boot killed with SIGKILL is undone by down()."""
    out = tmp_path / "r"
    code = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from clusterctl.rehearse.node.lifecycle import NodeSpec, boot
        boot(Path({str(out)!r}), [NodeSpec("gpu01", "10.10.0.17"), NodeSpec("gpu02", "10.10.0.18")])
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    state = load(out)
    assert state is not None and not state.stopped and len(state.nodes) == 2
    assert all(alive(n.init) for n in state.nodes), "the nodes outlive the crashed booting process"
    down(out)
    assert leftovers(state) == []


def test_failed_boot_tears_down_what_it_started(tmp_path, monkeypatch):
    from clusterctl.rehearse.node import lifecycle

    real = lifecycle._launch
    calls = []

    def failing(node, binds, image_root):
        calls.append(node.name)
        if len(calls) == 2:
            raise RehearsalError("injected failure")
        return real(node, binds, image_root)

    monkeypatch.setattr(lifecycle, "_launch", failing)
    with pytest.raises(RehearsalError, match="injected"):
        boot(tmp_path / "r", lab_specs())
    state = load(tmp_path / "r")
    assert state is not None and state.stopped and leftovers(state) == []


def test_second_rehearsal_in_a_running_dir_is_refused(cluster):
    with pytest.raises(RehearsalError, match="still up") as exc:
        boot(Path(cluster.dir), lab_specs())
    assert "--down" in exc.value.hint


def test_cli_rehearse_lab_json(tmp_path):
    out = tmp_path / "r"
    r = cli("rehearse", str(REPO / "blueprints" / "lab-2node.yaml"), "-o", str(out), "--format", "json",
            "--scenario", "nodes")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["status"] == "ok"
    assert [n["name"] for n in summary["nodes"]] == ["head01", "gpu01", "gpu02"]
    steps = {s["name"]: s for s in summary["steps"]}
    assert list(steps) == ["boot", "ssh-check"]
    assert steps["ssh-check"]["status"] == "ok"
    assert set(steps["ssh-check"]["hosts"]) == {"head01", "gpu01", "gpu02"}
    assert all(h["status"] == "ok" for h in steps["ssh-check"]["hosts"].values())
    assert summary["teardown"]["seconds"] > 0
    assert (out / "ansible" / "site.yml").exists()  # rendered first
    state = load(out)
    assert state is not None and state.stopped and leftovers(state) == []


def test_cli_keep_then_down(tmp_path):
    out = tmp_path / "r"
    r = cli("rehearse", str(REPO / "blueprints" / "lab-2node.yaml"), "-o", str(out), "--keep",
            "--nodes-per-group", "1", "--scenario", "nodes")
    assert r.returncode == 0, r.stderr
    assert "rehearse --down" in r.stderr
    state = load(out)
    assert state is not None and [n.name for n in state.nodes] == ["head01", "gpu01"]
    try:
        assert sh(state, "gpu01", "hostname").strip() == "gpu01"
    finally:
        r = cli("rehearse", "--down", str(out))
    assert r.returncode == 0, r.stderr
    assert leftovers(state) == []
    assert cli("rehearse", "--down", str(out)).returncode == 0  # idempotent


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cli_interrupted_mid_rehearsal_tears_down(tmp_path, sig):
    """Ctrl-C or SIGTERM while nodes are up: the CLI stops every node before it exits."""
    import time

    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "clusterctl", "rehearse", str(REPO / "blueprints" / "lab-2node.yaml"),
                          "-o", str(out), "--scenario", "nodes"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline:
        state = load(out) if (out / ".rehearsal" / "state.json").exists() else None
        if state is not None and state.nodes and state.nodes[0].init is not None:
            break
        time.sleep(0.01)
    assert state is not None and state.nodes, "the rehearsal never booted a node"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    final = load(out)
    assert final is not None and final.stopped and leftovers(final) == []


def test_a_failing_step_fails_the_rehearsal_and_still_tears_down(tmp_path):
    from clusterctl.rehearse.run import rehearse
    from clusterctl.rehearse.steps import FAILED, OK, SKIPPED, HostOutcome, Silent, SshCheck

    class BrokenNode:
        name = "break-gpu02"

        def run(self, state, record):
            for n in state.nodes:
                r = ssh(state, n.name, "test $(hostname) != gpu02")
                record(n.name, HostOutcome(OK if r.returncode == 0 else FAILED, 0.0))

    summary = rehearse(tmp_path / "r", lab_specs(), [BrokenNode(), SshCheck()], Silent())
    assert not summary.ok
    assert [(s.name, s.status) for s in summary.steps] == [("boot", OK), ("break-gpu02", FAILED),
                                                          ("ssh-check", SKIPPED)]
    assert summary.steps[1].hosts["gpu02"].status == FAILED and summary.steps[1].hosts["gpu01"].status == OK
    assert summary.to_json()["status"] == "failed" and summary.teardown_seconds is not None
    assert leftovers(summary.state) == []
