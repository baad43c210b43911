"""Cloud rules: each triggered by a small change to a small AWS blueprint, and quiet on it and on the lab."""

from __future__ import annotations

import copy

from tests.helpers import hits, shipped

CODES = ("CLOUD001", "CLOUD002", "CLOUD003", "CLOUD004", "CLOUD005", "CLOUD006")

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


def test_ssh_open_to_the_world_warns():
    data = p5()
    data["cloud"]["admin_cidr"] = "0.0.0.0/0"
    (h,) = hits(data, "CLOUD005")
    assert str(h.severity) == "warning" and h.path == ("cloud", "admin_cidr")
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


def test_cpu_instances_need_no_placement_group_or_reservation():
    data = p5()
    data["node_types"]["head"] = {"instance": "c7i.8xlarge"}
    data["node_groups"][1].update(count=2, hostnames="head[01-02]")
    data["cloud"]["placement_group"] = False
    del data["cloud"]["reservation"]
    data["node_groups"][0].update(count=1, hostnames="gpu01")  # leave the GPU group out of CLOUD002/006
    for code in CODES:
        assert hits(data, code) == [], code
