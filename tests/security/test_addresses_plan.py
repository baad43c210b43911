"""The plan's answers the address rules and the cloud guard ask: who holds an address (plan/allocations.py), which
addresses a blueprint names (plan/named_addresses.py), and which ranges are private, the world, or narrow enough
for SSH (plan/ranges.py)."""

from __future__ import annotations

import ipaddress

import pytest

from clusterctl.plan import ranges
from clusterctl.plan.allocations import holder, parse_address
from clusterctl.plan.named_addresses import named_addresses
from tests.helpers import lab, plan_of


@pytest.mark.parametrize("text,address", [
    ("10.10.0.17", "10.10.0.17"), ("[fd00::1]", "fd00::1"), ("fd00::1", "fd00::1"),
    ("168427537", "10.10.0.17"), ("0x0a0a0011", "10.10.0.17"), ("10.10.17", "10.10.0.17"), ("10.657425", "10.10.8.17"),
    ("012.0.0.1", "10.0.0.1"), ("127.1", "127.0.0.1"),
])
def test_an_address_is_read_in_every_form_the_resolver_reads(text, address):
    assert parse_address(text) == ipaddress.ip_address(address)


@pytest.mark.parametrize("text", ["head01", "gpu-01", "08.0.0.1", "256.1.1.1", "1.2.3.4.5", "10..1", "0x", "db.example.org"])
def test_names_are_not_addresses(text):
    assert parse_address(text) is None


def test_holder_names_the_host_the_network_and_the_broadcast_address():
    plan = plan_of(lab())
    found = holder(plan, ipaddress.ip_address("10.10.0.17"))
    assert (found.host, found.what, found.pool.name) == ("gpu01", "host gpu01 (node group gpu, in-band NIC)", "inband")
    assert holder(plan, ipaddress.ip_address("10.11.0.19")).what == "host head01 (node group head, BMC NIC)"
    assert holder(plan, ipaddress.ip_address("10.10.0.0")).what == "the network address"
    assert holder(plan, ipaddress.ip_address("10.10.0.255")).what == "the broadcast address"
    for free in ("10.10.0.1", "10.10.0.16", "10.10.0.20", "10.9.0.17", "fd00::17"):
        assert holder(plan, ipaddress.ip_address(free)) is None


def test_named_addresses_lists_the_address_fields_not_the_names():
    data = lab()
    data["storage"][0]["export"] = "[fd00::5]:/export/home"
    data["storage"].append({"name": "objects", "tier": "object", "endpoint": "https://10.9.0.1:9000/bucket",
                            "mount": "/objects", "capacity_tb": 1, "read_gb_per_s": 1, "write_gb_per_s": 1})
    data["site"]["time_servers"] = ["ntp.example.org", "10.9.0.2"]
    data["slurm"]["database_host"] = "10.9.0.3"
    found = [(n.path, n.text) for n in named_addresses(plan_of(data).blueprint)]
    assert found == [(("storage", 0, "export"), "fd00::5"), (("storage", 2, "endpoint"), "10.9.0.1"),
                     (("slurm", "database_host"), "10.9.0.3"), (("site", "time_servers", 1), "10.9.0.2")]


@pytest.mark.parametrize("cidr,private,world", [
    ("10.0.0.0/8", True, False), ("100.64.0.0/10", True, False), ("fd00:10::/64", True, False),
    ("fc00::/7", True, False), ("0.0.0.0/0", False, True), ("0.0.0.0/1", False, True), ("8.0.0.0/7", False, True),
    ("8.0.0.0/8", False, False), ("::/0", False, True), ("2000::/3", False, True), ("2001:db8::/32", False, False),
    ("11.0.0.0/7", False, True),
])
def test_private_and_world_ranges(cidr, private, world):
    net = ipaddress.ip_network(cidr, strict=False)
    assert (ranges.is_private(net), ranges.is_world(net)) == (private, world)


@pytest.mark.parametrize("cidr,refused", [
    ("0.0.0.0/32", False), ("203.0.113.7/32", False), ("198.51.0.0/16", False), ("198.50.0.0/15", True),
    ("0.0.0.0/1", True), ("128.0.0.0/1", True), ("0.0.0.0/0", True), ("10.0.0.0/8", False), ("2001:db8:5::/48", False),
    ("2001:db8::/47", True), ("::/0", True), ("fd00::/8", False), ("not-a-range", True),
])
def test_admin_ranges(cidr, refused):
    assert (ranges.admin_range_problem(cidr) is not None) == refused
