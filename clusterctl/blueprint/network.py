"""Fabrics (intent, not cables) and the address plan."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from clusterctl.kinds import Cidr, FabricName, HostList, Identifier
from clusterctl.strict import StrictModel

NicRole = Literal["compute", "storage", "inband", "bmc", "mgmt"]
PoolRole = Literal["compute", "storage", "inband", "bmc", "mgmt", "loopback"]
"""an address pool's role: a NIC role, or ``loopback`` (the routed Ethernet/RoCE switches' loopbacks and BGP
router ids, one /32 per switch: clusterctl/plan/underlay.py)"""


class Attach(StrictModel):
    """Which NICs of which node group are cabled to a fabric."""

    group: Identifier
    """node group name, or ``all``"""
    nic_role: NicRole
    """the role of the NICs (as the server declares them) that are cabled to this fabric"""


class _Fabric(StrictModel):
    name: FabricName
    """lower-case letters, digits and dashes: switch names are derived from it (compute-leaf01)"""
    attach: list[Attach] = Field(min_length=1, max_length=1024)
    topology: Literal["fat-tree"] = "fat-tree"
    tiers: Literal[1, 2, 3] = 2
    """switch tiers: 1 = leaves only, 2 = leaf/spine, 3 = leaf/spine/core"""
    rail_optimized: bool = False
    """each of a node's compute NICs goes to its own rail leaf (DGX SuperPOD style)"""
    oversubscription: float = Field(default=1.0, ge=1.0, le=16.0)
    """declared leaf down:up bandwidth ratio (1.0 = non-blocking)"""
    switch: Identifier
    """catalog switch model for every tier unless overridden"""
    spine_switch: Identifier | None = None
    core_switch: Identifier | None = None
    link_gbps: float | None = Field(default=None, gt=0, le=100_000)  # 100 Tb/s: 60x today's fastest port
    """node link speed (NIC to leaf); default: the attached NICs' speed. Switch-to-switch links run at the switches' native port speed"""
    su_nodes: int | None = Field(default=None, gt=0, le=1_000_000)  # as node_groups[].count
    """nodes per scalable unit; default: as many as one leaf's downlinks take"""
    su_by: Literal["nodes", "rack"] = "nodes"
    """``rack``: every rack is its own unit with top-of-rack leaves placed in it (management networks)"""
    extra_endpoints: int = Field(default=0, ge=0, le=1_000_000)  # as node_groups[].count
    """cabled non-node endpoints on the leaves (UFM appliances, storage gateways), spread over the leaves"""
    leaf_uplinks: int | None = Field(default=None, gt=0, le=4096)  # a switch has at most 4,096 ports
    """uplinks per leaf as built; default: enough for the declared oversubscription"""
    spine_count: int | None = Field(default=None, gt=0, le=100_000)  # far above any fat tree built
    """spine switches as built (2 tiers: in total; 3 tiers: per pod); default: enough for the uplinks"""
    switch_racks: HostList | None = None
    """host list of racks that hold this fabric's switches (leaves of ``su_by: nodes``, spines, cores)"""


class SubnetManager(StrictModel):
    """Where an InfiniBand fabric's subnet manager runs (docs/network.md, "InfiniBand subnet manager")."""

    kind: Literal["opensm", "ufm"] = "opensm"
    """``opensm``: OpenSM on hosts of the plan (Debian's opensm package) or the embedded SM of managed switches;
    ``ufm``: NVIDIA UFM Enterprise on dedicated appliances (the DGX SuperPOD reference architectures)"""
    hosts: HostList | None = None
    """opensm: hosts of the plan attached to this fabric, the master first (an HA pair: two); ufm: the appliances'
    names (not hosts of the plan), one fabric port each, cabled to the leaves as part of ``extra_endpoints``"""
    switches: HostList | None = None
    """opensm only: switches of this fabric (e.g. ib-leaf01) whose embedded SM runs the subnet, the master first.
    NVIDIA's MLNX-OS manual: up to 2,048 nodes, no adaptive routing and no SHARP"""
    priority: int = Field(default=15, ge=1, le=15)
    """sm_priority of the first SM (0-15, the highest becomes master); each next one gets one less"""


class InfinibandFabric(_Fabric):
    """An InfiniBand fat tree (NDR / XDR), managed by a subnet manager (UFM / opensm)."""

    kind: Literal["infiniband"]
    adaptive_routing: bool = True
    sharp: bool = False
    subnet_manager: SubnetManager | None = None
    """where the subnet manager runs; without one every port stays INIT and no traffic flows (rule IB001)"""


class _RoutedFabric(_Fabric):
    """An Ethernet or RoCE fabric: a routed leaf-spine underlay (clusterctl/plan/underlay.py)."""

    routes_to: list[FabricName] = Field(default_factory=list, max_length=64)
    """Ethernet/RoCE fabrics this one exchanges routes with: its border leaf (the last leaf) peers over BGP
    with each one's border leaf on one cable (docs/roce.md, "Paths between networks"); without a declared
    path, UNDERLAY003 warns when Slurm's controllers and compute nodes have their in-band ports on
    different fabrics"""


class RoceFabric(_RoutedFabric):
    """RDMA over Converged Ethernet v2: a lossless (PFC + ECN) Ethernet fat tree."""

    kind: Literal["roce"]
    traffic_class: int = Field(default=106, ge=0, le=255)
    """IP ToS byte for RDMA traffic (DSCP x 4 + ECN bits), must match the switches' lossless class. The one
    source of the RoCE QoS: NCCL_IB_TC, the hosts' DSCP trust and the switch files all take DSCP = this >> 2"""
    pfc_priority: int = Field(default=3, ge=0, le=7)
    """priority (and switch traffic class) that RoCE's DSCP maps to and that PFC makes lossless"""
    mtu: int = Field(default=9000, ge=1500, le=9216)
    """MTU of the hosts' RDMA interfaces (switch ports run at 9216, NVIDIA's jumbo setting)"""
    ecn: bool = True
    """ECN congestion control (DCQCN): the NICs react to and send CNPs, the switches mark ECN on the
    lossless traffic class (NVIDIA's RoCE lossless default)"""
    cnp_dscp: int = Field(default=48, ge=0, le=63)
    """DSCP of congestion notification packets (NVIDIA's default 48, switch priority 6, strict)"""


class EthernetFabric(_RoutedFabric):
    """Plain Ethernet: in-band management, out-of-band (BMC) and storage networks."""

    kind: Literal["ethernet"]
    mtu: int = Field(default=1500, ge=1280, le=9216)


Fabric = Annotated[Union[InfinibandFabric, RoceFabric, EthernetFabric], Field(discriminator="kind")]


class Network(StrictModel):
    """An IP address pool for one NIC role."""

    cidr: Cidr
    """IPv4 or IPv6 prefix in private space, e.g. 10.10.0.0/16 or fd00:10::/64 (ADDR004 warns outside RFC 1918, 100.64/10
    and fc00::/7; ADDR005 refuses the whole internet: the in-band pools are the NFS export and chrony clients)"""
    role: PoolRole
    """NIC role whose ports take addresses here (switch management ports go on role mgmt; role loopback: one
    loopback address and BGP router id per switch of the routed Ethernet/RoCE fabrics). A compute pool whose
    groups' compute NICs are on a RoCE fabric gives each NIC a /31 point-to-point link to its leaf (L3 to the
    host): two addresses per NIC, the leaf's even, the host's odd"""
    reserved: int = Field(default=16, ge=0, le=16_777_216)  # a /8 of IPv4 gateways and VIPs
    """addresses kept for gateways, VIPs, DHCP pools and servers outside the blueprint (the first after the network
    address; the plan gives hosts none of them, so a storage server may be named by one: ADDR006)"""
