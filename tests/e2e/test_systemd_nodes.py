"""systemd as a rehearsal node's PID 1 (docs/rehearse.md, "Init and services";
clusterctl/rehearse/node/systemd_init.py): one node boots to ``running``, answers SSH from the image's
ssh.service, runs a unit with ``Delegate=yes`` in a cgroup of its own that it can subdivide (as slurmd does),
restarts it, is what Ansible calls a systemd host, cannot change the shared kernel, and ``down`` leaves no cgroup,
process or mount behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.image.catalog import IMAGES
from clusterctl.rehearse.node.lifecycle import NodeSpec, boot, down
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State, load
from tests.conftest import require_tool
from tests.e2e.conftest import require_rehearsal
from tests.e2e.test_nodes import leftovers

pytestmark = pytest.mark.e2e

NODE = NodeSpec("sd01", "10.71.0.11", init="systemd")
"""its own network and name: it may boot while another rehearsal runs"""
CRASHED = NodeSpec("sd02", "10.72.0.11", init="systemd")
"""booted while NODE is up: another network"""
DELEGATED_UNIT = """\
[Unit]
Description=a unit with its own cgroups to subdivide, as slurmd's
[Service]
Delegate=yes
ExecStart=/bin/sh -c 'own=$$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup); \
mkdir /sys/fs/cgroup/memory$${own}/slurm && echo 0 > /sys/fs/cgroup/memory$${own}/slurm/cgroup.procs && exec sleep infinity'
"""
"""systemd turns $$ into $ (its own variables are $NAME)"""


@pytest.fixture(scope="module")
def node_root():
    require_rehearsal()
    return "debian-12"


def boot_systemd_node(out: Path, image: str, spec: NodeSpec = NODE) -> State:
    return boot(out, [spec], image=IMAGES[image])


@pytest.fixture(scope="module")
def node(node_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("systemd") / "r"
    state = boot_systemd_node(out, node_root)
    try:
        yield state
    finally:
        down(out)
        assert leftovers(state) == [] and not any(map(os.path.exists, state.node("sd01").cgroups))


def sh(state: State, command: str) -> str:
    r = ssh(state, "sd01", command)
    assert r.returncode == 0, f"{command}: exit {r.returncode}: {r.stdout}{r.stderr}"
    return r.stdout.strip()


def test_systemd_boots_the_node_to_running_and_serves_ssh_from_its_unit(node):
    state = sh(node, "systemctl is-system-running --wait || systemctl --failed --no-legend")
    assert state == "running"
    assert sh(node, "cat /proc/1/comm; systemctl is-active ssh.service; systemd-detect-virt").split() == [
        "systemd", "active", "container-other"]
    # the node's cgroups are its own: systemd's tree starts at the node's root, not the machine's
    assert sh(node, "grep name=systemd /proc/1/cgroup").endswith(":name=systemd:/init.scope")
    host_side = Path(node.node("sd01").cgroups[0]).parent.name
    assert host_side == "clusterctl-rehearsal"


def test_a_delegated_unit_gets_cgroups_of_its_own_and_subdivides_them(node):
    write_file(node, "sd01", "/etc/systemd/system/clusterctl-delegate.service", DELEGATED_UNIT, mode="0644")
    sh(node, "systemctl daemon-reload && systemctl start clusterctl-delegate.service")
    assert sh(node, "systemctl show -p Delegate clusterctl-delegate.service") == "Delegate=yes"
    pid = sh(node, "systemctl show -p MainPID --value clusterctl-delegate.service")
    assert sh(node, f"grep :memory: /proc/{pid}/cgroup").endswith(
        ":memory:/system.slice/clusterctl-delegate.service/slurm")
    memory = next(d for d in node.node("sd01").cgroups if "/sys/fs/cgroup/memory/" in d)
    assert (Path(memory) / "system.slice" / "clusterctl-delegate.service" / "slurm").is_dir()  # in the node's subtree
    sh(node, "systemctl restart clusterctl-delegate.service")
    assert sh(node, "systemctl is-active clusterctl-delegate.service") == "active"
    assert sh(node, "systemctl show -p MainPID --value clusterctl-delegate.service") != pid


def test_ansible_sees_a_systemd_host(node):
    ansible = require_tool("ansible")
    r = subprocess.run([ansible, "all", "-i", "sd01,", "-m", "setup", "-a", "gather_subset=!all,service_mgr",
                        "-e", "ansible_python_interpreter=/usr/bin/python3"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "ANSIBLE_SSH_ARGS": f"-F {node.ssh_config}",
                                         "ANSIBLE_HOST_KEY_CHECKING": "False"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"ansible_service_mgr": "systemd"' in r.stdout


def test_the_node_cannot_change_the_shared_kernel(node):
    kernel = ssh(node, "sd01", "echo clusterctl-rehearsal > /proc/sys/kernel/domainname")
    assert kernel.returncode != 0 and "Read-only file system" in kernel.stderr
    assert sh(node, "sysctl -w net.ipv4.conf.eth0.rp_filter=0") == "net.ipv4.conf.eth0.rp_filter = 0"  # its netns
    bounding = int(sh(node, "sed -n 's/^CapBnd:\t//p' /proc/1/status"), 16)
    dropped = {"sys_module": 16, "sys_rawio": 17, "sys_time": 25, "syslog": 34}  # linux/capability.h
    assert [name for name, bit in dropped.items() if bounding >> bit & 1] == []
    assert bounding >> 21 & 1  # CAP_SYS_ADMIN stays: slurmd mounts a job's namespace


def test_down_after_the_booting_process_crashed_removes_the_node_s_cgroups(node_root, tmp_path):
    out = tmp_path / "r"
    code = (f"import os, signal, sys; sys.path.insert(0, {str(Path(__file__).parents[2])!r}); "
            "from pathlib import Path; from tests.e2e.test_systemd_nodes import CRASHED, boot_systemd_node; "
            f"boot_systemd_node(Path({str(out)!r}), {node_root!r}, CRASHED); os.kill(os.getpid(), signal.SIGKILL)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == -9, r.stderr
    state = load(out)
    cgroups = state.node("sd02").cgroups
    assert all(map(os.path.isdir, cgroups)) and len(cgroups) >= 2
    down(out)
    assert leftovers(state) == [] and not any(map(os.path.exists, cgroups))
    assert down(out).stopped  # idempotent
