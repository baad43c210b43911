"""Addressing: pools large enough, no overlaps, every management role addressed, private ranges only."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from clusterctl.plan.model import AddressPool, ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
"""RFC 6598 shared address space: not RFC 1918, but not routed on the internet either"""


def _network(pool: AddressPool):
    """The pool's prefix (expand has already rejected ones that do not parse)."""
    try:
        return ipaddress.ip_network(pool.cidr, strict=True)
    except ValueError:
        return None


def _what(pool: AddressPool) -> str:
    if pool.role == "compute":
        return "compute NIC ports"
    if pool.role == "mgmt":
        return "management ports (hosts and switches)"
    return "hosts"


@rule("ADDR001", "addressing", Severity.ERROR, "address pool too small")
def pool_capacity(plan: ClusterPlan) -> Iterator[Hit]:
    """Every address pool must hold an address for each port of its role: one per host for inband,
    bmc and storage, one per compute NIC port for compute, and hosts plus every switch's management
    port for mgmt. Usable addresses exclude the network and broadcast addresses (IPv4 prefixes shorter
    than /31) and the pool's ``reserved`` addresses (gateways, VIPs, DHCP ranges). A pool that runs out
    is found when the last rack is cabled, and renumbering a cluster is a maintenance window."""
    for pool in plan.addresses:
        if pool.needed <= pool.capacity:
            continue
        net = _network(pool)
        total = net.num_addresses if net is not None else pool.capacity
        parts = [f"{total:,}"]
        if net is not None and net.version == 4 and net.prefixlen < 31:
            parts.append("network/broadcast")
        reserved = plan.blueprint.addressing[pool.name].reserved if pool.name in plan.blueprint.addressing else 0
        if reserved:
            parts.append(f"{reserved} reserved")
        shortfall = pool.needed - pool.capacity
        yield Hit(pool.path + ("cidr",),
                  f"{pool.name} {pool.cidr} has {pool.capacity:,} usable addresses ({' - '.join(parts)}) "
                  f"for {pool.needed:,} {_what(pool)} ({shortfall:,} short)",
                  f"use a shorter prefix for addressing.{pool.name}.cidr or lower its reserved count")


@rule("ADDR002", "addressing", Severity.ERROR, "address pools overlap")
def pool_overlap(plan: ClusterPlan) -> Iterator[Hit]:
    """Two address pools must not share addresses: the same address handed out on two networks
    breaks routing between them and makes DHCP/DNS records ambiguous. Every pair is compared."""
    nets = [(p, _network(p)) for p in plan.addresses]
    nets = [(p, n) for p, n in nets if n is not None]
    for j, (pb, nb) in enumerate(nets):
        for pa, na in nets[:j]:
            if na.version == nb.version and na.overlaps(nb):
                yield Hit(pb.path + ("cidr",),
                          f"addressing.{pb.name} ({pb.cidr}) overlaps addressing.{pa.name} ({pa.cidr})",
                          "give each network its own prefix, e.g. consecutive /16s from one private block")


@rule("ADDR003", "addressing", Severity.WARNING, "management NICs without a network")
def roles_without_network(plan: ClusterPlan) -> Iterator[Hit]:
    """When the blueprint plans addresses at all, every bare-metal node's BMC and in-band NICs need a
    network of that role: without one the BMCs cannot be reached for provisioning and power control,
    and the nodes have no management path. Only bmc and inband are checked (compute and storage
    networks may be unnumbered or on a fabric the blueprint does not address). Cloud clusters (a
    ``cloud:`` section) are not checked: the provider addresses every VM and there are no BMCs. A
    blueprint with no ``addressing:`` section is not checked either."""
    if not plan.addresses or plan.blueprint.cloud is not None:
        return
    roles = {p.role for p in plan.addresses}
    for role in ("bmc", "inband"):
        if role in roles:
            continue
        per_group = [(g.name, g.count) for g in plan.groups if g.type.server is not None and g.type.nic_count(role)]
        if not per_group:
            continue
        hosts = sum(n for _, n in per_group)
        detail = ", ".join(f"{name}: {n:,}" for name, n in per_group)
        yield Hit(("addressing",),
                  f"{role} ports of {hosts:,} hosts ({detail}) have no addressing network with role: {role}",
                  f"add a network, e.g. addressing: {{{role}: {{cidr: 10.x.0.0/16, role: {role}}}}}")


def _is_public(net) -> bool:
    """IPv4 outside private (RFC 1918 and other IANA special-purpose) and shared (RFC 6598) space."""
    return net.version == 4 and not net.is_private and not net.subnet_of(_CGNAT)


@rule("ADDR004", "addressing", Severity.WARNING, "public address range on an internal network")
def public_range(plan: ClusterPlan) -> Iterator[Hit]:
    """Cluster-internal networks (compute, storage, inband, bmc, mgmt) should use private IPv4 space
    (RFC 1918 10/8, 172.16/12, 192.168/16) or RFC 6598 shared space (100.64/10). A public range that
    belongs to someone else makes their hosts unreachable from the cluster; BMCs on routable
    addresses are a common way clusters get compromised."""
    for pool in plan.addresses:
        net = _network(pool)
        if net is None or net.version != 4:
            continue
        if not _is_public(net):
            continue
        yield Hit(pool.path + ("cidr",),
                  f"addressing.{pool.name} uses {pool.cidr}, a public IPv4 range, for the cluster-internal "
                  f"{pool.role} network",
                  "use private space: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10")
