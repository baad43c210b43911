"""The routed underlay (clusterctl/plan/underlay.py): ASNs, loopbacks, BGP-unnumbered cabling and the hosts' /31
rail links, written out by hand for a small slice of the shipped RoCE blueprint (4 HGX hosts in 2 scalable units
of 2, 8 rails: 16 leaves, 2 spines, one uplink from every leaf to each spine)."""

from __future__ import annotations

import pytest

from clusterctl.plan import underlay
from clusterctl.plan.allocations import holder, parse_address
from tests.helpers import plan_of, roce_slice, shipped


@pytest.fixture(scope="module")
def plan():
    return plan_of(roce_slice())


def by_name(plan, fabric="roce"):
    fp = next(f for f in plan.fabrics if f.name == fabric)
    return {s.name: s for s in underlay.switches(plan, fp)}


def test_asn_plan_rfc7938(plan):
    sw = by_name(plan)
    assert len(sw) == 18
    assert sw["roce-leaf01"].asn == 4200010001 and sw["roce-leaf16"].asn == 4200010016
    assert sw["roce-spine01"].asn == sw["roce-spine02"].asn == 4200000001  # one ASN for the top tier
    conv = by_name(plan, "converged")  # the second fabric: its own block
    assert conv["converged-leaf01"].asn == 4201010001 and conv["converged-spine01"].asn == 4201000001


def test_loopbacks_from_the_loopback_pool(plan):
    sw = by_name(plan)
    # 10.65.0.0/24, 16 reserved after the network address: the first switch of the first fabric is .17
    assert sw["roce-leaf01"].loopback == "10.65.0.17" and sw["roce-leaf16"].loopback == "10.65.0.32"
    assert (sw["roce-spine01"].loopback, sw["roce-spine02"].loopback) == ("10.65.0.33", "10.65.0.34")
    found = holder(plan, parse_address("10.65.0.33"))
    assert found is not None and found.host == "roce-spine01" and "loopback" in found.what


def test_leaf_ports_hosts_and_uplinks(plan):
    sw = by_name(plan)
    assert sw["roce-leaf01"].ports == (
        underlay.Port("swp1s0", "host", "gpu001", "rail 0", "10.64.0.18/31"),
        underlay.Port("swp1s1", "host", "gpu002", "rail 0", "10.64.0.34/31"),
        underlay.Port("swp2", "fabric", "roce-spine01", "swp1"),
        underlay.Port("swp3", "fabric", "roce-spine02", "swp1"))
    assert sw["roce-leaf09"].ports[0] == underlay.Port("swp1s0", "host", "gpu003", "rail 0", "10.64.0.50/31")
    assert sw["roce-leaf16"].ports[1] == underlay.Port("swp1s1", "host", "gpu004", "rail 7", "10.64.0.80/31")
    spine = sw["roce-spine02"].ports
    assert len(spine) == 16 and spine[0] == underlay.Port("swp1", "fabric", "roce-leaf01", "swp3")
    assert spine[15] == underlay.Port("swp16", "fabric", "roce-leaf16", "swp3")


def test_host_rails(plan):
    rails = underlay.host_rails(plan, "gpu001")
    assert [(r.rail, r.address, r.prefix, r.gateway, r.table, r.priority, r.leaf, r.leaf_port) for r in rails[:2]] == [
        (0, "10.64.0.19", 31, "10.64.0.18", 101, 1000, "roce-leaf01", "swp1s0"),
        (1, "10.64.0.21", 31, "10.64.0.20", 102, 1001, "roce-leaf02", "swp1s0")]
    last = underlay.host_rails(plan, "gpu004")[7]
    assert (last.address, last.gateway, last.leaf, last.leaf_port, last.device) == (
        "10.64.0.81", "10.64.0.80", "roce-leaf16", "swp1s1", "mlx5_7")
    assert underlay.host_rails(plan, "head01") == ()
    pool = next(p for p in plan.addresses if p.role == "compute")
    assert pool.point_to_point and pool.address(0, 3, 7) == "10.64.0.81"
    assert "leaf side" in holder(plan, parse_address("10.64.0.80")).what


def test_three_tier_cabling_reaches_every_core():
    plan = plan_of(shipped("frontier-3tier-100k"))
    fp = plan.fabrics[0]
    st, ct = fp.tier("spine"), fp.tier("core")
    # 52 pods of 32 leaves, 32 spines per pod, 832 cores: leaf 33 (pod 2) uplink 5 goes to pod 2's 6th spine
    assert underlay.leaf_uplink(fp, 32, 5) == (37, 0)
    assert underlay.asn(fp, "spine", 31) == 4200001000 and underlay.asn(fp, "spine", 32) == 4200001001
    assert underlay.asn(fp, "core", 831) == 4200000001 and underlay.asn(fp, "leaf", 1663) == 4200011664
    starts = underlay.spine_uplink_starts(fp)
    assert starts[:3] == [0, 32, 64] and starts[-1] + underlay.spine_uplinks(fp, st.count - 1) == 53248
    assert 53248 // ct.count == 64 == ct.down_links


def test_declared_path_between_inband_fabrics():
    plan = plan_of(shipped("hgx-h200-roce-1024"))  # converged (the GPU nodes' in-band) routes_to svc (head, login)
    links = underlay.border_links(plan)
    assert links == (
        underlay.BorderLink("converged", "converged-leaf06", "swp49", "svc", "svc-leaf01", "swp5"),
        underlay.BorderLink("svc", "svc-leaf01", "swp5", "converged", "converged-leaf06", "swp49"))
    assert underlay.connected(plan, "svc", "converged") and not underlay.connected(plan, "svc", "roce")
    svc = by_name(plan, "svc")["svc-leaf01"]
    assert svc.ports[-1] == underlay.Port("swp5", "fabric", "converged-leaf06", "swp49")


def test_border_on_the_spine_when_the_leaves_are_full():
    # gb200's converged leaves use all 64 ports (32 x 4 x 200G down, 32 up): the path lands on the first spine
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    assert underlay.border_links(plan)[0] == underlay.BorderLink(
        "svc", "svc-leaf01", "swp5", "converged", "converged-spine01", "swp41")


def test_storage_ports_on_a_converged_roce_fabric_are_l3_to_the_host():
    """gb200-nvl72-8rack's converged fabric: each tray's two storage ports take a /31 of the storage pool
    (10.51.0.0/22, network + 16 reserved = .17, pairs from .18; 4 addresses per tray), the leaf's side even; its
    in-band ports stay L2 (no address); the pool's forward and backward answers agree."""
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    leaf = by_name(plan, "converged")["converged-leaf01"]
    assert leaf.ports[4:8] == (
        underlay.Port("swp2s0", "host", "gb002", "storage", "10.51.0.22/31"),
        underlay.Port("swp2s1", "host", "gb002", "storage", "10.51.0.24/31"),
        underlay.Port("swp2s2", "host", "gb002", "inband", ""),
        underlay.Port("swp2s3", "host", "gb002", "inband", ""))
    links = underlay.host_links(plan, "gb002", "storage")
    assert [(r.rail, r.netdev, r.address, r.prefix, r.gateway, r.table, r.priority, r.leaf, r.leaf_port)
            for r in links] == [
        (0, "enP6p3s0f0np0", "10.51.0.23", 31, "10.51.0.22", 201, 2000, "converged-leaf01", "swp2s0"),
        (1, "enP6p3s0f1np1", "10.51.0.25", 31, "10.51.0.24", 202, 2001, "converged-leaf01", "swp2s1")]
    pool = next(p for p in plan.addresses if p.role == "storage")
    assert pool.point_to_point and pool.address(0, 1, 1) == "10.51.0.25"
    assert holder(plan, parse_address("10.51.0.25")).what == "host gb002 (node group gb200, storage NIC 1)"
    assert holder(plan, parse_address("10.51.0.24")).what == (
        "the leaf side of the /31 link to host gb002 (node group gb200, storage NIC 1)")
    # head01's storage port is on no routed fabric: the odd address of its pair, no /31 link
    assert underlay.host_links(plan, "head01", "storage") == () and pool.address(1, 0, 0) == "10.51.2.83"
    assert holder(plan, parse_address("10.51.2.82")).what == (
        "the unused first address of the pair of host head01 (node group head, storage NIC 0)")
    assert underlay.host_links(plan, "gb002", "inband") == ()
