"""Addressing: pools large enough, no overlaps, every management role addressed, private ranges only, never
the whole internet, and no address the blueprint names that the plan gives to one of its own hosts."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from clusterctl.plan import ranges
from clusterctl.plan.allocations import holder
from clusterctl.plan.model import AddressPool, ClusterPlan
from clusterctl.names import reserved_reason
from clusterctl.plan.allocations import parse_address
from clusterctl.plan.named_addresses import named_addresses, named_hosts
from clusterctl.rules.base import Hit, Severity, rule


def _network(pool: AddressPool):
    """The pool's prefix (expand has already rejected ones that do not parse)."""
    try:
        return ipaddress.ip_network(pool.cidr, strict=True)
    except ValueError:
        return None


def _what(pool: AddressPool) -> str:
    if pool.role in ("compute", "storage") and pool.point_to_point:
        return f"addresses of {pool.role} NIC ports (two per port: a /31 to the leaf)"
    if pool.role == "compute":
        return "compute NIC ports"
    if pool.role == "loopback":
        return "switch loopbacks"
    if pool.role == "mgmt":
        return "management ports (hosts, switches, rack PDUs and CDUs)"
    return "hosts"


@rule("ADDR001", "addressing", Severity.ERROR, "address pool too small")
def pool_capacity(plan: ClusterPlan) -> Iterator[Hit]:
    """Every address pool must hold an address for each port of its role: one per host for inband
    and bmc, one per NIC port for storage and compute (two, a /31, when a routed RoCE fabric attaches
    the role), and hosts plus every switch's, rack PDU's (one per power feed) and CDU's management port for mgmt. Usable addresses exclude the network and broadcast addresses (IPv4 prefixes shorter
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


@rule("ADDR004", "addressing", Severity.ERROR, "public address range on an internal network")
def public_range(plan: ClusterPlan) -> Iterator[Hit]:
    """Cluster-internal networks (compute, storage, inband, bmc, mgmt) must use private space, IPv4 and
    IPv6 alike: RFC 1918 (10/8, 172.16/12, 192.168/16), RFC 6598 shared space (100.64/10) or IPv6 unique local
    addresses (fc00::/7). A public range that belongs to someone else makes their hosts unreachable from the
    cluster; BMCs on routable addresses are a common way clusters get compromised; and the in-band pools are
    the clients the NFS exports and chrony serve (a public in-band pool exports /home to part of the internet).
    An error: a site that really numbers its internal networks from its own public allocation says so with
    ``--suppress ADDR004`` on the command line, which every output then prints (a blueprint cannot suppress an
    error). Ranges that are the whole internet are ADDR005's, which nothing suppresses."""
    for pool in plan.addresses:
        net = _network(pool)
        if net is None or ranges.is_private(net) or ranges.is_world(net):
            continue
        yield Hit(pool.path + ("cidr",),
                  f"addressing.{pool.name} uses {pool.cidr}, a {ranges.kind_of(net)} (not private) IPv{net.version} "
                  f"range, for the cluster-internal {pool.role} network",
                  f"use private space: {ranges.PRIVATE_WORDS}; if the range is the site's own, pass "
                  "--suppress ADDR004 on the command line")


@rule("ADDR005", "addressing", Severity.ERROR, "address pool is the whole internet", suppressible=False)
def world_range(plan: ClusterPlan) -> Iterator[Hit]:
    """An address pool wider than any one organisation holds - an IPv4 prefix shorter than /8 (0.0.0.0/0,
    0.0.0.0/1), an IPv6 prefix shorter than /12 outside fc00::/7 (::/0, 2000::/3, all global unicast) - is
    the whole internet or a large part of it. The in-band pools are the client range of the NFS exports
    (``/export/home ::/0(rw,...)``) and chrony's ``allow``: every address on the internet would mount /home
    read-write and take time from the controllers. Cannot be suppressed (clusterctl/plan/ranges.py)."""
    for pool in plan.addresses:
        net = _network(pool)
        if net is None or not ranges.is_world(net):
            continue
        widest = ranges.WORLD_PREFIX[net.version]
        yield Hit(pool.path + ("cidr",),
                  f"addressing.{pool.name} is {pool.cidr}, a public prefix shorter than /{widest}: the {pool.role} "
                  f"network would span the internet, and NFS exports and chrony would serve all of it",
                  f"use a private range sized for the cluster: {ranges.PRIVATE_WORDS}")


@rule("ADDR006", "addressing", Severity.ERROR, "a named address is one the plan gives to a host")
def named_address_allocated(plan: ClusterPlan) -> Iterator[Hit]:
    """Every literal address the blueprint names - storage servers (NFS ``export``, Lustre NIDs, WEKA and VAST
    ``servers``, object ``endpoint``), the Slurm database and accounting hosts, upstream time servers, the
    package repositories and the pull-mode remote - must not be an address the plan hands out: a node's or a
    switch's address in any pool, or a pool's network or broadcast address. Such a server is not there: the
    mount, the database connection or the download goes to whichever planned host holds that address (a
    compute node any user's job runs on). A host of the blueprint that serves (``head01`` exporting /home) is
    named by its host name, which is also what makes the roles set it up as the server; machines outside the
    blueprint take an address the plan does not allocate (a pool's ``reserved`` block is kept for them)."""
    for named in named_addresses(plan.blueprint):
        found = holder(plan, named.address)
        if found is None:
            continue
        pool = found.pool
        if found.host is not None:
            reserved = plan.blueprint.addressing[pool.name].reserved
            spare = (f" (the {reserved} after the network address of {pool.cidr} are reserved for such machines)"
                     if reserved else "")
            hint = (f"if {found.host} is the server, name it by its host name ({found.host}); otherwise use an address "
                    f"the plan does not allocate{spare}")
        else:
            hint = "a network or broadcast address is no host: use the server's own address"
        yield Hit(named.path,
                  f"{named.field} {named.text} is {found.what} in addressing.{pool.name} ({pool.cidr})",
                  hint)


def _not_a_server(text: str) -> str | None:
    """Why the server ``text`` (a name or an address as written) is no machine of the site, or None."""
    address = parse_address(text)
    if address is None:
        reason = reserved_reason(text)
        return f"{reason}: it resolves to this machine, or to nothing" if reason else None
    canonical = str(address)
    if address.is_loopback or address.is_unspecified:
        return f"'{text}' is {canonical}, this machine itself (every node would talk to itself)"
    if address.is_multicast or address.is_link_local:
        return f"'{text}' is {canonical}, a {'multicast' if address.is_multicast else 'link-local'} address, no server"
    if text.strip("[]").lower() != canonical:
        return (f"'{text}' is read as the address {canonical} by the resolver (inet_aton), which a reviewer does "
                f"not see: write {canonical}")
    return None


@rule("ADDR007", "addressing", Severity.ERROR, "a named server is this machine, no machine, or an address in disguise",
      suppressible=False)
def named_server_is_a_machine(plan: ClusterPlan) -> Iterator[Hit]:
    """Every server the blueprint names (the fields ADDR006 reads: NFS ``export`` and parallel ``servers``, the
    object ``endpoint``, the Slurm database and accounting hosts, time servers, package repositories, the
    pull-mode remote) must name a machine as a reviewer reads it: not ``localhost*``/``ip6-*`` or a Slurm or
    Ansible keyword (each node would mount or connect to itself, or to whatever answers the name), not a
    loopback, unspecified, multicast or link-local address, and an IPv4 address only in its dotted-quad form:
    ``2130706433``, ``0x7f000001``, ``0177.0.0.1`` and ``127.1`` are all 127.0.0.1 to ``mount`` and ``ssh``.
    Nothing can suppress it."""
    for path, field, text in named_hosts(plan.blueprint):
        reason = _not_a_server(text)
        if reason:
            yield Hit(path, f"{field} {reason}",
                      "name the server by its host name or its own address in dotted-quad form (IPv6 as written by "
                      "ipaddress, e.g. fd00::10)")
