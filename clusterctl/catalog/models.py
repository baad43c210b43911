"""Hardware catalog entries: accelerators, NICs, switches, servers, rack systems, cloud instance types.

Every numeric figure in a shipped entry has a ``sources`` line naming where it comes from (evidence
tags as in the project's hardware notes: [P] primary, [Q] primary quoted, [S] secondary, [D] derived).
Blueprint-defined entries may omit sources.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from clusterctl.blueprint.base import StrictModel

Cooling = Literal["air", "liquid", "hybrid"]
NicRole = Literal["compute", "storage", "inband", "bmc", "mgmt"]
Protocol = Literal["infiniband", "ethernet", "efa", "nvlink"]


class Entry(StrictModel):
    description: str = ""
    vendor: str = ""
    sources: dict[str, str] = Field(default_factory=dict)
    """figure name -> where it comes from"""


class Accelerator(Entry):
    generation: str
    """architecture family, e.g. ampere, hopper, blackwell, cdna3"""
    bf16_dense_tflops: PositiveFloat
    fp8_dense_tflops: PositiveFloat | None = None
    bf16_mamf_tflops: PositiveFloat | None = None
    """maximum achievable matmul FLOPS (BF16 GEMM, best shape, measured); the report's compute model
    scales from this, not from the datasheet peak"""
    fp8_mamf_tflops: PositiveFloat | None = None
    hbm_gb: PositiveFloat
    hbm_tb_per_s: PositiveFloat
    tdp_w: PositiveFloat
    scaleup_gb_per_s: PositiveFloat | None = None
    """scale-up (NVLink / Infinity Fabric) bandwidth per device, one direction sum as vendors quote it"""
    scaleup_domain_max: PositiveInt = 8
    min_driver_branch: PositiveInt | None = None
    """oldest datacenter driver branch that supports the device (NVIDIA R-branch number)"""


class Nic(Entry):
    ports: PositiveInt = 1
    speed_gbps: PositiveFloat
    """per port"""
    protocols: list[Protocol]
    power_w: PositiveFloat | None = None


class PortMode(StrictModel):
    speed_gbps: PositiveFloat
    ports: PositiveInt


class Switch(Entry):
    protocols: list[Protocol]
    port_modes: list[PortMode] = Field(min_length=1)
    """logical port count at each supported speed; the first is the native speed (cage count x lanes)"""
    uplinks: PortMode | None = None
    """dedicated uplink ports at another speed (management switches: 48 x 1G access + 4 x 100G up)"""
    power_w: PositiveFloat
    """maximum (typical with optics where only that is published)"""
    height_u: PositiveInt
    cooling: Cooling = "air"


class NicSlot(StrictModel):
    model: str
    count: PositiveInt
    role: NicRole


class GpuSlot(StrictModel):
    model: str
    count: PositiveInt


class Cpu(StrictModel):
    model: str = ""
    sockets: PositiveInt
    cores_per_socket: PositiveInt
    threads_per_core: PositiveInt = 1


class Nvme(StrictModel):
    count: int = Field(ge=0)
    size_tb: float = Field(ge=0)
    read_gb_per_s: float = Field(default=0, ge=0)
    """aggregate local read bandwidth, GB/s"""
    write_gb_per_s: float = Field(default=0, ge=0)


class Server(Entry):
    gpus: GpuSlot | None = None
    cpu: Cpu
    memory_gb: PositiveFloat
    nics: list[NicSlot] = Field(default_factory=list)
    nvme: Nvme | None = None
    power_kw: PositiveFloat
    """maximum system power"""
    height_u: PositiveInt
    cooling: Cooling = "air"
    liquid_fraction: float = Field(default=0.0, ge=0, le=1)
    """share of the heat that leaves through the liquid loop (0 for air, ~0.8-0.9 for DLC trays)"""
    nvlink_domain_gpus: PositiveInt | None = None
    """GPUs that share one NVLink/NVSwitch domain (8 on HGX, 72 on NVL72 racks)"""
    rack_system: str | None = None
    """rack-scale system the server is a tray of (e.g. gb200-nvl72)"""


class RackSystem(Entry):
    """A rack sold as one system (NVL72): compute trays plus switch trays and power shelves."""

    compute_tray: str
    compute_trays: PositiveInt
    nvlink_switch_trays: int = Field(ge=0)
    power_kw: PositiveFloat
    """whole rack, maximum"""
    liquid_fraction: float = Field(ge=0, le=1)
    height_u: PositiveInt


class InstanceNetwork(StrictModel):
    fabric: Literal["efa", "tcpx", "tcpxo", "rdma-roce", "infiniband", "ethernet"]
    gpu_nics: int = Field(ge=0)
    """accelerator-network interfaces (EFA devices, GPU NICs, IB HCAs)"""
    total_gbps: PositiveFloat


class CloudInstance(Entry):
    provider: Literal["aws", "gcp", "azure"]
    gpus: GpuSlot | None = None
    """None for CPU instance types (head, login, controller VMs)"""
    vcpus: PositiveInt
    memory_gb: PositiveFloat
    network: InstanceNetwork
    local_nvme_tb: float = Field(default=0, ge=0)
    regions: list[str] = Field(default_factory=list)
    """regions where the type is offered (as documented when the entry was written)"""
    placement: Literal["cluster-placement-group", "compact-placement-policy", "proximity-placement-group",
                       "none"] = "none"
    """placement construct needed for the accelerator network to work at full speed"""


class CatalogData(StrictModel):
    """The shape of a catalog file and of a blueprint's ``catalog:`` section."""

    accelerators: dict[str, Accelerator] = Field(default_factory=dict)
    nics: dict[str, Nic] = Field(default_factory=dict)
    switches: dict[str, Switch] = Field(default_factory=dict)
    servers: dict[str, Server] = Field(default_factory=dict)
    rack_systems: dict[str, RackSystem] = Field(default_factory=dict)
    instances: dict[str, CloudInstance] = Field(default_factory=dict)
