"""What the scenarios read from the running cluster and from ansible-runner's event stream, and how they
change a rendered file of the rehearsal directory: shared by version-guard, node-failure, failover, elastic
and add-node.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.steps import StepFailed
from clusterctl.write import update_files

SLURM_DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "munged")

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


def rewrite_rendered(conf: Path, text: str) -> None:
    """Replace a rendered file of the rehearsal directory through the writer, so its manifest records the new
    bytes: a later render of the same directory (the add-node scenario) replaces only files that still hold what
    clusterctl wrote, and refuses one edited behind its back."""
    out = conf.parent.parent
    update_files({conf.relative_to(out).as_posix(): text}, out)

def set_conf(conf: Path, key: str, value: object) -> None:
    """Set ``key=value`` in the rendered slurm.conf (replace the line, or add it after the SlurmctldHost lines)."""
    text = conf.read_text()
    new, n = re.subn(rf"(?m)^{key}=\S*$", f"{key}={value}", text)
    if n == 0:
        new = re.sub(r"(?m)((?:^SlurmctldHost=.*\n)+)", lambda m: m.group(1) + f"{key}={value}\n", text, count=1)
        if new == text:
            raise StepFailed(f"{conf}: no SlurmctldHost line to add {key} after")
    rewrite_rendered(conf, new)

def ssh_ok(state: State, host: str, cmd: str, timeout: float = 60.0) -> str:
    r = ssh(state, host, cmd, timeout=timeout)
    if r.returncode != 0:
        raise StepFailed(f"{cmd!r} on {host}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    return r.stdout

def sbatch(state: State, via: str, args: str) -> str:
    """``sbatch --parsable ARGS`` on ``via``: the job id it printed (:class:`StepFailed` when it refused)."""
    return ssh_ok(state, via, f"sbatch --parsable {args}").strip().split(";")[0]


def ping(state: State, via: str) -> dict[str, str]:
    """``scontrol ping``: controller host -> UP/DOWN."""
    r = ssh(state, via, "scontrol ping")
    return dict(re.findall(r"Slurmctld\(\w+\) at (\S+) is (\w+)", r.stdout))


JOB_START_TIMEOUT_S = 180
"""How long a submitted job may stay PENDING before a scenario fails (a job slurmd requeued held fails at once)"""


def wait_running(state: State, via: str, job: str, limit: float = JOB_START_TIMEOUT_S, *,
                 hosts: Sequence[str] = ()) -> None:
    """Wait until ``job`` runs; raise :class:`StepFailed` after ``limit`` seconds, or as soon as Slurm holds it
    after a failed launch, with what the logs say of the job (:func:`launch_failure`, on ``hosts`` too)."""
    def check():
        r = ssh(state, via, f"squeue -h -j {job} -o '%T|%r'")
        st, _, reason = r.stdout.strip().partition("|")
        if st == "RUNNING":
            return "running"
        if "held" in reason.lower() or st not in ("PENDING", "CONFIGURING"):
            return f"{st or '?'} ({reason or r.stderr.strip()[-150:]})"
        return None

    got, seconds = wait_for(check, limit)
    if got != "running":
        raise StepFailed(f"job {job} not running {seconds:.0f} s after sbatch: {got or job_state(state, via, job)}"
                         f"{launch_failure(state, via, job, hosts)}")


LAUNCH_FAILED = "launch failed requeued held"
"""the reason Slurm gives a batch job it requeued and held after its launch failed (it never runs by itself)"""


def launch_failure(state: State, via: str, job: str, hosts: Sequence[str] = ()) -> str:
    """'; slurmd on HOST: ...' for the job's batch host and each of ``hosts``: the lines of slurmd's log that name
    the job and its last errors (not the health check's, which the node_health role's report-only check logs every
    interval); '; slurmctld on HOST: ...' with the controller's lines naming the job (a requeued
    job has no batch host any more, so the compute hosts are asked by name). '' when no log says anything."""
    batch = ssh(state, via, f"scontrol show job {job} | grep -o 'BatchHost=[^ ]*'").stdout.strip().removeprefix(
        "BatchHost=")
    said = []
    names = rf"(job |JobId=|StepId=|\[){job}\b"
    for host in dict.fromkeys([*([batch] if batch and batch != "(null)" else []), *hosts]):
        tail = ssh(state, host, f"grep -iE '{names}|error' /var/log/slurm/slurmd.log | grep -v 'health_check failed' "
                   "| tail -n 5").stdout.strip()
        if tail:
            said.append(f"; slurmd on {host}: {tail[-500:]}")
    host = next((h for h, answer in ping(state, via).items() if answer == "UP"), "")
    if host:
        tail = ssh(state, host, rf"grep -E 'JobId={job}\b' /var/log/slurm/slurmctld.log | tail -n 5").stdout.strip()
        if tail:
            said.append(f"; slurmctld on {host}: {tail[-600:]}")
    return "".join(said)


def submit_running(state: State, via: str, args: str, hosts: Sequence[str] = ()) -> tuple[str, str]:
    """Submit ``args`` (sbatch's options and script: :func:`sbatch`) from ``via`` and wait until the job
    runs: (job id, note). A job Slurm held after a failed launch (LAUNCH_FAILED) is cancelled and submitted once
    more; the note then says so with what the logs said of the first launch (:func:`launch_failure`), so a
    scenario that needs a running job goes on and its summary shows the failed launch. Any other failure, or a
    second failed launch, raises :class:`StepFailed`."""
    job = sbatch(state, via, args)
    try:
        wait_running(state, via, job, hosts=hosts)
        return job, ""
    except StepFailed as failed:
        if LAUNCH_FAILED not in str(failed):
            raise
        ssh(state, via, f"scancel {job}")
        again = sbatch(state, via, args)
        wait_running(state, via, again, hosts=hosts)
        return again, f"; the first job, {job}, was held after a failed launch and cancelled: {str(failed)[:700]}"


def job_state(state: State, via: str, job: str) -> str:
    r = ssh(state, via, f"squeue -h -j {job} -o %T")
    return r.stdout.strip() if r.returncode == 0 else f"? {r.stderr.strip()[-150:]}"
