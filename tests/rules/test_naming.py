"""Naming rules: each triggered by a small change to the lab blueprint, and quiet on the original."""

from __future__ import annotations

import pytest

from clusterctl.errors import BlueprintError
from tests.helpers import hits, lab, plan_of


def test_host_in_two_groups():
    data = lab()
    data["node_groups"][1]["hostnames"] = "gpu02"
    (h,) = hits(data, "NAME001")
    assert h.path == ("node_groups", 1, "hostnames")
    assert "1 host name(s) of node group head are already used by node group gpu (gpu02)" in h.message


def test_next_host_name_in_another_group_is_quiet():
    data = lab()
    data["node_groups"][1]["hostnames"] = "gpu03"  # right after gpu[01-02]
    assert hits(data, "NAME001") == []


def test_host_twice_in_one_group():
    data = lab()
    data["node_groups"][0].update(hostnames="gpu[01-02],gpu01", count=3)
    (h,) = hits(data, "NAME001")
    assert "node group gpu names 1 host(s) more than once (gpu01)" in h.message


def test_host_named_like_a_switch():
    data = lab()
    data["node_groups"][1]["hostnames"] = "ib-leaf01"
    (h,) = hits(data, "NAME001")
    assert h.path == ("fabrics", 0, "name")
    assert "leaf switch name(s) of fabric ib are also host names (node group head: ib-leaf01)" in h.message


def test_duplicate_check_is_one_finding_per_group_pair():
    data = lab()
    for g in data["node_groups"]:
        g.pop("racks", None)
    data["node_groups"][0].update(count=50000, hostnames="gpu[00001-50000]")
    data["node_groups"].append({"name": "more", "type": "hgx", "count": 50000, "hostnames": "gpu[00001-50000]"})
    data.pop("fabrics")
    plan = plan_of(data)
    from clusterctl.rules.naming import unique_hosts, valid_hosts
    found = list(unique_hosts(plan)) + list(valid_hosts(plan))  # its time: benchmarks/bench_hotspots.py
    (h,) = found
    assert "50,000 host name(s) of node group more are already used by node group gpu" in h.message
    assert "(50,000 in all)" in h.message


def test_invalid_host_names():
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu_[01-02]"
    (h,) = hits(data, "NAME002")
    assert str(h.severity) == "error" and h.path == ("node_groups", 0, "hostnames")
    assert "2 name(s) of node group gpu are not valid host names: 'gpu_01' has an underscore" in h.message


def test_dot_and_hyphen_and_length():
    data = lab()
    data["node_groups"][1]["hostnames"] = "head01.example.com"
    (h,) = hits(data, "NAME002")
    assert "has a dot" in h.message
    data["node_groups"][1]["hostnames"] = "head-"
    (h,) = hits(data, "NAME002")
    assert "starts or ends with a hyphen" in h.message
    data["node_groups"][1]["hostnames"] = "h" * 64
    (h,) = hits(data, "NAME002")
    assert "64 characters" in h.message


def test_hyphen_inside_and_63_characters_are_valid():
    data = lab()
    data["node_groups"][1]["hostnames"] = "head-01"
    assert hits(data, "NAME002") == []
    data["node_groups"][1]["hostnames"] = "h" * 63
    assert hits(data, "NAME002") == []


def test_upper_case_is_a_warning():
    data = lab()
    data["node_groups"][0]["hostnames"] = "GPU[01-02]"
    (h,) = hits(data, "NAME002")
    assert str(h.severity) == "warning"
    assert "2 name(s) of node group gpu have upper-case letters (GPU01, GPU02)" in h.message


def test_fabric_names_that_would_make_invalid_switch_names_are_refused_at_load():
    data = lab()
    data["fabrics"][0]["name"] = "ib_fabric"
    with pytest.raises(BlueprintError) as exc:
        hits(data, "NAME002")
    (p,) = exc.value.problems
    assert p.path == ("fabrics", 0, "name") and "ib_fabric" in p.message


def test_count_differs_from_host_list():
    data = lab()
    data["node_groups"][0]["count"] = 4
    (h,) = hits(data, "NAME003")
    assert h.path == ("node_groups", 0, "hostnames")
    assert "node group gpu has count: 4 but hostnames 'gpu[01-02]' names 2 host(s)" in h.message
    data["node_groups"][0]["hostnames"] = "gpu[01-04]"
    assert hits(data, "NAME003") == []


def test_duplicate_section_names():
    data = lab()
    data["fabrics"][1]["name"] = "ib"
    data["storage"][1]["name"] = "home"
    data["node_groups"][1]["name"] = "gpu"
    data["slurm"]["partitions"][0]["groups"] = ["gpu"]
    found = hits(data, "NAME004")
    paths = {h.path for h in found}
    assert {("fabrics", 1, "name"), ("storage", 1, "name"), ("node_groups", 1, "name")} <= paths
    assert any("fabric name 'ib' is used twice (first at fabrics[0].name)" in h.message for h in found)


def test_similar_section_names_are_not_duplicates():
    data = lab()
    data["fabrics"][1]["name"] = "ib2"
    data["storage"][1]["name"] = "home2"
    data["racks"].append({"names": "lab02", "profile": "lab"})
    assert hits(data, "NAME004") == []


def test_duplicate_cdu_names():
    data = lab()
    data["cooling"] = {"cdus": [{"name": "cdu1", "capacity_kw": 100, "flow_lpm": 100, "supply_c": 30},
                                {"name": "cdu1", "capacity_kw": 100, "flow_lpm": 100, "supply_c": 30}]}
    (h,) = hits(data, "NAME004")
    assert h.path == ("cooling", "cdus", 1, "name")


def test_rack_named_by_two_entries():
    data = lab()
    data["racks"].append({"names": "lab[01-02]", "profile": "lab"})
    (h,) = hits(data, "NAME004")
    assert h.path == ("racks", 1, "names")
    assert "1 rack name(s) of racks[1] (lab[01-02]) are already named by racks[0] (lab01): lab01" in h.message
