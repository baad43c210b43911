"""Which slice of each routed Ethernet/RoCE fabric the ``fabric`` scenario boots, from the plan's underlay and
the rendered switch files (docs/rehearse.md, "The fabric scenario")."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, FabricPlan
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.fabric_slice import FabricSlice

ROUTED_KINDS = ("roce", "ethernet")


def routed_fabrics(plan: ClusterPlan) -> list[FabricPlan]:
    """The fabrics the scenario slices: Ethernet/RoCE, two tiers or more, with hosts' NICs attached."""
    return [f for f in plan.fabrics if f.kind in ROUTED_KINDS and len(f.tiers) >= 2 and f.attached]


def routed_fabrics_unmet(plan: ClusterPlan) -> str:
    return "" if routed_fabrics(plan) else "no Ethernet/RoCE fabric of two tiers or more with hosts attached"


def fabric_slices(plan: ClusterPlan, files: dict[str, str]) -> list[FabricSlice]:
    raise RehearsalError("the fabric scenario needs the plan's underlay (clusterctl/plan/underlay.py)")
