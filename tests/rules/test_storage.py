"""Storage rules: the lab blueprint with a training workload and tiers changed one at a time."""

from __future__ import annotations

from clusterctl.catalog import load_shipped_catalog
from tests.helpers import BROKEN, cli, codes, hits, lab, line_of, shipped

STORAGE = ("STORAGE001", "STORAGE002", "STORAGE003", "STORAGE004", "STORAGE005", "STORAGE006")
LUSTRE = {"name": "lustre", "tier": "parallel", "mount": "/lustre", "capacity_tb": 100, "read_gb_per_s": 200,
          "write_gb_per_s": 100}


def training(params_b: float = 70, **tier) -> dict:
    """The lab with a Lustre tier and a workload: a 70 B model checkpoints 70e9 × 14 = 0.98 TB."""
    data = lab()
    data["storage"].append(LUSTRE | tier)
    data["workload"] = {"params_b": params_b}
    return data


def test_lab_and_training_lab_are_quiet_but_for_the_missing_nvme():
    for data in (lab(), training()):
        for code in STORAGE[:-1]:
            assert hits(data, code) == [], code
    # the lab's hgx-h100-8gpu catalog entry lists no NVMe: STORAGE006 warns (see test below)


def test_checkpoint_write_over_budget_on_nfs():
    data = lab()
    data["workload"] = {"params_b": 70}  # only nfs: 0.98 TB at 1.5 GB/s = 653 s
    (h,) = hits(data, "STORAGE001")
    assert h.path == ("storage", 0, "write_gb_per_s")
    assert ("a 0.98 TB checkpoint (70 B params × 14 bytes) takes 653 s to write at 1.5 GB/s to nfs tier home"
            in h.message)
    assert "the budget is 60 s" in h.message and "16.3 GB/s" in h.hint


def test_checkpoint_tier_choice():
    data = training()
    assert hits(data, "STORAGE001") == []  # parallel tier preferred over nfs: 9.8 s
    data["storage"][0]["checkpoint"] = True  # explicitly on nfs
    (h,) = hits(data, "STORAGE001")
    assert "nfs tier home" in h.message


def test_checkpoint_capacity_error_and_warning():
    data = training(params_b=2500)  # 35 TB × 3 = 105 TB of 100 TB
    (h,) = hits(data, "STORAGE002")
    assert str(h.severity) == "error" and h.path == ("storage", 2, "capacity_tb")
    assert "3 retained checkpoints × 35.00 TB = 105.0 TB, 105% of parallel tier lustre's 100 TB" in h.message
    data = training(params_b=2000)  # 84 TB
    (h,) = hits(data, "STORAGE002")
    assert str(h.severity) == "warning" and "84%" in h.message
    assert hits(training(params_b=1900), "STORAGE002") == []  # 79.8 %


def test_no_checkpoint_tier():
    data = lab()
    data["storage"] = [{"name": "scratch", "tier": "local", "mount": "/raid"},
                       {"name": "s3", "tier": "object", "endpoint": "https://s3.example", "mount": "/s3",
                        "capacity_tb": 500, "read_gb_per_s": 50, "write_gb_per_s": 50}]
    data["workload"] = {"params_b": 70}
    (h,) = hits(data, "STORAGE003")
    assert str(h.severity) == "warning" and h.path == ("workload",)
    assert "no storage tier takes checkpoints (tiers: local, object)" in h.message
    data["storage"][1]["checkpoint"] = True
    assert hits(data, "STORAGE003") == []
    assert hits(data, "STORAGE001") == []  # 0.98 TB at 50 GB/s = 19.6 s


def test_checkpoint_stall_share():
    data = training(write_gb_per_s=25)  # 39.2 s every 10 min = 6.5 %
    data["workload"]["checkpoint_every_min"] = 10
    (h,) = hits(data, "STORAGE004")
    assert str(h.severity) == "warning" and h.path == ("workload", "checkpoint_every_min")
    assert "takes 39 s every 10 min: 6.5% of training time stalled" in h.message
    data["workload"]["checkpoint_every_min"] = 30  # 2.2 %
    assert hits(data, "STORAGE004") == []


def test_duplicate_tier_mount_and_name():
    data = training(mount="/home")
    (h,) = hits(data, "STORAGE005")
    assert h.path == ("storage", 2, "mount") and "same mount '/home' as tier 0" in h.message
    data = training(name="home")
    (h,) = hits(data, "STORAGE005")
    assert h.path == ("storage", 2, "name") and "same name 'home' as tier 0" in h.message


def test_local_tier_on_servers_without_nvme():
    data = lab()
    assert hits(data, "STORAGE006") == []  # hgx-h100-8gpu has 3 TB of NVMe
    data.setdefault("catalog", {})["servers"] = {"hgx-h100-8gpu": dict(
        load_shipped_catalog().servers["hgx-h100-8gpu"].model_dump(exclude={"nvme", "sources"}))}
    (h,) = hits(data, "STORAGE006")
    assert str(h.severity) == "warning" and h.path == ("storage", 1)
    assert "node type hgx (hgx-h100-8gpu, group gpu) has no NVMe" in h.message
    data["node_types"]["hgx"]["server"] = "hgx-h200-8gpu"  # 4 × 6.4 TB NVMe; the head node is not compute
    assert hits(data, "STORAGE006") == []


def test_storage007_o2ib_nid_needs_an_rdma_storage_nic_on_every_client():
    data = lab()
    data["storage"].append({"name": "lustre", "tier": "parallel", "filesystem": "lustre",
                            "servers": "10.0.0.1@o2ib:/lustre", "mount": "/lustre", "capacity_tb": 100,
                            "read_gb_per_s": 50, "write_gb_per_s": 30})
    assert "STORAGE007" not in codes(data)  # gpu: a ConnectX-7 storage NIC; the head node mounts nothing
    data["node_groups"].append({"name": "login", "type": "head", "role": "login", "count": 1,
                                "hostnames": "login01", "racks": "lab01"})
    (h,) = hits(data, "STORAGE007")
    assert h.path == ("storage", 2, "servers") and "node type head (group login, role login)" in h.message
    data["storage"][-1]["servers"] = "10.0.0.1@o2ib,10.1.0.1@tcp:/lustre"
    assert "STORAGE007" not in codes(data)


def test_tier_on_the_storage_fabric_unreachable_from_groups_left_off_it():
    data = shipped("dgx-h100-superpod-1su")
    data["storage"][0]["servers"] = "10.31.1.250@o2ib:/lustre"  # the storage pool only: no @tcp NID in-band
    data["node_groups"].append({"name": "dgx2", "type": "dgx", "count": 4, "hostnames": "dgx[101-104]"})
    data["fabrics"][0]["attach"].append({"group": "dgx2", "nic_role": "compute"})
    found = {h.message.split(":")[0]: h for h in hits(data, "STORAGE008")}
    assert sorted(found) == ["group dgx2 has no network path to storage tier home",
                             "group dgx2 has no network path to storage tier lustre",
                             "group login has no network path to storage tier lustre"]
    h = found["group dgx2 has no network path to storage tier home"]  # the NFS server is on the in-band fabric
    assert h.path == ("fabrics", 2, "attach") and h.hint.startswith("add {group: dgx2, nic_role: inband}")
    h = found["group dgx2 has no network path to storage tier lustre"]
    assert h.path == ("fabrics", 1, "attach") and str(h.severity) == "error"
    assert h.message.startswith("group dgx2 has no network path to storage tier lustre: the tier's servers are "
                                "10.31.1.250 (address pool storage, role storage) on fabric stor;")
    assert "its storage, inband NICs are attached to no fabric (its compute nodes mount /lustre)" in h.message
    assert h.hint == "add {group: dgx2, nic_role: storage} to the attach list of fabric stor"
    assert "(its login nodes mount /lustre)" in found["group login has no network path to storage tier lustre"].message
    assert not hits(shipped("dgx-h100-superpod-1su"), "STORAGE008")  # the @tcp NID is on the in-band network
    data = shipped("dgx-h100-superpod-1su")
    data["storage"][0]["servers"] = "10.31.1.[250-251]@o2ib:/lustre"  # failover MGS pair, both in the storage pool
    # the host list is expanded: the DGX reach both over fabric stor; login (no storage NIC cabled) reaches neither
    assert [h.message.split(":")[0] for h in hits(data, "STORAGE008")] == [
        "group login has no network path to storage tier lustre"]
    assert not hits(lab(), "STORAGE008")  # NFS over the flat in-band network


def test_cli_names_the_group_the_nic_role_and_the_tier_of_an_unreachable_tier():
    """Issue 14's acceptance: GPU nodes with no network to the storage tier fail validation through the CLI."""
    path = BROKEN / "storage-unreachable.yaml"
    r = cli("validate", str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "error[STORAGE008]" in r.stderr
    line = line_of(path, 'servers: "10.13.0.250@tcp:/lustre"')
    assert f"{path}:{line}:" in r.stderr
    assert ("group gpu has no network path to storage tier lustre: the tier's servers are 10.13.0.250 (address pool "
            "storage, role storage) on no fabric;" in r.stderr)
    assert "its storage, inband NICs are attached to no fabric" in r.stderr
    assert "hint: attach group gpu's storage NICs to a fabric the tier's servers are on" in r.stderr


def _parallel(filesystem: str, servers: str) -> dict:
    data = lab()
    data["storage"].append({"name": "pfs", "tier": "parallel", "filesystem": filesystem, "servers": servers,
                            "mount": "/pfs", "capacity_tb": 100, "read_gb_per_s": 50, "write_gb_per_s": 30})
    return data


def test_servers_a_client_cannot_be_given():
    (h,) = hits(_parallel("vast", "vast[01-04]"), "STORAGE009")
    assert h.path == ("storage", 2, "servers") and str(h.severity) == "error"
    assert h.message == ("vast tier pfs: 'vast[01-04]' names 4 servers but an NFS mount takes one (server:/path): "
                         "name the VIP pool's DNS name, which spreads the clients over the VIPs")
    assert h.hint == "name one server: the VIP pool's DNS name"
    (h,) = hits(_parallel("lustre", "mgs[1-2]@tcp,mgs[1-3]@o2ib:/fs"), "STORAGE009")
    assert "name different numbers of MGS nodes (2, 3)" in h.message
    (h,) = hits(_parallel("weka", "weka[01-4096]/pfs"), "STORAGE009")
    assert "names 4,096 servers; at most 1,024" in h.message


def test_servers_a_client_takes_are_quiet():
    for fs, servers in (("vast", "vip.vast.example"), ("vast", "vast[01]:/export/pfs"), ("weka", "weka[01-16]/pfs"),
                        ("lustre", "10.10.0.[250-251]@tcp:/lustre"), ("lustre", "m[1-2]@tcp,m[1-2]@o2ib")):
        assert not hits(_parallel(fs, servers), "STORAGE009"), servers
