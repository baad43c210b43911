"""What the blueprint states about one planned fabric or node type and the plan decides nothing about (a RoCE
fabric's traffic class, an InfiniBand fabric's SHARP and adaptive routing, a node type's NCCL overrides): the
blueprint's entry, found from the planned object, for the targets that write those settings as stated. Like the
plan's own properties (``plan.slurm``, ``plan.storage``), it keeps consumers from walking ``plan.blueprint``."""

from __future__ import annotations

from clusterctl.blueprint.compute import NodeType
from clusterctl.blueprint.network import Fabric
from clusterctl.plan.model import ClusterPlan, FabricPlan


def fabric_settings(plan: ClusterPlan, fabric: FabricPlan) -> Fabric:
    """The ``fabrics:`` entry a planned fabric was built from."""
    return plan.blueprint.fabrics[fabric.index]


def node_type_settings(plan: ClusterPlan, name: str) -> NodeType | None:
    """The ``node_types:`` entry named ``name``, None when there is none."""
    return plan.blueprint.node_types.get(name)
