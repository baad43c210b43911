"""Node types (named hardware) and node groups (how many, called what, in which racks)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterctl.catalog.models import PortName, Server
from clusterctl.kinds import (GroupName, HcaName, HostList, Identifier, InterfaceName,
                              NcclSocketIfname, SlurmFeature)
from clusterctl.strict import StrictModel

NodeRole = Literal["compute", "head", "login", "storage", "service"]


class NcclNames(StrictModel):
    """Device and interface names NCCL should use on this node type, when they differ from the defaults
    clusterctl derives (docs/nccl.md): check with ``ibdev2netdev`` and ``ip link`` on one node."""

    ib_hca: list[HcaName] | None = Field(default=None, max_length=64)
    """compute RDMA devices, e.g. [mlx5_0, mlx5_3]; becomes NCCL_IB_HCA==mlx5_0:1,mlx5_3:1"""
    socket_ifname: NcclSocketIfname | None = None
    """full NCCL_SOCKET_IFNAME value for bootstrap traffic, e.g. "=bond0" or "^lo,docker" """


class HostInterfaces(StrictModel):
    """The OS names of a node type's ports by role, in port order (compute: rail order), where the catalog's
    vendor table gives none or the hosts differ from it: check with ``ibdev2netdev`` and ``ip -br link`` on one
    node. The plan takes each list whole (clusterctl/plan/interfaces.py); each must list every port of the role."""

    compute: list[PortName] | None = Field(default=None, max_length=64)
    storage: list[PortName] | None = Field(default=None, max_length=64)
    inband: list[PortName] | None = Field(default=None, max_length=64)


class NodeType(StrictModel):
    """A kind of node: a catalog server, a server described inline, or a cloud instance type (one of them)."""

    server: Identifier | None = None
    """catalog server model (``clusterctl catalog servers``)"""
    spec: Server | None = None
    """the server described inline (same keys as a catalog server: gpus, cpu, memory_gb, nics, nvme,
    power_kw, height_u, cooling); for hardware used once — shared models belong in ``catalog:``"""
    instance: Identifier | None = None
    """catalog cloud instance type (``clusterctl catalog instances``)"""
    features: list[SlurmFeature] = Field(default_factory=list, max_length=64)
    """extra Slurm node features"""
    nccl: NcclNames | None = None
    """override the RDMA device / interface names written to this node type's nccl.conf"""
    interfaces: HostInterfaces | None = None
    """the OS names (netdev, RDMA device) of the compute, storage and in-band ports, when the catalog has none"""
    storage_interfaces: list[InterfaceName] | None = Field(default=None, max_length=16)
    """interface names of the storage NICs (``ibdev2netdev``), e.g. [ibp154s0, ibp192s0]: Lustre's LNet binds its
    o2ib network to them (``options lnet networks=o2ib0(ibp154s0,ibp192s0)``); default: LNet's own (ib0)"""


class NodeGroupCloud(StrictModel):
    """How a cloud node group's instances live (docs/cloud.md, "Elastic compute")."""

    elastic: bool = False
    """Slurm power saving: the group's nodes are ``State=CLOUD``; slurmctld's ResumeProgram creates an
    instance when a job needs the node and SuspendProgram deletes it after ``slurm.power_save.suspend_time_s``
    idle. Default: one instance per host, created by ``pulumi up`` and kept."""


class NodeGroup(StrictModel):
    """Nodes of one type with one naming pattern and placement."""

    name: GroupName
    """lower-case letters, digits and underscores: it becomes an Ansible group and a Slurm feature"""
    type: Identifier
    """a key of node_types"""
    count: int = Field(gt=0, le=1_000_000)  # 8M GPUs: an order of magnitude over the largest cluster built
    hostnames: HostList
    """host list with exactly ``count`` names, e.g. gpu[0001-0128]"""
    role: NodeRole = "compute"
    """compute nodes run jobs; head nodes run slurmctld; login, storage and service nodes support them"""
    racks: HostList | None = None
    """host list of rack names the group is placed in (bare metal)"""
    per_rack: int | None = Field(default=None, gt=0, le=256)  # blades / sleds: a 60U rack of 1/4-U nodes
    """nodes per rack; default: as many as fit the racks' space evenly"""
    nvlink_domain_gpus: int | None = Field(default=None, gt=0, le=100_000)  # NVL576 is 576; scale-up domains are racks, not halls
    """GPUs per NVLink domain; default from the server (8 on HGX, 72 on NVL72)"""
    cloud: NodeGroupCloud | None = None
    """cloud node groups only: elastic (created on demand by Slurm power saving) or static"""
