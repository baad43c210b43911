"""Cloud: instance types offered where asked, placement, provider consistency, zones, access, capacity.

Region lists and placement constructs come from the instance catalog (``clusterctl catalog instances``),
whose regions are a documented subset: when a type is offered in a region the catalog does not list,
override the entry in the blueprint's ``catalog:`` section.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.rules.base import Hit, Severity, rule

_PLACEMENT_NAME = {
    "cluster-placement-group": "an EC2 cluster placement group",
    "compact-placement-policy": "a compact placement policy",
    "proximity-placement-group": "a proximity placement group",
}
RESERVATION_WARN_NODES = 8


def _instance_types(plan: ClusterPlan) -> Iterator[NodeTypePlan]:
    for name in sorted(plan.node_types):
        nt = plan.node_types[name]
        if nt.instance is not None:
            yield nt


def _nodes_of(plan: ClusterPlan, type_name: str) -> int:
    return sum(g.count for g in plan.groups if g.type.name == type_name)


@rule("CLOUD001", "cloud", Severity.ERROR, "instance type not offered in the region")
def offered_in_region(plan: ClusterPlan) -> Iterator[Hit]:
    """Every instance type must be offered in ``cloud.region``: GPU types exist in a handful of regions
    (p5e.48xlarge in us-east-2 only, ND H200 v5 in westus3), and the deployment fails only after the
    network and storage have been created. The catalog's region list is checked; the hint names the
    regions where the type is listed."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    for nt in _instance_types(plan):
        inst = nt.instance
        if inst.provider != cloud.provider or not inst.regions or cloud.region in inst.regions:
            continue
        yield Hit(("cloud", "region"),
                  f"{nt.instance_name} (node type {nt.name}) is not offered in {cloud.region} per the catalog",
                  f"{nt.instance_name} is listed in {', '.join(inst.regions)}; if it is offered in {cloud.region}, "
                  f"add the region to the type in the blueprint's catalog: section")


@rule("CLOUD002", "cloud", Severity.ERROR, "accelerator network needs a placement group")
def placement(plan: ClusterPlan) -> Iterator[Hit]:
    """Instance types whose accelerator network (EFA, GPUDirect-TCPX/RDMA, InfiniBand) only reaches full
    speed inside a placement construct (AWS cluster placement group, GCP compact placement policy,
    Azure proximity placement group) need ``cloud.placement_group: true`` when more than one node of
    the type is deployed: without it nodes land in different spines and collectives crawl, or the
    RDMA network does not connect them at all."""
    cloud = plan.blueprint.cloud
    if cloud is None or cloud.placement_group:
        return
    for nt in _instance_types(plan):
        construct = _PLACEMENT_NAME.get(nt.instance.placement)
        nodes = _nodes_of(plan, nt.name)
        if construct is None or nodes < 2:
            continue
        yield Hit(("cloud", "placement_group"),
                  f"{nodes:,} × {nt.instance_name} (node type {nt.name}) need {construct} for their "
                  f"{nt.instance.network.fabric} network, but placement_group is false",
                  "set cloud.placement_group: true")


@rule("CLOUD003", "cloud", Severity.ERROR, "cloud and bare metal mixed up")
def provider_consistency(plan: ClusterPlan) -> Iterator[Hit]:
    """Instance node types need a ``cloud:`` section (provider and region to deploy into), and every
    instance type must belong to ``cloud.provider``. A ``cloud:`` section alongside bare-metal GPU node
    groups is a warning: hybrid clusters are not supported yet, and the bare-metal nodes will not be
    reachable from the cloud nodes' fabric."""
    cloud = plan.blueprint.cloud
    for nt in _instance_types(plan):
        path = nt.path + ("instance",)
        if cloud is None:
            yield Hit(path, f"node type {nt.name} is cloud instance {nt.instance_name} ({nt.instance.provider}) "
                            f"but the blueprint has no cloud: section",
                      f"add cloud: {{provider: {nt.instance.provider}, region: ...}}")
        elif nt.instance.provider != cloud.provider:
            yield Hit(path, f"node type {nt.name} is {nt.instance_name}, a {nt.instance.provider} instance, "
                            f"but cloud.provider is {cloud.provider}",
                      "use instance types of one provider")
    if cloud is None:
        return
    for g in plan.groups:
        if g.type.server is not None and g.type.gpus:
            yield Hit(g.path + ("type",),
                      f"node group {g.name} is bare-metal {g.type.server_name} ({g.count:,} GPU nodes) in a "
                      f"{cloud.provider} cluster; hybrid clusters are not supported yet",
                      "use an instance type, or a separate blueprint for the bare-metal part", Severity.WARNING)


def _zone_ok(provider: str, region: str, zone: str) -> bool:
    if provider == "aws":
        # availability zone (us-east-1a) or Local Zone (us-west-2-lax-1a)
        return re.fullmatch(re.escape(region) + r"[a-z]", zone) is not None or \
            re.fullmatch(re.escape(region) + r"-[a-z]+-\d+[a-z]", zone) is not None
    if provider == "gcp":
        return re.fullmatch(re.escape(region) + r"-[a-z]", zone) is not None
    if provider == "azure":
        return zone in ("1", "2", "3")
    return True


_ZONE_EXAMPLE = {"aws": "{r}a", "gcp": "{r}-a", "azure": "1"}


@rule("CLOUD004", "cloud", Severity.ERROR, "zone not in region")
def zone_in_region(plan: ClusterPlan) -> Iterator[Hit]:
    """``cloud.zone`` must be a zone of ``cloud.region``: on AWS the region name plus a letter
    (us-east-1a; Local Zones as us-west-2-lax-1a), on GCP the region plus "-" and a letter
    (us-central1-a), on Azure "1", "2" or "3". A zone of another region fails the deployment."""
    cloud = plan.blueprint.cloud
    if cloud is None or cloud.zone is None:
        return
    if not _zone_ok(cloud.provider, cloud.region, cloud.zone):
        example = _ZONE_EXAMPLE[cloud.provider].format(r=cloud.region)
        yield Hit(("cloud", "zone"), f"zone {cloud.zone} is not in {cloud.provider} region {cloud.region}",
                  f"use a zone like {example}" + (" (the AZ name, not the AZ ID)" if cloud.provider == "aws" else ""))


@rule("CLOUD005", "cloud", Severity.WARNING, "SSH open to the internet")
def admin_access(plan: ClusterPlan) -> Iterator[Hit]:
    """``admin_cidr`` is where SSH to the head node may come from. 0.0.0.0/0 (or ::/0) opens it to the
    whole internet, where GPU clusters are scanned for within minutes (a warning); a value that is not a
    network prefix is rejected by the provider's firewall API (an error)."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    try:
        net = ipaddress.ip_network(cloud.admin_cidr, strict=True)
    except ValueError as exc:
        yield Hit(("cloud", "admin_cidr"), f"admin_cidr '{cloud.admin_cidr}' is not a network prefix: {exc}",
                  "write it as 203.0.113.0/24 with the host bits zero, or a single address as /32",
                  Severity.ERROR)
        return
    if net.prefixlen == 0:
        yield Hit(("cloud", "admin_cidr"), f"admin_cidr {cloud.admin_cidr} lets the whole internet reach SSH",
                  "restrict it to your office or VPN range")


@rule("CLOUD006", "cloud", Severity.WARNING, "GPU capacity not reserved")
def reservation(plan: ClusterPlan) -> Iterator[Hit]:
    """On-demand GPU capacity is scarce: launching many GPU instances at once commonly fails with
    insufficient capacity (AWS ICE), often after part of the cluster is up and billing. A GPU group of
    8 or more instances without ``cloud.reservation`` (capacity reservation, Capacity Block, GCP
    reservation) is a warning; 2 to 7 instances is info."""
    cloud = plan.blueprint.cloud
    if cloud is None or cloud.reservation:
        return
    for g in plan.groups:
        if g.type.instance is None or not g.type.gpus or g.count < 2:
            continue
        sev = Severity.WARNING if g.count >= RESERVATION_WARN_NODES else Severity.INFO
        yield Hit(("cloud", "reservation"),
                  f"node group {g.name} launches {g.count:,} × {g.type.instance_name} ({g.gpus:,} GPUs) "
                  f"without a capacity reservation",
                  "reserve capacity (capacity reservation / Capacity Block / GCP reservation) and name it in "
                  "cloud.reservation", sev)
