"""The rolling policy as rendered, and the add-node scenario's blueprint change and proof (no root needed).

The policy itself runs for real in tests/e2e/test_scenarios.py (``add-node``, and ``all`` on the lab
blueprints): a job runs across the change, slurmd restarts under it, and no node is drained."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan import expand
from clusterctl.rehearse.scenario.add_node import DRAIN_LOG, NEW_PARTITION, _next_host, change_blueprint
from clusterctl.rehearse.select import node_specs
from clusterctl.source import load_yaml_file
from clusterctl.targets import render_targets

REPO = Path(__file__).resolve().parents[1]


def _plan(data: dict):
    return expand(load_blueprint_text(yaml.safe_dump(data, sort_keys=False), "test.yaml"))


@pytest.fixture(scope="module")
def lab():
    data = load_yaml_file(REPO / "blueprints" / "lab-2node.yaml")[0]
    return data, _plan(data)


def _site(files) -> list[dict]:
    return yaml.safe_load(files["ansible/site.yml"])


def test_compute_play_runs_in_batches_and_stops_at_the_first_failure(lab):
    data, plan = lab
    plays = {p["name"]: p for p in _site(render_targets(plan))}
    compute = plays["Compute nodes"]
    assert compute["serial"] == "{{ clusterctl_rolling_batch | default('10%') }}"
    assert compute["max_fail_percentage"] == 0
    assert plays["Slurm controllers"]["serial"] == 1
    assert "serial" not in plays["Slurm and MUNGE accounts and MUNGE authentication on every Slurm node"]


def test_rollout_settings_reach_site_yml_and_group_vars(lab):
    data, _ = lab
    changed = {**data, "slurm": {**data["slurm"], "rollout": {"batch_percent": 25, "max_fail_percent": 5,
                                                              "drain_timeout_minutes": 90}}}
    files = render_targets(_plan(changed))
    compute = next(p for p in _site(files) if p["name"] == "Compute nodes")
    assert compute["serial"] == "{{ clusterctl_rolling_batch | default('25%') }}"
    assert compute["max_fail_percentage"] == 5
    assert yaml.safe_load(files["ansible/group_vars/all.yml"])["node_drain_timeout_s"] == 5400


@pytest.mark.parametrize("bad", [{"batch_percent": 0}, {"batch_percent": 101}, {"drain_timeout_minutes": 0},
                                 {"max_fail_percent": -1}, {"serial": 3}])
def test_rollout_refuses_what_is_not_a_policy(lab, bad):
    from clusterctl.errors import BlueprintError

    data, _ = lab
    with pytest.raises(BlueprintError):
        _plan({**data, "slurm": {**data["slurm"], "rollout": bad}})


def test_no_handler_restarts_slurmd_and_the_restart_drains_nothing():
    """slurmd restarts go through tasks/restart.yml only (a fingerprint kept on the node), without a drain."""
    compute = REPO / "roles" / "slurm_compute"
    assert yaml.safe_load((compute / "handlers" / "main.yml").read_text()) == []
    restart = yaml.safe_load((compute / "tasks" / "restart.yml").read_text())
    steps = [t["name"] for t in restart[-1]["block"]]
    assert steps == ["Restart slurmd (no drain)", "Wait until slurmctld hears from the restarted slurmd"]


def test_the_drain_proof_reads_slurmctlds_own_log_lines():
    """The lines slurmctld 24.05 logs for a drain (src/slurmctld/node_mgr.c of slurm-24-05-4-1, update_node and
    drain_nodes), and lines it logs in a run without one."""
    drained = ["[2026-12-05T13:30:01.123] update_node: node gpu01 reason set to: clusterctl: rolling restart of slurmd",
               "[2026-12-05T13:30:01.124] update_node: node gpu01 state set to DRAINING",
               "[2026-12-05T13:30:09.500] drain_nodes: node gpu02 state set to DRAIN"]
    quiet = ["[2026-12-05T13:30:01.000] Node gpu03 now responding",
             "[2026-12-05T13:30:02.000] update_node: node gpu01 state set to IDLE",
             "[2026-12-05T13:30:03.000] validate_node_specs: Node gpu01 unexpectedly rebooted boot_time=1"]
    assert [DRAIN_LOG.search(line).groups() for line in drained[1:]] == [("gpu01", "DRAINING"), ("gpu02", "DRAIN")]
    assert DRAIN_LOG.search(drained[0]) is None and not any(DRAIN_LOG.search(line) for line in quiet)


def test_next_host_keeps_the_width_and_skips_taken_names():
    assert _next_host("gpu02", set()) == "gpu03"
    assert _next_host("gpu-0099", {"gpu-0100"}) == "gpu-0101"
    assert _next_host("login", set()) == "login-1"


def test_change_adds_an_option_a_partition_and_a_node_without_moving_a_host(lab):
    data, plan = lab
    after, change = change_blueprint(data, plan)
    assert data["node_groups"] == load_yaml_file(REPO / "blueprints" / "lab-2node.yaml")[0]["node_groups"]
    grown = _plan(after)
    assert change.new_host == "gpu03" and change.new_group == "gpu_added"
    assert change.max_time == ("UNLIMITED", "2-00:00:00")
    slurm = render_targets(grown)["slurm/slurm.conf"]
    assert "NodeName=gpu03" in slurm or "gpu[01-03]" in slurm
    assert f"PartitionName={NEW_PARTITION} " in slurm
    assert "MaxTime=2-00:00:00" in slurm
    before = {s.name: s.address for s in node_specs(plan, 2, "t")}
    now = {s.name: s.address for s in node_specs(grown, 2, "t")}
    assert {h: now[h] for h in before} == before
    assert now["gpu03"] not in before.values()


@pytest.mark.parametrize("blueprint, restart", [("lab-2node", True), ("gb200-nvl72-8rack", False)])
def test_slurmctld_restarts_for_new_node_lines_only_before_24_11(blueprint, restart):
    """SchedMD's FAQ, "How should I add nodes to Slurm?": restart slurmctld on 24.05 and older; scontrol
    reconfigure is sufficient on 24.11 and newer (lab-2node is 24.05, gb200-nvl72-8rack 24.11). The controller
    play runs before the compute play, so slurmctld knows a new node before any slurmd is restarted."""
    data = load_yaml_file(REPO / "blueprints" / f"{blueprint}.yaml")[0]
    files = render_targets(_plan(data))
    assert yaml.safe_load(files["ansible/group_vars/all.yml"])["slurm_controller_restart_on_node_change"] is restart
    names = [p["name"] for p in _site(files)]
    assert names.index("Slurm controllers") < names.index("Compute nodes")
