"""ADDR005 (world ranges), ADDR006 (a named address the plan gives to a host), SLURM010 (the site's database without
TLS) and CLOUD005's width limit: a triggering case and a near miss for each (tests/security/test_addresses.py runs
the same findings through the command line)."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab, shipped


def test_world_ranges_are_refused_for_ipv4_and_ipv6():
    for cidr in ("0.0.0.0/1", "::/0", "2000::/3", "8000::/1"):
        data = lab()
        data["addressing"]["inband"]["cidr"] = cidr
        (h,) = hits(data, "ADDR005")
        assert str(h.severity) == "error" and h.path == ("addressing", "inband", "cidr")
        assert f"addressing.inband is {cidr}" in h.message


def test_a_slash_8_and_a_ula_pool_are_not_the_world():
    data = lab()
    data["addressing"]["inband"]["cidr"] = "10.0.0.0/8"
    data["addressing"]["bmc"]["cidr"] = "fc00::/7"
    data["addressing"]["mgmt"]["cidr"] = "2a00::/12"  # a registry's allocation: public (ADDR004), not the world
    assert hits(data, "ADDR005") == []
    (h,) = hits(data, "ADDR004")
    assert h.path == ("addressing", "mgmt", "cidr") and "public (not private) IPv6 range" in h.message


def test_addr005_ignores_suppressions():
    data = lab()
    data["addressing"]["inband"]["cidr"] = "::/0"
    data["validation"] = {"suppress": [{"rule": "ADDR005", "reason": "we know"}]}
    (h,) = hits(data, "ADDR005")
    assert h.suppressed is None


def test_reserved_ranges_warn_as_not_private():
    data = lab()
    data["addressing"]["inband"]["cidr"] = "127.0.0.0/24"
    (h,) = hits(data, "ADDR004")
    assert "a reserved (not private) IPv4 range" in h.message


def test_a_named_server_at_a_planned_hosts_address_is_an_error():
    data = lab()
    data["storage"][0]["export"] = "10.10.0.18:/export/home"
    (h,) = hits(data, "ADDR006")
    assert str(h.severity) == "error" and h.path == ("storage", 0, "export")
    assert h.message == ("storage tier home's NFS server 10.10.0.18 is host gpu02 (node group gpu, in-band NIC) in "
                         "addressing.inband (10.10.0.0/24)")
    assert "name it by its host name (gpu02)" in h.hint


def test_a_switch_management_address_is_allocated():
    data = lab()
    # mgmt 10.12.0.0/24: no host has an mgmt NIC, so the two switches take the first two addresses after the
    # 16 reserved: ib-leaf01 (the ib fabric comes first) then mgmt-leaf01
    data["storage"][0]["export"] = "10.12.0.18:/export/home"
    (h,) = hits(data, "ADDR006")
    assert "switch mgmt-leaf01 (management port)" in h.message


def test_per_port_compute_addresses_name_the_port():
    data = shipped("hgx-h200-roce-1024")
    # rdma 10.64.0.0/20, a /31 per compute NIC from offset 18 (16 reserved, then even): 8 NICs, 16 addresses per
    # host; host 2's port 1 is the pair 18 + 16 + 2 = 36 (its leaf) and 37 (the host)
    data["site"]["time_servers"] = ["10.64.0.37"]
    (h,) = hits(data, "ADDR006")
    assert h.path == ("site", "time_servers", 0) and "host gpu002 (node group gpu, compute NIC 1)" in h.message
    data["site"]["time_servers"] = ["10.64.0.36"]
    (h,) = hits(data, "ADDR006")
    assert "the leaf side of the /31 link to host gpu002 (node group gpu, compute NIC 1)" in h.message


def test_named_addresses_outside_the_allocations_are_quiet():
    data = lab()
    data["storage"][0]["export"] = "10.10.0.16:/export/home"  # the last reserved address
    data["site"]["time_servers"] = ["10.10.0.20", "10.10.0.254"]  # after the three hosts; the last host address
    assert hits(data, "ADDR006") == []


def test_cloud_groups_do_not_hold_their_planned_slots():
    data = shipped("gcp-a3-mega")  # its Lustre server is 10.128.0.50, a slot of the VPC pool: the provider's address
    assert hits(data, "ADDR006") == []


def test_the_site_database_needs_its_ca():
    data = lab()
    data["slurm"]["database_host"] = "db.example.org"
    (h,) = hits(data, "SLURM010")
    assert str(h.severity) == "error" and h.path == ("slurm", "database_host") and "without TLS" in h.message
    data["slurm"]["database_ca"] = "/etc/ssl/certs/site-db-ca.pem"
    assert hits(data, "SLURM010") == []


def test_a_database_ca_without_a_database_host_is_an_error():
    data = lab()
    data["slurm"]["database_ca"] = "/etc/ssl/certs/site-db-ca.pem"
    (h,) = hits(data, "SLURM010")
    assert h.path == ("slurm", "database_ca")


@pytest.mark.parametrize("cidr,words", [("0.0.0.0/1", "2,147,483,648 public addresses"),
                                        ("203.0.0.0/15", "131,072 public addresses"),
                                        ("2001:db8::/47", "more than a /48")])
def test_admin_cidr_wider_than_a_site(cidr, words):
    data = shipped("aws-p5")
    data["cloud"]["admin_cidr"] = cidr
    (h,) = hits(data, "CLOUD005")
    assert str(h.severity) == "error" and words in h.message


def test_admin_cidr_of_a_site_is_quiet():
    data = shipped("aws-p5")
    for cidr in ("203.0.0.0/16", "2001:db8::/48", "10.0.0.0/8", "fd00::/8"):
        data["cloud"]["admin_cidr"] = cidr
        assert hits(data, "CLOUD005") == []


@pytest.mark.parametrize("filesystem,servers,held", [
    ("lustre", "10.10.0.[17-18]@o2ib:/fs", ["gpu01", "gpu02"]),  # a host list of failover MGSs, expanded
    ("weka", "10.10.0.17,10.10.0.18/pfs", ["gpu01", "gpu02"]),
    ("vast", "10.10.0.19:/vol", ["head01"]),
])
def test_every_server_of_a_parallel_tier_is_checked(filesystem, servers, held):
    data = lab()
    data["storage"].append({"name": "pfs", "tier": "parallel", "filesystem": filesystem, "mount": "/pfs",
                            "capacity_tb": 1, "read_gb_per_s": 1, "write_gb_per_s": 1, "servers": servers})
    found = hits(data, "ADDR006")
    assert [h.message.split(" is host ")[1].split(" ")[0] for h in found] == held
    assert all(h.path == ("storage", 2, "servers") for h in found)
