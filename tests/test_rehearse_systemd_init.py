"""systemd as a node's PID 1, without booting anything: which cgroups a node gets on which machine, how it is
stopped, and what ``down`` may remove (clusterctl/rehearse/node/systemd_init.py; the boot: tests/e2e/
test_systemd_nodes.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node import lifecycle, systemd_init
from clusterctl.rehearse.node.systemd_init import Hierarchy, hierarchies, node_cgroups

# this machine's layout (cgroup v1 controllers, name=systemd, the cgroup2 "unified" of a hybrid boot), with the
# memory controller's cgroup not the root one, as in a sandbox
HYBRID_MOUNTINFO = """\
23 1 0:21 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
HYBRID_CGROUP = """\
9:name=systemd:/
4:memory:/process_api/1122e958
3:cpuset:/
1:cpu:/
0::/
"""
# a systemd-booted v1 machine: cpu and cpuacct share one hierarchy, named after both
LEGACY_MOUNTINFO = """\
25 1 8:1 / / rw - ext4 /dev/sda1 rw
30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd
35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
"""
LEGACY_CGROUP = """\
2:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/user-0.slice/session-1.scope
"""
UNIFIED_MOUNTINFO = "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"


def test_every_hierarchy_of_a_hybrid_machine_with_this_process_s_cgroup_in_it():
    assert hierarchies(HYBRID_MOUNTINFO, HYBRID_CGROUP) == [
        Hierarchy("cpu", "/"), Hierarchy("memory", "/process_api/1122e958"), Hierarchy("cpuset", "/"),
        Hierarchy("systemd", "/"), Hierarchy("unified", "/")]


def test_a_legacy_machine_s_combined_controllers_and_systemd_s_own_cgroup():
    assert hierarchies(LEGACY_MOUNTINFO, LEGACY_CGROUP) == [
        Hierarchy("systemd", "/user.slice/user-0.slice/session-1.scope"), Hierarchy("cpu,cpuacct", "/user.slice")]


def test_a_unified_only_machine_is_refused_with_the_init_that_works_there():
    with pytest.raises(RehearsalError, match="one cgroup2 hierarchy at /sys/fs/cgroup") as exc:
        hierarchies(UNIFIED_MOUNTINFO, "0::/\n")
    assert 'init="rehearsal"' in exc.value.hint


def test_a_machine_without_the_name_systemd_hierarchy_is_refused_with_the_mount_that_adds_it():
    without = "".join(line + "\n" for line in HYBRID_MOUNTINFO.splitlines() if "name=systemd" not in line)
    with pytest.raises(RehearsalError, match="name=systemd") as exc:
        hierarchies(without, HYBRID_CGROUP)
    assert exc.value.hint.startswith("mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd")


def test_a_node_s_cgroups_are_below_this_process_s_own_and_differ_between_rehearsals():
    found = hierarchies(HYBRID_MOUNTINFO, HYBRID_CGROUP)
    assert node_cgroups("a1b2c3", "gpu01", found) == [
        "/sys/fs/cgroup/cpu/clusterctl-rehearsal/a1b2c3-gpu01",
        "/sys/fs/cgroup/memory/process_api/1122e958/clusterctl-rehearsal/a1b2c3-gpu01",
        "/sys/fs/cgroup/cpuset/clusterctl-rehearsal/a1b2c3-gpu01",
        "/sys/fs/cgroup/systemd/clusterctl-rehearsal/a1b2c3-gpu01",
        "/sys/fs/cgroup/unified/clusterctl-rehearsal/a1b2c3-gpu01"]
    # two rehearsals (two pytest workers) booting a gpu01 each: no cgroup in common
    assert not set(node_cgroups("a1b2c3", "gpu01", found)) & set(node_cgroups("d4e5f6", "gpu01", found))


def test_stage1_learns_the_cgroups_and_the_systemd_command_from_its_environment():
    env = systemd_init.stage1_env(["/sys/fs/cgroup/systemd/clusterctl-rehearsal/a1b2c3-gpu01",
                                   "/sys/fs/cgroup/cpu,cpuacct/x/clusterctl-rehearsal/a1b2c3-gpu01"])
    assert env[0] == ("CLUSTERCTL_CGROUPS=systemd=/sys/fs/cgroup/systemd/clusterctl-rehearsal/a1b2c3-gpu01 "
                      "cpu,cpuacct=/sys/fs/cgroup/cpu,cpuacct/x/clusterctl-rehearsal/a1b2c3-gpu01")
    assert env[2] == ("CLUSTERCTL_EXEC=setpriv --bounding-set -sys_module,-sys_time,-syslog,-sys_rawio unshare "
                      "--cgroup env -i container=clusterctl-rehearsal /lib/systemd/systemd")


def test_stage1_runs_the_rehearsal_init_unless_told_otherwise():
    assert "exec ${CLUSTERCTL_EXEC:-/usr/local/lib/clusterctl-rehearsal/init}" in lifecycle.STAGE1
    assert 'echo 0 > "$dir/cgroup.procs"' in lifecycle.STAGE1  # the systemd lines are in it, run when told
    assert lifecycle.NodeSpec("gpu01", "10.10.0.17").init == "rehearsal"


def test_down_powers_systemd_off_and_stops_the_rehearsal_init():
    assert systemd_init.STOP_SIGNALS == {"rehearsal": signal.SIGTERM, "systemd": signal.SIGRTMIN + 4}


def test_machine_ids_are_32_hex_digits_and_differ_between_nodes():
    assert systemd_init.machine_id("rh-a1b2c3-gpu01") == "b91d91ce9e809a8a9233e045cd11968f"
    assert systemd_init.machine_id("rh-a1b2c3-gpu02") != "b91d91ce9e809a8a9233e045cd11968f"


def test_down_removes_only_node_cgroups(tmp_path):
    """A damaged state file naming another cgroup (or a directory elsewhere) is not acted on."""
    elsewhere = tmp_path / "clusterctl-rehearsal" / "a1b2c3-gpu01"
    elsewhere.mkdir(parents=True)
    assert systemd_init.remove_cgroups([str(elsewhere), "/sys/fs/cgroup/systemd",
                                        "/sys/fs/cgroup/systemd/clusterctl-rehearsal/../init.scope"]) == []
    assert elsewhere.is_dir()


def test_a_systemd_node_s_upper_layer_enables_ssh_and_masks_the_console_getty(tmp_path):
    systemd_init.prepare_upper(tmp_path, "rh-a1b2c3-gpu01")
    units = tmp_path / "etc" / "systemd" / "system"
    assert (units / "multi-user.target.wants" / "ssh.service").readlink() == Path("/lib/systemd/system/ssh.service")
    assert (units / "console-getty.service").readlink() == Path("/dev/null")
    assert (tmp_path / "etc" / "machine-id").read_text() == "b91d91ce9e809a8a9233e045cd11968f\n"
