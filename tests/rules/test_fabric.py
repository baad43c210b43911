"""Fabric rules: each triggered by a small change to the lab blueprint (or a small fragment), quiet on the
original; and the broken example blueprints run through the real command line."""

from __future__ import annotations

from tests.helpers import hits, lab, shipped

FABRIC = tuple(f"FABRIC{n:03d}" for n in range(1, 14))


def ib(data):
    """The lab's compute fabric (fabrics[0]), a single QM9700 for the two HGX H100 (16 x 400G)."""
    return data["fabrics"][0]


def two_tier(data, **changes):
    ib(data).update(tiers=2, **changes)
    return data


def custom_server(data, name: str, compute_nics: int, nic: str = "cx7-400g", gpus: int = 8):
    """Replace the lab's GPU servers with a blueprint-local server with ``compute_nics`` × ``nic``."""
    data.setdefault("catalog", {}).setdefault("servers", {})[name] = {
        "gpus": {"model": "h100-sxm", "count": gpus},
        "cpu": {"sockets": 2, "cores_per_socket": 56, "threads_per_core": 2},
        "memory_gb": 2048,
        "nics": [{"model": nic, "count": compute_nics, "role": "compute"},
                 {"model": "eth-1g-bmc", "count": 1, "role": "bmc"}],
        "power_kw": 10.2, "height_u": 8, "nvlink_domain_gpus": 8}
    data["node_types"]["hgx"] = {"server": name}
    return data


def superpod(nodes: int, tiers: int, **fabric):
    """``nodes`` DGX B200 (8 x 400G rails) on one rail-optimized QM9700 fabric in SUs of 32, no racks."""
    return {"name": "pod", "node_types": {"dgx": {"server": "dgx-b200"}},
            "node_groups": [{"name": "dgx", "type": "dgx", "count": nodes, "hostnames": f"dgx[0001-{nodes:04d}]"}],
            "fabrics": [{"name": "compute", "kind": "infiniband", "tiers": tiers, "rail_optimized": True,
                         "switch": "qm9700", "su_nodes": 32, "attach": [{"group": "dgx", "nic_role": "compute"}],
                         **fabric}]}


# --- FABRIC001 port budget ------------------------------------------------------------------------------

def test_leaf_over_its_ports_points_at_su_nodes():
    data = two_tier(lab(), rail_optimized=True, su_nodes=48)
    (h,) = hits(data, "FABRIC001")
    assert h.path == ("fabrics", 0, "su_nodes")
    assert h.message == "leaf ib-leaf01 (qm9700) needs 48 downlinks + 48 uplinks = 96 ports of 64"
    assert "at most 32 downlinks" in h.hint and "lower su_nodes to 32" in h.hint


def test_leaf_uplinks_over_the_ports_point_at_leaf_uplinks():
    data = two_tier(lab(), leaf_uplinks=50)
    (h,) = hits(data, "FABRIC001")
    assert h.path == ("fabrics", 0, "leaf_uplinks")
    assert "needs 16 downlinks + 50 uplinks = 66 ports of 64" in h.message


def test_breakout_downlinks_count_half_a_port_each():
    # 2 x HGX H100 on an SN5600 at 400G: 16 downlinks on 8 native ports; 60 uplinks overflow 64 ports
    ib(lab_data := lab()).pop("subnet_manager")
    data = two_tier(lab_data, switch="sn5600", kind="roce", leaf_uplinks=60)
    (h,) = hits(data, "FABRIC001")
    assert "needs 16 downlinks (8 ports at 2 × 400G) + 60 uplinks = 68 ports of 64" in h.message


def test_too_few_spines_overrun_the_spine_ports():
    data = superpod(128, 2, spine_count=4)  # 32 leaves x 32 uplinks = 1,024 links on 4 x 64 ports
    (h,) = hits(data, "FABRIC001")
    assert h.path == ("fabrics", 0, "spine_count")
    assert h.message == "spine compute-spine01 (qm9700) needs 256 downlinks = 256 ports of 64"
    assert hits(data, "FABRIC002") == []  # one finding for one mistake


def test_management_uplinks_beyond_the_dedicated_ports():
    data = lab()
    data["fabrics"][1].update(tiers=2, spine_switch="sn4600c", leaf_uplinks=6)
    (h,) = hits(data, "FABRIC001")
    assert h.path == ("fabrics", 1, "leaf_uplinks")
    assert h.message == "leaf mgmt-leaf01 (sn2201) needs 6 uplinks of its 4 dedicated 100G uplink ports"


# --- FABRIC002 oversubscription -------------------------------------------------------------------------

def test_leaf_with_half_its_uplinks_is_2_to_1():
    data = two_tier(lab(), leaf_uplinks=8)
    (h,) = hits(data, "FABRIC002")
    assert h.path == ("fabrics", 0, "oversubscription")
    assert ("declared 1:1 but its leaf tier runs 2.00:1: ib-leaf01 has 16 × 400G = 6,400 Gb/s down "
            "vs 8 × 400G = 3,200 Gb/s up") in h.message
    assert "give each leaf 16 uplinks" in h.hint
    ib(data)["oversubscription"] = 2.0
    assert hits(data, "FABRIC002") == []


def test_three_tier_pod_with_too_few_spines_oversubscribes_the_spines():
    # a pod of 32 leaves x 32 uplinks on 24 spines: 43 links down, 21 ports left for uplinks
    data = superpod(512, 3, spine_count=24)
    (h,) = hits(data, "FABRIC002")
    assert "its spine tier runs 2.05:1" in h.message and "43 × 400G = 17,200 Gb/s down" in h.message
    assert "21 × 400G = 8,400 Gb/s up" in h.message
    assert hits(data, "FABRIC001") == []


def test_three_tier_spines_without_a_port_left_for_uplinks_are_a_port_problem():
    data = superpod(512, 3, spine_count=16)  # 64 downlinks per spine: nothing left to reach the cores
    assert [h.message for h in hits(data, "FABRIC001")] == [
        "spine compute-spine01 (qm9700) needs 64 downlinks + 64 uplinks = 128 ports of 64"]
    assert hits(data, "FABRIC002") == []


# --- FABRIC003 speeds -------------------------------------------------------------------------------------

def test_800g_nic_on_a_400g_switch_loses_half():
    data = custom_server(lab(), "hgx-cx8", 8, nic="cx8-800g")
    (h,) = hits(data, "FABRIC003")
    assert h.path == ("fabrics", 0, "switch")
    assert h.message.startswith("cx8-800g NICs (compute) of group gpu run at 800G but qm9700 ports run at most 400G")
    assert "loses 50% of its fabric bandwidth (8 × 800G → 8 × 400G)" in h.message
    ib(data)["switch"] = "q3400-ra"
    assert hits(data, "FABRIC003") == []


def test_nic_speed_the_switch_cannot_reach():
    data = lab()
    data["catalog"] = {"nics": {"vpi-25g": {"speed_gbps": 25, "protocols": ["infiniband", "ethernet"]}}}
    custom_server(data, "hgx-25g", 8, nic="vpi-25g")
    (h,) = hits(data, "FABRIC003")
    assert "run at 25G, which qm9700 offers neither natively nor by a breakout mode (it runs 400G/200G)" in h.message


def test_link_gbps_faster_than_the_nic():
    data = lab()
    ib(data)["link_gbps"] = 800
    (h,) = hits(data, "FABRIC003")
    assert h.path == ("fabrics", 0, "link_gbps") and "link_gbps 800 but the cx7-400g NICs" in h.message


def test_leaf_uplinks_must_land_on_spine_ports_of_their_speed():
    data = lab()
    # (an SN5600 spine would take them: Spectrum-4 splits its cages down to 10G)
    data["fabrics"][1].update(tiers=2, spine_switch="tomahawk5-64x800")
    (h,) = hits(data, "FABRIC003")
    assert h.path == ("fabrics", 1, "spine_switch")
    assert ("leaf uplinks of fabric mgmt run at 100G (sn2201) but spine switch tomahawk5-64x800 ports run "
            "800G/400G/200G") in h.message
    data["fabrics"][1].update(spine_switch="sn5600")
    assert hits(data, "FABRIC003") == []


# --- FABRIC004 size -------------------------------------------------------------------------------------

def test_two_tiers_of_64_port_switches_stop_at_2048_endpoints():
    data = superpod(512, 2)
    (h,) = hits(data, "FABRIC004")
    assert h.path == ("fabrics", 0, "tiers") and h.hint == "use tiers: 3"
    assert h.message == ("a 2-tier fat tree of 64-port qm9700 switches reaches 2,048 endpoints at 1:1; "
                         "fabric compute has 4,096")
    assert hits(superpod(512, 3), "FABRIC004") == []


# --- FABRIC005 rails --------------------------------------------------------------------------------------

def test_rail_optimized_nodes_with_fewer_nics_than_rails():
    data = lab()
    data["catalog"] = {"servers": {}}
    custom_server(data, "hgx-4nic", 4)
    data["node_types"]["hgx8"] = {"server": "hgx-h100-8gpu"}
    data["node_groups"].append({"name": "gpu8", "type": "hgx8", "count": 2, "hostnames": "gpu[03-04]"})
    ib(data).update(tiers=2, rail_optimized=True, attach=[{"group": "gpu", "nic_role": "compute"},
                                                           {"group": "gpu8", "nic_role": "compute"}])
    (h,) = hits(data, "FABRIC005")
    assert h.path == ("fabrics", 0, "attach", 0)
    assert ("rail-optimized fabric ib has 8 rails (8 leaves per SU) but group gpu (hgx) has 4 compute NIC port(s) "
            "per node") in h.message


def test_rail_optimized_with_a_nic_per_rail_is_quiet():
    data = lab()
    ib(data).update(tiers=2, rail_optimized=True)  # hgx-h100-8gpu: 8 compute NICs for 8 rails
    assert hits(data, "FABRIC005") == []


def test_rail_optimized_with_one_nic_is_pointless():
    data = lab()
    data["fabrics"][1]["rail_optimized"] = True
    (h,) = hits(data, "FABRIC005")
    assert str(h.severity) == "warning" and h.path == ("fabrics", 1, "rail_optimized")
    assert "nodes have 1 NIC port each" in h.message


# --- FABRIC006 GPU:NIC ------------------------------------------------------------------------------------

def test_fewer_compute_nics_than_gpus_warns_more_informs():
    data = custom_server(lab(), "hgx-4nic", 4)
    (h,) = hits(data, "FABRIC006")
    assert str(h.severity) == "warning" and h.path == ("node_types", "hgx", "server")
    assert h.message == "node type hgx (hgx-4nic) has 8 GPUs but 4 compute NIC port(s): 2 GPUs share each NIC"
    data = custom_server(lab(), "hgx-16nic", 16)
    (h,) = hits(data, "FABRIC006")
    assert str(h.severity) == "info" and "16 compute NIC ports for 8 GPUs (2 per GPU)" in h.message
    assert hits(custom_server(lab(), "hgx-8nic", 8), "FABRIC006") == []  # one NIC per GPU


# --- FABRIC007 GPU nodes on a compute fabric ----------------------------------------------------------

def test_gpu_group_on_no_compute_fabric():
    data = lab()
    del data["fabrics"][0]
    (h,) = hits(data, "FABRIC007")
    assert h.path == ("node_groups", 0, "name")
    assert h.message == ("node group gpu (2 × hgx-h100-8gpu, 16 GPUs) is on no infiniband or roce fabric "
                         "with nic_role compute")
    assert "{group: gpu, nic_role: compute}" in h.hint


def test_compute_nics_on_plain_ethernet_do_not_count_and_a_single_node_needs_no_fabric():
    data = lab()
    ib(data).pop("subnet_manager")
    ib(data).update(kind="ethernet", switch="sn5600")
    (h,) = hits(data, "FABRIC007")
    assert "fabric ib carries its compute NICs but is plain ethernet (no RDMA)" in h.message
    data["node_groups"][0].update(count=1, hostnames="gpu01")
    assert hits(data, "FABRIC007") == []


# --- FABRIC008 single tier ------------------------------------------------------------------------------

def test_single_tier_with_two_leaves():
    data = lab()
    data["node_groups"][0].update(count=10, hostnames="gpu[01-10]")
    (h,) = hits(data, "FABRIC008")
    assert h.path == ("fabrics", 0, "tiers")
    assert h.message == ("fabric ib has tiers: 1 but 2 leaves (80 endpoints at 64 per qm9700): "
                         "the leaves have no path to each other")


def test_single_tier_with_one_full_leaf_is_quiet():
    data = lab()
    data["node_groups"][0].update(count=8, hostnames="gpu[01-08]")  # 64 endpoints: one qm9700 exactly
    assert hits(data, "FABRIC008") == []


def test_single_tier_rail_optimized_has_a_leaf_per_rail():
    data = lab()
    ib(data)["rail_optimized"] = True
    (h,) = hits(data, "FABRIC008")
    assert "tiers: 1 but 8 leaves (one per rail of a rail-optimized fabric)" in h.message


# --- FABRIC009 protocol ---------------------------------------------------------------------------------

def test_ethernet_only_nics_on_infiniband():
    data = lab()
    ib(data)["attach"].append({"group": "head", "nic_role": "inband"})
    (h,) = hits(data, "FABRIC009")
    assert h.path == ("fabrics", 0, "attach", 1)
    assert h.message == ("fabric ib is infiniband but the eth-25g NICs (inband) of group head speak ethernet, "
                         "not infiniband")


def test_ethernet_nics_on_ethernet_are_quiet():
    data = lab()
    data["fabrics"][1]["attach"].append({"group": "head", "nic_role": "inband"})
    assert hits(data, "FABRIC009") == []


def test_roce_on_an_infiniband_switch():
    data = lab()
    ib(data)["kind"] = "roce"
    ib(data).pop("subnet_manager")
    (h,) = hits(data, "FABRIC009")
    assert h.path == ("fabrics", 0, "switch")
    assert "fabric ib is roce but its leaf switch qm9700 speaks infiniband, not ethernet" in h.message


# --- FABRIC010 attach without NICs ------------------------------------------------------------------------

def test_group_attached_by_a_role_it_has_no_nic_of():
    data = lab()
    ib(data)["attach"].append({"group": "head", "nic_role": "compute"})
    (h,) = hits(data, "FABRIC010")
    assert h.path == ("fabrics", 0, "attach", 1, "nic_role")
    assert h.message == ("group head is attached to fabric ib with nic_role compute, but cpu-1u has no compute NIC "
                         "(it has: bmc, inband)")


def test_group_attached_by_a_role_it_has_is_quiet():
    data = lab()
    data["fabrics"][1]["attach"].append({"group": "head", "nic_role": "inband"})  # cpu-1u has an inband NIC
    assert hits(data, "FABRIC010") == []


def test_all_groups_attached_by_a_role_nobody_has():
    data = lab()
    data["fabrics"][1]["attach"] = [{"group": "all", "nic_role": "mgmt"}]
    (h,) = hits(data, "FABRIC010")
    assert h.path == ("fabrics", 1, "attach", 0, "nic_role") and "no node type has a mgmt NIC" in h.message


# --- FABRIC011 double attachment ------------------------------------------------------------------------

def test_same_nics_on_two_fabrics():
    data = lab()
    data["fabrics"].append({"name": "bmc2", "kind": "ethernet", "tiers": 1, "switch": "sn2201",
                            "attach": [{"group": "gpu", "nic_role": "bmc"}]})
    (h,) = hits(data, "FABRIC011")
    assert str(h.severity) == "warning" and h.path == ("fabrics", 2, "attach", 0)
    assert h.message == "the bmc NICs of group gpu (2 nodes × 1 port) are attached to fabrics mgmt and bmc2"
    data["fabrics"][2]["attach"] = [{"group": "head", "nic_role": "inband"}]  # other NICs: no double attachment
    assert hits(data, "FABRIC011") == []


# --- FABRIC012 / FABRIC013 RoCE QoS ------------------------------------------------------------------------

def roce_bp(**qos):
    data = shipped("hgx-h200-roce-1024")
    data["fabrics"][0].update(qos)
    return data


def test_roce_qos_quiet_on_nvidia_defaults():
    assert not hits(roce_bp(), "FABRIC012") and not hits(roce_bp(), "FABRIC013")


def test_roce_traffic_class_with_ce_bits():
    (h,) = hits(roce_bp(traffic_class=107), "FABRIC012")
    assert str(h.severity) == "error" and h.path == ("fabrics", 0, "traffic_class")
    assert h.message == ("fabric roce: traffic_class 107 sets the ECN bits to 3 (CE, congestion experienced) on every "
                         "RDMA packet") and h.hint == "use DSCP x 4 + 2 (ECT(0)): 106"


def test_roce_not_ect_with_ecn_on_warns():
    (h,) = hits(roce_bp(traffic_class=104), "FABRIC012")
    assert str(h.severity) == "warning" and "ECN bits 0 (not ECN-capable) while ecn is on" in h.message
    assert not hits(roce_bp(traffic_class=104, ecn=False), "FABRIC012")


def test_roce_cnp_dscp_is_the_data_dscp():
    (h,) = hits(roce_bp(cnp_dscp=26), "FABRIC012")
    assert str(h.severity) == "error" and h.path == ("fabrics", 0, "cnp_dscp")
    assert h.message == "fabric roce: cnp_dscp 26 is the RDMA data DSCP (traffic_class 106 >> 2)"


def test_roce_cnp_on_the_lossless_priority_warns():
    (h,) = hits(roce_bp(cnp_dscp=30), "FABRIC012")
    assert str(h.severity) == "warning" and "maps to priority 3, the lossless priority" in h.message


def test_node_type_on_roce_fabrics_with_different_qos():
    data = roce_bp()
    data["node_groups"].append({"name": "gpu2", "type": "hgx", "count": 4, "hostnames": "gpu[201-204]"})
    data["fabrics"].append({"name": "roce2", "kind": "roce", "tiers": 1, "switch": "sn5600", "traffic_class": 98,
                            "attach": [{"group": "gpu2", "nic_role": "compute"}]})
    (h,) = hits(data, "FABRIC013")
    assert h.path == ("fabrics", 4, "traffic_class")
    assert h.message == ("node type hgx has compute NICs on RoCE fabrics roce (traffic_class 106, pfc_priority 3) and "
                         "roce2 (traffic_class 98, pfc_priority 3); its nccl.conf holds one NCCL_IB_TC")
    data["fabrics"][4]["traffic_class"] = 106
    assert not hits(data, "FABRIC013")


def superpod_plus_group():
    """The 1-SU SuperPOD with a second DGX group cabled only to the compute fabric (as a new user adds one)."""
    data = shipped("dgx-h100-superpod-1su")
    data["node_groups"].append({"name": "dgx2", "type": "dgx", "count": 4, "hostnames": "dgx[101-104]"})
    data["fabrics"][0]["attach"].append({"group": "dgx2", "nic_role": "compute"})
    return data


def test_gpu_storage_nics_left_off_the_storage_fabric():
    found = {h.message.split(" NICs")[0]: h for h in hits(superpod_plus_group(), "FABRIC014")}
    assert sorted(found) == ["the inband", "the storage"]  # bmc: attached by group all
    h = found["the storage"]
    assert str(h.severity) == "error" and h.path == ("fabrics", 1, "attach")
    assert h.message == ("the storage NICs of group dgx2 (4 nodes × 2 ports, dgx-h100) are attached to no fabric; "
                         "fabric stor carries the storage NICs of dgx")
    assert h.hint == "add {group: dgx2, nic_role: storage} to the attach list of fabric stor"
    h = found["the inband"]
    assert str(h.severity) == "warning" and h.path == ("fabrics", 2, "attach")


def test_nic_roles_no_fabric_carries_or_of_cpu_groups_are_quiet():
    assert not hits(shipped("dgx-h100-superpod-1su"), "FABRIC014")  # head/login storage NICs: no GPUs
    assert not hits(lab(), "FABRIC014")  # no storage or in-band fabric at all: not modelled


def test_fabric_attached_to_nothing():
    data = lab()
    data["fabrics"][1]["attach"] = [{"group": "head", "nic_role": "storage"}]  # cpu-1u has no storage NIC
    (h,) = hits(data, "FABRIC015")
    assert h.path == ("fabrics", 1, "attach")
    assert h.message == ("fabric mgmt (ethernet) connects no node: its attach entries (head/storage) name no NIC; "
                         "no switch is planned for it")
    assert not hits(lab(), "FABRIC015")
