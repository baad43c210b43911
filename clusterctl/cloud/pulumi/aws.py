"""AWS components of a training cluster: VPC, EFA security group, GPU node groups, head nodes, storage.

Everything is built from a :class:`~clusterctl.cloud.stack.spec.CloudSpec` plus the stack configuration
(namespace ``clusterctl``; see docs/cloud.md), which :mod:`clusterctl.cloud.pulumi.program` reads once into
:class:`Settings` and the stack's secrets (:class:`~clusterctl.cloud.pulumi.component.StackSecrets`):

========================  ==========================================================================
``keyName``               EC2 key pair for SSH (optional)
``adminCidr``             overrides the blueprint's ``cloud.admin_cidr`` (refused as CLOUD005 refuses it)
``vpcId`` + ``subnetIds`` use an existing VPC and subnet instead of creating them
``vpcCidr``               CIDR of a created VPC (default ``10.0.0.0/16``)
``amiId``                 AMI for every instance (default: the newest AWS Deep Learning Base AMI, looked up on
                          the first ``pulumi up``; pin it, docs/cloud.md "AMI pinning")
``capacityBlock``         the reservation is a Capacity Block for ML (default true) or an ODCR (false)
``publicHead``            head/login nodes in the public subnet with a public IP (default false)
``rootVolumeGb``          root volume size of GPU instances (default 512)
``mungeKey`` (secret)     the Slurm munge key, kept as a SecureString SSM parameter
``slurmdbdPassword``      (secret) the slurmdbd database password, a second SecureString parameter; required
                          when the blueprint has an accounting host
========================  ==========================================================================

With the render directory (``build(ClusterArgs(..., render_dir=OUT))``) the program also uploads the
configuration object (:mod:`clusterctl.cloud.stack.bundle`) to a private config bucket, gives every static instance
bootstrap user data (:mod:`clusterctl.cloud.stack.userdata`) and an instance profile per identity class
(clusterctl.cloud.stack.identity.identity_classes, :func:`policy_document`), and names the instances in a
Route 53 private hosted zone
(docs/cloud.md, "AWS").
"""

from __future__ import annotations

import base64
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_aws as aws

from clusterctl.cloud.pulumi import component
from clusterctl.cloud.stack import bundle, userdata
from clusterctl.cloud.stack.hostname import aws_user_data
from clusterctl.cloud.stack.image import DLAMI_FILTERS
from clusterctl.cloud.pulumi.component import DBD_VAR, MUNGE_VAR
from clusterctl.cloud.stack.identity import IdentityClass, class_of, identity_classes
from clusterctl.cloud.stack.sizing import FSX_LUSTRE, StorageSize, sized
from clusterctl.cloud.stack.spec import CloudSpec, GroupSpec, StorageSpec, is_gpu_group

IMAGE_IGNORED = {"instance": ["ami"], "launch_template": ["imageId"]}
"""the image property each resource ignores after its creation (Pulumi ``ResourceOptions.ignore_changes``, wire
names): a newer DLAMI found by the lookup, or a changed ``amiId``, never updates a launch template (whose new
version would replace every instance started from it) nor replaces a head instance and its root disk. A new
image is an explicit operation: ``pulumi up --replace URN``, node by node (docs/cloud.md, "AMI pinning")."""

# --- pure helpers (unit-tested without Pulumi) -------------------------------------------------------------


EFA_ONLY_TYPES = frozenset({"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"})
"""multi-card EFA instance types laid out with ``efa-only`` interfaces: one EFA per network card, every card
EFA-capable (EC2 "Specifications for accelerated computing instances", network specifications: 32 network
cards on p5/p5e, 16 on p5en, 8 on p6-b200; Nitro v4, v4, v5, v6)"""


def efa_interfaces(count: int, efa_only: bool = False) -> list[dict]:
    """The network interfaces of an instance type with ``count`` EFA devices, one per network card.

    ``efa_only`` (EFA_ONLY_TYPES): AWS's current guidance, EC2 User Guide "Maximize network bandwidth on
    Amazon EC2 instances with multiple network cards" (efa-acc-inst-types): "For the primary network interface
    (network card index 0, device index 0), create an ENA interface. You can't use an EFA-only network
    interface as the primary network interface." / "If the network card index 0 supports EFA, create an
    EFA-only network interface for network card index 0, device index 1." / "For each additional network
    interface, use the next unused network card index, device index 0, for EFA-only network interface": one
    ENA interface and ``count`` EFA-only interfaces (the page's run-instances example: "32 EFA devices and
    one ENA device"). EFA-only interfaces take no IP address, so the instance uses one address of the subnet.

    Otherwise (older multi-card types such as p4d) the previous layout: card 0 / device 0 an EFA with ENA,
    cards 1..count-1 an EFA at device index 1.
    """
    if count <= 0:
        return [{"device_index": 0, "network_card_index": 0}]
    if efa_only:
        return ([{"device_index": 0, "network_card_index": 0},
                 {"device_index": 1, "network_card_index": 0, "interface_type": "efa-only"}]
                + [{"device_index": 0, "network_card_index": card, "interface_type": "efa-only"}
                   for card in range(1, count)])
    return [{"device_index": 0 if card == 0 else 1, "network_card_index": card, "interface_type": "efa"}
            for card in range(count)]


def fsx_efa(spec: CloudSpec) -> bool:
    """Whether the cluster's FSx for Lustre file systems are created EFA-enabled: FSx supports EFA only on
    PERSISTENT_2 with a metadata configuration and an EFA-enabled security group (FSx API
    CreateFileSystemLustreConfiguration ``EfaEnabled``; pulumi-aws ``efa_enabled``: "only supported when
    deploymentType is set to PERSISTENT_2, metadataConfiguration is used, and an EFA-enabled security group is
    attached"), which this program always gives; and the GPU nodes must reach it over EFA, so at least one GPU
    group is an EFA type laid out with EFA-only interfaces (EFA_ONLY_TYPES)."""
    return any(g.network_fabric == "efa" and g.instance_type in EFA_ONLY_TYPES for g in spec.groups)


def fsx_lustre_sizing(capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> StorageSize:
    """The FSx for Lustre size of a parallel tier (clusterctl.cloud.stack.sizing: the one policy, FSx's table)."""
    return sized(FSX_LUSTRE, capacity_tb, read_gb_per_s, write_gb_per_s)


def has_launch_template(group: GroupSpec) -> bool:
    """Whether a group is built as a :class:`GpuNodeGroup` (a launch template, and its instances unless elastic):
    the GPU groups (clusterctl.cloud.stack.spec.is_gpu_group), the elastic groups (Slurm's resume program starts
    their instances from the template) and the groups with EFA devices (the interface layout is in the template).
    Every other group's instances are :class:`HeadNodes`."""
    return is_gpu_group(group) or group.elastic or group.accelerator_nics > 0


def subnet_cidrs(vpc_cidr: str) -> tuple[str, str]:
    """(private cluster subnet, public NAT subnet) of a VPC: the first quarter and the last /24-ish."""
    net = ipaddress.ip_network(vpc_cidr)
    private = next(net.subnets(new_prefix=min(net.prefixlen + 2, 28)))
    public = list(net.subnets(new_prefix=min(max(net.prefixlen + 4, 24), 28)))[-1]
    return str(private), str(public)


def parameter_names(cluster: str) -> dict[str, str]:
    """Ansible variable -> SSM parameter name of each secret the nodes read."""
    return {MUNGE_VAR: f"/clusterctl/{cluster}/munge-key", DBD_VAR: f"/clusterctl/{cluster}/slurmdbd-password"}


def class_secrets(accounting: bool, cluster: str) -> dict[str, str]:
    """Ansible variable -> SSM parameter name of the secrets the hosts of an identity class read (the database
    password: an ``accounting`` class only)."""
    names = parameter_names(cluster)
    return {MUNGE_VAR: names[MUNGE_VAR], **({DBD_VAR: names[DBD_VAR]} if accounting else {})}


def policy_document(needs: frozenset[str], *, object_arn: str, parameter_arns: list[str],
                    launch: dict | None = None) -> dict:
    """The IAM policy of a role class granting exactly ``needs`` (identity.CAPABILITIES), nothing wider.

    ``launch`` (manage-instances, pass-identity, write-dns; a controller of a cluster with elastic groups):
    ``cluster``, ``region``, ``account``, ``launch_template_arns``, ``resource_arns`` (the subnet, security
    group, placement group, AMI, capacity reservation, key pair the launch templates name),
    ``compute_role_arns`` (the roles of the elastic groups' instance profiles),
    ``zone_id``. RunInstances is allowed only from the cluster's launch templates (``ec2:LaunchTemplate``)
    with the instance tagged ``clusterctl:cluster`` in the request (``aws:RequestTag``); CreateTags only as
    part of RunInstances (``ec2:CreateAction``); TerminateInstances only on instances tagged with the cluster
    (``ec2:ResourceTag``); PassRole only of the compute role, only to EC2; Route 53 changes only in the
    cluster's zone. DescribeInstances has no resource-level permissions (Service Authorization Reference), so
    it is ``*``. The SecureString parameters use the AWS managed key ``aws/ssm``, whose key policy lets the
    account's principals decrypt through SSM (``kms:ViaService``), so no ``kms:Decrypt`` statement is needed."""
    statements: list[dict] = []
    if "read-config" in needs:
        statements.append({"Sid": "ReadConfig", "Effect": "Allow", "Action": "s3:GetObject", "Resource": object_arn})
    if "read-secrets" in needs:
        statements.append({"Sid": "ReadSecrets", "Effect": "Allow", "Action": "ssm:GetParameter",
                           "Resource": sorted(parameter_arns)})
    if "manage-instances" in needs:
        if launch is None:
            raise ValueError("manage-instances needs the launch templates")
        ec2 = f"arn:aws:ec2:{launch['region']}:{launch['account']}"
        created = [f"{ec2}:instance/*", f"{ec2}:volume/*", f"{ec2}:network-interface/*"]
        from_template = {"ArnEquals": {"ec2:LaunchTemplate": sorted(launch["launch_template_arns"])}}
        tagged = {"StringEquals": {"aws:RequestTag/clusterctl:cluster": launch["cluster"]}}
        statements += [
            {"Sid": "RunTaggedInstancesFromTheLaunchTemplates", "Effect": "Allow", "Action": "ec2:RunInstances",
             "Resource": f"{ec2}:instance/*", "Condition": {**from_template, **tagged}},
            {"Sid": "RunTheirVolumesAndInterfaces", "Effect": "Allow", "Action": "ec2:RunInstances",
             "Resource": created[1:], "Condition": from_template},
            {"Sid": "RunWithTheClusterResources", "Effect": "Allow", "Action": "ec2:RunInstances",
             "Resource": sorted(launch["launch_template_arns"]) + sorted(launch["resource_arns"])},
            {"Sid": "TagOnLaunch", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": created,
             "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances",
                                            "aws:RequestTag/clusterctl:cluster": launch["cluster"]}}},
            {"Sid": "TerminateClusterInstances", "Effect": "Allow", "Action": "ec2:TerminateInstances",
             "Resource": f"{ec2}:instance/*",
             "Condition": {"StringEquals": {"ec2:ResourceTag/clusterctl:cluster": launch["cluster"]}}},
            {"Sid": "DescribeInstances", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
        ]
    if "pass-identity" in needs:
        statements.append({"Sid": "PassComputeRole", "Effect": "Allow", "Action": "iam:PassRole",
                           "Resource": launch["compute_role_arns"],
                           "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}})
    if "write-dns" in needs:
        statements.append({"Sid": "WriteDns", "Effect": "Allow", "Action": "route53:ChangeResourceRecordSets",
                           "Resource": f"arn:aws:route53:::hostedzone/{launch['zone_id']}"})
    return {"Version": "2012-10-17", "Statement": statements}


ASSUME_EC2 = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


# --- settings from the stack configuration -----------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The stack configuration of an AWS cluster (the table above), read once by
    :mod:`clusterctl.cloud.pulumi.program`."""
    admin_cidr: str
    key_name: str | None = None
    vpc_id: str | None = None
    subnet_ids: tuple[str, ...] = ()
    vpc_cidr: str = "10.0.0.0/16"
    ami_id: str | None = None
    capacity_block: bool = True
    public_head: bool = False
    root_volume_gb: int = 512

    def __post_init__(self) -> None:
        component.refuse_wide_admin_cidr(self.admin_cidr)
        component.refuse_world_network("vpcCidr", self.vpc_cidr)
        if self.subnet_ids and not self.vpc_id:
            raise ValueError("clusterctl:subnetIds needs clusterctl:vpcId (the VPC of the subnets)")


Args = component.provider_args(Settings)
"""the base of every ``XxxArgs`` below: the shared arguments with ``settings`` this provider's :class:`Settings`"""


class NetworkArgs(Args, component.NetworkArgs):
    """the VPC's, its subnets' and security group's (created, or the stack's ``vpcId`` and ``subnetIds``)"""


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs(Args, component.NodeGroupArgs):
    network: Network
    boot: Boot
    placement_group: aws.ec2.PlacementGroup
    image: pulumi.Input[str]
    """the AMI"""


@dataclass(frozen=True, kw_only=True)
class HeadNodesArgs(Args, component.HeadNodesArgs):
    network: Network
    boot: Boot
    image: pulumi.Input[str]
    """the AMI"""


@dataclass(frozen=True, kw_only=True)
class IdentityArgs(Args, component.IdentityArgs):
    classes: dict[str, IdentityClass]
    """the identity classes (clusterctl.cloud.stack.identity.identity_classes)"""


@dataclass(frozen=True, kw_only=True)
class NamesArgs(Args):
    network: Network
    instances: dict[str, aws.ec2.Instance]
    """the static instances, by host name"""


class ConfigStoreArgs(Args, component.ConfigStoreArgs):
    """the configuration object store's: the spec and the settings only"""


@dataclass(frozen=True, kw_only=True)
class StorageArgs(Args, component.StorageArgs):
    network: Network


@dataclass(frozen=True, kw_only=True)
class ClusterArgs(Args, component.ClusterArgs):
    """the whole cluster's: ``secrets`` and ``render_dir`` (component.ClusterArgs)"""


def _tags(spec: CloudSpec, name: str, **extra: str) -> dict[str, str]:
    return {**spec.tags, "Name": name, **extra}


IMDSV2 = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 2,
          "instance_metadata_tags": "disabled"}
"""instance metadata: session tokens required (IMDSv2); hop limit 2 so containers reach it; the instance's tags
stay out of the metadata service (the node learns its name and settings from its user data, not its tags)"""


# --- components ----------------------------------------------------------------------------------------------


class Network(pulumi.ComponentResource):
    """VPC, a private cluster subnet in the zone (NAT egress, S3 gateway endpoint) and a public subnet for
    the NAT gateway; or an existing VPC/subnet from the stack config. The security group lets members talk
    to each other on every port (EFA needs all traffic to and from itself) and admits SSH only from the
    admin CIDR."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings = args.spec, args.settings
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


def _image_kept(opts: pulumi.ResourceOptions, kind: str) -> pulumi.ResourceOptions:
    """``opts`` with the image of a ``kind`` resource ignored after its creation (:data:`IMAGE_IGNORED`)."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=IMAGE_IGNORED[kind]))


def _ami(settings: Settings) -> pulumi.Input[str]:
    """``amiId``, else the newest DLAMI, with a warning saying how to pin the one the stack keeps."""
    if settings.ami_id:
        return settings.ami_id
    pulumi.log.warn("clusterctl:amiId is not set: the newest DLAMI is looked up; the instances keep the image "
                    "they were created with (ignore_changes), pin it with "
                    "pulumi config set clusterctl:amiId \"$(pulumi stack output ami_id)\" (docs/cloud.md, "
                    "\"AMI pinning\")")
    return aws.ec2.get_ami_output(most_recent=True, owners=["amazon"], filters=[
        {"name": name, "values": [value]} for name, value in DLAMI_FILTERS]).id


class Boot:
    """What every instance of the cluster boots with: its instance profile (per role class) and, with a render
    directory, its bootstrap user data. Without one (``bucket_name`` None) the user data only names the host."""

    def __init__(self, *, spec: CloudSpec, identity: Identity, bucket_name: pulumi.Output[str] | None):
        self.spec, self.identity, self.bucket_name = spec, identity, bucket_name
        self.host_class = class_of(spec)
        self.classes = identity_classes(spec)

    def cls(self, group: GroupSpec, host: str | None = None) -> str:
        """The identity class of ``host``, or of the group's launch template (the group's own class)."""
        return self.host_class[host] if host else group.role

    def config_url(self, bucket: str) -> str:
        return f"s3://{bucket}/{bundle.OBJECT_KEY}"

    def bootstrap(self, bucket: str, cls: str) -> dict:
        names = class_secrets(cls in self.classes and self.classes[cls].accounting, self.spec.cluster)
        return userdata.bootstrap_config("aws", region=self.spec.region, config_url=self.config_url(bucket),
                                         secrets=component.secret_refs("aws-ssm", names[MUNGE_VAR],
                                                                       names.get(DBD_VAR)))

    def user_data(self, group: GroupSpec, host: str) -> pulumi.Input[str]:
        if self.bucket_name is None:
            return aws_user_data(host)
        cls = self.cls(group, host)
        return self.bucket_name.apply(lambda b: userdata.user_data("aws", host, self.bootstrap(b, cls)))

    def profile(self, group: GroupSpec, host: str | None = None) -> aws.iam.InstanceProfile:
        return self.identity.profiles[self.cls(group, host)]


class GpuNodeGroup(pulumi.ComponentResource):
    """One launch template (the instance type's EFA interface layout, IMDSv2, encrypted root volume, capacity
    reservation, placement group, the group's instance profile) and, unless the group is elastic, one instance
    per hostname from it, named by its cloud-init user data and its ``Name`` tag. An elastic group has only the
    launch template: Slurm's ResumeProgram starts its instances from it (stack.json)."""

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, group, network, boot = args.spec, args.settings, args.group, args.network, args.boot
        placement_group = args.placement_group
        tags = _tags(spec, f"{spec.cluster}-{group.name}", **{"clusterctl:group": group.name})
        nics = group.accelerator_nics if group.network_fabric == "efa" else 0
        interfaces = [{**nic, "subnet_id": network.subnet_id, "security_groups": [network.security_group_id],
                       "delete_on_termination": "true"}
                      for nic in efa_interfaces(nics, efa_only=group.instance_type in EFA_ONLY_TYPES)]
        reservation = None
        market = None
        if spec.reservation:
            reservation = {"capacity_reservation_target": {"capacity_reservation_id": spec.reservation}}
            if settings.capacity_block:
                market = {"market_type": "capacity-block"}
        template = aws.ec2.LaunchTemplate(
            f"{name}-lt", name_prefix=f"{spec.cluster}-{group.name}-", image_id=args.image,
            instance_type=group.instance_type, key_name=settings.key_name, network_interfaces=interfaces,
            iam_instance_profile={"arn": boot.profile(group).arn},
            placement={"group_name": placement_group.name} if spec.placement_group else None,
            metadata_options=IMDSV2,
            block_device_mappings=[{"device_name": "/dev/sda1", "ebs": {
                "volume_size": settings.root_volume_gb, "volume_type": "gp3", "encrypted": "true",
                "delete_on_termination": "true"}}],
            capacity_reservation_specification=reservation, instance_market_options=market,
            tag_specifications=[{"resource_type": "instance", "tags": tags},
                                {"resource_type": "volume", "tags": tags},
                                {"resource_type": "network-interface", "tags": tags}],
            update_default_version=True, tags=tags,
            opts=_image_kept(child, "launch_template"))
        self.launch_template = template
        self.launch_template_id = template.id
        self.instances: dict[str, aws.ec2.Instance] = {}
        for host in () if group.elastic else group.hostnames:
            # user_data_replace_on_change stays false: cloud-init runs the bootstrap once per instance, so a
            # changed user data (a new bootstrap program) must not replace - and wipe - running GPU nodes
            self.instances[host] = aws.ec2.Instance(
                host, instance_type=group.instance_type,
                launch_template={"id": template.id, "version": template.latest_version.apply(str)},
                placement_group=placement_group.name if spec.placement_group else None,
                iam_instance_profile=boot.profile(group, host).name,
                metadata_options=IMDSV2, user_data=boot.user_data(group, host), user_data_replace_on_change=False,
                tags={**tags, "Name": host, "clusterctl:hostname": host},
                opts=_image_kept(child, "instance"))
        self.register_outputs({"launch_template_id": template.id,
                               "private_ips": {h: i.private_ip for h, i in self.instances.items()}})


class HeadNodes(pulumi.ComponentResource):
    """Head and login instances (CPU types) outside the placement group: IMDSv2, encrypted root volume, in
    the cluster subnet (or the public one with ``publicHead``); named and bootstrapped like the GPU instances,
    each with the instance profile of its role class."""

    def __init__(self, name: str, args: HeadNodesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:HeadNodes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, network, boot = args.spec, args.settings, args.network, args.boot
        public = settings.public_head and network.public_subnet_id is not None
        self.instances: dict[str, aws.ec2.Instance] = {}
        self.groups: dict[str, GroupSpec] = {}
        for group in args.groups:
            tags = _tags(spec, f"{spec.cluster}-{group.name}", **{"clusterctl:group": group.name})
            for host in group.hostnames:
                self.groups[host] = group
                self.instances[host] = aws.ec2.Instance(
                    host, ami=args.image, instance_type=group.instance_type, key_name=settings.key_name,
                    subnet_id=network.public_subnet_id if public else network.subnet_id,
                    vpc_security_group_ids=[network.security_group_id], associate_public_ip_address=public,
                    iam_instance_profile=boot.profile(group, host).name,
                    metadata_options=IMDSV2, user_data=boot.user_data(group, host),
                    user_data_replace_on_change=False,
                    root_block_device={"volume_size": 200, "volume_type": "gp3", "encrypted": True,
                                       "delete_on_termination": True, "tags": tags},
                    tags={**tags, "Name": host, "clusterctl:hostname": host},
                    opts=_image_kept(child, "instance"))
        heads = [h for h, g in self.groups.items() if g.role == "head"]
        self.public_ip = self.instances[heads[0]].public_ip if public and heads else None
        self.register_outputs({"private_ips": {h: i.private_ip for h, i in self.instances.items()},
                               "head_public_ip": self.public_ip})


class Identity(pulumi.ComponentResource):
    """An IAM role and instance profile per identity class (clusterctl.cloud.stack.identity). The policies come
    later (:meth:`grant`): a controller's names the launch templates, which carry the compute profile."""

    def __init__(self, name: str, args: IdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Identity", name, None, opts)
        self._child = pulumi.ResourceOptions(parent=self)
        self.name, self.spec = name, args.spec
        spec = args.spec
        self.roles: dict[str, aws.iam.Role] = {}
        self.profiles: dict[str, aws.iam.InstanceProfile] = {}
        self.classes = args.classes
        for cls in args.classes:
            tags = _tags(spec, f"{spec.cluster}-{cls}", **{"clusterctl:role-class": cls})
            # named (not prefixed) like the SSM parameters: one stack of a cluster name per account
            role = aws.iam.Role(f"{name}-{cls}", name=f"clusterctl-{spec.cluster}-{cls}"[:64],
                                assume_role_policy=ASSUME_EC2, description=f"clusterctl {spec.cluster}: {cls} nodes",
                                tags=tags, opts=self._child)
            self.roles[cls] = role
            self.profiles[cls] = aws.iam.InstanceProfile(f"{name}-{cls}", name=f"clusterctl-{spec.cluster}-{cls}"[:128],
                                                         role=role.name, tags=tags, opts=self._child)

    def grant(self, elastic: bool, object_arn: pulumi.Input[str], parameter_arns: dict[str, pulumi.Input[str]],
              launch: dict | None) -> None:
        """One inline policy per role (:func:`policy_document`); ``launch`` as there, with Outputs inside."""
        self.policies: dict[str, aws.iam.RolePolicy] = {}
        for cls, role in self.roles.items():
            needs = self.classes[cls].needs("aws", elastic)
            params = [parameter_arns[var] for var in class_secrets(self.classes[cls].accounting, self.spec.cluster)]
            doc = pulumi.Output.all(object_arn, params, launch if "manage-instances" in needs else None).apply(
                lambda a, needs=needs: json.dumps(policy_document(needs, object_arn=a[0], parameter_arns=a[1],
                                                                  launch=a[2]), indent=1, sort_keys=True))
            self.policies[cls] = aws.iam.RolePolicy(f"{self.name}-{cls}", role=role.id, policy=doc, opts=self._child)
        self.register_outputs({"roles": {c: r.arn for c, r in self.roles.items()},
                               "instance_profiles": {c: p.name for c, p in self.profiles.items()}})


class Names(pulumi.ComponentResource):
    """The cluster's private DNS: a Route 53 private hosted zone ``<cluster>.internal`` associated with the VPC,
    a DHCP options set whose domain name is the zone (so the short names resolve) associated with a VPC this
    program created (an existing VPC keeps its DHCP options: its owner's choice), and an A record per static
    instance. Elastic instances get theirs from the resume program."""

    def __init__(self, name: str, args: NamesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Names", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, network = args.spec, args.network
        self.domain = f"{spec.cluster}.internal"
        zone = aws.route53.Zone(f"{name}-zone", name=self.domain, vpcs=[{"vpc_id": network.vpc_id}],
                                comment=f"clusterctl {spec.cluster}: node names", force_destroy=True,
                                tags=_tags(spec, self.domain), opts=child)
        self.zone_id = zone.id  # the hosted zone ID (Z...), as zone_id
        self.zone_arn = zone.arn
        if not args.settings.subnet_ids:  # a VPC this program created
            dhcp = aws.ec2.VpcDhcpOptions(f"{name}-dhcp", domain_name=self.domain,
                                          domain_name_servers=["AmazonProvidedDNS"],
                                          tags=_tags(spec, f"{spec.cluster}-dhcp"), opts=child)
            aws.ec2.VpcDhcpOptionsAssociation(f"{name}-dhcp", vpc_id=network.vpc_id, dhcp_options_id=dhcp.id,
                                              opts=child)
        for host, inst in args.instances.items():
            aws.route53.Record(f"{name}-{host}", zone_id=zone.id, name=f"{host}.{self.domain}", type="A",
                               ttl=60, records=[inst.private_ip], opts=child)
        self.register_outputs({"hosted_zone_id": zone.id, "dns_domain": self.domain})


class ConfigStore(pulumi.ComponentResource):
    """The private bucket of the configuration object: all four public-access blocks, BucketOwnerEnforced,
    SSE-S3. Its own bucket, not a prefix of the checkpoint bucket: the nodes' roles get ``s3:GetObject`` on
    the one object and nothing else, and the checkpoint bucket's users (training jobs) never see the cluster's
    configuration. Nothing in the object is secret, so SSE-S3 suffices and no KMS permission is needed."""

    def __init__(self, name: str, args: ConfigStoreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:ConfigStore", name, None, opts)
        self._child = pulumi.ResourceOptions(parent=self)
        spec = args.spec
        self.name = name
        self.bucket = aws.s3.Bucket(name, bucket_prefix=f"{spec.cluster}-config-"[:37], force_destroy=True,
                                    tags=_tags(spec, f"{spec.cluster}-config"), opts=self._child)
        aws.s3.BucketPublicAccessBlock(f"{name}-pab", bucket=self.bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=self._child)
        aws.s3.BucketOwnershipControls(f"{name}-owner", bucket=self.bucket.id,
                                       rule={"object_ownership": "BucketOwnerEnforced"}, opts=self._child)
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-sse", bucket=self.bucket.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}], opts=self._child)
        self.bucket_name = self.bucket.bucket
        self.object_arn = self.bucket.arn.apply(lambda arn: f"{arn}/{bundle.OBJECT_KEY}")

    def upload(self, spec: CloudSpec, render_dir: Path, stack: pulumi.Output[dict]) -> None:
        """The object ``config_bundle(render_dir, stack)`` (bytes, so given base64-encoded)."""
        content = component.config_object(render_dir, stack).apply(lambda data: base64.b64encode(data).decode())
        self.object = aws.s3.BucketObjectv2(f"{self.name}-object", bucket=self.bucket.id, key=bundle.OBJECT_KEY,
                                            content_base64=content, content_type="application/gzip",
                                            server_side_encryption="AES256",
                                            tags=_tags(spec, f"{spec.cluster}-config"), opts=self._child)
        self.register_outputs({"bucket": self.bucket_name, "object_key": bundle.OBJECT_KEY})


class Storage(pulumi.ComponentResource):
    """FSx for Lustre (PERSISTENT_2, sized by :func:`fsx_lustre_sizing`) per parallel tier and a private,
    versioned, encrypted S3 bucket for checkpoints."""

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Storage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, network = args.spec, args.network
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
            storage_capacity=sizing.capacity, per_unit_storage_throughput=sizing.tier.throughput_per_tib,
            file_system_type_version="2.15", subnet_ids=network.subnet_id,
            efa_enabled=True if fsx_efa(spec) else None,
            metadata_configuration={"mode": "AUTOMATIC"} if fsx_efa(spec) else None,
            security_group_ids=[network.security_group_id], copy_tags_to_backups=True,
            tags=_tags(spec, f"{spec.cluster}-{tier.name}", **{"clusterctl:mount": tier.mount}), opts=child)
        return {"fs": fs, "sizing": sizing, "outputs": {
            "dns_name": fs.dns_name, "mount_name": fs.mount_name, "mount": tier.mount,
            "capacity_gib": sizing.capacity, "per_unit_storage_throughput": sizing.tier.throughput_per_tib,
            "throughput_mb_per_s": round(sizing.throughput), "sizing": sizing.note,
            "capacity_grown": sizing.grown, "efa_enabled": fsx_efa(spec)}}


class Cluster(pulumi.ComponentResource):
    """The whole cluster; its outputs are the stack outputs (docs/cloud.md)."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("clusterctl:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, render_dir = args.spec, args.settings, args.render_dir
        base = dict(spec=spec, settings=settings)

        network = Network(f"{name}-network", NetworkArgs(**base), opts=child)
        placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=_tags(spec, f"{name}-pg"),
                                           opts=child)
        ami = _ami(settings)
        params = _secret_parameters(name, spec, args.secrets, child)
        munge = params[MUNGE_VAR]
        store = ConfigStore(f"{name}-config", ConfigStoreArgs(**base), opts=child)
        elastic = any(g.elastic for g in spec.groups)
        ident = Identity(f"{name}-identity", IdentityArgs(**base, classes=identity_classes(spec)), opts=child)
        boot = Boot(spec=spec, identity=ident, bucket_name=store.bucket_name if render_dir is not None else None)

        gpu_groups = [g for g in spec.groups if has_launch_template(g)]
        cpu_groups = tuple(g for g in spec.groups if g not in gpu_groups)
        node_groups = [GpuNodeGroup(f"{name}-{g.name}", GpuNodeGroupArgs(
                           **base, group=g, network=network, boot=boot, placement_group=placement, image=ami),
                           opts=child) for g in gpu_groups]
        heads = HeadNodes(f"{name}-head", HeadNodesArgs(**base, groups=cpu_groups, network=network, boot=boot,
                                                         image=ami), opts=child)
        storage = Storage(f"{name}-storage", StorageArgs(**base, network=network), opts=child)

        static = {host: (group, inst) for group, ng in zip(gpu_groups, node_groups)
                  for host, inst in ng.instances.items()}
        static.update({host: (heads.groups[host], inst) for host, inst in heads.instances.items()})
        nodes = {host: component.node(inst.private_ip, group) for host, (group, inst) in static.items()}
        dns = Names(f"{name}-names", NamesArgs(**base, network=network,
                                               instances={h: inst for h, (_, inst) in static.items()}), opts=child)

        templates = {g.name: ng.launch_template for g, ng in zip(gpu_groups, node_groups) if g.elastic}
        launch = None
        if elastic:
            launch = _launch_facts(spec, settings, network, placement, ami, templates, ident, dns)
        ident.grant(elastic, store.object_arn, {var: p.arn for var, p in params.items()}, launch)

        stack = pulumi.Output.all(store.bucket_name, {g: t.id for g, t in templates.items()}, dns.zone_id).apply(
            lambda a: stack_json(spec, boot.bootstrap(a[0], "compute"), a[1], a[2], dns.domain))
        if render_dir is not None:
            store.upload(spec, Path(render_dir), stack)

        first_fs = next(iter(storage.file_systems.values()), None)
        self.outputs = {
            "ami_id": _running_image(node_groups, heads, ami),
            "nodes": component.nodes_output(nodes),
            "head_public_ip": heads.public_ip,
            "fsx_dns_name": first_fs["outputs"]["dns_name"] if first_fs else None,
            "fsx_mount_name": first_fs["outputs"]["mount_name"] if first_fs else None,
            "file_systems": {k: v["outputs"] for k, v in storage.file_systems.items()},
            "bucket_name": storage.bucket_name,
            "config_bucket": store.bucket_name,
            "config_url": store.bucket_name.apply(boot.config_url),
            "placement_group": placement.name,
            "vpc_id": network.vpc_id,
            "subnet_id": network.subnet_id,
            "security_group_id": network.security_group_id,
            "munge_key_parameter": munge.name,
            "slurmdbd_password_parameter": params[DBD_VAR].name if DBD_VAR in params else None,
            "hosted_zone_id": dns.zone_id,
            "dns_domain": dns.domain,
            "instance_profiles": {c: p.name for c, p in ident.profiles.items()},
            "stack": stack,
        }
        self.register_outputs(self.outputs)


def _running_image(node_groups: list[GpuNodeGroup], heads: HeadNodes,
                   looked_up: pulumi.Input[str]) -> pulumi.Input[str]:
    """The image the stack's machines run: the first launch template's or head instance's as kept in the state
    (their image is ignored after creation, so a later lookup's newer AMI is not it), else the lookup's."""
    if node_groups:
        return node_groups[0].launch_template.image_id
    if heads.instances:
        return next(iter(heads.instances.values())).ami
    return looked_up


def _secret_parameters(name: str, spec: CloudSpec, secrets: component.StackSecrets,
                       opts: pulumi.ResourceOptions) -> dict[str, aws.ssm.Parameter]:
    """Ansible variable -> the SecureString SSM parameter of each stack secret: the munge key and, when the cluster
    has accounting hosts, the slurmdbd database password."""
    names = parameter_names(spec.cluster)
    params = {MUNGE_VAR: aws.ssm.Parameter(f"{name}-munge-key", name=names[MUNGE_VAR],
                                           type="SecureString", value=secrets.munge_key,
                                           description="Slurm munge key (base64)",
                                           tags=_tags(spec, f"{name}-munge-key"), opts=opts)}
    if spec.accounting:
        params[DBD_VAR] = aws.ssm.Parameter(
            f"{name}-slurmdbd-password", name=names[DBD_VAR], type="SecureString",
            value=secrets.slurmdbd_password, description="slurmdbd database password",
            tags=_tags(spec, f"{name}-slurmdbd-password"), opts=opts)
    return params


def stack_json(spec: CloudSpec, bootstrap: dict, launch_templates: dict[str, str], zone_id: str,
               domain: str) -> dict:
    """``cloud/stack.json`` of the configuration object (component.stack_document): the elastic groups with the
    launch template the resume program starts their instances from and the zone it names them in."""
    return component.stack_document(spec, "aws", bootstrap, {
        g: {"launch_template_id": lt, "hosted_zone_id": zone_id, "dns_domain": domain}
        for g, lt in launch_templates.items()})


def _launch_facts(spec: CloudSpec, settings: Settings, network: Network, placement: aws.ec2.PlacementGroup,
                  ami: pulumi.Input[str], templates: dict[str, aws.ec2.LaunchTemplate], ident: Identity,
                  dns: Names) -> pulumi.Output[dict]:
    """The ``launch`` argument of :func:`policy_document` for the controllers (resolved Outputs)."""
    account = aws.get_caller_identity_output().account_id
    roles = {g.name: g.role for g in spec.groups}
    compute = [ident.roles[c].arn for c in sorted({roles[g] for g in templates})]
    return pulumi.Output.all(account, [t.arn for t in templates.values()], network.subnet_id,
                             network.security_group_id, placement.arn, ami, compute, dns.zone_id).apply(
        lambda a: {
            "cluster": spec.cluster, "region": spec.region, "account": a[0], "launch_template_arns": a[1],
            "resource_arns": sorted(
                [f"arn:aws:ec2:{spec.region}:{a[0]}:subnet/{a[2]}",
                 f"arn:aws:ec2:{spec.region}:{a[0]}:security-group/{a[3]}", a[4],
                 f"arn:aws:ec2:{spec.region}::image/{a[5]}"]
                + ([f"arn:aws:ec2:{spec.region}:{a[0]}:capacity-reservation/{spec.reservation}"]
                   if spec.reservation else [])
                + ([f"arn:aws:ec2:{spec.region}:{a[0]}:key-pair/{settings.key_name}"] if settings.key_name else [])),
            "compute_role_arns": sorted(a[6]), "zone_id": a[7]})


def build(args: ClusterArgs) -> Cluster:
    """Create the stack's AWS resources for ``args.spec``; returns the cluster component. With ``args.render_dir``
    the configuration object is uploaded and every instance boots into the bootstrap."""
    return Cluster(args.spec.cluster, args)
