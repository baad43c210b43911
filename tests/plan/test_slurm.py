"""Slurm facts the rules and the slurm/ansible targets share (clusterctl.plan.slurm)."""

from __future__ import annotations

import pytest

from clusterctl.plan.slurm import (TREE_WIDTH_MAX, cloud_tree_width, parse_version, state_tier,
                                   tree_width, under)
from tests.helpers import lab, plan_of


@pytest.mark.parametrize("text,expected", [("24.05", (24, 5)), ("23.11", (23, 11)), ("21.08", (21, 8)),
                                           ("24.05.3", (24, 5)), ("24.5", None), ("24.06", None),
                                           ("v24.05", None), ("2024.05", None)])
def test_parse_version(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize("path,mount,inside", [
    ("/shared/slurm", "/shared", True), ("/shared", "/shared", True), ("/shared/", "/shared", True),
    ("/shared2/slurm", "/shared", False), ("/var/spool/slurmctld", "/", True), ("/home", "/home/x", False),
])
def test_under(path, mount, inside):
    assert under(path, mount) is inside


def test_state_tier_is_the_shared_mount_holding_state_save_location():
    """(A tier inside another tier's mount, or StateSaveLocation in a node-local tier, is refused when the
    blueprint loads: clusterctl/blueprint/path_relations.py.)"""
    data = lab()
    assert state_tier(plan_of(data)) is None  # /var/spool/slurmctld: the controller's own disk
    data["slurm"]["state_save_location"] = "/srv/slurmctld"
    assert state_tier(plan_of(data)) is None  # another directory of the controller's own disk
    data["slurm"]["state_save_location"] = "/state/slurm"
    data["storage"].append({**data["storage"][0], "name": "state", "export": "head01:/export/state",
                            "mount": "/state"})
    i, tier = state_tier(plan_of(data))
    assert (i, tier.name) == (2, "state")
    data["slurm"]["state_save_location"] = "/home/slurm/state"
    i, tier = state_tier(plan_of(data))
    assert (i, tier.name) == (0, "home")


def test_tree_width_follows_schedmds_square_and_cube_root_rule():
    assert [tree_width(n) for n in (2, 16, 100, 2500)] == [2, 4, 10, 50]
    assert [tree_width(n) for n in (2501, 27_000, 200_000)] == [14, 30, 59]


def test_cloud_tree_width_is_the_node_count_before_cloud_fanout():
    plan = plan_of(lab())
    assert cloud_tree_width(plan, (23, 2)) == max(plan.nodes, tree_width(plan.nodes)) == 3
    assert cloud_tree_width(plan, (23, 11)) is None
    assert TREE_WIDTH_MAX == 65533  # slurm.conf(5) TreeWidth


def test_imex_channel0_only_without_the_switch_plugin():
    """targets/ansible.py's imex_vars asks this (nvidia_imex_channel0): channel 0 for everyone only where Slurm's
    switch/nvidia_imex (24.05) does not give each job its own."""
    from clusterctl.plan.nvlink import imex_channel0
    from tests.helpers import shipped

    data = shipped("gb200-nvl72-8rack")
    assert imex_channel0(plan_of(data)) is False
    data["slurm"]["version"] = "23.11"
    data["slurm"]["install"] = {"kind": "distro"}
    assert imex_channel0(plan_of(data)) is True
    data.pop("slurm")
    assert imex_channel0(plan_of(data)) is True
