"""The ``add-node`` scenario: add a compute node to the blueprint of a cluster that runs a long job, re-render, run
``site.yml`` as an operator would.

The change is the one an operator makes every week, all three at once:

- **a Slurm option**: the first partition's ``max_time`` (slurm.conf's ``MaxTime``; ``scontrol reconfigure``);
- **a new partition** of the first compute group's nodes;
- **one more compute node**, as a node group of one host of the same type appended to ``node_groups`` (a
  later group keeps every earlier host's in-band address; growing ``count`` of a group that is not the last
  would renumber the groups after it, see docs/rehearse.md) and added to the partitions of its sibling.

The proof, read from the real daemons: the new node is ``idle`` in ``sinfo``; the job started before the run was
``RUNNING`` through it (every poll during the run) and, released afterwards, ends ``COMPLETED``; no node was drained
at any time: neither slurmctld's log since the run began (``update_node: node N state set to DRAIN...``,
``drain_nodes: node N state set to DRAIN``: src/slurmctld/node_mgr.c) nor the node states polled every few seconds
during the run show a drain. slurmd restarts of the existing nodes are expected (their node lines changed) and
shown: the job's node restarted its slurmd while the job ran, and the job lived on in its slurmstepd.
"""

from __future__ import annotations

import copy
import re
import shlex
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Scenario, write_render
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.select import node_specs
from clusterctl.rehearse.scenario.deploy import Cluster, _recap_outcome, run_playbook
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.scenario.observe import node_state, sbatch, ssh_ok, wait_for, wait_running
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

NEW_PARTITION = "rehearsal"
"""the partition the change adds"""
NEW_MAX_TIME = "2-00:00:00"
"""the first partition's MaxTime after the change (another value when it already is this one)"""
JOB_SCRIPT = "trap 'exit 0' USR1; while :; do sleep 1; done"
"""the long job that runs across the change: it runs until the scenario releases it (``scancel --signal=USR1
--batch``: the batch shell exits 0 and the job ends COMPLETED), so it is still running whatever the run takes"""
POLL_S = 3.0
"""how often the node states are polled while site.yml runs"""
DRAIN_LOG = re.compile(r"\bnode (\S+) state set to (DRAIN\w*)")
"""slurmctld's log line of a drain (src/slurmctld/node_mgr.c: ``update_node: node %s state set to %s`` for
``scontrol update State=DRAIN``, ``drain_nodes: node %s state set to DRAIN`` for a drain by slurmctld itself)"""


@dataclass
class AddNodeChange:
    """What the change is: filled in by :func:`change_blueprint`, listed in the JSON summary."""

    partition: str = ""
    max_time: tuple[str, str] = ("", "")
    new_group: str = ""
    new_host: str = ""

    def summary(self) -> dict:
        return {"slurm_option": {"partition": self.partition, "MaxTime": {"before": self.max_time[0],
                                                                         "after": self.max_time[1]}},
                "new_partition": NEW_PARTITION, "new_node": {"group": self.new_group, "host": self.new_host}}


def _next_host(name: str, taken: set[str]) -> str:
    """``gpu02`` -> ``gpu03`` (the trailing number, same width), skipping names already taken."""
    m = re.match(r"^(.*?)(\d+)$", name)
    stem, num, width = (m.group(1), int(m.group(2)), len(m.group(2))) if m else (name + "-", 0, 1)
    while True:
        num += 1
        candidate = f"{stem}{num:0{width}d}"
        if candidate not in taken:
            return candidate


def change_blueprint(data: dict, plan) -> tuple[dict, AddNodeChange]:
    """``data`` (the rehearsal variant's blueprint) with the add-node change applied; ``data`` is not modified."""
    out = copy.deepcopy(data)
    slurm = out.get("slurm")
    groups = out.get("node_groups")
    compute = [g for g in plan.groups if g.role == "compute"]
    if not isinstance(slurm, dict) or not isinstance(groups, list) or not compute:
        raise RehearsalError("the add-node scenario needs Slurm and a compute node group",
                             "rehearse a blueprint with a slurm section and compute nodes")
    change = AddNodeChange()
    parts = slurm["partitions"]
    first = parts[0]
    before = str(first.get("max_time", "UNLIMITED"))
    after = NEW_MAX_TIME if before != NEW_MAX_TIME else "1-00:00:00"
    first["max_time"] = after
    change.partition, change.max_time = str(first["name"]), (before, after)
    sibling = compute[0]
    taken = {h for g in plan.groups for h in g.hosts}
    names = {str(g.get("name")) for g in groups}
    new_group = next(n for n in (f"{sibling.name}_added{'' if i == 0 else i}" for i in range(100)) if n not in names)
    new_host = _next_host(sibling.hosts[-1], taken)
    entry = {"name": new_group, "type": sibling.type.name, "count": 1, "hostnames": new_host, "role": "compute"}
    source = next(g for g in groups if g.get("name") == sibling.name)
    if source.get("racks") is not None:
        entry["racks"] = source["racks"]
    groups.append(entry)
    for p in parts:
        if sibling.name in p.get("groups", []):
            p["groups"] = list(p["groups"]) + [new_group]
    if any(p.get("name") == NEW_PARTITION for p in parts):
        raise RehearsalError(f"the blueprint already has a partition {NEW_PARTITION!r}: the add-node scenario adds it")
    parts.append({"name": NEW_PARTITION, "groups": [sibling.name], "max_time": "1:00:00"})
    for fabric in out.get("fabrics") or []:  # the new node is cabled like its sibling
        for a in fabric.get("attach") or []:
            if a.get("group") == sibling.name:
                fabric["attach"] = list(fabric["attach"]) + [{**a, "group": new_group}]
                break
    change.new_group, change.new_host = new_group, new_host
    return out, change


# --- the step ---------------------------------------------------------------------------------------------

def _epoch(stamp: str) -> float | None:
    """scontrol's local ``2026-12-01T06:30:00`` as seconds since the epoch (nodes share this machine's clock
    and time zone)."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def job_times(state: State, via: str, job: str) -> dict[str, str]:
    """JobState, StartTime, EndTime, NodeList of ``job`` (``scontrol show job``: kept MinJobAge after it ends)."""
    r = ssh(state, via, f"scontrol show job {job} --oneliner")
    return dict(re.findall(r"\b(JobState|StartTime|EndTime|NodeList|ExitCode)=(\S+)", r.stdout))


def slurmd_started(state: State, host: str) -> float | None:
    """When the running slurmd of ``host`` started (seconds since the epoch), or None when none runs."""
    r = ssh(state, host, "echo $(date +%s) $(ps -o etimes= -C slurmd | head -1)")
    parts = r.stdout.split()
    return float(parts[0]) - float(parts[1]) if r.returncode == 0 and len(parts) == 2 else None


def slurmctld_log_size(state: State, controller: str) -> tuple[str, int]:
    """(SlurmctldLogFile, its size in bytes now) on ``controller``: where the run's own lines will start."""
    path = ssh_ok(state, controller, "scontrol show config | sed -n 's/^SlurmctldLogFile *= *//p'").strip()
    size = ssh(state, controller, f"stat -c %s {shlex.quote(path)}").stdout.strip() if path else ""
    return path, int(size) if size.isdigit() else 0


def drains_logged(state: State, controller: str, log: tuple[str, int]) -> list[str]:
    """slurmctld's log lines since ``log``'s offset that set a node DRAIN (:data:`DRAIN_LOG`)."""
    path, offset = log
    if not path:
        raise StepFailed(f"slurmctld on {controller} logs to no file (SlurmctldLogFile): cannot read its drains")
    text = ssh_ok(state, controller, f"tail -c +{offset + 1} {shlex.quote(path)}", timeout=60)
    return [line.strip() for line in text.splitlines() if DRAIN_LOG.search(line)]


class StatePoller:
    """Node states (``sinfo -N``) and the job's state, every :data:`POLL_S` seconds in a thread while site.yml
    runs: every node state seen with DRAIN in it, and every job state other than RUNNING."""

    def __init__(self, state: State, via: str, job: str) -> None:
        self.state, self.via, self.job = state, via, job
        self.drained: dict[str, set[str]] = {}
        self.job_states: set[str] = set()
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            r = ssh(self.state, self.via, f"sinfo -h -N -o '%N %T'; echo job $(squeue -h -j {self.job} -o %T "
                                          "2>/dev/null || echo UNREACHABLE)", timeout=30)
            for line in r.stdout.splitlines():
                parts = line.split()
                if parts[:1] == ["job"]:  # UNREACHABLE: slurmctld restarting (up to 24.05) or re-executing itself
                    if parts[1:] != ["UNREACHABLE"]:
                        self.job_states.add(parts[1] if len(parts) > 1 else "GONE")
                elif len(parts) == 2 and "drain" in parts[1].lower():
                    self.drained.setdefault(parts[0], set()).add(parts[1])
            self.polls += 1
            self._stop.wait(POLL_S)

    def __enter__(self) -> "StatePoller":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


@dataclass
class AddNode:
    """While a long job runs on the first compute node: write the changed render, run site.yml on every host (the
    new node included) with its rolling policy, and check the outcome (module docstring)."""

    before: Cluster
    after: Cluster
    rerender: object
    """callable writing the changed blueprint's files into the rehearsal directory"""
    change: AddNodeChange = field(default_factory=AddNodeChange)
    name: str = "add-node"

    def run(self, state: State, record: Record) -> None:
        via = (self.before.login or self.before.controllers)[0]
        victim = self.before.compute[0]
        idle, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in self.before.compute)
                           or None, 90)
        if not idle:
            raise StepFailed(f"compute nodes not idle: {[node_state(state, via, h) for h in self.before.compute]}")
        job = sbatch(state, via, f"-N1 -w {victim} -t 20 -J rehearse-add-node --wrap {shlex.quote(JOB_SCRIPT)}")
        wait_running(state, via, job)
        logs = {c: slurmctld_log_size(state, c) for c in self.before.controllers}
        self.rerender()
        t0 = time.time()
        with StatePoller(state, via, job) as poller:
            run = run_playbook(state, list(self.after.groups), ident="add-node")
        for h in self.after.groups:
            o = _recap_outcome(run, h, require_unchanged=False)
            if o.status != OK or (h not in self.after.compute and h != via):
                record(h, o)
        if run.rc != 0:
            drained = {c: drains_logged(state, c, log) for c, log in logs.items()}
            raise StepFailed(f"ansible-playbook exited {run.rc}: {dict(run.failed)}"[:800]
                             + f"; drains in slurmctld's log: {drained}"[:600])
        running_after = job_times(state, via, job).get("JobState")
        ssh_ok(state, via, f"scancel --signal=USR1 --batch {job}")
        done, _ = wait_for(lambda: job_times(state, via, job).get("JobState") not in ("RUNNING", "COMPLETING")
                           or None, 60)
        drains = {c: drains_logged(state, c, log) for c, log in logs.items()}
        self._check(state, record, via, job, victim, t0, run, poller, running_after, drains)

    def _check(self, state: State, record: Record, via: str, job: str, victim: str, t0: float, run,
               poller: StatePoller, running_after: str | None, drains: dict[str, list[str]]) -> None:
        t = job_times(state, via, job)
        end = _epoch(t.get("EndTime", ""))
        problems = []
        if poller.job_states != {"RUNNING"} or running_after != "RUNNING":
            problems.append(f"job {job} was not RUNNING through the run: polled {sorted(poller.job_states)}, "
                            f"after it {running_after}")
        if t.get("JobState") != "COMPLETED" or end is None:
            problems.append(f"job {job} after its release: {t} (expected COMPLETED)")
        logged = [line for lines in drains.values() for line in lines]
        if logged or poller.drained:
            problems.append(f"nodes drained during the run: slurmctld's log {logged[:4]}, "
                            f"polled states {dict((h, sorted(s)) for h, s in poller.drained.items())}")
        if problems:
            raise StepFailed("; ".join(problems)[:1200])
        compute = list(self.after.compute)
        idle, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in compute) or None, 60)
        states = {h: node_state(state, via, h) for h in compute}
        self._check_partition(state, via)
        changed = {h: s.get("changed", 0) for h, s in run.stats.items()}
        for h in compute:
            st, reason = states[h]
            started = slurmd_started(state, h)
            new = h not in self.before.compute
            bad = [f"{st} ({reason})"] if st.lower() != "idle" else []
            if started is None:
                bad.append("no slurmd")
            elif not new and started < t0:
                bad.append("slurmd was not restarted although the node lines changed")
            elif h == victim and not started < end:
                bad.append(f"slurmd was not restarted while job {job} ran (the restart this scenario shows is safe)")
            what = ("new node, idle in sinfo" if new else
                    f"slurmd restarted under job {job}, which ran on" if h == victim else "slurmd restarted")
            record(h, HostOutcome(FAILED if bad else OK, run.seconds, "; ".join(bad) or f"idle; {what}; never drained",
                                  {"changed": changed.get(h, 0), "drained": 0,
                                   "slurmd_restarted": int(started is not None and started >= t0)}))
        if not idle:
            raise StepFailed(f"not every compute node is idle: {states}")
        record(via, HostOutcome(OK, run.seconds, f"job {job} RUNNING through the run ({poller.polls} polls), then "
                                                 f"COMPLETED; no drain in slurmctld's log or the polled states; "
                                                 f"partition {NEW_PARTITION} added",
                                {"changed": changed.get(via, 0), "polls": poller.polls}))

    def _check_partition(self, state: State, via: str) -> None:
        parts = ssh_ok(state, via, "sinfo -h -o '%P %D'")
        new_part = any(line.split()[0].rstrip("*") == NEW_PARTITION for line in parts.splitlines() if line.split())
        shown = ssh_ok(state, via, f"scontrol show partition {self.change.partition} --oneliner")
        max_time = (re.search(r"\bMaxTime=(\S+)", shown) or [None, "?"])[1]
        if not new_part or max_time != self.change.max_time[1]:
            raise StepFailed(f"after the run: partition {NEW_PARTITION} in sinfo: {new_part}; "
                             f"{self.change.partition} MaxTime={max_time} (expected {self.change.max_time[1]})")


class AddNodeScenario(Scenario):
    """Boots the grown cluster's new node from the start (outside the rendered inventory until the change);
    runs last, because it re-renders the changed blueprint over the rehearsal's own adjustments."""

    name = "add-node"
    proves = ("a compute node (with a Slurm option and a partition) added to the blueprint of a cluster running a "
              "long job joins idle, the job keeps running and completes, and no node is drained")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE)

    def nodes(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        holder: dict = {}

        def changed(var) -> None:
            build.adjust(var)
            var.data, holder["change"] = change_blueprint(var.data, build.base)
        build.final_plan, _ = build.rehearsed(changed)
        self.change = holder["change"]
        grown = node_specs(build.final_plan, build.per_group, build.rid)
        moved = {s.name: (s.address, a.address) for s in specs for a in grown if a.name == s.name
                 and a.address != s.address}
        if moved:
            raise RehearsalError(f"the add-node change would move hosts to other addresses: {moved}",
                                 "docs/rehearse.md, 'add-node'")
        build.booted_early = frozenset({self.change.new_host})
        build.info["add_node_change"] = self.change.summary()
        return grown

    def steps(self, build: Build) -> list:
        after_files = build.render(build.final_plan)
        return [build.label(AddNode(build.cluster, build.everyone, lambda: write_render(after_files, build.output),
                                    self.change), self.name)]
