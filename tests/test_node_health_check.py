"""roles/node_health/files/node-health-check.sh with stand-in nvidia-smi and scontrol on PATH: it drains an
unhealthy node with a reason, and resumes a node it drained itself once healthy again (found by the
node-failure rehearsal: a repaired node stayed drained), but never one drained for another reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "roles" / "node_health" / "files" / "node-health-check.sh"


def run_check(tmp: Path, gpus_seen: int, slurm_state: str, reason: str) -> tuple[int, list[str], str]:
    """Run the check expecting 2 GPUs; return (exit code, scontrol update calls, stderr)."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp / "scontrol.log"
    log.write_text("")
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\n" + "".join(f"echo 'GPU {i}: stand-in'\n" for i in range(gpus_seen)))
    (bin_ / "scontrol").write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = show ]; then echo 'NodeName=n1 Arch=x86_64 State={slurm_state} ThreadsPerCore=1"
        + (f" Reason={reason} [root@2026-12-01T04:00:00]" if reason else "") + "'; exit 0; fi\n"
        f"echo \"$*\" >> {log}\n")
    for p in bin_.iterdir():
        p.chmod(0o755)
    conf = tmp / "node-health.conf"
    conf.write_text("NODE_HEALTH_GPU_COUNT=2\nNODE_HEALTH_RDMA_PORT_COUNT=0\nNODE_HEALTH_RDMA_RATE_GBPS=0\n"
                    "NODE_HEALTH_MOUNTS=()\nNODE_HEALTH_DRAIN=1\n")
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
