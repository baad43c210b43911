"""AWS components of a training cluster: VPC, EFA security group, GPU node groups, head nodes, storage.

Everything is built from a :class:`~clusterctl.cloud.spec.CloudSpec` plus the stack configuration
(namespace ``clusterctl``; see docs/cloud.md):

========================  ==========================================================================
``keyName``               EC2 key pair for SSH (optional)
``adminCidr``             overrides the blueprint's ``cloud.admin_cidr`` (never ``0.0.0.0/0``)
``vpcId`` + ``subnetIds`` use an existing VPC and subnet instead of creating them
``vpcCidr``               CIDR of a created VPC (default ``10.0.0.0/16``)
``amiId``                 AMI for every instance (default: latest AWS Deep Learning Base AMI)
``capacityBlock``         the reservation is a Capacity Block for ML (default true) or an ODCR (false)
``publicHead``            head/login nodes in the public subnet with a public IP (default false)
``rootVolumeGb``          root volume size of GPU instances (default 512)
``mungeKey`` (secret)     the Slurm munge key, kept as a SecureString SSM parameter
========================  ==========================================================================
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from pathlib import Path

import pulumi
import pulumi_aws as aws

from clusterctl.cloud.hostname import aws_user_data
from clusterctl.cloud.spec import CloudSpec, GroupSpec, StorageSpec

DLAMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
"""name filter of the AMI looked up when ``amiId`` is not set (AWS-owned, x86_64)"""

FSX_UNIT_THROUGHPUTS = (125, 250, 500, 1000)
"""PERSISTENT_2 per-unit storage throughput options, MB/s per TiB"""

ANYWHERE = ("0.0.0.0/0", "::/0")


# --- pure helpers (unit-tested without Pulumi) -------------------------------------------------------------


def efa_interfaces(count: int) -> list[dict]:
    """The EFA interface layout of an instance type with ``count`` EFA devices on as many network cards.

    Network card 0 carries the primary interface (device index 0) as an EFA (EFA with ENA) interface;
    every further card 1..count-1 gets one EFA interface at device index 1. This is the layout AWS
    documents for P5 ("Maximize network bandwidth on Amazon EC2 instances with multiple network cards",
    section "EFA configuration for P5 instances": 32 network cards on p5.48xlarge, 16 on p5en.48xlarge).
    """
    if count <= 0:
        return [{"device_index": 0, "network_card_index": 0}]
    return [{"device_index": 0 if card == 0 else 1, "network_card_index": card, "interface_type": "efa"}
            for card in range(count)]


@dataclass(frozen=True)
class FsxSizing:
    capacity_gib: int
    per_unit_storage_throughput: int
    """MB/s per TiB"""
    throughput_mb_per_s: float
    required_mb_per_s: float
    requested_gib: int
    grown: bool

    @property
    def note(self) -> str:
        text = (f"{self.capacity_gib} GiB at {self.per_unit_storage_throughput} MB/s/TiB = "
                f"{self.throughput_mb_per_s:.0f} MB/s (tier needs {self.required_mb_per_s:.0f} MB/s)")
        if self.grown:
            text += (f"; capacity grown from {self.requested_gib} GiB because even 1000 MB/s/TiB "
                     f"cannot reach the tier's bandwidth at the requested size")
        return text


def fsx_capacity_increment(gib: float) -> int:
    """FSx for Lustre PERSISTENT_2 (SSD) capacity: 1,200 GiB, 2,400 GiB, then multiples of 2,400 GiB."""
    if gib <= 1200:
        return 1200
    return int(math.ceil(gib / 2400) * 2400)


def fsx_lustre_sizing(capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> FsxSizing:
    """Capacity (GiB, rounded up to the FSx increment) and the smallest per-unit throughput whose
    ``unit x capacity TiB`` meets ``max(read, write)`` (1 GB/s = 1,000 MB/s); if even 1,000 MB/s/TiB
    cannot, the capacity grows until it does."""
    requested = fsx_capacity_increment(capacity_tb * 1e12 / 2**30)
    need = max(read_gb_per_s, write_gb_per_s) * 1000.0
    for unit in FSX_UNIT_THROUGHPUTS:
        if requested / 1024 * unit >= need:
            return FsxSizing(requested, unit, requested / 1024 * unit, need, requested, False)
    unit = FSX_UNIT_THROUGHPUTS[-1]
    grown = fsx_capacity_increment(need / unit * 1024)
    return FsxSizing(grown, unit, grown / 1024 * unit, need, requested, True)


def subnet_cidrs(vpc_cidr: str) -> tuple[str, str]:
    """(private cluster subnet, public NAT subnet) of a VPC: the first quarter and the last /24-ish."""
    net = ipaddress.ip_network(vpc_cidr)
    private = next(net.subnets(new_prefix=min(net.prefixlen + 2, 28)))
    public = list(net.subnets(new_prefix=min(max(net.prefixlen + 4, 24), 28)))[-1]
    return str(private), str(public)


# --- settings from the stack configuration -----------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    key_name: str | None
    admin_cidr: str
    vpc_id: str | None
    subnet_ids: tuple[str, ...]
    vpc_cidr: str
    ami_id: str | None
    capacity_block: bool
    public_head: bool
    root_volume_gb: int

    @classmethod
    def load(cls, spec: CloudSpec) -> "Settings":
        config = pulumi.Config("clusterctl")
        admin_cidr = config.get("adminCidr") or spec.admin_cidr
        if admin_cidr in ANYWHERE:
            raise ValueError(f"admin CIDR {admin_cidr} opens SSH to the internet; set clusterctl:adminCidr "
                             f"to your office or bastion range")
        subnet_ids = tuple(config.get_object("subnetIds") or ())
        vpc_id = config.get("vpcId")
        if subnet_ids and not vpc_id:
            raise ValueError("clusterctl:subnetIds needs clusterctl:vpcId (the VPC of the subnets)")
        return cls(key_name=config.get("keyName") or None, admin_cidr=admin_cidr, vpc_id=vpc_id, subnet_ids=subnet_ids,
                   vpc_cidr=config.get("vpcCidr") or "10.0.0.0/16", ami_id=config.get("amiId"),
                   capacity_block=config.get_bool("capacityBlock") if config.get("capacityBlock") is not None
                   else True,
                   public_head=bool(config.get_bool("publicHead")),
                   root_volume_gb=config.get_int("rootVolumeGb") or 512)


def _tags(spec: CloudSpec, name: str, **extra: str) -> dict[str, str]:
    return {**spec.tags, "Name": name, **extra}


IMDSV2 = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 2}
"""instance metadata: session tokens required (IMDSv2); hop limit 2 so containers reach it"""


# --- components ----------------------------------------------------------------------------------------------


class Network(pulumi.ComponentResource):
    """VPC, a private cluster subnet in the zone (NAT egress, S3 gateway endpoint) and a public subnet for
    the NAT gateway; or an existing VPC/subnet from the stack config. The security group lets members talk
    to each other on every port (EFA needs all traffic to and from itself) and admits SSH only from the
    admin CIDR."""

    def __init__(self, name: str, spec: CloudSpec, settings: Settings, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.public_subnet_id: pulumi.Input[str] | None = None
        if settings.subnet_ids:
            self.vpc_id: pulumi.Input[str] = settings.vpc_id
            self.subnet_id: pulumi.Input[str] = settings.subnet_ids[0]
        else:
            private_cidr, public_cidr = subnet_cidrs(settings.vpc_cidr)
            vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=settings.vpc_cidr, enable_dns_hostnames=True,
                              enable_dns_support=True, tags=_tags(spec, f"{spec.cluster}-vpc"), opts=child)
            igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=_tags(spec, f"{spec.cluster}-igw"),
                                          opts=child)
            public = aws.ec2.Subnet(f"{name}-public", vpc_id=vpc.id, cidr_block=public_cidr,
                                    availability_zone=spec.zone, map_public_ip_on_launch=False,
                                    tags=_tags(spec, f"{spec.cluster}-public"), opts=child)
            private = aws.ec2.Subnet(f"{name}-private", vpc_id=vpc.id, cidr_block=private_cidr,
                                     availability_zone=spec.zone, map_public_ip_on_launch=False,
                                     tags=_tags(spec, f"{spec.cluster}-private"), opts=child)
            public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id,
                                           routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}],
                                           tags=_tags(spec, f"{spec.cluster}-public"), opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-rta", subnet_id=public.id, route_table_id=public_rt.id,
                                          opts=child)
            eip = aws.ec2.Eip(f"{name}-nat-eip", domain="vpc", tags=_tags(spec, f"{spec.cluster}-nat"), opts=child)
            nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=eip.id, subnet_id=public.id,
                                     tags=_tags(spec, f"{spec.cluster}-nat"),
                                     opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
            private_rt = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=vpc.id,
                                            routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
                                            tags=_tags(spec, f"{spec.cluster}-private"), opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-private-rta", subnet_id=private.id,
                                          route_table_id=private_rt.id, opts=child)
            # checkpoint traffic to S3 stays off the NAT gateway
            aws.ec2.VpcEndpoint(f"{name}-s3", vpc_id=vpc.id, service_name=f"com.amazonaws.{spec.region}.s3",
                                vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id],
                                tags=_tags(spec, f"{spec.cluster}-s3"), opts=child)
            self.vpc_id = vpc.id
            self.subnet_id = private.id
            self.public_subnet_id = public.id

        sg = aws.ec2.SecurityGroup(
            f"{name}-sg", vpc_id=self.vpc_id,
            description=f"clusterctl {spec.cluster}: all traffic within the cluster (EFA), SSH from admin CIDR",
            ingress=[
                {"protocol": "-1", "from_port": 0, "to_port": 0, "self": True,
                 "description": "all traffic from cluster members (EFA requirement)"},
                {"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr_blocks": [settings.admin_cidr],
                 "description": "SSH from the admin CIDR"},
            ],
            egress=[
                {"protocol": "-1", "from_port": 0, "to_port": 0, "self": True,
                 "description": "all traffic to cluster members (EFA requirement)"},
                {"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"],
                 "description": "outbound (packages, S3, container registries)"},
            ],
            tags=_tags(spec, f"{spec.cluster}-sg"), opts=child)
        self.security_group_id = sg.id
        self.register_outputs({"vpc_id": self.vpc_id, "subnet_id": self.subnet_id,
                               "public_subnet_id": self.public_subnet_id, "security_group_id": sg.id})


def _ami(settings: Settings) -> pulumi.Input[str]:
    if settings.ami_id:
        return settings.ami_id
    return aws.ec2.get_ami_output(most_recent=True, owners=["amazon"], filters=[
        {"name": "name", "values": [DLAMI_NAME]},
        {"name": "architecture", "values": ["x86_64"]},
        {"name": "state", "values": ["available"]},
    ]).id


class GpuNodeGroup(pulumi.ComponentResource):
    """One launch template (full EFA interface layout, IMDSv2, encrypted root volume, capacity reservation)
    and one instance per hostname, all in the cluster placement group, named by its cloud-init user data
    (:func:`clusterctl.cloud.hostname.aws_user_data`) and its ``Name`` tag."""

    def __init__(self, name: str, spec: CloudSpec, group: GroupSpec, settings: Settings, network: Network,
                 placement_group: aws.ec2.PlacementGroup, ami: pulumi.Input[str],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = _tags(spec, f"{spec.cluster}-{group.name}", **{"clusterctl:group": group.name})
        nics = group.accelerator_nics if group.network_fabric == "efa" else 0
        interfaces = [{**nic, "subnet_id": network.subnet_id, "security_groups": [network.security_group_id],
                       "delete_on_termination": "true"} for nic in efa_interfaces(nics)]
        reservation = None
        market = None
        if spec.reservation:
            reservation = {"capacity_reservation_target": {"capacity_reservation_id": spec.reservation}}
            if settings.capacity_block:
                market = {"market_type": "capacity-block"}
        template = aws.ec2.LaunchTemplate(
            f"{name}-lt", name_prefix=f"{spec.cluster}-{group.name}-", image_id=ami,
            instance_type=group.instance_type, key_name=settings.key_name, network_interfaces=interfaces,
            placement={"group_name": placement_group.name} if spec.placement_group else None,
            metadata_options=IMDSV2,
            block_device_mappings=[{"device_name": "/dev/sda1", "ebs": {
                "volume_size": settings.root_volume_gb, "volume_type": "gp3", "encrypted": "true",
                "delete_on_termination": "true"}}],
            capacity_reservation_specification=reservation, instance_market_options=market,
            tag_specifications=[{"resource_type": "instance", "tags": tags},
                                {"resource_type": "volume", "tags": tags},
                                {"resource_type": "network-interface", "tags": tags}],
            update_default_version=True, tags=tags, opts=child)
        self.launch_template_id = template.id
        self.instances: dict[str, aws.ec2.Instance] = {}
        for host in group.hostnames:
            self.instances[host] = aws.ec2.Instance(
                host, instance_type=group.instance_type,
                launch_template={"id": template.id, "version": template.latest_version.apply(str)},
                placement_group=placement_group.name if spec.placement_group else None,
                metadata_options=IMDSV2, user_data=aws_user_data(host),
                tags={**tags, "Name": host, "clusterctl:hostname": host}, opts=child)
        self.register_outputs({"launch_template_id": template.id,
                               "private_ips": {h: i.private_ip for h, i in self.instances.items()}})


class HeadNodes(pulumi.ComponentResource):
    """Head and login instances (CPU types) outside the placement group: IMDSv2, encrypted root volume, in
    the cluster subnet (or the public one with ``publicHead``); named like the GPU instances."""

    def __init__(self, name: str, spec: CloudSpec, groups: list[GroupSpec], settings: Settings, network: Network,
                 ami: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:HeadNodes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        public = settings.public_head and network.public_subnet_id is not None
        self.instances: dict[str, aws.ec2.Instance] = {}
        self.groups: dict[str, GroupSpec] = {}
        for group in groups:
            tags = _tags(spec, f"{spec.cluster}-{group.name}", **{"clusterctl:group": group.name})
            for host in group.hostnames:
                self.groups[host] = group
                self.instances[host] = aws.ec2.Instance(
                    host, ami=ami, instance_type=group.instance_type, key_name=settings.key_name,
                    subnet_id=network.public_subnet_id if public else network.subnet_id,
                    vpc_security_group_ids=[network.security_group_id], associate_public_ip_address=public,
                    metadata_options=IMDSV2, user_data=aws_user_data(host),
                    root_block_device={"volume_size": 200, "volume_type": "gp3", "encrypted": True,
                                       "delete_on_termination": True, "tags": tags},
                    tags={**tags, "Name": host, "clusterctl:hostname": host}, opts=child)
        heads = [h for h, g in self.groups.items() if g.role == "head"]
        self.public_ip = self.instances[heads[0]].public_ip if public and heads else None
        self.register_outputs({"private_ips": {h: i.private_ip for h, i in self.instances.items()},
                               "head_public_ip": self.public_ip})


class Storage(pulumi.ComponentResource):
    """FSx for Lustre (PERSISTENT_2, sized by :func:`fsx_lustre_sizing`) per parallel tier and a private,
    versioned, encrypted S3 bucket for checkpoints."""

    def __init__(self, name: str, spec: CloudSpec, network: Network, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Storage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.file_systems: dict[str, dict] = {}
        for tier in (t for t in spec.storage if t.tier == "parallel"):
            self.file_systems[tier.name] = self._lustre(name, spec, tier, network, child)

        bucket = aws.s3.Bucket(f"{name}-checkpoints", bucket_prefix=f"{spec.cluster}-checkpoints-"[:37],
                               force_destroy=False, tags=_tags(spec, f"{spec.cluster}-checkpoints"), opts=child)
        aws.s3.BucketPublicAccessBlock(f"{name}-checkpoints-pab", bucket=bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=child)
        aws.s3.BucketOwnershipControls(f"{name}-checkpoints-owner", bucket=bucket.id,
                                       rule={"object_ownership": "BucketOwnerEnforced"}, opts=child)
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-checkpoints-sse", bucket=bucket.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms"},
                    "bucket_key_enabled": True}], opts=child)
        aws.s3.BucketVersioning(f"{name}-checkpoints-versioning", bucket=bucket.id,
                                versioning_configuration={"status": "Enabled"}, opts=child)
        self.bucket_name = bucket.bucket
        self.register_outputs({"bucket_name": bucket.bucket,
                               "file_systems": {k: v["outputs"] for k, v in self.file_systems.items()}})

    def _lustre(self, name: str, spec: CloudSpec, tier: StorageSpec, network: Network,
                child: pulumi.ResourceOptions) -> dict:
        sizing = fsx_lustre_sizing(tier.capacity_tb, tier.read_gb_per_s, tier.write_gb_per_s)
        if sizing.grown:
            pulumi.log.warn(f"FSx {tier.name}: {sizing.note}", self)
        fs = aws.fsx.LustreFileSystem(
            f"{name}-{tier.name}", deployment_type="PERSISTENT_2", storage_type="SSD",
            storage_capacity=sizing.capacity_gib, per_unit_storage_throughput=sizing.per_unit_storage_throughput,
            file_system_type_version="2.15", subnet_ids=network.subnet_id,
            security_group_ids=[network.security_group_id], copy_tags_to_backups=True,
            tags=_tags(spec, f"{spec.cluster}-{tier.name}", **{"clusterctl:mount": tier.mount}), opts=child)
        return {"fs": fs, "sizing": sizing, "outputs": {
            "dns_name": fs.dns_name, "mount_name": fs.mount_name, "mount": tier.mount,
            "capacity_gib": sizing.capacity_gib, "per_unit_storage_throughput": sizing.per_unit_storage_throughput,
            "throughput_mb_per_s": round(sizing.throughput_mb_per_s), "sizing": sizing.note,
            "capacity_grown": sizing.grown}}


class Cluster(pulumi.ComponentResource):
    """The whole cluster; its outputs are the stack outputs (docs/cloud.md)."""

    def __init__(self, name: str, spec: CloudSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        settings = Settings.load(spec)
        config = pulumi.Config("clusterctl")

        network = Network(f"{name}-network", spec, settings, opts=child)
        placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=_tags(spec, f"{name}-pg"),
                                           opts=child)
        ami = _ami(settings)
        gpu_groups = [g for g in spec.groups if g.gpus > 0 or g.accelerator_nics > 0]
        cpu_groups = [g for g in spec.groups if g not in gpu_groups]
        node_groups = [GpuNodeGroup(f"{name}-{g.name}", spec, g, settings, network, placement, ami, opts=child)
                       for g in gpu_groups]
        heads = HeadNodes(f"{name}-head", spec, cpu_groups, settings, network, ami, opts=child)
        storage = Storage(f"{name}-storage", spec, network, opts=child)
        munge = aws.ssm.Parameter(f"{name}-munge-key", name=f"/clusterctl/{spec.cluster}/munge-key",
                                  type="SecureString", value=config.require_secret("mungeKey"),
                                  description="Slurm munge key (base64)", tags=_tags(spec, f"{name}-munge-key"),
                                  opts=child)

        nodes: dict[str, pulumi.Output] = {}
        for group, ng in zip(gpu_groups, node_groups):
            for host, inst in ng.instances.items():
                nodes[host] = _node(inst, group)
        for host, inst in heads.instances.items():
            nodes[host] = _node(inst, heads.groups[host])
        first_fs = next(iter(storage.file_systems.values()), None)
        self.outputs = {
            "nodes": dict(sorted(nodes.items())),
            "head_public_ip": heads.public_ip,
            "fsx_dns_name": first_fs["outputs"]["dns_name"] if first_fs else None,
            "fsx_mount_name": first_fs["outputs"]["mount_name"] if first_fs else None,
            "file_systems": {k: v["outputs"] for k, v in storage.file_systems.items()},
            "bucket_name": storage.bucket_name,
            "placement_group": placement.name,
            "vpc_id": network.vpc_id,
            "subnet_id": network.subnet_id,
            "security_group_id": network.security_group_id,
            "munge_key_parameter": munge.name,
        }
        self.register_outputs(self.outputs)


def _node(instance: aws.ec2.Instance, group: GroupSpec) -> pulumi.Output:
    return pulumi.Output.all(instance.private_ip).apply(lambda ip: {
        "private_ip": ip[0], "group": group.name, "role": group.role, "instance_type": group.instance_type})


def build(spec: CloudSpec, render_dir: Path | None = None) -> Cluster:
    """Create the stack's AWS resources for ``spec``; returns the cluster component."""
    return Cluster(spec.cluster, spec)
