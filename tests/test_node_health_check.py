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
    assert time.monotonic() - t0 < 60  # gave up on nvidia-smi (sleeping 300 s) before slurmd's 60 s kill
    assert rc == 1 and "nvidia-smi did not answer within 2 s" in err
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: nvidia-smi did not answer within 2 s "
                     "(hung GPU or driver)"]


def test_every_timeout_of_the_check_fits_slurmds_60_s_limit():
    """Worst case with defaults: nvidia-smi timeout + its kill grace + four mounts + Fabric Manager and IMEX +
    the kernel log + dcgmi health (two calls) + scontrol < 60 s."""
    import re

    text = SCRIPT.read_text()
    gpu = int(re.search(r"(?m)^NODE_HEALTH_GPU_TIMEOUT_S=(\d+)$", text).group(1))
    kill = int(re.search(r"timeout -k (\d+) \"\$NODE_HEALTH_GPU_TIMEOUT_S\" nvidia-smi", text).group(1))
    mount = int(re.search(r"timeout (\d+) mountpoint", text).group(1))
    scontrol = int(re.search(r"timeout (\d+) scontrol", text).group(1))
    service = int(re.search(r"timeout (\d+) systemctl is-active", text).group(1))
    klog = int(re.search(r"timeout (\d+) dmesg", text).group(1))
    dcgm = [int(t) for t in re.findall(r"timeout (\d+) dcgmi health", text)]
    assert len(dcgm) == 2
    assert gpu + kill + 4 * mount + 2 * service + klog + sum(dcgm) + scontrol < 60
    assert "timeout 60" not in text


# --- GPU cluster checks: Fabric Manager, IMEX, Xids, DCGM, the prolog mode ---------------------------------

def run_gpu_check(tmp: Path, *, conf: str = "", dmesg: str = "", dcgmi: str | None = None, running: str = "",
                  args: tuple[str, ...] = (), gpus: int = 2, env: dict | None = None) -> tuple[int, list[str], str, str]:
    """The check on a healthy 2-GPU node (stand-in nvidia-smi), with a stand-in kernel log (dmesg), dcgmi
    (a shell body; None: not installed) and pgrep (which process names run); (rc, scontrol updates, out, err)."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp / "scontrol.log"
    log.write_text("")
    stand_ins = {
        "nvidia-smi": "".join(f"echo 'GPU {i}: stand-in'\n" for i in range(gpus)),
        "scontrol": ("if [ \"$1\" = show ]; then echo 'NodeName=n1 State=IDLE ThreadsPerCore=1'; exit 0; fi\n"
                     f"echo \"$*\" >> {log}\n"),
        "dmesg": f"cat {tmp / 'kmsg'}\n",
        "pgrep": f"for a; do case \" {running} \" in *\" $a \"*) exit 0 ;; esac; done; exit 1\n",
    }
    (tmp / "kmsg").write_text(dmesg)
    if dcgmi is not None:
        stand_ins["dcgmi"] = dcgmi
    for name, body in stand_ins.items():
        (bin_ / name).write_text("#!/bin/bash\n" + body)
        (bin_ / name).chmod(0o755)
    cfg = tmp / "node-health.conf"
    cfg.write_text(f"NODE_HEALTH_GPU_COUNT={gpus}\nNODE_HEALTH_MOUNTS=()\nNODE_HEALTH_DRAIN=1\n" + conf)
    r = subprocess.run(["bash", str(SCRIPT), "--config", str(cfg), *args], capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{bin_}:/usr/bin:/bin", "SLURMD_NODENAME": "n1", **(env or {})},
                       timeout=30, check=False)
    return r.returncode, log.read_text().splitlines(), r.stdout, r.stderr


XID_79 = "[  812.1] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n"


def test_a_critical_xid_since_boot_drains(tmp_path):
    kmsg = ("[  10.0] NVRM: Xid (PCI:0000:18:00): 13, pid=99, Graphics Exception\n"  # an application's: ignored
            + XID_79 + XID_79.replace("18:00", "2a:00"))
    rc, calls, _, err = run_gpu_check(tmp_path, dmesg=kmsg)
    assert rc == 1
    assert "Xid 79 since boot on PCI:0000:18:00 PCI:0000:2a:00" in err and "Xid 13" not in err
    assert calls[0].startswith("update NodeName=n1 State=DRAIN Reason=node-health: Xid 79 since boot")


def test_xids_outside_the_list_do_not_drain(tmp_path):
    rc, calls, _, _ = run_gpu_check(tmp_path, dmesg=XID_79, conf="NODE_HEALTH_XIDS=(48 95)\n")
    assert rc == 0 and calls == []


def test_fabric_manager_and_imex_must_run_where_expected(tmp_path):
    conf = "NODE_HEALTH_FABRIC_MANAGER=1\nNODE_HEALTH_IMEX=1\n"
    rc, calls, _, err = run_gpu_check(tmp_path, conf=conf)
    assert rc == 1
    assert "nvidia-fabricmanager is not running (NVSwitch system)" in err
    assert "nvidia-imex is not running (multi-node NVLink domain)" in err
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: nvidia-fabricmanager is not running "
                     "(NVSwitch system) (+1 more)"]
    # pgrep sees the kernel's 15-character process name (comm): nv-fabricmanager runs as nv-fabricmanage
    rc, calls, _, _ = run_gpu_check(tmp_path, conf=conf, running="nv-fabricmanage nvidia-imex")
    assert rc == 0 and calls == []


def test_dcgm_health_failure_drains_and_a_missing_dcgmi_is_said(tmp_path):
    failing = ('[ "$2" = -c ] && printf "+----+\\n| Overall Health | Failure |\\n| GPU 3 | NVLink: Failure |\\n"\n'
               "exit 0\n")
    rc, calls, _, err = run_gpu_check(tmp_path, dcgmi=failing)
    assert rc == 1 and "dcgmi health -c reports Failure" in err
    (tmp_path / "b").mkdir()
    rc, calls, out, _ = run_gpu_check(tmp_path / "b")  # no dcgmi
    assert rc == 0 and calls == []
    assert "node-health-check: not checked: DCGM health (dcgmi not installed)" in out


def test_no_gpus_says_what_was_not_checked(tmp_path):
    rc, _, out, _ = run_gpu_check(tmp_path, gpus=0, dmesg=XID_79)
    assert rc == 0
    assert "node-health-check: not checked: Xids, DCGM (no GPUs expected on this node)" in out


def test_prolog_runs_the_quick_diagnostic_and_names_the_job(tmp_path):
    diag = ('case "$1" in diag) echo "| Memory  | Fail - GPU 2 |"; exit 226 ;; esac\nexit 0\n')
    rc, calls, _, err = run_gpu_check(tmp_path, dcgmi=diag, args=("--prolog",), env={"SLURM_JOB_ID": "42"})
    assert rc == 1 and "dcgmi diag -r 1 failed" in err
    assert calls[0].startswith("update NodeName=n1 State=DRAIN Reason=node-health: prolog of job 42: dcgmi diag -r 1 "
                               "failed")
    # the periodic check does not run the diagnostic
    rc, calls, _, _ = run_gpu_check(tmp_path, dcgmi=diag)
    assert rc == 0 and calls == []


def test_prolog_only_reports_when_draining_is_off(tmp_path):
    rc, calls, _, err = run_gpu_check(tmp_path, dmesg=XID_79, conf="NODE_HEALTH_DRAIN=0\n", args=("--prolog",))
    assert rc == 0 and calls == []
    assert "Xid 79" in err and "prolog reports only" in err


def test_a_node_the_prolog_drained_is_resumed_by_the_check_once_healthy(tmp_path):
    rc, calls, _ = run_check(tmp_path, 2, "IDLE+DRAIN", "node-health: prolog of job 42: nvidia-smi lists 1 GPUs, "
                                                         "expected 2")
    assert rc == 0 and calls == ["update NodeName=n1 State=RESUME"]
