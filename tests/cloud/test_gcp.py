"""clusterctl.cloud.gcp under pulumi mocks: the gcp-a3-mega blueprint and an A3 Ultra variant."""

from __future__ import annotations

import ipaddress

import pytest

from clusterctl.cloud import gcp
from clusterctl.cloud.spec import cloud_spec
from clusterctl.validate import validate_file
from tests.cloud.mocks import is_secret, reveal, run_program
from tests.helpers import BLUEPRINTS, plan_of, shipped

INSTANCE = "gcp:compute/instance:Instance"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
CONFIG = {"gcp:project": "research-proj"}
SECRETS = {"clusterctl:mungeKey": "Z2NwLW11bmdlLWtleS1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5",
           "clusterctl:slurmdbdPassword": "gcpDbdPassForTestsOnly7Q2x"}


@pytest.fixture(scope="module")
def mega_spec():
    return cloud_spec(validate_file(BLUEPRINTS / "gcp-a3-mega.yaml").plan)


@pytest.fixture(scope="module")
def mega(mega_spec):
    return run_program(mega_spec, config=CONFIG, secrets=SECRETS)


@pytest.fixture(scope="module")
def ultra_spec():
    data = shipped("gcp-a3-mega")
    data["node_types"]["a3mega"]["instance"] = "a3-ultragpu-8g"
    return cloud_spec(plan_of(data))


@pytest.fixture(scope="module")
def ultra(ultra_spec):
    return run_program(ultra_spec, config=CONFIG, secrets=SECRETS)


def _instances(rec, machine_type):
    return [r for r in rec.of_type(INSTANCE) if r.inputs["machineType"] == machine_type]


def _by_id(rec, token):
    return {r.outputs["id"]: r for r in rec.of_type(token)}


def test_components_and_type_tokens(mega):
    assert mega.root.type == "clusterctl:gcp:Cluster"
    kinds = {r.type for r in mega.children(mega.root)}
    assert {"clusterctl:gcp:Network", "clusterctl:gcp:GpuNodeGroup", "clusterctl:gcp:HeadNodes",
            "clusterctl:gcp:Storage"} <= kinds
    # every custom resource sits under one of our components
    for r in mega.resources:
        if r.custom:
            assert r.parent_type.startswith("clusterctl:gcp:"), (r.type, r.name)


def test_instance_count_and_type_per_group(mega, mega_spec):
    for g in mega_spec.groups:
        found = [r for r in mega.of_type(INSTANCE) if r.inputs["labels"]["group"] == g.name]
        assert len(found) == g.count
        assert {r.inputs["machineType"] for r in found} == {g.instance_type}
        assert sorted(r.inputs["name"] for r in found) == sorted(g.hostnames)
    assert len(_instances(mega, "a3-megagpu-8g")) == 32
    assert len(_instances(mega, "n2-standard-32")) == 2


def test_a3_mega_eight_gpu_nics_on_eight_distinct_networks(mega):
    subnets = _by_id(mega, SUBNET)
    assert len(mega.of_type(NETWORK)) == 9  # primary + one VPC per GPU NIC
    primary = mega.named("gcp-a3-mega-network-primary")
    for inst in _instances(mega, "a3-megagpu-8g"):
        nics = inst.inputs["networkInterfaces"]
        assert len(nics) == 9
        assert subnets[nics[0]["subnetwork"]].inputs["network"] == primary.outputs["id"]
        gpu_networks = {subnets[n["subnetwork"]].inputs["network"] for n in nics[1:]}
        assert len(gpu_networks) == 8 and primary.outputs["id"] not in gpu_networks
        assert {n["nicType"] for n in nics} == {"GVNIC"}
        assert all("accessConfigs" not in n for n in nics)


def test_compact_placement_and_reservation_on_every_gpu_instance(mega, mega_spec):
    (policy,) = mega.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"]["collocation"] == "COLLOCATED"
    for inst in _instances(mega, "a3-megagpu-8g"):
        assert inst.inputs["resourcePolicies"] == policy.outputs["selfLink"]
        affinity = inst.inputs["reservationAffinity"]
        assert affinity["type"] == "SPECIFIC_RESERVATION"
        assert affinity["specificReservation"] == {"key": "compute.googleapis.com/reservation-name",
                                                   "values": [mega_spec.reservation]}
        assert inst.inputs["scheduling"]["onHostMaintenance"] == "TERMINATE"
        assert inst.inputs["zone"] == "us-central1-a"


def test_shielded_vm_and_boot_disks(mega):
    for inst in mega.of_type(INSTANCE):
        assert inst.inputs["shieldedInstanceConfig"] == {
            "enableSecureBoot": True, "enableVtpm": True, "enableIntegrityMonitoring": True}
        assert inst.inputs["bootDisk"]["autoDelete"] is True


def test_only_login_nodes_have_external_ips(mega):
    for inst in mega.of_type(INSTANCE):
        external = any("accessConfigs" in n for n in inst.inputs["networkInterfaces"])
        assert external == (inst.inputs["labels"]["role"] == "login"), inst.inputs["name"]


def test_no_ingress_from_anywhere_and_ssh_only_from_admin_cidr(mega, mega_spec):
    rules = mega.of_type(FIREWALL)
    assert rules
    admin = ipaddress.ip_network(mega_spec.admin_cidr)
    for fw in rules:
        assert fw.inputs["direction"] == "INGRESS"
        for src in fw.inputs["sourceRanges"]:
            net = ipaddress.ip_network(src)
            assert net.prefixlen > 0, fw.name
            if not net.is_private:
                # the only non-internal source is the admin range, and it only gets SSH
                assert net == admin
                assert fw.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    ssh = [fw for fw in rules if fw.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]]
    assert [fw.inputs["sourceRanges"] for fw in ssh] == [[mega_spec.admin_cidr]]


def test_admin_cidr_config_override(mega_spec):
    rec = run_program(mega_spec, config={**CONFIG, "clusterctl:adminCidr": "203.0.113.7/32"}, secrets=SECRETS)
    ssh = [fw for fw in rec.of_type(FIREWALL) if fw.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]]
    assert ssh[0].inputs["sourceRanges"] == ["203.0.113.7/32"]


def test_lustre_sized_for_bandwidth_and_capacity(mega, mega_spec):
    (tier,) = [t for t in mega_spec.storage if t.tier == "parallel"]
    (lustre,) = mega.of_type("gcp:lustre/instance:Instance")
    gib = int(lustre.inputs["capacityGib"])
    per_tib = int(lustre.inputs["perUnitStorageThroughput"])
    assert gib / 1024 * per_tib / 1000 >= max(tier.read_gb_per_s, tier.write_gb_per_s)
    assert gib >= tier.capacity_tb * 1e12 / 2**30
    assert (per_tib, gib) == (500, 162_000)
    assert lustre.inputs["location"] == "us-central1-a"


def test_lustre_size_rules():
    assert gcp.lustre_size(158.3, 72) == gcp.LustreSize(500, 162_000)
    # little data, much bandwidth: the fastest tier sized for the bandwidth
    assert gcp.lustre_size(10, 72) == gcp.LustreSize(1000, 81_000)
    # much data, little bandwidth: the cheapest tier
    assert gcp.lustre_size(500, 10) == gcp.LustreSize(125, 504_000)


def test_filestore_for_nfs_tier(mega):
    (fs,) = mega.of_type("gcp:filestore/instance:Instance")
    assert fs.inputs["fileShares"]["capacityGb"] >= 10 * 1e12 / 2**30
    assert fs.inputs["networks"][0]["connectMode"] == "PRIVATE_SERVICE_ACCESS"


def test_checkpoint_bucket_is_private_and_versioned(mega):
    (bucket,) = [b for b in mega.of_type("gcp:storage/bucket:Bucket") if b.inputs["labels"]["purpose"] == "checkpoints"]
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["publicAccessPrevention"] == "enforced"
    assert bucket.inputs["versioning"] == {"enabled": True}


def test_labels_follow_gcp_rules(mega):
    import re
    for r in mega.resources:
        for k, v in (r.inputs.get("labels") or {}).items():
            assert re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", k), k
            assert re.fullmatch(r"[a-z0-9_-]{0,63}", v), v
    assert gcp.label_key("clusterctl:cluster") == "clusterctl_cluster"
    assert gcp.label_value("GCP-A3:Mega") == "gcp-a3_mega"


def test_nodes_output_has_every_hostname(mega, mega_spec):
    nodes = mega.outputs["nodes"]
    hosts = [h for g in mega_spec.groups for h in g.hostnames]
    assert sorted(nodes) == sorted(hosts)
    for g in mega_spec.groups:
        for h in g.hostnames:
            assert nodes[h]["group"] == g.name and nodes[h]["role"] == g.role
            assert nodes[h]["instance_type"] == g.instance_type
            ipaddress.ip_address(nodes[h]["private_ip"])


def test_a3_ultra_one_rdma_vpc_with_eight_subnets(ultra, ultra_spec):
    rdma = [n for n in ultra.of_type(NETWORK) if n.inputs.get("networkProfile")]
    assert len(rdma) == 1
    assert rdma[0].inputs["networkProfile"] == \
        "projects/research-proj/global/networkProfiles/us-central1-a-vpc-roce"
    rdma_subnets = [s for s in ultra.of_type(SUBNET) if s.inputs["network"] == rdma[0].outputs["id"]]
    assert len(rdma_subnets) == 8
    subnets = _by_id(ultra, SUBNET)
    gpus = _instances(ultra, "a3-ultragpu-8g")
    assert len(gpus) == 32
    for inst in gpus:
        nics = inst.inputs["networkInterfaces"]
        mrdma = [n for n in nics if n.get("nicType") == "MRDMA"]
        assert len(mrdma) == 8
        assert {subnets[n["subnetwork"]].inputs["network"] for n in mrdma} == {rdma[0].outputs["id"]}
        assert len({n["subnetwork"] for n in mrdma}) == 8
        assert all(n["nicType"] == "GVNIC" for n in nics if n not in mrdma)
    # no VPC firewall rules on the RoCE network (it has its own implicit rules)
    assert all(fw.inputs["network"] != rdma[0].outputs["id"] for fw in ultra.of_type(FIREWALL))


# --- munge key (issue 9, item 6): Secret Manager, like AWS's SSM SecureString parameter

SECRET = "gcp:secretmanager/secret:Secret"
VERSION = "gcp:secretmanager/secretVersion:SecretVersion"
READER = "gcp:secretmanager/secretIamMember:SecretIamMember"
ACCOUNT = "gcp:serviceaccount/account:Account"


def _secret(rec, component):
    (secret,) = [s for s in rec.of_type(SECRET) if s.parent_type == f"clusterctl:gcp:{component}"]
    return secret


def test_munge_key_in_secret_manager_replicated_in_the_region(mega, mega_spec):
    secret = _secret(mega, "MungeKey")
    assert secret.parent_type == "clusterctl:gcp:MungeKey"
    assert secret.inputs["secretId"] == "gcp-a3-mega-munge-key"
    assert secret.inputs["replication"] == {"userManaged": {"replicas": [{"location": mega_spec.region}]}}
    (version,) = [v for v in mega.of_type(VERSION) if v.inputs["secret"] == secret.outputs["id"]]
    assert is_secret(version.inputs["secretData"])
    assert reveal(version.inputs["secretData"]) == SECRETS["clusterctl:mungeKey"]
    assert mega.outputs["munge_key_secret"] == "gcp-a3-mega-munge-key"
    # only the cluster's own service accounts read it (tests below: which ones)
    accounts = {f"serviceAccount:{a.outputs['email']}" for a in mega.of_type(ACCOUNT)}
    readers = [r for r in mega.of_type(READER) if r.inputs["secretId"] == secret.outputs["id"]]
    assert readers and {r.inputs["member"] for r in readers} <= accounts


def test_munge_key_value_in_no_plain_output_or_input(mega):
    key = SECRETS["clusterctl:mungeKey"]
    assert key not in str(mega.outputs) and key not in str(mega.component_outputs)
    for r in mega.resources:
        plain = {k: v for k, v in r.inputs.items() if not is_secret(v)}
        assert key not in str(plain), (r.type, r.name)


def test_munge_key_readable_by_the_nodes_service_account_and_cmek(mega_spec):
    sa = "nodes@research-proj.iam.gserviceaccount.com"
    kms = "projects/research-proj/locations/us-central1/keyRings/r/cryptoKeys/k"
    rec = run_program(mega_spec, config={**CONFIG, "clusterctl:serviceAccount": sa, "clusterctl:kmsKey": kms},
                      secrets=SECRETS)
    # serviceAccount is every node's identity: no account is created, it reads both secrets
    assert rec.of_type(ACCOUNT) == []
    for component in ("MungeKey", "SlurmdbdPassword"):
        secret = _secret(rec, component)
        (reader,) = [r for r in rec.of_type(READER) if r.inputs["secretId"] == secret.outputs["id"]]
        assert reader.inputs == {**reader.inputs, "member": f"serviceAccount:{sa}",
                                 "role": "roles/secretmanager.secretAccessor"}
        (replica,) = secret.inputs["replication"]["userManaged"]["replicas"]
        assert replica["customerManagedEncryption"] == {"kmsKeyName": kms}
    assert {i.inputs["serviceAccount"]["email"] for i in rec.of_type(INSTANCE)} == {sa}


def test_munge_key_is_required(mega_spec):
    with pytest.raises(Exception, match="mungeKey"):
        run_program(mega_spec, config=CONFIG)
