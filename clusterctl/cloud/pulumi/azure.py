"""Azure components for a GPU training cluster, built from a :class:`CloudSpec` (pulumi-azure-native).

``build(args)`` (a :class:`ClusterArgs`) returns a ``clusterctl:azure:Cluster`` component (it also owns the
resource group) whose registered outputs include ``nodes`` ({hostname: {private_ip, group, role, instance_type}})
and, with a render, ``stack`` (stack.json). Children:

- ``clusterctl:azure:Network``: one VNet with a compute, a head, an Azure Managed Lustre and an Azure
  NetApp Files (delegated) subnet; an NSG on the compute and head subnets that admits SSH from
  ``admin_cidr`` only and denies every other inbound flow from the Internet. The default address space
  (10.20.0.0/16) stays clear of 172.16.0.0/16, which Azure reserves for the InfiniBand RDMA network.
- ``clusterctl:azure:GpuNodeGroup``: a proximity placement group, an availability set in that group, and
  one VM per hostname in both (Ubuntu-HPC image, accelerated networking, encryption at host, no public
  IP). Azure documents that RDMA-capable VMs reach each other over InfiniBand only inside one scale set
  (single placement group) or one availability set ("Set up InfiniBand", MicrosoftDocs azure-docs
  articles/virtual-machines/setup-infiniband.md: "ensure that the VMs are in the same virtual machine
  scale set or availability set"; up to 200 VMs per availability set). An availability set keeps one
  named VM (and NIC with a static private IP) per hostname, which the ``nodes`` output needs.
- ``clusterctl:azure:HeadNodes``: the CPU VMs (scheduler, login...); only ``login`` VMs get a public IP.
- ``clusterctl:azure:Storage``: Azure Managed Lustre (``storagecache.AmlFilesystem``) for ``parallel``
  tiers sized for capacity *and* bandwidth (:func:`amlfs_size`), Azure NetApp Files for ``nfs`` tiers
  (:func:`anf_size`), and a checkpoint storage account (HTTPS only, TLS 1.2, no public blob access, no
  shared keys, infrastructure encryption, VNet-only, blob versioning) with a private container.
- ``clusterctl:azure:MungeKey``: the ``mungeKey`` and ``slurmdbdPassword`` stack secrets in a Key Vault (RBAC
  authorization, soft delete, network default Deny except the compute/head subnets and ``admin_cidr``); the
  stack outputs name the vault and the secret, never a value.
- ``clusterctl:azure:ConfigStore``: the storage account and private ``config`` container of the cluster's
  configuration object (``bundle.OBJECT_KEY``: the render's runtime files and ``cloud/stack.json``), uploaded
  when ``build`` is given the render directory.
- ``clusterctl:azure:Identities``: a user-assigned managed identity per identity class (``identity_classes``)
  with role assignments for what ``clusterctl.cloud.stack.identity.needs`` says, each at the narrowest scope; every VM
  runs with its class's identity, and (with a render) boots with custom data that names the host and runs the
  bootstrap (``clusterctl.cloud.stack.userdata``). Elastic groups (``GroupSpec.elastic``) get no VMs: their settings
  are in ``stack.json`` for the controllers' resume program.

Stack configuration (``pulumi config set clusterctl:<key>``; :mod:`clusterctl.cloud.pulumi.program` reads it once into
:class:`Settings` and :class:`~clusterctl.cloud.pulumi.component.StackSecrets`): ``sshPublicKey`` (required),
``adminUsername``, ``adminCidr`` (overrides the blueprint's), ``vnetCidr``, ``storageAccountName``,
``configStorageAccountName``, ``keyVaultName``, ``gpuImage`` and ``headImage`` (``publisher:offer:sku:version``);
secrets ``mungeKey`` (required) and ``slurmdbdPassword`` (required with a render when the cluster has accounting
hosts).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import itertools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_azure_native as az

from clusterctl.cloud.pulumi import component
from clusterctl.cloud.stack import bundle, userdata
from clusterctl.cloud.stack.identity import class_of, identity_classes
from clusterctl.cloud.stack.sizing import AZURE_MANAGED_LUSTRE, AZURE_NETAPP_FILES, StorageSize, sized
from clusterctl.cloud.stack.spec import CloudSpec, GroupSpec, StorageSpec, is_gpu_group

PKG = "clusterctl:azure"
# Ubuntu-HPC 22.04 from the Azure Marketplace (Azure/azhpc-images README: "Ubuntu-HPC 22.04
# (microsoft-dsvm:ubuntu-hpc:2204:latest)") - InfiniBand, GPU driver, NCCL and HPC-X preinstalled.
GPU_IMAGE = "microsoft-dsvm:ubuntu-hpc:2204:latest"
HEAD_IMAGE = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"
AVAILABILITY_SET_MAX_VMS = 200

# Azure built-in role definition ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles:
# "Key Vault Secrets User", "Storage Blob Data Reader", "Virtual Machine Contributor", "Network Contributor",
# "Managed Identity Operator"); the same GUID in every subscription.
ROLES = {
    "Key Vault Secrets User": "4633458b-17de-408a-b874-0445c86b69e6",
    "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "Virtual Machine Contributor": "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
    "Network Contributor": "4d97b98b-1d4f-4787-a291-c67834d212e7",
    "Managed Identity Operator": "f1a07417-d97a-45cb-824c-7a7467783830",
}
CONFIG_CONTAINER = "config"
"""private container of the config storage account holding bundle.OBJECT_KEY"""
MUNGE_SECRET = "munge-key"
DBPASS_SECRET = "slurmdbd-password"
OS_DISK_GB = 256


# ---------------------------------------------------------------------------------------------- helpers

def tags(spec: CloudSpec, **extra: str) -> dict[str, str]:
    return {**dict(sorted(spec.tags.items())), "cluster": spec.cluster, **extra}


def image_reference(urn: str) -> dict:
    publisher, offer, sku, version = urn.split(":")
    return {"publisher": publisher, "offer": offer, "sku": sku, "version": version}


def key_vault_name(cluster: str) -> str:
    """3-24 letters, digits and single hyphens, starting with a letter, globally unique (override with
    clusterctl:keyVaultName)."""
    base = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", cluster.lower())).strip("-")
    if not base or not base[0].isalpha():
        base = "c" + base
    return f"{base[:21].rstrip('-')}-kv"


def storage_account_name(cluster: str) -> str:
    """3-24 lower-case letters and digits, globally unique (override with clusterctl:storageAccountName)."""
    return (re.sub(r"[^a-z0-9]", "", cluster.lower())[:20] + "ckpt")[:24]


def config_account_name(cluster: str) -> str:
    """The configuration object's storage account: 3-24 lower-case letters and digits, globally unique
    (override with clusterctl:configStorageAccountName)."""
    return re.sub(r"[^a-z0-9]", "", cluster.lower())[:21] + "cfg"


def config_url(account: str) -> str:
    return f"https://{account}.blob.core.windows.net/{CONFIG_CONTAINER}/{bundle.OBJECT_KEY}"


def secret_url(vault: str, name: str) -> str:
    """A Key Vault secret's URL (the vault URI + ``secrets/NAME``; the newest version when none is given)."""
    return f"https://{vault}.vault.azure.net/secrets/{name}"


def identity_grants(capabilities: frozenset[str], *, reads_db: bool) -> list[tuple[str, str]]:
    """(role name, scope key) of each role assignment an identity with ``capabilities`` gets. Scope keys:
    ``container`` (the config container), ``munge-secret``, ``dbpass-secret``, ``resource-group``,
    ``elastic-identity`` (each identity the controllers give the VMs they create)."""
    grants = []
    if "read-config" in capabilities:
        grants.append(("Storage Blob Data Reader", "container"))
    if "read-secrets" in capabilities:
        grants.append(("Key Vault Secrets User", "munge-secret"))
        if reads_db:
            grants.append(("Key Vault Secrets User", "dbpass-secret"))
    if "manage-instances" in capabilities:
        grants += [("Virtual Machine Contributor", "resource-group"), ("Network Contributor", "resource-group")]
    if "pass-identity" in capabilities:
        grants.append(("Managed Identity Operator", "elastic-identity"))
    return grants


def amlfs_size(capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> StorageSize:
    """The Azure Managed Lustre SKU (``tier.name``) and TiB of a parallel tier (clusterctl.cloud.stack.sizing: the
    one policy, AMLFS's table)."""
    return sized(AZURE_MANAGED_LUSTRE, capacity_tb, read_gb_per_s, write_gb_per_s)


def anf_size(capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> StorageSize:
    """The Azure NetApp Files service level (``tier.name``) and TiB of an nfs tier (the same policy, ANF's
    table)."""
    return sized(AZURE_NETAPP_FILES, capacity_tb, read_gb_per_s, write_gb_per_s)


SMALLEST_VNET = 22
"""a /22 still gives a /23 compute subnet and /25 head, AMLFS and ANF subnets"""


def vnet_layout(vnet: ipaddress.IPv4Network) -> dict[str, ipaddress.IPv4Network]:
    """The subnets of a VNet: ``compute`` is the first /20 (or the first half of a smaller VNet); the next
    block of that size is cut into ``head``, ``amlfs`` and ``anf`` subnets of /24 (smaller in a small VNet).
    10.20.0.0/16 (the default) gives compute 10.20.0.0/20 and head/amlfs/anf 10.20.16-18.0/24; a blueprint's
    /20 in-band pool gives a /21 and three /24s."""
    if vnet.prefixlen > SMALLEST_VNET:
        raise ValueError(f"vnetCidr {vnet} is smaller than a /{SMALLEST_VNET}, too small for the compute, head, "
                         f"AMLFS and ANF subnets")
    compute, rest = itertools.islice(vnet.subnets(new_prefix=max(vnet.prefixlen + 1, 20)), 2)
    head, amlfs, anf = itertools.islice(rest.subnets(new_prefix=max(rest.prefixlen + 2, 24)), 3)
    return {"compute": compute, "head": head, "amlfs": amlfs, "anf": anf}


@dataclass(frozen=True)
class Settings:
    """The stack configuration of an Azure cluster (the module's docstring), read once by
    :mod:`clusterctl.cloud.pulumi.program`; the account and vault names default to :func:`storage_account_name`,
    :func:`config_account_name` and :func:`key_vault_name` of the cluster."""
    admin_cidr: str
    ssh_public_key: str
    storage_account: str
    config_account: str
    key_vault: str
    admin_username: str = "azureuser"
    vnet_cidr: str = "10.20.0.0/16"
    gpu_image: str = GPU_IMAGE
    head_image: str = HEAD_IMAGE

    def __post_init__(self) -> None:
        component.refuse_wide_admin_cidr(self.admin_cidr)
        component.refuse_world_network("vnetCidr", self.vnet_cidr)


Args = component.provider_args(Settings)
"""the base of every ``XxxArgs`` below: the shared arguments with ``settings`` this provider's :class:`Settings`"""


@dataclass(frozen=True, kw_only=True)
class NetworkArgs(Args, component.NetworkArgs):
    resource_group: az.resources.ResourceGroup


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs(Args, component.NodeGroupArgs):
    resource_group: az.resources.ResourceGroup
    network: Network
    boot: Boot | None = None
    addresses: Iterator[str]
    """the static private addresses of the compute subnet not yet given (each group takes one per host)"""


@dataclass(frozen=True, kw_only=True)
class HeadNodesArgs(Args, component.HeadNodesArgs):
    resource_group: az.resources.ResourceGroup
    network: Network
    boot: Boot | None = None


@dataclass(frozen=True, kw_only=True)
class StorageArgs(Args, component.StorageArgs):
    resource_group: az.resources.ResourceGroup
    network: Network


@dataclass(frozen=True, kw_only=True)
class MungeKeyArgs(Args):
    resource_group: az.resources.ResourceGroup
    network: Network
    secrets: component.StackSecrets
    """the munge key and, when given, the slurmdbd password"""


@dataclass(frozen=True, kw_only=True)
class ConfigStoreArgs(Args, component.ConfigStoreArgs):
    resource_group: az.resources.ResourceGroup
    network: Network


@dataclass(frozen=True, kw_only=True)
class IdentitiesArgs(Args, component.IdentityArgs):
    resource_group: az.resources.ResourceGroup
    scopes: dict[str, pulumi.Output | None]
    """the scope of each grant key of :func:`identity_grants` (None: not in this cluster)"""
    subscription_id: pulumi.Output[str]


@dataclass(frozen=True, kw_only=True)
class ClusterArgs(Args, component.ClusterArgs):
    """the whole cluster's, resource group included: ``secrets`` and ``render_dir`` (component.ClusterArgs)"""


# ------------------------------------------------------------------------------------------- components

class Network(pulumi.ComponentResource):
    """VNet, subnets (compute, head, AMLFS, ANF) and the NSG."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg = args.spec, args.settings, args.resource_group
        vnet_net = ipaddress.ip_network(settings.vnet_cidr)
        if vnet_net.overlaps(ipaddress.ip_network("172.16.0.0/16")):
            raise ValueError(f"vnetCidr {vnet_net} overlaps 172.16.0.0/16, reserved for the InfiniBand RDMA network")
        self.cidrs = vnet_layout(vnet_net)

        self.nsg = az.network.NetworkSecurityGroup(
            f"{name}-nsg", resource_group_name=rg.name, location=rg.location, tags=tags(spec),
            security_rules=[
                {"name": "allow-ssh-admin", "priority": 100, "direction": "Inbound", "access": "Allow",
                 "protocol": "Tcp", "source_address_prefix": settings.admin_cidr, "source_port_range": "*",
                 "destination_address_prefix": "*", "destination_port_range": "22"},
                {"name": "allow-vnet", "priority": 200, "direction": "Inbound", "access": "Allow",
                 "protocol": "*", "source_address_prefix": "VirtualNetwork", "source_port_range": "*",
                 "destination_address_prefix": "VirtualNetwork", "destination_port_range": "*"},
                {"name": "deny-internet", "priority": 4000, "direction": "Inbound", "access": "Deny",
                 "protocol": "*", "source_address_prefix": "Internet", "source_port_range": "*",
                 "destination_address_prefix": "*", "destination_port_range": "*"},
            ], opts=child)
        self.vnet = az.network.VirtualNetwork(
            f"{name}-vnet", resource_group_name=rg.name, location=rg.location, tags=tags(spec),
            address_space={"address_prefixes": [settings.vnet_cidr]},
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]))
        storage_endpoint = [{"service": "Microsoft.Storage"}, {"service": "Microsoft.KeyVault"}]
        self.compute = az.network.Subnet(
            f"{name}-compute", subnet_name="compute", resource_group_name=rg.name, virtual_network_name=self.vnet.name,
            address_prefix=str(self.cidrs["compute"]), network_security_group={"id": self.nsg.id},
            service_endpoints=storage_endpoint, opts=child)
        self.head = az.network.Subnet(
            f"{name}-head", subnet_name="head", resource_group_name=rg.name, virtual_network_name=self.vnet.name,
            address_prefix=str(self.cidrs["head"]), network_security_group={"id": self.nsg.id},
            service_endpoints=storage_endpoint, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.compute]))
        self.amlfs = az.network.Subnet(
            f"{name}-amlfs", subnet_name="amlfs", resource_group_name=rg.name, virtual_network_name=self.vnet.name,
            address_prefix=str(self.cidrs["amlfs"]), opts=pulumi.ResourceOptions(parent=self, depends_on=[self.head]))
        self.anf = az.network.Subnet(
            f"{name}-anf", subnet_name="anf", resource_group_name=rg.name, virtual_network_name=self.vnet.name,
            address_prefix=str(self.cidrs["anf"]),
            delegations=[{"name": "netapp", "service_name": "Microsoft.NetApp/volumes"}],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.amlfs]))
        self.register_outputs({"vnet": self.vnet.name, "cidrs": {k: str(v) for k, v in self.cidrs.items()}})


def _vm(name: str, *, spec: CloudSpec, settings: Settings, resource_group: az.resources.ResourceGroup,
        group: GroupSpec, host: str, address: str, subnet: az.network.Subnet, image: str, boot: Boot | None,
        opts: pulumi.ResourceOptions, public_ip: az.network.PublicIPAddress | None = None, **extra):
    """The NIC (static private ``address`` in ``subnet``) and the VM ``host`` of ``group``."""
    rg, ip = resource_group, address
    ipconf: dict = {"name": "ipconfig1", "primary": True, "subnet": {"id": subnet.id},
                    "private_ip_allocation_method": "Static", "private_ip_address": ip}
    if public_ip is not None:
        ipconf["public_ip_address"] = {"id": public_ip.id}
    nic = az.network.NetworkInterface(
        f"{name}-nic", resource_group_name=rg.name, location=rg.location, enable_accelerated_networking=True,
        ip_configurations=[ipconf], tags=tags(spec, group=group.name), opts=opts)
    os_profile = {"computer_name": host, "admin_username": settings.admin_username,
                  "linux_configuration": {
                      "disable_password_authentication": True,
                      "ssh": {"public_keys": [{"path": f"/home/{settings.admin_username}/.ssh/authorized_keys",
                                               "key_data": settings.ssh_public_key}]}}}
    if boot is not None:
        # the identity the node reads its config object and secrets with; custom data (cloud-init) names the
        # host and runs the bootstrap. Azure applies custom data at provisioning only and refuses a change
        # ("This property cannot be updated after the VM is created", OSProfile.customData): a changed one
        # is ignored, and a VM gets it when it is created again (pulumi up --replace).
        extra["identity"] = {"type": "UserAssigned", "user_assigned_identities": [boot.identity_of(host).id]}
        if boot.render_dir is not None:
            os_profile["custom_data"] = boot.custom_data(host)
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["osProfile.customData"]))
    vm = az.compute.VirtualMachine(
        name, vm_name=host, resource_group_name=rg.name, location=rg.location,
        hardware_profile={"vm_size": group.instance_type},
        network_profile={"network_interfaces": [{"id": nic.id, "primary": True, "delete_option": "Delete"}]},
        os_profile=os_profile,
        storage_profile={"image_reference": image_reference(image),
                         "os_disk": {"create_option": "FromImage", "caching": "ReadWrite", "disk_size_gb": OS_DISK_GB,
                                     "delete_option": "Delete",
                                     "managed_disk": {"storage_account_type": "Premium_LRS"}}},
        security_profile={"encryption_at_host": True},
        tags=tags(spec, group=group.name, role=group.role), opts=opts, **extra)
    return nic, vm


def _storage_account(resource: str, account: str, spec: CloudSpec, settings: Settings,
                     rg: az.resources.ResourceGroup, network: Network, *, purpose: str, sku: str, shared_keys: bool,
                     services: tuple[str, ...], opts: pulumi.ResourceOptions) -> az.storage.StorageAccount:
    """A StorageV2 account as every account of the cluster is: HTTPS only, TLS 1.2, no public blob access,
    infrastructure encryption of ``services``, the network rules of :func:`_storage_network_rules`."""
    return az.storage.StorageAccount(
        resource, account_name=account, resource_group_name=rg.name, location=rg.location, kind="StorageV2",
        sku={"name": sku}, access_tier="Hot", enable_https_traffic_only=True, minimum_tls_version="TLS1_2",
        allow_blob_public_access=False, allow_shared_key_access=shared_keys, public_network_access="Enabled",
        encryption={"key_source": "Microsoft.Storage", "require_infrastructure_encryption": True,
                    "services": {service: {"enabled": True, "key_type": "Account"} for service in services}},
        network_rule_set=_storage_network_rules(settings, network), tags=tags(spec, purpose=purpose), opts=opts)


def _storage_network_rules(settings: Settings, network: Network) -> dict:
    """A storage account's network rules: default Deny, the compute and head subnets and ``admin_cidr``."""
    return {"default_action": "Deny", "bypass": "AzureServices",
            "ip_rules": [{"i_p_address_or_range": settings.admin_cidr, "action": "Allow"}],
            "virtual_network_rules": [{"virtual_network_resource_id": network.compute.id},
                                      {"virtual_network_resource_id": network.head.id}]}


def _hosts(cidr: ipaddress.IPv4Network, offset: int):
    """Static addresses from ``cidr``: Azure keeps the first four and the last address."""
    hosts = list(cidr.hosts())[3 + offset:-1]
    return iter(str(h) for h in hosts)


class GpuNodeGroup(pulumi.ComponentResource):
    """Proximity placement group + availability set + one IB-connected VM per hostname."""

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg, group = args.spec, args.settings, args.resource_group, args.group
        network, boot, ips = args.network, args.boot, args.addresses
        if group.count > AVAILABILITY_SET_MAX_VMS:
            raise ValueError(f"group {group.name}: {group.count} VMs, but an availability set (the InfiniBand "
                             f"domain) holds at most {AVAILABILITY_SET_MAX_VMS}; split the group")
        self.ppg = az.compute.ProximityPlacementGroup(
            f"{name}-ppg", resource_group_name=rg.name, location=rg.location,
            proximity_placement_group_type="Standard", intent={"vm_sizes": [group.instance_type]},
            zones=[spec.zone] if spec.zone else None, tags=tags(spec, group=group.name), opts=child)
        self.avset = az.compute.AvailabilitySet(
            f"{name}-avset", resource_group_name=rg.name, location=rg.location, sku={"name": "Aligned"},
            platform_fault_domain_count=1, platform_update_domain_count=1,
            proximity_placement_group={"id": self.ppg.id}, tags=tags(spec, group=group.name), opts=child)
        self.vms = {}
        for host in group.hostnames:
            ip = next(ips)  # an elastic group keeps its addresses reserved: the others' stay where they are
            if group.elastic:
                continue  # created by the controllers' resume program, into this PPG and availability set
            self.vms[host] = _vm(f"{name}-{host}", spec=spec, settings=settings, resource_group=rg, group=group,
                                 host=host, address=ip, subnet=network.compute, image=settings.gpu_image,
                                 boot=boot, opts=child, availability_set={"id": self.avset.id},
                                 proximity_placement_group={"id": self.ppg.id})
        self.register_outputs({"hosts": list(group.hostnames), "proximity_placement_group": self.ppg.id,
                               "availability_set": self.avset.id, "elastic": group.elastic})


class HeadNodes(pulumi.ComponentResource):
    """Scheduler, login and other CPU VMs in the head subnet; login VMs get a static public IP."""

    def __init__(self, name: str, args: HeadNodesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:HeadNodes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg, network, boot = args.spec, args.settings, args.resource_group, args.network, args.boot
        ips = _hosts(network.cidrs["head"], 0)
        self.vms = {}
        for group in args.groups:
            for host in group.hostnames:
                if group.elastic:
                    next(ips)
                    continue
                pip = None
                if group.role == "login":
                    pip = az.network.PublicIPAddress(
                        f"{name}-{host}-pip", resource_group_name=rg.name, location=rg.location,
                        sku={"name": "Standard"}, public_ip_allocation_method="Static",
                        zones=[spec.zone] if spec.zone else None, tags=tags(spec, group=group.name), opts=child)
                self.vms[host] = (group, *_vm(f"{name}-{host}", spec=spec, settings=settings, resource_group=rg,
                                              group=group, host=host, address=next(ips), subnet=network.head,
                                              image=settings.head_image, boot=boot, opts=child, public_ip=pip,
                                              zones=[spec.zone] if spec.zone else None))
        self.register_outputs({"hosts": sorted(self.vms)})


class Storage(pulumi.ComponentResource):
    """AMLFS (parallel), Azure NetApp Files (nfs) and the checkpoint storage account."""

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Storage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg, network = args.spec, args.settings, args.resource_group, args.network
        self.mounts: dict[str, dict] = {}
        self._netapp = None
        for t in spec.storage:
            if t.tier == "parallel":
                self.mounts[t.name] = self._amlfs(name, spec, rg, network, t, child)
            elif t.tier == "nfs":
                self.mounts[t.name] = self._anf(name, spec, rg, network, t, child)
        self.account = _storage_account(
            f"{name}-checkpoints", settings.storage_account, spec, settings, rg, network, purpose="checkpoints",
            sku="Standard_ZRS", shared_keys=False, services=("blob", "file"), opts=child)
        self.blob_service = az.storage.BlobServiceProperties(
            f"{name}-checkpoints-blob", account_name=self.account.name, resource_group_name=rg.name,
            blob_services_name="default", is_versioning_enabled=True,
            delete_retention_policy={"enabled": True, "days": 7},
            container_delete_retention_policy={"enabled": True, "days": 7}, opts=child)
        self.container = az.storage.BlobContainer(
            f"{name}-checkpoints-container", account_name=self.account.name, resource_group_name=rg.name,
            container_name="checkpoints", public_access="None",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.blob_service]))
        self.register_outputs({"mounts": self.mounts, "checkpoint_account": self.account.name,
                               "checkpoint_container": self.container.name})

    def _amlfs(self, name, spec, rg, network, t: StorageSpec, opts) -> dict:
        size = amlfs_size(t.capacity_tb, t.read_gb_per_s, t.write_gb_per_s)
        fs = az.storagecache.AmlFilesystem(
            f"{name}-{t.name}", aml_filesystem_name=f"{spec.cluster}-{t.name}", resource_group_name=rg.name,
            location=rg.location, sku={"name": size.tier.name}, storage_capacity_ti_b=float(size.capacity),
            filesystem_subnet=network.amlfs.id, zones=[spec.zone] if spec.zone else None,
            maintenance_window={"day_of_week": "Sunday", "time_of_day_utc": "02:00"},
            tags=tags(spec, storage=t.name), opts=opts)
        return {"kind": "amlfs", "mount": t.mount, "sku": size.tier.name, "capacity_tib": size.capacity,
                "per_unit_mbps": size.tier.throughput_per_tib, "throughput_gb_per_s": round(size.throughput / 1000, 1),
                "filesystem": fs.name}

    def _anf(self, name, spec, rg, network, t: StorageSpec, opts) -> dict:
        size = anf_size(t.capacity_tb, t.read_gb_per_s, t.write_gb_per_s)
        level, tib = size.tier.name, size.capacity
        if self._netapp is None:
            self._netapp = az.netapp.Account(f"{name}-netapp", resource_group_name=rg.name, location=rg.location,
                                             tags=tags(spec), opts=opts)
        pool = az.netapp.CapacityPool(
            f"{name}-{t.name}-pool", account_name=self._netapp.name, resource_group_name=rg.name, location=rg.location,
            service_level=level, size=tib * 2**40, qos_type="Auto", tags=tags(spec, storage=t.name), opts=opts)
        volume = az.netapp.CapacityPoolVolume(
            f"{name}-{t.name}", account_name=self._netapp.name, pool_name=pool.name, resource_group_name=rg.name,
            location=rg.location, creation_token=re.sub(r"[^a-z0-9-]", "-", t.name.lower()),
            service_level=level, usage_threshold=tib * 2**40, subnet_id=network.anf.id,
            protocol_types=["NFSv4.1"], network_features="Standard",
            export_policy={"rules": [{"rule_index": 1, "allowed_clients": str(network.cidrs["compute"]) + "," +
                                      str(network.cidrs["head"]), "nfsv41": True, "nfsv3": False,
                                      "unix_read_write": True, "unix_read_only": False, "has_root_access": True}]},
            tags=tags(spec, storage=t.name), opts=opts)
        return {"kind": "netapp", "mount": t.mount, "service_level": level, "capacity_tib": tib,
                "volume": volume.name}


class MungeKey(pulumi.ComponentResource):
    """The Slurm munge key (``clusterctl:mungeKey``, a stack secret) and the slurmdbd database password
    (``clusterctl:slurmdbdPassword``) as Key Vault secrets. The vault uses Azure RBAC (no access policies), soft
    delete, and admits the data plane only from the cluster's compute and head subnets and ``admin_cidr``; the
    secrets are written through the management plane, and their values stay secret Outputs (also in the
    provider's returned state)."""

    def __init__(self, name: str, args: MungeKeyArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:MungeKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg, network = args.spec, args.settings, args.resource_group, args.network
        value, dbpass = args.secrets.munge_key, args.secrets.slurmdbd_password
        tenant = az.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self)).tenant_id
        self.vault = az.keyvault.Vault(
            f"{name}-vault", vault_name=settings.key_vault, resource_group_name=rg.name, location=rg.location,
            properties={"tenant_id": tenant, "sku": {"family": "A", "name": "standard"},
                        "enable_rbac_authorization": True, "enable_soft_delete": True,
                        "soft_delete_retention_in_days": 7, "public_network_access": "Enabled",
                        "network_acls": {"default_action": "Deny", "bypass": "AzureServices",
                                         "ip_rules": [{"value": settings.admin_cidr}],
                                         "virtual_network_rules": [{"id": network.compute.id},
                                                                   {"id": network.head.id}]}},
            tags=tags(spec, purpose="munge-key"), opts=child)
        self.secret = az.keyvault.Secret(
            f"{name}-secret", secret_name=MUNGE_SECRET, vault_name=self.vault.name, resource_group_name=rg.name,
            properties={"value": value, "content_type": "Slurm munge key (base64)"},
            tags=tags(spec, purpose="munge-key"),
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["properties"]))
        self.dbpass = None
        if dbpass is not None:
            self.dbpass = az.keyvault.Secret(
                f"{name}-slurmdbd-password", secret_name=DBPASS_SECRET, vault_name=self.vault.name,
                resource_group_name=rg.name, properties={"value": dbpass, "content_type": "slurmdbd StoragePass"},
                tags=tags(spec, purpose="slurmdbd-password"),
                opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["properties"]))
        self.register_outputs({"vault": self.vault.name, "secret": self.secret.name,
                               "slurmdbd_secret": self.dbpass.name if self.dbpass else None})


class ConfigStore(pulumi.ComponentResource):
    """The configuration object's own storage account and private ``config`` container (the blob is added by
    :meth:`upload`). The account allows shared-key access, unlike the checkpoint account, because
    pulumi-azure-native writes blobs only with the account key (its ``storage:Blob`` lists the keys and signs
    with them; pulumi/pulumi-azure-native issues 2015 and 2948): the nodes read it with Entra ID tokens of their
    managed identities (Storage Blob Data Reader on the container), never with a key. The object holds no
    secret. Network default Deny except the compute and head subnets and ``admin_cidr`` (where ``pulumi up``
    runs from)."""

    def __init__(self, name: str, args: ConfigStoreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:ConfigStore", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, settings, rg, network = args.spec, args.settings, args.resource_group, args.network
        self.rg, self.base = rg, name
        self.url = config_url(settings.config_account)
        self.account = _storage_account(
            f"{name}-account", settings.config_account, spec, settings, rg, network, purpose="config",
            sku="Standard_LRS", shared_keys=True, services=("blob",), opts=child)
        self.container = az.storage.BlobContainer(
            f"{name}-container", account_name=self.account.name, resource_group_name=rg.name,
            container_name=CONFIG_CONTAINER, public_access="None", opts=child)
        self.blob = None
        self.register_outputs({"account": self.account.name, "container": self.container.name, "url": self.url})

    def upload(self, data: pulumi.Output, render_dir: Path) -> az.storage.Blob:
        """The blob ``bundle.OBJECT_KEY`` holding ``data`` (the bundle's bytes), written to ``bundle.BUNDLE_FILE``
        of the render first (a Blob's source is an asset). Replaced, not updated, when the bytes change: delete
        first, since the new blob has the old one's name."""

        self.blob = az.storage.Blob(
            f"{self.base}-object", account_name=self.account.name, resource_group_name=self.rg.name,
            container_name=self.container.name, blob_name=bundle.OBJECT_KEY, type="Block",
            content_type="application/gzip",
            content_md5=data.apply(lambda b: base64.b64encode(hashlib.md5(b).digest()).decode()),
            source=data.apply(lambda content: component.bundle_asset(render_dir, content)),
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True))
        return self.blob


class Identities(pulumi.ComponentResource):
    """One user-assigned managed identity per identity class (clusterctl.cloud.stack.identity) and its role
    assignments: what ``clusterctl.cloud.stack.identity.needs`` says the class needs, each at the narrowest scope
    (:func:`identity_grants`): the config container, the one Key Vault secret, the resource group (where the
    elastic VMs, their NICs and disks are created: the narrowest scope that holds resources that do not exist
    yet), the one identity the controllers assign to the VMs they create."""

    def __init__(self, name: str, args: IdentitiesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Identities", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, rg, scopes, subscription_id = args.spec, args.resource_group, args.scopes, args.subscription_id
        classes = identity_classes(spec)
        self.host_class = class_of(spec)
        self.by_class = {
            c: az.managedidentity.UserAssignedIdentity(
                f"{name}-{c}", resource_name_=f"{spec.cluster}-{c}", resource_group_name=rg.name,
                location=rg.location, tags=tags(spec, identity=c), opts=child)
            for c in classes}
        elastic = [g for g in spec.groups if g.elastic]
        passed = sorted({self.host_class[g.hostnames[0]] for g in elastic})
        self.assignments: list[az.authorization.RoleAssignment] = []
        for c, members in classes.items():
            caps = members.needs("azure", elastic=bool(elastic))
            for role, key in identity_grants(caps, reads_db=members.accounting):
                targets = ([(f"identity-{p}", self.by_class[p].id) for p in passed] if key == "elastic-identity"
                           else [(key, scopes[key])] if scopes.get(key) is not None else [])
                for target, scope in targets:
                    role_id = subscription_id.apply(
                        lambda sub, r=role: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/"
                                            f"{ROLES[r]}")
                    slug = re.sub(r"[^a-z]+", "-", role.lower()).strip("-")
                    self.assignments.append(az.authorization.RoleAssignment(
                        f"{name}-{c}-{slug}-{target}",
                        role_assignment_name=str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                            f"clusterctl:{spec.cluster}/{c}/{role}/{target}")),
                        principal_id=self.by_class[c].principal_id, principal_type="ServicePrincipal",
                        role_definition_id=role_id, scope=scope,
                        description=f"clusterctl {spec.cluster}: {c} nodes, {role}", opts=child))
        self.register_outputs({"identities": {c: i.client_id for c, i in self.by_class.items()}})

    def of(self, host: str) -> az.managedidentity.UserAssignedIdentity:
        return self.by_class[self.host_class[host]]


@dataclass(kw_only=True)
class Boot:
    """What a VM boots with: its identity and, with a render, the custom data that runs the bootstrap."""
    spec: CloudSpec
    settings: Settings
    identities: Identities
    render_dir: Path | None

    def identity_of(self, host: str) -> az.managedidentity.UserAssignedIdentity:
        return self.identities.of(host)

    def config(self, client_id: str | None, accounting: bool = False) -> dict:
        secrets = component.secret_refs("azure-keyvault", secret_url(self.settings.key_vault, MUNGE_SECRET),
                                        secret_url(self.settings.key_vault, DBPASS_SECRET) if accounting else None)
        return userdata.bootstrap_config("azure", region=self.spec.region,
                                         config_url=config_url(self.settings.config_account), secrets=secrets,
                                         identity=client_id)

    def custom_data(self, host: str) -> pulumi.Output:
        """base64 of the cloud-config (Azure decodes it to a file of at most 65,535 bytes: userdata.LIMITS)."""
        accounting = host in self.spec.accounting
        return self.identity_of(host).client_id.apply(lambda cid: base64.b64encode(userdata.user_data(
            "azure", host, self.config(cid, accounting)).encode()).decode())


class Cluster(pulumi.ComponentResource):
    """Resource group, network, the config object's store, the Key Vault secrets, the identities, GPU node
    groups, head nodes and storage; outputs ``nodes`` and (with a render) ``stack``."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PKG}:Cluster", name, None, opts)
        spec, settings, render_dir = args.spec, args.settings, args.render_dir
        child = pulumi.ResourceOptions(parent=self)
        self.rg = az.resources.ResourceGroup(f"{name}-rg", resource_group_name=f"{spec.cluster}-rg",
                                             location=spec.region, tags=tags(spec), opts=child)
        base = dict(spec=spec, settings=settings, resource_group=self.rg)
        self.network = Network(f"{name}-network", NetworkArgs(**base), child)
        self.config_store = ConfigStore(f"{name}-config", ConfigStoreArgs(**base, network=self.network), child)
        self.munge = MungeKey(f"{name}-munge-key", MungeKeyArgs(**base, network=self.network, secrets=args.secrets),
                              child)
        client = az.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        scopes = {"container": self.config_store.container.id, "munge-secret": self.munge.secret.id,
                  "dbpass-secret": self.munge.dbpass.id if self.munge.dbpass else None,
                  "resource-group": self.rg.id}
        self.identities = Identities(f"{name}-identity", IdentitiesArgs(
            **base, scopes=scopes, subscription_id=client.subscription_id), child)
        boot = Boot(spec=spec, settings=settings, identities=self.identities, render_dir=render_dir)
        ips = _hosts(self.network.cidrs["compute"], 0)
        gpu_groups = [g for g in spec.groups if is_gpu_group(g)]
        self.gpu_groups = [GpuNodeGroup(f"{name}-{g.name}", GpuNodeGroupArgs(
                               **base, group=g, network=self.network, boot=boot, addresses=ips), child)
                           for g in gpu_groups]
        others = tuple(g for g in spec.groups if not is_gpu_group(g))
        self.head = (HeadNodes(f"{name}-head", HeadNodesArgs(**base, groups=others, network=self.network, boot=boot),
                               child)
                     if others else None)
        self.storage = Storage(f"{name}-storage", StorageArgs(**base, network=self.network), child)
        self.stack = None
        if render_dir is not None:
            self.stack = self._stack(spec, settings, boot, client.subscription_id, dict(zip(gpu_groups,
                                                                                            self.gpu_groups)))
            self.config_store.upload(component.config_object(render_dir, self.stack), render_dir)

        nodes: dict[str, pulumi.Output] = {}
        for g, gg in zip(gpu_groups, self.gpu_groups):
            for host, (nic, _vm_) in gg.vms.items():
                nodes[host] = _node(nic, g)
        if self.head is not None:
            for host, (g, nic, _vm_) in self.head.vms.items():
                nodes[host] = _node(nic, g)
        self.nodes = component.nodes_output(nodes)
        self.outputs = {
            "nodes": self.nodes,
            "region": spec.region,
            "resource_group": self.rg.name,
            "storage": self.storage.mounts,
            "checkpoint_account": self.storage.account.name,
            "key_vault": self.munge.vault.name,
            "munge_key_secret": self.munge.secret.name,
            "config_url": self.config_store.url,
            "identities": {c: i.client_id for c, i in sorted(self.identities.by_class.items())},
        }
        if self.stack is not None:
            self.outputs["stack"] = self.stack
        self.register_outputs(self.outputs)

    def _stack(self, spec: CloudSpec, settings: Settings, boot: Boot, subscription_id: pulumi.Output,
               gpu: dict[GroupSpec, GpuNodeGroup]) -> pulumi.Output:
        """stack.json: the cluster's facts for the programs on the nodes (no secret, nothing of an instance):
        the compute nodes' bootstrap settings (no host) and each elastic group's VM settings, which the
        controllers' resume program creates VMs from (`az vm create`)."""
        elastic = [g for g in spec.groups if g.elastic]
        first = self.identities.host_class[elastic[0].hostnames[0]] if elastic else "compute"
        node_identity = self.identities.by_class.get(first)
        groups = {}
        for g in elastic:
            placed = gpu.get(g)
            groups[g.name] = {
                "subscription_id": subscription_id, "resource_group": self.rg.name, "location": spec.region,
                "vm_size": g.instance_type, "image": settings.gpu_image if is_gpu_group(g) else settings.head_image,
                "subnet_id": (self.network.compute if is_gpu_group(g) else self.network.head).id,
                "availability_set_id": placed.avset.id if placed else None,
                "proximity_placement_group_id": placed.ppg.id if placed else None,
                "identity_id": self.identities.of(g.hostnames[0]).id, "admin_username": settings.admin_username,
                "ssh_public_key": settings.ssh_public_key, "os_disk_gb": OS_DISK_GB}
        client_id = node_identity.client_id if node_identity is not None else None
        return pulumi.Output.from_input({"elastic": groups, "client_id": client_id}).apply(
            lambda r: component.stack_document(spec, "azure", boot.config(r["client_id"]), r["elastic"]))


def _node(nic: az.network.NetworkInterface, g: GroupSpec) -> pulumi.Output:
    return component.node(nic.ip_configurations.apply(lambda cs: cs[0].private_ip_address if cs else None), g)


def build(args: ClusterArgs) -> Cluster:
    """Create the stack's Azure resources for ``args.spec``; returns the cluster component."""
    return Cluster(args.spec.cluster, args)
