"""The fat-tree builder against published reference architectures, and the constructions it must get right.

Each table row below is a published NVIDIA DGX SuperPOD design, rebuilt from a blueprint fragment (DGX
servers with no racks, one rail-optimized fabric) and compared count for count: switches per tier,
node-leaf links and cables, leaf-spine and spine-core cables.
"""

from __future__ import annotations

import pytest

from tests.helpers import plan_of, run


def superpod(server: str, nodes: int, tiers: int, *, switch: str = "qm9700", su_nodes: int = 32,
             catalog: dict | None = None, **fabric) -> dict:
    """``nodes`` DGX on one rail-optimized InfiniBand compute fabric, SUs of ``su_nodes``."""
    fab = {"name": "compute", "kind": "infiniband", "tiers": tiers, "rail_optimized": True, "switch": switch,
           "su_nodes": su_nodes, "attach": [{"group": "dgx", "nic_role": "compute"}], **fabric}
    data = {"name": "ra", "node_types": {"dgx": {"server": server}},
            "node_groups": [{"name": "dgx", "type": "dgx", "count": nodes, "hostnames": f"dgx[0001-{nodes:04d}]"}],
            "fabrics": [fab]}
    if catalog:
        data["catalog"] = catalog
    return data


def bundle(fp, a: str, b: str):
    (found,) = [lk for lk in fp.links if (lk.a, lk.b) == (a, b)]
    return found


def counts(fp) -> dict:
    """switches per tier and cables per link bundle, in the published tables' terms"""
    out = {t.role: t.count for t in fp.tiers}
    out.update({f"{lk.a}-{lk.b}": lk.cables for lk in fp.links})
    return out


def fabric_findings(data: dict) -> list[str]:
    return [f"{f.code} {f.message}" for f in run(data).active() if f.code.startswith("FABRIC")]


# --- NVIDIA DGX SuperPOD with DGX B200 ---------------------------------------------------------------
# Source: NVIDIA DGX SuperPOD B200 reference architecture, "DGX SuperPOD Architecture", table "Larger DGX
# SuperPOD component counts" (QM9700 NDR 400G, 32 DGX B200 per SU, 8 x 400G ConnectX-7 rails):
# https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html
# (SU count, nodes, GPUs, leaf, spine, core, node-leaf cables, leaf-spine cables, spine-core cables)
B200_RA = [
    (2, 64, 512, 16, 8, None, 512, 512, None),
    (4, 128, 1024, 32, 16, None, 1024, 1024, None),
    (8, 256, 2048, 64, 32, None, 2048, 2048, None),
    (16, 512, 4096, 128, 128, 64, 4096, 4096, 4096),
    (32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192),
    (64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384),
]


@pytest.mark.parametrize("su,nodes,gpus,leaf,spine,core,node_leaf,leaf_spine,spine_core", B200_RA,
                         ids=[f"{r[0]}su" for r in B200_RA])
def test_dgx_b200_superpod_component_counts(su, nodes, gpus, leaf, spine, core, node_leaf, leaf_spine, spine_core):
    tiers = 3 if core else 2
    data = superpod("dgx-b200", nodes, tiers)
    plan = plan_of(data)
    (fp,) = plan.fabrics
    assert plan.gpus == gpus and fp.nodes == nodes and len(fp.sus) == su and fp.rails == 8
    expected = {"leaf": leaf, "spine": spine, "node-leaf": node_leaf, "leaf-spine": leaf_spine}
    if core:
        expected |= {"core": core, "spine-core": spine_core}
    assert counts(fp) == expected
    assert bundle(fp, "node", "leaf").count == node_leaf  # straight 400G cables: one link per cable
    assert fp.oversubscription_achieved == 1.0 and fp.pods == (leaf // 32 if core else 1)
    assert fabric_findings(data) == []


# --- NVIDIA DGX SuperPOD with DGX H100 (RA-11333-001) ------------------------------------------------
# Source: NVIDIA DGX SuperPOD H100 reference architecture, "Network Fabrics", Table 4 "Compute fabric
# component count" (the table's number in the web edition):
# https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html
# Its footnote: the SU is a 32-node design, but one DGX is removed to make room for UFM connectivity. The
# four UFM appliance ports sit on the leaves (extra_endpoints: 4), so the "Compute and UFM" cable column is
# nodes x 8 + 4. The 3-SU row has 16 spines, not 12: 24 leaves x 32 uplinks spread evenly over the spines.
# (SU count, nodes, GPUs, leaf, spine, compute+UFM cables, spine-leaf cables)
H100_RA = [
    (1, 31, 248, 8, 4, 252, 256),
    (2, 63, 504, 16, 8, 508, 512),
    (3, 95, 760, 24, 16, 764, 768),
    (4, 127, 1016, 32, 16, 1020, 1024),
]


@pytest.mark.parametrize("su,nodes,gpus,leaf,spine,node_leaf,leaf_spine", H100_RA, ids=[f"{r[0]}su" for r in H100_RA])
def test_dgx_h100_superpod_compute_fabric_with_ufm(su, nodes, gpus, leaf, spine, node_leaf, leaf_spine):
    data = superpod("dgx-h100", nodes, 2, extra_endpoints=4)
    plan = plan_of(data)
    (fp,) = plan.fabrics
    assert plan.gpus == gpus and len(fp.sus) == su and fp.endpoints == nodes * 8 + 4
    assert counts(fp) == {"leaf": leaf, "spine": spine, "node-leaf": node_leaf, "leaf-spine": leaf_spine}
    assert bundle(fp, "node", "leaf").count == node_leaf
    leaf_tier = fp.tier("leaf")
    assert (leaf_tier.down_links, leaf_tier.up_links, leaf_tier.ports_needed) == (32, 32, 64)
    assert fabric_findings(data) == []


def test_a_128th_dgx_next_to_the_ufm_ports_overfills_its_leaves():
    """Why the RA stops at 127 nodes: the four UFM ports take the 128th DGX's leaf ports."""
    data = superpod("dgx-h100", 128, 2, extra_endpoints=4)
    leaf = plan_of(data).fabrics[0].tier("leaf")
    assert (leaf.down_links, leaf.up_links, leaf.ports_needed) == (33, 33, 66)
    assert any(f.startswith("FABRIC001") for f in fabric_findings(data))


def test_a_partly_filled_su_is_cabled_for_the_full_su():
    """RA: 'the fabric should be designed to support the full SU, including leaf switches and leaf-spine
    cables'. 31 nodes without UFM still get 8 leaves of 32 uplinks and 4 spines (not 31 spines of 8)."""
    fp = plan_of(superpod("dgx-h100", 31, 2)).fabrics[0]
    assert counts(fp) == {"leaf": 8, "spine": 4, "node-leaf": 248, "leaf-spine": 256}
    assert fp.tier("leaf").down_links == 32 and fp.oversubscription_achieved == 1.0


# --- NVIDIA DGX SuperPOD with DGX B300, Quantum-X800 InfiniBand (RA-11339-001) -------------------------
# Source: "DGX SuperPOD Architecture", Table 3 "Larger DGX SuperPOD component counts" (Q3400-RA, 144 x 800G
# XDR; 72 DGX B300 per SU, 8 x 800G ConnectX-8 rails):
# https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/dgx-superpod-architecture.html
# The spine counts 18 and 36 are the even spread again (72 uplinks per leaf: 16 -> 18, 32 -> 36 spines).
# The table's 18-SU row lists 9,216 GPUs, which contradicts its own 1,296 nodes and 10,368 node-leaf
# cables (1,296 x 8); the node and cable counts are used here.
# (SU count, nodes, leaf, spine, node-leaf cables, leaf-spine cables)
B300_XDR_RA = [
    (1, 72, 8, 4, 576, 576),
    (2, 144, 16, 8, 1152, 1152),
    (4, 288, 32, 18, 2304, 2304),
    (8, 576, 64, 36, 4608, 4608),
    (18, 1296, 144, 72, 10368, 10368),
]

# The catalog ships no DGX B300 (its generic HGX B300, hgx-b300-8gpu, has the same eight 800G NICs); this
# blueprint-local entry stands in for the DGX B300 of the RA. Only its eight 800G XDR compute NICs matter to
# the fabric (the GPU model is a placeholder).
CX8_SERVER = {"servers": {"dgx-b300-xdr": {
    "description": "stand-in for DGX B300 (XDR SuperPOD RA): 8 GPUs, 8 x ConnectX-8 800G XDR compute NICs",
    "gpus": {"model": "b200", "count": 8},
    "cpu": {"sockets": 2, "cores_per_socket": 56, "threads_per_core": 2},
    "memory_gb": 2048,
    "nics": [{"model": "cx8-800g", "count": 8, "role": "compute"},
             {"model": "eth-1g-bmc", "count": 1, "role": "bmc"}],
    "power_kw": 14.5, "height_u": 10, "nvlink_domain_gpus": 8}}}


@pytest.mark.parametrize("su,nodes,leaf,spine,node_leaf,leaf_spine", B300_XDR_RA,
                         ids=[f"{r[0]}su" for r in B300_XDR_RA])
def test_quantum_x800_xdr_superpod_component_counts(su, nodes, leaf, spine, node_leaf, leaf_spine):
    data = superpod("dgx-b300-xdr", nodes, 2, switch="q3400-ra", su_nodes=72, catalog=CX8_SERVER)
    (fp,) = plan_of(data).fabrics
    assert len(fp.sus) == su and fp.nic_gbps == 800
    assert counts(fp) == {"leaf": leaf, "spine": spine, "node-leaf": node_leaf, "leaf-spine": leaf_spine}
    leaf_tier = fp.tier("leaf")
    assert (leaf_tier.down_links, leaf_tier.down_gbps, leaf_tier.up_links, leaf_tier.ports_needed) == (72, 800, 72, 144)
    assert fp.max_endpoints == 144 * 144 // 2  # k^2/2: the 18-SU row is the largest two-tier XDR fabric
    assert fabric_findings(data) == []


# --- constructions -------------------------------------------------------------------------------------

def hgx(nodes: int, server: str = "hgx-h100-8gpu", **fabric) -> dict:
    fab = {"name": "compute", "kind": "infiniband", "tiers": 2, "switch": "qm9700",
           "attach": [{"group": "gpu", "nic_role": "compute"}], **fabric}
    return {"name": "t", "node_types": {"hgx": {"server": server}},
            "node_groups": [{"name": "gpu", "type": "hgx", "count": nodes, "hostnames": f"gpu[001-{nodes:03d}]"}],
            "fabrics": [fab]}


def test_non_rail_optimized_two_tier_fills_each_leaf_with_whole_nodes():
    # 32 ports down per QM9700 at 1:1 = 4 nodes of 8 NICs per leaf; every leaf's 32 uplinks over 4 spines
    fp = plan_of(hgx(32)).fabrics[0]
    assert counts(fp) == {"leaf": 8, "spine": 4, "node-leaf": 256, "leaf-spine": 256}
    assert fp.su_nodes == 4 and fp.sus[0].hostlist == "gpu[001-004]" and fp.sus[0].leaves == "compute-leaf01"
    assert fp.leaves_per_su == 1 and fp.tier("spine").down_links == 64


def test_non_rail_optimized_2_to_1():
    # at 2:1 a QM9700 leaf takes 42 downlinks + 21 uplinks: 5 nodes (40 ports) and 20 uplinks per leaf
    fp = plan_of(hgx(40, oversubscription=2.0)).fabrics[0]
    leaf = fp.tier("leaf")
    assert fp.leaf_down_capacity == 42 and fp.su_nodes == 5
    assert (leaf.count, leaf.down_links, leaf.up_links, leaf.ports_needed) == (8, 40, 20, 60)
    assert fp.oversubscription_achieved == pytest.approx(2.0) and fp.tier("spine").count == 4
    assert counts(fp)["leaf-spine"] == 160


def test_roce_on_sn5600_splits_800g_ports_for_400g_nics():
    data = hgx(128, "hgx-h200-8gpu", kind="roce", switch="sn5600", rail_optimized=True)
    fp = plan_of(data).fabrics[0]
    leaf = fp.tier("leaf")
    # 64 nodes per SU: each rail leaf takes 64 x 400G on 32 native ports (2 x 400G splitters) + 32 x 800G up
    assert fp.su_nodes == 64 and len(fp.sus) == 2
    assert (leaf.count, leaf.down_links, leaf.down_gbps, leaf.down_breakout, leaf.down_ports) == (16, 64, 400, 2, 32)
    assert (leaf.up_links, leaf.up_gbps, leaf.ports_needed) == (32, 800, 64)
    node_leaf = bundle(fp, "node", "leaf")
    assert (node_leaf.count, node_leaf.breakout, node_leaf.cables) == (1024, 2, 512)
    leaf_spine = bundle(fp, "leaf", "spine")
    assert (leaf_spine.count, leaf_spine.gbps, leaf_spine.cables) == (512, 800, 512)
    assert fp.tier("spine").count == 8 and fp.oversubscription_achieved == 1.0
    assert fp.max_endpoints == 64 * 64  # 64 spine ports x 64 downlinks per leaf
    assert fabric_findings(data) == []


def test_three_tiers_split_into_pods_of_four_sus():
    fp = plan_of(superpod("dgx-b200", 512, 3)).fabrics[0]
    assert fp.pods == 4 and fp.leaves_per_pod == 32 and fp.leaves_per_su == 8
    spine = fp.tier("spine")
    assert (spine.down_links, spine.up_links, spine.ports_needed) == (32, 32, 64)
    assert fp.max_endpoints == 64 ** 3 // 4


def test_three_tier_partial_last_pod_uplinks_only_what_it_carries():
    # 18 SUs = 144 leaves = 4 full pods of 32 + one of 16: that pod's spines take half the links, and send as many up
    fp = plan_of(superpod("dgx-b200", 576, 3)).fabrics[0]
    assert fp.pods == 5 and fp.tier("spine").count == 160
    assert counts(fp)["leaf-spine"] == 144 * 32 and counts(fp)["spine-core"] == 144 * 32
    assert fp.tier("core").count == 72


def mgmt_blueprint() -> dict:
    """Three racks of 4 DGX H100 (+ a head node in the first) with an SN2201 per rack, 4 x 100G uplinks."""
    return {
        "name": "oob",
        "rack_profiles": {"dgx": {"power_kw": 44, "feeds": 2, "feed_kw": 44, "units": 48, "air_kw": 44}},
        "racks": [{"names": "r[01-03]", "profile": "dgx"}],
        "catalog": {"switches": {"agg-100g": {
            "description": "test aggregation switch: 32 x 100GbE", "protocols": ["ethernet"],
            "port_modes": [{"speed_gbps": 100, "ports": 32}], "power_w": 500, "height_u": 1}}},
        "node_types": {"dgx": {"server": "dgx-h100"}, "head": {"server": "cpu-1u"}},
        "node_groups": [
            {"name": "head", "type": "head", "role": "head", "count": 1, "hostnames": "head01", "racks": "r01"},
            {"name": "dgx", "type": "dgx", "count": 12, "hostnames": "dgx[01-12]", "racks": "r[01-03]", "per_rack": 4},
        ],
        "fabrics": [{"name": "oob", "kind": "ethernet", "tiers": 2, "su_by": "rack", "switch": "sn2201",
                     "spine_switch": "agg-100g", "attach": [{"group": "all", "nic_role": "bmc"}]}],
    }


def test_management_fabric_puts_one_sn2201_in_every_rack():
    data = mgmt_blueprint()
    plan = plan_of(data)
    (fp,) = plan.fabrics
    leaf = fp.tier("leaf")
    assert [(su.rack, su.nodes, su.leaves) for su in fp.sus] == [(0, 5, "oob-leaf01"), (1, 4, "oob-leaf02"),
                                                                 (2, 4, "oob-leaf03")]
    # 48 x 1G access ports; the 100G uplinks are the switch's 4 dedicated ports, not access ports
    assert (leaf.count, leaf.down_links, leaf.down_gbps, leaf.ports_needed, leaf.ports_available) == (3, 5, 1, 5, 48)
    assert (leaf.up_dedicated, leaf.up_links, leaf.up_gbps) == (True, 1, 100)
    assert counts(fp) == {"leaf": 3, "spine": 1, "node-leaf": 13, "leaf-spine": 3}
    for rack in plan.racks:
        assert [(i.label, i.count) for i in rack.items if i.label == "sn2201"] == [("sn2201", 1)]
    # this fragment has no compute fabric, which FABRIC007 rightly reports; nothing else is wrong
    assert [f for f in fabric_findings(data) if not f.startswith("FABRIC007")] == []


def test_management_uplinks_beyond_the_dedicated_ports():
    data = mgmt_blueprint()
    data["fabrics"][0]["leaf_uplinks"] = 6
    found = [f for f in fabric_findings(data) if f.startswith("FABRIC001")]
    assert found == ["FABRIC001 leaf oob-leaf01 (sn2201) needs 6 uplinks of its 4 dedicated 100G uplink ports"]
