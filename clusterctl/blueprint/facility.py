"""Site, power and cooling: what the building gives the cluster."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from clusterctl.kinds import AptUrl, BootFile, DnsDomain, HostList, HostName, Identifier, IpAddress, RelativeFile
from clusterctl.limits import INVENTORY_MAX_FILES
from clusterctl.strict import StrictModel, listed_once


class Provisioner(StrictModel):
    """Who installs the nodes over the network: what the rendered DHCP server hands a booting node (Kea client
    classes, docs/network.md "DHCP"). Without it, DHCP hands out addresses and no boot parameters."""

    kind: Literal["warewulf", "pxe"]
    """warewulf: Warewulf 4 (its node definitions are rendered too); pxe: any TFTP/HTTP boot server"""
    server: HostName
    """the boot server: a host of the blueprint (its in-band address is handed out as ``next-server``) or an IPv4
    address"""
    bios_boot_file: BootFile = "undionly.kpxe"
    """what a legacy BIOS PXE client (DHCP option 93 architecture 0) fetches by TFTP: iPXE's UNDI loader"""
    uefi_boot_file: BootFile = "ipxe.efi"
    """what a UEFI x86-64 PXE client (option 93 architecture 7 or 9) fetches by TFTP (iPXE's EFI build; snponly
    builds use the firmware's own NIC driver)"""
    ipxe_script_url: AptUrl | None = None
    """the URL an iPXE client (user class ``iPXE``, option 77) is given instead of the loader again, which ends
    the PXE-to-iPXE loop; absent: iPXE clients get the loader like any other PXE client"""
    http_boot_url: AptUrl | None = None
    """UEFI HTTP boot (vendor class ``HTTPClient``, option 60): the URL of the EFI binary; absent: no HTTP boot"""


class Site(StrictModel):
    """The data centre (hall) the cluster lives in."""

    name: Identifier
    it_power_kw: float = Field(gt=0, le=10_000_000)  # 10 GW: ten times the largest campus announced
    """IT power the site can deliver to this cluster (after UPS), kW"""
    air_cooling_kw: float | None = Field(default=None, gt=0, le=10_000_000)  # as it_power_kw
    """room air-side heat removal capacity (CRAH/CRAC), kW; unchecked when absent"""
    pue: float = Field(default=1.3, ge=1.0, le=3.0)
    """power usage effectiveness, used for facility power estimates"""
    time_servers: list[HostName] = Field(default_factory=list, max_length=16)
    """upstream NTP servers (names or IPv4 addresses) the Slurm controllers follow; every other node follows
    the controllers, and the controllers peer each other. Empty: no upstream at all (no public pool unless written
    here, e.g. pool.ntp.org): the controllers keep the cluster's own time in chrony's orphan mode, so the cluster
    still agrees on one time (rule TIME001 warns)"""
    dns_domain: DnsDomain | None = None
    """the cluster's DNS zone, which the head nodes serve (every planned address named: docs/network.md, "Names"
    and "DNS"); default ``<cluster name>.internal`` (``.internal`` is reserved for private use by ICANN, so it is
    never delegated in the public DNS). Write a zone the site owns, such as ``gpu.example.com``, to use its own"""
    dns_servers: list[IpAddress] = Field(default_factory=list, max_length=16)
    """upstream resolvers (addresses) the head nodes forward every other name to; empty: they answer for the
    cluster's zones only (an air-gapped site)"""
    inventory: list[RelativeFile] = Field(default_factory=list, max_length=INVENTORY_MAX_FILES)
    """per-host inventory CSV files (serial, in-band and BMC MACs, the vault variable holding the BMC
    credentials), paths relative to the blueprint's directory and inside it, read when the blueprint is loaded:
    columns ``host,serial,inband_mac,bmc_mac,bmc_secret`` (docs/inventory.md; ``clusterctl inventory template``
    writes one). Several files for a site over 100,000 hosts (one file's limit). Empty: no inventory"""
    provisioner: Provisioner | None = None
    """the network installer whose boot parameters DHCP hands out (PXE and UEFI HTTP boot); absent: none"""


class Cdu(StrictModel):
    """A coolant distribution unit feeding the liquid loop of some racks."""

    name: Identifier
    capacity_kw: float = Field(gt=0, le=100_000)  # 100 MW: far above any single CDU (~2 MW today)
    """heat the CDU can move from the secondary loop to facility water, kW"""
    flow_lpm: float = Field(gt=0, le=1_000_000)  # 1,000 m3/min: far above any CDU pump
    """maximum secondary-loop coolant flow, litres per minute"""
    supply_c: float = Field(ge=5, le=60)
    """secondary-loop supply temperature, deg C"""
    delta_t_c: float = Field(default=10.0, gt=0, le=30)
    """design temperature rise across the racks (return - supply), K"""
    coolant: Literal["water", "pg25"] = "water"
    """secondary-loop fluid: treated water or 25 % propylene glycol"""
    pumps: int = Field(default=1, ge=1, le=16)  # a CDU has one to a few pumps
    """pumps driving the secondary loop; ``clusterctl whatif`` fails them one by one as ``<cdu>-pump<k>`` when
    there are several (docs/whatif.md)"""
    standby_pumps: int = Field(default=0, ge=0, le=15)  # as pumps
    """of those, standby ones: ``flow_lpm`` is what the others deliver, and a pump that stops is replaced by a
    standby one (N+1 pumps: ``pumps: 2, standby_pumps: 1``); without, the loop runs on the pumps left, at their
    share of ``flow_lpm``"""

    @field_validator("standby_pumps")
    @classmethod
    def _a_pump_runs(cls, value: int, info: ValidationInfo) -> int:
        pumps = info.data.get("pumps")
        if pumps is not None and value >= pumps:
            raise ValueError(f"standby_pumps {value} must be below pumps {pumps}: one pump at least drives the loop")
        return value


class Cooling(StrictModel):
    """Liquid cooling plant: the CDUs that rack profiles refer to."""

    cdus: list[Cdu] = Field(default_factory=list)


class RackProfile(StrictModel):
    """Power, space and heat budget shared by a set of racks."""

    power_kw: float = Field(gt=0, le=10_000)  # 10 MW per rack: 10x the densest rack on any roadmap
    """contracted IT power budget of the rack, kW"""
    feeds: int = Field(default=2, gt=0, le=64)  # PDUs / busway taps: a rack has a handful
    """power feeds (PDUs / busway taps) into the rack"""
    feed_kw: float | None = Field(default=None, gt=0, le=10_000)  # as power_kw
    """capacity of one feed, kW; defaults to power_kw (each feed can carry the whole rack)"""
    redundancy: Literal["N", "N+1", "2N"] = "2N"
    """2N: either half of the feeds carries the rack; N+1: any one feed may fail; N: none may"""
    continuous_load_factor: float = Field(default=0.8, gt=0, le=1.0)
    """share of breaker/feed rating usable for continuous load (NEC 80 % rule; 1.0 for 100 %-rated gear)"""
    units: int = Field(default=48, gt=0, le=60)  # the tallest standard racks are 58U
    """usable rack units"""
    reserved_u: int = Field(default=0, ge=0, le=60)  # as units
    """units kept free for patch panels, PDUs or cable management"""
    liquid_kw: float = Field(default=0.0, ge=0, le=10_000)  # as power_kw
    """heat the rack's liquid loop (cold plates / rear door) can remove, kW"""
    air_kw: float = Field(default=0.0, ge=0, le=10_000)  # as power_kw
    """heat the rack can reject to room air, kW"""
    cdu: Identifier | None = None
    """CDU feeding this rack's liquid loop"""
    cdus: list[Identifier] = Field(default_factory=list, max_length=16)  # a row manifold has a handful
    """instead of ``cdu``: the CDUs working in parallel on this rack's secondary loop (a row manifold), each
    carrying an equal share of its heat; when one stops, the others must carry it within their capacity and flow
    (N+1 cooling, what ``clusterctl whatif`` and rule BLAST001 check, docs/whatif.md)"""
    system: Identifier | None = None
    """rack-scale system from the catalog (e.g. gb200-nvl72) that this rack is"""

    @field_validator("cdus")
    @classmethod
    def _one_loop(cls, value: list[str], info: ValidationInfo) -> list[str]:
        listed_once(value)
        if value and info.data.get("cdu") is not None:
            raise ValueError("give cdu (one CDU) or cdus (CDUs in parallel on the loop), not both")
        return value

    @property
    def loop_cdus(self) -> tuple[str, ...]:
        """the CDUs sharing this rack's liquid loop (none, ``cdu``, or ``cdus``)"""
        return tuple(self.cdus) if self.cdus else (self.cdu,) if self.cdu is not None else ()


class RackRange(StrictModel):
    """A range of racks sharing one profile."""

    names: HostList
    """rack names as a host list, e.g. r[01-32]"""
    profile: Identifier
    """a key of rack_profiles"""
    row: Identifier | None = None
    """data-hall row, for people and reports"""
