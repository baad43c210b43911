"""The blueprint: everything a user writes about one training cluster."""

from __future__ import annotations

from pydantic import Field

from clusterctl.blueprint.acceptance import Acceptance
from clusterctl.blueprint.compute import NodeGroup, NodeType
from clusterctl.blueprint.cost import Cost
from clusterctl.blueprint.facility import Cooling, RackProfile, RackRange, Site
from clusterctl.blueprint.kubernetes import KubernetesSpec
from clusterctl.blueprint.network import Fabric, Network
from clusterctl.blueprint.operations import Firewall, Monitoring
from clusterctl.blueprint.software import Cloud, Slurm, Software, Validation
from clusterctl.blueprint.storage import StorageTier, Workload
from clusterctl.blueprint.users import Users
from clusterctl.catalog.models import CatalogData
from clusterctl.kinds import ClusterName, FreeText, Identifier, ObjectName
from clusterctl.strict import StrictModel


class Blueprint(StrictModel):
    """One AI-training cluster: the top level of a blueprint file."""

    name: ClusterName
    """cluster name: lower case letters, digits and dashes, at most 40 characters (it becomes the Slurm
    ClusterName, which slurm.conf(5) limits to 40)"""
    description: FreeText = ""
    site: Site | None = None
    """bare-metal site; absent for cloud-only clusters"""
    cooling: Cooling = Field(default_factory=Cooling)
    rack_profiles: dict[Identifier, RackProfile] = Field(default_factory=dict)
    racks: list[RackRange] = Field(default_factory=list)
    catalog: CatalogData = Field(default_factory=CatalogData)
    """hardware not shipped in the catalog, same shape as the catalog files"""
    node_types: dict[ObjectName, NodeType] = Field(min_length=1)
    node_groups: list[NodeGroup] = Field(min_length=1)
    fabrics: list[Fabric] = Field(default_factory=list)
    storage: list[StorageTier] = Field(default_factory=list)
    workload: Workload | None = None
    addressing: dict[Identifier, Network] = Field(default_factory=dict)
    slurm: Slurm | None = None
    software: Software | None = None
    cloud: Cloud | None = None
    kubernetes: KubernetesSpec | None = None
    """Kubernetes objects rendered from the plan (``render --target kubernetes``, docs/kubernetes.md); absent: none"""
    cost: Cost | None = None
    """how the report prices the cluster (docs/report.md, "Cost of ownership"): the site's price sheet,
    depreciation, facility and utilisation; absent: shipped prices and the defaults"""
    validation: Validation = Field(default_factory=Validation)
    monitoring: Monitoring | None = None
    """Prometheus, exporters and alert rules (docs/monitoring.md); absent: no monitoring stack is rendered"""
    firewall: Firewall | None = None
    """nftables rules per host role (docs/monitoring.md, "Host firewall"); absent: no firewall is rendered"""
    users: Users | None = None
    """the directory the hosts resolve users through, Slurm accounts and their users, who may log in to compute nodes
    without a job (docs/ansible.md, "Users"); absent: none of them managed"""
    acceptance: Acceptance = Field(default_factory=Acceptance)
    """the rendered acceptance and burn-in jobs' thresholds and program locations (docs/acceptance.md)"""
