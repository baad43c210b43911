"""The operator release a kubernetes part writes for, refused when clusterctl has no table for it.

Rule K8S004 reports the same unknown release first (both ask :func:`clusterctl.plan.kube_operators.unknown_releases`),
so ``validate`` fails exactly where ``render --target kubernetes`` refuses.
"""

from __future__ import annotations

from clusterctl.plan.kube_operators import unknown_releases
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import RenderError


def refuse_unknown(plan: ClusterPlan, field: str) -> None:
    """A RenderError (located at ``kubernetes.<field>``) when that release is not in the catalog."""
    for unknown in unknown_releases(plan):
        if unknown.path[-1] == field:
            err = RenderError(f"kubernetes target: {unknown.message}")
            err.path, err.hint = unknown.path, f"choose one of {', '.join(unknown.known)} (rule K8S004)"
            raise err
