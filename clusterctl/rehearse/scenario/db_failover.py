"""``db-failover``: power the primary accounting host off (as its BMC would). Jobs still start (on the backup
controller when that host is also the primary controller); the backup slurmdbd records them in the database on
its own host (its StorageHost, and the jobs' rows read from its MariaDB), not on the stopped one; when the host
returns, its MariaDB catches up from the backup's (GTID replication) and ``sacct`` on it lists the jobs run
during the outage; the rendered dump unit writes a dump that restores into a scratch database with the same rows.

Needs the accounting database on a replicated pair (``slurm.accounting_backup_host``, the default
``accounting_database: replicated``: docs/slurm.md, "Accounting database").
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from clusterctl.plan.accounting import accounting_database
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.slurm import state_tier
from clusterctl.rehearse.node import lifecycle
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import (BACKUP_CONTROLLER, SHARED_STATE, SLURM_AND_COMPUTE, Build, Need,
                                               Scenario)
from clusterctl.rehearse.scenario.deploy import Cluster
from clusterctl.rehearse.scenario.failover import FailoverTimeout, failover_specs, merging
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import (JOB_START_TIMEOUT_S, launch_failure, node_state, ping, sbatch,
                                                   ssh_ok, wait_for)
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed
from clusterctl.targets.slurm import LOG_FILES
from clusterctl.targets.slurm_accounting import DUMP_DIR, STORAGE_LOC

DBD_LOG = LOG_FILES["slurmdbd"]
"""slurmdbd.conf LogFile as rendered"""
DBD_STANDBY = "Primary has come back|Backup has given up control|running in background mode|Taking Control"
"""the backup slurmdbd's log lines of its standby loop (slurmdbd's backup.c and slurmdbd.c)"""
OUTAGE_JOBS = 2
"""jobs submitted while the accounting host is off"""
RESTORE_DB = "clusterctl_restore_check"
"""the scratch database a dump is restored into (dropped again; never in a replicated pair's binary log)"""


def _replicated_pair(plan: ClusterPlan) -> str:
    db = accounting_database(plan)
    if db is None or not db.replicated:
        return "the slurmdbd hosts are not a replicated pair (one slurmdbd, database_host, or accounting_database: " \
               "primary)"
    return ""


def _controller_backup(plan: ClusterPlan) -> str:
    """A primary accounting host that is also a controller can only be stopped with a backup controller and the
    controllers' state on a shared tier (else no job starts while it is off)."""
    db = accounting_database(plan)
    if db is None or db.servers[0] not in slurm_roles(plan).controllers:
        return ""
    return BACKUP_CONTROLLER.unmet(plan) or SHARED_STATE.unmet(plan)


REPLICATED_PAIR = Need("two slurmdbd hosts with their own replicating databases", _replicated_pair,
                       "rehearse blueprints/lab-ha.yaml, or set slurm.accounting_backup_host")
CONTROLLER_BACKUP = Need("a backup controller with shared state when the accounting host is a controller",
                         _controller_backup, "name two hosts in slurm.controllers, StateSaveLocation on a shared tier")


def mariadb(state: State, host: str, sql: str) -> str:
    """One SQL statement's rows on ``host``'s MariaDB as root (unix socket), tab-separated, no header."""
    return ssh_ok(state, host, f"mariadb --batch --skip-column-names -e {shlex.quote(sql)}").strip()


def job_rows(state: State, host: str, table: str, jobs: list[str]) -> int:
    """How many of ``jobs`` have a row in ``table`` of the accounting database on ``host``."""
    ids = ",".join(jobs)
    return int(mariadb(state, host, f"SELECT COUNT(DISTINCT id_job) FROM {STORAGE_LOC}.`{table}` "
                                    f"WHERE id_job IN ({ids})") or 0)


@dataclass
class DbFailover:
    """The step: outage, jobs during it, the backup's own database, catch-up on return, a dump that restores."""

    cluster: Cluster
    primary: str
    backup: str
    name: str = "db-failover"

    def run(self, state: State, record: Record) -> None:
        record = merging(record)  # the primary: its return, then the dump
        conf = (Path(state.dir) / "slurm" / "slurm.conf").read_text()
        table = re.search(r"(?m)^ClusterName=(\S+)$", conf).group(1).lower() + "_job_table"
        via = (self.cluster.login or (self.backup,))[0]
        idle, _ = wait_for(lambda: all(node_state(state, via, h)[0].lower() == "idle"
                                       for h in self.cluster.compute) or None, 90)
        if not idle:
            raise StepFailed(f"compute nodes not idle: {[node_state(state, via, h) for h in self.cluster.compute]}")
        self._state_saved(state, conf, via)
        revived = self._backup_in_standby(state)
        storage = ssh_ok(state, self.backup, "grep -h '^StorageHost=' /etc/slurm/slurmdbd.conf").strip()
        source = mariadb(state, self.backup, "SHOW SLAVE STATUS")  # the backup replicates the primary's
        off = lifecycle.power_off(state, self.primary)
        try:
            jobs, took = self._outage_jobs(state, via, table)
        except StepFailed:  # the scenarios after this one expect the host running
            lifecycle.power_on(state, self.primary, inband_address=True)
            raise
        record(self.backup, HostOutcome(OK, took, f"{self.primary} off ({off:.1f} s); {len(jobs)} jobs "
                                                  f"({','.join(jobs)}) ran, their rows in {self.backup}'s own "
                                                  f"database ({storage}; replica of "
                                                  f"{self.primary if self.primary in source else '?'}){revived}",
                                        {"outage_jobs": len(jobs), "outage_seconds": round(took, 1),
                                         "backup_dbd_restarted": int(bool(revived))}))
        self._return(state, record, table, jobs)
        self._dump(state, record, table)

    def _backup_in_standby(self, state: State) -> str:
        """'' when the backup slurmdbd waits in standby; else restart it and say why. slurmdbd 22.05.8 (Debian 12)
        can hang in its handover when the primary returns within a second of its takeover (the failover scenario's
        slurmdbd restart): its log ends at "Primary has come back" without "Backup has given up control" (slurmdbd.c
        joins its RPC threads in between), and it then never takes control again (found by this scenario)."""
        last = ssh(state, self.backup, f"grep -E '{DBD_STANDBY}' {DBD_LOG} | tail -n 1").stdout
        if "Primary has come back" not in last:
            return ""
        # a hung slurmdbd does not stop on SIGTERM within systemd's stop timeout: kill it, start it again
        ssh_ok(state, self.backup, "systemctl kill -s KILL slurmdbd; sleep 1; systemctl restart slurmdbd")
        standby, _ = wait_for(lambda: "running in background mode" in ssh(
            state, self.backup, f"grep -E '{DBD_STANDBY}' {DBD_LOG} | tail -n 1").stdout or None, 60)
        if not standby:
            raise StepFailed(f"the backup slurmdbd on {self.backup} is not in standby 60 s after its restart")
        return ("; its slurmdbd had hung after the primary's return (log ended at 'Primary has come back'): killed "
                "and started before the outage")

    def _state_saved(self, state: State, conf: str, via: str) -> None:
        """Make the primary save its job state after every job has ended, and wait for that save: a backup that
        takes over from an older file believes the last job still runs and holds its nodes until the job's time
        limit (found by this scenario). A job's EndTime is set when it starts COMPLETING, so a save at or after
        EndTime can still hold its steps (a loaded run did: the backup recovered the users scenario's srun job with
        its steps, and the outage jobs stayed PENDING). So: wait until no job runs or completes, then change the job
        state (a held job, cancelled: slurmctld saves job_state a few seconds after a change) and wait until
        job_state is newer than that change."""
        ssd = shlex.quote(re.search(r"(?m)^StateSaveLocation=(\S+)$", conf).group(1) + "/job_state")
        ended, _ = wait_for(lambda: ssh(state, via, "squeue -h -t R,CG,CF -o %i").stdout.strip() == "" or None,
                            JOB_START_TIMEOUT_S)
        if not ended:
            raise StepFailed(f"jobs still running or completing before the outage: "
                             f"{ssh(state, via, 'squeue -h -t R,CG,CF -o %i:%T').stdout.split()}")
        changed = float(ssh_ok(state, self.primary, "date +%s.%N").strip())
        held = sbatch(state, via, "-H -N1 -t 1 -J rehearse-db-failover-save --wrap true")
        ssh_ok(state, via, f"scancel {held}")
        saved, _ = wait_for(lambda: float(ssh_ok(state, self.primary, f"stat -c %.9Y {ssd}").strip()) > changed
                            or None, 30)
        if not saved:
            raise StepFailed(f"{ssd} on {self.primary} not written within 30 s of a change of the job state")

    def _outage_jobs(self, state: State, via: str, table: str) -> tuple[list[str], float]:
        """Submit jobs while the primary is off; each completes, and its row is in the backup's database."""
        t0 = time.monotonic()
        ctl, _ = wait_for(lambda: ping(state, via) == {self.primary: "DOWN", self.backup: "UP"} or None, 60)
        if not ctl:
            raise StepFailed(f"no controller answers with {self.primary} off: {ping(state, via)}")
        jobs = [self._submit(state, via, f"rehearse-db-failover-{i}") for i in range(OUTAGE_JOBS)]
        done, _ = wait_for(lambda: all("JobState=COMPLETED" in ssh(state, via, f"scontrol show job {j}").stdout
                                       for j in jobs) or None, JOB_START_TIMEOUT_S)
        if not done:
            states = {j: " ".join(ssh(state, via, f"scontrol show job {j} | grep -oE '(JobState|Reason)=[^ ]*'")
                                  .stdout.split()) for j in jobs}
            unfinished = [j for j in jobs if "JobState=COMPLETED" not in states[j]]
            raise StepFailed(f"jobs did not complete with {self.primary} off: {states}"
                             + "".join(launch_failure(state, via, j, self.cluster.compute) for j in unfinished)[:1200])
        rows, _ = wait_for(lambda: job_rows(state, self.backup, table, jobs) == len(jobs) or None, 60)
        if not rows:
            raise StepFailed(f"the jobs {jobs} have no rows in {self.backup}'s accounting database "
                             f"({job_rows(state, self.backup, table, jobs)} of {len(jobs)})")
        return jobs, time.monotonic() - t0

    @staticmethod
    def _submit(state: State, via: str, name: str) -> str:
        """sbatch, again until the backup controller has taken control (SlurmctldTimeout) and accepts it."""
        cmd = f"sbatch --parsable -N1 -t 2 -J {name} --wrap hostname"
        done, _ = wait_for(lambda: (r := ssh(state, via, cmd)).returncode == 0 and r.stdout.strip() or None, 60, 2)
        if not done:
            raise StepFailed(f"sbatch on {via} refused for 60 s: {ssh(state, via, cmd).stderr.strip()[-200:]}")
        return done.split(";")[0]

    def _return(self, state: State, record: Record, table: str, jobs: list[str]) -> None:
        """Power the primary on: its MariaDB catches up and sacct on it lists the outage's jobs."""
        t0 = time.monotonic()
        lifecycle.power_on(state, self.primary, inband_address=True)
        up, _ = wait_for(lambda: ssh(state, self.primary, "systemctl is-active mariadb slurmdbd", timeout=10)
                         .stdout.split() == ["active", "active"] or None, 90)
        caught, _ = wait_for(lambda: up and job_rows(state, self.primary, table, jobs) == len(jobs) or None, 60)
        listed, _ = wait_for(lambda: caught and all(
            j in ssh(state, self.primary, f"sacct -n -X -j {j} -o JobID").stdout for j in jobs) or None, 60)
        took = time.monotonic() - t0
        detail = (f"back after {took:.1f} s: mariadb and slurmdbd {'active' if up else 'NOT active'}, rows of "
                  f"{job_rows(state, self.primary, table, jobs) if up else '?'} of {len(jobs)} outage jobs "
                  f"replicated, sacct lists {'them' if listed else 'NOT all of them'}")
        record(self.primary, HostOutcome(OK if listed else FAILED, took, detail, {"catch_up_seconds": round(took, 1)}))
        if not listed:
            raise StepFailed(detail)

    def _dump(self, state: State, record: Record, table: str) -> None:
        """Run the rendered dump unit once and restore its dump into a scratch database: same job rows."""
        t0 = time.monotonic()
        script = (Path(state.dir) / DUMP_DIR / "slurmdbd-dump").read_text()
        directory = re.search(r"(?m)^directory=(\S+)$", script).group(1)
        ssh_ok(state, self.primary, "systemctl start slurmdbd-dump.service", timeout=120)
        dump = ssh_ok(state, self.primary, f"ls -t {directory}/{STORAGE_LOC}-*.sql.gz | head -n 1").strip()
        nolog = "SET SESSION sql_log_bin = 0;"  # the scratch database stays on this host
        mariadb(state, self.primary, f"{nolog} DROP DATABASE IF EXISTS {RESTORE_DB}; CREATE DATABASE {RESTORE_DB}")
        ssh_ok(state, self.primary, f"(echo {shlex.quote(nolog)}; zcat {shlex.quote(dump)}) | mariadb {RESTORE_DB}",
               timeout=120)
        restored = mariadb(state, self.primary, f"SELECT COUNT(*) FROM {RESTORE_DB}.`{table}`")
        live = mariadb(state, self.primary, f"SELECT COUNT(*) FROM {STORAGE_LOC}.`{table}`")
        mariadb(state, self.primary, f"{nolog} DROP DATABASE {RESTORE_DB}")
        ok = restored == live and int(live) > 0
        record(self.primary, HostOutcome(OK if ok else FAILED, time.monotonic() - t0,
                                         f"dump {dump} restored: {restored} job rows (live database: {live})",
                                         {"restored_job_rows": int(restored)}))


class DbFailoverScenario(Scenario):
    name = "db-failover"
    proves = ("with the accounting host powered off jobs still start and the backup slurmdbd records them in its own "
              "host's database; the returned host catches up and sacct lists them; the rendered dump restores")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE, REPLICATED_PAIR, CONTROLLER_BACKUP)

    def binds(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """The controllers' shared state, bound as the failover scenario binds it (once, when both run)."""
        found = state_tier(build.base)
        if not slurm_roles(build.base).has_backup_controller or found is None:
            return specs
        if any(target == found[1].mount for s in specs for _, target in s.binds):
            return specs
        return failover_specs(build.base, specs, build.output)

    def before_converge(self, build: Build) -> list:
        return [build.label(FailoverTimeout(), self.name)]

    def steps(self, build: Build) -> list:
        servers = accounting_database(build.base).servers
        return [build.label(DbFailover(build.cluster, servers[0], servers[1]), self.name)]
