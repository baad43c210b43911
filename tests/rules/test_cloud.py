"""Cloud rules: each triggered by a small change to a small AWS blueprint, and quiet on it and on the lab."""

from __future__ import annotations

import copy
import json

import pytest

from clusterctl import kinds
from clusterctl.blueprint.software import Capability
from clusterctl.cloud.stack.identity import CAPABILITIES
from tests.helpers import cli, hits, shipped, to_yaml

CODES = ("CLOUD001", "CLOUD002", "CLOUD003", "CLOUD004", "CLOUD005", "CLOUD006", "CLOUD007", "CLOUD008", "CLOUD009",
         "CLOUD010", "CLOUD011", "CLOUD012", "CLOUD013", "CLOUD014", "CLOUD015", "CLOUD016")

P5 = {
    "name": "p5-small",
    "node_types": {"p5": {"instance": "p5.48xlarge"}, "head": {"server": "cpu-1u"}},
    "node_groups": [
        {"name": "gpu", "type": "p5", "count": 4, "hostnames": "gpu[01-04]"},
        {"name": "head", "type": "head", "role": "head", "count": 1, "hostnames": "head01"},
    ],
    "slurm": {"version": "24.11", "controllers": "head01",
              "partitions": [{"name": "gpu", "groups": ["gpu"], "default": True}]},
    "software": {"driver": "550", "cuda": "12.4"},
    "cloud": {"provider": "aws", "region": "us-east-1", "zone": "us-east-1a", "reservation": "cr-0123"},
}


def p5():
    return copy.deepcopy(P5)


def test_cloud_blueprint_and_lab_are_quiet():
    for data in (p5(), shipped("lab-2node")):
        for code in CODES:
            assert hits(data, code) == [], code


def test_instance_not_offered_in_region_lists_where_it_is():
    data = p5()
    data["cloud"].update(region="eu-west-1", zone="eu-west-1a")
    (h,) = hits(data, "CLOUD001")
    assert h.path == ("cloud", "region")
    assert "p5.48xlarge (node type p5) is not offered in eu-west-1" in h.message
    assert "us-east-1, us-east-2, us-west-2" in h.hint


def test_placement_group_required_for_efa():
    data = p5()
    data["cloud"]["placement_group"] = False
    (h,) = hits(data, "CLOUD002")
    assert h.path == ("cloud", "placement_group")
    assert "4 × p5.48xlarge (node type p5) need an EC2 cluster placement group for their efa network" in h.message


def test_placement_group_not_needed_for_one_node():
    data = p5()
    data["cloud"]["placement_group"] = False
    data["node_groups"][0].update(count=1, hostnames="gpu01")
    assert hits(data, "CLOUD002") == []


def test_instance_without_cloud_section():
    data = p5()
    del data["cloud"]
    (h,) = hits(data, "CLOUD003")
    assert str(h.severity) == "error" and h.path == ("node_types", "p5", "instance")
    assert "no cloud: section" in h.message


def test_instance_of_another_provider():
    data = p5()
    data["node_types"]["a3"] = {"instance": "a3-megagpu-8g"}
    data["node_groups"].append({"name": "gcp", "type": "a3", "count": 1, "hostnames": "a3n01"})
    (h,) = hits(data, "CLOUD003")
    assert h.path == ("node_types", "a3", "instance")
    assert "a3-megagpu-8g, a gcp instance, but cloud.provider is aws" in h.message


def test_bare_metal_gpu_group_in_a_cloud_cluster_warns():
    data = p5()
    data["node_types"]["hgx"] = {"server": "hgx-h100-8gpu"}
    data["node_groups"].append({"name": "onprem", "type": "hgx", "count": 2, "hostnames": "hgx[01-02]"})
    (h,) = hits(data, "CLOUD003")
    assert str(h.severity) == "warning" and h.path == ("node_groups", 2, "type")
    assert "hybrid clusters are not supported yet" in h.message


def test_zone_must_be_in_region():
    data = p5()
    data["cloud"]["zone"] = "us-west-2a"
    (h,) = hits(data, "CLOUD004")
    assert h.path == ("cloud", "zone") and "zone us-west-2a is not in aws region us-east-1" in h.message
    data["cloud"]["zone"] = "us-east-1-bos-1a"  # Local Zone
    assert hits(data, "CLOUD004") == []


def test_zone_forms_of_gcp_and_azure():
    data = p5()
    data["node_types"]["p5"] = {"instance": "a3-megagpu-8g"}
    data["cloud"].update(provider="gcp", region="us-central1", zone="us-central1a")
    (h,) = hits(data, "CLOUD004")
    assert "us-central1-a" in h.hint
    data["cloud"]["zone"] = "us-central1-a"
    assert hits(data, "CLOUD004") == []
    data["node_types"]["p5"] = {"instance": "Standard_ND96isr_H100_v5"}
    data["cloud"].update(provider="azure", region="eastus", zone="eastus-1")
    assert len(hits(data, "CLOUD004")) == 1
    data["cloud"]["zone"] = "2"
    assert hits(data, "CLOUD004") == []


def test_ssh_open_to_the_world_is_an_error():
    data = p5()
    data["cloud"]["admin_cidr"] = "0.0.0.0/0"
    (h,) = hits(data, "CLOUD005")
    assert str(h.severity) == "error" and h.path == ("cloud", "admin_cidr")
    assert "whole internet" in h.message


def test_admin_cidr_must_be_a_prefix():
    data = p5()
    data["cloud"]["admin_cidr"] = "203.0.113.7/24"
    (h,) = hits(data, "CLOUD005")
    assert str(h.severity) == "error" and "is not a network prefix" in h.message


def test_gpu_capacity_without_reservation():
    data = p5()
    del data["cloud"]["reservation"]
    (h,) = hits(data, "CLOUD006")
    assert str(h.severity) == "info" and h.path == ("cloud", "reservation")
    assert "node group gpu launches 4 × p5.48xlarge (32 GPUs) without a capacity reservation" in h.message
    data["node_groups"][0].update(count=8, hostnames="gpu[01-08]")
    (h,) = hits(data, "CLOUD006")
    assert str(h.severity) == "warning" and "8 × p5.48xlarge (64 GPUs)" in h.message
    data["node_groups"][0].update(count=1, hostnames="gpu01")
    assert hits(data, "CLOUD006") == []


def test_elastic_gpu_group_without_reservation_is_left_to_cloud014():
    """An elastic group is on-demand capacity by design; CLOUD014 says a reservation would bill while it is
    suspended, so CLOUD006 must not ask for one (lab-cloud is quiet)."""
    data = p5()
    del data["cloud"]["reservation"]
    data["node_groups"][0]["cloud"] = {"elastic": True}
    assert hits(data, "CLOUD006") == [] and hits(data, "CLOUD014") == []


def test_cpu_instances_need_no_placement_group_or_reservation():
    data = p5()
    data["node_types"]["head"] = {"instance": "c7i.8xlarge"}
    data["node_groups"][1].update(count=2, hostnames="head[01-02]")
    data["cloud"]["placement_group"] = False
    del data["cloud"]["reservation"]
    data["node_groups"][0].update(count=1, hostnames="gpu01")  # leave the GPU group out of CLOUD002/006
    for code in CODES:
        assert hits(data, code) == [], code


def test_shipped_cloud_blueprints_are_quiet_on_the_new_rules():
    for name in ("aws-p5", "gcp-a3-mega", "azure-nd-h100-v5"):
        for code in ("CLOUD007", "CLOUD008"):
            assert hits(shipped(name), code) == [], (name, code)


def test_one_reservation_for_two_gpu_instance_types():
    data = p5()
    data["node_types"]["p4"] = {"instance": "p4d.24xlarge"}
    data["node_groups"].append({"name": "a100", "type": "p4", "count": 2, "hostnames": "a100-[01-02]"})
    found = hits(data, "CLOUD007")
    (h,) = [f for f in found if f.code == "CLOUD007" and f.path == ("cloud", "reservation")]
    assert str(h.severity) == "error"
    assert ("reservation cr-0123 is for one instance type, but the GPU node groups use 2 "
            "(p5.48xlarge: gpu (4); p4d.24xlarge: a100 (2)); on aws only one type can launch into it") in h.message


def test_zonal_reservation_without_a_zone():
    data = p5()
    del data["cloud"]["zone"]
    (h,) = hits(data, "CLOUD007")
    assert h.code == "CLOUD007" and h.path == ("cloud", "zone")
    assert "reservation cr-0123 is zonal, but cloud.zone is not set" in h.message and "us-east-1a" in h.hint
    del data["cloud"]["reservation"]
    assert hits(data, "CLOUD007") == []


def test_azure_reservation_groups_hold_several_sizes():
    data = shipped("azure-nd-h100-v5")
    data["node_types"]["h200"] = {"instance": "Standard_ND96isr_H200_v5"}
    data["node_groups"].append({"name": "h200", "type": "h200", "count": 2, "hostnames": "ndh200-[01-02]"})
    assert hits(data, "CLOUD007") == []


def fsx(**tier):
    data = p5()
    data["storage"] = [{"name": "fsx", "tier": "parallel", "filesystem": "lustre", "mount": "/fsx",
                        "capacity_tb": 52.7, "read_gb_per_s": 48, "write_gb_per_s": 48, **tier}]
    return data


def test_fsx_bandwidth_beyond_1000_mb_per_tib():
    assert hits(fsx(), "CLOUD008") == []  # 47.9 TiB at 1,000 MB/s: 48 GB/s within rounding
    (h,) = hits(fsx(write_gb_per_s=60), "CLOUD008")
    assert h.code == "CLOUD008" and str(h.severity) == "error" and h.path == ("storage", 0, "write_gb_per_s")
    assert ("Lustre tier fsx: 60 GB/s write needs 60.0 TiB (66.0 TB) of FSx for Lustre PERSISTENT_2 at its fastest "
            "1,000 MB/s per TiB; capacity_tb 52.7 (47.9 TiB) gives at most 47.9 GB/s") in h.message
    assert "raise capacity_tb to at least 66.0 or lower write_gb_per_s to 47.9" in h.hint
    (h,) = hits(fsx(read_gb_per_s=100, write_gb_per_s=60), "CLOUD008")  # one finding: the larger figure
    assert h.path == ("storage", 0, "read_gb_per_s") and "100 GB/s read needs 100.0 TiB" in h.message


def test_managed_lustre_maxima_of_gcp_and_azure():
    data = shipped("gcp-a3-mega")  # 158.3 TB = 144 TiB: up to 144 GB/s at the 1000 MBps/TiB tier
    data["storage"][0]["read_gb_per_s"] = 144
    assert hits(data, "CLOUD008") == []
    data["storage"][0]["read_gb_per_s"] = 200
    (h,) = hits(data, "CLOUD008")
    assert "of Managed Lustre at its fastest 1,000 MB/s per TiB" in h.message and "at most 144.0 GB/s" in h.message
    data = shipped("azure-nd-h100-v5")  # 140.7 TB = 128 TiB x 500 MB/s = 64 GB/s
    data["storage"][0]["write_gb_per_s"] = 80
    (h,) = hits(data, "CLOUD008")
    assert ("80 GB/s write needs 160.0 TiB (175.9 TB) of Azure Managed Lustre at its fastest 500 MB/s per TiB; "
            "capacity_tb 140.7 (128.0 TiB) gives at most 64.0 GB/s") in h.message


def test_other_file_systems_and_bare_metal_lustre_are_not_checked():
    assert hits(fsx(filesystem="weka", write_gb_per_s=200), "CLOUD008") == []
    data = fsx(write_gb_per_s=200)
    del data["cloud"]
    data["node_types"]["p5"] = {"server": "hgx-h100-8gpu"}
    assert hits(data, "CLOUD008") == []


def test_cloud_host_names_an_instance_cannot_take():
    """CLOUD009: the instance takes its blueprint name (tests/cloud/test_hostnames.py has every provider); an
    upper-case name is quiet on bare metal (NAME002 only warns) but an error on a cloud."""
    data = p5()
    data["node_groups"][0]["hostnames"] = "GPU[01-04]"
    (h,) = hits(data, "CLOUD009")
    assert "GPU01" in h.message and h.severity.name == "ERROR"
    del data["cloud"]
    data["node_types"]["p5"] = {"server": "hgx-h100-8gpu"}
    assert hits(data, "CLOUD009") == []


def _p5_price(region: str = "us-east-1") -> float:
    from clusterctl.catalog.prices import shipped_prices
    return shipped_prices().price("p5.48xlarge", region).usd_per_hour


def test_hourly_budget_below_the_static_groups():
    data = p5()
    data["cloud"]["hourly_budget_usd"] = 100
    (h,) = hits(data, "CLOUD016")
    p = _p5_price()
    assert h.path == ("cloud", "hourly_budget_usd")
    assert h.message == (f"the static groups cost ${4 * p:,.2f} per hour at list price in us-east-1 "
                         f"(4 × p5.48xlarge at ${p:,.2f}), over cloud.hourly_budget_usd $100.00")


def test_hourly_budget_exceeded_only_with_elastic_groups_at_full_size():
    data = p5()
    data["node_groups"][0].update(count=2, hostnames="gpu[01-02]")
    data["node_groups"].insert(1, {"name": "burst", "type": "p5", "count": 6, "hostnames": "gpu[03-08]",
                                   "cloud": {"elastic": True}})
    data["slurm"]["partitions"][0]["groups"] = ["gpu", "burst"]
    p = _p5_price()
    data["cloud"]["hourly_budget_usd"] = round(5 * p, 2)  # covers the 2 static nodes, not all 8
    (h,) = hits(data, "CLOUD016")
    assert h.message == (f"with the elastic groups at full size the cluster costs up to ${8 * p:,.2f} per hour at "
                         f"list price in us-east-1 (static ${2 * p:,.2f}: 2 × p5.48xlarge at ${p:,.2f}; "
                         f"elastic ${6 * p:,.2f}: 6 × p5.48xlarge at ${p:,.2f}), over cloud.hourly_budget_usd "
                         f"${5 * p:,.2f}")
    data["cloud"]["hourly_budget_usd"] = round(8 * p, 2) + 1
    assert hits(data, "CLOUD016") == []


def test_hourly_budget_names_the_unpriced_instances():
    data = p5()
    data["cloud"].update(region="us-east-2", zone="us-east-2a", hourly_budget_usd=10)
    data["node_types"]["head"] = {"instance": "c7i.8xlarge"}
    (h,) = hits(data, "CLOUD016")
    assert h.message.endswith("; 1 × c7i.8xlarge (group head) have no list price in the catalog for us-east-2 and "
                              "are not counted")


def test_hourly_budget_that_cannot_be_checked_for_unpriced_types_is_an_info():
    from clusterctl.rules.base import Severity

    data = p5()
    data["cloud"].update(region="us-east-2", zone="us-east-2a", hourly_budget_usd=1000)
    data["node_types"]["head"] = {"instance": "c7i.8xlarge"}
    (h,) = hits(data, "CLOUD016")
    p = _p5_price("us-east-2")
    assert h.severity == Severity.INFO
    assert h.message == (f"cloud.hourly_budget_usd $1,000.00 covers the priced instances (${4 * p:,.2f} per hour at "
                         "list price in us-east-2) but cannot be checked for the rest; 1 × c7i.8xlarge (group head) "
                         "have no list price in the catalog for us-east-2 and are not counted")
# --- elastic node groups and existing identities ---------------------------------------------------------------

def elastic(data: dict, group: int = 0) -> dict:
    data["node_groups"][group]["cloud"] = {"elastic": True}
    return data


def located(data: dict, code: str, tmp_path) -> list[dict]:
    """The findings of ``code`` as `clusterctl validate --format json` prints them (file, line, column)."""
    path = tmp_path / "bp.yaml"
    path.write_text(to_yaml(data))
    out = json.loads(cli("validate", str(path), "--format", "json", "--fail-on", "never").stdout)
    return [f for f in out["findings"] if f["code"] == code]


def line_with(data: dict, text: str) -> int:
    return next(n for n, line in enumerate(to_yaml(data).splitlines(), 1) if text in line)


def test_elastic_p5_is_quiet_but_for_the_reservation_note():
    data = elastic(p5())
    for code in CODES:
        if code != "CLOUD014":
            assert hits(data, code) == [], code
    (h,) = hits(data, "CLOUD014")
    assert h.path == ("cloud", "reservation")
    assert "elastic groups gpu (4 x p5.48xlarge) are created in reservation cr-0123" in h.message


def test_elastic_bare_metal_group_is_an_error_at_the_key(tmp_path):
    data = elastic(shipped("lab-2node"))
    (h,) = hits(data, "CLOUD010")
    group = data["node_groups"][0]
    assert h.path == ("node_groups", 0, "cloud", "elastic")
    assert f"node group {group['name']} ({group['count']} nodes) is elastic, but its node type" in h.message
    assert "not a cloud instance type; the blueprint has no cloud: section" in h.message
    (f,) = located(data, "CLOUD010", tmp_path)
    assert f["location"]["line"] == line_with(data, "elastic: true")


def test_elastic_controller_or_login_group_is_an_error():
    data = p5()
    data["node_types"]["head"] = {"instance": "c7i.8xlarge"}
    (h,) = hits(elastic(copy.deepcopy(data), 1), "CLOUD012")
    assert h.path == ("node_groups", 1, "cloud", "elastic")
    assert h.message == "node group head is elastic, but it holds the Slurm controller/accounting host(s) head01"
    data["node_groups"].append({"name": "login", "type": "head", "role": "login", "count": 2,
                                "hostnames": "login[1-2]", "cloud": {"elastic": True}})
    (h,) = hits(data, "CLOUD012")
    assert "node group login is elastic, but it is a login group" in h.message


def test_resume_timeout_shorter_than_the_estimate_warns_with_the_sum(tmp_path):
    data = elastic(p5())
    data["slurm"]["power_save"] = {"resume_timeout_s": 600}
    (h,) = hits(data, "CLOUD013")
    assert h.message == ("ResumeTimeout is 600 s, but a p5.48xlarge node of elastic group gpu needs about 960 s to "
                         "register (boot 300 s + driver check (image stack kept) 60 s + bootstrap Ansible run 600 s; "
                         "clusterctl's estimate)")
    assert "at least 960" in h.hint
    (f,) = located(data, "CLOUD013", tmp_path)
    assert f["location"]["line"] == line_with(data, "resume_timeout_s: 600")
    data["software"]["image_stack"] = "replace"
    data["slurm"]["power_save"] = {"resume_timeout_s": 1500}
    (h,) = hits(data, "CLOUD013")
    assert "needs about 1,800 s" in h.message and "driver install and reboot (image_stack: replace) 900 s" in h.message
    data["slurm"]["power_save"] = {"resume_timeout_s": 1800}
    assert hits(data, "CLOUD013") == []


PROFILE = "arn:aws:iam::123456789012:instance-profile/site-head"


def test_existing_identity_without_what_the_controller_needs_is_an_error(tmp_path):
    data = elastic(p5())
    data["cloud"]["identities"] = {"head": {"existing": PROFILE, "grants": ["read-config", "read-secrets"]}}
    (h,) = hits(data, "CLOUD011")
    assert h.path == ("cloud", "identities", "head", "grants")
    assert h.message.startswith(f"the existing head identity {PROFILE} grants read-config, read-secrets, but the "
                                "head nodes need 3 more: manage-instances (")
    assert "pass-identity (" in h.message and "write-dns (" in h.message and "node group head" in h.message
    (f,) = located(data, "CLOUD011", tmp_path)
    assert f["location"]["line"] == line_with(data, "grants:") + 1  # the list value
    # static cluster: the head only reads its configuration and secrets
    data["node_groups"][0].pop("cloud")
    assert hits(data, "CLOUD011") == []
    data["cloud"]["identities"]["compute"] = {"existing": PROFILE, "grants": []}
    (h,) = hits(data, "CLOUD011")
    assert "grants nothing, but the compute nodes need 2 more: read-config" in h.message


def test_existing_identity_of_another_provider_is_an_error():
    data = p5()
    data["cloud"]["identities"] = {"compute": {"existing": "gpu-nodes@proj-1.iam.gserviceaccount.com",
                                               "grants": ["read-config", "read-secrets"]}}
    (h,) = hits(data, "CLOUD015")
    assert h.path == ("cloud", "identities", "compute", "existing")
    assert h.message == "the compute identity gpu-nodes@proj-1.iam.gserviceaccount.com is not a aws identity"
    data["cloud"]["identities"]["compute"]["existing"] = PROFILE
    assert hits(data, "CLOUD015") == []


@pytest.mark.parametrize("value, ok", [
    (PROFILE, True), ("arn:aws:iam::123456789012:role/path/gpu-nodes", True),
    ("gpu-nodes@my-project.iam.gserviceaccount.com", True),
    ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-1/providers/"
     "Microsoft.ManagedIdentity/userAssignedIdentities/gpu-nodes", True),
    ("arn:aws:iam::123456789012:user/alice", False), ("arn:aws:iam::12345:role/x", False),
    ("gpu@gmail.com", False), ("role/x", False), (PROFILE + " --debug", False),
])
def test_cloud_identity_kind(value, ok):
    assert (kinds.CLOUD_IDENTITY.explain(value) is None) is ok


def test_blueprint_capabilities_are_the_identity_modules():
    assert set(Capability.__args__) == set(CAPABILITIES) == {
        "read-config", "read-secrets", "manage-instances", "pass-identity", "write-dns"}


READS = {"read-config", "read-secrets"}
LAUNCHES = {"read-config", "read-secrets", "manage-instances", "pass-identity"}
RULE_NEEDS = {  # (blueprint, GPU group elastic) -> role -> the capabilities an existing identity of it must grant
    # written out here, not computed by clusterctl: the head group holds the Slurm controller; only it, and only
    # when a group is elastic, creates instances and passes them an identity (and on AWS names them in Route 53)
    ("aws-p5", False): {"compute": READS, "head": READS},
    ("aws-p5", True): {"compute": READS, "head": LAUNCHES | {"write-dns"}},
    ("gcp-a3-mega", False): {"compute": READS, "head": READS, "login": READS},
    ("gcp-a3-mega", True): {"compute": READS, "head": LAUNCHES, "login": READS},
    ("azure-nd-h100-v5", False): {"compute": READS, "head": READS, "login": READS},
    ("azure-nd-h100-v5", True): {"compute": READS, "head": LAUNCHES, "login": READS},
}
EXISTING = {"aws-p5": PROFILE, "gcp-a3-mega": "gpu-nodes@my-project.iam.gserviceaccount.com",
            "azure-nd-h100-v5": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-1/providers/"
                                "Microsoft.ManagedIdentity/userAssignedIdentities/nodes"}


@pytest.mark.parametrize("blueprint, is_elastic", sorted(RULE_NEEDS))
def test_existing_identities_granting_exactly_the_table_are_enough_and_each_capability_is_needed(blueprint,
                                                                                               is_elastic):
    data = shipped(blueprint)
    if is_elastic:
        elastic(data)
    needs = RULE_NEEDS[(blueprint, is_elastic)]
    assert {g.get("role", "compute") for g in data["node_groups"]} == set(needs)
    data["cloud"]["identities"] = {role: {"existing": EXISTING[blueprint], "grants": sorted(caps)}
                                   for role, caps in needs.items()}
    assert hits(data, "CLOUD011") == []
    for role, caps in needs.items():
        for cap in sorted(caps):
            data["cloud"]["identities"][role]["grants"] = sorted(caps - {cap})
            (h,) = hits(data, "CLOUD011")
            assert h.path == ("cloud", "identities", role, "grants")
            assert f"the {role} nodes need 1 more: {cap} (" in h.message
        data["cloud"]["identities"][role]["grants"] = sorted(caps)
