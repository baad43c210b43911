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
from clusterctl.rehearse.variant import Hardware, rehearsal_variant
from clusterctl.targets import render_targets
from tests.helpers import lab, plan_of, shipped, to_yaml

HW = Hardware(sockets=1, cores_per_socket=2, threads_per_core=1, memory_mib=24105)


def rehearsed(data: dict, version: str = "22.05"):
    v = rehearsal_variant(data, plan_of(data), version, HW)
    return v, expand(load_blueprint_text(to_yaml(v.data), "rehearsed.yaml"))


def test_variant_keeps_the_accounts_the_nodes_already_have():
    """A node whose root is an overlay of this machine's has its slurm and munge accounts; slurm_accounts never
    renumbers one, so the rehearsal renders their ids and says so."""
    data = lab()
    v = rehearsal_variant(data, plan_of(data), "22.05", HW, {"user": {"uid": 64030, "gid": 64030},
                                                             "munge_user": {"uid": 104, "gid": 107}})
    all_vars = render_targets(expand(load_blueprint_text(to_yaml(v.data), "r.yaml")))["ansible/group_vars/all.yml"]
    assert "slurm_accounts_slurm_uid: 64030\n" in all_vars and "slurm_accounts_munge_gid: 107\n" in all_vars
    assert v.changes["slurm.user"] == {"blueprint": "default", "rehearsed": {"uid": 64030, "gid": 64030}}
    assert "user" not in data["slurm"]  # the blueprint data is not modified


def test_variant_renders_for_the_installed_slurm_and_this_machine():
    v, plan = rehearsed(lab())
    conf = render_targets(plan)["slurm/slurm.conf"]
    assert "NodeName=gpu[01-02] Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=" in conf
    gres = render_targets(plan)["slurm/gres.conf"]
    assert "AutoDetect=off" in gres and "File=/dev/nvidia[0-7]" in gres  # the stand-ins the rehearsal makes
    assert v.summary()["slurm_version"] == {"blueprint": "24.05", "rehearsed": "22.05"}
    assert v.changes["node_types.hgx"]["blueprint"]["cores_per_socket"] == 52
    assert v.changes["node_types.hgx"]["rehearsed"] == {"sockets": 1, "cores_per_socket": 2,
                                                        "threads_per_core": 1, "memory_gb": 23}


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
    v, _ = rehearsed(lab(), version="24.05")
    assert "slurm.version" not in v.changes
    assert v.summary()["slurm_version"] == {"blueprint": "24.05", "rehearsed": "24.05"}


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
                                   "gcp_tcpxo"}
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
    assert [s.name for s in deploy_steps(full)] == ["converge", "converge-again", "testinfra", "srun"]
    no_slurm = Cluster({"gpu01": "gpu"}, ("gpu01",), {"gpu01": 8}, ())
    assert [s.name for s in deploy_steps(no_slurm)] == ["converge", "converge-again", "testinfra"]
