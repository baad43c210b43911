"""Is this text a cloud node's private address in the blueprint's network? Strictly, because it is written
into the Ansible inventory and every node's ``/etc/hosts``.

Python's :func:`ipaddress.ip_address` accepts more than a node address: IPv6 scope ids (``fe80::1%eth0``,
where anything after ``%`` - a newline and a second hosts line included - is kept), and it happily parses
loopback, link-local, the instance metadata service, multicast or broadcast addresses. So the text must be
the address alone (hex digits, ``.`` and ``:``), the address must not be one of those special kinds, and it
must lie in the blueprint's in-band network for the host's group (an ``addressing`` pool with ``role:
inband``, which the rendered Pulumi project uses as the VPC/VNet/subnet range). Without such a pool only a
private (RFC 1918, RFC 4193) address is accepted.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from clusterctl.hidden_chars import shown

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PLAIN = re.compile(r"[0-9A-Fa-f.:]{2,45}")
"""the characters of a textual IPv4/IPv6 address and nothing else (45 = longest IPv4-suffixed IPv6)"""

METADATA = {
    ipaddress.ip_address("169.254.169.254"): "the instance metadata service (AWS, GCP, Azure)",
    ipaddress.ip_address("fd00:ec2::254"): "AWS's IPv6 instance metadata service",
    ipaddress.ip_address("168.63.129.16"): "Azure's platform endpoint (WireServer)",
}
BROADCAST = ipaddress.ip_address("255.255.255.255")


@dataclass(frozen=True)
class Refused:
    """Why an address is refused: ``problem`` says what it is, ``expected`` what would do."""

    problem: str
    expected: str


def _special(addr: Address) -> str | None:
    """The kind of a special-purpose address, or None for an ordinary unicast one."""
    if addr in METADATA:
        return METADATA[addr]
    if addr == BROADCAST:
        return "the broadcast address"
    for test, kind in ((addr.is_unspecified, "the unspecified address"), (addr.is_loopback, "a loopback address"),
                       (addr.is_link_local, "a link-local address"), (addr.is_multicast, "a multicast address")):
        if test:
            return kind
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return f"an IPv4-mapped IPv6 address (write {addr.ipv4_mapped})"
    if isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local:
        return "a (deprecated) site-local address"
    if addr.is_reserved:
        return "a reserved address"
    return None


def check_address(value: object, network: Network | None, network_name: str = "") -> Address | Refused:
    """``value`` as an address, or why it is not a node address in ``network`` (None: any private address)."""
    where = f"the blueprint's {network_name} network {network}" if network is not None else ""
    expected = f"an address in {where}" if network is not None else "a private address (RFC 1918 or RFC 4193)"
    if not isinstance(value, str):
        return Refused(f"expected an address string, got {shown(value)}", expected)
    if not PLAIN.fullmatch(value):
        return Refused(f"{shown(value)} is not a plain IP address (only hex digits, '.' and ':' - no scope id, "
                       f"spaces or control characters)", expected)
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        return Refused(f"{shown(value)} is not an IP address", expected)
    kind = _special(addr)
    if kind is not None:
        return Refused(f"{value} is {kind}, not a node's private address", expected)
    if network is None:
        if not addr.is_private:
            return Refused(f"{value} is not a private address", expected)
        return addr
    if addr.version != network.version or addr not in network:
        return Refused(f"{value} is outside {where}", "an address in it")
    if network.num_addresses > 2 and addr == network.network_address:
        return Refused(f"{value} is the network address of {network}", expected)
    if network.version == 4 and network.num_addresses > 2 and addr == network.broadcast_address:
        return Refused(f"{value} is the broadcast address of {network}", expected)
    return addr
