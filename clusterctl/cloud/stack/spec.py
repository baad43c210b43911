"""The cloud part of a ClusterPlan as plain data (``cluster.json`` in a rendered Pulumi project).

The Pulumi program reads this file, not the blueprint: the project is self-contained, reviewable, and
its behaviour is pinned by what clusterctl rendered. Component resources (``clusterctl.cloud.pulumi.aws`` /
``gcp`` / ``azure``) take a :class:`CloudSpec` and the stack configuration the program read
(``spec`` and ``settings`` of every args class, clusterctl.cloud.pulumi.component), nothing of the blueprint.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from clusterctl.cloud.stack import hostname
from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import AddressPool, ClusterPlan
from clusterctl.plan.roles import slurm_roles


@dataclass(frozen=True)
class GroupSpec:
    name: str
    role: str
    """compute, head, login, storage or service"""
    instance_type: str
    count: int
    hostnames: tuple[str, ...]
    gpus: int
    gpu_model: str | None
    accelerator_nics: int
    """EFA devices / GPU NICs / IB HCAs of the instance type"""
    network_fabric: str
    """efa, tcpx, tcpxo, rdma-roce, infiniband or ethernet"""
    network_gbps: float
    placement: str
    """placement construct the instance type needs: cluster-placement-group, compact-placement-policy,
    proximity-placement-group or none"""
    local_nvme_tb: float
    elastic: bool = False
    """created on demand by Slurm power saving (``cloud.elastic``): no instance at ``pulumi up``; the program
    creates the launch template / instance template / VM settings the resume program starts it from"""


@dataclass(frozen=True)
class StorageSpec:
    name: str
    tier: str
    """parallel, nfs or object (local tiers are the instances' own disks)"""
    mount: str
    capacity_tb: float
    read_gb_per_s: float
    write_gb_per_s: float
    checkpoint: bool


@dataclass(frozen=True)
class CloudSpec:
    cluster: str
    provider: str
    region: str
    zone: str | None
    placement_group: bool
    reservation: str | None
    admin_cidr: str
    groups: tuple[GroupSpec, ...]
    storage: tuple[StorageSpec, ...]
    tags: dict[str, str] = field(default_factory=dict)
    controllers: tuple[str, ...] = ()
    """slurmctld hosts, primary first"""
    accounting: tuple[str, ...] = ()
    """slurmdbd hosts (they read the database password)"""

    def __post_init__(self) -> None:
        """Every host name must be one the provider can give an instance (clusterctl.cloud.stack.hostname): checked
        when the spec is made from a plan and when a program loads ``cluster.json``."""
        for g in self.groups:
            hostname.check(self.provider, g.hostnames)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "CloudSpec":
        d = json.loads(text)
        d["groups"] = tuple(GroupSpec(**{**g, "hostnames": tuple(g["hostnames"])}) for g in d["groups"])
        d["storage"] = tuple(StorageSpec(**s) for s in d["storage"])
        d["controllers"] = tuple(d.get("controllers", ()))
        d["accounting"] = tuple(d.get("accounting", ()))
        return cls(**d)


def is_gpu_group(group: GroupSpec) -> bool:
    """Whether a node group's instances carry GPUs: what puts it in the GPU node groups of every provider's
    stack (GPU image, placement, GPU networks), whatever its network or elasticity."""
    return group.gpus > 0


def cloud_spec(plan: ClusterPlan) -> CloudSpec | None:
    """The spec of a plan with a ``cloud:`` section whose node types are cloud instances; None otherwise."""
    cloud = plan.cloud
    if cloud is None:
        return None
    groups = []
    for g in plan.groups:
        inst = g.type.instance
        if inst is None:
            continue
        groups.append(GroupSpec(
            name=g.name, role=g.role, instance_type=g.type.instance_name, count=g.count, hostnames=g.hosts,
            gpus=g.type.gpus, gpu_model=g.type.gpu_model, accelerator_nics=inst.network.gpu_nics,
            network_fabric=inst.network.fabric, network_gbps=inst.network.total_gbps, placement=inst.placement,
            local_nvme_tb=inst.local_nvme_tb, elastic=is_elastic(plan, g.index)))
    roles = slurm_roles(plan)
    storage = tuple(
        StorageSpec(t.name, t.tier, t.mount, t.capacity_tb, t.read_gb_per_s, t.write_gb_per_s, t.checkpoint)
        for t in plan.storage if t.tier != "local")
    return CloudSpec(cluster=plan.name, provider=cloud.provider, region=cloud.region, zone=cloud.zone,
                     placement_group=cloud.placement_group, reservation=cloud.reservation,
                     admin_cidr=cloud.admin_cidr, groups=tuple(groups), storage=storage,
                     tags={"clusterctl:cluster": plan.name, "managed-by": "clusterctl"},
                     controllers=roles.controllers, accounting=roles.accounting)


def inband_networks(plan: ClusterPlan) -> dict[str, AddressPool]:
    """node group -> the in-band address pool its hosts take an address from (for a cloud group: the range
    its private addresses come from)."""
    pools: dict[int, AddressPool] = {}
    for p in plan.addresses:
        if p.role == "inband":
            for gi, _, _ in p.group_offsets:
                pools.setdefault(gi, p)
    return {g.name: pools[g.index] for g in plan.groups if g.index in pools}


def cloud_network(plan: ClusterPlan) -> AddressPool | None:
    """The one in-band pool every cloud node group takes its addresses from, if there is exactly one (IPv4):
    the rendered Pulumi project makes it the VPC/VNet/primary subnet range, so that the addresses the cloud
    assigns are the ones ``clusterctl inventory`` accepts."""
    pools = inband_networks(plan)
    cloud = [pools.get(g.name) for g in plan.groups if g.type.instance is not None]
    names = {p.name for p in cloud if p is not None}
    if None in cloud or len(names) != 1:
        return None
    pool = cloud[0]
    return pool if pool.version == 4 else None
