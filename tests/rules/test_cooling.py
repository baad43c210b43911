"""Cooling rules: triggered by small changes to the lab blueprint (or a liquid-cooled variant of it), quiet on
the original."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab, plan_of

COOL = ("COOL001", "COOL002", "COOL003", "COOL004", "COOL005", "COOL006", "COOL007")


def dlc():
    """The lab with direct-liquid-cooled HGX servers (75 % of their heat to liquid) fed by one CDU:
    liquid heat 2 × 10.2 kW × 0.75 = 15.3 kW, air heat 5.1 + 0.8 (head) + 2.02 (switches) = 7.92 kW."""
    data = lab()
    data["catalog"] = {"servers": {"hgx-dlc": {
        "gpus": {"model": "h100-sxm", "count": 8},
        "cpu": {"sockets": 2, "cores_per_socket": 52, "threads_per_core": 2},
        "memory_gb": 2048,
        "nics": [{"model": "cx7-400g", "count": 8, "role": "compute"},
                 {"model": "eth-1g-bmc", "count": 1, "role": "bmc"}],
        "power_kw": 10.2, "height_u": 6, "cooling": "liquid", "liquid_fraction": 0.75, "nvlink_domain_gpus": 8}}}
    data["node_types"]["hgx"] = {"server": "hgx-dlc"}
    data["cooling"] = {"cdus": [{"name": "cdu1", "capacity_kw": 40, "flow_lpm": 60, "supply_c": 32}]}
    data["rack_profiles"]["lab"].update(liquid_kw=20, air_kw=14, cdu="cdu1")
    return data


@pytest.mark.parametrize("make", [lab, dlc], ids=["lab", "liquid-lab"])
def test_lab_and_its_liquid_variant_are_quiet(make):
    data = make()
    for code in COOL:
        assert hits(data, code) == [], code


def test_cdu_over_capacity_names_the_kw_and_racks():
    data = dlc()
    data["cooling"]["cdus"][0]["capacity_kw"] = 10
    (h,) = hits(data, "COOL001")
    assert h.path == ("cooling", "cdus", 0, "capacity_kw")
    assert "15.3 kW of liquid heat from 1 rack(s)" in h.message and "rated 10 kW" in h.message
    data["cooling"]["cdus"][0]["capacity_kw"] = 15.3
    assert hits(data, "COOL001") == []


def test_cdu_flow_shows_the_formula_for_water_and_pg25():
    data = dlc()
    cdu = data["cooling"]["cdus"][0]
    cdu["flow_lpm"] = 20  # water: 15.3 / (0.997 × 4.18 × 10) × 60 = 22.03 L/min
    (h,) = hits(data, "COOL002")
    assert h.path == ("cooling", "cdus", 0, "flow_lpm")
    assert "needs 22.0 L/min" in h.message and "delivers 20 L/min" in h.message
    assert "15.3 kW / (0.997 kg/L × 4.18 kJ/(kg·K) × 10 K) × 60 s/min" in h.message
    cdu["flow_lpm"] = 23
    assert hits(data, "COOL002") == []
    cdu["coolant"] = "pg25"  # 15.3 / (1.02 × 3.85 × 10) × 60 = 23.38 L/min
    (h,) = hits(data, "COOL002")
    assert "needs 23.4 L/min" in h.message and "1.02 kg/L × 3.85 kJ/(kg·K)" in h.message
    cdu["delta_t_c"] = 12  # a larger design rise needs less flow: 19.5 L/min
    assert hits(data, "COOL002") == []


def test_cdus_in_parallel_share_the_loops_heat():
    data = dlc()
    data["cooling"]["cdus"] = [{"name": f"cdu{k}", "capacity_kw": 10, "flow_lpm": 30, "supply_c": 32} for k in (1, 2)]
    data["rack_profiles"]["lab"].pop("cdu")
    data["rack_profiles"]["lab"]["cdus"] = ["cdu1", "cdu2"]
    # 15.3 kW over two CDUs: 7.65 kW each, within 10 kW; one alone would carry 15.3 (over 10, not N+1)
    assert hits(data, "COOL001") == []
    data["cooling"]["cdus"][1]["capacity_kw"] = 5
    assert [h.message for h in hits(data, "COOL001")] == [
        "CDU cdu2 must remove 7.6 kW of liquid heat from 1 rack(s) but is rated 5 kW"]


@pytest.mark.parametrize("profile, words", [
    ({"cdu": "cdu1", "cdus": ["cdu1", "cdu2"]}, "give cdu (one CDU) or cdus (CDUs in parallel on the loop), not both"),
    ({"cdus": ["cdu1", "cdu1"]}, "cdu1 listed more than once"),
])
def test_a_loop_names_its_cdus_one_way_and_once(profile, words):
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.errors import BlueprintError
    from tests.helpers import to_yaml

    data = dlc()
    data["rack_profiles"]["lab"].pop("cdu")
    data["rack_profiles"]["lab"].update(profile)
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(to_yaml(data), "loop.yaml")
    assert words in str(e.value)


@pytest.mark.parametrize("section, change, words", [
    ("cdu", {"pumps": 2, "standby_pumps": 2},
     "cooling.cdus[0].standby_pumps: Value error, standby_pumps 2 must be below pumps 2"),
    ("tier", {"building_blocks": 4, "blocks_tolerated": 4},
     "storage[0].blocks_tolerated: Value error, blocks_tolerated 4 must be below building_blocks 4"),
])
def test_redundancy_that_leaves_nothing_running_is_refused_at_load(section, change, words):
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.errors import BlueprintError
    from tests.helpers import to_yaml

    data = dlc()
    (data["cooling"]["cdus"][0] if section == "cdu" else data["storage"][0]).update(change)
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(to_yaml(data), "redundant.yaml")
    assert words in str(e.value)


def test_rack_liquid_heat_over_the_loop():
    data = dlc()
    data["rack_profiles"]["lab"]["liquid_kw"] = 15
    (h,) = hits(data, "COOL003")
    assert h.path == ("rack_profiles", "lab", "liquid_kw")
    assert "rack lab01 sends 15.3 kW to its liquid loop of 15 kW" in h.message


def test_rack_air_heat_over_budget():
    data = lab()
    data["rack_profiles"]["lab"]["air_kw"] = 20
    (h,) = hits(data, "COOL004")
    assert h.path == ("rack_profiles", "lab", "air_kw")
    assert "rack lab01 rejects 23.2 kW to air of a 20 kW air budget" in h.message
    data = dlc()
    data["rack_profiles"]["lab"]["air_kw"] = 7  # 7.92 kW of air heat stays with the liquid-cooled servers
    (h,) = hits(data, "COOL004")
    assert "7.9 kW to air" in h.message and "15.3 kW to liquid" in h.message


def test_profile_without_heat_figures_is_not_checked_but_warned():
    data = lab()
    del data["rack_profiles"]["lab"]["air_kw"]
    assert hits(data, "COOL004") == []
    (h,) = hits(data, "COOL007")
    assert str(h.severity) == "warning" and h.path == ("rack_profiles", "lab")
    assert "neither air_kw nor liquid_kw" in h.message


def test_liquid_only_hardware_needs_a_loop_and_a_cdu():
    data = dlc()
    del data["rack_profiles"]["lab"]["cdu"]
    (h,) = hits(data, "COOL005")
    assert h.path == ("rack_profiles", "lab", "liquid_kw")
    assert "15.3 kW of liquid-only heat" in h.message and "has no cdu" in h.message
    data["rack_profiles"]["lab"]["liquid_kw"] = 0
    (h,) = hits(data, "COOL005")
    assert "has no liquid_kw and cdu" in h.message


def test_site_air_cooling_error_and_headroom_warning():
    data = lab()
    data["site"]["air_cooling_kw"] = 20
    (h,) = hits(data, "COOL006")
    assert str(h.severity) == "error" and h.path == ("site", "air_cooling_kw")
    assert "23.2 kW to room air (23.2 kW from racks)" in h.message and "20 kW air cooling" in h.message
    data["site"]["air_cooling_kw"] = 25  # 23.2 / 25 = 93 %
    (h,) = hits(data, "COOL006")
    assert str(h.severity) == "warning" and "93%" in h.message
    del data["site"]["air_cooling_kw"]
    assert hits(data, "COOL006") == []


def test_site_air_counts_switches_and_nodes_without_a_rack():
    data = lab()
    for fab in data["fabrics"]:
        del fab["switch_racks"]
    del data["node_groups"][1]["racks"]
    data["site"]["air_cooling_kw"] = 22
    (h,) = hits(data, "COOL006")
    assert "2.0 kW switches without a rack" in h.message and "0.8 kW nodes without a rack" in h.message


def test_liquid_profile_without_cdu_and_idle_cdu():
    data = dlc()
    del data["rack_profiles"]["lab"]["cdu"]
    found = {str(h.severity): h for h in hits(data, "COOL007")}
    assert found["warning"].path == ("rack_profiles", "lab", "liquid_kw")
    assert "removes 20 kW by liquid but names no cdu" in found["warning"].message
    assert found["info"].path == ("cooling", "cdus", 0, "name") and "CDU cdu1 feeds no rack" in found["info"].message


def test_liquid_heat_follows_the_plan():
    rack = plan_of(dlc()).racks[0]
    assert rack.liquid_heat_kw == pytest.approx(15.3) and rack.liquid_only_kw == pytest.approx(15.3)
