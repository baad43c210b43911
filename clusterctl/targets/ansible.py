"""ansible target (being written)."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan


def render(plan: ClusterPlan) -> dict[str, str]:
    return {}
