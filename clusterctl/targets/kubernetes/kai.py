"""NVIDIA KAI Scheduler: a ``Topology`` per distinct list of scheduling levels of the worker groups.

``kubernetes/kai/topology.yaml``: ``Topology`` of ``kai.scheduler/v1alpha1``, the only version the CRD of
NVIDIA/KAI-Scheduler v0.13.0 (commit 5d35ecab74e693d6f40309d2e23a68b8ac138571,
``deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml``) serves: cluster-scoped, ``spec.levels[]``
of ``nodeLabel``, top first, ``kubernetes.io/hostname`` only last. (The issue names ``kai.scheduler/v1``: that
group version serves KAI's Config and SchedulingShard in this release, not Topology.) The levels are those of
Kueue's Topology (:mod:`.scheduling_levels`). A workload selects it with the annotations of
``docs/topology/README.md``: ``kai.scheduler/topology: <name>`` and ``kai.scheduler/topology-required-placement``
/ ``kai.scheduler/topology-preferred-placement: <level label>``.
"""

from __future__ import annotations

from clusterctl.plan.kube_topology import KubeTopology, worker_groups
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.kubernetes.objects import stream
from clusterctl.targets.kubernetes.scheduling_levels import level_lists, topology_object

API = "kai.scheduler/v1alpha1"


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    if plan.kubernetes is None or "kai" not in plan.kubernetes.schedulers:
        return {}
    docs = [topology_object(API, levels) for levels in level_lists(topo, worker_groups(plan))]
    if not docs:
        return {}
    return {"kubernetes/kai/topology.yaml": stream(docs, [
        "KAI Scheduler topology: a workload names it with the kai.scheduler/topology annotation and a level with "
        "kai.scheduler/topology-required-placement or kai.scheduler/topology-preferred-placement"], plan)}
