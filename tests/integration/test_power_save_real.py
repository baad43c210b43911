"""The power-saving programs under a real slurmctld (Debian's slurm-wlm 22.05 on this machine): a job on a CLOUD
node makes slurmctld run clusterctl-resume, which creates the instance through the fake provider API; a create
the provider refuses sets the node POWER_DOWN_FORCE with a reason and the job is requeued; powering a node
down runs clusterctl-suspend, which terminates it.

No slurmd runs (no instance boots: the rehearsal's elastic cycle boots one); ResumeProgram/SuspendProgram are
two-line wrappers that give the installed program the test's root, fake-API directory and PATH, because
slurmctld runs them with almost no environment. SlurmUser=root here (the test owns no slurm account's files).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from clusterctl.targets.cloud_node import PROGRAMS
from tests.cloud.nodeprog import FAKE_CLOUD, NODE, calls
from tests.conftest import require
from tests.integration.test_slurm_real import free_ports

pytestmark = pytest.mark.slurm
NEEDED = ("munged", "slurmctld", "scontrol", "sbatch", "squeue")


def _require() -> None:
    missing = [n for n in NEEDED if shutil.which(n) is None]
    require(([f"missing {', '.join(missing)} (Debian slurm-wlm munge)"] if missing else []) +
            (["not running as root (munged needs it)"] if os.geteuid() != 0 else []))


WRAPPER = """#!/bin/sh
export CLUSTERCTL_POWER_SAVE_ROOT={root} CLUSTERCTL_FAKE_CLOUD_DIR={state} SLURM_CONF={conf}
export CLUSTERCTL_POWER_SAVE_PATH={bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec {root}/usr/local/sbin/clusterctl-{action} "$@"
"""


@pytest.fixture
def ctld(tmp_path):
    _require()
    base = tmp_path
    root, state, bin_dir = base / "root", base / "cloud", base / "bin"
    for d in ("state", "log", "run", "munge", "cloud", "bin", "root/usr/local/sbin", "root/etc/clusterctl"):
        (base / d).mkdir(parents=True)
    (base / "munge").chmod(0o755)
    for path, module in PROGRAMS.items():
        shutil.copy(NODE / module, root / "usr/local/sbin" / os.path.basename(path))
    for action in ("resume", "suspend", "resume-fail"):
        (root / f"usr/local/sbin/clusterctl-{action}").symlink_to("clusterctl-power-save")
    for cli in ("aws", "gcloud", "az"):
        (bin_dir / cli).symlink_to(FAKE_CLOUD)
    boot = {"version": 1, "provider": "aws", "region": "us-east-2", "config_url": "s3://b/clusterctl/config.tar.gz",
            "secrets": {"vault_munge_key": {"aws-ssm": "/clusterctl/pst/munge-key"}}, "timeout_s": 1800}
    (root / "etc/clusterctl/stack.json").write_text(json.dumps({
        "version": 1, "cluster": "pst", "provider": "aws", "region": "us-east-2", "zone": "us-east-2a",
        "bootstrap": boot, "elastic": {"gpu": {"hostlist": "c[1-2]", "instance_type": "p5.48xlarge", "aws": {
            "launch_template_id": "lt-1", "hosted_zone_id": "Z1", "dns_domain": "pst.internal"}}}}))
    (state / "failures.json").write_text(json.dumps({"c1": "no capacity (test)"}))
    conf = base / "slurm.conf"
    for action in ("resume", "suspend"):
        w = base / action
        w.write_text(WRAPPER.format(root=root, state=state, conf=conf, bin=bin_dir, action=action))
        w.chmod(0o755)
    ctld_port, slurmd_port = free_ports(2)
    conf.write_text("\n".join([
        "ClusterName=pst", f"SlurmctldHost={socket.gethostname().split('.')[0]}", "SlurmUser=root",
        f"SlurmctldPort={ctld_port}", f"SlurmdPort={slurmd_port}", "AuthType=auth/munge",
        f"AuthInfo=socket={base}/munge/munge.socket", f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/run", f"SlurmctldPidFile={base}/run/slurmctld.pid",
        f"SlurmctldLogFile={base}/log/slurmctld.log", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "MailProg=/bin/true", f"ResumeProgram={base}/resume", f"SuspendProgram={base}/suspend",
        "SuspendTime=600", "SuspendTimeout=30", "ResumeTimeout=600", "SlurmctldParameters=cloud_reg_addrs",
        "NodeName=c[1-2] CPUs=1 State=CLOUD", "PartitionName=p Nodes=c[1-2] Default=YES MaxTime=10", ""]))
    key = base / "munge/munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = []
    try:
        procs.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--socket={base}/munge/munge.socket", f"--key-file={key}",
             f"--pid-file={base}/munge/munged.pid", f"--log-file={base}/log/munged.log",
             f"--seed-file={base}/munge/munged.seed"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            start_new_session=True))
        wait(lambda: (base / "munge/munge.socket").exists(), "munged socket")
        procs.append(subprocess.Popen(["slurmctld", "-D", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.STDOUT, start_new_session=True))
        wait(lambda: subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True).stdout.count("UP"),
             "slurmctld")
        yield env, root, state
    finally:
        for p in reversed(procs):  # stopped by the ids this test started
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


def wait(cond, what: str, timeout: float = 45) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def node(env: dict, name: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "-o", "show", "node", name], env=env, capture_output=True, text=True).stdout
    state = re.search(r"\bState=(\S+)", out)
    reason = re.search(r"\bReason=(.*)$", out.strip())
    return {"State": state.group(1) if state else "", "Reason": reason.group(1) if reason else ""}


def about(call: dict, host: str) -> bool:
    """a describe-instances filter or run-instances tag of ``host`` (temporary file names are random)"""
    return any(f'"Value":"{host}"' in a for a in call["argv"]) or \
        f"Name=tag:clusterctl:hostname,Values={host}" in call["argv"]


def job_state(env: dict, job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=env, capture_output=True,
                          text=True).stdout.strip()


def test_resume_failure_and_the_power_saving_calls_under_real_slurmctld(ctld):
    env, root, state = ctld
    log = root / "var/log/slurm/clusterctl-power-save.log"

    def sbatch(host: str) -> str:
        r = subprocess.run(["sbatch", "--parsable", "-w", host, "--wrap", "hostname"], env=env, capture_output=True,
                           text=True, cwd="/tmp")
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    # the provider refuses c1: the resume program marks it, slurmctld requeues the job and powers the node down
    j1 = sbatch("c1")
    wait(lambda: "clusterctl: resume failed" in node(env, "c1").get("Reason", ""), "c1 marked")
    c1 = node(env, "c1")
    assert "InsufficientInstanceCapacity" in c1["Reason"] and "CLOUD" in c1["State"]
    assert "POWER" in c1["State"] and "IDLE" in c1["State"], c1["State"]  # IDLE+CLOUD+POWERING_DOWN / POWERED_DOWN
    assert job_state(env, j1) == "PENDING"  # requeued, not waiting ResumeTimeout (600 s) on a node that never comes
    wait(lambda: "suspend: c1: suspend ok" in log.read_text(), "slurmctld's suspend of c1")

    # c2 is created: run-instances with its user data and its DNS record; the node waits for its slurmd
    j2 = sbatch("c2")
    wait(lambda: (state / "requests").is_dir() and any((state / "requests").glob("*-create-c2.json")), "c2 created")
    assert "POWERING_UP" in node(env, "c2")["State"] and job_state(env, j2) in ("CONFIGURING", "PENDING")
    created = [c["argv"][:2] for c in calls(state) if about(c, "c2")]
    assert created == [["ec2", "describe-instances"], ["ec2", "run-instances"]]
    # powering it down (what SuspendTime does after the job) runs the suspend program: terminate, DNS delete
    subprocess.run(["scancel", j2], env=env, check=True)
    subprocess.run(["scontrol", "update", "NodeName=c2", "State=POWER_DOWN_FORCE"], env=env, check=True)
    # the suspend program terminates (its request file), then deletes the DNS record: wait for both calls
    wait(lambda: any((state / "requests").glob("*-delete-c2.json")) and any(
        c["argv"][:2] == ["route53", "change-resource-record-sets"]
        and '"Action": "DELETE"' in "".join((c.get("files") or {}).values()) for c in calls(state)),
        "c2 deleted and its DNS record")
    last = calls(state)[-3:]
    assert [c["argv"][:2] for c in last] == [["ec2", "describe-instances"], ["ec2", "terminate-instances"],
                                             ["route53", "change-resource-record-sets"]]
    assert about(last[0], "c2") and '"Action": "DELETE"' in next(iter(last[2]["files"].values()))
    subprocess.run(["scancel", j1], env=env, check=False)
    assert "Traceback" not in log.read_text()

