"""roles/node_health/files/node-health-check.sh: the hardware checks beyond the GPU count, fed literal tool
output: pending row remaps and remapping failures (nvidia-smi -q -d ROW_REMAPPER, as NVIDIA's "GPU Memory Error
Management" shows it), NVLink recovery and CRC errors (nvidia-smi nvlink -e), and PCIe links of GPUs and NICs
that trained below their maximum width or (NICs) speed (sysfs-bus-pci current_link_width / max_link_width)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "roles" / "node_health" / "files" / "node-health-check.sh"

ROW_REMAPPER = """
==============NVSMI LOG==============

Timestamp                                 : Sat Dec  5 13:00:00 2026
Driver Version                            : 550.127.05
CUDA Version                              : 12.4

Attached GPUs                             : 2
GPU 00000000:18:00.0
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 1
        Pending                           : {pending}
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 639 bank(s)
            High                          : 1 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)

GPU 00000000:2A:00.0
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : {failure}
        Bank Remap Availability Histogram
            Max                           : 640 bank(s)
            High                          : 0 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
"""

NVLINK_E = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1c2c8e-0000-0000-0000-000000000000)
\t Link 0: Replay Errors: 0
\t Link 0: Recovery Errors: 0
\t Link 0: CRC Errors: 0
\t Link 1: Replay Errors: 7
\t Link 1: Recovery Errors: {recovery}
\t Link 1: CRC Errors: {crc}
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1c2c8e-0000-0000-0000-000000000001)
\t Link 0: Replay Errors: 3
\t Link 0: Recovery Errors: 0
\t Link 0: CRC Errors: 12
"""


def run(tmp: Path, *, remap: str = ROW_REMAPPER.format(pending="No", failure="No"),
        nvlink: str = NVLINK_E.format(recovery=0, crc=0), pci: dict[str, dict[str, str]] | None = None,
        conf: str = "", smi_other: str = "") -> tuple[int, list[str], str, str]:
    """The check on a 2-GPU node whose nvidia-smi answers -L, -q -d ROW_REMAPPER and nvlink -e with the given
    text, over a stand-in /sys/bus/pci/devices; (rc, scontrol updates, out, err)."""
    bin_ = tmp / "bin"
    bin_.mkdir(exist_ok=True)
    (tmp / "remap.txt").write_text(remap)
    (tmp / "nvlink.txt").write_text(nvlink)
    log = tmp / "scontrol.log"
    log.write_text("")
    stand_ins = {
        "nvidia-smi": ('case "$*" in\n  "-L") echo "GPU 0: H100"; echo "GPU 1: H100" ;;\n'
                       + (f'  "-q -d ROW_REMAPPER") cat {tmp / "remap.txt"} ;;\n'
                          f'  "nvlink -e") cat {tmp / "nvlink.txt"} ;;\n' if not smi_other else "")
                       + '  *) exit 3 ;;\nesac\n'),
        "scontrol": ("if [ \"$1\" = show ]; then echo 'NodeName=n1 State=IDLE ThreadsPerCore=1'; exit 0; fi\n"
                     f"echo \"$*\" >> {log}\n"),
        "dmesg": "true\n",
    }
    for name, body in stand_ins.items():
        (bin_ / name).write_text("#!/bin/bash\n" + body)
        (bin_ / name).chmod(0o755)
    devices = tmp / "pci"
    devices.mkdir(exist_ok=True)
    for address, files in (pci or {}).items():
        (devices / address).mkdir()
        for name, value in files.items():
            (devices / address / name).write_text(value + "\n")
    cfg = tmp / "node-health.conf"
    cfg.write_text(f"NODE_HEALTH_GPU_COUNT=2\nNODE_HEALTH_MOUNTS=()\nNODE_HEALTH_DRAIN=1\nNODE_HEALTH_DCGM=0\n"
                   f"NODE_HEALTH_PCI_DEVICES={devices}\n" + conf)
    r = subprocess.run(["bash", str(SCRIPT), "--config", str(cfg)], capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{bin_}:/usr/bin:/bin", "SLURMD_NODENAME": "n1"},
                       timeout=30, check=False)
    return r.returncode, log.read_text().splitlines(), r.stdout, r.stderr


def link(vendor: str, cls: str, width: str, max_width: str, speed: str = "32.0 GT/s PCIe",
         max_speed: str = "32.0 GT/s PCIe") -> dict[str, str]:
    return {"vendor": vendor, "class": cls, "current_link_width": width, "max_link_width": max_width,
            "current_link_speed": speed, "max_link_speed": max_speed}


H100 = ("0x10de", "0x030200")
CX7 = ("0x15b3", "0x020700")


def test_healthy_gpus_links_and_nics_pass(tmp_path):
    rc, calls, _, err = run(tmp_path, pci={
        "0000:18:00.0": link(*H100, "16", "16", speed="2.5 GT/s PCIe"),  # idle GPU: speed not compared
        "0000:19:00.0": link(*CX7, "16", "16"),
        "0000:00:01.0": link("0x8086", "0x060400", "4", "16")})  # a bridge: not checked
    assert (rc, calls, err) == (0, [], "")


def test_a_pending_row_remap_drains_naming_the_gpu(tmp_path):
    rc, calls, _, err = run(tmp_path, remap=ROW_REMAPPER.format(pending="Yes", failure="No"))
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 00000000:18:00.0 row remap pending "
                     "(reset the GPU; nvidia-smi -q -d ROW_REMAPPER)"]


def test_a_row_remapping_failure_drains(tmp_path):
    rc, _, _, err = run(tmp_path, remap=ROW_REMAPPER.format(pending="No", failure="Yes"))
    assert rc == 1
    assert "GPU 00000000:2A:00.0 row remapping failure (no spare rows left: replace the GPU)" in err


def test_nvlink_recovery_errors_drain_and_replays_do_not(tmp_path):
    rc, calls, _, err = run(tmp_path, nvlink=NVLINK_E.format(recovery=2, crc=0))
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 0 NVLink 1: 2 Recovery errors "
                     "(nvidia-smi nvlink -e)"]


def test_nvlink_crc_errors_drain_above_the_limit_only(tmp_path):
    (tmp_path / "at").mkdir()
    (tmp_path / "over").mkdir()
    assert run(tmp_path / "at", nvlink=NVLINK_E.format(recovery=0, crc=100))[0] == 0
    rc, _, _, err = run(tmp_path / "over", nvlink=NVLINK_E.format(recovery=0, crc=101))
    assert rc == 1 and "GPU 0 NVLink 1: 101 CRC errors (nvidia-smi nvlink -e)" in err


def test_a_gpu_at_x8_and_a_nic_at_gen4_drain(tmp_path):
    rc, calls, _, err = run(tmp_path, pci={
        "0000:18:00.0": link(*H100, "8", "16"),
        "0000:19:00.0": link(*CX7, "16", "16", speed="16.0 GT/s PCIe")})
    assert rc == 1
    assert "GPU 0000:18:00.0 PCIe link width x8 of x16 (reseat or replace; lspci -vv LnkSta)" in err
    assert "NIC 0000:19:00.0 PCIe link speed 16.0 GT/s of 32.0 GT/s (reseat or replace; lspci -vv LnkSta)" in err
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: GPU 0000:18:00.0 PCIe link width x8 of "
                     "x16 (reseat or replace; lspci -vv LnkSta) (+1 more)"]


def test_a_failing_query_is_named_not_passed(tmp_path):
    """A driver without the row remapper or NVLink (nvidia-smi exits non-zero): said on stdout, not passed."""
    rc, _, out, _ = run(tmp_path, remap="", nvlink="", conf="", smi_other="exit 9")
    assert rc == 0
    assert out.splitlines() == [
        "node-health-check: not checked: row remapping (nvidia-smi -q -d ROW_REMAPPER failed)",
        "node-health-check: not checked: NVLink errors (nvidia-smi nvlink -e failed)"]


def test_checks_can_be_switched_off(tmp_path):
    rc, calls, _, _ = run(tmp_path, remap=ROW_REMAPPER.format(pending="Yes", failure="Yes"),
                          nvlink=NVLINK_E.format(recovery=9, crc=999), pci={"0000:18:00.0": link(*H100, "1", "16")},
                          conf="NODE_HEALTH_ROW_REMAP=0\nNODE_HEALTH_NVLINK_ERRORS=0\nNODE_HEALTH_PCIE=0\n")
    assert (rc, calls) == (0, [])
