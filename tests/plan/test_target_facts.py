"""Facts the targets ask the plan for instead of reading the blueprint: LNet networks (plan/lustre.py), a
fabric's or node type's stated settings (ClusterPlan.fabric_spec, node_type_spec), a group's address block
(plan/allocations.py)."""

from __future__ import annotations

import pytest

from clusterctl.plan.allocations import group_block
from clusterctl.plan.lustre import lnet_networks, nid_networks, storage_interfaces
from tests.helpers import lab, plan_of


@pytest.mark.parametrize("servers,nets,o2ib", [
    ("10.0.0.1@o2ib:/lustre", ["o2ib"], ["o2ib0"]),
    ("10.0.0.1@o2ib,10.1.0.1@tcp:/fs", ["o2ib", "tcp"], ["o2ib0"]),
    ("mgs1@o2ib1:mgs2@o2ib1:/fs", ["o2ib1", "o2ib1"], ["o2ib1"]),
    ("10.0.0.1@tcp:/fs", ["tcp"], []),
])
def test_the_lnet_networks_of_a_lustre_source(servers, nets, o2ib):
    assert nid_networks(servers) == nets
    assert lnet_networks(servers) == o2ib


def test_a_node_types_storage_interfaces_and_stated_settings():
    data = lab()
    data["node_types"]["hgx"]["storage_interfaces"] = ["ibp154s0", "ibp192s0"]
    plan = plan_of(data)
    assert storage_interfaces(plan, plan.node_types["hgx"]) == ("ibp154s0", "ibp192s0")
    assert storage_interfaces(plan, plan.node_types["head"]) == ()
    assert plan.node_type_spec(plan.node_types["hgx"]).server == "hgx-h100-8gpu"
    assert plan.node_type_spec(plan.node_types["hgx"]).storage_interfaces == ["ibp154s0", "ibp192s0"]
    assert [plan.fabric_spec(f).name for f in plan.fabrics] == ["ib", "mgmt"]


def test_a_groups_address_block():
    plan = plan_of(lab())
    gpu, head = plan.group("gpu"), plan.group("head")
    pool, first, per_host = group_block(plan, "inband", gpu)
    assert (pool.name, pool.cidr, first, per_host) == ("inband", "10.10.0.0/24", 0, 1)
    assert group_block(plan, "inband", head)[1] == 2  # after the two GPU nodes: groups in blueprint order
    assert group_block(plan, "compute", gpu) is None  # the lab has no compute address pool


def test_the_gpu_groups_and_the_elastic_groups_are_one_answer():
    """plan/roles.gpu_groups (inventory gpu_nodes, storage and reliability figures) and plan/cloud.elastic_groups
    (slurm.conf power saving, the Ansible plays and variables, testinfra): literal group names of shipped
    blueprints."""
    from clusterctl.plan.cloud import elastic_groups
    from clusterctl.plan.roles import gpu_groups
    from tests.helpers import shipped

    assert [g.name for g in gpu_groups(plan_of(lab()))] == ["gpu"]
    assert [g.name for g in elastic_groups(plan_of(lab()))] == []
    cloud = shipped("lab-cloud")
    assert [g.name for g in elastic_groups(plan_of(cloud))] == ["gpu"]
    del cloud["slurm"]
    assert elastic_groups(plan_of(cloud)) == []  # no Slurm: nothing powers nodes up and down
