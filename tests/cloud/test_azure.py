"""clusterctl.cloud.azure under pulumi mocks: the azure-nd-h100-v5 blueprint."""

from __future__ import annotations

import ipaddress

import pytest

from clusterctl.cloud import azure
from clusterctl.cloud.spec import cloud_spec
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
    assert azure.amlfs_size(140.7, 64) == azure.AmlfsSize(500, 128)
    assert azure.amlfs_size(10, 64) == azure.AmlfsSize(500, 128)
    assert azure.amlfs_size(500, 10) == azure.AmlfsSize(40, 480)
    assert azure.anf_size(8, 1) == ("Ultra", 8)
    assert azure.anf_size(8, 0.1) == ("Standard", 8)


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
