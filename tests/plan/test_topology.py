"""The scheduler's view of the network as plain data (clusterctl.plan.topology): the slurm target only writes it."""

from __future__ import annotations

import pytest

from clusterctl import hostlist
from clusterctl.plan.nvlink import imex_configured, imex_groups, multi_node
from clusterctl.plan.topology import Block, Switch, nvlink_blocks, tree_switches
from tests.helpers import lab, plan_of, shipped


def compute(plan):
    return [g for g in plan.groups if g.role == "compute"]


@pytest.mark.parametrize("name", ["lab-2node", "dgx-h100-superpod-4su", "hgx-h200-roce-1024", "frontier-3tier-100k"])
def test_every_node_is_under_a_switch(name):
    plan = plan_of(shipped(name))
    under = [h for s in tree_switches(plan, compute(plan)) if s.nodes for h in hostlist.expand(s.nodes)]
    assert sorted(under) == sorted(h for g in compute(plan) for h in g.hosts)


def test_a_rail_optimized_su_is_one_switch_under_the_spine():
    plan = plan_of(shipped("dgx-h100-superpod-4su"))
    assert tree_switches(plan, compute(plan)) == [
        Switch("ib-su1", nodes="dgx[001-032]"), Switch("ib-su2", nodes="dgx[033-064]"),
        Switch("ib-su3", nodes="dgx[065-096]"), Switch("ib-su4", nodes="dgx[097-127]"),
        Switch("ib-spine", switches="ib-su[1-4]"),
    ]


def test_three_tiers_are_sus_pods_and_the_core():
    plan = plan_of(shipped("frontier-3tier-100k"))
    switches = tree_switches(plan, compute(plan))
    assert len(switches) == 208 + 52 + 1
    assert switches[0] == Switch("roce-su001", nodes="gpu[00001-00064]")
    assert switches[208] == Switch("roce-pod01", switches="roce-su[001-004]")
    assert switches[-1] == Switch("roce-core", switches="roce-pod[01-52]")


def test_only_the_given_groups_hosts_are_under_the_switches():
    data = lab()
    data["node_groups"].append({"name": "cpu", "type": "head", "count": 2, "hostnames": "cpu[01-02]",
                                "racks": "lab01"})
    plan = plan_of(data)
    gpu, cpu = plan.group("gpu"), plan.group("cpu")
    assert tree_switches(plan, [gpu]) == [Switch("ib-leaf01", nodes="gpu[01-02]")]
    # a group on no compute fabric is a switch of its own
    assert tree_switches(plan, [gpu, cpu]) == [Switch("ib-leaf01", nodes="gpu[01-02]"),
                                               Switch("cpu", nodes="cpu[01-02]")]


def test_nvl72_blocks_are_the_racks_and_imex_runs_on_them():
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    blocks = nvlink_blocks(plan, compute(plan))
    assert blocks[:2] == [Block("nvl01", "gb[001-018]"), Block("nvl02", "gb[019-036]")]
    assert len(blocks) == 8 and all(hostlist.count(b.nodes) == 18 for b in blocks)
    gb200 = plan.group("gb200")
    assert multi_node(plan) == imex_groups(plan) == [gb200]
    assert imex_configured(plan, gb200)  # an in-band pool covers it: the IMEX peer list can be written


def test_groups_without_multi_node_domains_are_one_block_each():
    plan = plan_of(lab())
    assert multi_node(plan) == []
    assert nvlink_blocks(plan, compute(plan)) == [Block("gpu", "gpu[01-02]")]
