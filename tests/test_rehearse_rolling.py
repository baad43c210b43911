"""The rolling policy as rendered, and the rolling scenario's blueprint change (no root needed).

The policy itself runs for real in tests/e2e/test_scenarios.py (``rolling``, and ``all`` on the lab
blueprints): a job runs across the change, and no slurmd restarts under it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan import expand
from clusterctl.rehearse.scenario.rolling import NEW_PARTITION, _next_host, change_blueprint
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
    assert yaml.safe_load(files["ansible/group_vars/all.yml"])["slurm_compute_drain_timeout_s"] == 5400


@pytest.mark.parametrize("bad", [{"batch_percent": 0}, {"batch_percent": 101}, {"drain_timeout_minutes": 0},
                                 {"max_fail_percent": -1}, {"serial": 3}])
def test_rollout_refuses_what_is_not_a_policy(lab, bad):
    from clusterctl.errors import BlueprintError

    data, _ = lab
    with pytest.raises(BlueprintError):
        _plan({**data, "slurm": {**data["slurm"], "rollout": bad}})


def test_no_handler_restarts_slurmd_under_jobs():
    """slurmd restarts go through tasks/restart.yml (drain, wait, restart, resume) only."""
    compute = REPO / "roles" / "slurm_compute"
    assert yaml.safe_load((compute / "handlers" / "main.yml").read_text()) == []
    restart = yaml.safe_load((compute / "tasks" / "restart.yml").read_text())
    block = restart[-1]["block"]
    steps = [(t.get("ansible.builtin.include_role") or {}).get("tasks_from") or t["name"] for t in block]
    assert steps == ["drain", "Restart slurmd on the idle node", "resume"]  # the shared node_drain role
    assert all(t["vars"]["node_drain_reason"] == "{{ slurm_compute_restart_reason }}"
               for t in block if "ansible.builtin.include_role" in t)
    drain = [t["name"] for t in yaml.safe_load((REPO / "roles" / "node_drain" / "tasks" / "drain.yml").read_text())]
    assert drain.index("Drain the node so that no new job starts on it") < drain.index("Wait until the node runs no job")
    resume = [t["name"] for t in yaml.safe_load((REPO / "roles" / "node_drain" / "tasks" / "resume.yml").read_text())]
    assert resume[-1] == "Resume the node this role drained"
    pyxis = yaml.safe_load((REPO / "roles" / "enroot_pyxis" / "handlers" / "main.yml").read_text())
    slurmd = [h for h in pyxis if h.get("listen") == "Restart slurmd"]
    assert slurmd and all("ansible.builtin.file" in h and h["ansible.builtin.file"]["state"] == "absent"
                          for h in slurmd)


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
