"""clusterctl.cloud.aws under Pulumi mocks: the aws-p5 blueprint (32 EFA per p5.48xlarge) and a p5en
variant (16 EFA), checked resource by resource as the engine would receive them (wire names)."""

from __future__ import annotations

import pytest

from clusterctl.cloud import aws as cloud_aws
from clusterctl.cloud.spec import CloudSpec, cloud_spec
from tests.cloud.mocks import Recorded, is_secret, reveal, run_program
from tests.helpers import plan_of, shipped

CONFIG = {"clusterctl:keyName": "ops"}
SECRETS = {"clusterctl:mungeKey": "bXVuZ2Uta2V5LWZvci10ZXN0cw=="}
ANYWHERE = {"0.0.0.0/0", "::/0"}

INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
UNTAGGABLE = {"aws:ec2/routeTableAssociation:RouteTableAssociation",
              "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
              "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
              "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
              "aws:s3/bucketVersioning:BucketVersioning"}


def spec_of(instance: str = "p5.48xlarge", **cloud) -> CloudSpec:
    data = shipped("aws-p5")
    data["node_types"]["p5"]["instance"] = instance
    data["cloud"].update(cloud)
    return cloud_spec(plan_of(data))


SPECS = {"p5.48xlarge": 32, "p5en.48xlarge": 16}


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


def test_full_efa_layout_on_every_gpu_instance(case):
    spec, rec, efa = case
    assert gpu_instances(spec, rec)
    for inst in gpu_instances(spec, rec):
        nics = template_of(rec, inst)["networkInterfaces"]
        assert len(nics) == efa
        assert all(n["interfaceType"] == "efa" for n in nics)
        layout = [(int(n["networkCardIndex"]), int(n["deviceIndex"])) for n in nics]
        assert layout == [(0, 0)] + [(card, 1) for card in range(1, efa)]


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
    (bucket,) = rec.of_type("aws:s3/bucket:Bucket")
    (sse,) = rec.of_type("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["bucket"] == bucket.outputs["id"]
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    (pab,) = rec.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert pab.inputs["bucket"] == bucket.outputs["id"]
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
        assert unit in cloud_aws.FSX_UNIT_THROUGHPUTS
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
                          "clusterctl:aws:HeadNodes", "clusterctl:aws:Storage"}
    assert rec.root.type == "clusterctl:aws:Cluster"
    for res in rec.resources:
        if res is not rec.root:
            assert res.parent_type.startswith("clusterctl:aws:"), res.name
    assert all(r.parent_type == "clusterctl:aws:GpuNodeGroup" for r in gpu_instances(*case[:2]))


def test_outputs(case):
    spec, rec, _ = case
    out = rec.outputs
    hosts = {h for g in spec.groups for h in g.hostnames}
    assert set(out["nodes"]) == hosts
    ips = [n["private_ip"] for n in out["nodes"].values()]
    assert all(ip.startswith("10.") for ip in ips) and len(set(ips)) == len(ips)
    for group in spec.groups:
        for host in group.hostnames:
            assert out["nodes"][host] == {**out["nodes"][host], "group": group.name, "role": group.role,
                                          "instance_type": group.instance_type}
    assert out["fsx_dns_name"] and out["fsx_mount_name"] and out["bucket_name"]
    assert out.get("head_public_ip") is None  # head in the private subnet unless clusterctl:publicHead
    assert out["file_systems"]["fsx"]["capacity_grown"] is False


def test_munge_key_is_a_secure_parameter_from_secret_config(case):
    _, rec, _ = case
    (param,) = rec.of_type("aws:ssm/parameter:Parameter")
    assert param.inputs["type"] == "SecureString"
    assert is_secret(param.inputs["value"])
    assert reveal(param.inputs["value"]) == SECRETS["clusterctl:mungeKey"]
    assert SECRETS["clusterctl:mungeKey"] not in str(rec.outputs)


def test_dlami_lookup_without_ami_config(case):
    _, rec, _ = case
    (call,) = [c for c in rec.calls if c[0] == "aws:ec2/getAmi:getAmi"]
    names = [f["values"] for f in call[1]["filters"] if f["name"] == "name"]
    assert names == [[cloud_aws.DLAMI_NAME]]


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
    assert (sizing.capacity_gib, sizing.per_unit_storage_throughput, sizing.grown) == (gib, unit, grown)
    assert sizing.throughput_mb_per_s >= gbps * 1000
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
