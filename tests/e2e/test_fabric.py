"""The ``fabric`` scenario through the real CLI (docs/rehearse.md, "The fabric scenario"), as CI runs it: a slice of
every routed fabric of hgx-h200-roce-1024 (the rail-optimized compute fabric ``roce``: rail 0's leaves of two
scalable units; ``converged``; ``oob``), each switch running Debian's FRR with its rendered frr.conf, the hosts'
rails addressed by the roce_network role's netplan. gb200-nvl72-8rack's slice is test_fabric_gb200.py (both run in
the second rehearsal group, beside the lab rehearsal: tests/conftest.py, XDIST_GROUPS).

Then, on the kept hgx slice, what the acceptance asks: breaking the ASN plan, a host route or the MTU in a rendered
file makes the scenario's own checks fail (and restoring the file makes them pass again): one boot, each broken
file applied by the scenario's own functions."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from clusterctl.rehearse.fabric_plan import fabric_slices
from clusterctl.rehearse.fabric_slice import FabricSlice
from clusterctl.rehearse.node.lifecycle import down
from clusterctl.rehearse.node.ssh import write_file
from clusterctl.rehearse.node.state import State, load
from clusterctl.rehearse.scenario.fabric_checks import check_mtu, check_reach, wait_converged
from clusterctl.rehearse.scenario.fabric_setup import apply_netplan, apply_switch, read_file
from clusterctl.targets import render_targets
from tests.e2e.conftest import REPO, rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.test_nodes import leftovers
from tests.helpers import plan_of, shipped

pytestmark = pytest.mark.e2e
CHECKS = ("ecmp", "reach", "mtu", "reroute")
NETPLAN = "/etc/netplan/60-clusterctl-roce.yaml"
"""where the roce_network role writes the rails' netplan (its default roce_network_netplan_path)"""


def run_fabric(tmp_path_factory, blueprint: str, *args: str):
    require_rehearsal()
    require_deploy()
    out = tmp_path_factory.mktemp(blueprint) / "r"
    r, summary = rehearse(REPO / "blueprints" / f"{blueprint}.yaml", out, "--scenario", "fabric", *args, timeout=900)
    assert summary is not None, r.stderr[-3000:]
    return out, summary


def assert_fabric_passed(summary: dict, fabrics: tuple[str, ...]) -> None:
    got = steps(summary)
    assert summary["status"] == "ok", {n: s["hosts"] for n, s in got.items() if s["status"] != "ok"}
    assert list(got) == ["boot", "ssh-check", "mirror", "install", "switches", "rails", *CHECKS]
    for check in CHECKS:
        assert tuple(got[check]["hosts"]) == fabrics
    assert tuple(summary["fabric"]) == fabrics


@pytest.fixture(scope="module")
def hgx(tmp_path_factory):
    out, summary = run_fabric(tmp_path_factory, "hgx-h200-roce-1024", "--keep")
    state = load(out)
    assert state is not None, summary
    try:
        plan = plan_of(shipped("hgx-h200-roce-1024"))
        yield summary, state, {sl.fabric: sl for sl in fabric_slices(plan, render_targets(plan))}
    finally:
        down(out)
        assert leftovers(state) == []


def test_hgx_slices_forward_at_the_mtu_over_both_spines_and_reroute_within_the_hold_time(hgx):
    summary, _, _ = hgx
    assert_fabric_passed(summary, ("roce", "converged", "oob"))
    roce = summary["fabric"]["roce"]
    # rail 0 of scalable units 1 and 2: traffic between gpu001 and gpu065 crosses the spines
    assert (roce["leaves"], roce["spines"], roce["hosts"]) == (
        ["roce-leaf01", "roce-leaf09"], ["roce-spine01", "roce-spine02"], ["gpu001", "gpu065"])
    assert (roce["mtu"], roce["hold_s"], roce["cables"]) == (9000, 9, 18)
    reroute = steps(summary)["reroute"]["hosts"]["roce"]
    # the hold time read from the rendered frr.conf; the step itself fails when the reroute takes longer than it
    # and the 2 s allowed for the update (tests hold behaviour, not timings: docs/testing.md)
    assert reroute["hold_ms"] == 9000 and reroute["reroute_ms"] > 0
    # gpu001's rail 0 on the roce slice and its two storage ports (L3 to the host) on the converged slice
    assert steps(summary)["rails"]["hosts"]["gpu001"]["detail"] == "enp24s0np0, enp41s0f0np0, enp41s0f1np1"
    converged = summary["fabric"]["converged"]
    assert (converged["hosts"], converged["mtu"]) == (["gpu001", "gpu121"], 9000)
    assert summary["fabric_interfaces"]["rehearsed"][0] == "enp24s0np0"


def _broken_switch(state: State, sl: FabricSlice, name: str, old: str, new: str, check) -> list[str]:
    """Apply ``name``'s rendered files with ``old`` replaced by ``new``, run ``check``, restore; the problems."""
    sw = sl.switch(name)
    field = "frr_conf" if old in sw.frr_conf else "interfaces"
    assert old in getattr(sw, field)
    assert apply_switch(state, replace(sw, **{field: getattr(sw, field).replace(old, new, 1)}))[0] == ""
    try:
        return check()
    finally:
        assert apply_switch(state, sw)[0] == ""
        assert wait_converged(state, sl, 2) == [] and check_reach(state, sl) == []


def test_a_broken_asn_plan_fails_the_checks(hgx):
    """roce-leaf09 given roce-leaf01's ASN: eBGP's AS-path loop check drops each leaf's routes at the other."""
    _, state, slices = hgx
    sl = slices["roce"]
    problems = _broken_switch(state, sl, "roce-leaf09", "router bgp 4200010009", "router bgp 4200010001",
                              lambda: wait_converged(state, sl, 1, timeout=12) + check_reach(state, sl))
    assert "roce-leaf01: route to gpu065 enp24s0np0 10.64.4.19: no BGP route" in problems
    assert any(p.startswith("gpu001 enp24s0np0 10.64.0.19 -> gpu065 10.64.4.19 (9000 bytes, DF)") for p in problems)


def test_a_missing_host_route_fails_the_checks(hgx):
    """gpu001's rail 0 without its table's route to the fabric: its traffic is no longer source-routed."""
    _, state, slices = hgx
    sl = slices["roce"]
    rendered = read_file(state, "gpu001", NETPLAN)
    doc = yaml.safe_load(rendered)
    routes = doc["network"]["ethernets"]["enp24s0np0"]["routes"]
    cut = [r for r in routes if not (r["to"] == "10.64.0.0/20" and r.get("table") == 101)]
    assert len(cut) == len(routes) - 1
    doc["network"]["ethernets"]["enp24s0np0"]["routes"] = cut
    write_file(state, "gpu001", NETPLAN, yaml.safe_dump(doc), mode="0600")
    assert apply_netplan(state, "gpu001", ("enp24s0np0",)) == ""
    try:
        problems = check_reach(state, sl)
    finally:
        write_file(state, "gpu001", NETPLAN, rendered, mode="0600")
        assert apply_netplan(state, "gpu001", ("enp24s0np0",)) == ""
    assert problems[0].startswith("gpu001: 10.64.0.19 -> 10.64.4.19 leaves by enp24s0np0 via 10.64.0.18 (table main)")
    assert check_reach(state, sl) == []


def test_a_lower_mtu_on_one_link_fails_the_checks(hgx):
    """One uplink of roce-leaf01 at 1500: the cable no longer carries the fabric MTU, whichever spine a flow takes."""
    _, state, slices = hgx
    sl = slices["roce"]
    problems = _broken_switch(state, sl, "roce-leaf01", "iface swp41\n    mtu 9216", "iface swp41\n    mtu 1500",
                              lambda: check_mtu(state, sl))
    assert problems == ["cable roce-leaf01:swp41 - roce-spine01:swp2 does not carry 9000 bytes with DF"]
