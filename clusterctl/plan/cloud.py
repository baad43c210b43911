"""Cloud facts of the plan that bare-metal code asks about too (Slurm's power saving, the Ansible inventory)."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, GroupPlan


def is_elastic(plan: ClusterPlan, group_index: int) -> bool:
    """Whether node group ``group_index`` is elastic (``node_groups[i].cloud.elastic``): created on demand by
    Slurm's power saving, no instance at ``pulumi up``."""
    cloud = plan.blueprint.node_groups[group_index].cloud
    return bool(cloud and cloud.elastic)


def elastic_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """The node groups Slurm's power saving creates and deletes: declared elastic, of a cloud instance type, in a
    blueprint with Slurm and a ``cloud:`` section (CLOUD010 refuses an elastic group that is none of these). The one
    answer for slurm.conf's power-saving sections, the Ansible plays and variables and the acceptance tests."""
    if plan.slurm is None or plan.cloud is None:
        return []
    return [g for g in plan.groups if g.type.instance is not None and is_elastic(plan, g.index)]
