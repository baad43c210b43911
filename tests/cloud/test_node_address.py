"""clusterctl.cloud.stack.node_address without the CLI: the address rules inventory --from-pulumi applies."""

from __future__ import annotations

import ipaddress

import pytest

from clusterctl.cloud.stack.node_address import Refused, check_address

V4 = ipaddress.ip_network("10.100.0.0/20")
V6 = ipaddress.ip_network("fd12:3456:789a::/48")


@pytest.mark.parametrize("text, network", [("10.100.0.37", V4), ("10.100.15.254", V4), ("fd12:3456:789a::5", V6),
                                           ("10.1.2.3", None), ("172.31.0.9", None), ("fd00::9", None)])
def test_node_addresses_are_accepted(text, network):
    assert check_address(text, network, "vpc") == ipaddress.ip_address(text)


@pytest.mark.parametrize("value, network, problem", [
    ("fe80::1%eth0\n10.100.0.9 evil", V4, 'is not a plain IP address'),
    ("fd12:3456:789a::5%1", V6, "is not a plain IP address"),
    ("10.100.0.5", V6, "is outside the blueprint's vpc network fd12:3456:789a::/48"),
    ("fd12:3456:789a::", V6, "is the network address"),
    ("169.254.169.254", None, "the instance metadata service"),
    ("168.63.129.16", None, "Azure's platform endpoint"),
    ("100.64.0.1", None, "is not a private address"),  # carrier-grade NAT, not RFC 1918
    ("8.8.8.8", None, "is not a private address"),
    ("fec0::1", None, "site-local"),
    (None, V4, "expected an address string, got null"),
])
def test_refusals_say_what_and_what_was_expected(value, network, problem):
    refused = check_address(value, network, "vpc")
    assert isinstance(refused, Refused) and problem in refused.problem
    assert refused.expected in ("an address in it", f"an address in the blueprint's vpc network {network}",
                                "a private address (RFC 1918 or RFC 4193)")
