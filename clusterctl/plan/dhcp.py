"""What the cluster's DHCP servers hand out, decided once: which pools they serve, which address each known MAC
gets, which hosts have no MAC yet, who the servers are and where a booting node is sent (docs/network.md, "DHCP").

- **Servers**: the Slurm controllers (primary first), the hosts that already run the cluster's own services; two or
  more make a Kea high-availability pair (hot standby: the first controller answers, the second takes over).
- **Subnets**: one per IPv4 pool of role ``inband``, ``bmc`` and ``mgmt`` (the in-band ports, the BMCs, the
  switches' management ports, the PDUs and the CDUs); the compute, storage and loopback pools are configured
  statically from the plan (host_network, the switch files). Each subnet's id is its network address as a number
  (10.10.0.0/24 -> 168427520): stable when pools are added, removed or reordered, unique because pools do not
  overlap (ADDR003). IPv6 pools are not served (DHCPv4 only; DHCPv6 is not written).
- **Reservations**: by ``hw-address`` only, from the inventory (plan/host_identity.py): a host's in-band address
  for its ``inband_mac``, its BMC's address for its ``bmc_mac``, a management device's (switch, PDU, CDU: names
  and addresses from plan/site_records.py) management address for its row's ``mgmt_mac``. A device without a
  MAC gets no reservation and is counted apart (:attr:`DhcpSubnet.unreserved_devices`); it takes its address
  statically or by the vendor's own zero-touch provisioning from the rendered names. No dynamic pool: an unknown MAC
  gets no address, so a wrongly cabled or unknown machine never takes a planned address. A planned address whose
  MAC is unknown gets no reservation and is counted (:attr:`DhcpSubnet.unreserved`); rule INVENTORY002 reports
  hosts and devices without MACs for the whole cluster (clusterctl/rules/inventory.py), so no DHCP rule repeats
  it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from clusterctl.plan.host_identity import HostIdentity, device_macs, host_identities
from clusterctl.plan.allocations import host_addresses
from clusterctl.plan.model import AddressPool, ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.site_records import SiteRecord, site_records

SERVED_ROLES = ("inband", "bmc", "mgmt")
"""the pool roles DHCP serves: the addresses a machine has before anything configured it"""


@dataclass(frozen=True, slots=True)
class Reservation:
    mac: str
    """canonical lower-case ``aa:bb:cc:dd:ee:ff``"""
    address: str
    name: str
    """the record's DNS label (gpu01, gpu01-bmc, ib-leaf01)"""


@dataclass(frozen=True, slots=True)
class DhcpSubnet:
    id: int
    """Kea's subnet id: the network address as a number (module docstring)"""
    pool: str
    cidr: str
    role: str
    reservations: tuple[Reservation, ...]
    unreserved: int
    """planned addresses of the pool with no MAC in the inventory: no reservation"""
    unreserved_devices: int = 0
    """of :attr:`unreserved`, the management devices' (switches, PDUs, CDUs)"""


@dataclass(frozen=True, slots=True)
class BootSettings:
    """The provisioner's boot parameters (blueprint ``site.provisioner``), its server resolved to an address."""

    kind: str
    next_server: str
    bios_boot_file: str
    uefi_boot_file: str
    ipxe_script_url: str | None
    http_boot_url: str | None


def dhcp_servers(plan: ClusterPlan) -> tuple[str, ...]:
    """The hosts that run the DHCP server: the Slurm controllers, primary first; none without Slurm or on a
    cloud (the provider's network hands out the addresses)."""
    if plan.cloud is not None:
        return ()
    return slurm_roles(plan).controllers


def inband_addresses(plan: ClusterPlan, hosts: tuple[str, ...]) -> dict[str, str]:
    """The planned in-band address of each of ``hosts`` that has one."""
    return host_addresses(plan, hosts, "inband")


def listen_addresses(plan: ClusterPlan) -> dict[str, list[str]]:
    """Each DHCP server's planned addresses on the networks it serves: its in-band address, and its management
    port's when its node type has one (``mgmt`` NIC role); the dhcp_server role binds the interfaces carrying
    them. The BMC pool holds BMCs, never the server's own port: BMCs are reached through the management
    network's relay (docs/network.md, "DHCP")."""
    servers = dhcp_servers(plan)
    inband = inband_addresses(plan, servers)
    mgmt = host_addresses(plan, servers, "mgmt")
    return {h: [a for a in (inband.get(h), mgmt.get(h)) if a] for h in servers if h in inband or h in mgmt}


def served_pools(plan: ClusterPlan) -> list[AddressPool]:
    """The IPv4 pools the DHCP servers serve, in the plan's order."""
    return [p for p in plan.addresses if p.role in SERVED_ROLES and p.version == 4]


def serves_dhcp(plan: ClusterPlan) -> bool:
    """Whether the cluster runs its own DHCP server: DHCP servers and at least one pool to serve."""
    return bool(dhcp_servers(plan)) and bool(served_pools(plan))


DEVICE_KINDS = frozenset({"switch", "pdu", "cdu"})
"""the site records of management devices (plan/site_records.py), reserved by their row's ``mgmt_mac``"""


def _mac_of(record: SiteRecord, identities: Mapping[str, HostIdentity], devices: Mapping[str, str]) -> str | None:
    if record.kind in DEVICE_KINDS:
        return devices.get(record.name)
    ident = identities.get(record.owner)
    if ident is None:
        return None
    if record.kind == "host":
        return ident.inband_mac
    return ident.bmc_mac if record.kind == "bmc" else None


def _records_by_pool(plan: ClusterPlan) -> Iterator[tuple[str, SiteRecord]]:
    names = {p.name for p in served_pools(plan)}
    for record in site_records(plan):
        if record.pool in names:
            yield record.pool, record


def dhcp_subnets(plan: ClusterPlan) -> list[DhcpSubnet]:
    """Every subnet the DHCP servers serve, with its reservations (module docstring); empty without servers."""
    if not serves_dhcp(plan):
        return []
    pools = served_pools(plan)
    identities = host_identities(plan)
    devices = device_macs(plan)
    found: dict[str, list[Reservation]] = {p.name: [] for p in pools}
    planned: dict[str, int] = {p.name: 0 for p in pools}
    devices_unreserved: dict[str, int] = {p.name: 0 for p in pools}
    for pool_name, record in _records_by_pool(plan):
        planned[pool_name] += 1
        mac = _mac_of(record, identities, devices) if identities or devices else None
        if mac is not None:
            found[pool_name].append(Reservation(mac, record.address, record.name))
        elif record.kind in DEVICE_KINDS:
            devices_unreserved[pool_name] += 1
    return [DhcpSubnet(int(ipaddress.ip_network(p.cidr).network_address), p.name, p.cidr, p.role,
                       tuple(found[p.name]), planned[p.name] - len(found[p.name]), devices_unreserved[p.name])
            for p in pools]


def boot_server_refusal(plan: ClusterPlan) -> str | None:
    """Why ``site.provisioner.server`` cannot be handed out as ``next-server``: neither a planned host with an
    in-band address nor an IPv4 address. Rule DHCP002 reports it; the DHCP target raises it."""
    site = plan.site
    if site is None or site.provisioner is None:
        return None
    server = site.provisioner.server
    if server in inband_addresses(plan, (server,)):
        return None
    try:
        ipaddress.IPv4Address(server)
    except ValueError:
        return (f"site.provisioner.server '{server}' is neither a host of the blueprint with an in-band address nor "
                "an IPv4 address: DHCP cannot hand it out as the boot server (next-server)")
    return None


def boot_settings(plan: ClusterPlan) -> BootSettings | None:
    """The provisioner's boot parameters, its server as an address; None without ``site.provisioner`` or when
    :func:`boot_server_refusal` refuses it."""
    site = plan.site
    if site is None or site.provisioner is None or boot_server_refusal(plan) is not None:
        return None
    p = site.provisioner
    address = inband_addresses(plan, (p.server,)).get(p.server, p.server)
    return BootSettings(p.kind, address, p.bios_boot_file, p.uefi_boot_file, p.ipxe_script_url, p.http_boot_url)
