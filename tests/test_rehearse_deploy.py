"""The parts of the deploy rehearsal that need no root: the blueprint as rehearsed, the rehearsal
variables, per-host outcomes from Ansible's recap and testinfra's JUnit report. The real run is
tests/e2e/test_deploy.py."""

from __future__ import annotations

import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan import expand
from clusterctl.rehearse.scenario.deploy import (
    DESELECT_MARKERS,
    HARDWARE_ROLES,
    REHEARSAL_VARS,
    RunOutcome,
    _junit_counts,
    _recap_outcome,
    cluster_of,
)
from clusterctl.rehearse.select import selected_hosts
from clusterctl.rehearse.steps import FAILED, OK
from clusterctl.rehearse.image.catalog import IMAGES
from clusterctl.rehearse.variant import Hardware, machine_hardware, rehearsal_variant
from clusterctl.targets import render_targets
from tests.helpers import lab, plan_of, shipped, to_yaml

HW = Hardware(sockets=1, cores_per_socket=2, threads_per_core=1, memory_mib=24105)


def rehearsed(data: dict, image: str = "debian-12"):
    v = rehearsal_variant(data, plan_of(data), IMAGES[image], HW)
    return v, expand(load_blueprint_text(to_yaml(v.data), "rehearsed.yaml"))


def distro(data: dict, version: str = "24.05") -> dict:
    data["slurm"]["install"] = {"kind": "distro"}
    data["slurm"]["version"] = version
    return data


def test_variant_renders_for_the_nodes_slurm_and_this_machine():
    v, plan = rehearsed(lab())
    conf = render_targets(plan)["slurm/slurm.conf"]
    assert "NodeName=gpu[01-02] Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=" in conf
    gres = render_targets(plan)["slurm/gres.conf"]
    assert "AutoDetect=off" in gres and "File=/dev/nvidia[0-7]" in gres  # the stand-ins the rehearsal makes
    # the lab installs SchedMD's 24.05.4-1 from /srv/slurm-debs: the same kind of packages, built from the one
    # SchedMD tarball Debian's archive carries (24.11.5), in the same directory
    assert v.summary()["slurm_version"] == {"blueprint": "24.05", "rehearsed": "24.11"}
    assert v.summary()["slurm_install"] == {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1",
                                            "packages": "schedmd", "gpu_nvml": False}
    assert v.changes["slurm.version"]["why"] == (
        "no SchedMD release tarball of 24.05 is reachable here (Debian's archive carries 24.11.5): built 24.11; "
        "built without NVML (no NVIDIA driver in the build root): gres.conf lists the GPUs")
    assert v.changes["node_types.hgx"]["blueprint"]["cores_per_socket"] == 52
    assert v.changes["node_types.hgx"]["rehearsed"] == {"sockets": 1, "cores_per_socket": 2,
                                                        "threads_per_core": 1, "memory_gb": 23}


def test_distro_slurm_is_the_images_own():
    v, _ = rehearsed(distro(lab()), "debian-12")
    assert v.summary()["slurm_version"] == {"blueprint": "24.05", "rehearsed": "22.05"}
    assert v.changes["slurm.version"]["why"] == "debian-12's own Slurm is 22.05 (Debian bookworm's slurm-wlm)"
    assert "slurm.install" not in v.changes
    v, _ = rehearsed(distro(lab(), "24.11"), "debian-13")
    assert v.summary()["slurm_version"] == {"blueprint": "24.11", "rehearsed": "24.11"}
    assert v.changes == {k: c for k, c in v.changes.items() if k != "slurm.version"}  # as written


def test_a_schedmd_repository_is_rehearsed_as_the_same_packages_built_here():
    data = lab()
    data["slurm"]["version"] = "24.11"
    data["slurm"]["install"] = {"kind": "repo", "url": "https://repo.example.org/slurm", "suite": "jammy",
                                "key": "https://repo.example.org/key.asc", "version": "24.11.5-1", "gpu_nvml": False}
    v, plan = rehearsed(data, "debian-13")
    assert v.summary()["slurm_install"] == {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1",
                                            "packages": "schedmd", "gpu_nvml": False}
    assert "slurm.version" not in v.changes
    assert v.changes["slurm.install"]["why"] == (
        "the repository https://repo.example.org/slurm is not reachable from a rehearsal: the same slurm-smd "
        "packages are built from SchedMD's release tarball and placed in /srv/slurm-debs")
    data["slurm"]["install"] = {"kind": "debs", "path": "/opt/debs", "version": "24.11.5-1", "packages": "debian"}
    v, _ = rehearsed(data, "debian-13")
    assert v.summary()["slurm_install"] == {"kind": "distro"}
    assert v.changes["slurm.install"]["why"] == "debs of Debian-named packages: debian-13's own slurm-wlm"


def test_machine_hardware_reads_sysfs_as_slurmd_does(tmp_path):
    cpu = tmp_path / "cpu"
    # two sockets of four cores with two threads each: CPUs 0-15, package = cpu // 8, core = (cpu % 8) // 2
    (cpu).mkdir()
    (cpu / "online").write_text("0-15\n")
    for c in range(16):
        topo = cpu / f"cpu{c}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{c // 8}\n")
        (topo / "core_id").write_text(f"{(c % 8) // 2}\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683792 kB\nMemFree:         1000 kB\n")
    assert machine_hardware(cpu, meminfo) == Hardware(sockets=2, cores_per_socket=4, threads_per_core=2,
                                                      memory_mib=24105)


def test_variant_leaves_the_blueprint_data_and_the_rest_of_the_plan_alone():
    data = lab()
    before = yaml.safe_dump(data)
    _, plan = rehearsed(data)
    assert yaml.safe_dump(data) == before
    original = plan_of(lab())
    assert [g.hosts for g in plan.groups] == [g.hosts for g in original.groups]
    assert plan.groups[0].type.gpus == original.groups[0].type.gpus == 8  # GPUs kept: stand-ins for each
    assert plan.groups[1].type.cores_per_socket == original.groups[1].type.cores_per_socket  # head untouched


def test_same_version_is_not_reported_as_a_change():
    v, _ = rehearsed(distro(lab(), "22.05"))
    assert "slurm.version" not in v.changes
    assert v.summary()["slurm_version"] == {"blueprint": "22.05", "rehearsed": "22.05"}


def test_cluster_of_the_superpod_names_login_controllers_and_accounting():
    plan = plan_of(shipped("dgx-h100-superpod-1su"))
    c = cluster_of(plan, selected_hosts(plan, 2))
    assert c.controllers == ("head01", "head02") and c.login == ("login01", "login02")
    assert c.compute == ("dgx001", "dgx002") and c.gpus == {"dgx001": 8, "dgx002": 8}
    assert c.accounting in ("head01", "head02")
    lab_cluster = cluster_of(plan_of(lab()), ["head01", "gpu01", "gpu02"])
    assert lab_cluster.accounting == "head01"  # no accounting_host: the first controller, as the inventory has it
    assert lab_cluster.groups == {"head01": "head", "gpu01": "gpu", "gpu02": "gpu"}


def test_rehearsal_vars_skip_nothing_but_hardware_and_give_reasons():
    assert set(HARDWARE_ROLES) == {"doca_ofed", "nvidia_driver", "nvidia_imex", "dcgm", "enroot_pyxis", "roce_network",
                                   "gcp_tcpxo", "host_network_preflight", "host_network"}
    assert all(isinstance(why, str) and len(why) > 20 for _, why in REHEARSAL_VARS.values())
    for daemon in ("munge", "slurm_controller", "slurm_compute", "slurmdbd"):
        assert REHEARSAL_VARS[f"{daemon}_manage_services"][0] is True
    assert "services" not in DESELECT_MARKERS


def test_second_converge_with_a_change_fails_the_host_and_names_the_task():
    run = RunOutcome("failed", 0, 3.0, stats={"gpu01": {"ok": 30, "changed": 1}, "gpu02": {"ok": 30}},
                     changed={"gpu01": ["slurm_compute : Install the rendered Slurm configuration"]})
    bad = _recap_outcome(run, "gpu01", require_unchanged=True)
    assert bad.status == FAILED and "Install the rendered Slurm configuration" in bad.detail
    assert bad.counts["changed"] == 1
    assert _recap_outcome(run, "gpu02", require_unchanged=True).status == OK
    assert _recap_outcome(run, "gpu01", require_unchanged=False).status == OK
    assert _recap_outcome(run, "head01", require_unchanged=False).status == FAILED  # not in the recap


def test_failed_or_unreachable_host_fails():
    run = RunOutcome("failed", 2, 1.0, stats={"head01": {"ok": 3, "failures": 1}, "gpu01": {"dark": 1}},
                     failed={"head01": ["slurm_controller : Start and enable slurmctld: Failed"]})
    assert _recap_outcome(run, "head01", False).status == FAILED
    assert "slurmctld" in _recap_outcome(run, "head01", False).detail
    assert _recap_outcome(run, "gpu01", False).counts["unreachable"] == 1


def test_junit_counts_per_testinfra_host(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text("""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="test_gpu" name="test_a[ansible://gpu01]"/>
<testcase classname="test_gpu" name="test_a[ansible://gpu01-b]"/>
<testcase classname="test_gpu" name="test_a[ansible://gpu02]"><failure message="boom"/></testcase>
<testcase classname="test_gpu" name="test_b[ansible://gpu02-/etc/slurm/slurm.conf]"><skipped/></testcase>
<testcase classname="test_gpu" name="test_c[ansible://gpu01-x]"/>
</testsuite></testsuites>""")
    assert _junit_counts(xml, ["gpu01", "gpu02", "gpu01-b"]) == {
        "gpu01": {"passed": 2, "failed": 0, "skipped": 0}, "gpu01-b": {"passed": 1, "failed": 0, "skipped": 0},
        "gpu02": {"passed": 0, "failed": 1, "skipped": 1}}
    assert _junit_counts(tmp_path / "missing.xml", ["gpu01"]) == {}


def test_deploy_runs_srun_only_with_slurm_and_compute_hosts():
    from clusterctl.rehearse.scenario.deploy import Cluster, deploy_steps

    full = Cluster({"head01": "head", "gpu01": "gpu"}, ("gpu01",), {"gpu01": 8}, ("head01",))
    assert [s.name for s in deploy_steps(full)] == ["converge", "packages", "converge-again", "testinfra", "srun"]
    no_slurm = Cluster({"gpu01": "gpu"}, ("gpu01",), {"gpu01": 8}, ())
    assert [s.name for s in deploy_steps(no_slurm)] == ["converge", "packages", "converge-again", "testinfra"]



def test_ansible_runner_finds_the_ansible_playbook_of_clusterctls_own_environment(tmp_path, monkeypatch):
    """Run as root from a virtualenv, sudo resets PATH to its secure_path: the runner must still take the
    virtualenv's ansible-playbook, not Debian's (another Python, another ansible-core) or none."""
    import os
    import sys
    from pathlib import Path

    from clusterctl.rehearse.node.state import State
    from clusterctl.rehearse.scenario.deploy import runner_env

    monkeypatch.setattr("clusterctl.rehearse.scenario.deploy.control_dir", lambda rid: tmp_path / "cp" / rid)  # runner_env makes it

    monkeypatch.setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")  # sudo's secure_path
    state = State(id="t0", dir=str(tmp_path), bridge="rh-t0", host_address="10.254.0.254", prefix=24,
                  key=str(tmp_path / "key"), known_hosts=str(tmp_path / "kh"), ssh_config=str(tmp_path / "cfg"))
    path = runner_env(state, None)["PATH"].split(os.pathsep)
    assert path[0] == str(Path(sys.executable).parent)
    assert path[1:] == ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def test_second_converge_runs_on_one_compute_host_per_set_of_inventory_groups():
    """The inventory holds no host variables: compute hosts of one set of groups run the same tasks. Controllers,
    accounting and login hosts all converge again (roles tell primary from backup by name)."""
    from clusterctl.rehearse.scenario.deploy import one_per_group_set
    from clusterctl.targets.ansible.inventory import inventory_groups
    ha = inventory_groups(plan_of(shipped("lab-ha")))
    assert one_per_group_set(ha, ["head01", "head02", "login01", "gpu01", "gpu02"], ["gpu01", "gpu02"]) == (
        "head01", "head02", "login01", "gpu01")
    data = lab()  # a second compute group of the same node type: other groups, so both converge again
    data["node_groups"].append({**data["node_groups"][0], "name": "gpu2", "count": 1, "hostnames": "gpu2n01"})
    plan = plan_of(data)
    assert "gpu2:" in render_targets(plan)["ansible/inventory.yml"]
    assert one_per_group_set(inventory_groups(plan), ["head01", "gpu01", "gpu02", "gpu2n01"],
                             ["gpu01", "gpu02", "gpu2n01"]) == ("head01", "gpu01", "gpu2n01")
