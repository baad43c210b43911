"""Google Cloud components for a GPU training cluster, built from a :class:`CloudSpec`.

``build(args)`` (a :class:`ClusterArgs`) returns a ``clusterctl:gcp:Cluster`` component whose registered outputs
include ``nodes`` ({hostname: {private_ip, group, role, instance_type}}). Children:

- ``clusterctl:gcp:Network``: the primary VPC (gVNIC eth0 of every VM), the GPU networks the instance
  type's fabric needs, a private-services-access range for Filestore / Managed Lustre, firewall rules.

  * GPUDirect-TCPX/TCPXO (A3 High / A3 Mega): one VPC network + subnet per GPU NIC (4 or 8), gVNIC.
  * GPUDirect-RDMA over RoCE (A3 Ultra / A4): a second gVNIC VPC and one RDMA VPC created with the
    zone's ``<zone>-vpc-roce`` network profile holding one subnet per GPU NIC; the GPU NICs are MRDMA.
    (docs.cloud.google.com/vpc/docs/rdma-network-profiles: RoCE VPC network, profile ``ZONE-vpc-roce``,
    vNIC type MRDMA, A3 Ultra / A4 / A4X; MTU 8896.) RoCE VPCs do not take VPC firewall rules (they have
    their own implicit allow rules), so none are created there.
- ``clusterctl:gcp:GpuNodeGroup``: a compact placement ResourcePolicy (collocation COLLOCATED) and one
  instance per hostname with every GPU NIC, the policy, the specific reservation, Shielded VM, no
  external IP and on_host_maintenance TERMINATE.
- ``clusterctl:gcp:HeadNodes``: the CPU VMs (controller, login...). Only ``login`` nodes get an external
  IP; the firewall admits SSH from ``admin_cidr`` alone.
- ``clusterctl:gcp:Storage``: Filestore for ``nfs`` tiers, Managed Lustre (``gcp.lustre.Instance``) for
  ``parallel`` tiers sized for capacity *and* bandwidth (:func:`lustre_size`), and a GCS checkpoint bucket
  (uniform bucket-level access, public access prevention enforced, versioning).
- ``clusterctl:gcp:MungeKey`` / ``SlurmdbdPassword``: the ``mungeKey`` and ``slurmdbdPassword`` stack
  secrets in Secret Manager (replicated only in the cluster's region, CMEK with ``kmsKey``); the stack outputs
  name the secrets, never their values (as AWS's SSM SecureString parameter).
- ``clusterctl:gcp:ConfigStore``: a private bucket with the configuration object
  (``clusterctl.cloud.stack.bundle``: the render plus stack.json), which every instance's bootstrap fetches.
- ``clusterctl:gcp:Identities``: a service account per node role class with IAM on the config bucket and on
  each secret it reads, and for controllers of a cluster with elastic groups a custom role limited by an IAM
  condition to the elastic instances (:class:`Identities`).
- ``clusterctl:gcp:ElasticNodeGroup``: an elastic group's instance template (no instances); stack.json names
  it for the resume program.

With ``render_dir`` every static instance gets ``user-data`` (the host name and the bootstrap program) and
the config object is uploaded; without it neither.

Stack configuration (``pulumi config set clusterctl:<key>``; :mod:`clusterctl.cloud.pulumi.program` reads it once into
:class:`Settings` and :class:`~clusterctl.cloud.pulumi.component.StackSecrets`): ``adminCidr`` (overrides the
blueprint's),
``sshPublicKey`` (added to instance metadata; without it OS Login is used), ``sshUser``, ``gpuImage``,
``headImage``, ``kmsKey`` (CMEK for boot disks, Lustre, the buckets and the secrets), ``serviceAccount`` (an
existing identity for every node instead of the per-role accounts), ``primaryCidr``, ``serviceCidr``,
``gpuCidrBase``; secrets ``mungeKey`` (required) and ``slurmdbdPassword`` (required with Slurm).
``gcp:project`` names the project in the RDMA network-profile URL, the secrets' names and the IAM condition.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from clusterctl import hostlist
from clusterctl.cloud.pulumi import component
from clusterctl.cloud.stack import bundle, userdata
from clusterctl.cloud.pulumi.gcp_names import account_id, labels, resource_name
from clusterctl.cloud.stack.identity import IdentityClass, identity_classes
from clusterctl.cloud.stack.sizing import GIB_PER_TB, MANAGED_LUSTRE, StorageSize, sized, step_up
from clusterctl.cloud.stack.spec import CloudSpec, GroupSpec, StorageSpec, is_gpu_group

PKG = "clusterctl:gcp"
DEFAULT_GPU_IMAGE = "debian-cloud/debian-12"
DEFAULT_HEAD_IMAGE = "debian-cloud/debian-12"
RDMA_FABRICS = ("rdma-roce",)
SEPARATE_VPC_FABRICS = ("tcpx", "tcpxo")
GPU_NIC_MTU = {"tcpx": 8244, "tcpxo": 8244, "rdma-roce": 8896}

# Filestore zonal: 1 TiB to 9.75 TiB in 256 GiB steps, 10 TiB to 100 TiB in 2.5 TiB steps.
FILESTORE_TIER = "ZONAL"


# ---------------------------------------------------------------------------------------------- helpers

def lustre_size(capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> StorageSize:
    """The Managed Lustre tier and capacity of a parallel tier (clusterctl.cloud.stack.sizing: the one policy,
    Managed Lustre's table)."""
    return sized(MANAGED_LUSTRE, capacity_tb, read_gb_per_s, write_gb_per_s)


def filestore_capacity_gib(capacity_tb: float) -> int:
    gib = capacity_tb * GIB_PER_TB
    if gib <= 9.75 * 1024:
        return step_up(gib, 1024, 256)
    return step_up(gib, 10 * 1024, 2560)


@dataclass(frozen=True)
class Settings:
    """The stack configuration of a GCP cluster (the module's docstring), read once by
    :mod:`clusterctl.cloud.pulumi.program`."""
    admin_cidr: str
    ssh_public_key: str | None = None
    ssh_user: str = "clusterctl"
    gpu_image: str = DEFAULT_GPU_IMAGE
    head_image: str = DEFAULT_HEAD_IMAGE
    kms_key: str | None = None
    service_account: str | None = None
    primary_cidr: str = "10.0.0.0/20"
    service_cidr: str = "10.0.32.0/20"
    gpu_cidr_base: str = "192.168.0.0/16"
    project: str | None = None
    """``gcp:project``"""

    def __post_init__(self) -> None:
        component.refuse_wide_admin_cidr(self.admin_cidr)
        for setting, cidr in (("primaryCidr", self.primary_cidr), ("serviceCidr", self.service_cidr),
                              ("gpuCidrBase", self.gpu_cidr_base)):
            component.refuse_world_network(setting, cidr)


Args = component.provider_args(Settings)
"""the base of every ``XxxArgs`` below: the shared arguments with ``settings`` this provider's :class:`Settings`"""


class NetworkArgs(Args, component.NetworkArgs):
    """the primary VPC's, the GPU networks' and the firewall's (ranges from the stack's settings)"""


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs(Args, component.NodeGroupArgs):
    network: Network
    boot: Boot


@dataclass(frozen=True, kw_only=True)
class HeadNodesArgs(Args, component.HeadNodesArgs):
    network: Network
    boot: Boot


@dataclass(frozen=True, kw_only=True)
class ElasticNodeGroupArgs(Args):
    group: GroupSpec
    network: Network
    service_account: pulumi.Input[str]
    """the e-mail of the group's service account"""


@dataclass(frozen=True, kw_only=True)
class StorageArgs(Args, component.StorageArgs):
    network: Network


@dataclass(frozen=True, kw_only=True)
class StackSecretArgs(Args):
    value: pulumi.Input[str]
    """the secret's value (a secret Output)"""
    purpose: str
    """``munge-key`` or ``slurmdbd-password``: the secret's name after the cluster's"""


class ConfigStoreArgs(Args, component.ConfigStoreArgs):
    """the configuration object store's: the spec and the settings only"""


@dataclass(frozen=True, kw_only=True)
class IdentitiesArgs(Args, component.IdentityArgs):
    config: ConfigStore
    secrets: dict[str, StackSecret]
    """``munge`` and (with accounting hosts) ``slurmdbd``"""


@dataclass(frozen=True, kw_only=True)
class ClusterArgs(Args, component.ClusterArgs):
    """the whole cluster's: ``secrets`` and ``render_dir`` (component.ClusterArgs)"""


# ------------------------------------------------------------------------------------------- components

class Network(pulumi.ComponentResource):
    """Primary VPC, the GPU networks of every GPU fabric in the spec, private services access, firewall."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings = args.spec, args.settings
        base = resource_name(spec.cluster)
        self.primary = gcp.compute.Network(f"{name}-primary", name=resource_name(base, "net"),
                                           auto_create_subnetworks=False, mtu=8896, opts=child)
        self.primary_subnet = gcp.compute.Subnetwork(
            f"{name}-primary-sub", name=resource_name(base, "subnet"), network=self.primary.id, region=spec.region,
            ip_cidr_range=settings.primary_cidr, private_ip_google_access=True, opts=child)
        # private services access: Filestore (PRIVATE_SERVICE_ACCESS mode) and Managed Lustre peer here
        svc = ipaddress.ip_network(settings.service_cidr)
        self.service_range = gcp.compute.GlobalAddress(
            f"{name}-psa", name=resource_name(base, "psa"), purpose="VPC_PEERING", address_type="INTERNAL",
            address=str(svc.network_address), prefix_length=svc.prefixlen, network=self.primary.id, opts=child)
        self.service_connection = gcp.servicenetworking.Connection(
            f"{name}-psa", network=self.primary.id, service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[self.service_range.name], opts=child)

        # GPU networks, per fabric: list of (network, subnetwork) in NIC order
        self.gpu_nets: dict[str, list[tuple[gcp.compute.Network, gcp.compute.Subnetwork]]] = {}
        self.host_nets: dict[str, tuple[gcp.compute.Network, gcp.compute.Subnetwork]] = {}
        gpu_cidrs = ipaddress.ip_network(settings.gpu_cidr_base).subnets(new_prefix=22)
        fabrics: dict[str, int] = {}
        for g in spec.groups:
            if is_gpu_group(g):
                fabrics[g.network_fabric] = max(fabrics.get(g.network_fabric, 0), g.accelerator_nics)
        self.firewalled: list[tuple[gcp.compute.Network, list[str]]] = [
            (self.primary, [settings.primary_cidr, settings.service_cidr])]
        for fabric in sorted(fabrics):
            nics = fabrics[fabric]
            mtu = GPU_NIC_MTU.get(fabric, 8896)
            if fabric in RDMA_FABRICS:
                if not spec.zone:
                    raise ValueError(f"{fabric} needs cloud.zone: the RoCE network profile is zonal")
                cidr = str(next(gpu_cidrs))
                host = gcp.compute.Network(f"{name}-{fabric}-host", name=resource_name(base, fabric, "host"),
                                           auto_create_subnetworks=False, mtu=mtu, opts=child)
                host_sub = gcp.compute.Subnetwork(f"{name}-{fabric}-host-sub", name=resource_name(base, fabric, "host"),
                                                  network=host.id, region=spec.region, ip_cidr_range=cidr, opts=child)
                self.host_nets[fabric] = (host, host_sub)
                self.firewalled.append((host, [cidr]))
                profile = (f"projects/{settings.project}/global/networkProfiles/{spec.zone}-vpc-roce"
                           if settings.project else
                           host.project.apply(lambda p, z=spec.zone: f"projects/{p}/global/networkProfiles/{z}-vpc-roce"))
                rdma = gcp.compute.Network(f"{name}-{fabric}", name=resource_name(base, fabric),
                                           auto_create_subnetworks=False, mtu=mtu, network_profile=profile,
                                           opts=child)
                subs = []
                for i in range(nics):
                    subs.append((rdma, gcp.compute.Subnetwork(
                        f"{name}-{fabric}-{i}-sub", name=resource_name(base, fabric, str(i)), network=rdma.id,
                        region=spec.region, ip_cidr_range=str(next(gpu_cidrs)), opts=child)))
                self.gpu_nets[fabric] = subs
            else:
                subs = []
                for i in range(nics):
                    cidr = str(next(gpu_cidrs))
                    net = gcp.compute.Network(f"{name}-{fabric}-{i}", name=resource_name(base, fabric, str(i)),
                                              auto_create_subnetworks=False, mtu=mtu, opts=child)
                    sub = gcp.compute.Subnetwork(f"{name}-{fabric}-{i}-sub", name=resource_name(base, fabric, str(i)),
                                                 network=net.id, region=spec.region, ip_cidr_range=cidr, opts=child)
                    subs.append((net, sub))
                    self.firewalled.append((net, [cidr]))
                self.gpu_nets[fabric] = subs

        self.node_tag = resource_name(base, "node")
        for i, (net, ranges) in enumerate(self.firewalled):
            gcp.compute.Firewall(f"{name}-internal-{i}", name=resource_name(base, "internal", str(i)), network=net.id,
                                 direction="INGRESS", source_ranges=ranges, target_tags=[self.node_tag],
                                 allows=[{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}],
                                 opts=child)
        gcp.compute.Firewall(f"{name}-ssh", name=resource_name(base, "ssh"), network=self.primary.id,
                             direction="INGRESS", source_ranges=[settings.admin_cidr], target_tags=[self.node_tag],
                             allows=[{"protocol": "tcp", "ports": ["22"]}], opts=child)
        self.register_outputs({
            "primary_network": self.primary.name,
            "gpu_networks": {f: [s.name for _, s in subs] for f, subs in self.gpu_nets.items()},
        })

    def head_interfaces(self, group: GroupSpec) -> list[dict]:
        """A CPU VM's one NIC on the primary subnet; ``login`` nodes also get an ephemeral external IP."""
        nic: dict = {"subnetwork": self.primary_subnet.id, "nic_type": "GVNIC"}
        if group.role == "login":
            nic["access_configs"] = [{"network_tier": "PREMIUM"}]
        return [nic]

    def gpu_interfaces(self, group: GroupSpec) -> list[dict]:
        nics: list[dict] = [{"subnetwork": self.primary_subnet.id, "nic_type": "GVNIC"}]
        fabric = group.network_fabric
        if fabric in RDMA_FABRICS:
            _, host_sub = self.host_nets[fabric]
            nics.append({"subnetwork": host_sub.id, "nic_type": "GVNIC"})
            nics += [{"subnetwork": sub.id, "nic_type": "MRDMA"}
                     for _, sub in self.gpu_nets[fabric][:group.accelerator_nics]]
        else:
            nics += [{"subnetwork": sub.id, "nic_type": "GVNIC"}
                     for _, sub in self.gpu_nets[fabric][:group.accelerator_nics]]
        return nics


def _metadata(settings: Settings, user_data: pulumi.Input[str] | None = None) -> dict:
    """Instance metadata: the SSH key (or OS Login) and, with a render, the host's cloud-init ``user-data``
    (the guest environment hands it to cloud-init on Google's images)."""
    if settings.ssh_public_key:
        meta: dict = {"enable-oslogin": "FALSE", "ssh-keys": f"{settings.ssh_user}:{settings.ssh_public_key}",
                      "block-project-ssh-keys": "TRUE"}
    else:
        meta = {"enable-oslogin": "TRUE"}
    if user_data is not None:
        meta["user-data"] = user_data
    return meta


SHIELDED_VM = {"enable_secure_boot": True, "enable_vtpm": True, "enable_integrity_monitoring": True}


def _vm_args(spec: CloudSpec, group: GroupSpec, nics: list[dict], tag: str, email: pulumi.Input[str],
             metadata: dict, **extra) -> dict:
    """What an instance and an instance template of ``group`` share: machine type, NICs, identity (its role's
    service account with the cloud-platform scope: IAM decides what it may do), labels, Shielded VM."""
    return dict(machine_type=group.instance_type, network_interfaces=nics, tags=[tag],
                labels=labels(spec, group=group.name, role=group.role), metadata=metadata,
                service_account={"email": email, "scopes": ["cloud-platform"]},
                shielded_instance_config=SHIELDED_VM, **extra)


def _instance(name: str, *, spec: CloudSpec, settings: Settings, group: GroupSpec, host: str, nics: list[dict],
              tag: str, image: str, disk_type: str, boot: Boot, opts: pulumi.ResourceOptions,
              **extra) -> gcp.compute.Instance:
    """The instance ``host`` of ``group``, booting with its service account and user data from ``boot``."""
    disk: dict = {"initialize_params": {"image": image, "size": 200, "type": disk_type,
                                        "labels": labels(spec, group=group.name)},
                  "auto_delete": True}
    if settings.kms_key:
        disk["kms_key_self_link"] = settings.kms_key
    return gcp.compute.Instance(
        name, name=host, zone=spec.zone, boot_disk=disk, allow_stopping_for_update=True, opts=opts,
        **_vm_args(spec, group, nics, tag, boot.email(host), _metadata(settings, boot.user_data(host)), **extra))


def _gpu_extra(name: str, spec: CloudSpec, group: GroupSpec, opts: pulumi.ResourceOptions):
    """(compact placement policy or None, the GPU VM settings): TERMINATE on host maintenance, the policy, the
    specific reservation."""
    policy = None
    if spec.placement_group or group.placement == "compact-placement-policy":
        policy = gcp.compute.ResourcePolicy(
            f"{name}-placement", name=resource_name(spec.cluster, group.name, "compact"), region=spec.region,
            group_placement_policy={"collocation": "COLLOCATED"}, opts=opts)
    extra: dict = {"scheduling": {"on_host_maintenance": "TERMINATE", "automatic_restart": True}}
    if policy is not None:
        extra["resource_policies"] = policy.self_link  # one policy (a str in pulumi-gcp 10)
    if spec.reservation:
        extra["reservation_affinity"] = {
            "type": "SPECIFIC_RESERVATION",
            "specific_reservation": {"key": "compute.googleapis.com/reservation-name",
                                     "values": [spec.reservation]}}
    return policy, extra


class GpuNodeGroup(pulumi.ComponentResource):
    """A compact placement policy and one GPU instance per hostname with all of its GPU NICs."""

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, group, network, boot = args.spec, args.settings, args.group, args.network, args.boot
        self.policy, extra = _gpu_extra(name, spec, group, child)
        inst_opts = pulumi.ResourceOptions(parent=self, depends_on=boot.depends_on)
        self.instances = {
            host: _instance(f"{name}-{host}", spec=spec, settings=settings, group=group, host=host,
                            nics=network.gpu_interfaces(group), tag=network.node_tag, image=settings.gpu_image,
                            disk_type="hyperdisk-balanced", boot=boot, opts=inst_opts, **extra)
            for host in group.hostnames}
        self.register_outputs({"hosts": list(group.hostnames),
                               "placement_policy": self.policy.self_link if self.policy else None})


class HeadNodes(pulumi.ComponentResource):
    """The CPU VMs (controller, login, service): primary VPC only; login nodes get an external IP."""

    def __init__(self, name: str, args: HeadNodesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:HeadNodes", name, None, opts)
        spec, settings, network, boot = args.spec, args.settings, args.network, args.boot
        inst_opts = pulumi.ResourceOptions(parent=self, depends_on=boot.depends_on)
        self.instances: dict[str, tuple[GroupSpec, gcp.compute.Instance]] = {}
        for group in args.groups:
            for host in group.hostnames:
                self.instances[host] = (group, _instance(
                    f"{name}-{host}", spec=spec, settings=settings, group=group, host=host,
                    nics=network.head_interfaces(group), tag=network.node_tag, image=settings.head_image,
                    disk_type="pd-balanced", boot=boot, opts=inst_opts,
                    scheduling={"on_host_maintenance": "MIGRATE", "automatic_restart": True}))
        self.register_outputs({"hosts": sorted(self.instances)})


class ElasticNodeGroup(pulumi.ComponentResource):
    """An elastic group (``cloud.elastic``): no instance at ``pulumi up``, one instance template holding
    everything a static instance of the group has (machine type, every NIC, boot disk, its role's service
    account, TERMINATE, the reservation, the compact placement policy, Shielded VM, labels, SSH metadata).
    The resume program creates ``HOST`` with ``gcloud compute instances create HOST
    --source-instance-template=<template> --zone=<zone>`` and the host's user data (stack.json)."""

    def __init__(self, name: str, args: ElasticNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:ElasticNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, group, network, email = args.spec, args.settings, args.group, args.network, args.service_account
        if not spec.zone:
            raise ValueError(f"elastic group {group.name} needs cloud.zone: the resume program creates its "
                             "instances in one zone")
        self.policy = None
        if is_gpu_group(group):
            self.policy, extra = _gpu_extra(name, spec, group, child)
            nics, image, disk_type = network.gpu_interfaces(group), settings.gpu_image, "hyperdisk-balanced"
        else:
            extra = {"scheduling": {"on_host_maintenance": "MIGRATE", "automatic_restart": True}}
            nics, image, disk_type = network.head_interfaces(group), settings.head_image, "pd-balanced"
        disk: dict = {"source_image": image, "disk_size_gb": 200, "disk_type": disk_type, "boot": True,
                      "auto_delete": True, "labels": labels(spec, group=group.name)}
        if settings.kms_key:
            disk["disk_encryption_key"] = {"kms_key_self_link": settings.kms_key}
        # name_prefix: a changed template is a new one created before the old one is deleted
        self.template = gcp.compute.InstanceTemplate(
            f"{name}-template", name_prefix=resource_name(spec.cluster, group.name)[:36] + "-", disks=[disk],
            opts=child, **_vm_args(spec, group, nics, network.node_tag, email, _metadata(settings), **extra))
        self.register_outputs({"hosts": hostlist.compress(group.hostnames), "template": self.template.self_link})


class Storage(pulumi.ComponentResource):
    """Filestore (nfs), Managed Lustre (parallel) and the GCS checkpoint bucket."""

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Storage", name, None, opts)
        spec, settings, network = args.spec, args.settings, args.network
        child = pulumi.ResourceOptions(parent=self, depends_on=[network.service_connection])
        location = spec.zone or f"{spec.region}-a"
        self.mounts: dict[str, dict] = {}
        for t in spec.storage:
            if t.tier == "parallel":
                self.mounts[t.name] = self._lustre(name, spec, settings, network, t, location, child)
            elif t.tier == "nfs":
                self.mounts[t.name] = self._filestore(name, spec, network, t, location, child)
        self.bucket = gcp.storage.Bucket(
            f"{name}-checkpoints", location=spec.region.upper(), storage_class="STANDARD",
            uniform_bucket_level_access=True, public_access_prevention="enforced",
            versioning={"enabled": True}, labels=labels(spec, purpose="checkpoints"),
            lifecycle_rules=[{"action": {"type": "Delete"}, "condition": {"days_since_noncurrent_time": 7}}],
            encryption={"default_kms_key_name": settings.kms_key} if settings.kms_key else None,
            opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"mounts": self.mounts, "checkpoint_bucket": self.bucket.url})

    def _lustre(self, name, spec, settings, network, t: StorageSpec, location, opts) -> dict:
        size = lustre_size(t.capacity_tb, t.read_gb_per_s, t.write_gb_per_s)
        fs = re.sub(r"[^a-z0-9]", "", t.name.lower())[:8] or "lustre"
        inst = gcp.lustre.Instance(
            f"{name}-{t.name}", instance_id=resource_name(spec.cluster, t.name), location=location,
            network=network.primary.id, filesystem=fs, capacity_gib=str(size.capacity),
            per_unit_storage_throughput=str(size.tier.throughput_per_tib), kms_key=settings.kms_key,
            labels=labels(spec, storage=t.name), opts=opts)
        return {"kind": "managed-lustre", "mount": t.mount, "filesystem": fs, "capacity_gib": size.capacity,
                "per_unit_storage_throughput": size.tier.throughput_per_tib,
                "throughput_gb_per_s": round(size.throughput / 1000, 1), "instance": inst.instance_id}

    def _filestore(self, name, spec, network, t: StorageSpec, location, opts) -> dict:
        share = re.sub(r"[^a-z0-9_]", "_", t.name.lower())[:16]
        if not share[0].isalpha():
            share = "s" + share[:15]
        gib = filestore_capacity_gib(t.capacity_tb)
        inst = gcp.filestore.Instance(
            f"{name}-{t.name}", name=resource_name(spec.cluster, t.name), location=location, tier=FILESTORE_TIER,
            file_shares={"name": share, "capacity_gb": gib},
            networks=[{"network": network.primary.name, "modes": ["MODE_IPV4"],
                       "connect_mode": "PRIVATE_SERVICE_ACCESS"}],
            labels=labels(spec, storage=t.name), opts=opts)
        return {"kind": "filestore", "mount": t.mount, "share": share, "capacity_gib": gib, "tier": FILESTORE_TIER,
                "instance": inst.name}


class StackSecret(pulumi.ComponentResource):
    """A stack secret as a Secret Manager secret: one version holding the value (a secret Output end to end),
    replicated only in the cluster's region (CMEK with ``kmsKey``). Who may read it is :class:`Identities`'
    business (IAM on this secret, per role)."""

    TOKEN = "Secret"

    def __init__(self, name: str, args: StackSecretArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:{self.TOKEN}", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, value, purpose = args.spec, args.settings, args.value, args.purpose
        replica: dict = {"location": spec.region}
        if settings.kms_key:
            replica["customer_managed_encryption"] = {"kms_key_name": settings.kms_key}
        self.secret = gcp.secretmanager.Secret(
            f"{name}-secret", secret_id=resource_name(spec.cluster, purpose),
            replication={"user_managed": {"replicas": [replica]}}, labels=labels(spec, purpose=purpose),
            opts=child)
        self.version = gcp.secretmanager.SecretVersion(
            f"{name}-version", secret=self.secret.id, secret_data=value,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["secret_data"]))
        project = settings.project or self.secret.project
        self.full_name = pulumi.Output.concat("projects/", project, "/secrets/", self.secret.secret_id)
        """``projects/P/secrets/S``: what the bootstrap program asks Secret Manager for"""
        self.register_outputs({"secret": self.secret.secret_id})


class MungeKey(StackSecret):
    """The Slurm munge key (``clusterctl:mungeKey``): every node reads it."""
    TOKEN = "MungeKey"


class SlurmdbdPassword(StackSecret):
    """The slurmdbd database password (``clusterctl:slurmdbdPassword``): only the accounting hosts read it."""
    TOKEN = "SlurmdbdPassword"


class ConfigStore(pulumi.ComponentResource):
    """The private bucket holding the cluster's configuration object (uniform bucket-level access, public
    access prevention enforced, CMEK with ``kmsKey``). :meth:`upload` writes the object."""

    def __init__(self, name: str, args: ConfigStoreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:ConfigStore", name, None, opts)
        spec, settings = args.spec, args.settings
        self._name = name
        self.bucket = gcp.storage.Bucket(
            f"{name}-bucket", location=spec.region.upper(), storage_class="STANDARD",
            uniform_bucket_level_access=True, public_access_prevention="enforced", versioning={"enabled": True},
            labels=labels(spec, purpose="config"),
            encryption={"default_kms_key_name": settings.kms_key} if settings.kms_key else None,
            opts=pulumi.ResourceOptions(parent=self))
        self.url = pulumi.Output.concat("gs://", self.bucket.name, "/", bundle.OBJECT_KEY)
        self.object: gcp.storage.BucketObject | None = None

    def upload(self, render_dir: Path | None, stack: pulumi.Output) -> None:
        """With a render: the object ``bundle.OBJECT_KEY`` = config_bundle(render_dir, stack), written to
        ``bundle.BUNDLE_FILE`` of the render (a binary file: GCS objects from Pulumi take a file asset,
        ``content`` is text) and uploaded from there."""
        if render_dir is not None:
            self.object = gcp.storage.BucketObject(
                f"{self._name}-object", bucket=self.bucket.name, name=bundle.OBJECT_KEY,
                content_type="application/gzip",
                source=component.config_object(render_dir, stack).apply(
                    lambda data: component.bundle_asset(render_dir, data)),
                opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"bucket": self.bucket.name, "url": self.url})


# --------------------------------------------------------------------------------------------- identity

SHARED_ACCOUNT = "nodes"
"""the one class of every host when ``serviceAccount`` names an existing identity"""


def service_account_classes(spec: CloudSpec, shared: bool = False) -> dict[str, IdentityClass]:
    """The service accounts' classes: the identity classes of the stack facts, or with ``serviceAccount`` set
    (``shared``) one class :data:`SHARED_ACCOUNT` holding every host and the union of what they may do."""
    classes = identity_classes(spec)
    if not shared:
        return classes
    members = classes.values()
    return {SHARED_ACCOUNT: IdentityClass(
        SHARED_ACCOUNT, tuple(h for c in members for h in c.hosts), tuple(g for c in members for g in c.groups),
        controller=any(c.controller for c in members), accounting=any(c.accounting for c in members))}

POWER_SAVE_PERMISSIONS = (
    # Compute Engine: creating a VM from an instance template ("Create a VM from an instance template",
    # required permissions) and deleting it; the operations gcloud waits on
    "compute.disks.create", "compute.disks.setLabels", "compute.images.useReadOnly",
    "compute.instanceTemplates.useReadOnly", "compute.instances.create", "compute.instances.delete",
    "compute.instances.get", "compute.instances.list", "compute.instances.setLabels",
    "compute.instances.setMetadata", "compute.instances.setServiceAccount", "compute.instances.setTags",
    "compute.resourcePolicies.use", "compute.subnetworks.use", "compute.zoneOperations.get",
)


def power_save_condition(project: str, zone: str, prefixes: list[str]) -> str:
    """IAM condition of the power-save role: instances and disks only in the cluster's zone and named like the
    elastic groups' hosts (the boot disk takes the instance's name); the role's other permissions (use a
    template, subnetwork, placement policy, image; read operations) are on other resource types."""
    inst = "compute.googleapis.com/Instance"
    disk = "compute.googleapis.com/Disk"
    names = []
    for kind, typ in (("instances", inst), ("disks", disk)):
        for p in prefixes:
            names.append(f"(resource.type == '{typ}' && "
                         f"resource.name.startsWith('projects/{project}/zones/{zone}/{kind}/{p}'))")
    names.append(f"(resource.type != '{inst}' && resource.type != '{disk}')")
    return " || ".join(names)


class Identities(pulumi.ComponentResource):
    """A service account per identity class (:func:`service_account_classes`) and, per capability
    (clusterctl.cloud.stack.identity.needs), the narrowest IAM GCP has:

    - read-config: ``roles/storage.objectViewer`` on the config bucket (not the project);
    - read-secrets: ``roles/secretmanager.secretAccessor`` on the munge-key secret and, for the accounting
      hosts' class, the slurmdbd-password secret (IAM on each secret, not the project);
    - manage-instances (controllers, when a group is elastic): a custom project role with only
      POWER_SAVE_PERMISSIONS, bound on the project with an IAM condition limiting instances and disks to the
      cluster's zone and the elastic groups' name prefixes (instances that do not exist yet have no IAM policy
      to bind on, so a project binding with a condition is as narrow as Compute Engine allows);
    - pass-identity: ``roles/iam.serviceAccountUser`` on the service account of each elastic group only.

    With ``serviceAccount`` set no account is created: that existing identity is every node's and gets the
    union of the bindings (rule CLOUD011 checks named identities)."""

    def __init__(self, name: str, args: IdentitiesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Identities", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, config, secrets = args.spec, args.settings, args.config, args.secrets
        self.classes = service_account_classes(spec, shared=bool(settings.service_account))
        self._class_of = {h: c.name for c in self.classes.values() for h in c.hosts}
        self.emails: dict[str, pulumi.Output[str]] = {}
        self.accounts: dict[str, gcp.serviceaccount.Account] = {}
        for c in self.classes.values():
            if settings.service_account:
                self.emails[c.name] = pulumi.Output.from_input(settings.service_account)
                continue
            acct = gcp.serviceaccount.Account(
                f"{name}-{c.name}", account_id=account_id(spec.cluster, c.name),
                display_name=f"clusterctl {spec.cluster} {c.name}"[:100],
                description=f"{c.name} nodes of cluster {spec.cluster} (clusterctl)", opts=child)
            self.accounts[c.name] = acct
            self.emails[c.name] = acct.email
        elastic_groups = [g for g in spec.groups if g.elastic]
        self.power_save_role = None
        for c in self.classes.values():
            member = self.emails[c.name].apply(lambda e: f"serviceAccount:{e}")
            caps = c.needs("gcp", elastic=bool(elastic_groups))
            if "read-config" in caps:
                gcp.storage.BucketIAMMember(f"{name}-{c.name}-config", bucket=config.bucket.name,
                                            role="roles/storage.objectViewer", member=member, opts=child)
            if "read-secrets" in caps:
                readable = ["munge"] + (["slurmdbd"] if c.accounting and "slurmdbd" in secrets else [])
                for key in readable:
                    gcp.secretmanager.SecretIamMember(
                        f"{name}-{c.name}-reads-{key}", secret_id=secrets[key].secret.id,
                        role="roles/secretmanager.secretAccessor", member=member, opts=child)
            if "manage-instances" in caps:
                role = self._power_save_role(name, spec, settings, child)
                project = settings.project or role.project
                prefixes = sorted({os.path.commonprefix(list(g.hostnames)) for g in elastic_groups})
                gcp.projects.IAMMember(
                    f"{name}-{c.name}-power-save", project=project, role=role.name, member=member,
                    condition={"title": "clusterctl-power-save",
                               "description": f"elastic instances of {spec.cluster} in {spec.zone}",
                               "expression": pulumi.Output.from_input(project).apply(
                                   lambda p: power_save_condition(p, spec.zone, prefixes))},
                    opts=child)
            if "pass-identity" in caps:
                for used in sorted({self.class_of(g.hostnames[0]) for g in elastic_groups}):
                    if used not in self.accounts:
                        continue  # serviceAccount: granted below on itself
                    gcp.serviceaccount.IAMMember(
                        f"{name}-{c.name}-acts-as-{used}", service_account_id=self.accounts[used].name,
                        role="roles/iam.serviceAccountUser", member=member, opts=child)
                if settings.service_account:
                    gcp.serviceaccount.IAMMember(
                        f"{name}-{c.name}-acts-as-itself",
                        service_account_id=self.emails[c.name].apply(
                            lambda e: f"projects/{settings.project or '-'}/serviceAccounts/{e}"),
                        role="roles/iam.serviceAccountUser", member=member, opts=child)
        self.register_outputs({"service_accounts": dict(self.emails)})

    def _power_save_role(self, name, spec, settings, opts) -> gcp.projects.IAMCustomRole:
        if self.power_save_role is None:
            self.power_save_role = gcp.projects.IAMCustomRole(
                f"{name}-power-save", role_id=re.sub(r"[^A-Za-z0-9_]", "_", f"clusterctl_{spec.cluster}_power_save")[:64],
                title=f"clusterctl {spec.cluster} power saving"[:100],
                description="create and delete the elastic instances of one clusterctl cluster",
                permissions=list(POWER_SAVE_PERMISSIONS), project=settings.project, opts=opts)
        return self.power_save_role

    def class_of(self, host: str) -> str:
        return self._class_of[host]

    def email(self, host: str) -> pulumi.Output[str]:
        return self.emails[self._class_of[host]]


# -------------------------------------------------------------------------------------------- bootstrap

def secret_refs(munge: str, db_password: str | None, accounting: bool) -> dict[str, dict[str, str]]:
    return component.secret_refs("gcp-secret", munge, db_password if accounting else None)


def stack_document(spec: CloudSpec, config_url: str, munge: str, db_password: str | None,
                   templates: dict[str, tuple[str, str]]) -> dict:
    """stack.json (component.stack_document): the facts the nodes' programs need from the stack and nothing that
    depends on an instance (the instances' user data refers to the object holding it). ``templates``: elastic
    group -> (project, instance template self link)."""
    return component.stack_document(
        spec, "gcp", userdata.bootstrap_config("gcp", region=spec.region, config_url=config_url,
                                               secrets=secret_refs(munge, db_password, False)),
        {g: {"project": project, "zone": spec.zone, "instance_template": template}
         for g, (project, template) in templates.items()})


class Boot:
    """Per host: its service account and, with a render, its user data (cloud-config: the host name and the
    bootstrap program with the config object's URL and the Secret Manager names it reads)."""

    def __init__(self, *, spec: CloudSpec, identities: Identities, config: ConfigStore,
                 secrets: dict[str, StackSecret], enabled: bool):
        self.spec, self.identities, self.enabled = spec, identities, enabled
        self.accounting = set(spec.accounting)
        db = secrets["slurmdbd"].full_name if "slurmdbd" in secrets else None
        self.refs = pulumi.Output.all(config.url, secrets["munge"].full_name, db)
        self.depends_on = [config.object] if config.object is not None else []

    def email(self, host: str) -> pulumi.Output[str]:
        return self.identities.email(host)

    def user_data(self, host: str) -> pulumi.Output[str] | None:
        if not self.enabled:
            return None
        accounting = host in self.accounting
        return self.refs.apply(lambda r: userdata.user_data("gcp", host, userdata.bootstrap_config(
            "gcp", region=self.spec.region, config_url=r[0], secrets=secret_refs(r[1], r[2], accounting))))


class Cluster(pulumi.ComponentResource):
    """The whole cluster: network, identities, secrets, the config object, GPU node groups, head nodes,
    elastic groups' templates, storage; outputs ``nodes`` and ``stack``."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Cluster", name, None, opts)
        spec, settings, render_dir = args.spec, args.settings, args.render_dir
        base = dict(spec=spec, settings=settings)
        child = pulumi.ResourceOptions(parent=self)
        self.network = Network(f"{name}-network", NetworkArgs(**base), child)
        self.storage = Storage(f"{name}-storage", StorageArgs(**base, network=self.network), child)
        self.munge = MungeKey(f"{name}-munge-key",
                              StackSecretArgs(**base, value=args.secrets.munge_key, purpose="munge-key"), child)
        self.secrets: dict[str, StackSecret] = {"munge": self.munge}
        if spec.accounting:
            self.secrets["slurmdbd"] = SlurmdbdPassword(
                f"{name}-slurmdbd-password",
                StackSecretArgs(**base, value=args.secrets.slurmdbd_password, purpose="slurmdbd-password"), child)
        self.config = ConfigStore(f"{name}-config", ConfigStoreArgs(**base), child)
        self.identities = Identities(f"{name}-identities",
                                     IdentitiesArgs(**base, config=self.config, secrets=self.secrets), child)

        # elastic groups first: stack.json (in the config object) names their templates; static instances
        # are created after the object they boot from
        self.elastic = {g.name: ElasticNodeGroup(f"{name}-{g.name}", ElasticNodeGroupArgs(
                            **base, group=g, network=self.network,
                            service_account=self.identities.email(g.hostnames[0])), child)
                        for g in spec.groups if g.elastic}
        templates = {
            gname: pulumi.Output.all(settings.project or eg.template.project, eg.template.self_link)
            for gname, eg in self.elastic.items()}
        db = self.secrets["slurmdbd"].full_name if "slurmdbd" in self.secrets else None
        self.stack = pulumi.Output.all(self.config.url, self.munge.full_name, db,
                                       pulumi.Output.all(**templates) if templates else {}).apply(
            lambda a: stack_document(spec, a[0], a[1], a[2], {k: tuple(v) for k, v in a[3].items()}))
        self.config.upload(render_dir, self.stack)
        boot = Boot(spec=spec, identities=self.identities, config=self.config, secrets=self.secrets,
                    enabled=render_dir is not None)

        static = [g for g in spec.groups if not g.elastic]
        gpu_static = [g for g in static if is_gpu_group(g)]
        self.gpu_groups = [GpuNodeGroup(f"{name}-{g.name}",
                                        GpuNodeGroupArgs(**base, group=g, network=self.network, boot=boot), child)
                           for g in gpu_static]
        others = tuple(g for g in static if not is_gpu_group(g))
        self.head = (HeadNodes(f"{name}-head", HeadNodesArgs(**base, groups=others, network=self.network, boot=boot),
                               child) if others else None)

        nodes: dict[str, pulumi.Output] = {}
        for g, gg in zip(gpu_static, self.gpu_groups):
            for host, inst in gg.instances.items():
                nodes[host] = _node(inst, g)
        if self.head is not None:
            for host, (g, inst) in self.head.instances.items():
                nodes[host] = _node(inst, g)
        self.nodes = component.nodes_output(nodes)
        self.outputs = {
            "nodes": self.nodes,
            "region": spec.region,
            "zone": spec.zone,
            "storage": self.storage.mounts,
            "checkpoint_bucket": self.storage.bucket.url,
            "config_bucket": self.config.bucket.name,
            "config_url": self.config.url,
            "munge_key_secret": self.munge.secret.secret_id,
            "service_accounts": dict(self.identities.emails),
            "stack": self.stack,
        }
        if "slurmdbd" in self.secrets:
            self.outputs["slurmdbd_password_secret"] = self.secrets["slurmdbd"].secret.secret_id
        self.register_outputs(self.outputs)


def _node(inst: gcp.compute.Instance, g: GroupSpec) -> pulumi.Output:
    return component.node(inst.network_interfaces.apply(lambda nics: nics[0].network_ip if nics else None), g)


def build(args: ClusterArgs) -> Cluster:
    """Create the stack's GCP resources for ``args.spec``; returns the cluster component. With ``args.render_dir``
    (the render, ``OUT``) the config object is uploaded and every instance boots with the bootstrap user data."""
    return Cluster(resource_name(args.spec.cluster), args)
