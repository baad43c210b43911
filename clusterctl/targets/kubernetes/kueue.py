"""Kueue Topology Aware Scheduling: Topology, ResourceFlavor per GPU node group, ClusterQueue, LocalQueue.

``kubernetes/kueue/topology.yaml``, written for kubernetes-sigs/kueue v0.19.2 (commit
8eab68778fc1b52affe165fdf5af29d1e9b4f3cb), whose CRDs (``config/components/crd/bases/``) serve ``v1beta1``
(deprecated: "Use v1beta2 instead") and store ``v1beta2`` for all four kinds; Topology Aware Scheduling is beta
and on by default since v0.14 (``site/content/en/docs/concepts/topology_aware_scheduling.md``). The objects
follow that release's ``site/static/examples/tas/sample-gpu-queues.yaml``:

- a ``Topology`` per distinct list of scheduling levels of the GPU worker groups (levels: the Topograph labels
  of :mod:`clusterctl.plan.kube_topology`'s levels, top first, then ``kubernetes.io/hostname``: with the
  hostname lowest, TAS assigns pods to nodes and respects node taints, as the sample's comment says);
- a ``ResourceFlavor`` per GPU worker group, named after it ('-' for '_'): ``nodeLabels`` select the group by
  the node-group label of ``nodes.yaml``, ``topologyName`` its Topology, and ``tolerations`` tolerate the GPU
  taint of ``nodes.yaml``
  (Kueue adds a flavor's tolerations to the pods it admits; TAS does not see tolerations a webhook adds);
- one ``ClusterQueue`` named ``kubernetes.queue`` whose one resource group covers ``cpu``, ``memory`` and
  ``nvidia.com/gpu`` with a flavor per GPU group, nominal quota = what that group's nodes have (every GPU; the
  logical CPUs and installed memory, which kubelet's reservations make a little more than the nodes'
  allocatable: TAS places pods by the nodes' allocatable, so the quota only caps);
- a ``LocalQueue`` of the same name in ``kubernetes.namespace``: jobs name it with the
  ``kueue.x-k8s.io/queue-name`` label.
"""

from __future__ import annotations

from clusterctl.plan.kube_names import group_object_name
from clusterctl.plan.kube_topology import KubeTopology
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.targets import RenderError
from clusterctl.targets.kubernetes.nodes import GPU_TAINT, NODE_GROUP_LABEL
from clusterctl.targets.kubernetes.objects import dns_label, dns_subdomain, label_value, stream
from clusterctl.targets.kubernetes.scheduling_levels import (GPU_RESOURCE, gpu_workers, level_lists, topology_name,
                                                               topology_object)

API = "kueue.x-k8s.io/v1beta2"
COVERED = ("cpu", "memory", GPU_RESOURCE)
"""the resources a training pod requests: Kueue admits a workload only when the ClusterQueue covers every
resource its pods request"""
QUEUE_PATH = ("kubernetes", "queue")
MAX_FLAVORS = 64
"""resourceGroups[].flavors maxItems in the ClusterQueue CRD"""


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    if plan.kubernetes is None or "kueue" not in plan.kubernetes.schedulers:
        return {}
    groups = gpu_workers(plan)
    if not groups:
        return {}
    if len(groups) > MAX_FLAVORS:
        raise RenderError(f"kubernetes target: {len(groups)} GPU node groups, but a Kueue ClusterQueue's resource "
                          f"group holds at most {MAX_FLAVORS} flavors (one per group)")
    topologies = [topology_object(API, levels) for levels in level_lists(topo, groups)]
    flavors = [resource_flavor(g, topo) for g in groups]
    docs = [*topologies, *flavors, cluster_queue(plan, groups), local_queue(plan)]
    return {"kubernetes/kueue/topology.yaml": stream(docs, [
        "Kueue Topology Aware Scheduling: apply after Kueue is installed; a job names the LocalQueue with the "
        "kueue.x-k8s.io/queue-name label and its topology with the kueue.x-k8s.io/podset-required-topology or "
        "podset-preferred-topology annotation of its pod template (the value: one of the Topology's node labels)"],
        plan)}


def flavor_name(g: GroupPlan) -> str:
    return dns_subdomain(group_object_name(g.name), f"node group {g.name} (a ResourceFlavor's name)",
                         g.path + ("name",))


def resource_flavor(g: GroupPlan, topo: KubeTopology) -> dict:
    group = label_value(g.name, f"node group {g.name} (label {NODE_GROUP_LABEL})", g.path + ("name",))
    return {
        "apiVersion": API,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor_name(g)},
        "spec": {
            "nodeLabels": {NODE_GROUP_LABEL: group},
            "topologyName": topology_name(topo.group_levels.get(g.name, ())),
            "tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}],
        },
    }


def _quota(g: GroupPlan) -> list[dict]:
    t = g.type
    return [
        {"name": "cpu", "nominalQuota": g.count * t.sockets * t.cores_per_socket * t.threads_per_core},
        {"name": "memory", "nominalQuota": f"{round(g.count * t.memory_gb)}G"},  # memory_gb is decimal GB
        {"name": GPU_RESOURCE, "nominalQuota": g.gpus},
    ]


def cluster_queue(plan: ClusterPlan, groups: list[GroupPlan]) -> dict:
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": dns_subdomain(plan.kubernetes.queue, "queue", QUEUE_PATH)},
        "spec": {
            "namespaceSelector": {},  # every namespace with a LocalQueue pointing here (the upstream sample's)
            "resourceGroups": [{
                "coveredResources": list(COVERED),
                "flavors": [{"name": flavor_name(g), "resources": _quota(g)} for g in groups],
            }],
        },
    }


def local_queue(plan: ClusterPlan) -> dict:
    k = plan.kubernetes
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": dns_subdomain(k.queue, "queue", QUEUE_PATH),
                     "namespace": dns_label(k.namespace, "namespace", ("kubernetes", "namespace"))},
        "spec": {"clusterQueue": dns_subdomain(k.queue, "queue", QUEUE_PATH)},
    }
