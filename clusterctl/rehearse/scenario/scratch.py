"""``scratch``: the node-local scratch assembled from a data drive and mounted before slurmd, with jobs' /tmp and
enroot's data on it, and the free-space health check.

This machine has no NVMe for a node and its kernel no md or device-mapper, so before the first converge the
first compute node gets ONE loop device as its data drive (:mod:`clusterctl.rehearse.node.loop_dev`: a sparse
file, recorded in the state before the device is made, removed by ``down``), made as ``/dev/rehearsal-nvme0`` in
the node and named in the node's local facts; the rehearsal variables turn it into ``local_scratch_devices``
(deploy.REHEARSAL_VARS; every other node assembles nothing). The first converge runs the rendered local_scratch
role on it (the one-drive path: XFS, fstab, mount, slurmd's RequiresMountsFor= drop-in); the md RAID0 path is
tested as its commands (tests/test_local_scratch.py), not here. Then one step shows, on that node:

1. the scratch mounted (XFS on the stand-in, the fstab line by UUID with nofail) before slurmd started: the
   mount unit's activation before slurmd's start (systemd's monotonic timestamps) and slurmd requiring it;
2. a job's /tmp on it: ``srun`` writes its /tmp and ``findmnt -T /tmp`` there names XFS on the stand-in
   (job_container/tmpfs's BasePath under the scratch);
3. enroot's data and cache on it: the enroot_pyxis role's configuration tasks (enroot itself comes from GitHub,
   which a rehearsal cannot reach) write enroot.conf, whose ENROOT_DATA_PATH and ENROOT_CACHE_PATH, evaluated
   as a user the way enroot does, are directories on the stand-in;
4. the free-space check: the stand-in filled past the tier's ``min_free_percent``, the rendered health check
   drains the node naming the scratch; freed, the check returns it to service.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.scratch import Scratch, scratch, scratch_devices
from clusterctl.rehearse.node import loop_dev
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Need, Scenario
from clusterctl.rehearse.scenario.deploy import HARDWARE_ROLES, Cluster, run_playbook
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import node_state, ssh_ok, wait_for
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

STANDIN = "/dev/rehearsal-nvme0"
"""the stand-in data drive's device node in the node"""
STANDIN_BYTES = 512 * 2**20
"""the stand-in's size: above mkfs.xfs's smallest file system (300 MB since xfsprogs 5.19), sparse on this machine"""
FACTS = "/etc/ansible/facts.d/clusterctl_rehearsal.fact"
"""the node's local facts naming the stand-in (ansible_local.clusterctl_rehearsal.scratch_devices)"""
HEALTH_CONF = "/run/clusterctl-scratch-health.conf"
"""a configuration of the rendered health check with the scratch check alone (the node's own expects GPUs, RDMA
ports and mounts a rehearsal node lacks), draining"""


def _scratch_unmet(plan: ClusterPlan) -> str:
    if scratch(plan) is None:
        return "no node-local storage tier (storage: tier: local)"
    if not any(scratch_devices(plan, g) for g in plan.groups):
        return "no compute node type whose server has data NVMe in the catalog"
    return ""


SCRATCH_TIER = Need("a node-local tier on compute nodes with data NVMe", _scratch_unmet,
                    "add {name: scratch, tier: local, mount: /raid} to storage (blueprints/lab-2node.yaml)")


@dataclass
class ScratchStandin:
    """Before the first converge: a loop device on this machine as the first compute node's data drive."""

    host: str
    name: str = "standin"

    def run(self, state: State, record: Record) -> None:
        t0 = time.monotonic()
        device, major, minor = loop_dev.attach(state, f"{self.host}-nvme0", STANDIN_BYTES)
        ssh_ok(state, self.host, f"rm -f {STANDIN} && mknod -m 660 {STANDIN} b {major} {minor}")
        write_file(state, self.host, FACTS, json.dumps({"scratch_devices": [STANDIN]}) + "\n", mode="0644")
        record(self.host, HostOutcome(OK, time.monotonic() - t0, f"{STANDIN} = {device} ({major}:{minor}), "
                                      f"{STANDIN_BYTES // 2**20} MiB sparse", {"loop_device": device}))


def _monotonic(state: State, host: str, unit: str, prop: str) -> int:
    out = ssh_ok(state, host, f"systemctl show -p {prop} --value {shlex.quote(unit)}").strip()
    return int(out) if out.isdigit() else 0


@dataclass
class ScratchChecks:
    """The four checks of the module docstring, on the node with the stand-in."""

    cluster: Cluster
    tier: Scratch
    out: Path
    name: str = "scratch"

    def run(self, state: State, record: Record) -> None:
        host = self.cluster.compute[0]
        t0 = time.monotonic()
        figures: dict[str, object] = {}
        problems = self._mounted_first(state, host, figures)
        problems += self._job_tmp(state, host, figures)
        problems += self._enroot(state, host, figures)
        problems += self._free_space(state, host, figures)
        record(host, HostOutcome(FAILED if problems else OK, time.monotonic() - t0,
                                 "; ".join(problems) or f"{self.tier.mount}: XFS on {STANDIN}, mounted before "
                                 "slurmd; job /tmp, enroot data and cache on it; drained when full, resumed when "
                                 "freed", figures))
        if problems:
            raise StepFailed("; ".join(problems)[:600])

    def _mounted_first(self, state: State, host: str, figures: dict) -> list[str]:
        mount = self.tier.mount
        found = ssh_ok(state, host, f"findmnt -n -o FSTYPE,SOURCE --mountpoint {mount}").split()
        fstab = ssh_ok(state, host, f"awk '$2 == \"{mount}\"' /etc/fstab").strip()
        unit = ssh_ok(state, host, f"systemd-escape -p --suffix=mount {mount}").strip()
        mounted = _monotonic(state, host, unit, "ActiveEnterTimestampMonotonic")
        started = _monotonic(state, host, "slurmd.service", "ExecMainStartTimestampMonotonic")
        requires = ssh_ok(state, host, "systemctl show -p RequiresMountsFor --value slurmd.service").split()
        figures.update(mount_source=" ".join(found), fstab=fstab, mounted_us=mounted, slurmd_started_us=started)
        problems = []
        if found != ["xfs", STANDIN]:
            problems.append(f"{mount} is {found or 'not mounted'}, expected xfs on {STANDIN}")
        if not re.match(rf"^UUID=\S+ {re.escape(mount)} xfs \S*nofail\S* 0 0$", fstab):
            problems.append(f"fstab line {fstab!r}")
        if not (0 < mounted < started):
            problems.append(f"{unit} active at {mounted} us, slurmd started at {started} us (monotonic)")
        if mount not in requires:
            problems.append(f"slurmd.service RequiresMountsFor={' '.join(requires)}")
        return problems

    def _job_tmp(self, state: State, host: str, figures: dict) -> list[str]:
        via = (self.cluster.login or self.cluster.controllers)[0]
        cmd = (f"srun -N1 -w {host} -t 1 sh -c 'echo probe > /tmp/scratch-probe && cat /tmp/scratch-probe && "
               "findmnt -n -o FSTYPE,SOURCE -T /tmp'")
        r = ssh(state, via, cmd, timeout=120)
        # findmnt -T lists every mount stacked at /tmp, the node's tmpfs first: the job sees the last one
        lines = r.stdout.strip().splitlines()
        seen = f"{lines[0]} {' '.join(lines[-1].split())}" if len(lines) >= 2 else r.stdout.strip()
        figures["job_tmp"] = seen
        words = seen.split()
        if r.returncode != 0 or len(words) < 3 or words[:2] != ["probe", "xfs"] or not words[2].startswith(STANDIN):
            return [f"job /tmp: {cmd} exit {r.returncode}: {(r.stdout + r.stderr).strip()[-300:]}"]
        return []

    def _enroot(self, state: State, host: str, figures: dict) -> list[str]:
        run = run_playbook(state, [host], ident="scratch-enroot", extra_args=[
            "--tags", "enroot_pyxis", "-e", "enroot_pyxis_pyxis=false"],
            skip_tags=tuple(r for r in HARDWARE_ROLES if r != "enroot_pyxis") + ("install", "preflight"))
        figures["enroot_configure_seconds"] = round(run.seconds, 1)
        if run.rc != 0:
            return [f"enroot_pyxis configure: ansible-playbook exited {run.rc}: {run.failed.get(host, [])}"[:400]]
        problems = []
        for key in ("ENROOT_DATA_PATH", "ENROOT_CACHE_PATH"):
            script = (f"p=$(sed -n 's/^{key} //p' /etc/enroot/enroot.conf); eval \"p=$p\"; mkdir -p \"$p\" && "
                      "findmnt -n -o TARGET,FSTYPE -T \"$p\" && echo \"$p\"")
            r = ssh(state, host, f"runuser -u nobody -- sh -c {shlex.quote(script)}")
            got = r.stdout.split()
            figures[key.lower()] = " ".join(got)
            if r.returncode != 0 or got[:2] != [self.tier.mount, "xfs"]:
                problems.append(f"{key}: {(r.stdout + r.stderr).strip()[-200:]}")
        return problems

    def _free_space(self, state: State, host: str, figures: dict) -> list[str]:
        via, mount, percent = self.cluster.controllers[0], self.tier.mount, self.tier.min_free_percent
        program = re.search(r"(?m)^HealthCheckProgram=(\S+)$", (self.out / "slurm" / "slurm.conf").read_text())
        if program is None or percent == 0:
            return [f"no HealthCheckProgram in slurm.conf, or min_free_percent {percent}"]
        write_file(state, host, HEALTH_CONF, f"NODE_HEALTH_SCRATCH_MOUNT={shlex.quote(mount)}\n"
                   f"NODE_HEALTH_SCRATCH_MOUNTED=1\nNODE_HEALTH_SCRATCH_MIN_FREE_PERCENT={percent}\n"
                   "NODE_HEALTH_DRAIN=1\nNODE_HEALTH_DCGM=0\n", mode="0644")
        check = f"SLURMD_NODENAME={host} {program.group(1)} --config {HEALTH_CONF}"
        df = ssh_ok(state, host, f"df -P -k {mount} | awk 'NR == 2 {{ print $2, $4 }}'")
        size, avail = (int(x) for x in df.split())
        fill = avail - size * (percent // 2) // 100  # leaves half the threshold free
        ssh_ok(state, host, f"fallocate -l {fill}k {mount}/rehearsal-fill")
        full = ssh(state, host, check)
        def drain():
            st = node_state(state, via, host)
            return st if "DRAIN" in st[0].upper() else None

        drained, _ = wait_for(drain, 15)
        ssh_ok(state, host, f"rm -f {mount}/rehearsal-fill")
        freed = ssh(state, host, check)
        back, took2 = wait_for(lambda: node_state(state, via, host)[0].lower() == "idle" or None, 15)
        figures.update(fill_kib=fill, drain_reason=drained[1] if drained else "", resume_seconds=round(took2, 1))
        problems = []
        expected = f"node-health: scratch {mount} has "
        if full.returncode != 1 or not drained or not drained[1].startswith(expected):
            problems.append(f"filled: check exit {full.returncode} ({full.stderr.strip()[-200:]}), node "
                            f"{node_state(state, via, host)}, expected a drain reason '{expected}...'")
        if freed.returncode != 0 or not back:
            problems.append(f"freed: check exit {freed.returncode}, node {node_state(state, via, host)}")
        return problems


class ScratchScenario(Scenario):
    name = "scratch"
    proves = ("the data drive is assembled into XFS and mounted at the node-local tier before slurmd starts; a job's "
              "/tmp and enroot's data and cache are on it; the health check drains the node when it is full")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE, SCRATCH_TIER)

    def before_converge(self, build: Build) -> list:
        return [build.label(ScratchStandin(build.cluster.compute[0]), self.name)]

    def steps(self, build: Build) -> list:
        return [build.label(ScratchChecks(build.cluster, scratch(build.base), build.output), self.name)]
