"""Power rules: each triggered by a small change to the lab blueprint, and quiet on the original."""

from __future__ import annotations

from tests.helpers import hits, lab, plan_of


def test_rack_just_within_its_budget_is_quiet():
    data = lab()
    data["rack_profiles"]["lab"]["power_kw"] = 23.3  # the lab rack draws 23.22 kW
    assert hits(data, "POWER001") == []
    data["rack_profiles"]["lab"]["power_kw"] = 23.2
    (h,) = hits(data, "POWER001")
    assert "rack lab01 draws 23.2 kW of a 23.2 kW budget" in h.message


def test_rack_over_budget_names_the_rack_and_the_numbers():
    data = lab()
    data["rack_profiles"]["lab"]["power_kw"] = 20
    (h,) = hits(data, "POWER001")
    assert h.path == ("rack_profiles", "lab", "power_kw")
    assert "rack lab01 draws" in h.message and "of a 20.0 kW budget" in h.message
    assert "2 × hgx-h100-8gpu at 10.2 kW" in h.message


def test_feed_capacity_under_2n_with_derating():
    data = lab()
    prof = data["rack_profiles"]["lab"]
    prof["feed_kw"] = 25  # one surviving feed: 25 kW x 0.8 = 20 kW < rack draw (23.2 kW)
    (h,) = hits(data, "POWER002")
    assert "1 × 25 kW × 0.8 continuous = 20.0 kW" in h.message
    prof["continuous_load_factor"] = 1.0
    prof["feed_kw"] = plan_of(data).racks[0].power_kw + 0.1
    assert hits(data, "POWER002") == []


def test_n_plus_1_uses_all_but_one_feed():
    data = lab()
    prof = data["rack_profiles"]["lab"]
    assert plan_of(data).racks[0].power_kw == 23.22
    # 2 of 3 feeds: 2 × 14.5 kW × 0.8 = 23.2 kW < 23.22 kW (all 3 feeds would carry it: 34.8 kW)
    prof.update(redundancy="N+1", feeds=3, feed_kw=14.5)
    (h,) = hits(data, "POWER002")
    assert "with N+1 feeds only 2 × 14.5 kW × 0.8 continuous = 23.2 kW survive" in h.message
    # 2 × 14.6 kW × 0.8 = 23.36 kW carries it (one feed, as 2N would count, would not: 11.7 kW)
    prof["feed_kw"] = 14.6
    assert hits(data, "POWER002") == []


def test_2n_needs_an_even_feed_count():
    data = lab()
    data["rack_profiles"]["lab"]["feeds"] = 3
    (h,) = hits(data, "POWER003")
    assert h.path == ("rack_profiles", "lab", "feeds")
    data["rack_profiles"]["lab"]["feeds"] = 4
    assert hits(data, "POWER003") == []
    data["rack_profiles"]["lab"].update(feeds=3, redundancy="N+1")  # an odd count is fine for N+1
    assert hits(data, "POWER003") == []


def test_site_power_error_and_headroom_warning():
    data = lab()
    draw = plan_of(data).it_power_kw
    data["site"]["it_power_kw"] = round(draw * 0.9, 1)
    (h,) = hits(data, "POWER004")
    assert str(h.severity) == "error" and f"{draw:.1f} kW" in h.message
    data["site"]["it_power_kw"] = round(draw / 0.95, 1)
    (h,) = hits(data, "POWER004")
    assert str(h.severity) == "warning"
    data["site"]["it_power_kw"] = 25.9  # 23.22 kW is 89.7 %: under the 90 % headroom line
    assert hits(data, "POWER004") == []
