"""Which planned host holds an address: the plan's address pools answered backwards, by arithmetic.

``plan/expand.py`` sizes every address pool and gives each node group a consecutive block of it (``AddressPool``:
the first assignable address after the network address and the ``reserved`` ones, then per group a first
slot and the addresses per host, then the switches' management ports and the racks' PDUs and CDUs on an ``mgmt``
pool). The Ansible hosts
file, the RoCE addresses and ``clusterctl inventory`` compute addresses forwards from that; :func:`holder` goes
the other way: from an address to the pool, the slot and the host, in a few integer operations per pool, with
no table of every address (a 100,000-node plan has none).

An address is *allocated* when the plan gives it to a node's NIC, a switch's, PDU's or CDU's management port, or it is the
network or broadcast address of an IPv4 pool (prefixes shorter than /31). The ``reserved`` block at the start
of a pool and the addresses after the last allocated one are not allocated: they are the site's, for
gateways, VIPs and appliances such as storage servers. Nor are the slots of cloud node groups: the provider
gives an instance its address (DHCP, or the Azure program's own static plan), and no other machine of the
provider's network can hold it.
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.devices import management_devices_of
from clusterctl.plan.model import AddressPool, ClusterPlan, GroupPlan

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_ROLE_WORDS = {"inband": "in-band", "bmc": "BMC", "mgmt": "management", "storage": "storage", "compute": "compute",
               "loopback": "loopback"}


@dataclass(frozen=True, slots=True)
class Holder:
    """Who an allocated address belongs to."""

    pool: AddressPool
    what: str
    """in words: ``host gpu01 (node group gpu, in-band NIC)``, ``the broadcast address``"""
    host: str | None = None
    """the planned host (or switch) that holds it; None for the network and broadcast addresses"""


def address_text(version: int, n: int) -> str:
    """The address numbered ``n`` as text: IPv4 dotted quad written directly (a 100,000-GPU plan formats hundreds of
    thousands of them, and ``ipaddress`` objects cost several times more), IPv6 through :mod:`ipaddress`."""
    if version == 4:
        return f"{n >> 24 & 255}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
    return str(ipaddress.IPv6Address(n))


def parse_address(text: str) -> Address | None:
    """``text`` as an IP address, None when it is a name. IPv6 may be bracketed (``[fd00::1]``, as in URLs and
    NFS exports); IPv4 in any form the C resolver reads as an address (``inet_aton``: ``10.1``, ``0x0a000001``,
    ``167772161``, ``012.0.0.1``), since that is what a mount, ssh or apt does with it."""
    text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    values = []
    for part in parts:
        low = part.lower()
        try:
            values.append(int(low, 16) if low.startswith("0x") else int(low, 8) if len(low) > 1 and low[0] == "0"
                          else int(low, 10))
        except ValueError:
            return None
    limits = [256] * (len(values) - 1)
    last_bits = 8 * (5 - len(values))
    if any(v >= lim for v, lim in zip(values, limits)) or values[-1] >= 1 << last_bits:
        return None
    number = 0
    for v in values[:-1]:
        number = number * 256 + v
    return ipaddress.IPv4Address((number << last_bits) + values[-1])


def _switch_name(plan: ClusterPlan, index: int) -> str | None:
    """The ``index``-th switch in the order the mgmt pool numbers them (fabrics, then tiers, then names)."""
    for fabric in plan.fabrics:
        for tier in fabric.tiers:
            if index < tier.count:
                names = hostlist.expand(tier.names)
                return names[index] if index < len(names) else None
            index -= tier.count
    return None


def _in_pool(plan: ClusterPlan, pool: AddressPool, address: Address) -> Holder | None:
    net = ipaddress.ip_network(pool.cidr)
    offset = int(address) - int(net.network_address)
    special = net.version == 4 and net.prefixlen < 31
    if special and offset == 0:
        return Holder(pool, "the network address")
    if special and offset == net.num_addresses - 1:
        return Holder(pool, "the broadcast address")
    slot = offset - pool.first_host_offset
    if slot < 0 or slot >= min(pool.needed, pool.capacity):
        return None  # the reserved block, or not handed out
    role = _ROLE_WORDS.get(pool.role, pool.role)
    groups = {g.index: g for g in plan.groups}
    for group_index, first, per_host in pool.group_offsets:
        group = groups[group_index]
        if first <= slot < first + per_host * group.count:
            if group.type.instance is not None:
                return None  # a cloud instance: the provider gives its address, not this slot
            host, port = divmod(slot - first, per_host)
            name = group.hosts[host]
            if pool.point_to_point:  # /31 per NIC: the leaf's side (even), then the host's (odd)
                port, host_side = divmod(port, 2)
                if not host_side:
                    routed = any(f.kind == "roce" for f in plan.fabrics_on(pool.role, group))
                    side = "the leaf side of the /31 link to" if routed else "the unused first address of the pair of"
                    return Holder(pool, f"{side} host {name} (node group {group.name}, {role} NIC {port})")
            nic = f"{role} NIC {port}" if per_host > 1 and not (pool.point_to_point and per_host == 2) else f"{role} NIC"
            return Holder(pool, f"host {name} (node group {group.name}, {nic})", name)
    if pool.device_offset >= 0 and slot >= pool.device_offset:
        devices = management_devices_of(plan.racks, plan.blueprint.rack_profiles, plan.cooling.cdus)
        found = next(itertools.islice(devices, slot - pool.device_offset, None), None)
        if found is not None:
            name, kind, owner = found
            what = f"PDU {name} of rack {owner}" if kind == "pdu" else f"CDU {name}"
            return Holder(pool, f"{what} (management port)", name)
    if pool.switch_offset >= 0 and slot >= pool.switch_offset:
        name = _switch_name(plan, slot - pool.switch_offset)
        if name is not None:
            port = "loopback" if pool.role == "loopback" else "management port"
            return Holder(pool, f"switch {name} ({port})", name)
    return None


def holder(plan: ClusterPlan, address: Address) -> Holder | None:
    """The planned host, switch or special address that ``address`` is, or None when the plan allocates it to
    nothing (the module docstring)."""
    for pool in plan.addresses:
        net = ipaddress.ip_network(pool.cidr)
        if net.version == address.version and address in net:
            found = _in_pool(plan, pool, address)
            if found is not None:
                return found
    return None


def group_block(plan: ClusterPlan, role: str, group: GroupPlan) -> tuple[AddressPool, int, int] | None:
    """(pool, first slot, addresses per host) of the first ``role`` pool that gives ``group`` addresses, None
    when none does: what the Ansible hosts file and the RoCE variables compute a group's addresses from."""
    for pool in plan.addresses:
        if pool.role != role:
            continue
        for group_index, first, per_host in pool.group_offsets:
            if group_index == group.index:
                return pool, first, per_host
    return None


def host_addresses(plan: ClusterPlan, hosts: tuple[str, ...], role: str = "inband") -> dict[str, str]:
    """The planned address of each of ``hosts`` in its group's :func:`group_block` pool of ``role`` (hosts without
    one, or past a full pool's end - ADDR001 -, are left out): what the DHCP servers and the boot server are
    addressed by (plan/dhcp.py)."""
    wanted = set(hosts)
    out: dict[str, str] = {}
    for g in plan.groups:
        if not wanted.intersection(g.hosts):
            continue
        block = group_block(plan, role, g)
        if block is None:
            continue
        for i, host in enumerate(g.hosts):
            if host in wanted:
                try:
                    out[host] = block[0].address(g.index, i)
                except ValueError:  # the pool is full: ADDR001
                    continue
    return out
