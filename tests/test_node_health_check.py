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
    the kernel log + dcgmi health (two calls) + the row remapper and NVLink error queries + scontrol + the scratch's df < 60 s."""
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
    remap = int(re.search(r"timeout (\d+) nvidia-smi -q -d ROW_REMAPPER", text).group(1))
    nvlink = int(re.search(r"timeout (\d+) nvidia-smi nvlink -e", text).group(1))
    scratch = int(re.search(r"timeout (\d+) df -P", text).group(1))  # the scratch's free space
    assert gpu + kill + 4 * mount + 2 * service + klog + sum(dcgm) + remap + nvlink + scontrol + scratch < 60
    assert "timeout 60" not in text


# --- GPU cluster checks: Fabric Manager, IMEX, Xids, DCGM, the prolog mode ---------------------------------

def run_gpu_check(tmp: Path, *, conf: str = "", dmesg: str = "", dcgmi: str | None = None, running: str = "",
                  args: tuple[str, ...] = (), gpus: int = 2, env: dict | None = None,
                  smi: str | None = None) -> tuple[int, list[str], str, str]:
    """The check on a healthy 2-GPU node (stand-in nvidia-smi), with a stand-in kernel log (dmesg), dcgmi
    (a shell body; None: not installed) and pgrep (which process names run); (rc, scontrol updates, out, err)."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp / "scontrol.log"
    log.write_text("")
    stand_ins = {
        "nvidia-smi": smi if smi is not None else "".join(f"echo 'GPU {i}: stand-in'\n" for i in range(gpus)),
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


# --- NVLink fabric: each GPU registered, one partition per node (NVL72) ------------------------------------
# The samples follow NVIDIA's documented nvidia-smi -q layout: the "Fabric" section with "State : Completed" and
# "Status : Success" once a GPU registered (NVIDIA Fabric Manager user guide, "Initializing NVSwitch and NVLink";
# "State : In Progress", "Status : N/A" while it registers), and CliqueId / ClusterUUID, nvidia-smi's names of
# NVML's nvmlGpuFabricInfo_t cliqueId and clusterUuid (NVML API reference, "Fabric definitions"). Written by
# hand from those documents: no GB200 tray was at hand to record one.
UUID_A = "5b5c0b4f-3f9e-4c4a-9d0e-1f2a3b4c5d6e"
UUID_B = "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"


def smi_q(gpus: list[tuple[str, str, str, str, str]]) -> str:
    """nvidia-smi -q of a node: (bus id, State, Status, CliqueId, ClusterUUID) per GPU; State '' = no Fabric."""
    out = ["", "==============NVSMI LOG==============", "",
           "Timestamp                                 : Sat Dec  5 03:00:00 2026",
           "Driver Version                            : 580.95.05", "CUDA Version                              : 13.0",
           "", f"Attached GPUs                             : {len(gpus)}"]
    for bus, state, status, clique, cluster in gpus:
        out += [f"GPU {bus}", "    Product Name                          : NVIDIA GB200",
                "    Persistence Mode                      : Enabled"]
        if state:
            out += ["    Fabric", f"        State                             : {state}",
                    f"        Status                            : {status}"]
            if clique:
                out += [f"        CliqueId                          : {clique}",
                        f"        ClusterUUID                       : {cluster}"]
            out += ["        Health", "            Bandwidth                     : Full"]
        out += ["    Processes                             : None", ""]
    return "\n".join(out) + "\n"


TRAY = [(f"0000000{d}:01:00.0", "Completed", "Success", "32766", UUID_A) for d in (8, 9)]


def run_fabric_check(tmp: Path, gpus: list, conf: str) -> tuple[int, list[str], str, str]:
    """The check of a node expecting 2 GPUs whose nvidia-smi answers -q with ``gpus`` (and -L with nothing)."""
    (tmp / "smi-q.txt").write_text(smi_q(gpus))
    return run_gpu_check(tmp, conf="NODE_HEALTH_NVLINK_FABRIC=1\n" + conf,
                         smi=f'[ "$1" = -q ] && cat {tmp / "smi-q.txt"}\nexit 0\n')


def test_registered_gpus_in_one_partition_pass(tmp_path):
    rc, calls, out, err = run_fabric_check(tmp_path, TRAY, "NODE_HEALTH_NVLINK_CLIQUE=1\n"
                                           f"NODE_HEALTH_NVLINK_CLUSTER_UUID={UUID_A}\nNODE_HEALTH_NVLINK_CLIQUE_ID=32766\n")
    assert (rc, calls, err) == (0, [], "")


def test_a_gpu_still_registering_drains_with_its_fabric_state(tmp_path):
    gpus = [TRAY[0], ("00000009:01:00.0", "In Progress", "N/A", "N/A", "N/A")]
    rc, calls, _, _ = run_fabric_check(tmp_path, gpus, "NODE_HEALTH_NVLINK_CLIQUE=1\n")
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 00000009:01:00.0 NVLink fabric State "
                     "In Progress, Status N/A (expected Completed, Success)"]


def test_gpus_in_two_partitions_drain(tmp_path):
    gpus = [TRAY[0], ("00000009:01:00.0", "Completed", "Success", "32767", UUID_B)]
    rc, calls, _, _ = run_fabric_check(tmp_path, gpus, "NODE_HEALTH_NVLINK_CLIQUE=1\n")
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPUs in different NVLink partitions "
                     f"(CliqueId/ClusterUUID: 32766/{UUID_A} 32767/{UUID_B})"]


def test_a_tray_outside_the_racks_partition_drains(tmp_path):
    rc, calls, _, _ = run_fabric_check(tmp_path, TRAY, f"NODE_HEALTH_NVLINK_CLIQUE=1\nNODE_HEALTH_NVLINK_CLUSTER_UUID={UUID_B}\n")
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 00000008:01:00.0 in NVLink cluster "
                     f"{UUID_A}, expected the rack's {UUID_B} (+1 more)"]
    rc, calls, _, _ = run_fabric_check(tmp_path, TRAY, "NODE_HEALTH_NVLINK_CLIQUE=1\nNODE_HEALTH_NVLINK_CLIQUE_ID=7\n")
    assert rc == 1 and calls[0].endswith("GPU 00000008:01:00.0 in NVLink clique 32766, expected the rack's 7 (+1 more)")


def test_a_registered_gpu_in_no_clique_drains_on_nvl72_only(tmp_path):
    gpus = [TRAY[0], ("00000009:01:00.0", "Completed", "Success", "N/A", "N/A")]
    rc, calls, _, _ = run_fabric_check(tmp_path, gpus, "NODE_HEALTH_NVLINK_CLIQUE=1\n")
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 00000009:01:00.0 in no NVLink partition "
                     "(CliqueId N/A, ClusterUUID N/A)"]
    # an HGX baseboard (NVSwitch in the node): the fabric state only
    hgx = [(bus, "Completed", "Success", "", "") for bus, *_ in TRAY]
    rc, calls, _, err = run_fabric_check(tmp_path, hgx, "")
    assert (rc, calls, err) == (0, [], "")


def test_gpus_are_counted_from_the_q_sections_and_a_missing_fabric_section_is_said(tmp_path):
    rc, calls, _, _ = run_fabric_check(tmp_path, TRAY[:1], "")
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: nvidia-smi lists 1 GPUs, expected 2"]
    rc, calls, out, _ = run_fabric_check(tmp_path, [(bus, "", "", "", "") for bus, *_ in TRAY], "")
    assert (rc, calls) == (0, [])
    assert "node-health-check: not checked: NVLink fabric of GPU 00000008:01:00.0 (no Fabric section in nvidia-smi -q)" in out
