"""NAME009: every planned address is written into the cluster's zones under one name (plan/site_records.py); a
name that is no DNS label, or one name for two addresses, is an error before the dns target refuses it."""

from __future__ import annotations

import pytest

from clusterctl.targets import RenderError, render_targets
from clusterctl.plan.site_records import site_records
from tests.helpers import hits, lab, plan_of, shipped


def test_name009_a_host_named_like_another_hosts_bmc():
    data = lab()
    data["node_groups"][1]["hostnames"] = "gpu01-bmc"  # the head node takes the name of gpu01's BMC record
    (h,) = hits(data, "NAME009")
    assert h.path == ("node_groups", 1, "hostnames")
    assert h.message == ("the DNS name 'gpu01-bmc' would be both 10.11.0.17 (bmc of gpu01) and 10.10.0.19 "
                         "(host of gpu01-bmc)")
    assert h.hint.startswith("rename gpu01-bmc: the names <host>-bmc, -ib<k>, -rail<k>, -stor<k>, -lo")
    with pytest.raises(RenderError, match="gpu01-bmc"):
        render_targets(plan_of(data), ["dns"])


def test_name009_names_differing_in_case_only_are_one_name():
    data = lab()
    data["node_groups"][1]["hostnames"] = "GPU01-BMC"
    (h,) = hits(data, "NAME009")
    assert "'GPU01-BMC' would be both 10.11.0.17 (bmc of gpu01)" in h.message


def test_name009_a_cdu_or_rack_name_with_underscore_or_dot_is_written_with_hyphens():
    """'.' and '_' in a rack's or CDU's name become '-' in its DNS name (NAME006 keeps such names distinct)."""
    data = shipped("gb200-nvl72-8rack")
    data["cooling"]["cdus"][0]["name"] = "cdu_a"
    for profile in data["rack_profiles"].values():
        if "cdu-a" in profile.get("cdus", []):
            profile["cdus"] = ["cdu_a" if c == "cdu-a" else c for c in profile["cdus"]]
    assert hits(data, "NAME009") == []
    names = {r.name: r.owner for r in site_records(plan_of(data)) if r.kind == "cdu"}
    assert names["cdu-a"] == "cdu_a"


def test_name009_a_host_name_whose_bmc_name_is_too_long():
    data = shipped("lab-2node")  # no inventory naming the hosts
    data["node_groups"][0]["hostnames"] = "g" + "x" * 58 + "[01-02]"  # 61 characters: a label; with -bmc 65
    found = hits(data, "NAME009")  # one finding per host, both hosts' BMC names too long
    assert [h.message.split("'")[1] for h in found] == [f"g{'x' * 58}01-bmc", f"g{'x' * 58}02-bmc"]
    h = found[0]
    assert "is not a DNS label: letters, digits and '-' inside, at most 63 characters" in h.message


@pytest.mark.parametrize("name", ["lab-2node", "lab-ha", "dgx-h100-superpod-4su", "gb200-nvl72-8rack",
                                  "hgx-h200-roce-1024", "aws-p5"])
def test_name009_quiet_on_the_shipped_blueprints(name):
    assert hits(shipped(name), "NAME009") == []
