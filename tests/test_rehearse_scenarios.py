"""The scenario logic that needs no root: which release version-guard renders for, and how the
ansible-runner event stream is read (which plays ran, which tasks failed where)."""

from __future__ import annotations

import pytest

from clusterctl.rehearse.scenario.observe import trace
from clusterctl.rehearse.steps import StepFailed
from clusterctl.rehearse.scenario.version_guard import adjust_variant, other_release
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
    from clusterctl.rehearse.scenario.observe import set_conf
    from clusterctl.write import write_tree

    original = "ClusterName=x\nSlurmctldHost=a\nSlurmctldHost=b\nHealthCheckInterval=300\n"
    write_tree({"slurm/slurm.conf": original}, tmp_path)
    conf = tmp_path / "slurm" / "slurm.conf"
    set_conf(conf, "SlurmctldTimeout", 10)
    set_conf(conf, "HealthCheckInterval", 10)
    assert conf.read_text() == ("ClusterName=x\nSlurmctldHost=a\nSlurmctldHost=b\nSlurmctldTimeout=10\n"
                                "HealthCheckInterval=10\n")
    # the edit went through the writer: a later render of the directory (the add-node scenario) replaces it
    write_tree({"slurm/slurm.conf": original}, tmp_path)
    assert conf.read_text() == original


def test_failover_binds_the_state_tier_into_every_controller_only(tmp_path):
    from pathlib import Path

    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.plan import expand
    from clusterctl.rehearse.node.lifecycle import NodeSpec
    from clusterctl.rehearse.scenario.failover import failover_specs

    plan = expand(load_blueprint(Path(__file__).resolve().parents[1] / "blueprints" / "lab-ha.yaml"))
    specs = [NodeSpec(n, f"10.0.0.{i}") for i, n in enumerate(["head01", "head02", "login01", "gpu01"], 1)]
    out = {s.name: s.binds for s in failover_specs(plan, specs, tmp_path)}
    shared = str(tmp_path / ".rehearsal" / "shared" / "shared")
    assert out == {"head01": ((shared, "/shared"),), "head02": ((shared, "/shared"),), "login01": (), "gpu01": ()}
    assert Path(shared).is_dir()


def test_failover_refuses_a_blueprint_with_one_controller(tmp_path):
    from pathlib import Path

    import pytest

    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.plan import expand
    from clusterctl.rehearse import RehearsalError
    from clusterctl.rehearse.scenario.failover import failover_specs

    plan = expand(load_blueprint(Path(__file__).resolve().parents[1] / "blueprints" / "lab-2node.yaml"))
    with pytest.raises(RehearsalError, match="^the failover scenario needs a blueprint with a backup controller$"):
        failover_specs(plan, [], tmp_path)


# --- prolog-failure: the retry when the periodic check is first, and what is recorded ----------------------

class FakeSlurm:
    """Answers the commands PrologFailure sends over SSH the way slurmctld and the nodes would: removing the
    GPU stand-in and submitting a job drains the node, by the periodic check on the first ``periodic_first``
    attempts, else by the job's prolog (and the job is held); mknod lets the health check resume it."""

    def __init__(self, periodic_first: int):
        self.periodic_first = periodic_first
        self.attempt = 0
        self.state, self.reason, self.job, self.held = "IDLE", "", 0, False
        self.log: list[str] = []

    def __call__(self, state, host, cmd, *a, **kw):
        import subprocess

        self.log.append(f"{host}: {cmd}")
        out = ""
        if cmd.startswith("sbatch"):
            self.attempt += 1
            self.job += 1
            out = f"{self.job}\n"
            if self.attempt <= self.periodic_first:
                self.state, self.reason = "IDLE+DRAIN", "node-health: nvidia-smi lists 7 GPUs, expected 8"
            else:
                self.state, self.held = "IDLE+DRAIN", True
                self.reason = f"node-health: prolog of job {self.job}: nvidia-smi lists 7 GPUs, expected 8"
        elif cmd.startswith("scontrol show node"):
            out = f"NodeName=gpu01 State={self.state} Reason={self.reason} [root@2026-12-01T09:00:00]"
        elif cmd.startswith("squeue"):
            out = "PENDING launch failed requeued held" if self.held else "PENDING Resources"
        elif cmd.startswith("scancel"):
            self.held = False
        elif cmd.startswith("mknod"):
            self.state, self.reason = "IDLE", ""
        return subprocess.CompletedProcess(cmd, 0, out, "")


def run_prolog_failure(monkeypatch, periodic_first: int):
    from clusterctl.rehearse.scenario import node_failure, observe
    from clusterctl.rehearse.scenario.deploy import Cluster

    fake = FakeSlurm(periodic_first)
    monkeypatch.setattr(node_failure, "ssh", fake)
    monkeypatch.setattr(observe, "ssh", fake)
    monkeypatch.setattr(observe.time, "sleep", lambda s: None)
    cluster = Cluster(groups={"head01": "head", "gpu01": "gpu"}, compute=("gpu01",), gpus={"gpu01": 8},
                      controllers=("head01",))
    recorded = []
    node_failure.PrologFailure(cluster, interval_s=1).run(None, lambda h, o: recorded.append((h, o)))
    return fake, recorded


def test_prolog_failure_drains_holds_and_resumes(monkeypatch):
    fake, recorded = run_prolog_failure(monkeypatch, 0)
    [(host, o)] = recorded
    assert host == "gpu01" and o.status == "ok", o
    assert o.counts["attempts"] == 1 and o.counts["job_held"] is True
    assert "node-health: prolog of job 1:" in o.detail and "held" in o.detail and "idle again" in o.detail
    assert "gpu01: rm -f /dev/nvidia7" in fake.log
    assert "head01: sbatch --parsable -N1 -w gpu01 -t 5 -J rehearse-prolog --wrap 'sleep 30'" in fake.log


def test_prolog_failure_repeats_when_the_periodic_check_was_first(monkeypatch):
    fake, recorded = run_prolog_failure(monkeypatch, 1)
    [(_, o)] = recorded
    assert o.status == "ok" and o.counts["attempts"] == 2, o
    assert "head01: scancel 1" in fake.log  # the first job, on a node the periodic check drained


def test_prolog_failure_fails_when_the_prolog_never_drains(monkeypatch):
    _, recorded = run_prolog_failure(monkeypatch, 3)
    [(_, o)] = recorded
    assert o.status == "failed" and "never drained" in o.detail, o


def test_several_named_scenarios_run_on_one_boot_in_order_with_their_names(tmp_path):
    """``--scenario deploy --scenario failover`` (how CI rehearses lab-ha): the two scenarios' steps, named
    with their scenario as under ``all``, the timeout change before the converge, nothing else."""
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.plan import expand
    from clusterctl.rehearse.suite import build
    from clusterctl.targets import render_targets
    from tests.helpers import REPO

    path = REPO / "blueprints" / "lab-ha.yaml"
    reh = build(["failover", "deploy"], path, expand(load_blueprint_text(path.read_text(), str(path), path.parent)),
                tmp_path / "r", 1, render_targets)
    assert [s.name for s in reh.steps] == ["ssh-check", "mirror", "failover: failover-timeout", "deploy: converge",
                                           "deploy: packages", "deploy: converge-again", "deploy: testinfra", "deploy: srun",
                                           "failover: failover"]
    assert reh.info["scenarios"] == {"deploy": "run", "failover": "run"}
    assert sorted(s.name for s in reh.specs) == ["gpu01", "head01", "head02", "login01"]


def test_all_or_nodes_are_not_combined_and_elastic_runs_alone(tmp_path):
    import pytest

    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.plan import expand
    from clusterctl.rehearse import RehearsalError
    from clusterctl.rehearse.suite import build
    from clusterctl.targets import render_targets
    from tests.helpers import REPO

    for names, message in ((["all", "deploy"], "not combined"), (["elastic", "deploy"], "runs alone")):
        path = REPO / "blueprints" / ("lab-cloud.yaml" if "elastic" in names else "lab-2node.yaml")
        with pytest.raises(RehearsalError, match=message):
            build(names, path, expand(load_blueprint_text(path.read_text(), str(path))), tmp_path / "r", 1,
                  render_targets)


# --- a job Slurm held after a failed launch: submitted once more, the first failure named --------------------

class HeldOnce:
    """slurmctld and the nodes as submit_running sees them: the first ``held`` jobs are held after a failed
    launch (squeue's reason ``launch failed requeued held``, slurmd's log naming the job), the next one runs."""

    def __init__(self, held: int):
        self.held, self.job, self.cancelled, self.log = held, 0, [], []

    def __call__(self, state, host, cmd, *a, **kw):
        import subprocess

        self.log.append(f"{host}: {cmd}")
        out = ""
        if cmd.startswith("sbatch"):
            self.job += 1
            out = f"{self.job};lab\n"
        elif cmd.startswith("squeue"):
            out = "PENDING|launch failed requeued held" if self.job <= self.held else "RUNNING|None"
        elif cmd.startswith("scancel"):
            self.cancelled.append(cmd.split()[-1])
        elif cmd.startswith("scontrol ping"):
            out = "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at head02 is DOWN\n"
        elif "slurmd.log" in cmd and host == "gpu02":
            out = f"[2026-12-05T22:59:36.393] error: Launching batch job {self.job} failed: a stand-in\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")


def test_a_job_held_after_a_failed_launch_is_submitted_once_more_and_the_failure_named(monkeypatch):
    from clusterctl.rehearse.scenario import observe

    fake = HeldOnce(1)
    monkeypatch.setattr(observe, "ssh", fake)
    monkeypatch.setattr(observe.time, "sleep", lambda s: None)
    job, note = observe.submit_running(None, "login01", "-N1 --wrap 'sleep 600'", ("gpu01", "gpu02"))
    assert job == "2" and fake.cancelled == ["1"]
    assert note.startswith("; the first job, 1, was held after a failed launch and cancelled: job 1 not running")
    assert "launch failed requeued held" in note and "slurmd on gpu02: " in note and "batch job 1 failed" in note
    assert "login01: sbatch --parsable -N1 --wrap 'sleep 600'" in fake.log


def test_a_second_failed_launch_fails_the_step(monkeypatch):
    from clusterctl.rehearse.scenario import observe

    monkeypatch.setattr(observe, "ssh", HeldOnce(2))
    monkeypatch.setattr(observe.time, "sleep", lambda s: None)
    with pytest.raises(StepFailed, match=r"^job 2 not running \d+ s after sbatch: PENDING \(launch failed requeued "
                                         r"held\); slurmd on gpu02: "):
        observe.submit_running(None, "login01", "-N1 --wrap 'sleep 600'", ("gpu01", "gpu02"))
