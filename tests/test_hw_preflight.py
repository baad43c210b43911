"""roles/slurm_compute/files/clusterctl_hw_preflight.py: a node's hardware against its rendered NodeName and gres.conf
lines, fed literal lscpu, /proc/meminfo and slurmd -C text (the formats util-linux's lscpu and Slurm's slurmd -C
print) and a stand-in sysfs and /dev."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "roles" / "slurm_compute" / "files" / "clusterctl_hw_preflight.py"
_spec = importlib.util.spec_from_file_location("clusterctl_hw_preflight", SCRIPT)
hw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hw)

SLURM_CONF = """\
NodeName=gpu[01-02] Sockets=2 CoresPerSocket=52 ThreadsPerCore=2 RealMemory=2034688 Gres=gpu:h100:8 Features=gpu State=UNKNOWN
NodeName=cpu01 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
"""
GRES_CONF = """\
AutoDetect=off
NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-51
NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=52-103
"""
# lscpu of a node with two 48-core sockets and SMT off (util-linux 2.37 layout), and 1 TiB of memory
LSCPU = """\
Architecture:                    x86_64
CPU(s):                          96
Thread(s) per core:              1
Core(s) per socket:              48
Socket(s):                       2
NUMA node(s):                    2
"""
MEMINFO = "MemTotal:       1056699620 kB\nMemFree:        1000000000 kB\n"
# slurmd -C of a matching node (MemTotal 2,097,152 MiB as RealMemory)
SLURMD_C = ("NodeName=gpu01 CPUs=208 Boards=1 SocketsPerBoard=2 CoresPerSocket=52 ThreadsPerCore=2 "
            "RealMemory=2063589\nUpTime=12-03:04:05\n")


def test_hostlists_expand_with_padding():
    assert hw.expand_hostlist("gpu[01-03,07],head01") == ["gpu01", "gpu02", "gpu03", "gpu07", "head01"]
    assert hw.expand_hostlist("/dev/nvidia[4-7]") == [f"/dev/nvidia{i}" for i in range(4, 8)]


def test_mismatching_lscpu_and_meminfo_are_spelled_out():
    want = hw.expected(hw.node_line(SLURM_CONF, "gpu02"), hw.gres_lines(GRES_CONF, "gpu02"))
    cpu = hw.parse_lscpu(LSCPU, MEMINFO)
    files = [f"/dev/nvidia{i}" for i in range(7)]  # one GPU fell off the bus
    sockets = {f"/dev/nvidia{i}": 0 for i in range(7)}  # and every GPU hangs off socket 0
    ports = [{"role": "compute", "index": "0", "netdev": "ibp24s0", "rdma": "mlx5_0"}]
    diff = hw.compare(want, cpu, files, sockets, ports, {("net", "ibp24s0")})
    assert diff == [
        "CoresPerSocket: expected 52, found 48 (lscpu and /proc/meminfo)",
        "ThreadsPerCore: expected 2, found 1 (lscpu and /proc/meminfo)",
        "RealMemory: expected 2034688 MiB at most, found 1031933 MiB (lscpu and /proc/meminfo; slurmd would drain "
        "the node with Low RealMemory)",
        "GPUs: expected 8 (NodeName Gres), found 7 (/dev/nvidia0, /dev/nvidia1, /dev/nvidia2, /dev/nvidia3, "
        "/dev/nvidia4, /dev/nvidia5, /dev/nvidia6)",
        "GPU /dev/nvidia4: expected on socket 1 (gres.conf Cores=), found on socket 0 (sysfs numa_node)",
        "GPU /dev/nvidia5: expected on socket 1 (gres.conf Cores=), found on socket 0 (sysfs numa_node)",
        "GPU /dev/nvidia6: expected on socket 1 (gres.conf Cores=), found on socket 0 (sysfs numa_node)",
        "GPU /dev/nvidia7: expected by gres.conf File=, not found",
        "NIC compute 0: expected RDMA device mlx5_0, not found (/sys/class/infiniband)",
    ]


def test_matching_slurmd_c_is_quiet():
    want = hw.expected(hw.node_line(SLURM_CONF, "gpu01"), hw.gres_lines(GRES_CONF, "gpu01"))
    cpu = hw.parse_slurmd_c(SLURMD_C)
    files = [f"/dev/nvidia{i}" for i in range(8)]
    sockets = {f"/dev/nvidia{i}": i // 4 for i in range(8)}
    assert hw.compare(want, cpu, files, sockets, [], set()) == []


def test_the_script_reads_the_installed_files(tmp_path, monkeypatch):
    """main() end to end on a CPU node with stand-in files: lscpu on PATH prints the literal text above."""
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "slurm.conf").write_text(SLURM_CONF)
    (tmp_path / "meminfo").write_text(MEMINFO)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "lscpu").write_text("#!/bin/sh\ncat <<'EOF'\n" + LSCPU + "EOF\n")
    (bin_ / "lscpu").chmod(0o755)
    (bin_ / "slurmd").write_text("#!/bin/sh\nexit 1\n")  # slurmd -C fails: the lscpu text above is what is read
    (bin_ / "slurmd").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    args = ["--node", "cpu01", "--config-dir", str(conf), "--sysfs", str(tmp_path / "sys"),
            "--meminfo", str(tmp_path / "meminfo")]
    assert hw.main(args) == 1  # 2 sockets of 48 cores found, 1 of 8 planned
    assert hw.main(["--node", "nosuch", *args[2:]]) == hw.NOTHING_TO_COMPARE
    assert os.access(SCRIPT, os.X_OK)


def test_gpu_socket_from_sysfs(tmp_path):
    """nvidia-smi's bus id (8-digit domain) -> the PCI device's numa_node -> that node's first CPU's package."""
    dev = tmp_path / "bus/pci/devices/0000:9a:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("1\n")
    node = tmp_path / "devices/system/node/node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("52-103,156-207\n")
    cpu = tmp_path / "devices/system/cpu/cpu52/topology"
    cpu.mkdir(parents=True)
    (cpu / "physical_package_id").write_text("1\n")
    assert hw._pci_socket(str(tmp_path), "00000000:9A:00.0") == 1
    (dev / "numa_node").write_text("-1\n")  # a platform that reports no NUMA node: not judged
    assert hw._pci_socket(str(tmp_path), "00000000:9A:00.0") is None
