"""``failover``: kill -9 the primary slurmctld under a running job: the backup takes control within
SlurmctldTimeout and still knows the job (the state both read on the shared tier); the primary comes back and
takes control again; sacct lists the job before and after a slurmdbd restart.

Needs a backup controller and StateSaveLocation on a shared tier; in the rehearsal that tier is a directory of
the rehearsal bound into every controller.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.slurm import state_tier
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.scenario.base import (
    BACKUP_CONTROLLER,
    SHARED_STATE,
    SLURM_AND_COMPUTE,
    Build,
    Scenario,
)
from clusterctl.rehearse.scenario.deploy import Cluster
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import (job_state, node_state, ping, set_conf, ssh_ok,
                                                   submit_running, wait_for)
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

CTLD_TIMEOUT_S = 10
"""SlurmctldTimeout the failover scenario renders (Slurm's default is 120 s; the blueprint sets none)"""


def failover_specs(plan, specs: Sequence[NodeSpec], out: Path) -> list[NodeSpec]:
    """The nodes to boot for the failover scenario: the shared tier holding StateSaveLocation is, in the
    rehearsal, a directory of the rehearsal (``DIR/.rehearsal/shared/TIER``) bind-mounted at the tier's mount
    point into every controller (the kernel has no NFS; the roles write the fstab line and find the mount)."""
    controllers = slurm_roles(plan).controllers
    for need in (BACKUP_CONTROLLER, SHARED_STATE):
        if need.unmet(plan):
            raise RehearsalError(f"the failover scenario needs {need.what}", need.hint)
    found = state_tier(plan)
    tier = found[1]
    shared = state_dir(Path(out)) / "shared" / tier.name
    shared.mkdir(parents=True, exist_ok=True)
    return [replace(s, binds=tuple(s.binds) + ((str(shared), tier.mount),)) if s.name in controllers else s
            for s in specs]

@dataclass
class FailoverTimeout:
    """Before the converge: SlurmctldTimeout=10 in the rendered slurm.conf (a rehearsal change)."""

    seconds: int = CTLD_TIMEOUT_S
    name: str = "failover-timeout"

    def run(self, state: State, record: Record) -> None:
        set_conf(Path(state.dir) / "slurm" / "slurm.conf", "SlurmctldTimeout", self.seconds)

def merging(record: Record) -> Record:
    """``record`` that keeps every finding of a host recorded twice in one step (one host can be primary
    controller and accounting host): statuses joined (FAILED wins), seconds added, details and counts joined."""
    seen: dict[str, HostOutcome] = {}

    def merged(host: str, o: HostOutcome) -> None:
        prev = seen.get(host)
        if prev is not None:
            o = HostOutcome(FAILED if FAILED in (prev.status, o.status) else OK, prev.seconds + o.seconds,
                            f"{prev.detail}; {o.detail}", {**prev.counts, **o.counts})
        seen[host] = o
        record(host, o)

    return merged


@dataclass
class Failover:
    """kill -9 the primary slurmctld under a running job: the backup takes control within SlurmctldTimeout
    and still knows the job (the state both read on the shared tier); the primary comes back and takes
    control again; sacct lists the job before and after a slurmdbd restart."""

    cluster: Cluster
    timeout_s: int = CTLD_TIMEOUT_S
    name: str = "failover"

    def run(self, state: State, record: Record) -> None:
        self._run(state, merging(record))

    def _run(self, state: State, record: Record) -> None:
        primary, backup = self.cluster.controllers[:2]
        via = (self.cluster.login or (backup,))[0]
        up, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle" for h in self.cluster.compute)
                         or None, 90)
        if not up:
            raise StepFailed(f"compute nodes not idle: {[node_state(state, via, h) for h in self.cluster.compute]}")
        submitted = float(ssh_ok(state, primary, "date +%s.%N").strip())
        job, relaunched = submit_running(state, via, "-N1 -t 15 -J rehearse-failover --wrap 'sleep 600'",
                                         self.cluster.compute)
        # slurmctld writes job_state a few seconds after a change, not at once: kill -9 before that and the backup
        # has never heard of the job. Wait until the state file on the shared tier was written after the sbatch
        # (it then knows the job, PENDING or RUNNING; it is not written again while nothing changes).
        conf = (Path(state.dir) / "slurm" / "slurm.conf").read_text()
        ssd = re.search(r"(?m)^StateSaveLocation=(\S+)$", conf).group(1)
        saved, _ = wait_for(lambda: (float(ssh_ok(state, primary, f"stat -c %.9Y {shlex.quote(ssd)}/job_state")
                                           .strip()) > submitted) or None, 30)
        if not saved:
            raise StepFailed(f"{ssd}/job_state not written within 30 s of the sbatch of job {job}")
        ssh_ok(state, primary, "kill -9 $(pidof slurmctld)")
        limit = 2 * self.timeout_s + 15
        # in control: the backup answers for the job. A kill -9 can lose the primary's last state save, so the
        # backup may know a job it had just started as PENDING and start it again: known, then RUNNING.
        took = wait_for(lambda: (ping(state, via).get(backup) == "UP" and ping(state, via).get(primary) == "DOWN"
                                 and job_state(state, via, job) in ("RUNNING", "PENDING")) or None, limit)[1]
        known = job_state(state, via, job)
        if known not in ("RUNNING", "PENDING") or ping(state, via).get(primary) != "DOWN":
            record(backup, HostOutcome(FAILED, took, f"job {job} is {known!r} {limit} s after kill -9 of the "
                                                     f"primary; scontrol ping: {ping(state, via)}"))
            return
        # a job the backup knew as PENDING starts again once the nodes report its old allocation gone, and a job
        # slurmd requeued waits for its begin time: 150 s
        running, _ = wait_for(lambda: job_state(state, via, job) == "RUNNING" or None, 150)
        if not running:
            why = ssh(state, via, f"squeue -h -j {job} -o '%T %r %S'").stdout.strip()
            record(backup, HostOutcome(FAILED, took, f"job {job} known as {known} but not RUNNING 150 s later: "
                                                     f"{why!r}"))
            return
        log = ssh_ok(state, backup, "grep -h -i 'primary controller\\|takeover\\|took control' "
                                     "/var/log/slurm/slurmctld.log 2>/dev/null | tail -3 || true")
        record(backup, HostOutcome(OK, took, f"in control {took:.1f} s after kill -9 of {primary}, knew job {job} "
                                             f"as {known}, RUNNING; {log.strip()[-200:]}{relaunched}",
                                   {"takeover_seconds": round(took, 1), "relaunched": int(bool(relaunched))}))
        # the primary comes back and takes control again
        t1 = time.monotonic()
        ssh_ok(state, primary, "systemctl start slurmctld")
        back, took2 = wait_for(lambda: ping(state, via).get(primary) == "UP" or None, limit)
        # no `scontrol takeover`: it hands control to the *backup* and stops the primary (found by this
        # scenario); a primary that starts asks the backup to give control back by itself
        still = job_state(state, via, job)
        pids = ssh_ok(state, primary, "pidof slurmctld || true").strip()
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
        ssh_ok(state, host, "systemctl restart slurmdbd")
        after, took = wait_for(listed, 60)
        record(host, HostOutcome(OK if before and after else FAILED, took,
                                 f"sacct lists job {job} before ({bool(before)}) and after ({bool(after)}) a "
                                 "slurmdbd restart"))


class FailoverScenario(Scenario):
    name = "failover"
    proves = ("the backup slurmctld takes over a running job within SlurmctldTimeout after kill -9 of the primary, "
              "which takes control again when it returns; accounting survives a slurmdbd restart")
    needs = (STATIC_COMPUTE, BACKUP_CONTROLLER, SHARED_STATE, SLURM_AND_COMPUTE)

    def binds(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        return failover_specs(build.base, specs, build.output)

    def before_converge(self, build: Build) -> list:
        return [build.label(FailoverTimeout(), self.name)]

    def steps(self, build: Build) -> list:
        return [build.label(Failover(build.cluster), self.name)]
