"""Cloud facts of the plan that bare-metal code asks about too (Slurm's power saving, the Ansible inventory)."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan


def is_elastic(plan: ClusterPlan, group_index: int) -> bool:
    """Whether node group ``group_index`` is elastic (``node_groups[i].cloud.elastic``): created on demand by
    Slurm's power saving, no instance at ``pulumi up``."""
    cloud = plan.blueprint.node_groups[group_index].cloud
    return bool(cloud and cloud.elastic)
