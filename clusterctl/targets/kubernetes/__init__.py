"""kubernetes target: Kubernetes objects from the same plan as Slurm's topology (docs/kubernetes.md).

``render(plan)`` writes nothing without a ``kubernetes:`` section. Otherwise it plans the topology once
(:func:`clusterctl.plan.kube_topology.kube_topology`: the domains of every level, which Slurm's topology.conf is
written from too) and hands it to each part in :data:`MODULES` order; a part returns ``{}`` when the blueprint
did not choose it. Every name and label value goes through :mod:`.objects`.
"""

from __future__ import annotations

import importlib
import importlib.util

from clusterctl.plan.kube_topology import kube_topology, tree_problems
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import RenderError

MODULES = ("nodes", "topograph", "volcano", "kueue", "kai", "slinky", "gpu_operator", "network_operator",
           "compute_domains")
"""the parts, in render order: node labels and taints, the Topograph model, the schedulers' objects, Slinky, the
NVIDIA operators' custom resources, the NVLink ComputeDomains"""


def _parts() -> list:
    """The part modules present in this tree (MODULES names them all)."""
    found = []
    for name in MODULES:
        qualified = f"{__name__}.{name}"
        if importlib.util.find_spec(qualified) is not None:
            found.append(importlib.import_module(qualified))
    return found


def render(plan: ClusterPlan) -> dict[str, str]:
    """Every file under ``kubernetes/``; ``{}`` when the blueprint has no ``kubernetes:`` section."""
    if plan.kubernetes is None:
        return {}
    topo = kube_topology(plan)
    problems = tree_problems(topo)
    if problems:  # by construction none: the levels are planned as a strict tree
        raise RenderError(f"kubernetes target: the topology is no strict tree: {problems[0]}")
    files: dict[str, str] = {}
    for module in _parts():
        files.update(module.render(plan, topo))
    return files
