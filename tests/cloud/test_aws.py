"""clusterctl.cloud.pulumi.aws under Pulumi mocks: the aws-p5 blueprint (32 EFA per p5.48xlarge) and p5en (16 EFA) and
p6-b200 (8 EFA) variants, checked resource by resource as the engine would receive them (wire names); and the
rendered aws-p5 (``python3 -m clusterctl render``) built with its render directory: bootstrap user data,
instance profiles, the configuration object, names, an elastic variant."""

from __future__ import annotations

import base64
import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from clusterctl.cloud.pulumi import aws as cloud_aws
from clusterctl.cloud.stack.spec import CloudSpec, cloud_spec
from tests.cloud.mocks import Recorded, is_secret, reveal, run_program
from clusterctl.cloud.stack import bundle, userdata
from clusterctl.cloud.stack.identity import identity_classes
from tests.helpers import BLUEPRINTS, REPO, plan_of, shipped

CONFIG = {"clusterctl:keyName": "ops"}
SECRETS = {"clusterctl:mungeKey": "bXVuZ2Uta2V5LWZvci10ZXN0cw==", "clusterctl:slurmdbdPassword": "db-Pa55-for-tests"}
ANYWHERE = {"0.0.0.0/0", "::/0"}

INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
UNTAGGABLE = {"aws:ec2/routeTableAssociation:RouteTableAssociation",
              "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
              "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
              "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
              "aws:s3/bucketVersioning:BucketVersioning",
              "aws:ec2/vpcDhcpOptionsAssociation:VpcDhcpOptionsAssociation", "aws:iam/rolePolicy:RolePolicy",
              "aws:route53/record:Record"}


def spec_of(instance: str = "p5.48xlarge", **cloud) -> CloudSpec:
    data = shipped("aws-p5")
    data["node_types"]["p5"]["instance"] = instance
    data["cloud"].update(cloud)
    return cloud_spec(plan_of(data))


SPECS = {"p5.48xlarge": 32, "p5en.48xlarge": 16, "p6-b200.48xlarge": 8}


@pytest.fixture(scope="module", params=sorted(SPECS))
def case(request) -> tuple[CloudSpec, Recorded, int]:
    spec = spec_of(request.param)
    return spec, run_program(spec, config=CONFIG, secrets=SECRETS), SPECS[request.param]


def gpu_instances(spec: CloudSpec, rec: Recorded):
    hosts = {h for g in spec.groups if g.gpus for h in g.hostnames}
    return [r for r in rec.of_type(INSTANCE) if r.name in hosts]


def template_of(rec: Recorded, instance) -> dict:
    lt_id = instance.inputs["launchTemplate"]["id"]
    return next(r for r in rec.of_type(LAUNCH_TEMPLATE) if r.outputs["id"] == lt_id).inputs


def test_the_shipped_blueprint_is_p5_with_a_reservation():
    spec = cloud_spec(plan_of(shipped("aws-p5")))
    assert spec.provider == "aws" and spec.reservation and spec.placement_group
    assert spec.admin_cidr not in ANYWHERE


def test_instance_count_and_type_per_group(case):
    spec, rec, _ = case
    instances = {r.name: r for r in rec.of_type(INSTANCE)}
    assert len(instances) == sum(g.count for g in spec.groups)
    for group in spec.groups:
        assert len(group.hostnames) == group.count
        for host in group.hostnames:
            assert instances[host].inputs["instanceType"] == group.instance_type


EFA_LAYOUT = {
    # AWS EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network cards"
    # (efa-acc-inst-types): primary ENA interface at network card 0 / device index 0 ("You can't use an EFA-only
    # network interface as the primary network interface"); "If the network card index 0 supports EFA, create an
    # EFA-only network interface for network card index 0, device index 1"; every further card: "device index 0,
    # for EFA-only network interface". Network cards per type: EC2 "Specifications for accelerated computing
    # instances", Network specifications (p5.48xlarge 32, p5en.48xlarge 16, p6-b200.48xlarge 8).
    # (network card, device index, interface type; None = ENA)
    "p5.48xlarge": [(0, 0, None), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 32)],
    "p5en.48xlarge": [(0, 0, None), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 16)],
    "p6-b200.48xlarge": [(0, 0, None), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 8)],
}


def test_efa_only_layout_on_every_gpu_instance(case):
    spec, rec, efa = case
    assert gpu_instances(spec, rec)
    for inst in gpu_instances(spec, rec):
        nics = template_of(rec, inst)["networkInterfaces"]
        layout = [(int(n["networkCardIndex"]), int(n["deviceIndex"]), n.get("interfaceType")) for n in nics]
        assert layout == EFA_LAYOUT[inst.inputs["instanceType"]]
        assert sum(n.get("interfaceType") == "efa-only" for n in nics) == efa  # one EFA per network card
        assert all(n["securityGroups"] == [rec.outputs["security_group_id"]] for n in nics)


def test_every_gpu_instance_is_in_the_cluster_placement_group(case):
    spec, rec, _ = case
    (pg,) = rec.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert pg.inputs["strategy"] == "cluster"
    for inst in gpu_instances(spec, rec):
        assert inst.inputs["placementGroup"] == pg.outputs["name"]
        assert template_of(rec, inst)["placement"]["groupName"] == pg.outputs["name"]
    heads = [r for r in rec.of_type(INSTANCE) if r not in gpu_instances(spec, rec)]
    assert heads and all("placementGroup" not in h.inputs for h in heads)


def test_gpu_instances_target_the_capacity_block(case):
    spec, rec, _ = case
    for inst in gpu_instances(spec, rec):
        lt = template_of(rec, inst)
        target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
        assert target["capacityReservationId"] == spec.reservation
        assert lt["instanceMarketOptions"]["marketType"] == "capacity-block"


def test_no_ingress_from_anywhere_and_ssh_only_from_the_admin_cidr(case):
    spec, rec, _ = case
    assert spec.admin_cidr not in ANYWHERE
    assert not rec.of_type("aws:ec2/securityGroupRule:SecurityGroupRule")
    assert not rec.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    (sg,) = rec.of_type("aws:ec2/securityGroup:SecurityGroup")
    for rule in sg.inputs["ingress"]:
        cidrs = set(rule.get("cidrBlocks", [])) | set(rule.get("ipv6CidrBlocks", []))
        assert not cidrs & ANYWHERE
        if cidrs:
            assert (rule["protocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 22, 22)
            assert cidrs == {spec.admin_cidr}
        else:
            assert rule["self"] is True
    assert any(r.get("self") and r["protocol"] == "-1" for r in sg.inputs["ingress"])
    assert any(r.get("self") and r["protocol"] == "-1" for r in sg.inputs["egress"])


def test_imdsv2_required_everywhere(case):
    _, rec, _ = case
    for res in rec.of_type(INSTANCE) + rec.of_type(LAUNCH_TEMPLATE):
        assert res.inputs["metadataOptions"]["httpTokens"] == "required", res.name


def test_encryption_of_volumes_bucket_and_file_system(case):
    spec, rec, _ = case
    for lt in rec.of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["blockDeviceMappings"]
        assert all(m["ebs"]["encrypted"] == "true" for m in lt.inputs["blockDeviceMappings"])
    for inst in rec.of_type(INSTANCE):
        if "launchTemplate" not in inst.inputs:
            assert inst.inputs["rootBlockDevice"]["encrypted"] is True
    buckets = {r.outputs["bucket"]: r for r in rec.of_type("aws:s3/bucket:Bucket")}
    assert set(buckets) == {rec.outputs["bucket_name"], rec.outputs["config_bucket"]}
    sse = {r.inputs["bucket"]: r.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] for r in
           rec.of_type("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")}
    assert sse == {buckets[rec.outputs["bucket_name"]].outputs["id"]: "aws:kms",
                   buckets[rec.outputs["config_bucket"]].outputs["id"]: "AES256"}
    pabs = rec.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert {p.inputs["bucket"] for p in pabs} == {b.outputs["id"] for b in buckets.values()}
    for pab in pabs:
        assert all(pab.inputs[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                                    "restrictPublicBuckets"))
    (versioning,) = rec.of_type("aws:s3/bucketVersioning:BucketVersioning")
    assert versioning.inputs["versioningConfiguration"]["status"] == "Enabled"
    # FSx for Lustre persistent file systems are always encrypted at rest (AWS-managed or customer KMS key)
    assert all(fs.inputs["deploymentType"] == "PERSISTENT_2" for fs in rec.of_type(FSX))


def test_fsx_throughput_meets_the_parallel_tier(case):
    spec, rec, _ = case
    tiers = [t for t in spec.storage if t.tier == "parallel"]
    fss = rec.of_type(FSX)
    assert len(fss) == len(tiers) == 1
    for tier, fs in zip(tiers, fss):
        unit = fs.inputs["perUnitStorageThroughput"]
        gib = fs.inputs["storageCapacity"]
        assert unit in (125, 250, 500, 1000)
        assert gib >= tier.capacity_tb * 1e12 / 2**30
        assert unit * gib / 1024 >= max(tier.read_gb_per_s, tier.write_gb_per_s) * 1000
        assert fs.inputs["subnetIds"] == rec.outputs["subnet_id"]


def test_tags_on_everything(case):
    spec, rec, _ = case
    for res in rec.resources:
        if not res.custom or res.type in UNTAGGABLE:
            continue
        tags = res.inputs.get("tags")
        assert tags, f"{res.type} {res.name} has no tags"
        assert spec.tags.items() <= tags.items(), res.name


def test_components_and_parents(case):
    _, rec, _ = case
    components = {r.type for r in rec.resources if not r.custom}
    assert components == {"clusterctl:aws:Cluster", "clusterctl:aws:Network", "clusterctl:aws:GpuNodeGroup",
                          "clusterctl:aws:HeadNodes", "clusterctl:aws:Storage", "clusterctl:aws:Identity",
                          "clusterctl:aws:Names", "clusterctl:aws:ConfigStore"}
    assert rec.root.type == "clusterctl:aws:Cluster"
    for res in rec.resources:
        if res is not rec.root:
            assert res.parent_type.startswith("clusterctl:aws:"), res.name
    assert all(r.parent_type == "clusterctl:aws:GpuNodeGroup" for r in gpu_instances(*case[:2]))


def test_outputs(case):
    """What the program puts together, checked against the resources it created (the mock only answers each
    resource's cloud-side values): every host's entry is its own instance's address and the group's facts, the
    file-system and bucket outputs are those of the FSx file system and the checkpoint bucket."""
    spec, rec, _ = case
    out = rec.outputs
    instances = {r.name: r for r in rec.of_type(INSTANCE)}
    hosts = {h for g in spec.groups for h in g.hostnames}
    assert set(out["nodes"]) == hosts and hosts <= set(instances)
    for group in spec.groups:
        for host in group.hostnames:
            assert instances[host].inputs["instanceType"] == group.instance_type
            assert out["nodes"][host] == {"private_ip": instances[host].outputs["privateIp"], "group": group.name,
                                          "role": group.role, "instance_type": group.instance_type}
    (fsx,) = rec.of_type(FSX)
    assert (out["fsx_dns_name"], out["fsx_mount_name"]) == (fsx.outputs["dnsName"], fsx.outputs["mountName"])
    buckets = {r.name: r.outputs["bucket"] for r in rec.of_type("aws:s3/bucket:Bucket")}
    assert out["bucket_name"] == buckets["aws-p5-storage-checkpoints"]
    assert out["config_bucket"] == buckets["aws-p5-config"] != out["bucket_name"]
    assert out.get("head_public_ip") is None  # head in the private subnet unless clusterctl:publicHead
    assert out["file_systems"]["fsx"]["capacity_grown"] is False


def test_munge_key_and_db_password_are_secure_parameters_from_secret_config(case):
    _, rec, _ = case
    params = {p.inputs["name"]: p for p in rec.of_type("aws:ssm/parameter:Parameter")}
    assert set(params) == {"/clusterctl/aws-p5/munge-key", "/clusterctl/aws-p5/slurmdbd-password"}
    for name, key in (("munge-key", "mungeKey"), ("slurmdbd-password", "slurmdbdPassword")):
        param = params[f"/clusterctl/aws-p5/{name}"]
        assert param.inputs["type"] == "SecureString"
        assert is_secret(param.inputs["value"])
        assert reveal(param.inputs["value"]) == SECRETS[f"clusterctl:{key}"]
        assert SECRETS[f"clusterctl:{key}"] not in str(rec.outputs)
    assert rec.outputs["slurmdbd_password_parameter"] == "/clusterctl/aws-p5/slurmdbd-password"


def test_dlami_lookup_without_ami_config(case):
    _, rec, _ = case
    (call,) = [c for c in rec.calls if c[0] == "aws:ec2/getAmi:getAmi"]
    names = [f["values"] for f in call[1]["filters"] if f["name"] == "name"]
    assert names == [["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"]]


def test_the_image_is_kept_after_creation_a_newer_dlami_replaces_nothing(case):
    """Issue 30, item 7: ``most_recent`` finds a newer DLAMI on a later ``pulumi up``; the launch template (whose
    new version would replace every GPU instance started from it) and every instance ignore their image after
    creation, so nothing is replaced until an operator does it explicitly (``pulumi up --replace``)."""
    spec, rec, _ = case
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    assert lt.ignore_changes == ("imageId",)
    instances = rec.of_type(INSTANCE)
    assert instances and all(i.ignore_changes == ("ami",) for i in instances)


def test_the_image_the_stack_runs_is_an_output_to_pin(case):
    """``ami_id``: the launch template's image as kept in the state, the value ``pulumi config set
    clusterctl:amiId "$(pulumi stack output ami_id)"`` pins (docs/cloud.md, "AMI pinning")."""
    _, rec, _ = case
    assert rec.outputs["ami_id"] == "ami-0123456789abcdef0"  # the mock's getAmi answer (tests/cloud/mocks.py)
    rec = run_program(spec_of(), config={**CONFIG, "clusterctl:amiId": "ami-0fixed"}, secrets=SECRETS)
    assert rec.outputs["ami_id"] == "ami-0fixed"


def test_existing_subnet_and_ami_from_config():
    spec = spec_of()
    rec = run_program(spec, config={**CONFIG, "clusterctl:vpcId": "vpc-0abc",
                                    "clusterctl:subnetIds": '["subnet-0abc"]', "clusterctl:amiId": "ami-0fixed",
                                    "clusterctl:capacityBlock": "false", "clusterctl:adminCidr": "192.0.2.0/28"},
                      secrets=SECRETS)
    assert not rec.of_type("aws:ec2/vpc:Vpc") and not rec.of_type("aws:ec2/subnet:Subnet")
    assert not rec.calls or all(c[0] != "aws:ec2/getAmi:getAmi" for c in rec.calls)
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    assert lt.inputs["imageId"] == "ami-0fixed"
    assert {n["subnetId"] for n in lt.inputs["networkInterfaces"]} == {"subnet-0abc"}
    assert "instanceMarketOptions" not in lt.inputs  # an ODCR, not a Capacity Block
    (sg,) = rec.of_type("aws:ec2/securityGroup:SecurityGroup")
    assert sg.inputs["vpcId"] == "vpc-0abc"
    assert {c for r in sg.inputs["ingress"] for c in r.get("cidrBlocks", [])} == {"192.0.2.0/28"}


def test_public_head_gets_a_public_ip_output():
    spec = spec_of()
    rec = run_program(spec, config={**CONFIG, "clusterctl:publicHead": "true"}, secrets=SECRETS)
    assert rec.outputs["head_public_ip"]
    assert rec.named("head01").inputs["associatePublicIpAddress"] is True


def test_rendered_empty_key_name_means_no_key_pair():
    rec = run_program(spec_of(), config={"clusterctl:keyName": ""}, secrets=SECRETS)
    assert all("keyName" not in r.inputs for r in rec.of_type(INSTANCE) + rec.of_type(LAUNCH_TEMPLATE))


def test_admin_cidr_anywhere_is_refused():
    with pytest.raises(Exception, match="opens SSH to the internet"):
        run_program(spec_of(), config={**CONFIG, "clusterctl:adminCidr": "0.0.0.0/0"}, secrets=SECRETS)


def test_spec_from_rendered_cluster_json_builds_the_same_cluster():
    spec = spec_of()
    rec = run_program(CloudSpec.from_json(spec.to_json()), config=CONFIG, secrets=SECRETS)
    assert set(rec.outputs["nodes"]) == {h for g in spec.groups for h in g.hostnames}


# --- pure helpers --------------------------------------------------------------------------------------------


def test_efa_interfaces_layout():
    assert cloud_aws.efa_interfaces(3, efa_only=True) == [
        {"device_index": 0, "network_card_index": 0},
        {"device_index": 1, "network_card_index": 0, "interface_type": "efa-only"},
        {"device_index": 0, "network_card_index": 1, "interface_type": "efa-only"},
        {"device_index": 0, "network_card_index": 2, "interface_type": "efa-only"},
    ]
    # older multi-card types (p4d: Nitro v3) keep EFA-with-ENA interfaces
    assert cloud_aws.efa_interfaces(4) == [
        {"device_index": 0, "network_card_index": 0, "interface_type": "efa"},
        {"device_index": 1, "network_card_index": 1, "interface_type": "efa"},
        {"device_index": 1, "network_card_index": 2, "interface_type": "efa"},
        {"device_index": 1, "network_card_index": 3, "interface_type": "efa"},
    ]
    assert cloud_aws.efa_interfaces(0) == [{"device_index": 0, "network_card_index": 0}]


@pytest.mark.parametrize("tb, gbps, gib, unit, grown", [
    (52.7, 48, 50400, 1000, False),   # aws-p5: 49,081 GiB -> 50,400 at 1000 MB/s/TiB = 49.2 GB/s
    (52.7, 10, 50400, 250, False),    # 125 gives 6.2 GB/s, 250 gives 12.3 GB/s
    (1.0, 0.1, 1200, 125, False),     # smallest file system
    (2.0, 0.2, 2400, 125, False),     # 1,863 GiB -> 2,400
    (10, 40, 43200, 1000, True),      # 10 TB cannot give 40 GB/s: 40 TiB -> 43,200 GiB
])
def test_fsx_lustre_sizing(tb, gbps, gib, unit, grown):
    sizing = cloud_aws.fsx_lustre_sizing(tb, gbps, gbps / 2)
    assert (sizing.capacity, sizing.tier.throughput_per_tib, sizing.grown) == (gib, unit, grown)
    assert sizing.throughput >= gbps * 1000
    assert ("grown" in sizing.note) is grown


def test_grown_file_system_is_reported_in_an_output():
    data = shipped("aws-p5")
    data["storage"][0].update(capacity_tb=10, read_gb_per_s=40, write_gb_per_s=40)
    rec = run_program(cloud_spec(plan_of(data)), config=CONFIG, secrets=SECRETS)
    fs = rec.outputs["file_systems"]["fsx"]
    assert fs["capacity_grown"] is True and "grown" in fs["sizing"]
    assert fs["capacity_gib"] == 43200


def test_subnet_cidrs():
    assert cloud_aws.subnet_cidrs("10.0.0.0/16") == ("10.0.0.0/18", "10.0.255.0/24")
    assert cloud_aws.subnet_cidrs("10.100.0.0/20") == ("10.100.0.0/22", "10.100.15.0/24")


# --- with the render directory: bootstrap, identity, configuration object, names ----------------------------

# What the instance profile of each role class may do, written out here (not computed by clusterctl): every
# node reads the configuration object and the munge key; the accounting hosts (slurmdbd) alone the database
# password; the Slurm controllers of a cluster with elastic groups alone start, tag and terminate instances, pass
# the compute role to them and write their Route 53 records.
AWS_ACTIONS = {  # (role class, static or elastic cluster) -> the exact IAM actions of its policy
    ("compute", "static"): {"s3:GetObject", "ssm:GetParameter"},
    ("compute", "elastic"): {"s3:GetObject", "ssm:GetParameter"},
    ("login", "static"): {"s3:GetObject", "ssm:GetParameter"},
    ("login", "elastic"): {"s3:GetObject", "ssm:GetParameter"},
    ("accounting", "static"): {"s3:GetObject", "ssm:GetParameter"},
    ("accounting", "elastic"): {"s3:GetObject", "ssm:GetParameter"},
    ("controller", "static"): {"s3:GetObject", "ssm:GetParameter"},
    ("controller", "elastic"): {"s3:GetObject", "ssm:GetParameter", "ec2:RunInstances", "ec2:CreateTags",
                                "ec2:TerminateInstances", "ec2:DescribeInstances", "iam:PassRole",
                                "route53:ChangeResourceRecordSets"},
    ("controller-accounting", "static"): {"s3:GetObject", "ssm:GetParameter"},
    ("controller-accounting", "elastic"): {"s3:GetObject", "ssm:GetParameter", "ec2:RunInstances",
                                           "ec2:CreateTags", "ec2:TerminateInstances", "ec2:DescribeInstances",
                                           "iam:PassRole", "route53:ChangeResourceRecordSets"},
}
AWS_PARAMETERS = {  # role class -> the SSM parameters its policy may read (ssm:GetParameter's resources)
    "compute": {"/clusterctl/aws-p5/munge-key"},
    "login": {"/clusterctl/aws-p5/munge-key"},
    "controller": {"/clusterctl/aws-p5/munge-key"},
    "accounting": {"/clusterctl/aws-p5/munge-key", "/clusterctl/aws-p5/slurmdbd-password"},
    "controller-accounting": {"/clusterctl/aws-p5/munge-key", "/clusterctl/aws-p5/slurmdbd-password"},
}
AWS_PASSED = {  # (role class, elastic cluster) -> the IAM roles it may pass (iam:PassRole's resources); else none
    ("controller", "elastic"): {"clusterctl-aws-p5-compute"},
    ("controller-accounting", "elastic"): {"clusterctl-aws-p5-compute"},
}
PROFILE = "aws:iam/instanceProfile:InstanceProfile"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"


def render(tmp: Path, data: dict | None = None) -> Path:
    """``python3 -m clusterctl render`` of aws-p5 (or of ``data``, written next to it) into ``tmp/out``."""
    source = BLUEPRINTS / "aws-p5.yaml"
    if data is not None:
        source = tmp / "aws-p5.yaml"
        source.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp / "out"
    r = subprocess.run([sys.executable, "-m", "clusterctl", "render", str(source), "-o", str(out)], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def build_rendered(out: Path) -> tuple[CloudSpec, Recorded]:
    spec = CloudSpec.from_json((out / "pulumi" / "cluster.json").read_text())
    return spec, run_program(spec, config=CONFIG, secrets=SECRETS, render_dir=out)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, CloudSpec, Recorded]:
    out = render(tmp_path_factory.mktemp("aws-p5"))
    return (out, *build_rendered(out))


@pytest.fixture(scope="module")
def elastic(tmp_path_factory) -> tuple[Path, CloudSpec, Recorded]:
    data = shipped("aws-p5")
    gpu = next(g for g in data["node_groups"] if g["name"] == "gpu")
    gpu["cloud"] = {"elastic": True}
    out = render(tmp_path_factory.mktemp("aws-p5-elastic"), data)
    return (out, *build_rendered(out))


def ints(value):
    """Recorded outputs carry JSON numbers as floats (the engine's wire format): 1.0 -> 1."""
    if isinstance(value, dict):
        return {k: ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [ints(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def cloud_config(text: str) -> dict:
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


def bootstrap_of(text: str) -> dict:
    (settings,) = [f for f in cloud_config(text)["write_files"] if f["path"] == userdata.BOOTSTRAP_CONFIG]
    return json.loads(settings["content"])


def policy_of(rec: Recorded, profile_name: str) -> tuple[dict, dict]:
    """(the role, the parsed policy document) behind an instance profile name."""
    (profile,) = [p for p in rec.of_type(PROFILE) if p.outputs["name"] == profile_name]
    (role,) = [r for r in rec.of_type(ROLE) if r.outputs["name"] == profile.inputs["role"]]
    (policy,) = [p for p in rec.of_type(POLICY) if p.inputs["role"] == role.outputs["id"]]
    return role, json.loads(policy.inputs["policy"])


def _listed(value) -> list:
    return [value] if isinstance(value, str) else list(value)


def actions(doc: dict) -> set[str]:
    """The IAM actions a policy allows (it allows only: no Deny, no NotAction)."""
    assert all(st["Effect"] == "Allow" and "NotAction" not in st for st in doc["Statement"])
    return {a for st in doc["Statement"] for a in _listed(st["Action"])}


def resources_of(doc: dict, action: str) -> set[str]:
    return {r for st in doc["Statement"] if action in _listed(st["Action"]) for r in _listed(st["Resource"])}


def grants_of(rec: Recorded, profile_name: str) -> tuple[set[str], set[str], set[str]]:
    """(IAM actions, names of the SSM parameters it may read, names of the roles it may pass) of the policy
    behind an instance profile."""
    _, doc = policy_of(rec, profile_name)
    params = {p.outputs["arn"]: p.inputs["name"] for p in rec.of_type("aws:ssm/parameter:Parameter")}
    roles = {r.outputs["arn"]: r.inputs["name"] for r in rec.of_type(ROLE)}
    return (actions(doc), {params.get(a, a) for a in resources_of(doc, "ssm:GetParameter")},
            {roles.get(a, a) for a in resources_of(doc, "iam:PassRole")})


def statement(doc: dict, sid: str) -> dict:
    (st,) = [s for s in doc["Statement"] if s["Sid"] == sid]
    return st


def config_object_arn(rec: Recorded) -> str:
    (bucket,) = [b for b in rec.of_type("aws:s3/bucket:Bucket") if b.outputs["bucket"] == rec.outputs["config_bucket"]]
    return f"{bucket.outputs['arn']}/clusterctl/config.tar.gz"  # the one object, not the bucket


def parameter_arns(rec: Recorded) -> dict[str, str]:
    return {p.inputs["name"]: p.outputs["arn"] for p in rec.of_type("aws:ssm/parameter:Parameter")}


def test_every_instance_boots_into_the_bootstrap_with_its_exact_host(rendered):
    _, spec, rec = rendered
    url = f"s3://{rec.outputs['config_bucket']}/{bundle.OBJECT_KEY}"
    assert rec.outputs["config_url"] == url
    hosts = [h for g in spec.groups for h in g.hostnames]
    assert {r.name for r in rec.of_type(INSTANCE)} == set(hosts)
    for host in hosts:
        inst = rec.named(host)
        config = cloud_config(inst.inputs["userData"])
        assert (config["hostname"], config["fqdn"]) == (host, host)
        assert config["runcmd"] == [[userdata.BOOTSTRAP_PROGRAM]]
        boot = bootstrap_of(inst.inputs["userData"])
        assert (boot["host"], boot["provider"], boot["region"], boot["config_url"]) == (host, "aws", spec.region, url)
        secrets = {"vault_munge_key": {"aws-ssm": "/clusterctl/aws-p5/munge-key"}}
        if host in spec.accounting:
            secrets["vault_slurmdbd_storage_pass"] = {"aws-ssm": "/clusterctl/aws-p5/slurmdbd-password"}
        assert boot["secrets"] == secrets
        assert inst.inputs["userDataReplaceOnChange"] is False
    assert spec.accounting == ("head01",)


def test_every_instance_has_a_profile_granting_exactly_its_role_class_table(rendered):
    _, spec, rec = rendered
    params = parameter_arns(rec)
    assert (spec.controllers, spec.accounting) == (("head01",), ("head01",))
    for group in spec.groups:
        for host in group.hostnames:
            inst = rec.named(host)
            cls = "controller-accounting" if host == "head01" else "compute"
            assert inst.inputs["iamInstanceProfile"] == f"clusterctl-aws-p5-{cls}"
            role, doc = policy_of(rec, inst.inputs["iamInstanceProfile"])
            assert json.loads(role.inputs["assumeRolePolicy"])["Statement"] == [{
                "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
            assert grants_of(rec, inst.inputs["iamInstanceProfile"]) == (
                AWS_ACTIONS[(cls, "static")], AWS_PARAMETERS[cls], set()), host
            assert statement(doc, "ReadConfig")["Resource"] == config_object_arn(rec)
            readable = ["/clusterctl/aws-p5/munge-key"] + (["/clusterctl/aws-p5/slurmdbd-password"]
                                                           if host in spec.accounting else [])
            assert statement(doc, "ReadSecrets")["Resource"] == sorted(params[p] for p in readable)
            assert "Condition" not in statement(doc, "ReadConfig")
            if "launchTemplate" in inst.inputs:  # GPU instances: their launch template carries the profile too
                (profile,) = [p for p in rec.of_type(PROFILE) if p.outputs["name"] == inst.inputs["iamInstanceProfile"]]
                assert template_of(rec, inst)["iamInstanceProfile"] == {"arn": profile.outputs["arn"]}
    # the accounting host reads the database password: its own role, shared with no GPU node
    gpu_profiles = {rec.named(h).inputs["iamInstanceProfile"] for g in spec.groups if g.gpus for h in g.hostnames}
    assert rec.named("head01").inputs["iamInstanceProfile"] not in gpu_profiles
    assert len(rec.of_type(ROLE)) == len(rec.of_type(PROFILE)) == len(rec.of_type(POLICY)) == 2


def test_the_configuration_object_is_the_bundle_of_the_render(rendered):
    out, spec, rec = rendered
    (obj,) = rec.of_type(OBJECT)
    (bucket,) = [b for b in rec.of_type("aws:s3/bucket:Bucket") if b.outputs["bucket"] == rec.outputs["config_bucket"]]
    assert (obj.inputs["bucket"], obj.inputs["key"]) == (bucket.outputs["id"], bundle.OBJECT_KEY)
    assert obj.inputs["serverSideEncryption"] == "AES256"
    content = base64.b64decode(obj.inputs["contentBase64"])
    stack = ints(rec.outputs["stack"])
    assert content == bundle.config_bundle(out, stack)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(content))) as tar:
        names = tar.getnames()
        assert json.loads(tar.extractfile(bundle.STACK_FILE).read()) == stack
    assert "ansible/site.yml" in names and not any(n.startswith(("pulumi/", "secrets/")) for n in names)
    assert stack == {"version": 1, "cluster": "aws-p5", "provider": "aws", "region": "us-east-2",
                     "zone": "us-east-2a", "elastic": {},
                     "bootstrap": {"version": 1, "provider": "aws", "region": "us-east-2", "timeout_s": 1800,
                                   "config_url": rec.outputs["config_url"],
                                   "secrets": {"vault_munge_key": {"aws-ssm": "/clusterctl/aws-p5/munge-key"}}}}


def _plain_strings(value, secret_ok: bool = False):
    """Every string of a recorded value outside Pulumi secrets."""
    if is_secret(value):
        return
    if isinstance(value, dict):
        for v in value.values():
            yield from _plain_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _plain_strings(v)
    elif isinstance(value, str):
        yield value


def test_no_secret_value_in_inputs_outputs_user_data_or_the_object(rendered):
    out, _, rec = rendered
    values = [SECRETS["clusterctl:mungeKey"], SECRETS["clusterctl:slurmdbdPassword"],
              base64.b64encode(SECRETS["clusterctl:slurmdbdPassword"].encode()).decode()]
    texts = [s for r in rec.resources for s in _plain_strings(r.inputs)]
    texts.append(json.dumps(rec.outputs))
    (obj,) = rec.of_type(OBJECT)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(base64.b64decode(obj.inputs["contentBase64"])))) as tar:
        texts += [tar.extractfile(m).read().decode(errors="replace") for m in tar.getmembers()]
    assert any("#cloud-config" in t for t in texts)
    for value in values:
        assert not [t[:60] for t in texts if value in t]
    # the values are there, as secrets, in the two SSM parameters only
    assert sorted(reveal(p.inputs["value"]) for p in rec.of_type("aws:ssm/parameter:Parameter")) == sorted(values[:2])


def test_private_zone_dhcp_options_and_a_record_per_instance(rendered):
    _, spec, rec = rendered
    (zone,) = rec.of_type("aws:route53/zone:Zone")
    assert zone.inputs["name"] == "aws-p5.internal" == rec.outputs["dns_domain"]
    assert zone.inputs["vpcs"] == [{"vpcId": rec.outputs["vpc_id"]}]
    (dhcp,) = rec.of_type("aws:ec2/vpcDhcpOptions:VpcDhcpOptions")
    assert (dhcp.inputs["domainName"], dhcp.inputs["domainNameServers"]) == ("aws-p5.internal", ["AmazonProvidedDNS"])
    (assoc,) = rec.of_type("aws:ec2/vpcDhcpOptionsAssociation:VpcDhcpOptionsAssociation")
    assert (assoc.inputs["vpcId"], assoc.inputs["dhcpOptionsId"]) == (rec.outputs["vpc_id"], dhcp.outputs["id"])
    records = {r.inputs["name"]: (r.inputs["type"], r.inputs["records"], r.inputs["zoneId"])
               for r in rec.of_type("aws:route53/record:Record")}
    assert records == {f"{h}.aws-p5.internal": ("A", [n["private_ip"]], zone.outputs["id"])
                       for h, n in rec.outputs["nodes"].items()}


def test_an_existing_vpc_keeps_its_dhcp_options_and_gets_the_zone():
    rec = run_program(spec_of(), config={**CONFIG, "clusterctl:vpcId": "vpc-0abc",
                                         "clusterctl:subnetIds": '["subnet-0abc"]'}, secrets=SECRETS)
    assert not rec.of_type("aws:ec2/vpcDhcpOptions:VpcDhcpOptions")
    assert not rec.of_type("aws:ec2/vpcDhcpOptionsAssociation:VpcDhcpOptionsAssociation")
    (zone,) = rec.of_type("aws:route53/zone:Zone")
    assert zone.inputs["vpcs"] == [{"vpcId": "vpc-0abc"}]


def test_elastic_group_has_a_launch_template_and_no_instances(elastic):
    out, spec, rec = elastic
    gpu = next(g for g in spec.groups if g.name == "gpu")
    assert gpu.elastic
    assert {r.name for r in rec.of_type(INSTANCE)} == {"head01"}
    assert set(rec.outputs["nodes"]) == {"head01"}
    assert {r.inputs["name"] for r in rec.of_type("aws:route53/record:Record")} == {"head01.aws-p5.internal"}
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    lt_in = lt.inputs
    layout = [(int(n["networkCardIndex"]), int(n["deviceIndex"]), n.get("interfaceType"))
              for n in lt_in["networkInterfaces"]]
    assert layout == EFA_LAYOUT["p5.48xlarge"]
    (pg,) = rec.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert lt_in["placement"]["groupName"] == pg.outputs["name"]
    assert lt_in["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"] == \
        spec.reservation
    assert lt_in["metadataOptions"]["httpTokens"] == "required"
    assert "userData" not in lt_in  # the resume program gives each instance its own user data
    (compute,) = [p for p in rec.of_type(PROFILE) if p.outputs["arn"] == lt_in["iamInstanceProfile"]["arn"]]
    assert compute.outputs["name"] == "clusterctl-aws-p5-compute"
    assert grants_of(rec, compute.outputs["name"]) == (AWS_ACTIONS[("compute", "elastic")],
                                                       AWS_PARAMETERS["compute"], set())
    (zone,) = rec.of_type("aws:route53/zone:Zone")
    stack = ints(rec.outputs["stack"])
    assert stack["elastic"] == {"gpu": {"hostlist": "gpu[001-016]", "instance_type": "p5.48xlarge", "aws": {
        "launch_template_id": lt.outputs["id"], "hosted_zone_id": zone.outputs["id"],
        "dns_domain": "aws-p5.internal"}}}
    (obj,) = rec.of_type(OBJECT)
    assert base64.b64decode(obj.inputs["contentBase64"]) == bundle.config_bundle(out, stack)


def test_elastic_controller_may_run_terminate_tag_pass_and_name_only_the_clusters_instances(elastic):
    _, spec, rec = elastic
    profile = rec.named("head01").inputs["iamInstanceProfile"]
    assert profile == "clusterctl-aws-p5-controller-accounting"
    role, doc = policy_of(rec, profile)
    assert grants_of(rec, profile) == (AWS_ACTIONS[("controller-accounting", "elastic")],
                                       AWS_PARAMETERS["controller-accounting"],
                                       AWS_PASSED[("controller-accounting", "elastic")])
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    (zone,) = rec.of_type("aws:route53/zone:Zone")
    (compute_profile,) = [p for p in rec.of_type(PROFILE) if p.outputs["arn"] == lt.inputs["iamInstanceProfile"]["arn"]]
    (compute_role,) = [r for r in rec.of_type(ROLE) if r.outputs["name"] == compute_profile.inputs["role"]]
    ec2 = "arn:aws:ec2:us-east-2:123456789012"
    run = statement(doc, "RunTaggedInstancesFromTheLaunchTemplates")
    assert (run["Action"], run["Resource"]) == ("ec2:RunInstances", f"{ec2}:instance/*")
    assert run["Condition"] == {"ArnEquals": {"ec2:LaunchTemplate": [lt.outputs["arn"]]},
                                "StringEquals": {"aws:RequestTag/clusterctl:cluster": "aws-p5"}}
    assert statement(doc, "RunTheirVolumesAndInterfaces")["Condition"] == {
        "ArnEquals": {"ec2:LaunchTemplate": [lt.outputs["arn"]]}}
    (pg,) = rec.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert set(statement(doc, "RunWithTheClusterResources")["Resource"]) == {
        lt.outputs["arn"], f"{ec2}:subnet/{rec.outputs['subnet_id']}",
        f"{ec2}:security-group/{rec.outputs['security_group_id']}", pg.outputs["arn"],
        "arn:aws:ec2:us-east-2::image/ami-0123456789abcdef0", f"{ec2}:capacity-reservation/{spec.reservation}",
        f"{ec2}:key-pair/ops"}
    assert statement(doc, "TagOnLaunch")["Condition"] == {"StringEquals": {
        "ec2:CreateAction": "RunInstances", "aws:RequestTag/clusterctl:cluster": "aws-p5"}}
    assert statement(doc, "TerminateClusterInstances")["Condition"] == {
        "StringEquals": {"ec2:ResourceTag/clusterctl:cluster": "aws-p5"}}
    assert statement(doc, "PassComputeRole")["Resource"] == [compute_role.outputs["arn"]]
    assert statement(doc, "PassComputeRole")["Condition"] == {
        "StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    assert statement(doc, "WriteDns")["Resource"] == f"arn:aws:route53:::hostedzone/{zone.outputs['id']}"
    assert statement(doc, "DescribeInstances")["Resource"] == "*"
    assert role.outputs["arn"] != compute_role.outputs["arn"]


@pytest.mark.parametrize("instance, efa", [("p5.48xlarge", True), ("p5en.48xlarge", True),
                                           ("p6-b200.48xlarge", True), ("p4d.24xlarge", False)])
def test_fsx_efa_where_the_file_system_and_the_gpu_type_support_it(instance, efa):
    rec = run_program(spec_of(instance), config=CONFIG, secrets=SECRETS)
    (fs,) = rec.of_type(FSX)
    assert fs.inputs["deploymentType"] == "PERSISTENT_2" and fs.inputs["fileSystemTypeVersion"] == "2.15"
    if efa:
        assert fs.inputs["efaEnabled"] is True
        assert fs.inputs["metadataConfiguration"] == {"mode": "AUTOMATIC"}
    else:
        assert "efaEnabled" not in fs.inputs and "metadataConfiguration" not in fs.inputs
    assert rec.outputs["file_systems"]["fsx"]["efa_enabled"] is efa


def test_p4d_keeps_efa_with_ena_interfaces():
    spec = spec_of("p4d.24xlarge")
    rec = run_program(spec, config=CONFIG, secrets=SECRETS)
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    assert [(int(n["networkCardIndex"]), int(n["deviceIndex"]), n["interfaceType"])
            for n in lt.inputs["networkInterfaces"]] == [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]


def test_an_accounting_host_that_shares_a_group_with_others_gets_its_own_role():
    from dataclasses import replace

    spec = spec_of()
    gpu, head = spec.groups
    spec = replace(spec, groups=(gpu, replace(head, count=2, hostnames=("head01", "head02"))),
                   controllers=("head01", "head02"), accounting=("head02",))
    assert {c.name: (c.hosts, c.groups) for c in identity_classes(spec).values()} == {
        "compute": (gpu.hostnames, ("gpu",)), "controller": (("head01",), ()),
        "controller-accounting": (("head02",), ())}
    rec = run_program(spec, config=CONFIG, secrets=SECRETS)
    params = parameter_arns(rec)
    profiles = {h: rec.named(h).inputs["iamInstanceProfile"] for h in ("head01", "head02", "gpu001")}
    assert len(set(profiles.values())) == 3
    readable = {h: statement(policy_of(rec, p)[1], "ReadSecrets")["Resource"] for h, p in profiles.items()}
    assert readable["head02"] == sorted([params["/clusterctl/aws-p5/munge-key"],
                                         params["/clusterctl/aws-p5/slurmdbd-password"]])
    assert readable["head01"] == readable["gpu001"] == [params["/clusterctl/aws-p5/munge-key"]]
    actions_of = {h: actions(policy_of(rec, p)[1]) for h, p in profiles.items()}
    assert actions_of == {"head01": AWS_ACTIONS[("controller", "static")],
                          "head02": AWS_ACTIONS[("controller-accounting", "static")],
                          "gpu001": AWS_ACTIONS[("compute", "static")]}
    # no role for a class without hosts (every head host is a controller)
    assert {r.inputs["name"] for r in rec.of_type(ROLE)} == {
        "clusterctl-aws-p5-compute", "clusterctl-aws-p5-controller", "clusterctl-aws-p5-controller-accounting"}


HOST_CLASSES = {"gpu001": "compute", "login01": "login", "head01": "controller", "head02": "controller-accounting",
                "head03": "accounting"}
"""the role class of a host of every_class_spec, by what it runs (slurmctld, slurmdbd, neither)"""


def every_class_spec(elastic: bool) -> CloudSpec:
    """aws-p5 with a host of every role class: the GPU group (elastic or not), head01 slurmctld, head02 slurmctld
    and slurmdbd, head03 slurmdbd, login01 a login node."""
    from dataclasses import replace

    spec = spec_of()
    gpu, head = spec.groups
    return replace(spec, groups=(replace(gpu, elastic=elastic),
                                 replace(head, count=3, hostnames=("head01", "head02", "head03")),
                                 replace(head, name="login", role="login", count=1, hostnames=("login01",))),
                   controllers=("head01", "head02"), accounting=("head02", "head03"))


@pytest.mark.parametrize("mode", ["static", "elastic"])
def test_every_role_class_is_granted_exactly_its_table(mode):
    rec = run_program(every_class_spec(mode == "elastic"), config=CONFIG, secrets=SECRETS)
    (lt,) = rec.of_type(LAUNCH_TEMPLATE)
    by_arn = {p.outputs["arn"]: p.outputs["name"] for p in rec.of_type(PROFILE)}
    profiles = {r.name: r.inputs["iamInstanceProfile"] for r in rec.of_type(INSTANCE)}
    if mode == "elastic":  # no GPU instance: the resume program starts them from the launch template
        assert "gpu001" not in profiles
        profiles["gpu001"] = by_arn[lt.inputs["iamInstanceProfile"]["arn"]]
    for host, cls in HOST_CLASSES.items():
        assert profiles[host] == f"clusterctl-aws-p5-{cls}", host
        assert grants_of(rec, profiles[host]) == (AWS_ACTIONS[(cls, mode)], AWS_PARAMETERS[cls],
                                                  AWS_PASSED.get((cls, mode), set())), host
        _, doc = policy_of(rec, profiles[host])
        assert resources_of(doc, "s3:GetObject") == {config_object_arn(rec)}
        if "route53:ChangeResourceRecordSets" in AWS_ACTIONS[(cls, mode)]:
            (zone,) = rec.of_type("aws:route53/zone:Zone")
            assert resources_of(doc, "route53:ChangeResourceRecordSets") == {
                f"arn:aws:route53:::hostedzone/{zone.outputs['id']}"}
    # no role for a class without hosts, none shared by two classes
    assert {r.inputs["name"] for r in rec.of_type(ROLE)} == {f"clusterctl-aws-p5-{c}" for c in HOST_CLASSES.values()}
