"""Space rules: triggered by small changes to the lab blueprint or a GB200 NVL72 fragment, quiet on both."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab
from tests.rules.test_nvlink import nvl72

SPACE = ("SPACE001", "SPACE002", "SPACE003", "SPACE004")


@pytest.mark.parametrize("make", [lab, nvl72], ids=["lab", "nvl72"])
def test_lab_and_nvl72_are_quiet(make):
    data = make()
    for code in SPACE:
        assert hits(data, code) == [], code


def test_rack_units_name_the_parts():
    data = lab()
    data["rack_profiles"]["lab"]["units"] = 14  # 2 × 6 U + 1 U head + 2 × 1 U switches = 15 U
    (h,) = hits(data, "SPACE001")
    assert h.path == ("racks", 0, "profile")
    assert ("rack lab01 needs 15 U of 14 U (1 × cpu-1u at 1 U + 2 × hgx-h100-8gpu at 6 U + 1 × qm9700 at 1 U "
            "+ 1 × sn2201 at 1 U)") in h.message


def test_reserved_units_count():
    data = lab()
    data["rack_profiles"]["lab"]["reserved_u"] = 33
    assert hits(data, "SPACE001") == []  # 15 + 33 = 48
    data["rack_profiles"]["lab"]["reserved_u"] = 34
    (h,) = hits(data, "SPACE001")
    assert "needs 49 U of 48 U" in h.message and "+ 34 U reserved" in h.message


def test_group_that_overflows_its_racks():
    data = lab()
    data["racks"].append({"names": "r[01-32]", "profile": "lab"})
    data["node_groups"][0].update(count=132, hostnames="gpu[001-132]", racks="r[01-32]", per_rack=4)
    (h,) = hits(data, "SPACE002")
    assert h.path == ("node_groups", 0, "racks")
    assert "group gpu needs 33 racks at 4 per rack for 132 nodes, names 32; 4 node(s)" in h.message
    data["node_groups"][0].update(count=128, hostnames="gpu[001-128]")
    assert hits(data, "SPACE002") == []


def test_bare_metal_group_without_racks_is_unchecked():
    data = lab()
    del data["node_groups"][1]["racks"]
    (h,) = hits(data, "SPACE003")
    assert str(h.severity) == "warning" and h.path == ("node_groups", 1)
    assert "group head (1 × cpu-1u, 0.8 kW) names no racks" in h.message


def test_rack_system_rack_takes_only_its_trays():
    data = nvl72()
    data["node_groups"][1]["racks"] = "nv01"  # the head node into an NVL72 rack
    (h,) = hits(data, "SPACE004")
    assert h.path == ("node_groups", 1, "racks")
    assert "group head (cpu-1u) names rack nv01, a nvl rack that takes only gb200-nvl72-tray trays" in h.message


def test_rack_system_rack_holds_at_most_its_trays():
    data = nvl72()
    data["node_groups"][0]["per_rack"] = 19
    (h,) = hits(data, "SPACE004")
    assert h.path == ("racks", 1, "profile")
    assert "rack nv01 holds 19 gb200-nvl72-tray trays; a gb200-nvl72 rack has 18" in h.message
