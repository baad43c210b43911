"""clusterctl.cloud.pulumi.azure under pulumi mocks: the azure-nd-h100-v5 blueprint."""

from __future__ import annotations

import ipaddress

import pytest

from clusterctl.cloud.pulumi import azure
from clusterctl.cloud.stack.identity import identity_classes
from clusterctl.cloud.stack.spec import cloud_spec
from clusterctl.validate import validate_file
from tests.cloud.mocks import TENANT, is_secret, reveal, run_program
from tests.helpers import BLUEPRINTS

VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
CONFIG = {"clusterctl:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAItest ops@example"}
SECRETS = {"clusterctl:mungeKey": "YXp1cmUtbXVuZ2Uta2V5LWZvci10ZXN0cy1vbmx5LTAxMjM0NTY3ODk="}


@pytest.fixture(scope="module")
def spec():
    return cloud_spec(validate_file(BLUEPRINTS / "azure-nd-h100-v5.yaml").plan)


@pytest.fixture(scope="module")
def rec(spec):
    return run_program(spec, config=CONFIG, secrets=SECRETS)


def _vms(rec, size):
    return [r for r in rec.of_type(VM) if r.inputs["hardwareProfile"]["vmSize"] == size]


def test_components_and_type_tokens(rec):
    assert rec.root.type == "clusterctl:azure:Cluster"
    kinds = {r.type for r in rec.children(rec.root)}
    assert {"clusterctl:azure:Network", "clusterctl:azure:GpuNodeGroup", "clusterctl:azure:HeadNodes",
            "clusterctl:azure:Storage"} <= kinds
    for r in rec.resources:
        if r.custom:
            assert r.parent_type.startswith("clusterctl:azure:"), (r.type, r.name)


def test_vm_count_and_size_per_group(rec, spec):
    for g in spec.groups:
        found = [r for r in rec.of_type(VM) if r.inputs["tags"]["group"] == g.name]
        assert len(found) == g.count
        assert {r.inputs["hardwareProfile"]["vmSize"] for r in found} == {g.instance_type}
        assert sorted(r.inputs["vmName"] for r in found) == sorted(g.hostnames)
    assert len(_vms(rec, "Standard_ND96isr_H100_v5")) == 32
    assert len(_vms(rec, "Standard_D32s_v5")) == 2


def test_gpu_vms_share_one_ppg_and_one_availability_set(rec):
    (ppg,) = rec.of_type("azure-native:compute:ProximityPlacementGroup")
    (avset,) = rec.of_type("azure-native:compute:AvailabilitySet")
    assert avset.inputs["proximityPlacementGroup"] == {"id": ppg.outputs["id"]}
    assert avset.inputs["sku"] == {"name": "Aligned"}
    assert ppg.inputs["intent"] == {"vmSizes": ["Standard_ND96isr_H100_v5"]}
    for vm in _vms(rec, "Standard_ND96isr_H100_v5"):
        assert vm.inputs["proximityPlacementGroup"] == {"id": ppg.outputs["id"]}
        assert vm.inputs["availabilitySet"] == {"id": avset.outputs["id"]}
        assert vm.inputs["storageProfile"]["imageReference"] == {
            "publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}


def test_availability_set_limit():
    assert azure.AVAILABILITY_SET_MAX_VMS == 200


def test_accelerated_networking_and_no_public_ip_on_gpu_vms(rec):
    nics = {r.outputs["id"]: r for r in rec.of_type(NIC)}
    for vm in rec.of_type(VM):
        (ref,) = vm.inputs["networkProfile"]["networkInterfaces"]
        nic = nics[ref["id"]]
        assert nic.inputs["enableAcceleratedNetworking"] is True
        has_public = any("publicIPAddress" in c for c in nic.inputs["ipConfigurations"])
        assert has_public == (vm.inputs["tags"]["role"] == "login"), vm.inputs["vmName"]


def test_disks_encrypted_at_host_and_ssh_keys_only(rec):
    for vm in rec.of_type(VM):
        assert vm.inputs["securityProfile"]["encryptionAtHost"] is True
        assert vm.inputs["storageProfile"]["osDisk"]["managedDisk"]["storageAccountType"] == "Premium_LRS"
        linux = vm.inputs["osProfile"]["linuxConfiguration"]
        assert linux["disablePasswordAuthentication"] is True
        assert linux["ssh"]["publicKeys"][0]["keyData"] == CONFIG["clusterctl:sshPublicKey"]


def test_nsg_only_ssh_from_admin_cidr(rec, spec):
    (nsg,) = rec.of_type("azure-native:network:NetworkSecurityGroup")
    allow_in = [r for r in nsg.inputs["securityRules"] if r["direction"] == "Inbound" and r["access"] == "Allow"]
    for r in allow_in:
        src = r["sourceAddressPrefix"]
        assert src not in ("*", "0.0.0.0/0", "Internet", "Any")
        if src != "VirtualNetwork":
            assert src == spec.admin_cidr
            assert (r["protocol"], r["destinationPortRange"]) == ("Tcp", "22")
    assert any(r["access"] == "Deny" and r["sourceAddressPrefix"] == "Internet" for r in nsg.inputs["securityRules"])
    subnets = {r.inputs["subnetName"]: r for r in rec.of_type("azure-native:network:Subnet")}
    for name in ("compute", "head"):
        assert subnets[name].inputs["networkSecurityGroup"] == {"id": nsg.outputs["id"]}


def test_vnet_avoids_infiniband_range(rec):
    (vnet,) = rec.of_type("azure-native:network:VirtualNetwork")
    for prefix in vnet.inputs["addressSpace"]["addressPrefixes"]:
        assert not ipaddress.ip_network(prefix).overlaps(ipaddress.ip_network("172.16.0.0/16"))


def test_amlfs_throughput_meets_the_tier(rec, spec):
    (tier,) = [t for t in spec.storage if t.tier == "parallel"]
    (fs,) = rec.of_type("azure-native:storagecache:AmlFilesystem")
    sku = fs.inputs["sku"]["name"]
    per_tib = int(sku.rsplit("-", 1)[1])
    tib = fs.inputs["storageCapacityTiB"]
    assert tib * per_tib / 1000 >= max(tier.read_gb_per_s, tier.write_gb_per_s)
    assert tib >= tier.capacity_tb * 1e12 / 2**40
    assert (sku, tib) == ("AMLFS-Durable-Premium-500", 128)


def test_amlfs_and_anf_size_rules():
    def size(of, tb, gbps):
        s = of(tb, gbps, gbps)
        return s.tier.name, s.capacity

    assert size(azure.amlfs_size, 140.7, 64) == ("AMLFS-Durable-Premium-500", 128)
    assert size(azure.amlfs_size, 10, 64) == ("AMLFS-Durable-Premium-500", 128)
    assert size(azure.amlfs_size, 500, 10) == ("AMLFS-Durable-Premium-40", 480)
    assert size(azure.anf_size, 8, 1) == ("Ultra", 8)
    assert size(azure.anf_size, 8, 0.1) == ("Standard", 8)


def _of_component(rec, token, component):
    return [r for r in rec.of_type(token) if r.parent_type == f"clusterctl:azure:{component}"]


def test_checkpoint_storage_account_is_locked_down(rec):
    (acct,) = _of_component(rec, "azure-native:storage:StorageAccount", "Storage")
    i = acct.inputs
    assert i["enableHttpsTrafficOnly"] is True
    assert i["minimumTlsVersion"] == "TLS1_2"
    assert i["allowBlobPublicAccess"] is False
    assert i["allowSharedKeyAccess"] is False
    assert i["encryption"]["requireInfrastructureEncryption"] is True
    assert i["networkRuleSet"]["defaultAction"] == "Deny"
    (blob,) = rec.of_type("azure-native:storage:BlobServiceProperties")
    assert blob.inputs["isVersioningEnabled"] is True
    (container,) = _of_component(rec, "azure-native:storage:BlobContainer", "Storage")
    assert container.inputs["publicAccess"] == "None"


def test_nfs_tier_on_netapp(rec, spec):
    (vol,) = rec.of_type("azure-native:netapp:CapacityPoolVolume")
    assert vol.inputs["protocolTypes"] == ["NFSv4.1"]
    assert vol.inputs["usageThreshold"] >= 8 * 1e12


def test_nodes_output_has_every_hostname(rec, spec):
    nodes = rec.outputs["nodes"]
    hosts = [h for g in spec.groups for h in g.hostnames]
    assert sorted(nodes) == sorted(hosts)
    ips = [nodes[h]["private_ip"] for h in hosts]
    assert len(set(ips)) == len(ips)
    for g in spec.groups:
        for h in g.hostnames:
            assert nodes[h]["group"] == g.name and nodes[h]["role"] == g.role
            assert nodes[h]["instance_type"] == g.instance_type


def test_ssh_public_key_is_required(spec):
    with pytest.raises(Exception, match="sshPublicKey"):
        run_program(spec, secrets=SECRETS)


def test_vnet_layout_fits_a_blueprint_pool():
    layout = azure.vnet_layout(ipaddress.ip_network("10.2.0.0/20"))
    assert {k: str(v) for k, v in layout.items()} == {"compute": "10.2.0.0/21", "head": "10.2.8.0/24",
                                                      "amlfs": "10.2.9.0/24", "anf": "10.2.10.0/24"}
    default = azure.vnet_layout(ipaddress.ip_network("10.20.0.0/16"))  # unchanged for existing stacks
    assert {k: str(v) for k, v in default.items()} == {"compute": "10.20.0.0/20", "head": "10.20.16.0/24",
                                                       "amlfs": "10.20.17.0/24", "anf": "10.20.18.0/24"}
    with pytest.raises(ValueError, match="smaller than a /22"):
        azure.vnet_layout(ipaddress.ip_network("10.2.0.0/23"))


def test_rendered_vnet_puts_every_node_in_the_blueprints_pool(spec):
    """With the rendered Pulumi.yaml's clusterctl:vnetCidr (the blueprint's addressing.vnet), the static
    addresses are the ones clusterctl inventory accepts."""
    rec = run_program(spec, config={**CONFIG, "clusterctl:vnetCidr": "10.2.0.0/20"}, secrets=SECRETS)
    pool = ipaddress.ip_network("10.2.0.0/20")
    ips = [ipaddress.ip_address(n["private_ip"]) for n in rec.outputs["nodes"].values()]
    assert len(ips) == 34 and all(ip in pool for ip in ips)


# --- munge key (issue 9, item 6): Key Vault, like AWS's SSM SecureString parameter

VAULT = "azure-native:keyvault:Vault"
SECRET = "azure-native:keyvault:Secret"


def test_munge_key_in_key_vault(rec, spec):
    (vault,) = rec.of_type(VAULT)
    (secret,) = rec.of_type(SECRET)
    assert vault.parent_type == secret.parent_type == "clusterctl:azure:MungeKey"
    props = vault.inputs["properties"]
    assert props["tenantId"] == TENANT and props["enableRbacAuthorization"] is True
    assert "accessPolicies" not in props
    assert props["networkAcls"]["defaultAction"] == "Deny"
    assert props["networkAcls"]["ipRules"] == [{"value": spec.admin_cidr}]
    assert vault.inputs["vaultName"] == "azure-nd-h100-v5-kv"
    assert secret.inputs["vaultName"] == "azure-nd-h100-v5-kv" and secret.inputs["secretName"] == "munge-key"
    assert is_secret(secret.inputs["properties"])
    assert reveal(secret.inputs["properties"])["value"] == SECRETS["clusterctl:mungeKey"]
    assert rec.outputs["key_vault"] == "azure-nd-h100-v5-kv" and rec.outputs["munge_key_secret"] == "munge-key"


def test_key_vault_admits_the_cluster_subnets(rec):
    (vault,) = rec.of_type(VAULT)
    subnets = {r.outputs["id"]: r.inputs["subnetName"] for r in rec.of_type("azure-native:network:Subnet")}
    rules = vault.inputs["properties"]["networkAcls"]["virtualNetworkRules"]
    assert sorted(subnets[r["id"]] for r in rules) == ["compute", "head"]
    for r in rec.of_type("azure-native:network:Subnet"):
        if r.inputs["subnetName"] in ("compute", "head"):
            assert {"service": "Microsoft.KeyVault"} in r.inputs["serviceEndpoints"]


def test_munge_key_value_in_no_plain_output_or_input(rec):
    key = SECRETS["clusterctl:mungeKey"]
    assert key not in str(rec.outputs) and key not in str(rec.component_outputs)
    for r in rec.resources:
        plain = {k: v for k, v in r.inputs.items() if not is_secret(v)}
        assert key not in str(plain), (r.type, r.name)


def test_munge_key_is_required(spec):
    with pytest.raises(Exception, match="mungeKey"):
        run_program(spec, config=CONFIG)


# --- issue 12: bootstrap custom data, identities, the config object, elastic groups

import base64  # noqa: E402
import dataclasses  # noqa: E402
import hashlib  # noqa: E402
import copy  # noqa: E402
import gzip  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import tarfile  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from clusterctl.cloud.stack import bundle, userdata  # noqa: E402
from tests.helpers import cli  # noqa: E402

BOOT_SECRETS = {**SECRETS, "clusterctl:slurmdbdPassword": "Zm9yLXRoZS1hY2NvdW50aW5nLWRiLW9ubHk"}
SUBSCRIPTION = "00000000-0000-0000-0000-000000000001"  # what tests/cloud/mocks answers getClientConfig with
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
CONFIG_URL = "https://azurendh100v5cfg.blob.core.windows.net/config/clusterctl/config.tar.gz"
MUNGE_URL = "https://azure-nd-h100-v5-kv.vault.azure.net/secrets/munge-key"
DBPASS_URL = "https://azure-nd-h100-v5-kv.vault.azure.net/secrets/slurmdbd-password"
# Azure built-in role definition GUIDs (learn.microsoft.com/azure/role-based-access-control/built-in-roles)
BLOB_READER, SECRETS_USER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", "4633458b-17de-408a-b874-0445c86b69e6"
VM_CONTRIBUTOR, NET_CONTRIBUTOR = "9980e02c-c2be-4d73-94e8-173b1dc7cf3c", "4d97b98b-1d4f-4787-a291-c67834d212e7"
IDENTITY_OPERATOR = "f1a07417-d97a-45cb-824c-7a7467783830"


def _render(blueprint: Path, out: Path) -> Path:
    proc = cli("render", str(blueprint), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _elastic_blueprint(tmp: Path) -> Path:
    doc = yaml.safe_load((BLUEPRINTS / "azure-nd-h100-v5.yaml").read_text())
    doc = copy.deepcopy(doc)
    (gpu,) = [g for g in doc["node_groups"] if g["name"] == "hpc"]
    gpu["cloud"] = {"elastic": True}
    path = tmp / "azure-elastic.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    """(spec, render dir, recorded program) of the shipped blueprint, rendered, run with its render."""
    out = _render(BLUEPRINTS / "azure-nd-h100-v5.yaml", tmp_path_factory.mktemp("render") / "out")
    spec = cloud_spec(validate_file(BLUEPRINTS / "azure-nd-h100-v5.yaml").plan)
    return spec, out, run_program(spec, config=CONFIG, secrets=BOOT_SECRETS, render_dir=out)


@pytest.fixture(scope="module")
def elastic(tmp_path_factory):
    """The same with the GPU group ``cloud: {elastic: true}``."""
    tmp = tmp_path_factory.mktemp("elastic")
    bp = _elastic_blueprint(tmp)
    out = _render(bp, tmp / "out")
    spec = cloud_spec(validate_file(bp).plan)
    assert [g.name for g in spec.groups if g.elastic] == ["hpc"]
    return spec, out, run_program(spec, config=CONFIG, secrets=BOOT_SECRETS, render_dir=out)


def _cloud_config(vm) -> dict:
    text = base64.b64decode(vm.inputs["osProfile"]["customData"]).decode()
    assert text.startswith("#cloud-config\n")
    assert len(text.encode()) <= 65535  # OSProfile.customData: "The maximum length of the binary array is 65535 bytes"
    return yaml.safe_load(text)


def _identity_of(rec, vm):
    assert vm.inputs["identity"]["type"] == "UserAssigned"
    (ident_id,) = vm.inputs["identity"]["userAssignedIdentities"]
    (ident,) = [r for r in rec.of_type(IDENTITY) if r.outputs["id"] == ident_id]
    return ident


def _expected_bootstrap(client_id: str, accounting: bool) -> dict:
    secrets = {"vault_munge_key": {"azure-keyvault": MUNGE_URL}}
    if accounting:
        secrets["vault_slurmdbd_storage_pass"] = {"azure-keyvault": DBPASS_URL}
    return {"version": 1, "provider": "azure", "region": "eastus", "config_url": CONFIG_URL, "secrets": secrets,
            "timeout_s": 1800, "identity": client_id}


def test_every_vm_boots_its_host_with_the_bootstrap(booted):
    spec, _out, rec = booted
    vms = rec.of_type(VM)
    assert len(vms) == 34
    for vm in vms:
        host = vm.inputs["vmName"]
        cc = _cloud_config(vm)
        assert (cc["hostname"], cc["fqdn"]) == (host, host)
        files = {f["path"]: f for f in cc["write_files"]}
        program = files[userdata.BOOTSTRAP_PROGRAM]
        assert gzip.decompress(base64.b64decode(program["content"])).decode() == userdata.program_text()
        assert program["permissions"] == "0755"
        settings = json.loads(files[userdata.BOOTSTRAP_CONFIG]["content"])
        client_id = _identity_of(rec, vm).outputs["clientId"]
        assert settings == {**_expected_bootstrap(client_id, host in ("scheduler01",)), "host": host}
        assert cc["runcmd"] == [[userdata.BOOTSTRAP_PROGRAM]]


def test_without_a_render_no_custom_data(rec):
    for vm in rec.of_type(VM):
        assert "customData" not in vm.inputs["osProfile"]
        assert vm.inputs["identity"]["type"] == "UserAssigned"
    assert not rec.of_type("azure-native:storage:Blob") and "stack" not in rec.outputs


ROLE_NAMES = {BLOB_READER: "Storage Blob Data Reader", SECRETS_USER: "Key Vault Secrets User",
              VM_CONTRIBUTOR: "Virtual Machine Contributor", NET_CONTRIBUTOR: "Network Contributor",
              IDENTITY_OPERATOR: "Managed Identity Operator"}
# What the identity of each role class may do, written out here (not computed by clusterctl): every node reads
# the config container and the munge key's secret; the accounting hosts (slurmdbd) alone the database password's;
# the Slurm controllers of a cluster with elastic groups alone create VMs and their NICs in the resource group
# and assign the compute identity (the one the elastic VMs run with) to them.
READS_CONFIG = ("Storage Blob Data Reader", "config container")  # the container, not the account
READS_MUNGE = ("Key Vault Secrets User", "secret munge-key")  # the one secret, not the vault
READS_DBPASS = ("Key Vault Secrets User", "secret slurmdbd-password")
MANAGES_VMS = ("Virtual Machine Contributor", "resource group")
MANAGES_NICS = ("Network Contributor", "resource group")
ASSIGNS_COMPUTE = ("Managed Identity Operator", "identity compute")
AZURE_GRANTS = {  # (role class, static or elastic cluster) -> the exact role assignments of its identity
    ("compute", "static"): {READS_CONFIG, READS_MUNGE},
    ("compute", "elastic"): {READS_CONFIG, READS_MUNGE},
    ("login", "static"): {READS_CONFIG, READS_MUNGE},
    ("login", "elastic"): {READS_CONFIG, READS_MUNGE},
    ("accounting", "static"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("accounting", "elastic"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("controller", "static"): {READS_CONFIG, READS_MUNGE},
    ("controller", "elastic"): {READS_CONFIG, READS_MUNGE, MANAGES_VMS, MANAGES_NICS, ASSIGNS_COMPUTE},
    ("controller-accounting", "static"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("controller-accounting", "elastic"): {READS_CONFIG, READS_MUNGE, READS_DBPASS, MANAGES_VMS, MANAGES_NICS,
                                           ASSIGNS_COMPUTE},
}


def _named_assignments(rec, cluster: str) -> dict[str, set[tuple[str, str]]]:
    """principal id -> {(role name, scope)} of every role assignment, the role by its built-in GUID (ROLE_NAMES)
    and the scope by what it is: the config container, a Key Vault secret, the resource group, an identity."""
    (container,) = _of_component(rec, "azure-native:storage:BlobContainer", "ConfigStore")
    (rg,) = rec.of_type("azure-native:resources:ResourceGroup")
    scopes = {container.outputs["id"]: "config container", rg.outputs["id"]: "resource group"}
    scopes |= {r.outputs["id"]: f"secret {r.inputs['secretName']}" for r in rec.of_type(SECRET)}
    scopes |= {r.outputs["id"]: f"identity {r.inputs['resourceName'].removeprefix(cluster + '-')}"
               for r in rec.of_type(IDENTITY)}
    prefix = f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
    out: dict[str, set] = {}
    for r in rec.of_type(ASSIGNMENT):
        assert r.inputs["principalType"] == "ServicePrincipal"
        role = r.inputs["roleDefinitionId"]
        role = ROLE_NAMES.get(role.removeprefix(prefix), role) if role.startswith(prefix) else role
        out.setdefault(r.inputs["principalId"], set()).add((role, scopes.get(r.inputs["scope"], r.inputs["scope"])))
    return out


def _check_identities(spec, rec, mode: str, expected: dict[str, tuple[str, list[str]]]):
    """expected: identity (``<cluster>-`` left off) -> (the role class of its hosts, its hosts)."""
    vms = {r.inputs["vmName"]: r for r in rec.of_type(VM)}
    idents = {r.inputs["resourceName"]: r for r in rec.of_type(IDENTITY)}
    assert sorted(idents) == sorted(f"{spec.cluster}-{name}" for name in expected)
    granted = _named_assignments(rec, spec.cluster)
    for name, (cls, hosts) in expected.items():
        ident = idents[f"{spec.cluster}-{name}"]
        for h in hosts:
            if h in vms:
                assert _identity_of(rec, vms[h]).urn == ident.urn, h
        assert granted.get(ident.outputs["principalId"], set()) == AZURE_GRANTS[(cls, mode)], name
    assert set(granted) <= {i.outputs["principalId"] for i in idents.values()}


def test_identity_per_role_class_with_exactly_its_table(booted):
    spec, _out, rec = booted
    assert (spec.controllers, spec.accounting) == (("scheduler01",), ("scheduler01",))
    _check_identities(spec, rec, "static", {"compute": ("compute", list(spec.groups[0].hostnames)),
                                            "controller-accounting": ("controller-accounting", ["scheduler01"]),
                                            "login": ("login", ["login01"])})
    assert len(rec.of_type(ASSIGNMENT)) == 7  # 3 x (config, munge key) + the controller's database password


def test_elastic_controllers_manage_vms_and_pass_only_the_compute_identity(elastic):
    spec, _out, rec = elastic
    _check_identities(spec, rec, "elastic", {"compute": ("compute", list(spec.groups[0].hostnames)),
                                             "controller-accounting": ("controller-accounting", ["scheduler01"]),
                                             "login": ("login", ["login01"])})
    ops = [r for r in rec.of_type(ASSIGNMENT) if r.inputs["roleDefinitionId"].endswith(IDENTITY_OPERATOR)]
    assert len(ops) == 1  # on the compute identity only, held by the controller identity only


@pytest.mark.parametrize("mode", ["static", "elastic"])
def test_every_role_class_is_granted_exactly_its_table(spec, mode):
    """A host of every role class: the GPU group (elastic or not), scheduler01 slurmctld, scheduler02 slurmctld
    and slurmdbd, scheduler03 slurmdbd, login01 a login node."""
    hpc, head, login = spec.groups
    every = dataclasses.replace(
        spec, groups=(dataclasses.replace(hpc, elastic=mode == "elastic"),
                      dataclasses.replace(head, count=3, hostnames=("scheduler01", "scheduler02", "scheduler03")),
                      login),
        controllers=("scheduler01", "scheduler02"), accounting=("scheduler02", "scheduler03"))
    rec = run_program(every, config=CONFIG, secrets=BOOT_SECRETS)
    _check_identities(every, rec, mode, {"compute": ("compute", list(hpc.hostnames)),
                                         "login": ("login", ["login01"]),
                                         "controller": ("controller", ["scheduler01"]),
                                         "controller-accounting": ("controller-accounting", ["scheduler02"]),
                                         "accounting": ("accounting", ["scheduler03"])})


def test_accounting_hosts_do_not_share_an_identity_with_hosts_that_must_not_read_the_password(spec):
    two = dataclasses.replace(spec, controllers=("scheduler01", "login01"), accounting=("scheduler01",))
    assert {c: m.hosts for c, m in identity_classes(two).items()} == {
        "compute": spec.groups[0].hostnames, "controller-accounting": ("scheduler01",), "controller": ("login01",)}
    apart = dataclasses.replace(spec, controllers=("scheduler01",), accounting=("login01",))
    assert identity_classes(apart)["accounting"].hosts == ("login01",)
    assert identity_classes(apart)["controller"].hosts == ("scheduler01",)


def _blob_bytes(rec) -> bytes:
    (blob,) = rec.of_type("azure-native:storage:Blob")
    return Path(blob.inputs["source"].path).read_bytes()


def _expected_stack(rec, elastic: dict) -> dict:
    (compute,) = [r for r in rec.of_type(IDENTITY) if r.inputs["resourceName"].endswith("-compute")]
    boot = _expected_bootstrap(compute.outputs["clientId"], False)
    return {"version": 1, "cluster": "azure-nd-h100-v5", "provider": "azure", "region": "eastus", "zone": "1",
            "bootstrap": boot, "elastic": elastic}


def test_config_object_is_the_bundle_of_the_render(booted):
    _spec, out, rec = booted
    (blob,) = rec.of_type("azure-native:storage:Blob")
    (container,) = _of_component(rec, "azure-native:storage:BlobContainer", "ConfigStore")
    (account,) = _of_component(rec, "azure-native:storage:StorageAccount", "ConfigStore")
    assert blob.inputs["blobName"] == bundle.OBJECT_KEY and blob.inputs["type"] == "Block"
    assert blob.inputs["containerName"] == container.outputs["name"]
    assert container.inputs["containerName"] == "config" and container.inputs["publicAccess"] == "None"
    assert account.inputs["accountName"] == "azurendh100v5cfg" and account.inputs["allowBlobPublicAccess"] is False
    assert account.inputs["networkRuleSet"]["defaultAction"] == "Deny"
    stack = _expected_stack(rec, {})
    data = _blob_bytes(rec)
    assert data == bundle.config_bundle(out, stack)
    assert json.loads(_tar_texts(data)[bundle.STACK_FILE]) == stack
    assert {"ansible/site.yml", "slurm/slurm.conf"} <= set(_tar_texts(data))
    assert blob.inputs["contentMd5"] == base64.b64encode(hashlib.md5(data).digest()).decode()
    assert rec.outputs["stack"] == stack and rec.outputs["config_url"] == CONFIG_URL


def _tar_texts(data: bytes) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read().decode(errors="replace") for m in tar.getmembers() if m.isfile()}


@pytest.mark.parametrize("which", ["booted", "elastic"])
def test_no_secret_in_any_input_output_custom_data_or_object(which, request):
    _spec, _out, rec = request.getfixturevalue(which)
    values = [SECRETS["clusterctl:mungeKey"], BOOT_SECRETS["clusterctl:slurmdbdPassword"]]
    texts = [str(rec.outputs), str(rec.component_outputs)]
    for r in rec.resources:
        texts.append(str({k: v for k, v in r.inputs.items() if not is_secret(v)}))
    texts += [base64.b64decode(vm.inputs["osProfile"]["customData"]).decode() for vm in rec.of_type(VM)]
    texts += list(_tar_texts(_blob_bytes(rec)).values())
    for value in values:
        assert not any(value in t for t in texts)
    secrets = {r.inputs["secretName"]: r for r in rec.of_type(SECRET)}
    assert is_secret(secrets["slurmdbd-password"].inputs["properties"])
    assert reveal(secrets["slurmdbd-password"].inputs["properties"])["value"] == values[1]


def test_elastic_group_has_no_vms_and_its_stack_entry(elastic):
    spec, out, rec = elastic
    assert not [r for r in rec.of_type(VM) if r.inputs["tags"]["group"] == "hpc"]
    assert sorted(r.inputs["vmName"] for r in rec.of_type(VM)) == ["login01", "scheduler01"]
    assert sorted(rec.outputs["nodes"]) == ["login01", "scheduler01"]
    (ppg,) = rec.of_type("azure-native:compute:ProximityPlacementGroup")
    (avset,) = rec.of_type("azure-native:compute:AvailabilitySet")
    subnets = {r.inputs["subnetName"]: r.outputs["id"] for r in rec.of_type("azure-native:network:Subnet")}
    (compute,) = [r for r in rec.of_type(IDENTITY) if r.inputs["resourceName"].endswith("-compute")]
    entry = {"hostlist": "ndv5-[001-032]", "instance_type": "Standard_ND96isr_H100_v5", "azure": {
        "subscription_id": SUBSCRIPTION, "resource_group": "azure-nd-h100-v5-rg", "location": "eastus",
        "vm_size": "Standard_ND96isr_H100_v5", "image": "microsoft-dsvm:ubuntu-hpc:2204:latest",
        "subnet_id": subnets["compute"], "availability_set_id": avset.outputs["id"],
        "proximity_placement_group_id": ppg.outputs["id"], "identity_id": compute.outputs["id"],
        "admin_username": "azureuser", "ssh_public_key": CONFIG["clusterctl:sshPublicKey"], "os_disk_gb": 256}}
    stack = _expected_stack(rec, {"hpc": entry})
    assert rec.outputs["stack"] == stack
    data = _blob_bytes(rec)
    assert data == bundle.config_bundle(out, stack)
    assert json.loads(_tar_texts(data)[bundle.STACK_FILE]) == stack


def test_custom_data_is_ignored_after_creation(booted, monkeypatch):
    """Azure refuses a changed customData on an existing VM and cloud-init reads it at first boot only: the VMs
    ignore changes to it (a new bootstrap program does not replace every VM)."""
    spec, out, _rec = booted
    seen = {}
    init = azure.az.compute.VirtualMachine.__init__

    def recording(self, name, *args, **kwargs):
        seen[kwargs["vm_name"]] = kwargs["opts"].ignore_changes
        init(self, name, *args, **kwargs)

    monkeypatch.setattr(azure.az.compute.VirtualMachine, "__init__", recording)
    run_program(spec, config=CONFIG, secrets=BOOT_SECRETS, render_dir=out)
    assert len(seen) == 34 and set(map(tuple, seen.values())) == {("osProfile.customData",)}


def test_slurmdbd_password_is_required_with_a_render(booted):
    spec, out, _rec = booted
    with pytest.raises(Exception, match="slurmdbdPassword"):
        run_program(spec, config=CONFIG, secrets=SECRETS, render_dir=out)
