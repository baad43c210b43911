"""clusterctl.cloud.pulumi.gcp under pulumi mocks: the gcp-a3-mega blueprint and an A3 Ultra variant."""

from __future__ import annotations

import dataclasses
import gzip
import io
import ipaddress
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from clusterctl.cloud.pulumi import gcp, gcp_names
from clusterctl.cloud.stack import bundle, userdata
from clusterctl.cloud.stack.identity import IdentityClass
from clusterctl.cloud.stack.spec import CloudSpec, cloud_spec
from clusterctl.validate import validate_file
from tests.cloud.mocks import is_secret, reveal, run_program
from tests.helpers import BLUEPRINTS, REPO, plan_of, shipped, to_yaml

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
    def size(tb, gbps):
        s = gcp.lustre_size(tb, gbps, gbps)
        return s.tier.throughput_per_tib, s.capacity

    assert size(158.3, 72) == (500, 162_000)
    # little data, much bandwidth: the fastest tier sized for the bandwidth
    assert size(10, 72) == (1000, 81_000)
    # much data, little bandwidth: the cheapest tier
    assert size(500, 10) == (125, 504_000)


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
    assert gcp_names.label_key("clusterctl:cluster") == "clusterctl_cluster"
    assert gcp_names.label_value("GCP-A3:Mega") == "gcp-a3_mega"


def test_nodes_output_has_every_hostname(mega, mega_spec):
    # each host's entry is its own instance's (the mock only answers the address the cloud would give it)
    nodes = mega.outputs["nodes"]
    instances = {r.inputs["name"]: r for r in mega.of_type(INSTANCE)}
    hosts = [h for g in mega_spec.groups for h in g.hostnames]
    assert sorted(nodes) == sorted(hosts) == sorted(instances)
    for g in mega_spec.groups:
        for h in g.hostnames:
            assert instances[h].inputs["machineType"] == g.instance_type
            assert nodes[h] == {"private_ip": instances[h].outputs["networkInterfaces"][0]["networkIp"],
                                "group": g.name, "role": g.role, "instance_type": g.instance_type}


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


# --- issue 12: bootstrap user data, one identity per role, the config object, elastic groups -------------
# The shipped blueprint is rendered with the real CLI and the program runs with that render (render_dir), as
# `clusterctl.cloud.pulumi.program.run` does for OUT/pulumi/cluster.json.

ACCOUNT_USER = "gcp:serviceaccount/iAMMember:IAMMember"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
OBJECT = "gcp:storage/bucketObject:BucketObject"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
SSH = {"clusterctl:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGNwdGVzdGtleQ ops@example"}


def _render(tmp_path_factory, data: dict, name: str) -> Path:
    d = tmp_path_factory.mktemp(name)
    bp = d / f"{name}.yaml"
    bp.write_text(to_yaml(data))
    subprocess.run([sys.executable, "-m", "clusterctl", "render", str(bp), "-o", str(d / "out")], cwd=REPO,
                   check=True, capture_output=True)
    return d / "out"


def _run_render(out: Path):
    spec = CloudSpec.from_json((out / "pulumi" / "cluster.json").read_text())
    return spec, run_program(spec, config={**CONFIG, **SSH}, secrets=SECRETS, render_dir=out)


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    out = _render(tmp_path_factory, shipped("gcp-a3-mega"), "gcp-a3-mega")
    return (out, *_run_render(out))


@pytest.fixture(scope="module")
def elastic(tmp_path_factory):
    data = shipped("gcp-a3-mega")
    data["node_groups"][0]["cloud"] = {"elastic": True}
    out = _render(tmp_path_factory, data, "gcp-a3-mega-elastic")
    return (out, *_run_render(out))


def _config_bucket(rec):
    (bucket,) = [b for b in rec.of_type("gcp:storage/bucket:Bucket") if b.inputs["labels"]["purpose"] == "config"]
    return bucket


def _secret_names(rec):
    return {c: f"projects/{CONFIG['gcp:project']}/secrets/{_secret(rec, c).inputs['secretId']}"
            for c in ("MungeKey", "SlurmdbdPassword")}


def _expected_bootstrap(rec, spec, accounting: bool) -> dict:
    names = _secret_names(rec)
    secrets = {"vault_munge_key": {"gcp-secret": names["MungeKey"]}}
    if accounting:
        secrets["vault_slurmdbd_storage_pass"] = {"gcp-secret": names["SlurmdbdPassword"]}
    url = f"gs://{_config_bucket(rec).outputs['name']}/clusterctl/config.tar.gz"
    return userdata.bootstrap_config("gcp", region=spec.region, config_url=url, secrets=secrets)


def _object_bytes(rec) -> bytes:
    (obj,) = rec.of_type(OBJECT)
    return Path(obj.inputs["source"].path).read_bytes()


def test_every_instance_boots_with_its_host_name_and_the_bootstrap(booted):
    _, spec, rec = booted
    instances = rec.of_type(INSTANCE)
    assert len(instances) == 34  # 32 GPU + controller + login
    for inst in instances:
        host = inst.inputs["name"]
        meta = inst.inputs["metadata"]
        # the SSH metadata stays as before, user-data comes next to it
        assert {k: v for k, v in meta.items() if k != "user-data"} == {
            "enable-oslogin": "FALSE", "ssh-keys": f"clusterctl:{SSH['clusterctl:sshPublicKey']}",
            "block-project-ssh-keys": "TRUE"}
        expected = _expected_bootstrap(rec, spec, accounting=host in spec.accounting)
        assert meta["user-data"] == userdata.user_data("gcp", host, expected)
        cfg = yaml.safe_load(meta["user-data"])
        assert cfg["hostname"] == cfg["fqdn"] == host
        (settings,) = [f for f in cfg["write_files"] if f["path"] == userdata.BOOTSTRAP_CONFIG]
        assert json.loads(settings["content"]) == {**expected, "host": host}
        assert cfg["runcmd"] == [[userdata.BOOTSTRAP_PROGRAM]]
    assert spec.accounting == ("ctl01",)


def _bindings(rec) -> dict[str, set[tuple[str, str, str]]]:
    """member -> {(kind, on what, role)} of every IAM grant the program makes"""
    out: dict[str, set] = {}
    for token, kind, key in ((BUCKET_MEMBER, "bucket", "bucket"), (READER, "secret", "secretId"),
                             (PROJECT_MEMBER, "project", "project"),
                             (ACCOUNT_USER, "service-account", "serviceAccountId")):
        for r in rec.of_type(token):
            out.setdefault(r.inputs["member"], set()).add((kind, r.inputs[key], r.inputs["role"]))
    return out


def _named_bindings(rec) -> dict[str, set[tuple[str, str, str]]]:
    """_bindings with each target and custom role by its name: a bucket by its purpose label, a secret by its
    secretId, a service account by its accountId, a custom role by its roleId (others as they are)."""
    names = {b.outputs["name"]: b.inputs["labels"]["purpose"] for b in rec.of_type("gcp:storage/bucket:Bucket")}
    names |= {s.outputs["id"]: s.inputs["secretId"] for s in rec.of_type(SECRET)}
    names |= {a.outputs["name"]: a.inputs["accountId"] for a in rec.of_type(ACCOUNT)}
    names |= {c.outputs["name"]: c.inputs["roleId"] for c in rec.of_type(CUSTOM_ROLE)}
    return {member: {(kind, names.get(on, on), names.get(role, role)) for kind, on, role in grants}
            for member, grants in _bindings(rec).items()}


# What the service account of each role class may do, written out here (not computed by clusterctl): every node
# reads the config bucket and the munge key's secret; the accounting hosts (slurmdbd) alone the database
# password's; the Slurm controllers of a cluster with elastic groups alone hold the power-save custom role
# (conditioned to the elastic instances) and act as the compute account (the one the elastic instances run as).
READS_CONFIG = ("bucket", "config", "roles/storage.objectViewer")  # on the config bucket, not the project
READS_MUNGE = ("secret", "gcp-a3-mega-munge-key", "roles/secretmanager.secretAccessor")
READS_DBPASS = ("secret", "gcp-a3-mega-slurmdbd-password", "roles/secretmanager.secretAccessor")
POWER_SAVE = ("project", "research-proj", "clusterctl_gcp_a3_mega_power_save")
ACTS_AS_COMPUTE = ("service-account", "gcp-a3-mega-compute", "roles/iam.serviceAccountUser")
GCP_BINDINGS = {  # (role class, static or elastic cluster) -> the exact IAM bindings of its service account
    ("compute", "static"): {READS_CONFIG, READS_MUNGE},
    ("compute", "elastic"): {READS_CONFIG, READS_MUNGE},
    ("login", "static"): {READS_CONFIG, READS_MUNGE},
    ("login", "elastic"): {READS_CONFIG, READS_MUNGE},
    ("accounting", "static"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("accounting", "elastic"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("controller", "static"): {READS_CONFIG, READS_MUNGE},
    ("controller", "elastic"): {READS_CONFIG, READS_MUNGE, POWER_SAVE, ACTS_AS_COMPUTE},
    ("controller-accounting", "static"): {READS_CONFIG, READS_MUNGE, READS_DBPASS},
    ("controller-accounting", "elastic"): {READS_CONFIG, READS_MUNGE, READS_DBPASS, POWER_SAVE, ACTS_AS_COMPUTE},
}
POWER_SAVE_PERMISSIONS = [  # the custom role: create a VM from an instance template, delete it, wait on it
    "compute.disks.create", "compute.disks.setLabels", "compute.images.useReadOnly",
    "compute.instanceTemplates.useReadOnly", "compute.instances.create", "compute.instances.delete",
    "compute.instances.get", "compute.instances.list", "compute.instances.setLabels",
    "compute.instances.setMetadata", "compute.instances.setServiceAccount", "compute.instances.setTags",
    "compute.resourcePolicies.use", "compute.subnetworks.use", "compute.zoneOperations.get"]
SHIPPED_CLASSES = {"gcp-a3-mega-compute": "compute", "gcp-a3-m-controller-accounting": "controller-accounting",
                   "gcp-a3-mega-login": "login"}
"""service account id of gcp-a3-mega -> identity class (ctl01 runs slurmctld and slurmdbd; the cluster part of
an id is shortened to fit 30 characters)"""


def test_one_service_account_per_role_with_exactly_what_it_needs(booted):
    _, spec, rec = booted
    accounts = {a.inputs["accountId"]: a for a in rec.of_type(ACCOUNT)}
    assert sorted(accounts) == ["gcp-a3-m-controller-accounting", "gcp-a3-mega-compute", "gcp-a3-mega-login"]
    account_of = {"a3mega": "gcp-a3-mega-compute", "controller": "gcp-a3-m-controller-accounting",
                  "login": "gcp-a3-mega-login"}
    for inst in rec.of_type(INSTANCE):
        account = account_of[inst.inputs["labels"]["group"]]
        assert inst.inputs["serviceAccount"] == {
            "email": accounts[account].outputs["email"], "scopes": ["cloud-platform"]}
    granted = _named_bindings(rec)
    assert set(granted) == {f"serviceAccount:{a.outputs['email']}" for a in accounts.values()}
    for account_id, account in accounts.items():
        cls = SHIPPED_CLASSES[account_id]
        assert granted[f"serviceAccount:{account.outputs['email']}"] == GCP_BINDINGS[(cls, "static")], cls
    # nothing project-wide without elastic groups
    assert rec.of_type(PROJECT_MEMBER) == [] and rec.of_type(CUSTOM_ROLE) == []


def test_the_database_password_is_a_second_secret_only_the_accounting_host_reads(booted):
    _, spec, rec = booted
    munge, dbd = _secret(rec, "MungeKey"), _secret(rec, "SlurmdbdPassword")
    assert dbd.inputs["secretId"] == "gcp-a3-mega-slurmdbd-password"
    assert dbd.inputs["replication"] == munge.inputs["replication"]
    (version,) = [v for v in rec.of_type(VERSION) if v.inputs["secret"] == dbd.outputs["id"]]
    assert reveal(version.inputs["secretData"]) == SECRETS["clusterctl:slurmdbdPassword"]
    assert is_secret(version.inputs["secretData"])
    readers = [r.inputs["member"] for r in rec.of_type(READER) if r.inputs["secretId"] == dbd.outputs["id"]]
    assert readers == ["serviceAccount:gcp-a3-m-controller-accounting@p.iam.gserviceaccount.com"]
    assert rec.outputs["slurmdbd_password_secret"] == "gcp-a3-mega-slurmdbd-password"


def test_config_object_is_the_bundle_of_the_render(booted):
    out, spec, rec = booted
    bucket = _config_bucket(rec)
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["publicAccessPrevention"] == "enforced"
    (obj,) = rec.of_type(OBJECT)
    assert obj.inputs["bucket"] == bucket.outputs["name"] and obj.inputs["name"] == bundle.OBJECT_KEY
    stack = {"version": 1, "cluster": "gcp-a3-mega", "provider": "gcp", "region": "us-central1",
             "zone": "us-central1-a", "bootstrap": _expected_bootstrap(rec, spec, accounting=False), "elastic": {}}
    assert rec.outputs["stack"] == stack
    assert _object_bytes(rec) == bundle.config_bundle(out, stack)
    with tarfile.open(fileobj=io.BytesIO(_object_bytes(rec))) as tar:
        names = tar.getnames()
    assert "ansible/site.yml" in names and "slurm/slurm.conf" in names and "cloud/stack.json" in names


def test_no_secret_value_in_inputs_outputs_user_data_or_the_object(booted):
    _, _, rec = booted
    content = gzip.decompress(_object_bytes(rec))
    for value in SECRETS.values():
        assert value not in str(rec.outputs) and value not in str(rec.component_outputs)
        for r in rec.resources:
            plain = {k: v for k, v in r.inputs.items() if not is_secret(v)}
            assert value not in str(plain), (r.type, r.name)
        for inst in rec.of_type(INSTANCE):
            assert value not in inst.inputs["metadata"]["user-data"]
        assert value.encode() not in content


def test_elastic_group_is_an_instance_template_and_in_stack_json(elastic, booted):
    out, spec, rec = elastic
    _, _, static = booted
    assert not [i for i in rec.of_type(INSTANCE) if i.inputs["labels"]["group"] == "a3mega"]
    assert sorted(i.inputs["name"] for i in rec.of_type(INSTANCE)) == ["ctl01", "login01"]
    (template,) = rec.of_type(TEMPLATE)
    (policy,) = rec.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    a3 = static.named("gcp-a3-mega-a3mega-a3mega-001").inputs
    t = template.inputs
    # everything a static GPU instance of the group has
    for key in ("machineType", "networkInterfaces", "scheduling", "reservationAffinity", "shieldedInstanceConfig",
                "labels", "tags", "serviceAccount"):
        assert t[key] == a3[key], key
    assert t["resourcePolicies"] == policy.outputs["selfLink"]
    assert len(t["networkInterfaces"]) == 9 and t["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert t["serviceAccount"]["email"] == "gcp-a3-mega-compute@p.iam.gserviceaccount.com"
    (disk,) = t["disks"]
    assert disk == {**disk, "boot": True, "autoDelete": True, "diskType": "hyperdisk-balanced",
                    "sourceImage": gcp.DEFAULT_GPU_IMAGE, "diskSizeGb": 200}
    # user data is per host: the resume program writes it (stack.json's bootstrap), the template has none
    assert t["metadata"] == {k: v for k, v in a3["metadata"].items() if k != "user-data"}
    entry = {"a3mega": {"hostlist": "a3mega-[001-032]", "instance_type": "a3-megagpu-8g",
                        "gcp": {"project": "research-proj", "zone": "us-central1-a",
                                "instance_template": template.outputs["selfLink"]}}}
    assert rec.outputs["stack"]["elastic"] == entry
    with tarfile.open(fileobj=io.BytesIO(_object_bytes(rec))) as tar:
        stack = json.loads(tar.extractfile("cloud/stack.json").read())
    assert stack["elastic"] == entry and stack == rec.outputs["stack"]
    assert _object_bytes(rec) == bundle.config_bundle(out, stack)


def test_elastic_controller_may_create_instances_and_act_as_the_compute_account_only(elastic):
    _, spec, rec = elastic
    granted = _named_bindings(rec)
    assert len(granted) == len(rec.of_type(ACCOUNT)) == 3
    for account in rec.of_type(ACCOUNT):
        cls = SHIPPED_CLASSES[account.inputs["accountId"]]
        assert granted[f"serviceAccount:{account.outputs['email']}"] == GCP_BINDINGS[(cls, "elastic")], cls
    (custom,) = rec.of_type(CUSTOM_ROLE)
    assert custom.inputs["roleId"] == "clusterctl_gcp_a3_mega_power_save"
    assert custom.inputs["permissions"] == POWER_SAVE_PERMISSIONS
    (binding,) = rec.of_type(PROJECT_MEMBER)
    assert binding.inputs["member"] == "serviceAccount:gcp-a3-m-controller-accounting@p.iam.gserviceaccount.com"
    # instances and disks only in the cluster's zone and named like the elastic hosts; other types (template,
    # subnetwork, placement policy, image, operations) are what the role's use/get permissions name
    assert binding.inputs["condition"]["expression"] == (
        "(resource.type == 'compute.googleapis.com/Instance' && "
        "resource.name.startsWith('projects/research-proj/zones/us-central1-a/instances/a3mega-0')) || "
        "(resource.type == 'compute.googleapis.com/Disk' && "
        "resource.name.startsWith('projects/research-proj/zones/us-central1-a/disks/a3mega-0')) || "
        "(resource.type != 'compute.googleapis.com/Instance' && resource.type != 'compute.googleapis.com/Disk')")


def test_identity_classes_keep_the_database_password_from_hosts_that_must_not_read_it(mega_spec):
    # HA controllers, slurmdbd on the first only: the second controller does not share its account
    ha = dataclasses.replace(mega_spec, controllers=("ctl01", "login01"), accounting=("ctl01",))
    classes = gcp.service_account_classes(ha)
    assert classes["controller-accounting"] == IdentityClass("controller-accounting", ("ctl01",), (), True, True)
    assert classes["controller"] == IdentityClass("controller", ("login01",), (), True, False)
    # a dedicated slurmdbd host: its own account, no instance management
    dbd = dataclasses.replace(mega_spec, controllers=("ctl01",), accounting=("login01",))
    classes = gcp.service_account_classes(dbd)
    assert classes["accounting"] == IdentityClass("accounting", ("login01",), (), False, True)
    assert classes["controller"] == IdentityClass("controller", ("ctl01",), (), True, False)
    assert len(classes["compute"].hosts) == 32
    assert set(gcp.service_account_classes(mega_spec, shared=True)) == {"nodes"}
    assert gcp_names.account_id("a" * 40, "controller-accounting") == "a" * 8 + "-controller-accounting"


def test_service_account_setting_is_every_nodes_identity_with_the_union_of_the_grants(elastic):
    out, spec, _ = elastic
    sa = "nodes@research-proj.iam.gserviceaccount.com"
    rec = run_program(spec, config={**CONFIG, "clusterctl:serviceAccount": sa}, secrets=SECRETS, render_dir=out)
    assert rec.of_type(ACCOUNT) == []
    assert {i.inputs["serviceAccount"]["email"] for i in rec.of_type(INSTANCE)} == {sa}
    (template,) = rec.of_type(TEMPLATE)
    assert template.inputs["serviceAccount"]["email"] == sa
    assert _named_bindings(rec) == {f"serviceAccount:{sa}": {
        READS_CONFIG, READS_MUNGE, READS_DBPASS, POWER_SAVE,
        ("service-account", f"projects/research-proj/serviceAccounts/{sa}", "roles/iam.serviceAccountUser")}}


HOST_CLASSES = {"a3mega-001": "compute", "login01": "login", "ctl01": "controller", "ctl02": "controller-accounting",
                "ctl03": "accounting"}
"""the role class of a host of _every_class_spec, by what it runs (slurmctld, slurmdbd, neither)"""


def _every_class_spec(spec, elastic: bool):
    """gcp-a3-mega with a host of every role class: the GPU group (elastic or not), ctl01 slurmctld, ctl02
    slurmctld and slurmdbd, ctl03 slurmdbd, login01 a login node."""
    gpu, ctl, login = spec.groups
    return dataclasses.replace(
        spec, groups=(dataclasses.replace(gpu, elastic=elastic),
                      dataclasses.replace(ctl, count=3, hostnames=("ctl01", "ctl02", "ctl03")), login),
        controllers=("ctl01", "ctl02"), accounting=("ctl02", "ctl03"))


@pytest.mark.parametrize("mode", ["static", "elastic"])
def test_every_role_class_is_granted_exactly_its_table(mega_spec, mode):
    rec = run_program(_every_class_spec(mega_spec, mode == "elastic"), config={**CONFIG, **SSH}, secrets=SECRETS)
    emails = {i.inputs["name"]: i.inputs["serviceAccount"]["email"] for i in rec.of_type(INSTANCE)}
    if mode == "elastic":  # no GPU instance: the resume program creates them from the template
        assert "a3mega-001" not in emails
        (template,) = rec.of_type(TEMPLATE)
        emails["a3mega-001"] = template.inputs["serviceAccount"]["email"]
    granted = _named_bindings(rec)
    for host, cls in HOST_CLASSES.items():
        assert granted[f"serviceAccount:{emails[host]}"] == GCP_BINDINGS[(cls, mode)], host
    # one account per class, no binding for anyone else
    assert len({emails[h] for h in HOST_CLASSES}) == len(HOST_CLASSES) == len(rec.of_type(ACCOUNT))
    assert set(granted) == {f"serviceAccount:{emails[h]}" for h in HOST_CLASSES}
