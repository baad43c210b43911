"""Needs that turn on whether the blueprint's compute nodes are elastic (cloud node groups that Slurm's power
saving creates and deletes): the elastic scenario needs such a group, and every other scenario needs compute
nodes that are there from the start.
"""

from __future__ import annotations

from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import ClusterPlan
from clusterctl.rehearse.scenario.base import Need


def elastic_hosts(plan: ClusterPlan) -> dict[str, str]:
    """host -> node group of every elastic group (``node_groups[].cloud.elastic``)."""
    return {h: g.name for g in plan.groups if is_elastic(plan, g.index) for h in g.hosts}


def elastic_unmet(plan: ClusterPlan) -> str:
    """'' when the elastic scenario can run on ``plan``, else why not."""
    if plan.cloud is None or plan.slurm is None:
        return "not a cloud blueprint with Slurm"
    if not elastic_hosts(plan):
        return "no elastic node group (node_groups[].cloud.elastic)"
    return ""


def _static_compute(plan: ClusterPlan) -> str:
    if elastic_unmet(plan):
        return ""
    return "the compute nodes are elastic (State=CLOUD): they come up through the elastic scenario"


ELASTIC_GROUP = Need("a cloud blueprint with an elastic node group", elastic_unmet,
                     "rehearse blueprints/lab-cloud.yaml, or set cloud.elastic: true on a compute group")
STATIC_COMPUTE = Need("compute nodes that are not elastic", _static_compute)
