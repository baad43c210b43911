"""``node-failure``: after a converge, a compute node loses a GPU stand-in device; the rendered health check
(``HealthCheckProgram``, run by slurmd every ``HealthCheckInterval``) must drain it with a reason within the
interval; once the device is back, the node must return to service by itself. Then the same failure meets a
job first: the node_health prolog must drain the node (reason ``node-health: prolog of job N``), Slurm must
requeue the job held, and the health check must return the repaired node to service.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Scenario
from clusterctl.rehearse.scenario.deploy import NVIDIA_MAJOR, Cluster, commented_vars, run_playbook, vars_file
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import node_state, rewrite_rendered, sbatch, ssh_ok, wait_for
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

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
    "node_health_nvlink_fabric": (False, "no NVLink fabric: the nvidia-smi stand-in answers -L only"),
    "node_health_nvlink_clique": (False, "no multi-node NVLink partition in a rehearsal node"),
    "node_health_scratch_min_free_percent": (0, "a rehearsal node's scratch is this machine's disk, or the scratch "
                                             "scenario's stand-in, whose check that scenario shows"),
}

def _set_interval(conf: Path, seconds: int) -> None:
    text = conf.read_text()
    new, n = re.subn(r"(?m)^HealthCheckInterval=\d+$", f"HealthCheckInterval={seconds}", text)
    if n != 1:
        raise StepFailed(f"{conf}: no HealthCheckInterval line to shorten")
    rewrite_rendered(conf, new)


@dataclass
class HealthInterval:
    """Before the first converge: a short HealthCheckInterval in the rendered slurm.conf, so the converge installs
    it and no later run has to push slurm.conf for it. Until the health setup the check reports only (the
    rehearsal's ``node_health_drain: false``)."""

    interval_s: int = HEALTH_INTERVAL_S
    name: str = "health-interval"

    def run(self, state: State, record: Record) -> None:
        _set_interval(Path(state.dir) / "slurm" / "slurm.conf", self.interval_s)


@dataclass
class HealthSetup:
    """The health check made to drain (no RDMA and mount expectations a node cannot meet) and nvidia-smi stand-ins
    listing each compute node's GPU stand-in devices: the node_health role again on the compute nodes (the short
    HealthCheckInterval came with the first converge: :class:`HealthInterval`)."""

    cluster: Cluster
    name: str = "health-setup"

    def run(self, state: State, record: Record) -> None:
        vars_path = vars_file(state, NodeFailureScenario.name)
        write_text_atomic(vars_path, commented_vars(
            "clusterctl rehearsal: node-failure scenario (clusterctl/rehearse/scenario/node_failure.py)", HEALTH_VARS))
        for h in self.cluster.compute:
            write_file(state, h, "/usr/bin/nvidia-smi", NVIDIA_SMI_STANDIN, mode="0755")
            r = ssh(state, h, "nvidia-smi -L | wc -l")
            if r.returncode != 0 or r.stdout.strip() != str(self.cluster.gpus.get(h, 0)):
                record(h, HostOutcome(FAILED, 0.0, f"nvidia-smi stand-in lists {r.stdout.strip()!r} GPUs: "
                                                   f"{r.stderr.strip()[-200:]}"))
        hosts = list(self.cluster.compute)
        # only the role that reads what changed (the check's expectations), on the nodes it runs on; every compute
        # node at once: a setup, not a rollout (the add-node scenario shows the rolling batches)
        run = run_playbook(state, hosts, ident="health-setup", extra_args=[
            "-e", f"@{vars_path}", "-e", "clusterctl_rolling_batch=100%", "--tags", "node_health"])
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
            job = sbatch(state, via, f"-N1 -w {victim} -t 5 -J rehearse-prolog --wrap 'sleep 30'")

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


class NodeFailureScenario(Scenario):
    name = "node-failure"
    proves = ("the rendered health check drains a node that lost a GPU and returns it once repaired; the prolog "
              "drains it under a job, which Slurm requeues held")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE)

    def before_converge(self, build: Build) -> list:
        return [build.label(HealthInterval(), self.name)]

    def steps(self, build: Build) -> list:
        return [build.label(s, self.name) for s in
                (HealthSetup(build.cluster), NodeFailure(build.cluster), PrologFailure(build.cluster))]
