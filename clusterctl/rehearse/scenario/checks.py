"""Rehearsal scenarios beyond ``deploy``: what must go right when something goes wrong on a real cluster.

- ``version-guard``: the blueprint is rendered for another Slurm release than the one installed; the
  rendered ``site.yml`` must stop at its preflight play, naming both releases, before any later play runs a
  task on any host, and no Slurm daemon may run on any node afterwards.
- ``node-failure``: after a converge, a compute node loses a GPU stand-in device; the rendered health check
  (``HealthCheckProgram``, run by slurmd every ``HealthCheckInterval``) must drain it with a reason within
  the interval; once the device is back, the node must return to service by itself. Then the same failure
  meets a job first: the node_health prolog must drain the node (reason ``node-health: prolog of job N``),
  Slurm must requeue the job held, and the health check must return the repaired node to service.

Each scenario is a list of :class:`~clusterctl.rehearse.steps.Step` objects proving its claim with state read
from the real daemons (``scontrol``, ``pgrep`` on the nodes) and from ansible-runner's event stream.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from clusterctl.rehearse.scenario.deploy import Cluster, prepare_nodes, run_playbook
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed
from clusterctl.write import update_files

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
        hosts = list(self.cluster.groups)
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
    "node_health_fabric_manager": (False, "no NVSwitch and no nvidia-fabricmanager in a rehearsal node"),
    "node_health_imex": (False, "no multi-node NVLink and no nvidia-imex in a rehearsal node"),
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


def _rewrite_rendered(conf: Path, text: str) -> None:
    """Replace a rendered file of the rehearsal directory through the writer, so its manifest records the new
    bytes: a later render of the same directory (the rolling scenario) replaces only files that still hold what
    clusterctl wrote, and refuses one edited behind its back."""
    out = conf.parent.parent
    update_files({conf.relative_to(out).as_posix(): text}, out)


def _set_interval(conf: Path, seconds: int) -> None:
    text = conf.read_text()
    new, n = re.subn(r"(?m)^HealthCheckInterval=\d+$", f"HealthCheckInterval={seconds}", text)
    if n != 1:
        raise StepFailed(f"{conf}: no HealthCheckInterval line to shorten")
    _rewrite_rendered(conf, new)


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
        lines = ["# clusterctl rehearsal: node-failure scenario (clusterctl/rehearse/scenario/checks.py)"]
        for key, (value, why) in HEALTH_VARS.items():
            lines += [f"# {why}", yaml.safe_dump({key: value}, default_flow_style=False).strip()]
        vars_path.write_text("\n".join(lines) + "\n")
        for h in self.cluster.compute:
            r = ssh(state, h, "cat > /usr/bin/nvidia-smi <<'EOF'\n" + NVIDIA_SMI_STANDIN + "EOF\n"
                              "chmod 755 /usr/bin/nvidia-smi && nvidia-smi -L | wc -l")
            if r.returncode != 0 or r.stdout.strip() != str(self.cluster.gpus.get(h, 0)):
                record(h, HostOutcome(FAILED, 0.0, f"nvidia-smi stand-in lists {r.stdout.strip()!r} GPUs: "
                                                   f"{r.stderr.strip()[-200:]}"))
        hosts = list(self.cluster.groups)
        # only the roles that read what changed: the check's expectations, and slurm.conf (restarts slurmd,
        # reconfigures slurmctld); the base roles converged a step ago
        run = run_playbook(state, hosts, ident="health-setup", extra_args=[
            "-e", f"@{vars_path}", "--tags", "node_health,slurm_controller,slurm_compute"])
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


def gpu_victim(cluster: Cluster) -> tuple[str, str, str, str]:
    """(first compute node, the controller to ask, its last GPU stand-in device, the command that recreates it)."""
    from clusterctl.rehearse.scenario.deploy import NVIDIA_MAJOR

    victim = cluster.compute[0]
    gpus = cluster.gpus.get(victim, 0)
    if gpus < 1:
        raise StepFailed(f"{victim} has no GPU stand-in to remove")
    dev = f"/dev/nvidia{gpus - 1}"
    return victim, cluster.controllers[0], dev, f"mknod -m 666 {dev} c {NVIDIA_MAJOR} {gpus - 1}"


@dataclass
class NodeFailure:
    """Remove a GPU stand-in device of one compute node: the health check must drain it (with a reason
    naming the GPUs) within its interval while the other compute nodes stay idle; put the device back: the
    node must be idle again within an interval, without an operator's ``scontrol update``."""

    cluster: Cluster
    interval_s: int = HEALTH_INTERVAL_S
    name: str = "node-failure"

    def run(self, state: State, record: Record) -> None:
        victim, via, dev, repair = gpu_victim(self.cluster)
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
        r = ssh(state, victim, repair)
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


@dataclass
class PrologFailure:
    """Remove a GPU stand-in device and submit a job to that node at once: the prolog piece of node_health
    (``Prolog=/etc/slurm/prolog.d/*``) must fail, drain the node with a reason naming the job, and Slurm must
    requeue the job held (slurm.conf(5) Prolog); put the device back: the periodic health check must return
    the node to service (the reason is its own). The periodic check runs every ``interval_s`` too, so it may
    see the failure before the job does: then the attempt is repaired and repeated (at most ``attempts``)."""

    cluster: Cluster
    interval_s: int = HEALTH_INTERVAL_S
    attempts: int = 3
    name: str = "prolog-failure"

    def run(self, state: State, record: Record) -> None:
        victim, via, dev, repair = gpu_victim(self.cluster)
        limit = 2 * self.interval_s + 5

        def idle():
            return node_state(state, via, victim)[0].lower() == "idle" or None

        t0 = time.monotonic()
        for attempt in range(1, self.attempts + 1):
            if not wait_for(idle, limit)[0]:
                raise StepFailed(f"{victim} not idle before attempt {attempt}: {node_state(state, via, victim)}")
            # the failure, then the job at once: the job reaches the node's prolog within a second or two, the
            # periodic check comes every interval_s
            r = ssh(state, victim, f"rm -f {dev}")
            if r.returncode != 0:
                raise StepFailed(f"rm {dev} on {victim}: {r.stderr.strip()}")
            out = _ssh_ok(state, via, f"sbatch --parsable -N1 -w {victim} -t 5 -J rehearse-prolog --wrap 'sleep 30'")
            job = out.strip().split(";")[0]

            def verdict():
                st, reason = node_state(state, via, victim)
                if "DRAIN" not in st.upper():
                    return None
                return st, reason

            got, took = wait_for(verdict, limit)
            held = ssh(state, via, f"squeue -h -j {job} -o '%T %r'").stdout.strip()
            if got and got[1].startswith(f"node-health: prolog of job {job}:"):
                break
            # the periodic check was first (or nothing drained): repair, drop the job, try again
            ssh(state, via, f"scancel {job}")
            ssh(state, victim, repair)
            if attempt == self.attempts:
                record(victim, HostOutcome(FAILED, time.monotonic() - t0, f"the prolog never drained {victim} in "
                                                                          f"{self.attempts} attempts; last: "
                                                                          f"{got}, job {job} {held!r}"))
                return

        def job_held():
            h = ssh(state, via, f"squeue -h -j {job} -o '%T %r'").stdout.strip()
            return h if h.upper().startswith("PENDING") and "held" in h.lower() else None

        held_ok, _ = wait_for(job_held, 20)
        held = held_ok or ssh(state, via, f"squeue -h -j {job} -o '%T %r'").stdout.strip()
        ssh(state, via, f"scancel {job}")
        r = ssh(state, victim, repair)
        if r.returncode != 0:
            raise StepFailed(f"mknod {dev} on {victim}: {r.stderr.strip()}")
        back, took2 = wait_for(idle, limit)
        drained = (f"attempt {attempt}: the prolog drained it {took:.1f} s after job {job} was submitted ({got[1]}); "
                   f"job {job}: {held}")
        record(victim, HostOutcome(
            OK if held_ok and back else FAILED, took + took2,
            f"{drained}; idle again {took2:.1f} s after the repair (resumed by the health check)" if back else
            f"{drained}; not back in service {limit} s after the repair: {node_state(state, via, victim)}",
            {"prolog_drain_seconds": round(took, 1), "resume_seconds": round(took2, 1), "attempts": attempt,
             "job_held": bool(held_ok)}))


# --- failover ---------------------------------------------------------------------------------------------

CTLD_TIMEOUT_S = 10
"""SlurmctldTimeout the failover scenario renders (Slurm's default is 120 s; the blueprint sets none)"""


def scenario_specs(scenario: str, plan, specs: Sequence, out: Path) -> list:
    """The nodes to boot for ``scenario``. failover: the shared tier holding StateSaveLocation is, in the
    rehearsal, a directory of the rehearsal (``DIR/.rehearsal/shared/TIER``) bind-mounted at the tier's mount
    point into every controller (the kernel has no NFS; the roles write the fstab line and find the mount)."""
    if scenario != "failover":
        return list(specs)
    from clusterctl.rehearse import RehearsalError
    from clusterctl.plan.roles import slurm_roles
    from clusterctl.plan.slurm import state_tier

    controllers = slurm_roles(plan).controllers
    if len(controllers) < 2:
        raise RehearsalError("the failover scenario needs a blueprint with a backup controller",
                             "rehearse blueprints/lab-ha.yaml, or name two hosts in slurm.controllers")
    found = state_tier(plan)
    if found is None:
        raise RehearsalError("the failover scenario needs StateSaveLocation on a shared storage tier",
                             "set slurm.state_save_location under an nfs tier's mount (rule SLURM009)")
    tier = found[1]
    shared = state_dir(Path(out)) / "shared" / tier.name
    shared.mkdir(parents=True, exist_ok=True)
    return [replace(s, binds=tuple(s.binds) + ((str(shared), tier.mount),)) if s.name in controllers else s
            for s in specs]


def _set_conf(conf: Path, key: str, value: object) -> None:
    """Set ``key=value`` in the rendered slurm.conf (replace the line, or add it after the SlurmctldHost lines)."""
    text = conf.read_text()
    new, n = re.subn(rf"(?m)^{key}=\S*$", f"{key}={value}", text)
    if n == 0:
        new = re.sub(r"(?m)((?:^SlurmctldHost=.*\n)+)", lambda m: m.group(1) + f"{key}={value}\n", text, count=1)
        if new == text:
            raise StepFailed(f"{conf}: no SlurmctldHost line to add {key} after")
    _rewrite_rendered(conf, new)


@dataclass
class FailoverTimeout:
    """Before the converge: SlurmctldTimeout=10 in the rendered slurm.conf (a rehearsal change)."""

    seconds: int = CTLD_TIMEOUT_S
    name: str = "failover-timeout"

    def run(self, state: State, record: Record) -> None:
        _set_conf(Path(state.dir) / "slurm" / "slurm.conf", "SlurmctldTimeout", self.seconds)


def _ssh_ok(state: State, host: str, cmd: str, timeout: float = 60.0) -> str:
    r = ssh(state, host, cmd, timeout=timeout)
    if r.returncode != 0:
        raise StepFailed(f"{cmd!r} on {host}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    return r.stdout


def ping(state: State, via: str) -> dict[str, str]:
    """``scontrol ping``: controller host -> UP/DOWN."""
    r = ssh(state, via, "scontrol ping")
    return dict(re.findall(r"Slurmctld\(\w+\) at (\S+) is (\w+)", r.stdout))


@dataclass
class Failover:
    """kill -9 the primary slurmctld under a running job: the backup takes control within SlurmctldTimeout
    and still knows the job (the state both read on the shared tier); the primary comes back and takes
    control again; sacct lists the job before and after a slurmdbd restart."""

    cluster: Cluster
    timeout_s: int = CTLD_TIMEOUT_S
    name: str = "failover"

    def run(self, state: State, record: Record) -> None:
        seen: dict[str, HostOutcome] = {}

        def merged(host: str, o: HostOutcome) -> None:
            """one host can be primary controller and accounting host: keep both findings"""
            prev = seen.get(host)
            if prev is not None:
                o = HostOutcome(FAILED if FAILED in (prev.status, o.status) else OK, prev.seconds + o.seconds,
                                f"{prev.detail}; {o.detail}", {**prev.counts, **o.counts})
            seen[host] = o
            record(host, o)

        self._run(state, merged)

    def _run(self, state: State, record: Record) -> None:
        primary, backup = self.cluster.controllers[:2]
        via = (self.cluster.login or (backup,))[0]
        up, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in self.cluster.compute)
                         or None, 90)
        if not up:
            raise StepFailed(f"compute nodes not idle: {[node_state(state, via, h) for h in self.cluster.compute]}")
        submitted = float(_ssh_ok(state, primary, "date +%s.%N").strip())
        out = _ssh_ok(state, via, "sbatch --parsable -N1 -t 15 -J rehearse-failover --wrap 'sleep 600'")
        job = out.strip().split(";")[0]
        wait_running(state, via, job)
        # slurmctld writes job_state a few seconds after a change, not at once: kill -9 before that and the backup
        # has never heard of the job. Wait until the state file on the shared tier was written after the sbatch
        # (it then knows the job, PENDING or RUNNING; it is not written again while nothing changes).
        conf = (Path(state.dir) / "slurm" / "slurm.conf").read_text()
        ssd = re.search(r"(?m)^StateSaveLocation=(\S+)$", conf).group(1)
        saved, _ = wait_for(lambda: (float(_ssh_ok(state, primary, f"stat -c %.9Y {shlex.quote(ssd)}/job_state")
                                           .strip()) > submitted) or None, 30)
        if not saved:
            raise StepFailed(f"{ssd}/job_state not written within 30 s of the sbatch of job {job}")
        _ssh_ok(state, primary, "kill -9 $(pidof slurmctld)")
        limit = 2 * self.timeout_s + 15
        # in control: the backup answers for the job. A kill -9 can lose the primary's last state save, so the
        # backup may know a job it had just started as PENDING and start it again: known, then RUNNING.
        took = wait_for(lambda: (ping(state, via).get(backup) == "UP" and ping(state, via).get(primary) == "DOWN"
                                 and _job_state(state, via, job) in ("RUNNING", "PENDING")) or None, limit)[1]
        known = _job_state(state, via, job)
        if known not in ("RUNNING", "PENDING") or ping(state, via).get(primary) != "DOWN":
            record(backup, HostOutcome(FAILED, took, f"job {job} is {known!r} {limit} s after kill -9 of the "
                                                     f"primary; scontrol ping: {ping(state, via)}"))
            return
        # a job the backup knew as PENDING starts again once the nodes report its old allocation gone, and a job
        # slurmd requeued waits for its begin time: 150 s
        running, _ = wait_for(lambda: _job_state(state, via, job) == "RUNNING" or None, 150)
        if not running:
            why = ssh(state, via, f"squeue -h -j {job} -o '%T %r %S'").stdout.strip()
            record(backup, HostOutcome(FAILED, took, f"job {job} known as {known} but not RUNNING 150 s later: "
                                                     f"{why!r}"))
            return
        log = _ssh_ok(state, backup, "grep -h -i 'primary controller\\|takeover\\|took control' "
                                     "/var/log/slurm/slurmctld.log 2>/dev/null | tail -3 || true")
        record(backup, HostOutcome(OK, took, f"in control {took:.1f} s after kill -9 of {primary}, knew job {job} "
                                             f"as {known}, RUNNING; {log.strip()[-200:]}",
                                   {"takeover_seconds": round(took, 1)}))
        # the primary comes back and takes control again
        t1 = time.monotonic()
        _ssh_ok(state, primary, "/etc/init.d/slurmctld start >/dev/null")
        back, took2 = wait_for(lambda: ping(state, via).get(primary) == "UP" or None, limit)
        # no `scontrol takeover`: it hands control to the *backup* and stops the primary (found by this
        # scenario); a primary that starts asks the backup to give control back by itself
        still = _job_state(state, via, job)
        pids = _ssh_ok(state, primary, "pidof slurmctld || true").strip()
        if not back or still != "RUNNING" or not pids:
            record(primary, HostOutcome(FAILED, time.monotonic() - t1, f"after restart: ping {ping(state, via)}, "
                                                                       f"job {job} {still!r}, slurmctld {pids!r}"))
            return
        record(primary, HostOutcome(OK, time.monotonic() - t1, f"back in control after {took2:.1f} s; job {job} "
                                                               f"still RUNNING", {"return_seconds": round(took2, 1)}))
        self._accounting(state, record, via, job)
        ssh(state, via, f"scancel {job}")

    def _accounting(self, state: State, record: Record, via: str, job: str) -> None:
        host = self.cluster.accounting
        if not host:
            return
        listed = lambda: job in ssh(state, via, f"sacct -n -X -j {job} -o JobID").stdout or None
        before, _ = wait_for(listed, 30)
        _ssh_ok(state, host, "/etc/init.d/slurmdbd restart >/dev/null")
        after, took = wait_for(listed, 60)
        record(host, HostOutcome(OK if before and after else FAILED, took,
                                 f"sacct lists job {job} before ({bool(before)}) and after ({bool(after)}) a "
                                 "slurmdbd restart"))


JOB_START_TIMEOUT_S = 180
"""How long a submitted job may stay PENDING before a scenario fails (a job slurmd requeued held fails at once)"""


def wait_running(state: State, via: str, job: str, limit: float = JOB_START_TIMEOUT_S) -> None:
    """Wait until ``job`` runs; raise :class:`StepFailed` after ``limit`` seconds, or as soon as Slurm holds it
    after a failed launch (:func:`launch_failure`)."""
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
        raise StepFailed(f"job {job} not running {seconds:.0f} s after sbatch: {got or _job_state(state, via, job)}"
                         f"{launch_failure(state, via, job)}")


def launch_failure(state: State, via: str, job: str) -> str:
    """'; slurmd on HOST: ...' with the last errors of slurmd's log on the job's batch host, or ''."""
    host = ssh(state, via, f"scontrol show job {job} | grep -o 'BatchHost=[^ ]*'").stdout.strip().removeprefix(
        "BatchHost=")
    if not host or host == "(null)":
        return ""
    tail = ssh(state, host, "grep -i error /var/log/slurm/slurmd.log | tail -n 4").stdout.strip()[-600:]
    return f"; slurmd on {host}: {tail}" if tail else ""


def _job_state(state: State, via: str, job: str) -> str:
    r = ssh(state, via, f"squeue -h -j {job} -o %T")
    return r.stdout.strip() if r.returncode == 0 else f"? {r.stderr.strip()[-150:]}"
