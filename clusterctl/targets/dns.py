"""dns target: the cluster's zones and the head nodes' unbound configuration (docs/network.md, "DNS").

Files under ``dns/``:

- ``zones/<domain>.zone``: the forward zone (RFC 1035 5 master file format): every planned address with its name
  (plan/site_records.py), ``A`` or ``AAAA``;
- ``zones/<reverse zone>.zone``: the reverse zones, ``PTR`` records. IPv4 zones sit on octet boundaries (RFC 1035
  3.5 ``in-addr.arpa``): a pool whose prefix is a multiple of 8 is one zone; a shorter one is split into the zones
  of the next octet boundary (a /22 is four /24 zones, a /12 sixteen /16 zones); a longer one (a /26) is served
  as its enclosing /24 zone, which the head nodes are authoritative for as a whole: RFC 2317's classless
  delegation is for delegating part of a /24 to another server, and nothing is delegated here. IPv6 pools the same
  on nibble boundaries (RFC 3596 2.5 ``ip6.arpa``);
- ``unbound.conf``: unbound (1.17, Debian 12) authoritative for those zones (``auth-zone:`` with ``zonefile:``,
  unbound.conf(5)), answering the cluster's networks only (``access-control``), forwarding every other name to
  ``site.dns_servers`` when the blueprint names upstream resolvers and refusing it otherwise;
- ``dns.yml``: the domain, the name servers and the zone files, read by the ``dns_server`` role (unbound on the
  Slurm controllers) and the ``dns_client`` role (every node's resolver: both controllers, ``search <domain>``).

Every zone has the same SOA and NS records: the first controller is the primary master (SOA MNAME), both
controllers are name servers. Both serve the same files, so no zone transfer is configured. The serial is a hash
of the zone's records (no timestamp: the render stays byte-identical); it is not monotonic, which only matters to
a secondary server that transfers the zone (none here).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.allocations import address_text
from clusterctl.plan.site_records import SiteRecord, dns_domain, name_refusals, name_servers, pool_numbers
from clusterctl.targets import RenderError
from clusterctl.targets.common import header
from clusterctl.yamlout import PureDumper, body

DNS_DIR = "dns"
ZONE_DIR = f"{DNS_DIR}/zones"
NODE_ZONE_DIR = "/etc/unbound/clusterctl"
"""where the dns_server role installs the zone files on a head node (unbound.conf's ``zonefile:`` paths)"""
TTL = 3600
SOA_TIMES = (3600, 900, 1209600, 300)
"""refresh, retry, expire, minimum (the negative-answer TTL, RFC 2308 4): RIPE-203's recommended values but a
5-minute negative TTL, so a host added to the blueprint resolves soon after the zones are re-installed"""


@dataclass
class Zone:
    name: str
    """without the trailing dot: ``lab-ha.internal``, ``0.10.10.in-addr.arpa``"""
    lines: list[str] = field(default_factory=list)


def _reverse_origin(address: str, version: int, boundary: int) -> tuple[str, str]:
    """(zone, owner relative to it) of the PTR record of ``address`` in the reverse zone cut at ``boundary`` bits."""
    if version == 4:
        octets = address.split(".")
        keep = boundary // 8
        return (".".join(reversed(octets[:keep])) + ".in-addr.arpa", ".".join(reversed(octets[keep:])))
    nibbles = ipaddress.IPv6Address(address).exploded.replace(":", "")
    keep = boundary // 4
    return ".".join(reversed(nibbles[:keep])) + ".ip6.arpa", ".".join(reversed(nibbles[keep:]))


def reverse_boundary(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    """The prefix length the reverse zones of ``network`` are cut at: the next octet (IPv4) or nibble (IPv6)
    boundary at or after the pool's prefix, at most /24 (IPv4) or /124 (IPv6), at least /8 (IPv4)."""
    step, most = (8, 24) if network.version == 4 else (4, 124)
    return max(step, min(most, -(-network.prefixlen // step) * step))


def reverse_zone_names(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> list[str]:
    """The reverse zones covering ``network`` (the module docstring)."""
    boundary = reverse_boundary(network)
    if network.prefixlen >= boundary:
        return [_reverse_origin(str(network.network_address), network.version, boundary)[0]]
    return [_reverse_origin(str(sub.network_address), network.version, boundary)[0]
            for sub in network.subnets(new_prefix=boundary)]


def _fqdn(name: str, domain: str) -> str:
    return f"{name}.{domain}."


def _zone_text(plan: ClusterPlan, zone: Zone, domain: str, servers: list[SiteRecord]) -> str:
    records = "\n".join(zone.lines)
    serial = int(hashlib.sha256(records.encode()).hexdigest()[:8], 16) % 2_147_483_647 + 1
    refresh, retry, expire, minimum = SOA_TIMES
    head = [header(plan, ";").rstrip("\n"),
            f"; zone {zone.name}: every planned address of the cluster (docs/network.md, \"Names\"), served by "
            f"the dns_server role; the serial is a hash of the records",
            f"$ORIGIN {zone.name}.",
            f"$TTL {TTL}",
            f"@ IN SOA {_fqdn(servers[0].name, domain)} hostmaster.{domain}. "
            f"({serial} {refresh} {retry} {expire} {minimum})"]
    head += [f"@ IN NS {_fqdn(s.name, domain)}" for s in servers]
    return "\n".join(head) + "\n" + (records + "\n" if records else "")


def _ptr_writer(version: int, boundary: int):
    """(zone key of an address number, PTR owner relative to its zone) for the reverse zones cut at ``boundary``:
    integer arithmetic on IPv4 (a 100,000-GPU plan writes ~190,000 PTR records), :func:`_reverse_origin` on IPv6."""
    if version == 4:
        shift = 32 - boundary
        octets = shift // 8
        def owner(n: int) -> str:
            return ".".join(str(n >> (8 * k) & 255) for k in range(octets))
        return (lambda n: n >> shift), owner
    def origin(n: int) -> tuple[str, str]:
        return _reverse_origin(str(ipaddress.IPv6Address(n)), 6, boundary)
    return (lambda n: origin(n)[0]), (lambda n: origin(n)[1])


def _zones(plan: ClusterPlan, domain: str) -> tuple[Zone, list[Zone]]:
    """The forward zone and the reverse zones (in name order) with their records."""
    forward = Zone(domain)
    reverse: dict[str, Zone] = {}
    for pool, numbers in pool_numbers(plan):
        net = ipaddress.ip_network(pool.cidr)
        boundary = reverse_boundary(net)
        by_key: dict[object, Zone] = {}
        zone_key, ptr_owner = _ptr_writer(net.version, boundary)
        for name in reverse_zone_names(net):
            reverse.setdefault(name, Zone(name))
        forward.lines.append(f"; pool {pool.name}")
        rr = "A" if net.version == 4 else "AAAA"
        fmt = partial(address_text, net.version)
        for name, n, _kind, _owner in numbers:
            forward.lines.append(f"{name} IN {rr} {fmt(n)}")
            key = zone_key(n)
            zone = by_key.get(key)
            if zone is None:
                zone_name = _reverse_origin(fmt(n), net.version, boundary)[0]
                zone = by_key[key] = reverse.setdefault(zone_name, Zone(zone_name))
            zone.lines.append(f"{ptr_owner(n)} IN PTR {name}.{domain}.")
    return forward, [reverse[k] for k in sorted(reverse)]


def _unbound_conf(plan: ClusterPlan, zones: Iterable[str]) -> str:
    site = plan.site
    upstream = list(site.dns_servers) if site is not None else []
    v6 = any(ipaddress.ip_network(p.cidr).version == 6 for p in plan.addresses)
    lines = [header(plan).rstrip("\n"),
             "# unbound on the head nodes (the dns_server role installs it as /etc/unbound/unbound.conf.d/"
             "clusterctl.conf):",
             "# authoritative for the cluster's zones, answering the cluster's networks only (unbound.conf(5)).",
             "server:",
             "    # the dns_server role writes each name server's own in-band address here (dns.yml)",
             "    interface: 0.0.0.0",
             "    interface: 127.0.0.1"]
    lines += ["    interface: ::0"] if v6 else ["    do-ip6: no"]
    lines += [f"    access-control: {p.cidr} allow" for p in plan.addresses]
    lines += ["    # the cluster's private reverse zones are ours: not unbound's built-in empty RFC 1918/4193 zones,",
              "    # and unsigned (no DNSSEC validation of them)",
              "    unblock-lan-zones: yes",
              "    insecure-lan-zones: yes"]
    lines += [f'    domain-insecure: "{z}"' for z in zones]
    if not upstream:
        lines += ["    # no upstream resolvers (site.dns_servers): every name outside the cluster's zones is refused; the",
                  "    # cluster's zones pass through (transparent) to their auth-zone",
                  '    local-zone: "." refuse']
        lines += [f'    local-zone: "{z}." transparent' for z in zones]
    for z in zones:
        lines += ["", "auth-zone:", f'    name: "{z}."', f'    zonefile: "{NODE_ZONE_DIR}/{z}.zone"',
                  "    for-downstream: yes", "    for-upstream: yes", "    fallback-enabled: no"]
    if upstream:
        lines += ["", "# every other name: the site's resolvers (site.dns_servers)", "forward-zone:", '    name: "."']
        lines += [f"    forward-addr: {a}" for a in upstream]
    return "\n".join(lines) + "\n"


def render(plan: ClusterPlan) -> dict[str, str]:
    refusals = name_refusals(plan)
    if refusals:
        first = refusals[0]
        error = RenderError(f"dns target: {first.message}")
        error.hint, error.path = first.hint, first.path
        raise error
    servers = name_servers(plan)
    if not servers:
        return {}
    domain = dns_domain(plan)
    forward, reverse = _zones(plan, domain)
    files = {f"{ZONE_DIR}/{z.name}.zone": _zone_text(plan, z, domain, servers) for z in [forward, *reverse]}
    names = [forward.name, *(z.name for z in reverse)]
    files[f"{DNS_DIR}/unbound.conf"] = _unbound_conf(plan, names)
    data = {"dns_domain": domain,
            "dns_name_servers": {s.name: s.address for s in servers},
            "dns_zone_files": [f"{z}.zone" for z in names]}
    files[f"{DNS_DIR}/dns.yml"] = (header(plan) + "# the cluster's DNS: read by the dns_server and dns_client roles\n"
                                   + body(data, dumper=PureDumper))
    return files
