"""NAME009: every planned address is written into the cluster's zones under one name (plan/site_records.py); a
name that is no DNS label, or one name for two addresses, is an error before the dns target refuses it."""

from __future__ import annotations

import pytest

from clusterctl.targets import RenderError, render_targets
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


def test_name009_a_cdu_name_that_is_no_label():
    data = shipped("gb200-nvl72-8rack")
    data["cooling"]["cdus"][0]["name"] = "cdu_a"
    for profile in data["rack_profiles"].values():
        if profile.get("cdu") == "cdu-a":
            profile["cdu"] = "cdu_a"
    (h,) = hits(data, "NAME009")
    assert h.path == ("cooling", "cdus", 0, "name")
    assert h.message.startswith("the DNS name 'cdu_a' of 10.42.0.114 (cdu of cdu_a) is not a DNS label")


@pytest.mark.parametrize("name", ["lab-2node", "lab-ha", "dgx-h100-superpod-4su", "gb200-nvl72-8rack",
                                  "hgx-h200-roce-1024", "aws-p5"])
def test_name009_quiet_on_the_shipped_blueprints(name):
    assert hits(shipped(name), "NAME009") == []
