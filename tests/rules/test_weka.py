"""WEKA clients in DPDK mode (docs/slurm.md, "WEKA clients in DPDK mode"): the fstab options of the compute and
service nodes, the cores and memory Slurm keeps from jobs, and rules WEKA001/WEKA002.

Expected values by hand: WEKA's mount options (num_cores=N, net=<netdev> per NIC, core=<id>, memory_mb; UDP mode
num_cores=0,net=udp); slurm.conf(5) CoreSpecCount/MemSpecLimit; core_spec.html's selection order (the highest core
of the highest socket first, then the highest of the lower socket).
"""

from __future__ import annotations

import pytest

from clusterctl.errors import BlueprintError
from clusterctl.targets import slurm
from clusterctl.targets.ansible.storage import storage_mounts
from tests.helpers import hits, lab, plan_of, shipped

WEKA = {"name": "pfs", "tier": "parallel", "filesystem": "weka", "mount": "/mnt/pfs", "checkpoint": True,
        "capacity_tb": 2000, "read_gb_per_s": 400, "write_gb_per_s": 200, "servers": "weka[01-08]"}


def weka_lab(**client) -> dict:
    data = lab()
    data["storage"].insert(0, dict(WEKA, **({"weka": client} if client else {})))
    data["workload"] = {"params_b": 70, "checkpoint_budget_s": 60}
    return data


def mount_opts(data: dict, group: str) -> str:
    plan = plan_of(data)
    (mount,) = [m for m in storage_mounts(plan, plan.group(group))[0] if m["fstype"] == "wekafs"]
    return mount["opts"]


def conf_lines(data: dict, prefix: str) -> list[str]:
    return [line for line in slurm.render(plan_of(data))["slurm/slurm.conf"].splitlines() if line.startswith(prefix)]


def test_hgx_h200_storage_ports_drive_the_client():
    data = shipped("hgx-h200-roce-1024")
    # the two storage ports of the node type (enp41s0f0np0, enp41s0f1np1): one frontend core each; the cores Slurm's
    # CoreSpecCount=2 takes are core 51 of socket 1 (CPU 1 x 52 + 51 = 103) and core 51 of socket 0 (CPU 51);
    # 2 x 1,400 MiB of hugepage memory
    assert mount_opts(data, "gpu") == ("defaults,_netdev,nofail,num_cores=2,net=enp41s0f0np0,net=enp41s0f1np1,"
                                       "core=103,core=51,memory_mb=2800,nosuid,nodev")
    # the controllers (StateSaveLocation on the tier) and login nodes dedicate no cores: UDP mode
    assert mount_opts(data, "head") == "defaults,_netdev,nofail,num_cores=0,net=udp,nosuid,nodev"
    assert conf_lines(data, "NodeName=") == [
        "NodeName=gpu[001-128] Sockets=2 CoresPerSocket=52 ThreadsPerCore=2 RealMemory=2034688 Gres=gpu:h200:8 "
        "CoreSpecCount=2 MemSpecLimit=2800 Features=gpu,h200-sxm,h200,roce State=UNKNOWN"]
    # per-GPU defaults without the client's share: (104 - 2) cores x 2 threads / 8 = 25 CPUs (26 before);
    # (2,034,688 - 2,800) MiB / 8 = 253,986 MiB
    assert conf_lines(data, "PartitionName=batch")[0].split()[4:6] == ["DefCpuPerGPU=25", "DefMemPerGPU=253986"]


def test_compute_rails_when_there_is_no_storage_port():
    # lab's HGX names its 8 compute rails only: two frontend cores on rails 0 and 4 (one per socket's half)
    assert mount_opts(weka_lab(), "gpu") == ("defaults,_netdev,nofail,num_cores=2,net=ibp24s0,net=ibp154s0,core=103,"
                                             "core=51,memory_mb=2800,nosuid,nodev")


def test_overrides():
    assert mount_opts(weka_lab(cores=4, memory_mib=8192), "gpu") == (
        "defaults,_netdev,nofail,num_cores=4,net=ibp24s0,net=ibp79s0,net=ibp154s0,net=ibp206s0,"
        "core=103,core=51,core=102,core=50,memory_mb=8192,nosuid,nodev")
    assert conf_lines(weka_lab(cores=4, memory_mib=8192), "NodeName=")[0].split()[6:8] == [
        "CoreSpecCount=4", "MemSpecLimit=8192"]


def test_udp_mode_reserves_nothing_and_warns_for_the_checkpoint_budget():
    data = weka_lab(mode="udp")
    assert mount_opts(data, "gpu") == "defaults,_netdev,nofail,num_cores=0,net=udp,nosuid,nodev"
    assert "CoreSpecCount" not in conf_lines(data, "NodeName=")[0]
    (h,) = hits(data, "WEKA001")
    assert h.path == ("storage", 0, "weka", "mode")
    # 70e9 params x 14 bytes = 0.98 TB; / 60 s = 16.3 GB/s
    assert "0.98 TB checkpoint must reach tier pfs at 16.3 GB/s within 60 s" in h.message
    assert hits(weka_lab(), "WEKA001") == [] and hits(shipped("hgx-h200-roce-1024"), "WEKA001") == []


def test_no_nic_to_drive_is_an_error():
    data = weka_lab()
    del data["node_types"]["hgx"]["interfaces"]  # an OEM HGX: the catalog names no ports
    (h,) = hits(data, "WEKA002")
    assert h.path == ("storage", 0, "weka")
    assert h.message == ("node group gpu: node type hgx has no storage or compute port with a netdev name for the "
                         "DPDK client's net= option")
    assert hits(weka_lab(), "WEKA002") == []


def test_weka_settings_only_on_a_weka_tier():
    data = weka_lab()
    data["storage"][0]["filesystem"] = "lustre"
    data["storage"][0]["servers"] = "10.0.0.1@o2ib:/pfs"
    data["storage"][0]["weka"] = {"mode": "udp"}
    with pytest.raises(BlueprintError):
        plan_of(data)
