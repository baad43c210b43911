"""The scheduling levels the Kueue and KAI ``Topology`` objects and Volcano's HyperNode tiers are written from.

:mod:`clusterctl.plan.kube_topology` plans the levels once (each worker group's *scheduling levels*: the levels
its nodes carry that nest strictly, top first). This module only shapes them for the schedulers: the node label
of a level (NVIDIA Topograph's ``network.topology.nvidia.com/<level>``, the label :mod:`.nodes` puts on every
Node), the distinct level lists of a set of node groups (one ``Topology`` object each) and that object, whose
shape Kueue and KAI share (KAI's CRD "was derived from Kueue's Topology CRD structure":
``pkg/apis/kai/v1alpha1/topology_types.go`` at NVIDIA/KAI-Scheduler v0.13.0).
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.kube_topology import HOSTNAME_LABEL, TOPOGRAPH_LABEL_PREFIX, KubeTopology
from clusterctl.plan.model import GroupPlan
from clusterctl.targets.kubernetes.objects import dns_subdomain

GPU_RESOURCE = "nvidia.com/gpu"
"""the extended resource NVIDIA's device plugin (deployed by the GPU Operator) advertises: what the queues count"""


def level_label(level: str) -> str:
    """The node label whose value names a node's domain of ``level`` (Topograph's tier label)."""
    return TOPOGRAPH_LABEL_PREFIX + level


def level_lists(topo: KubeTopology, groups: Sequence[GroupPlan]) -> dict[tuple[str, ...], list[str]]:
    """Each distinct list of scheduling levels among ``groups`` (top first) -> the names of the groups that have
    it, lists and groups in plan order."""
    out: dict[tuple[str, ...], list[str]] = {}
    for g in groups:
        out.setdefault(topo.group_levels.get(g.name, ()), []).append(g.name)
    return out


def topology_name(levels: tuple[str, ...]) -> str:
    """The name of the ``Topology`` of one level list: its levels joined, top first (``spine-accelerator``); a
    node group's nodes have no level only when the plan gives them no switch, then ``hostname``."""
    return dns_subdomain("-".join(levels) or "hostname", "Topology name")


def topology_object(api_version: str, levels: tuple[str, ...]) -> dict:
    """A Kueue or KAI ``Topology``: ``spec.levels`` the level labels top first, then ``kubernetes.io/hostname``,
    which both CRDs allow only as the lowest level (their x-kubernetes-validations) and which lets a job ask for
    whole nodes. Kueue: kueue.x-k8s.io_topologies.yaml (kubernetes-sigs/kueue v0.19.2); KAI:
    kai.scheduler_topologies.yaml (NVIDIA/KAI-Scheduler v0.13.0): ``levels[].nodeLabel``, 1 to 16 items."""
    return {
        "apiVersion": api_version,
        "kind": "Topology",
        "metadata": {"name": topology_name(levels)},
        "spec": {"levels": [{"nodeLabel": level_label(lv)} for lv in levels] + [{"nodeLabel": HOSTNAME_LABEL}]},
    }
