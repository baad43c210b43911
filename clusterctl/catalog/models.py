"""Hardware catalog entries: accelerators, NICs, switches, servers, rack systems, cloud instance types.

Every numeric figure in a shipped entry has a ``sources`` line naming where it comes from (evidence
tags as in the project's hardware notes: [P] primary, [Q] primary quoted, [S] secondary, [D] derived).
Blueprint-defined entries may omit sources.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterctl.kinds import CloudRegion, FreeText, HcaName, Identifier, InterfaceName
from clusterctl.strict import StrictModel

Cooling = Literal["air", "liquid", "hybrid"]
NicRole = Literal["compute", "storage", "inband", "bmc", "mgmt"]
Protocol = Literal["infiniband", "ethernet", "efa", "nvlink"]


class Entry(StrictModel):
    description: FreeText = ""
    vendor: FreeText = ""
    sources: dict[Identifier, FreeText] = Field(default_factory=dict)
    """figure name -> where it comes from"""


class Accelerator(Entry):
    generation: Identifier
    """architecture family, e.g. ampere, hopper, blackwell, cdna3"""
    bf16_dense_tflops: float = Field(gt=0, le=1_000_000)  # 1 EFLOPS per device: 400x a B200
    fp8_dense_tflops: float | None = Field(default=None, gt=0, le=1_000_000)
    bf16_mamf_tflops: float | None = Field(default=None, gt=0, le=1_000_000)
    """maximum achievable matmul FLOPS (BF16 GEMM, best shape, measured); the report's compute model
    scales from this, not from the datasheet peak"""
    fp8_mamf_tflops: float | None = Field(default=None, gt=0, le=1_000_000)
    hbm_gb: float = Field(gt=0, le=1_000_000)  # 1 PB of HBM per device
    hbm_tb_per_s: float = Field(gt=0, le=10_000)
    tdp_w: float = Field(gt=0, le=100_000)  # 100 kW per device
    scaleup_gb_per_s: float | None = Field(default=None, gt=0, le=1_000_000)
    """scale-up (NVLink / Infinity Fabric) bandwidth per device, one direction sum as vendors quote it"""
    scaleup_domain_max: int = Field(default=8, gt=0, le=100_000)  # NVL576 is 576
    min_driver_branch: int | None = Field(default=None, gt=0, le=100_000)
    """oldest datacenter driver branch that supports the device (NVIDIA R-branch number)"""


_NVIDIA_GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "rubin")


def accelerator_vendor(acc: Accelerator) -> str:
    """"NVIDIA", "AMD", another vendor as written, or "" when a blueprint entry leaves it out (an entry without
    ``vendor`` is NVIDIA by its generation, volta to rubin, and AMD by a cdna generation)."""
    v = acc.vendor.strip()
    gen = acc.generation.lower()
    if v.upper() == "NVIDIA" or (not v and gen in _NVIDIA_GENERATIONS):
        return "NVIDIA"
    if v.upper() == "AMD" or (not v and gen.startswith("cdna")):
        return "AMD"
    return v


class Nic(Entry):
    ports: int = Field(default=1, gt=0, le=64)  # ports on one NIC card
    speed_gbps: float = Field(gt=0, le=100_000)  # 100 Tb/s: 60x today's fastest port
    """per port"""
    protocols: list[Protocol] = Field(max_length=8)
    power_w: float | None = Field(default=None, gt=0, le=10_000)


class PortMode(StrictModel):
    speed_gbps: float = Field(gt=0, le=100_000)  # as Nic.speed_gbps
    ports: int = Field(gt=0, le=4096)  # logical ports of one switch: 4x today's largest radix


class Switch(Entry):
    protocols: list[Protocol] = Field(max_length=8)
    port_modes: list[PortMode] = Field(min_length=1, max_length=64)
    """logical port count at each supported speed; the first is the native speed (cage count x lanes)"""
    uplinks: PortMode | None = None
    """dedicated uplink ports at another speed (management switches: 48 x 1G access + 4 x 100G up)"""
    power_w: float = Field(gt=0, le=1_000_000)  # 1 MW per switch
    """maximum (typical with optics where only that is published)"""
    height_u: int = Field(gt=0, le=60)  # fits a rack
    cooling: Cooling = "air"


class PortName(StrictModel):
    """The operating system's names of one NIC port: what ``ip link`` and ``ibdev2netdev`` show on the host."""

    netdev: InterfaceName | None = None
    """network interface, e.g. ibp24s0 (InfiniBand) or enp24s0np0 (Ethernet)"""
    rdma: HcaName | None = None
    """RDMA device, e.g. mlx5_0 (the name NCCL_IB_HCA lists)"""
    description: FreeText = ""
    """where the port is on the chassis, as the vendor's table names it (e.g. "OSFP4P2, GPU 0")"""


class NicSlot(StrictModel):
    model: Identifier
    count: int = Field(gt=0, le=256)  # NIC cards in one server
    role: NicRole
    ports: list[PortName] = Field(default_factory=list, max_length=1024)  # count x ports per card
    """the OS names of the slot's ports, in port order (compute: rail order, rail 0 first), as the vendor's
    documentation gives them (a ``sources`` line ``nics.ports`` says where); empty when no vendor table exists"""


class GpuSlot(StrictModel):
    model: Identifier
    count: int = Field(gt=0, le=1024)  # GPUs per server


class Cpu(StrictModel):
    model: FreeText = ""
    sockets: int = Field(gt=0, le=64)
    cores_per_socket: int = Field(gt=0, le=4096)
    threads_per_core: int = Field(default=1, gt=0, le=16)


class Nvme(StrictModel):
    count: int = Field(ge=0, le=1024)  # drives in one server
    size_tb: float = Field(ge=0, le=10_000)  # per drive
    read_gb_per_s: float = Field(default=0, ge=0, le=100_000)
    """aggregate local read bandwidth, GB/s"""
    write_gb_per_s: float = Field(default=0, ge=0, le=100_000)


class Server(Entry):
    gpus: GpuSlot | None = None
    cpu: Cpu
    memory_gb: float = Field(gt=0, le=1_000_000)  # 1 PB in one server
    nics: list[NicSlot] = Field(default_factory=list, max_length=64)
    nvme: Nvme | None = None
    power_kw: float = Field(gt=0, le=10_000)  # as a rack's power_kw
    """maximum system power"""
    height_u: int = Field(gt=0, le=60)  # fits a rack
    cooling: Cooling = "air"
    liquid_fraction: float = Field(default=0.0, ge=0, le=1)
    """share of the heat that leaves through the liquid loop (0 for air, ~0.8-0.9 for DLC trays)"""
    nvlink_domain_gpus: int | None = Field(default=None, gt=0, le=100_000)  # NVL576 is 576
    """GPUs that share one NVLink/NVSwitch domain (8 on HGX, 72 on NVL72 racks)"""
    rack_system: Identifier | None = None
    """rack-scale system the server is a tray of (e.g. gb200-nvl72)"""


class RackSystem(Entry):
    """A rack sold as one system (NVL72): compute trays plus switch trays and power shelves."""

    compute_tray: Identifier
    compute_trays: int = Field(gt=0, le=256)  # trays in one rack
    nvlink_switch_trays: int = Field(ge=0, le=256)
    power_kw: float = Field(gt=0, le=10_000)  # as a rack's power_kw
    """whole rack, maximum"""
    liquid_fraction: float = Field(ge=0, le=1)
    height_u: int = Field(gt=0, le=60)  # fits a rack


class InstanceNetwork(StrictModel):
    fabric: Literal["efa", "tcpx", "tcpxo", "rdma-roce", "infiniband", "ethernet"]
    gpu_nics: int = Field(ge=0, le=1024)
    """accelerator-network interfaces (EFA devices, GPU NICs, IB HCAs)"""
    total_gbps: float = Field(gt=0, le=1_000_000)  # 1 Pb/s per instance


class CloudInstance(Entry):
    provider: Literal["aws", "gcp", "azure"]
    gpus: GpuSlot | None = None
    """None for CPU instance types (head, login, controller VMs)"""
    vcpus: int = Field(gt=0, le=100_000)
    memory_gb: float = Field(gt=0, le=1_000_000)  # as Server.memory_gb
    network: InstanceNetwork
    local_nvme_tb: float = Field(default=0, ge=0, le=10_000)
    regions: list[CloudRegion] = Field(default_factory=list, max_length=1024)
    """regions where the type is offered (as documented when the entry was written)"""
    placement: Literal["cluster-placement-group", "compact-placement-policy", "proximity-placement-group",
                       "none"] = "none"
    """placement construct needed for the accelerator network to work at full speed"""


class CatalogData(StrictModel):
    """The shape of a catalog file and of a blueprint's ``catalog:`` section."""

    accelerators: dict[Identifier, Accelerator] = Field(default_factory=dict)
    nics: dict[Identifier, Nic] = Field(default_factory=dict)
    switches: dict[Identifier, Switch] = Field(default_factory=dict)
    servers: dict[Identifier, Server] = Field(default_factory=dict)
    rack_systems: dict[Identifier, RackSystem] = Field(default_factory=dict)
    instances: dict[Identifier, CloudInstance] = Field(default_factory=dict)
