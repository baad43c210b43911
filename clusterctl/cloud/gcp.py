"""Google Cloud components for a GPU training cluster, built from a :class:`CloudSpec`.

``build(spec)`` returns a ``clusterctl:gcp:Cluster`` component whose registered outputs include ``nodes``
({hostname: {private_ip, group, role, instance_type}}). Children:

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
- ``clusterctl:gcp:MungeKey``: the ``mungeKey`` stack secret in Secret Manager (replicated only in the
  cluster's region, CMEK with ``kmsKey``), readable by ``serviceAccount`` when one is set; the stack output
  ``munge_key_secret`` is the secret's name, never its value (as AWS's SSM SecureString parameter).

Stack configuration (``pulumi config set clusterctl:<key>``): ``adminCidr`` (overrides the blueprint's),
``sshPublicKey`` (added to instance metadata; without it OS Login is used), ``sshUser``, ``gpuImage``,
``headImage``, ``kmsKey`` (CMEK for boot disks, Lustre and the bucket), ``serviceAccount``,
``primaryCidr``, ``serviceCidr``, ``gpuCidrBase``; secret ``mungeKey`` (required). ``gcp:project`` names the
project in the RDMA network-profile URL.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass

from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from clusterctl.cloud.spec import CloudSpec, GroupSpec, StorageSpec

PKG = "clusterctl:gcp"
GIB_PER_TB = 1e12 / 2**30
DEFAULT_GPU_IMAGE = "debian-cloud/debian-12"
DEFAULT_HEAD_IMAGE = "debian-cloud/debian-12"
RDMA_FABRICS = ("rdma-roce",)
SEPARATE_VPC_FABRICS = ("tcpx", "tcpxo")
GPU_NIC_MTU = {"tcpx": 8244, "tcpxo": 8244, "rdma-roce": 8896}

# Managed Lustre performance tiers: (MB/s per TiB, minimum GiB, step GiB for the lower capacity range)
# cloud.google.com/managed-lustre/docs/performance-tiers (1000: 9,000 GiB min and step up to 1,530,000;
# 500: 18,000; 250: 36,000; 125: 72,000).
LUSTRE_TIERS = ((125, 72_000, 72_000), (250, 36_000, 36_000), (500, 18_000, 18_000), (1000, 9_000, 9_000))
# Filestore zonal: 1 TiB to 9.75 TiB in 256 GiB steps, 10 TiB to 100 TiB in 2.5 TiB steps.
FILESTORE_TIER = "ZONAL"


# ---------------------------------------------------------------------------------------------- helpers

def label_key(key: str) -> str:
    """A GCP label key: lower case letters, digits, ``_`` and ``-``, starting with a letter, <= 63 chars
    (``clusterctl:cluster`` -> ``clusterctl_cluster``)."""
    k = re.sub(r"[^a-z0-9_-]", "_", key.lower())
    if not k or not k[0].isalpha():
        k = "k" + k
    return k[:63]


def label_value(value: str) -> str:
    """A GCP label value: lower case letters, digits, ``_`` and ``-``, <= 63 chars (may be empty)."""
    return re.sub(r"[^a-z0-9_-]", "_", str(value).lower())[:63]


def labels(spec: CloudSpec, **extra: str) -> dict[str, str]:
    out = {label_key(k): label_value(v) for k, v in sorted(spec.tags.items())}
    out[label_key("cluster")] = label_value(spec.cluster)
    out.update({label_key(k): label_value(v) for k, v in sorted(extra.items())})
    return out


def resource_name(*parts: str) -> str:
    """A Compute Engine name: ``[a-z]([-a-z0-9]*[a-z0-9])?``, <= 63 chars."""
    n = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    if not n or not n[0].isalpha():
        n = "c-" + n
    return n[:63].rstrip("-")


def step_up(value: float, minimum: int, step: int) -> int:
    return max(minimum, math.ceil(value / step) * step)


@dataclass(frozen=True)
class LustreSize:
    per_unit_mbps: int
    capacity_gib: int

    @property
    def throughput_gb_per_s(self) -> float:
        return self.capacity_gib / 1024 * self.per_unit_mbps / 1000


def lustre_size(capacity_tb: float, gb_per_s: float) -> LustreSize:
    """The Managed Lustre tier and capacity for a tier that needs ``capacity_tb`` and ``gb_per_s``.

    The lowest per-TiB tier whose bandwidth-driven capacity is within 10% of the data-driven capacity
    (so throughput comes with the space the data needs anyway); when no tier gets there the 1000 MB/s/TiB
    tier sized for the bandwidth. Capacities round up to the tier's step."""
    data_gib = capacity_tb * GIB_PER_TB
    mbps = gb_per_s * 1000
    for per_tib, minimum, step in LUSTRE_TIERS:
        bw_gib = mbps / per_tib * 1024
        if bw_gib <= data_gib * 1.1:
            return LustreSize(per_tib, step_up(max(data_gib, bw_gib), minimum, step))
    per_tib, minimum, step = LUSTRE_TIERS[-1]
    return LustreSize(per_tib, step_up(max(data_gib, mbps / per_tib * 1024), minimum, step))


def filestore_capacity_gib(capacity_tb: float) -> int:
    gib = capacity_tb * GIB_PER_TB
    if gib <= 9.75 * 1024:
        return step_up(gib, 1024, 256)
    return step_up(gib, 10 * 1024, 2560)


def is_gpu(group: GroupSpec) -> bool:
    return group.gpus > 0 and group.accelerator_nics > 0


@dataclass(frozen=True)
class Settings:
    admin_cidr: str
    ssh_public_key: str | None
    ssh_user: str
    gpu_image: str
    head_image: str
    kms_key: str | None
    service_account: str | None
    primary_cidr: str
    service_cidr: str
    gpu_cidr_base: str
    project: str | None

    @classmethod
    def load(cls, spec: CloudSpec) -> Settings:
        c = pulumi.Config("clusterctl")
        return cls(admin_cidr=c.get("adminCidr") or spec.admin_cidr, ssh_public_key=c.get("sshPublicKey"),
                   ssh_user=c.get("sshUser") or "clusterctl", gpu_image=c.get("gpuImage") or DEFAULT_GPU_IMAGE,
                   head_image=c.get("headImage") or DEFAULT_HEAD_IMAGE, kms_key=c.get("kmsKey"),
                   service_account=c.get("serviceAccount"), primary_cidr=c.get("primaryCidr") or "10.0.0.0/20",
                   service_cidr=c.get("serviceCidr") or "10.0.32.0/20",
                   gpu_cidr_base=c.get("gpuCidrBase") or "192.168.0.0/16",
                   project=pulumi.Config("gcp").get("project"))


# ------------------------------------------------------------------------------------------- components

class Network(pulumi.ComponentResource):
    """Primary VPC, the GPU networks of every GPU fabric in the spec, private services access, firewall."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
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
            if is_gpu(g):
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


def _metadata(settings: Settings) -> dict[str, str]:
    if settings.ssh_public_key:
        return {"enable-oslogin": "FALSE", "ssh-keys": f"{settings.ssh_user}:{settings.ssh_public_key}",
                "block-project-ssh-keys": "TRUE"}
    return {"enable-oslogin": "TRUE"}


def _instance(name: str, spec: CloudSpec, settings: Settings, group: GroupSpec, host: str, nics: list[dict],
              tag: str, image: str, disk_type: str, opts: pulumi.ResourceOptions, **extra) -> gcp.compute.Instance:
    disk: dict = {"initialize_params": {"image": image, "size": 200, "type": disk_type,
                                        "labels": labels(spec, group=group.name)},
                  "auto_delete": True}
    if settings.kms_key:
        disk["kms_key_self_link"] = settings.kms_key
    sa = {"scopes": ["cloud-platform"]}
    if settings.service_account:
        sa["email"] = settings.service_account
    return gcp.compute.Instance(
        name, name=host, machine_type=group.instance_type, zone=spec.zone, boot_disk=disk,
        network_interfaces=nics, tags=[tag], labels=labels(spec, group=group.name, role=group.role),
        metadata=_metadata(settings), service_account=sa,
        shielded_instance_config={"enable_secure_boot": True, "enable_vtpm": True,
                                  "enable_integrity_monitoring": True},
        allow_stopping_for_update=True, opts=opts, **extra)


class GpuNodeGroup(pulumi.ComponentResource):
    """A compact placement policy and one GPU instance per hostname with all of its GPU NICs."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, group: GroupSpec, network: Network,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.policy = None
        if spec.placement_group or group.placement == "compact-placement-policy":
            self.policy = gcp.compute.ResourcePolicy(
                f"{name}-placement", name=resource_name(spec.cluster, group.name, "compact"), region=spec.region,
                group_placement_policy={"collocation": "COLLOCATED"}, opts=child)
        extra: dict = {"scheduling": {"on_host_maintenance": "TERMINATE", "automatic_restart": True}}
        if self.policy is not None:
            extra["resource_policies"] = self.policy.self_link  # one policy (a str in pulumi-gcp 10)
        if spec.reservation:
            extra["reservation_affinity"] = {
                "type": "SPECIFIC_RESERVATION",
                "specific_reservation": {"key": "compute.googleapis.com/reservation-name",
                                         "values": [spec.reservation]}}
        self.instances = {
            host: _instance(f"{name}-{host}", spec, settings, group, host, network.gpu_interfaces(group),
                            network.node_tag, settings.gpu_image, "hyperdisk-balanced", child, **extra)
            for host in group.hostnames}
        self.register_outputs({"hosts": list(group.hostnames),
                               "placement_policy": self.policy.self_link if self.policy else None})


class HeadNodes(pulumi.ComponentResource):
    """The CPU VMs (controller, login, service): primary VPC only; login nodes get an external IP."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, groups: list[GroupSpec], network: Network,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:HeadNodes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.instances: dict[str, tuple[GroupSpec, gcp.compute.Instance]] = {}
        for group in groups:
            for host in group.hostnames:
                nic: dict = {"subnetwork": network.primary_subnet.id, "nic_type": "GVNIC"}
                if group.role == "login":
                    nic["access_configs"] = [{"network_tier": "PREMIUM"}]
                self.instances[host] = (group, _instance(
                    f"{name}-{host}", spec, settings, group, host, [nic], network.node_tag, settings.head_image,
                    "pd-balanced", child, scheduling={"on_host_maintenance": "MIGRATE", "automatic_restart": True}))
        self.register_outputs({"hosts": sorted(self.instances)})


class Storage(pulumi.ComponentResource):
    """Filestore (nfs), Managed Lustre (parallel) and the GCS checkpoint bucket."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, network: Network,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Storage", name, None, opts)
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
        size = lustre_size(t.capacity_tb, max(t.read_gb_per_s, t.write_gb_per_s))
        fs = re.sub(r"[^a-z0-9]", "", t.name.lower())[:8] or "lustre"
        inst = gcp.lustre.Instance(
            f"{name}-{t.name}", instance_id=resource_name(spec.cluster, t.name), location=location,
            network=network.primary.id, filesystem=fs, capacity_gib=str(size.capacity_gib),
            per_unit_storage_throughput=str(size.per_unit_mbps), kms_key=settings.kms_key,
            labels=labels(spec, storage=t.name), opts=opts)
        return {"kind": "managed-lustre", "mount": t.mount, "filesystem": fs, "capacity_gib": size.capacity_gib,
                "per_unit_storage_throughput": size.per_unit_mbps,
                "throughput_gb_per_s": round(size.throughput_gb_per_s, 1), "instance": inst.instance_id}

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


class MungeKey(pulumi.ComponentResource):
    """The Slurm munge key (``clusterctl:mungeKey``, a stack secret) as a Secret Manager secret: one version
    holding the value (a secret Output end to end), replicated only in the cluster's region (CMEK with
    ``kmsKey``), and read access for the nodes' service account when ``serviceAccount`` is set."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, value: pulumi.Output,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:MungeKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        replica: dict = {"location": spec.region}
        if settings.kms_key:
            replica["customer_managed_encryption"] = {"kms_key_name": settings.kms_key}
        self.secret = gcp.secretmanager.Secret(
            f"{name}-secret", secret_id=resource_name(spec.cluster, "munge-key"),
            replication={"user_managed": {"replicas": [replica]}}, labels=labels(spec, purpose="munge-key"),
            opts=child)
        self.version = gcp.secretmanager.SecretVersion(
            f"{name}-version", secret=self.secret.id, secret_data=value,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["secret_data"]))
        self.reader = None
        if settings.service_account:
            self.reader = gcp.secretmanager.SecretIamMember(
                f"{name}-reader", secret_id=self.secret.id, role="roles/secretmanager.secretAccessor",
                member=f"serviceAccount:{settings.service_account}", opts=child)
        self.register_outputs({"secret": self.secret.secret_id})


class Cluster(pulumi.ComponentResource):
    """The whole cluster: network, GPU node groups, head nodes, storage, munge key; outputs ``nodes``."""

    def __init__(self, name: str, spec: CloudSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Cluster", name, None, opts)
        settings = Settings.load(spec)
        child = pulumi.ResourceOptions(parent=self)
        self.network = Network(f"{name}-network", spec, settings, child)
        self.gpu_groups = [GpuNodeGroup(f"{name}-{g.name}", spec, settings, g, self.network, child)
                           for g in spec.groups if is_gpu(g)]
        others = [g for g in spec.groups if not is_gpu(g)]
        self.head = HeadNodes(f"{name}-head", spec, settings, others, self.network, child) if others else None
        self.storage = Storage(f"{name}-storage", spec, settings, self.network, child)
        self.munge = MungeKey(f"{name}-munge-key", spec, settings,
                              pulumi.Config("clusterctl").require_secret("mungeKey"), child)

        nodes: dict[str, pulumi.Output] = {}
        groups = [(g, gg.instances) for g, gg in zip([g for g in spec.groups if is_gpu(g)], self.gpu_groups)]
        for g, instances in groups:
            for host, inst in instances.items():
                nodes[host] = _node(inst, g)
        if self.head is not None:
            for host, (g, inst) in self.head.instances.items():
                nodes[host] = _node(inst, g)
        self.nodes = pulumi.Output.all(**dict(sorted(nodes.items())))
        self.outputs = {
            "nodes": self.nodes,
            "region": spec.region,
            "zone": spec.zone,
            "storage": self.storage.mounts,
            "checkpoint_bucket": self.storage.bucket.url,
            "munge_key_secret": self.munge.secret.secret_id,
        }
        self.register_outputs(self.outputs)


def _node(inst: gcp.compute.Instance, g: GroupSpec) -> pulumi.Output:
    return inst.network_interfaces.apply(lambda nics: {
        "private_ip": nics[0].network_ip if nics else None, "group": g.name, "role": g.role,
        "instance_type": g.instance_type})


def build(spec: CloudSpec, render_dir: Path | None = None) -> Cluster:
    """Create the stack's GCP resources for ``spec``; returns the cluster component."""
    return Cluster(resource_name(spec.cluster), spec)
