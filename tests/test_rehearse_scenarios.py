"""The scenario logic that needs no root: which release version-guard renders for, and how the
ansible-runner event stream is read (which plays ran, which tasks failed where)."""

from __future__ import annotations

from clusterctl.rehearse.scenarios import adjust_variant, other_release, trace
from clusterctl.rehearse.variant import Variant


def test_other_release_is_the_blueprints_when_it_differs():
    assert other_release("24.05", "22.05") == "24.05"


def test_other_release_is_the_next_when_the_blueprint_names_the_installed_one():
    assert other_release("22.05", "22.05") == "23.02"
    assert other_release(None, "23.11") == "24.05"


def test_other_release_of_the_newest_is_the_previous():
    assert other_release("25.11", "25.11") == "25.05"


def test_adjust_variant_only_for_version_guard():
    v = Variant({"slurm": {"version": "22.05"}}, {})
    adjust_variant("node-failure", v, "22.05")
    assert v.data["slurm"]["version"] == "22.05" and not v.changes
    adjust_variant("version-guard", v, "22.05")
    assert v.data["slurm"]["version"] == "23.02"
    assert v.changes["slurm.version"] == {"blueprint": "22.05", "rehearsed": "23.02", "installed": "22.05"}


def test_adjust_variant_keeps_the_blueprint_release_the_variant_replaced():
    v = Variant({"slurm": {"version": "22.05"}}, {"slurm.version": {"blueprint": "24.05", "rehearsed": "22.05"}})
    adjust_variant("version-guard", v, "22.05")
    assert v.data["slurm"]["version"] == "24.05"
    assert v.changes["slurm.version"]["blueprint"] == "24.05"


def _ev(counter, event, **data):
    return {"counter": counter, "event": event, "event_data": data}


def test_trace_groups_host_events_by_play_and_keeps_failures():
    events = [
        _ev(3, "runner_on_failed", play="pre", host="a", task="assert", res={"msg": "24.05 vs 22.05"}),
        _ev(1, "playbook_on_play_start", play="pre"),
        _ev(2, "runner_on_ok", play="pre", host="a", task="read"),
        _ev(4, "runner_on_failed", play="pre", host="b", task="x", ignore_errors=True, res={"msg": "ignored"}),
        _ev(5, "playbook_on_play_start", play="base"),
        _ev(6, "runner_on_ok", play="base", host="b", task="apt"),
    ]
    t = trace(sorted(events, key=lambda e: e["counter"]))
    assert t.plays == ["pre", "base"]
    assert [(k, h) for k, h, _ in t.tasks["base"]] == [("runner_on_ok", "b")]
    assert t.failures == {"a": [("pre", "assert", "24.05 vs 22.05")]}


def test_set_conf_replaces_or_adds_after_the_controller_lines(tmp_path):
    from clusterctl.rehearse.scenarios import _set_conf

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=a\nSlurmctldHost=b\nHealthCheckInterval=300\n")
    _set_conf(conf, "SlurmctldTimeout", 10)
    _set_conf(conf, "HealthCheckInterval", 10)
    assert conf.read_text() == ("ClusterName=x\nSlurmctldHost=a\nSlurmctldHost=b\nSlurmctldTimeout=10\n"
                                "HealthCheckInterval=10\n")


def test_failover_binds_the_state_tier_into_every_controller_only(tmp_path):
    from pathlib import Path

    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.plan import expand
    from clusterctl.rehearse.nodes import NodeSpec
    from clusterctl.rehearse.scenarios import scenario_specs

    plan = expand(load_blueprint(Path(__file__).resolve().parents[1] / "blueprints" / "lab-ha.yaml"))
    specs = [NodeSpec(n, f"10.0.0.{i}") for i, n in enumerate(["head01", "head02", "login01", "gpu01"], 1)]
    assert scenario_specs("node-failure", plan, specs, tmp_path) == specs
    out = {s.name: s.binds for s in scenario_specs("failover", plan, specs, tmp_path)}
    shared = str(tmp_path / ".rehearsal" / "shared" / "shared")
    assert out == {"head01": ((shared, "/shared"),), "head02": ((shared, "/shared"),), "login01": (), "gpu01": ()}
    assert Path(shared).is_dir()


def test_failover_refuses_a_blueprint_with_one_controller(tmp_path):
    from pathlib import Path

    import pytest

    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.plan import expand
    from clusterctl.rehearse import RehearsalError
    from clusterctl.rehearse.scenarios import scenario_specs

    plan = expand(load_blueprint(Path(__file__).resolve().parents[1] / "blueprints" / "lab-2node.yaml"))
    with pytest.raises(RehearsalError, match="backup controller"):
        scenario_specs("failover", plan, [], tmp_path)
