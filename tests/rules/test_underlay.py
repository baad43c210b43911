"""Routed-underlay rules (clusterctl/rules/underlay.py): switch loopbacks (UNDERLAY001, UNDERLAY002) and the
declared paths between fabrics (UNDERLAY003, UNDERLAY004), on a hand-written slice of the shipped RoCE
blueprint and on the shipped blueprint itself, changed one thing at a time."""

from __future__ import annotations

from tests.helpers import codes, hits, roce_slice, shipped


def test_underlay001_a_routed_fabric_without_a_loopback_pool():
    data = roce_slice()
    assert hits(data, "UNDERLAY001") == []
    del data["addressing"]["loopback"]
    (h,) = hits(data, "UNDERLAY001")
    assert "fabrics roce, converged, oob get" in h.message  # svc: one switch, no BGP peer


def test_a_loopback_pool_too_small_is_addr001():
    data = roce_slice()
    assert "ADDR001" not in codes(data)
    data["addressing"]["loopback"]["cidr"] = "10.65.0.0/27"  # 32 - 2 - 16 reserved = 14 for 18 + 6 + 1 + 5 switches
    assert "ADDR001" in codes(data)


def test_underlay002_ipv6_loopbacks_are_an_error():
    data = roce_slice()
    assert hits(data, "UNDERLAY002") == []
    data["addressing"]["loopback"]["cidr"] = "fd00:255::/64"  # BGP router ids are IPv4
    (h,) = hits(data, "UNDERLAY002")
    assert h.path == ("addressing", "loopback", "cidr")


def test_underlay003_and_004_paths_between_fabrics():
    data = shipped("hgx-h200-roce-1024")  # converged (the GPU nodes' in-band) routes_to svc (head, login)
    assert hits(data, "UNDERLAY003") == [] and hits(data, "UNDERLAY004") == []
    del data["fabrics"][1]["routes_to"]
    (h,) = hits(data, "UNDERLAY003")
    assert h.path == ("fabrics", 2, "routes_to") and "fabric svc" in h.message and "fabric converged" in h.message
    data["fabrics"][2]["routes_to"] = ["converged", "roce"]  # roce: 64 of 64 ports in use on leaves and spines
    (h,) = hits(data, "UNDERLAY004")
    assert "fabric roce" in h.message
