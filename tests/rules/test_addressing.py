"""Addressing rules: each triggered by a small change to the lab blueprint, and quiet on the original."""

from __future__ import annotations

from tests.helpers import hits, lab


def test_pool_too_small_gives_the_arithmetic():
    data = lab()
    data["node_groups"][0].update(count=1024, hostnames="gpu[0001-1024]")
    found = {h.path: h for h in hits(data, "ADDR001")}
    assert set(found) == {("addressing", "inband", "cidr"), ("addressing", "bmc", "cidr")}
    h = found[("addressing", "inband", "cidr")]
    assert "inband 10.10.0.0/24 has 238 usable addresses (256 - network/broadcast - 16 reserved)" in h.message
    assert "for 1,025 hosts" in h.message  # 1,024 GPU nodes + head01


def test_reserved_addresses_count_against_capacity():
    data = lab()
    data["addressing"]["bmc"]["cidr"] = "10.11.0.0/29"  # 8 - 2 = 6 usable, minus 4 reserved = 2 < 3 hosts
    data["addressing"]["bmc"]["reserved"] = 4
    (h,) = hits(data, "ADDR001")
    assert h.path == ("addressing", "bmc", "cidr")
    assert "has 2 usable addresses (8 - network/broadcast - 4 reserved) for 3 hosts (1 short)" in h.message
    data["addressing"]["bmc"]["reserved"] = 3
    assert hits(data, "ADDR001") == []


def test_overlapping_pools_name_both():
    data = lab()
    data["addressing"]["bmc"]["cidr"] = "10.10.0.0/16"
    (h,) = hits(data, "ADDR002")
    assert h.path in (("addressing", "bmc", "cidr"), ("addressing", "inband", "cidr"))
    assert "10.10.0.0/16" in h.message and "10.10.0.0/24" in h.message
    assert "addressing.bmc" in h.message and "addressing.inband" in h.message


def test_adjacent_pools_do_not_overlap():
    data = lab()
    data["addressing"]["bmc"]["cidr"] = "10.10.1.0/24"  # right after inband 10.10.0.0/24
    assert hits(data, "ADDR002") == []
    data["addressing"]["inband"]["cidr"] = "10.10.0.0/23"  # now inband takes 10.10.1.0/24 too
    (h,) = hits(data, "ADDR002")
    assert "10.10.0.0/23" in h.message and "10.10.1.0/24" in h.message


def test_pairwise_overlaps_are_all_reported():
    data = lab()
    for name in ("inband", "bmc", "mgmt"):
        data["addressing"][name]["cidr"] = "10.10.0.0/24"
    assert len(hits(data, "ADDR002")) == 3


def test_bmc_role_without_network_warns():
    data = lab()
    del data["addressing"]["bmc"]
    (h,) = hits(data, "ADDR003")
    assert str(h.severity) == "warning"
    assert h.path == ("addressing",)
    assert "bmc ports of 3 hosts (gpu: 2, head: 1)" in h.message


def test_no_addressing_section_is_not_checked():
    data = lab()
    del data["addressing"]
    assert hits(data, "ADDR003") == []


def test_public_range_on_internal_network_is_an_error():
    data = lab()
    data["addressing"]["inband"]["cidr"] = "8.8.0.0/24"
    (h,) = hits(data, "ADDR004")
    assert str(h.severity) == "error" and h.path == ("addressing", "inband", "cidr")
    assert "8.8.0.0/24" in h.message and "public" in h.message


def test_cgnat_and_rfc1918_are_not_public():
    data = lab()
    data["addressing"]["inband"]["cidr"] = "100.64.0.0/24"
    data["addressing"]["bmc"]["cidr"] = "172.16.0.0/24"
    data["addressing"]["mgmt"]["cidr"] = "192.168.0.0/24"
    assert hits(data, "ADDR004") == []


def test_cloud_clusters_are_not_checked_for_bmc_networks():
    data = lab()
    del data["addressing"]["bmc"]
    data["cloud"] = {"provider": "aws", "region": "us-east-1"}
    assert hits(data, "ADDR003") == []
