"""roles/node_health/files/node-health-check.sh with stand-in nvidia-smi and scontrol on PATH: it drains an
unhealthy node with a reason, and resumes a node it drained itself once healthy again (found by the
node-failure rehearsal: a repaired node stayed drained), but never one drained for another reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "roles" / "node_health" / "files" / "node-health-check.sh"


def run_check(tmp: Path, gpus_seen: int, slurm_state: str, reason: str, smi_sleep: int = 0,
              extra_conf: str = "") -> tuple[int, list[str], str]:
    """Run the check expecting 2 GPUs; return (exit code, scontrol update calls, stderr)."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp / "scontrol.log"
    log.write_text("")
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\n" + (f"sleep {smi_sleep}\n" if smi_sleep else "") + "".join(f"echo 'GPU {i}: stand-in'\n" for i in range(gpus_seen)))
    (bin_ / "scontrol").write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = show ]; then echo 'NodeName=n1 Arch=x86_64 State={slurm_state} ThreadsPerCore=1"
        + (f" Reason={reason} [root@2026-12-01T04:00:00]" if reason else "") + "'; exit 0; fi\n"
        f"echo \"$*\" >> {log}\n")
    for p in bin_.iterdir():
        p.chmod(0o755)
    conf = tmp / "node-health.conf"
    conf.write_text("NODE_HEALTH_GPU_COUNT=2\nNODE_HEALTH_RDMA_PORT_COUNT=0\nNODE_HEALTH_RDMA_RATE_GBPS=0\n"
                    "NODE_HEALTH_MOUNTS=()\nNODE_HEALTH_DRAIN=1\n" + extra_conf)
    env = {**os.environ, "PATH": f"{bin_}:/usr/bin:/bin", "SLURMD_NODENAME": "n1"}
    r = subprocess.run(["bash", str(SCRIPT), "--config", str(conf)], capture_output=True, text=True, env=env,
                       timeout=30, check=False)
    return r.returncode, log.read_text().splitlines(), r.stderr


def test_unhealthy_node_is_drained_with_the_problem_as_reason(tmp_path):
    rc, calls, err = run_check(tmp_path, 1, "IDLE", "")
    assert rc == 1 and "nvidia-smi lists 1 GPUs, expected 2" in err
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: nvidia-smi lists 1 GPUs, expected 2"]


def test_healthy_node_the_check_drained_is_resumed(tmp_path):
    rc, calls, _ = run_check(tmp_path, 2, "IDLE+DRAIN", "node-health: nvidia-smi lists 1 GPUs, expected 2")
    assert rc == 0
    assert calls == ["update NodeName=n1 State=RESUME"]


def test_healthy_node_drained_by_an_operator_stays_drained(tmp_path):
    rc, calls, _ = run_check(tmp_path, 2, "IDLE+DRAIN", "replacing DIMM B2")
    assert rc == 0 and calls == []


def test_healthy_node_not_drained_is_left_alone(tmp_path):
    rc, calls, _ = run_check(tmp_path, 2, "IDLE", "")
    assert rc == 0 and calls == []


def test_hung_nvidia_smi_drains_instead_of_the_check_being_killed(tmp_path):
    """A hung GPU makes nvidia-smi hang: the check must give up on it before slurmd kills the check (60 s),
    and drain. (It used `timeout 60`, so slurmd killed the check first and nothing drained.)"""
    import time

    t0 = time.monotonic()
    rc, calls, err = run_check(tmp_path, 2, "IDLE", "", smi_sleep=300, extra_conf="NODE_HEALTH_GPU_TIMEOUT_S=2\n")
    assert time.monotonic() - t0 < 15
    assert rc == 1 and "nvidia-smi did not answer within 2 s" in err
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: nvidia-smi did not answer within 2 s "
                     "(hung GPU or driver)"]


def test_every_timeout_of_the_check_fits_slurmds_60_s_limit():
    """Worst case with defaults: nvidia-smi timeout + its kill grace + four mounts + scontrol < 60 s."""
    import re

    text = SCRIPT.read_text()
    gpu = int(re.search(r"(?m)^NODE_HEALTH_GPU_TIMEOUT_S=(\d+)$", text).group(1))
    kill = int(re.search(r"timeout -k (\d+) \"\$NODE_HEALTH_GPU_TIMEOUT_S\" nvidia-smi", text).group(1))
    mount = int(re.search(r"timeout (\d+) mountpoint", text).group(1))
    scontrol = int(re.search(r"timeout (\d+) scontrol", text).group(1))
    assert gpu + kill + 4 * mount + scontrol < 60
    assert "timeout 60" not in text
