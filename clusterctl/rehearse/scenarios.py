"""Rehearsal scenarios beyond ``deploy``: what must go right when something goes wrong on a real cluster.

- ``version-guard``: the blueprint is rendered for another Slurm release than the one installed; the
  rendered ``site.yml`` must stop at its preflight play, naming both releases, before any later play runs a
  task on any host, and no Slurm daemon may run on any node afterwards.
- ``node-failure``: after a converge, a compute node loses a GPU stand-in device; the rendered health check
  (``HealthCheckProgram``, run by slurmd every ``HealthCheckInterval``) must drain it with a reason within
  the interval; once the device is back, the node must return to service by itself.

Each scenario is a list of :class:`~clusterctl.rehearse.steps.Step` objects proving its claim with state read
from the real daemons (``scontrol``, ``pgrep`` on the nodes) and from ansible-runner's event stream.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from clusterctl.rehearse.deploy import Cluster, Converge, prepare_nodes, run_playbook
from clusterctl.rehearse.nodes import ssh
from clusterctl.rehearse.state import State, state_dir
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, Step, StepFailed

SCENARIOS = ("version-guard", "node-failure")
"""the scenarios of this module, in the order ``--scenario`` lists them"""

SLURM_RELEASES = ("21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11")
"""major releases, oldest first: version-guard renders for the release after the installed one when the
blueprint names the installed release itself"""

SLURM_DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "munged")


def other_release(blueprint: str | None, installed: str) -> str:
    """The release version-guard renders for: the blueprint's when it is not the installed one (the case an
    operator meets), otherwise the next release (or the previous one for the newest)."""
    if blueprint and str(blueprint)[:5] != installed:
        return str(blueprint)
    if installed in SLURM_RELEASES:
        i = SLURM_RELEASES.index(installed)
        return SLURM_RELEASES[i + 1] if i + 1 < len(SLURM_RELEASES) else SLURM_RELEASES[i - 1]
    return "24.05" if installed != "24.05" else "24.11"


def adjust_variant(scenario: str, variant, installed: str) -> None:
    """Change the rehearsal variant for ``scenario`` in place (only version-guard does: it renders for
    another release than ``installed``); the change is listed in the summary's ``rehearsed_as``."""
    if scenario != "version-guard":
        return
    slurm = variant.data.get("slurm")
    if not isinstance(slurm, dict):
        return
    before = variant.changes.get("slurm.version", {}).get("blueprint", slurm.get("version"))
    other = other_release(before, installed)
    slurm["version"] = other
    variant.changes["slurm.version"] = {"blueprint": before, "rehearsed": other, "installed": installed}


# --- ansible-runner events --------------------------------------------------------------------------------

def runner_events(state: State, ident: str) -> list[dict]:
    """The job events ansible-runner wrote for run ``ident``, in order (``artifacts/IDENT/job_events``)."""
    d = state_dir(Path(state.dir)) / "runner" / "artifacts" / ident / "job_events"
    events = []
    for p in d.glob("*.json"):
        try:
            events.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(events, key=lambda e: e.get("counter", 0))


HOST_TASK_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable",
                    "runner_item_on_ok", "runner_item_on_failed", "runner_on_start")


@dataclass
class PlayTrace:
    """What the event stream says about plays: their names in order, and per play the host task events."""

    plays: list[str] = field(default_factory=list)
    tasks: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """play -> [(event, host, task)]"""
    failures: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """host -> [(play, task, message)]"""


def trace(events: Sequence[dict]) -> PlayTrace:
    t = PlayTrace()
    for e in events:
        data = e.get("event_data") or {}
        kind = e.get("event")
        if kind == "playbook_on_play_start":
            t.plays.append(str(data.get("play", "")))
        elif kind in HOST_TASK_EVENTS and data.get("host"):
            play = str(data.get("play", ""))
            t.tasks.setdefault(play, []).append((kind, data["host"], str(data.get("task", ""))))
            if kind == "runner_on_failed" and not data.get("ignore_errors"):
                msg = str((data.get("res") or {}).get("msg", ""))
                t.failures.setdefault(data["host"], []).append((play, str(data.get("task", "")), msg))
    return t


def daemons_running(state: State, host: str) -> list[str]:
    """The Slurm (and MUNGE) daemons running in ``host``'s PID namespace."""
    r = ssh(state, host, "pgrep -l -x '" + "|".join(SLURM_DAEMONS) + "' || true")
    if r.returncode != 0:
        raise StepFailed(f"pgrep on {host}: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    return [line.split()[1] for line in r.stdout.splitlines() if len(line.split()) == 2]


# --- version-guard ----------------------------------------------------------------------------------------

@dataclass
class VersionGuard:
    """site.yml rendered for ``rendered`` on nodes running ``installed``: it must stop in its first play."""

    cluster: Cluster
    rendered: str
    installed: str
    name: str = "version-guard"

    def run(self, state: State, record: Record) -> None:
        errors = prepare_nodes(state, replace(self.cluster, accounting=None))  # no database: nothing to touch
        for host, err in errors.items():
            record(host, HostOutcome(FAILED, 0.0, err))
        if errors:
            raise StepFailed("node preparation failed")
        hosts = [n.name for n in state.nodes]
        run = run_playbook(state, hosts, ident="version-guard")
        if run.rc == 0:
            raise StepFailed(f"site.yml rendered for Slurm {self.rendered} succeeded on Slurm {self.installed}")
        t = trace(runner_events(state, "version-guard"))
        if not t.plays:
            raise StepFailed("no play started (ansible-runner recorded no play_start event)")
        first = t.plays[0]
        if "preflight" not in first.lower():
            raise StepFailed(f"the first play of site.yml is {first!r}, not the Slurm release preflight")
        later = [(p, ev) for p, evs in t.tasks.items() if p != first for ev in evs]
        if len(t.plays) > 1 or later:
            raise StepFailed(f"plays after the preflight ran: {t.plays[1:]}; tasks: {later[:5]}")
        for h in hosts:
            record(h, self._host(state, h, run.seconds, t, first))

    def _host(self, state: State, host: str, seconds: float, t: PlayTrace, first: str) -> HostOutcome:
        fails = t.failures.get(host, [])
        named = [m for p, _, m in fails if p == first and self.rendered in m and self.installed in m]
        running = daemons_running(state, host)
        touched = [p for p in ("etc/slurm", "etc/munge/munge.key")
                   if (Path(next(n.upper for n in state.nodes if n.name == host)) / p).exists()]
        counts = {"preflight_failures": len(named), "later_tasks": 0, "daemons": len(running),
                  "files_written": len(touched)}
        if not named:
            return HostOutcome(FAILED, seconds, f"no preflight failure naming {self.rendered} and {self.installed}: "
                                                f"{fails[:2]}", counts)
        if running or touched:
            return HostOutcome(FAILED, seconds, f"daemons {running} running, files {touched} written", counts)
        return HostOutcome(OK, seconds, named[0][:300], counts)


# --- node-failure -----------------------------------------------------------------------------------------

HEALTH_INTERVAL_S = 10
"""HealthCheckInterval the node-failure scenario renders (the blueprint's slurm.conf says 300 s: a rehearsal
cannot wait five minutes per check)"""

NVIDIA_SMI_STANDIN = """#!/bin/sh
# clusterctl rehearsal stand-in for nvidia-smi: one GPU per /dev/nvidiaN stand-in device of this node
[ "${1:-}" = "-L" ] || exit 0
for d in /dev/nvidia[0-9]*; do
  [ -c "$d" ] && echo "GPU ${d#/dev/nvidia}: rehearsal stand-in ($d)"
done
exit 0
"""

HEALTH_VARS: dict[str, tuple[object, str]] = {
    "node_health_drain": (True, "the scenario proves that the check drains"),
    "node_health_rdma_port_count": (0, "no RDMA device in a rehearsal node"),
    "node_health_mounts": ([], "no file server in a rehearsal: the shared mounts are fstab lines only"),
}


def node_state(state: State, via: str, node: str) -> tuple[str, str]:
    """(State, Reason) of ``node`` as slurmctld reports them (``scontrol show node -o``)."""
    r = ssh(state, via, f"scontrol show node {node} -o")
    if r.returncode != 0:
        return "?", (r.stderr or r.stdout).strip()[-200:]
    m = re.search(r"\bState=(\S+)", r.stdout)
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?: \w+=|$)", r.stdout)
    return (m.group(1) if m else "?"), (reason.group(1).strip() if reason else "")


def wait_for(predicate, timeout_s: float, every_s: float = 1.0):
    """Poll ``predicate()`` until it returns a truthy value or ``timeout_s`` passes; (value, seconds)."""
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value or time.monotonic() - t0 > timeout_s:
            return value, time.monotonic() - t0
        time.sleep(every_s)


def _set_interval(conf: Path, seconds: int) -> None:
    text = conf.read_text()
    new, n = re.subn(r"(?m)^HealthCheckInterval=\d+$", f"HealthCheckInterval={seconds}", text)
    if n != 1:
        raise StepFailed(f"{conf}: no HealthCheckInterval line to shorten")
    conf.write_text(new)


@dataclass
class HealthSetup:
    """Converge again with the health check draining (no RDMA and mount expectations a node cannot meet),
    nvidia-smi stand-ins listing each node's GPU stand-in devices, and a short HealthCheckInterval."""

    cluster: Cluster
    interval_s: int = HEALTH_INTERVAL_S
    name: str = "health-setup"

    def run(self, state: State, record: Record) -> None:
        out = Path(state.dir)
        _set_interval(out / "slurm" / "slurm.conf", self.interval_s)
        vars_path = state_dir(out) / "node-failure-vars.yml"
        lines = ["# clusterctl rehearsal: node-failure scenario (clusterctl/rehearse/scenarios.py)"]
        for key, (value, why) in HEALTH_VARS.items():
            lines += [f"# {why}", yaml.safe_dump({key: value}, default_flow_style=False).strip()]
        vars_path.write_text("\n".join(lines) + "\n")
        for h in self.cluster.compute:
            r = ssh(state, h, "cat > /usr/bin/nvidia-smi <<'EOF'\n" + NVIDIA_SMI_STANDIN + "EOF\n"
                              "chmod 755 /usr/bin/nvidia-smi && nvidia-smi -L | wc -l")
            if r.returncode != 0 or r.stdout.strip() != str(self.cluster.gpus.get(h, 0)):
                record(h, HostOutcome(FAILED, 0.0, f"nvidia-smi stand-in lists {r.stdout.strip()!r} GPUs: "
                                                   f"{r.stderr.strip()[-200:]}"))
        hosts = [n.name for n in state.nodes]
        run = run_playbook(state, hosts, ident="health-setup", extra_args=["-e", f"@{vars_path}"])
        for h in hosts:
            s = run.stats.get(h, {})
            bad = s.get("failures", 0) or s.get("dark", 0) or h not in run.stats
            record(h, HostOutcome(FAILED if bad else OK, run.seconds, "; ".join(run.failed.get(h, []))[:400],
                                  {"changed": s.get("changed", 0)}))
        if run.rc != 0:
            raise StepFailed(f"ansible-playbook exited {run.rc}")
        via = self.cluster.controllers[0]
        for h in self.cluster.compute:
            st, _ = wait_for(lambda h=h: node_state(state, via, h)[0].lower() == "idle" or None, 60)
            if not st:
                raise StepFailed(f"{h} is not idle after the health setup: {node_state(state, via, h)}")


@dataclass
class NodeFailure:
    """Remove a GPU stand-in device of one compute node: the health check must drain it (with a reason
    naming the GPUs) within its interval while the other compute nodes stay idle; put the device back: the
    node must be idle again within an interval, without an operator's ``scontrol update``."""

    cluster: Cluster
    interval_s: int = HEALTH_INTERVAL_S
    name: str = "node-failure"

    def run(self, state: State, record: Record) -> None:
        from clusterctl.rehearse.deploy import NVIDIA_MAJOR

        victim = self.cluster.compute[0]
        gpus = self.cluster.gpus.get(victim, 0)
        if gpus < 1:
            raise StepFailed(f"{victim} has no GPU stand-in to remove")
        via = self.cluster.controllers[0]
        dev = f"/dev/nvidia{gpus - 1}"
        limit = 2 * self.interval_s + 5  # slurmd's timer is not aligned with the moment of the failure
        r = ssh(state, victim, f"rm -f {dev}")
        if r.returncode != 0:
            raise StepFailed(f"rm {dev} on {victim}: {r.stderr.strip()}")

        def drained():
            st, reason = node_state(state, via, victim)
            return (st, reason) if "DRAIN" in st.upper() and reason.startswith("node-health:") else None

        got, took = wait_for(drained, limit)
        if not got:
            raise StepFailed(f"{victim} not drained {limit} s after {dev} was removed: {node_state(state, via, victim)}")
        others = {h: node_state(state, via, h)[0] for h in self.cluster.compute if h != victim}
        record(victim, HostOutcome(OK, took, f"drained after {took:.1f} s: {got[1]}",
                                   {"drain_seconds": round(took, 1)}))
        r = ssh(state, victim, f"mknod -m 666 {dev} c {NVIDIA_MAJOR} {gpus - 1}")
        if r.returncode != 0:
            raise StepFailed(f"mknod {dev} on {victim}: {r.stderr.strip()}")
        back, took2 = wait_for(lambda: node_state(state, via, victim)[0].lower() == "idle" or None, limit)
        if not back:
            record(victim, HostOutcome(FAILED, took2, f"not back in service {limit} s after the repair: "
                                                      f"{node_state(state, via, victim)}"))
            return
        record(victim, HostOutcome(OK, took + took2, f"drained after {took:.1f} s ({got[1]}); idle again "
                                                     f"{took2:.1f} s after the repair",
                                   {"drain_seconds": round(took, 1), "resume_seconds": round(took2, 1)}))
        for h, st in others.items():
            record(h, HostOutcome(OK if st.lower() == "idle" else FAILED, 0.0, f"{st} while {victim} was drained"))


def scenario_steps(scenario: str, cluster: Cluster, rendered: str = "", installed: str = "") -> list[Step]:
    """The steps of ``scenario`` (after the boot and SSH check)."""
    if scenario == "version-guard":
        return [VersionGuard(cluster, rendered, installed)]
    if scenario == "node-failure":
        return [Converge(cluster), HealthSetup(cluster), NodeFailure(cluster)]
    raise ValueError(f"unknown scenario {scenario!r}")
