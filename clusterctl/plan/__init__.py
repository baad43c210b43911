"""Expansion of a blueprint into a concrete, immutable cluster plan."""

from clusterctl.plan.expand import expand
from clusterctl.plan.model import ClusterPlan

__all__ = ["ClusterPlan", "expand"]
