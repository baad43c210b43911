"""The ``rolling`` scenario: change the blueprint of a cluster that runs a job, re-render, run ``site.yml``.

The change is the one an operator makes every week, all three at once:

- **a Slurm option**: the first partition's ``max_time`` (slurm.conf's ``MaxTime``; ``scontrol reconfigure``);
- **a new partition** of the first compute group's nodes;
- **one more compute node**, as a node group of one host of the same type appended to ``node_groups`` (a
  later group keeps every earlier host's in-band address; growing ``count`` of a group that is not the last
  would renumber the groups after it, see docs/rehearse.md) and added to the partitions of its sibling.

The proof, read from the real daemons: the job started before the run finished ``COMPLETED``; every node,
the new one included, ends ``idle``; the new partition and option are what ``scontrol`` reports; every
existing compute node's slurmd was restarted during the run (the node lines changed) and none while the job
ran there (slurmd's start time against the job's end time); the event stream shows how long the drained
node waited.
"""

from __future__ import annotations

import copy
import re
import shlex
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
from clusterctl.rehearse.scenario.observe import node_state, runner_events, ssh_ok, wait_for, wait_running
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

NEW_PARTITION = "rehearsal"
"""the partition the change adds"""
NEW_MAX_TIME = "2-00:00:00"
"""the first partition's MaxTime after the change (another value when it already is this one)"""
JOB_AFTER_DRAIN_S = 15
"""the job that runs across the change ends this long after its node is drained (as a training job that
checkpoints and exits when its node is drained): however long the plays before the compute play take, the
rolling run finds it running and must wait for it"""
JOB_SCRIPT = ("until scontrol show node $SLURMD_NODENAME --oneliner | grep -q 'State=[A-Z+]*DRAIN'; do sleep 1; "
              f"done; sleep {JOB_AFTER_DRAIN_S}")
WAIT_TASK = "Wait until the node runs no job"
"""roles/node_drain/tasks/drain.yml (included by slurm_compute's restart.yml): the task whose retries show the drained
node waiting"""


@dataclass
class RollingChange:
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


def change_blueprint(data: dict, plan) -> tuple[dict, RollingChange]:
    """``data`` (the rehearsal variant's blueprint) with the rolling change applied; ``data`` is not modified."""
    out = copy.deepcopy(data)
    slurm = out.get("slurm")
    groups = out.get("node_groups")
    compute = [g for g in plan.groups if g.role == "compute"]
    if not isinstance(slurm, dict) or not isinstance(groups, list) or not compute:
        raise RehearsalError("the rolling scenario needs Slurm and a compute node group",
                             "rehearse a blueprint with a slurm section and compute nodes")
    change = RollingChange()
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
        raise RehearsalError(f"the blueprint already has a partition {NEW_PARTITION!r}: the rolling scenario adds it")
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


@dataclass
class Rolling:
    """While a job runs on the first compute node: write the changed render, run site.yml on every host (the
    new node included) with its rolling policy, and check the outcome (module docstring)."""

    before: Cluster
    after: Cluster
    rerender: object
    """callable writing the changed blueprint's files into the rehearsal directory"""
    change: RollingChange = field(default_factory=RollingChange)
    name: str = "rolling"

    def run(self, state: State, record: Record) -> None:
        via = (self.before.login or self.before.controllers)[0]
        victim = self.before.compute[0]
        idle, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in self.before.compute)
                           or None, 90)
        if not idle:
            raise StepFailed(f"compute nodes not idle: {[node_state(state, via, h) for h in self.before.compute]}")
        job = ssh_ok(state, via, f"sbatch --parsable -N1 -w {victim} -t 10 -J rehearse-rolling "
                                  f"--wrap {shlex.quote(JOB_SCRIPT)}").strip().split(";")[0]
        wait_running(state, via, job)
        self.rerender()
        t0 = time.time()
        run = run_playbook(state, list(self.after.groups), ident="rolling")
        for h in self.after.groups:
            o = _recap_outcome(run, h, require_unchanged=False)
            if o.status != OK or (h not in self.after.compute and h != via):
                record(h, o)
        if run.rc != 0:
            raise StepFailed(f"ansible-playbook exited {run.rc}: {dict(run.failed)}"[:800])
        self._check(state, record, via, job, victim, t0, run.seconds,
                    {h: s.get("changed", 0) for h, s in run.stats.items()})

    def _check(self, state: State, record: Record, via: str, job: str, victim: str, t0: float,
               seconds: float, run_changed: dict[str, int]) -> None:
        t = job_times(state, via, job)
        end = _epoch(t.get("EndTime", ""))
        if t.get("JobState") != "COMPLETED" or end is None:
            raise StepFailed(f"job {job} after the rolling run: {t} (expected COMPLETED)")
        compute = list(self.after.compute)
        idle, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in compute) or None, 60)
        states = {h: node_state(state, via, h) for h in compute}
        parts = ssh_ok(state, via, "sinfo -h -o '%P %D'")
        new_part = any(line.split()[0].rstrip("*") == NEW_PARTITION for line in parts.splitlines() if line.split())
        shown = ssh_ok(state, via, f"scontrol show partition {self.change.partition} --oneliner")
        max_time = (re.search(r"\bMaxTime=(\S+)", shown) or [None, "?"])[1]
        want = self.change.max_time[1]
        if not new_part or max_time != want:
            raise StepFailed(f"after the run: partition {NEW_PARTITION} in sinfo: {new_part}; "
                             f"{self.change.partition} MaxTime={max_time} (expected {want})")
        waits = [e for e in runner_events(state, "rolling") if e.get("event") == "runner_retry"
                 and (e.get("event_data") or {}).get("task") == WAIT_TASK]
        waited = {h: sum(1 for e in waits if e["event_data"].get("host") == h) for h in compute}
        for h in compute:
            st, reason = states[h]
            started = slurmd_started(state, h)
            counts = {"changed": run_changed.get(h, 0), "slurmd_restarted": int(started is not None and started >= t0),
                      "drain_polls": waited.get(h, 0)}
            new = h not in self.before.compute
            problems = []
            if st.lower() != "idle":
                problems.append(f"{st} ({reason})")
            if started is None:
                problems.append("no slurmd")
            elif not new and started < t0:
                problems.append("slurmd was not restarted although the node lines changed")
            elif h == victim and started < end - 1:
                problems.append(f"slurmd restarted {end - started:.0f} s before job {job} ended on it")
            elif h == victim and not waited.get(h):
                problems.append(f"the run did not wait for job {job} (no retry of {WAIT_TASK!r})")
            what = ("new node, in sinfo" if new else
                    f"slurmd restarted {started - end:.0f} s after job {job} ended, after {waited.get(h, 0)} "
                    "drain poll(s)" if h == victim and started is not None else "slurmd restarted while idle")
            record(h, HostOutcome(FAILED if problems else OK, seconds, "; ".join(problems) or f"idle; {what}",
                                  counts))
        if not idle:
            raise StepFailed(f"not every compute node is idle: {states}")
        record(via, HostOutcome(OK, seconds, f"job {job} COMPLETED; partition {NEW_PARTITION} added; "
                                             f"{self.change.partition} MaxTime={max_time}",
                                {"changed": run_changed.get(via, 0)}))


class RollingScenario(Scenario):
    """Boots the grown cluster's new node from the start (outside the rendered inventory until the change);
    runs last, because it re-renders the changed blueprint over the rehearsal's own adjustments."""

    name = "rolling"
    proves = ("a changed blueprint (a Slurm option, a new partition, one more node) rolls onto a cluster running a "
              "job without killing it, every slurmd restarted while it ran no job")
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
            raise RehearsalError(f"the rolling change would move hosts to other addresses: {moved}",
                                 "docs/rehearse.md, 'rolling'")
        build.booted_early = frozenset({self.change.new_host})
        build.info["rolling_change"] = self.change.summary()
        return grown

    def steps(self, build: Build) -> list:
        after_files = build.render(build.final_plan)
        return [build.label(Rolling(build.cluster, build.everyone, lambda: write_render(after_files, build.output),
                                    self.change), self.name)]
