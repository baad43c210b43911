"""Address ranges: which are private, which are the whole internet, which may open SSH.

One decision for every place a range grants access: the address pools (and so the NFS export client
specification and chrony's ``allow``, both written from the in-band pools), rule CLOUD005 and the Pulumi
programs' guard on the admin CIDR (``clusterctl/cloud/pulumi/{aws,gcp,azure}.py``), which may be given on the stack
configuration and so never passes through ``validate``.

* **Private** space: RFC 1918 (10/8, 172.16/12, 192.168/16), RFC 6598 shared space (100.64/10, carrier-grade
  NAT: not routed on the internet) and IPv6 unique local addresses (fc00::/7, RFC 4193). A range is private
  when it lies wholly inside one of them.
* **The world**: a range wider than any one organisation holds: an IPv4 prefix shorter than /8 (the largest
  block IANA ever allocated to one holder) or an IPv6 prefix shorter than /12 (the block IANA allocates to a
  regional registry) that is not inside fc00::/7. ``0.0.0.0/0``, ``0.0.0.0/1``, ``::/0`` and ``2000::/3`` (all
  global unicast) are such ranges. Where a private range is expected, a world range is an error no blueprint
  can suppress: it would export ``/home`` read-write and serve time to every address.
* **An admin range** (where SSH to the cluster may come from) is private, or public space no wider than
  :data:`ADMIN_MAX_PREFIX` (an IPv4 /16, 65,536 addresses, or an IPv6 /48, one site's allocation): an office,
  a VPN or a bastion, never half the internet.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterctl.plan.model import ClusterPlan

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PRIVATE = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("172.16.0.0/12"),
           ipaddress.ip_network("192.168.0.0/16"), ipaddress.ip_network("100.64.0.0/10"),
           ipaddress.ip_network("fc00::/7"))
"""RFC 1918, RFC 6598 shared space, IPv6 unique local addresses"""
PRIVATE_WORDS = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 or IPv6 fc00::/7 (e.g. fd00:10::/64)"

WORLD_PREFIX = {4: 8, 6: 12}
"""a prefix shorter than this (outside private space) is the whole internet, or a large part of it"""
ADMIN_MAX_PREFIX = {4: 16, 6: 48}
"""the widest public range SSH may be opened to: an IPv4 /16, an IPv6 /48"""


def network(text: str) -> Network | None:
    """``text`` as a network (host bits allowed), None when it is not one."""
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def is_private(net: Network) -> bool:
    """Whether ``net`` lies wholly inside private space (RFC 1918, RFC 6598, fc00::/7)."""
    return any(net.version == p.version and net.subnet_of(p) for p in PRIVATE)


def is_world(net: Network) -> bool:
    """Whether ``net`` is the whole internet or a large part of it (the module docstring)."""
    return not is_private(net) and net.prefixlen < WORLD_PREFIX[net.version]


def kind_of(net: Network) -> str:
    """'private', 'public' (routed on the internet) or 'reserved' (loopback, link-local, documentation, ...)."""
    if is_private(net):
        return "private"
    return "public" if net.is_global else "reserved"


def admin_range_problem(text: str) -> str | None:
    """Why ``text`` may not be the range SSH is opened to, None when it may (the module docstring): not a
    network, the whole internet, or more public addresses than an IPv4 /16 or IPv6 /48."""
    net = network(text)
    if net is None:
        return f"'{text}' is not a network prefix"
    if is_private(net):
        return None
    widest = ADMIN_MAX_PREFIX[net.version]
    if net.prefixlen == 0:
        return f"{text} lets the whole internet reach SSH"
    if net.prefixlen < widest:
        return (f"{text} lets {net.num_addresses:,} public addresses reach SSH, more than a /{widest} "
                f"({2 ** (net.max_prefixlen - widest):,}): that is a large part of the internet, not an office or VPN")
    return None


class WorldRangeError(ValueError):
    """A range a service would admit is the whole internet; ``path`` is the pool's ``cidr`` in the blueprint."""

    def __init__(self, message: str, path: tuple):
        super().__init__(message)
        self.path = path


def served_ranges(plan: ClusterPlan) -> tuple[str, ...]:
    """The ranges the cluster's own services admit - the clients of the NFS exports the head nodes serve and of
    chrony on the controllers -: the in-band pools, in blueprint order. Raises :class:`WorldRangeError` for a pool
    that is the world: rule ADDR005 refuses such a blueprint first, and this holds when files are rendered from a
    plan the rules did not judge."""
    out = []
    for pool in plan.addresses:
        if pool.role != "inband":
            continue
        net = network(pool.cidr)
        if net is not None and is_world(net):
            raise WorldRangeError(f"addressing.{pool.name} {pool.cidr} is the whole internet: no NFS export or time "
                                  "service is opened to it", pool.path + ("cidr",))
        out.append(pool.cidr)
    return tuple(out)
