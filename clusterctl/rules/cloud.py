"""Cloud: instance types offered where asked, placement, provider consistency, zones, access, capacity.

Region lists and placement constructs come from the instance catalog (``clusterctl catalog instances``),
whose regions are a documented subset: when a type is offered in a region the catalog does not list,
override the entry in the blueprint's ``catalog:`` section.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from clusterctl.cloud.stack.cost import breakdown, hourly_cost, usd
from clusterctl.cloud.stack.hostname import problem
from clusterctl.cloud.stack.identity import CAPABILITIES, needs
from clusterctl.cloud.stack.sizing import TABLES, TIB_PER_TB
from clusterctl.kinds import CLOUD_IDENTITY_PATTERNS
from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.ranges import ADMIN_MAX_PREFIX, admin_range_problem
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


@rule("CLOUD005", "cloud", Severity.ERROR, "SSH open to the internet", suppressible=False)
def admin_access(plan: ClusterPlan) -> Iterator[Hit]:
    """``admin_cidr`` is where SSH to the head node may come from (and, on Azure, the storage account and key
    vault). It must be an office, VPN or bastion range: private space, or at most an IPv4 /16 or IPv6 /48 of
    public space. 0.0.0.0/0 (or ::/0) opens SSH to the whole internet, where GPU clusters are scanned for
    within minutes, and 0.0.0.0/1 to half of it. The Pulumi programs refuse the same ranges (also when
    ``clusterctl:adminCidr`` overrides the blueprint), so this cannot be suppressed; the decision is one
    function, ``clusterctl/plan/ranges.py:admin_range_problem``. A value that is not a network prefix is
    rejected by the provider's firewall API."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    try:
        ipaddress.ip_network(cloud.admin_cidr, strict=True)
    except ValueError as exc:
        yield Hit(("cloud", "admin_cidr"), f"admin_cidr '{cloud.admin_cidr}' is not a network prefix: {exc}",
                  "write it as 203.0.113.0/24 with the host bits zero, or a single address as /32")
        return
    problem = admin_range_problem(cloud.admin_cidr)
    if problem is not None:
        yield Hit(("cloud", "admin_cidr"), f"admin_cidr {problem}",
                  f"restrict it to your office, VPN or bastion range (at most a public /{ADMIN_MAX_PREFIX[4]} "
                  f"or IPv6 /{ADMIN_MAX_PREFIX[6]}, or private space)")


@rule("CLOUD006", "cloud", Severity.WARNING, "GPU capacity not reserved")
def reservation(plan: ClusterPlan) -> Iterator[Hit]:
    """On-demand GPU capacity is scarce: launching many GPU instances at once commonly fails with
    insufficient capacity (AWS ICE), often after part of the cluster is up and billing. A GPU group of
    8 or more instances without ``cloud.reservation`` (capacity reservation, Capacity Block, GCP
    reservation) is a warning; 2 to 7 instances is info. Elastic groups are left to CLOUD014: they are on-demand
    capacity by design (created one node at a time as jobs need them), and a reservation would bill while they
    are suspended."""
    cloud = plan.blueprint.cloud
    if cloud is None or cloud.reservation:
        return
    elastic = {g.index for g in _elastic(plan)}
    for g in plan.groups:
        if g.type.instance is None or not g.type.gpus or g.count < 2 or g.index in elastic:
            continue
        sev = Severity.WARNING if g.count >= RESERVATION_WARN_NODES else Severity.INFO
        yield Hit(("cloud", "reservation"),
                  f"node group {g.name} launches {g.count:,} × {g.type.instance_name} ({g.gpus:,} GPUs) "
                  f"without a capacity reservation",
                  "reserve capacity (capacity reservation / Capacity Block / GCP reservation) and name it in "
                  "cloud.reservation", sev)


ZONAL_RESERVATION_PROVIDERS = ("aws", "gcp")
"""providers whose reservations hold one instance type in one zone (Azure capacity reservation groups hold
reservations of several VM sizes and may be regional)"""


@rule("CLOUD007", "cloud", Severity.ERROR, "reservation does not fit the node groups")
def reservation_fit(plan: ClusterPlan) -> Iterator[Hit]:
    """``cloud.reservation`` names one capacity reservation, and on AWS and GCP a reservation is for one
    instance type in one zone:

    - AWS On-Demand Capacity Reservations and Capacity Blocks are created for one ``InstanceType`` in one
      ``AvailabilityZone`` (EC2 API CreateCapacityReservation: "reserve capacity for your Amazon EC2
      instances in a specific Availability Zone"; an instance uses it only when "the instance attributes
      match", EC2 User Guide, placement group rules and limitations); GCP reservations are "Compute Engine
      zonal resources" and "to consume a reservation, a VM must have properties that exactly match that
      reservation" (Compute Engine docs, reservations overview / create a reservation for a single project).
    - So GPU node groups of two or more instance types cannot all launch into it: the others run
      on demand, which for H100-class types at this size commonly fails with insufficient capacity after
      part of the cluster is up (an error, on the ``cloud.reservation`` path, naming the types).
    - Without ``cloud.zone`` the program chooses the zone, and the instances consume the zonal
      reservation only if that happens to be the reservation's zone (an error on ``cloud.zone``).

    A reservation with ``placement_group: false`` for multi-node EFA/RDMA types is CLOUD002's finding
    (the placement group is missing whatever the reservation). Mixing instance types in one AWS cluster
    placement group is not reported: AWS only *recommends* one type per group (a higher chance of
    insufficient capacity), it does not refuse it."""
    cloud = plan.blueprint.cloud
    if cloud is None or not cloud.reservation or cloud.provider not in ZONAL_RESERVATION_PROVIDERS:
        return
    gpu_types: dict[str, list[str]] = {}
    for g in plan.groups:
        if g.type.instance is not None and g.type.gpus and g.type.instance.provider == cloud.provider:
            gpu_types.setdefault(g.type.instance_name, []).append(f"{g.name} ({g.count:,})")
    if len(gpu_types) > 1:
        listed = "; ".join(f"{t}: {', '.join(gs)}" for t, gs in gpu_types.items())
        first = next(iter(gpu_types))
        yield Hit(("cloud", "reservation"),
                  f"reservation {cloud.reservation} is for one instance type, but the GPU node groups use "
                  f"{len(gpu_types)} ({listed}); on {cloud.provider} only one type can launch into it",
                  f"use one GPU instance type (e.g. {first}) per blueprint, or a blueprint per reservation")
    if gpu_types and cloud.zone is None:
        yield Hit(("cloud", "zone"),
                  f"reservation {cloud.reservation} is zonal, but cloud.zone is not set: the instances use it "
                  f"only if they land in its zone",
                  "set cloud.zone to the reservation's zone (the AZ name on AWS, e.g. "
                  f"{_ZONE_EXAMPLE[cloud.provider].format(r=cloud.region)})")


LUSTRE_ROUNDING = 0.01
"""capacities in blueprints are rounded (52.7 TB for 48 TiB): 1 % over the maximum is not reported"""


@rule("CLOUD008", "cloud", Severity.ERROR, "storage bandwidth beyond the managed Lustre at that capacity")
def managed_lustre_bandwidth(plan: ClusterPlan) -> Iterator[Hit]:
    """A cloud's managed Lustre delivers throughput in proportion to its capacity, up to the fastest
    tier's MB/s per TiB, so a Lustre tier's ``read_gb_per_s`` / ``write_gb_per_s`` must be at most
    ``capacity`` (TiB) × that figure (1 GB/s = 1,000 MB/s; ``capacity_tb`` is decimal, 1 TB = 0.909 TiB):

    - AWS FSx for Lustre PERSISTENT_2 (SSD): PerUnitStorageThroughput 125, 250, 500 or 1000 MB/s/TiB
      (FSx for Lustre User Guide, "Managing throughput capacity"; FSx API CreateFileSystemLustreConfiguration).
    - GCP Managed Lustre: performance tiers of 125, 250, 500 and 1000 MBps per TiB (Managed Lustre docs,
      "Create a Managed Lustre instance" / "Performance tiers"; the 1000 tier's minimum is 9,000 GiB).
    - Azure Managed Lustre: throughput SKUs AMLFS-Durable-Premium-40, -125, -250 and -500, i.e. at most
      500 MB/s per TiB (Azure Managed Lustre docs, "Create an Azure Managed Lustre file system"; the
      ND H100 v5 blueprint's AMLFS sizing, 128 TiB × 500 MB/s = 64 GB/s).

    Faster needs more capacity (the program would otherwise provision less than the blueprint's figures,
    and STORAGE001's checkpoint time is computed from them). Capacities rounded in the blueprint are
    allowed 1 % over. Tiers of other file systems (WEKA, VAST on marketplace VMs) are not checked."""
    cloud = plan.blueprint.cloud
    table = TABLES.get((cloud.provider, "parallel")) if cloud is not None else None
    if table is None:
        return
    # the service's fastest tier, from the table the Pulumi program sizes the file system with
    service, per_tib = table.service, table.tiers[-1].throughput_per_tib
    for i, t in enumerate(plan.blueprint.storage):
        if t.tier != "parallel" or t.filesystem != "lustre":
            continue
        tib = t.capacity_tb * TIB_PER_TB
        most = tib * per_tib / 1000  # GB/s
        # one finding per tier: the larger of the two figures decides the capacity
        key, label, want = max((("read_gb_per_s", "read", t.read_gb_per_s),
                                ("write_gb_per_s", "write", t.write_gb_per_s)), key=lambda x: x[2])
        if want <= most * (1 + LUSTRE_ROUNDING):
            continue
        need_tib = want * 1000 / per_tib
        yield Hit(("storage", i, key),
                  f"Lustre tier {t.name}: {want:g} GB/s {label} needs {need_tib:,.1f} TiB "
                  f"({need_tib / TIB_PER_TB:,.1f} TB) of {service} at its fastest {per_tib:,} MB/s per TiB; "
                  f"capacity_tb {t.capacity_tb:g} ({tib:,.1f} TiB) gives at most {most:,.1f} GB/s",
                  f"raise capacity_tb to at least {need_tib / TIB_PER_TB:,.1f} or lower {key} to {most:,.1f}")


@rule("CLOUD009", "cloud", Severity.ERROR, "host name a cloud instance cannot take")
def instance_host_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Each cloud instance is given its blueprint host name (AWS: cloud-init user data; GCP: the instance
    name; Azure: the computer name; docs/cloud.md), because slurmd finds its NodeName by the node's host name.
    So every host of a cloud node group must be a lower-case RFC 1123 label (a-z, digits and '-', no '-' at
    either end, at most 63 characters), starting with a letter on GCP (Compute Engine instance names). An
    upper-case name, which NAME002 only warns about on bare metal, is an error here: Compute Engine refuses it
    and cloud-init and the resolvers would disagree with Slurm about the case."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    for g in plan.groups:
        if g.type.instance is None:
            continue
        for host in g.hosts:
            why = problem(cloud.provider, host)
            if why is not None:
                yield Hit(g.path + ("hostnames",), f"node group {g.name}: {why}",
                          "use lower-case letters, digits and hyphens, starting with a letter, e.g. gpu[0001-0128]")
                break


@rule("CLOUD016", "cloud", Severity.WARNING, "list-price cost per hour over the budget")
def hourly_budget(plan: ClusterPlan) -> Iterator[Hit]:
    """``cloud.hourly_budget_usd`` is compared with the cluster's cost per hour at the on-demand list
    prices of ``clusterctl/catalog/prices.yaml`` in ``cloud.region`` (instances per group x price; the
    same figure ``clusterctl report`` shows): once for the static groups, which run all the time, and
    once with the elastic groups (``node_groups[].cloud.elastic``) at full size, which is what the cluster
    costs while every elastic node runs. Instance types without a list price in the catalog for the
    region are not counted and the message says so; storage, disks and traffic are never counted.
    Reservations (Capacity Blocks, committed use) are billed differently: compare their rate yourself.
    When the priced instances fit the budget but some types have no price, an info finding says the
    budget could not be checked for them."""
    budget = plan.blueprint.cloud.hourly_budget_usd if plan.blueprint.cloud is not None else None
    cost = hourly_cost(plan) if budget is not None else None
    if cost is None:
        return
    unpriced = "".join(f"; {g.count:,} × {g.instance_type} (group {g.group}) have no list price in the catalog "
                       f"for {cost.region} and are not counted" for g in cost.unpriced)
    hint = "raise cloud.hourly_budget_usd, or use fewer or smaller instances"
    if cost.unpriced and cost.full_usd_per_hour <= budget:
        yield Hit(("cloud", "hourly_budget_usd"),
                  f"cloud.hourly_budget_usd {usd(budget)} covers the priced instances ({usd(cost.full_usd_per_hour)} "
                  f"per hour at list price in {cost.region}) but cannot be checked for the rest{unpriced}",
                  "add a sourced price for the type and region to clusterctl/catalog/prices.yaml",
                  severity=Severity.INFO)
    elif cost.static_usd_per_hour > budget:
        yield Hit(("cloud", "hourly_budget_usd"),
                  f"the static groups cost {usd(cost.static_usd_per_hour)} per hour at list price in {cost.region} "
                  f"({breakdown(cost, elastic=False)}), over cloud.hourly_budget_usd {usd(budget)}{unpriced}",
                  hint)
    elif cost.has_elastic and cost.full_usd_per_hour > budget:
        yield Hit(("cloud", "hourly_budget_usd"),
                  f"with the elastic groups at full size the cluster costs up to {usd(cost.full_usd_per_hour)} "
                  f"per hour at list price in {cost.region} (static {usd(cost.static_usd_per_hour)}: "
                  f"{breakdown(cost, elastic=False) or 'none priced'}; elastic {usd(cost.elastic_usd_per_hour_max)}: "
                  f"{breakdown(cost, elastic=True) or 'none priced'}), over cloud.hourly_budget_usd "
                  f"{usd(budget)}{unpriced}",
                  "raise cloud.hourly_budget_usd, make an elastic group smaller, or cap the jobs' node count "
                  "(the budget is exceeded only while more elastic nodes run than it covers)")
# --- elastic node groups and identities (issue 12: Slurm power saving, existing identities) ----------------------

def _elastic(plan: ClusterPlan):
    return [g for g in plan.groups if is_elastic(plan, g.index)]


@rule("CLOUD010", "cloud", Severity.ERROR, "elastic node group that is no cloud instance group")
def elastic_needs_cloud(plan: ClusterPlan) -> Iterator[Hit]:
    """``node_groups[].cloud.elastic`` makes Slurm's ResumeProgram create the group's instances from the launch
    template / instance template / VM settings the Pulumi program writes for it, and SuspendProgram delete them.
    That needs a cloud instance type (``node_types.<t>.instance``), a ``cloud:`` section (the provider and region
    the programs call) and a ``slurm:`` section (slurmctld runs the programs). A bare-metal group cannot be created
    on demand: an error naming what is missing."""
    bp = plan.blueprint
    for g in _elastic(plan):
        missing = []
        if g.type.instance is None:
            missing.append(f"its node type {g.type.name} is {g.type.server_name or 'a server'}, not a cloud instance "
                           "type")
        if bp.cloud is None:
            missing.append("the blueprint has no cloud: section")
        if bp.slurm is None:
            missing.append("the blueprint has no slurm: section (slurmctld's power saving creates the instances)")
        if missing:
            yield Hit(g.path + ("cloud", "elastic"),
                      f"node group {g.name} ({g.count:,} nodes) is elastic, but " + "; ".join(missing),
                      "make the group static (remove cloud.elastic) or use an instance type in a cloud blueprint with "
                      "slurm:")


@rule("CLOUD011", "cloud", Severity.ERROR, "existing identity lacks what its nodes must do")
def identity_capabilities(plan: ClusterPlan) -> Iterator[Hit]:
    """An identity named in ``cloud.identities.<role>`` is used as it is: the program attaches it and grants it
    nothing. Every node reads the cluster's configuration object and its secrets (``read-config``,
    ``read-secrets``); a Slurm controller of a cluster with elastic groups also creates and deletes instances,
    hands them the compute identity and, on AWS, writes their Route 53 records (``manage-instances``,
    ``pass-identity``, ``write-dns``): clusterctl.cloud.stack.identity.needs. An identity whose ``grants`` lack one of
    the capabilities its role's nodes need fails on the node (the bootstrap cannot fetch the configuration, or
    ResumeProgram's API call is refused and the job's nodes go DOWN after ResumeTimeout): an error naming the
    missing capabilities. ``grants`` is what the site says its policies allow; clusterctl cannot read them."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    controllers = set(slurm_roles(plan).controllers)
    elastic = bool(_elastic(plan))
    for role, ident in cloud.identities.items():
        groups = [g for g in plan.groups if g.role == role]
        needed: set[str] = set()
        why: dict[str, str] = {}
        for g in groups:
            ctl = bool(controllers.intersection(g.hosts))
            for cap in needs(cloud.provider, controller=ctl, elastic=elastic):
                needed.add(cap)
                why.setdefault(cap, g.name)
        missing = sorted(needed - set(ident.grants))
        if not missing:
            continue
        listed = "; ".join(f"{c} ({CAPABILITIES[c]}; node group {why[c]})" for c in missing)
        yield Hit(("cloud", "identities", role, "grants"),
                  f"the existing {role} identity {ident.existing} grants {', '.join(ident.grants) or 'nothing'}, but "
                  f"the {role} nodes need {len(missing)} more: {listed}",
                  f"grant it in the provider's policies and add {', '.join(missing)} to cloud.identities.{role}.grants, "
                  f"or remove cloud.identities.{role} so the program creates an identity with what the role needs")


@rule("CLOUD012", "cloud", Severity.ERROR, "elastic controllers or login nodes")
def elastic_only_compute(plan: ClusterPlan) -> Iterator[Hit]:
    """Only Slurm compute nodes can be elastic: power saving creates a node when a job is given it and deletes it
    when idle. A group holding a Slurm controller or the accounting host (slurmctld would delete its own host), a
    login group (users' sessions are not jobs, so the nodes would be deleted under them), or a group that runs no
    slurmd (not compute and in no partition: nothing would ever resume it) cannot be: an error."""
    daemons = slurm_roles(plan).daemons
    named = {n for p in plan.blueprint.slurm.partitions for n in p.groups} if plan.blueprint.slurm else set()
    for g in _elastic(plan):
        held = sorted(daemons.intersection(g.hosts))
        if held:
            why = f"it holds the Slurm controller/accounting host(s) {', '.join(held)}"
        elif g.role == "login":
            why = "it is a login group (sessions on it are no Slurm jobs)"
        elif g.role != "compute" and g.name not in named:
            why = f"its role is {g.role} and no partition names it, so no job ever resumes it"
        else:
            continue
        yield Hit(g.path + ("cloud", "elastic"), f"node group {g.name} is elastic, but {why}",
                  "keep controllers, accounting and login groups static; make only compute groups elastic")


INSTANCE_BOOT_S = {True: 300, False: 120}
"""seconds from the create call to cloud-init's runcmd, by whether the type has GPUs: clusterctl's estimate, not a
measurement (8-GPU instances enumerate their GPUs and up to 32 EFA/RDMA devices at boot)"""
DRIVER_CHECK_S = 60
"""nvidia_driver/doca_ofed verifying the image's stack (software.image_stack: keep, the cloud default)"""
DRIVER_INSTALL_S = 900
"""installing the pinned driver and DOCA-OFED and rebooting (software.image_stack: replace)"""
BOOTSTRAP_ANSIBLE_S = 600
"""the bootstrap: fetching the configuration object and the roles' package installs and configuration on a fresh
instance (apt on a cloud mirror; slurm, munge, enroot, node_health)"""


def resume_estimate(plan: ClusterPlan, g) -> tuple[int, str]:
    """(seconds, how they add up) from the create call to a registered slurmd for one node of group ``g``."""
    sw = plan.blueprint.software
    keep = sw is None or (sw.image_stack or "keep") == "keep"
    parts = [(INSTANCE_BOOT_S[g.type.gpus > 0], "boot")]
    if g.type.gpus:
        parts.append((DRIVER_CHECK_S, "driver check (image stack kept)") if keep else
                     (DRIVER_INSTALL_S, "driver install and reboot (image_stack: replace)"))
    parts.append((BOOTSTRAP_ANSIBLE_S, "bootstrap Ansible run"))
    return sum(s for s, _ in parts), " + ".join(f"{w} {s} s" for s, w in parts)


@rule("CLOUD013", "cloud", Severity.WARNING, "ResumeTimeout shorter than an instance takes to join")
def resume_timeout(plan: ClusterPlan) -> Iterator[Hit]:
    """A node that has not registered within ``slurm.power_save.resume_timeout_s`` of ResumeProgram is marked DOWN
    and its job requeued (slurm.conf(5) ResumeTimeout), while the instance keeps booting and billing. An elastic
    node needs the instance's boot (300 s for GPU instance types, 120 s otherwise), on GPU types the driver stack
    (60 s to verify the image's, 900 s to install the pinned one and reboot with ``software.image_stack:
    replace``) and the bootstrap's Ansible run (600 s): clusterctl's estimates, not measurements. ParallelCluster's
    ComputeNodeBootstrapTimeout and CycleCloud's resume_timeout default to 1800 s. A shorter timeout is a warning
    with the sum; measure one node (`scontrol show node` BootTime minus the resume in slurmctld.log) and set it."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    timeout = slurm.power_save.resume_timeout_s
    worst = None
    for g in _elastic(plan):
        s, how = resume_estimate(plan, g)
        if worst is None or s > worst[0]:
            worst = (s, how, g)
    if worst is None or timeout >= worst[0]:
        return
    s, how, g = worst
    yield Hit(("slurm", "power_save", "resume_timeout_s"),
              f"ResumeTimeout is {timeout:,} s, but a {g.type.instance_name or g.type.name} node of elastic group "
              f"{g.name} needs about {s:,} s to register ({how}; clusterctl's estimate)",
              f"raise slurm.power_save.resume_timeout_s to at least {s:,} (1800 is ParallelCluster's default)")


@rule("CLOUD014", "cloud", Severity.INFO, "elastic groups on a reservation")
def elastic_reservation(plan: ClusterPlan) -> Iterator[Hit]:
    """Resumed instances launch into ``cloud.reservation`` (the launch / instance template names it), so they
    consume it while they run and fall back to nothing when it is used up or expired. A capacity reservation or
    Capacity Block is billed whether instances run in it or not (EC2 User Guide, Capacity Reservation billing: the
    On-Demand rate whether instances run in the reserved capacity or not; Capacity Blocks and GCP reservations are
    paid for their term likewise), so deleting idle nodes saves nothing while it lasts: info."""
    cloud = plan.blueprint.cloud
    if cloud is None or not cloud.reservation:
        return
    groups = [g for g in _elastic(plan) if g.type.instance is not None]
    if not groups:
        return
    listed = ", ".join(f"{g.name} ({g.count:,} x {g.type.instance_name})" for g in groups)
    yield Hit(("cloud", "reservation"),
              f"elastic groups {listed} are created in reservation {cloud.reservation} when jobs need them; the "
              f"reservation is billed whether they run or not, so suspending them saves nothing while it lasts",
              "keep the groups static for the reservation's term, or use elastic groups for on-demand capacity")


@rule("CLOUD015", "cloud", Severity.ERROR, "existing identity of another provider")
def identity_provider(plan: ClusterPlan) -> Iterator[Hit]:
    """``cloud.identities.<role>.existing`` must be the provider's kind of identity: an IAM instance profile or
    role ARN on AWS, a service account e-mail on GCP, a user-assigned managed identity's resource id on Azure
    (the kind CloudIdentity allows all three; the provider decides)."""
    cloud = plan.blueprint.cloud
    if cloud is None:
        return
    pattern = re.compile(CLOUD_IDENTITY_PATTERNS[cloud.provider])
    what = {"aws": "an IAM instance profile or role ARN (arn:aws:iam::123456789012:instance-profile/name)",
            "gcp": "a service account e-mail (name@project.iam.gserviceaccount.com)",
            "azure": "a user-assigned managed identity's resource id (/subscriptions/.../userAssignedIdentities/name)"}
    for role, ident in cloud.identities.items():
        if not pattern.fullmatch(ident.existing):
            yield Hit(("cloud", "identities", role, "existing"),
                      f"the {role} identity {ident.existing} is not a {cloud.provider} identity",
                      f"on {cloud.provider} name {what[cloud.provider]}")
