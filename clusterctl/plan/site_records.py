"""Every planned address with its DNS name: one naming scheme for the zone files, /etc/hosts, DHCP and the rehearsal.

The plan numbers every address (plan/expand.py sizes the pools, plan/allocations.py formats them); this module
names them, by one scheme (docs/network.md, "Names"):

========================  ==========================  =========  ==========================================
address                   name                        kind       from
========================  ==========================  =========  ==========================================
a host's in-band port     ``gpu001``                  host       the pool of role ``inband``
its BMC                   ``gpu001-bmc``              bmc        role ``bmc``
IPoIB port k              ``gpu001-ib<k>``            ipoib      role ``compute``, InfiniBand compute fabric
RoCE rail k               ``gpu001-rail<k>``          rail       role ``compute`` otherwise (the host side of its
                                                                 /31 on a routed RoCE fabric)
storage port k            ``gpu001-stor<k>``          storage    role ``storage`` (the host side on a routed one)
a host's mgmt port        ``gpu001-mgmt``             mgmt       role ``mgmt`` (no shipped server has one)
a switch's management     ``ib-leaf01``               switch     role ``mgmt``, after the hosts
a switch's loopback       ``roce-leaf01-lo``          switch     role ``loopback`` (router id, routed fabrics)
a rack's PDU k (1..)      ``lab01-pdu1``              pdu        role ``mgmt``, after the switches
a CDU                     ``cdu01``                   cdu        role ``mgmt``, after the PDUs
========================  ==========================  =========  ==========================================

Ports are numbered from 0 in the port order of plan/interfaces.py, every port numbered even when a host has one.
A node group that takes addresses from a second pool of the same role gets the first pool's names there with
``-<pool name>`` appended. Not named: the leaf side of a routed /31 (it is a switch port's address, written in the
switch files), addresses a pool has no room for (ADDR001 reports them), the ``reserved`` block, cloud node groups'
(the provider's DNS names them) and the network and broadcast addresses.

Names are DNS labels only if the host, rack and CDU names are: :func:`name_refusals` is the plan's refusal (a
name that is no RFC 1035 label, or one name for two addresses, case-insensitively as DNS compares them) which
rule NAME009 reports and the DNS target raises.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from clusterctl import hostlist
from clusterctl.plan.allocations import address_text, group_block
from clusterctl.plan.devices import management_devices_of
from clusterctl.plan.model import AddressPool, BPath, ClusterPlan, GroupPlan
from clusterctl.plan.roles import group_of, slurm_roles

DEFAULT_TOP = "internal"
"""the default domain's last label: ``<cluster>.internal``. ``.INTERNAL`` is the top-level string IANA determined for
private use under SSAC's SAC113 ("SSAC Advisory on Private-Use TLDs"), reserved by the ICANN Board after the public
comment "Proposed Top-Level Domain String for Private Use" (24 January - 21 March 2024; the Board resolution itself
was not read): it is never to be delegated in the public DNS"""

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
"""an RFC 1035 label (2.3.1, with RFC 1123 2.1's leading digit): at most 63 characters, letters, digits and
hyphens, a letter or digit at each end"""


@dataclass(frozen=True, slots=True)
class SiteRecord:
    """One planned address and its name."""

    name: str
    """DNS label (host part), e.g. gpu001, gpu001-bmc, gpu001-ib0, roce-leaf01, lab01-pdu1, cdu01"""
    address: str
    """the planned address, text"""
    kind: str
    """"host" | "bmc" | "ipoib" | "storage" | "rail" | "mgmt" | "switch" | "pdu" | "cdu\""""
    owner: str
    """the host or device it belongs to (gpu001 for gpu001-bmc, the rack for a PDU)"""
    pool: str
    """the address pool's name"""


@dataclass(frozen=True, slots=True)
class NameRefusal:
    """Why the plan's names cannot be written into a zone: located at the blueprint value they come from."""

    path: BPath
    message: str
    hint: str
    host_name_invalid: bool = False
    """the owner is a host whose own name is no label: NAME002 reports that cause (the target still refuses)"""


def dns_domain(plan: ClusterPlan) -> str:
    """The cluster's DNS zone: ``site.dns_domain``, default ``<cluster name>.internal``."""
    site = plan.site
    if site is not None and site.dns_domain:
        return site.dns_domain
    return f"{plan.name}.{DEFAULT_TOP}"


def _port_names(plan: ClusterPlan, pool: AddressPool, g: GroupPlan) -> tuple[str, tuple[str, ...]]:
    """(kind, name suffixes of the host's ports) of ``g``'s addresses in ``pool``."""
    count = g.type.nic_count(pool.role)
    if pool.role == "inband":
        return "host", ("",)
    if pool.role in ("bmc", "mgmt"):
        return pool.role, (f"-{pool.role}",)
    if pool.role == "storage":
        return "storage", tuple(f"-stor{k}" for k in range(count))
    infiniband = any(f.kind == "infiniband" for f in plan.fabrics_on("compute", g))
    if infiniband and not pool.point_to_point:
        return "ipoib", tuple(f"-ib{k}" for k in range(count))
    return "rail", tuple(f"-rail{k}" for k in range(count))


def _first_pools(plan: ClusterPlan) -> set[tuple[str, int]]:
    """(pool name, group index) of the first pool of each role a group takes addresses from."""
    seen: set[tuple[str, int]] = set()
    first: set[tuple[str, int]] = set()
    for pool in plan.addresses:
        for gi, _, _ in pool.group_offsets:
            if (pool.role, gi) not in seen:
                seen.add((pool.role, gi))
                first.add((pool.name, gi))
    return first


Numbered = tuple[str, int, str, str]
"""(name, address as an integer, kind, owner): a record before its address is written as text"""


def _host_numbers(plan: ClusterPlan, pool: AddressPool, first_pools: set[tuple[str, int]]) -> Iterator[Numbered]:
    origin = int(ipaddress.ip_network(pool.cidr).network_address) + pool.first_host_offset
    end = origin + pool.capacity
    groups = {g.index: g for g in plan.groups}
    for gi, first, per_host in pool.group_offsets:
        g = groups[gi]
        if g.type.instance is not None:
            continue  # the provider gives a cloud instance its address and its name
        kind, suffixes = _port_names(plan, pool, g)
        if (pool.name, gi) not in first_pools:
            suffixes = tuple(f"{s}-{pool.name}" for s in suffixes)
        step = 2 if pool.point_to_point else 1  # a /31 per port: the host's side is the odd one
        ports = [(k * step + (1 if pool.point_to_point else 0), suffix) for k, suffix in enumerate(suffixes)]
        n = origin + first
        for host in g.hosts:
            for offset, suffix in ports:
                if n + offset >= end:
                    return  # the pool is full: ADDR001
                yield f"{host}{suffix}", n + offset, kind, host
            n += per_host


def _switch_names(plan: ClusterPlan) -> Iterator[str]:
    """Every switch, in the order the management and loopback pools number them (fabrics, tiers, names)."""
    for f in plan.fabrics:
        for tier in f.tiers:
            yield from hostlist.expand(tier.names)


def _device_numbers(plan: ClusterPlan, pool: AddressPool) -> Iterator[Numbered]:
    origin = int(ipaddress.ip_network(pool.cidr).network_address) + pool.first_host_offset
    if pool.switch_offset >= 0:
        suffix = "-lo" if pool.role == "loopback" else ""
        for n, name in enumerate(_switch_names(plan), pool.switch_offset):
            if n >= pool.capacity:
                return
            yield f"{name}{suffix}", origin + n, "switch", name
    if pool.device_offset >= 0:
        devices = management_devices_of(plan.racks, plan.blueprint.rack_profiles, plan.cooling.cdus)
        for n, (name, kind, owner) in enumerate(devices, pool.device_offset):
            if n >= pool.capacity:
                return
            yield name, origin + n, kind, owner


def pool_numbers(plan: ClusterPlan) -> Iterator[tuple[AddressPool, Iterator[Numbered]]]:
    """Each pool with its records as (name, address as an integer, kind, owner): what :func:`site_records` writes
    out, for writers of 100,000-host plans that format the numbers themselves (the reverse zones)."""
    first_pools = _first_pools(plan)
    for pool in plan.addresses:
        yield pool, itertools.chain(_host_numbers(plan, pool, first_pools), _device_numbers(plan, pool))


def site_records(plan: ClusterPlan) -> Iterator[SiteRecord]:
    """Every planned address with its name, pool by pool (the plan's order: by pool name), each pool's hosts in
    node-group and host order, then its switches, PDUs and CDUs. A generator: a 100,000-GPU plan has ~190,000."""
    for pool, numbers in pool_numbers(plan):
        fmt = partial(address_text, pool.version)
        for name, n, kind, owner in numbers:
            yield SiteRecord(name, fmt(n), kind, owner, pool.name)


def management_devices(plan: ClusterPlan) -> list[SiteRecord]:
    """The switches' management ports, the racks' PDUs and the CDUs, with their management addresses (the first
    pool of role ``mgmt``; empty without one)."""
    pool = next((p for p in plan.addresses if p.role == "mgmt"), None)
    if pool is None:
        return []
    fmt = partial(address_text, pool.version)
    return [SiteRecord(name, fmt(n), kind, owner, pool.name) for name, n, kind, owner in _device_numbers(plan, pool)]


def name_servers(plan: ClusterPlan) -> list[SiteRecord]:
    """The hosts that serve the cluster's zones, with their in-band addresses: the Slurm controllers
    (plan/roles.py), which both serve the same rendered files (docs/network.md, "DNS"). Empty without Slurm or
    without an in-band pool: then nothing serves the zones and the DNS target writes none."""
    out = []
    for host in slurm_roles(plan).controllers:
        g = group_of(plan, host)
        block = group_block(plan, "inband", g) if g is not None and g.type.instance is None else None
        if block is None:
            continue
        try:
            address = block[0].address(g.index, g.hosts.index(host))
        except ValueError:
            continue  # the pool is full: ADDR001
        out.append(SiteRecord(host, address, "host", host, block[0].name))
    return out


def _owner_paths(plan: ClusterPlan) -> Iterator[tuple[str, BPath]]:
    """(owner name, the blueprint value it comes from) for every owner a record can have."""
    for g in plan.groups:
        path = (*g.path, "hostnames")
        for host in g.hosts:
            yield host, path
    for f in plan.fabrics:
        for tier in f.tiers:
            for name in hostlist.expand(tier.names):
                yield name, (*f.path, "name")
    for rack in plan.racks:
        yield rack.name, (*rack.path, "names")
    for i, cdu in enumerate(plan.cooling.cdus):
        yield cdu.name, ("cooling", "cdus", i, "name")


_LABEL_LINES = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\n)*")
"""lower-case labels, one a line: :data:`_LABEL` over a whole plan's names in one match"""


def _names_clean(plan: ClusterPlan) -> bool:
    """The quick answer for a clean plan (a 100,000-GPU plan: ~0.1 s): every name a label, none twice."""
    names = [name for _, numbers in pool_numbers(plan) for name, _n, _kind, _owner in numbers]
    text = "\n".join(names).lower() + "\n"
    return len(set(text.split("\n"))) == len(names) + 1 and _LABEL_LINES.fullmatch(text) is not None


def name_refusals(plan: ClusterPlan, limit: int = 5) -> list[NameRefusal]:
    """Names the zone files cannot hold: a name that is no DNS label, or one name (compared as DNS does,
    ignoring case) for two different addresses. At most ``limit`` of each, the rest counted in the last."""
    if _names_clean(plan):
        return []
    bad: list[SiteRecord] = []
    n_bad = 0
    seen: dict[str, SiteRecord] = {}
    clashes: list[tuple[SiteRecord, SiteRecord]] = []
    n_clashes = 0
    for record in site_records(plan):
        if _LABEL.fullmatch(record.name) is None:
            n_bad += 1
            if len(bad) < limit and all(b.owner != record.owner for b in bad):  # one finding per owner
                bad.append(record)
            continue
        key = record.name.lower()
        other = seen.setdefault(key, record)
        if other is not record and other.address != record.address:
            n_clashes += 1
            if len(clashes) < limit:
                clashes.append((other, record))
    if not bad and not clashes:
        return []
    wanted = {r.owner for r in bad} | {r.owner for pair in clashes for r in pair}
    paths = {}
    for owner, path in _owner_paths(plan):
        if owner in wanted:
            paths.setdefault(owner, path)
    out = []
    for k, r in enumerate(bad):
        more = f" (and {n_bad - len(bad):,} more)" if k == len(bad) - 1 and n_bad > len(bad) else ""
        out.append(NameRefusal(paths.get(r.owner, ("name",)),
                               f"the DNS name '{r.name}' of {r.address} ({r.kind} of {r.owner}) is not a DNS label: "
                               f"letters, digits and '-' inside, at most 63 characters{more}",
                               f"rename {r.owner} with letters, digits and hyphens (docs/network.md, \"Names\")",
                               r.kind not in ("switch", "pdu", "cdu") and _LABEL.fullmatch(r.owner) is None))
    for k, (a, b) in enumerate(clashes):
        more = f" (and {n_clashes - limit:,} more)" if k == len(clashes) - 1 and n_clashes > limit else ""
        named = b if b.name == b.owner or a.name != a.owner else a  # the device named like another's record
        out.append(NameRefusal(paths.get(named.owner, ("name",)),
                               f"the DNS name '{b.name}' would be both {a.address} ({a.kind} of {a.owner}) and "
                               f"{b.address} ({b.kind} of {b.owner}){more}",
                               f"rename {named.owner}: the names <host>-bmc, -ib<k>, -rail<k>, -stor<k>, -lo and "
                               "<rack>-pdu<k> are taken (docs/network.md, \"Names\")"))
    return out
