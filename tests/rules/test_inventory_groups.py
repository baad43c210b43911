"""NAME008 and STORAGE011: a node group named like another Ansible inventory group, and an NFS tier a node of the
blueprint serves with no in-band pool to export to, are error findings before the ansible target refuses them
(clusterctl.plan.inventory_groups decides both)."""

from __future__ import annotations

import pytest

from clusterctl.plan.inventory_groups import group_name_clashes, served_nfs_tiers, unserved_exports
from clusterctl.targets import RenderError, render_targets
from tests.helpers import hits, lab, plan_of, shipped


def _head_named(name: str) -> dict:
    data = lab()
    data["node_groups"][1]["name"] = name
    return data


@pytest.mark.parametrize("name,what", [
    ("slurm_controllers", "the slurmctld hosts"), ("slurm_accounting", "the slurmdbd hosts"),
    ("slurm_cluster", "every node that runs a Slurm daemon or command"), ("gpu_nodes", "the node groups with GPUs"),
    ("nfs_servers", "the nodes that serve an NFS tier"), ("compute", "the compute nodes"),
    ("su_ib_1", "scalable unit 1 of fabric ib"), ("rack_lab01", "rack lab01"),
])
def test_name008_node_group_named_like_an_inventory_group(name, what):
    data = _head_named(name)
    (h,) = hits(data, "NAME008")
    assert h.path == ("node_groups", 1, "name")
    assert h.message == f"node group {name} has the name of the Ansible group of {what}"
    with pytest.raises(RenderError):
        render_targets(plan_of(data), ["ansible"])


def test_name008_nvlink_domain_group():
    data = shipped("gb200-nvl72-8rack")
    clashes = [(g.name, what) for g, what in group_name_clashes(plan_of(data))]
    assert clashes == []
    data["node_groups"][-1]["name"] = "nvlink_gb200_8"  # 144 trays, 18 a domain: domains 1 to 8
    svc = next(f for f in data["fabrics"] if f["name"] == "svc")
    svc["attach"][1]["group"] = "nvlink_gb200_8"
    (h,) = hits(data, "NAME008")
    assert h.message == ("node group nvlink_gb200_8 has the name of the Ansible group of NVLink domain 8 of node group "
                         "gb200")
    data["node_groups"][-1]["name"] = svc["attach"][1]["group"] = "nvlink_gb200_9"
    assert hits(data, "NAME008") == []


def test_name008_quiet_for_a_group_named_after_its_own_role_and_unused_names():
    assert hits(lab(), "NAME008") == []  # group head of role head
    assert hits(_head_named("login"), "NAME008") == []  # no login nodes: no login group
    assert hits(_head_named("nvlink_gpu_1"), "NAME008") == []  # HGX: no multi-node NVLink domains


def test_storage011_export_by_a_node_without_an_inband_pool():
    data = lab()
    del data["addressing"]["inband"]
    assert [(s.index, s.host, s.path) for s in served_nfs_tiers(plan_of(data))] == [(0, "head01", "/export/home")]
    (h,) = hits(data, "STORAGE011")
    assert h.path == ("storage", 0, "export")
    assert h.message == ("storage tier home is exported by head01, a node of this blueprint, but the blueprint has no "
                         "in-band address pool to export it to")
    with pytest.raises(RenderError, match="no in-band address pool"):
        render_targets(plan_of(data), ["ansible"])


def test_storage011_quiet_with_an_inband_pool_or_a_server_outside():
    assert hits(lab(), "STORAGE011") == [] and unserved_exports(plan_of(lab())) == []
    data = lab()
    del data["addressing"]["inband"]
    data["storage"][0]["export"] = "nfs01.example.com:/export/home"
    assert hits(data, "STORAGE011") == []
