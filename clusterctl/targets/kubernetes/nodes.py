"""``kubernetes/nodes.yaml``: one ``v1`` ``Node`` per worker host, carrying what the plan knows about it.

Applied with ``kubectl apply --server-side --field-manager=clusterctl`` to nodes that have joined, it sets only the
fields written here (docs/kubernetes.md, "Node labels and taints"):

- ``network.topology.nvidia.com/<level>`` for every level the host has (:data:`~clusterctl.plan.kube_topology.LEVELS`:
  core, spine, leaf, accelerator): NVIDIA Topograph's node-label keys up to v0.5.0 (NVIDIA/topograph v0.5.0,
  docs/engines/k8s.md; v1.0.0 renamed them ``fabric.topograph.run/tier-N`` and ``accelerator.topograph.run/domain``,
  docs/kubernetes.md), the value the planned switch or NVLink domain name, the same as topology.conf's. Kueue's
  and KAI's ``Topology`` levels select on these keys (Volcano's HyperNodes name their nodes: volcano.py).
- :data:`NODE_GROUP_LABEL`: the blueprint's node group (what a ResourceFlavor or a NodeSet selects).
- on GPU nodes the taint ``nvidia.com/gpu=present:NoSchedule``: GKE's convention for GPU node pools (cloud.google.com
  kubernetes-engine/docs/how-to/gpus), which Kubernetes' ExtendedResourceToleration admission plugin answers by
  giving every pod that requests ``nvidia.com/gpu`` a matching toleration, and which the GPU Operator's
  DaemonSets tolerate by default (NVIDIA/gpu-operator v25.3.4, deployments/gpu-operator/values.yaml
  ``daemonsets.tolerations``); pods without GPUs stay off the GPU nodes.
- with ``slinky: true``, the annotation ``topology.slinky.slurm.net/spec`` (SlinkyProject/slurm-operator v1.2.1,
  api/v1beta1/well_known.go and docs/usage/topology.md): the host's switch and block in Slurm's topology.yaml
  (``fabric:<leaf>,nvlink:<block>``), which the operator copies to the Slurm node of a NodeSet pod on this host.

``nvidia.com/gpu.clique`` is not written: GPU Feature Discovery sets it to ``<NVLink cluster UUID>.<clique id>``
read from NVML's GPU fabric info at run time (NVIDIA/k8s-device-plugin v0.17.0, internal/lm/imex.go); the
plan cannot know the UUID, and GFD would overwrite any planned value. The accelerator label is the planned
NVLink domain instead.
"""

from __future__ import annotations

from clusterctl.plan.kube_names import domain_path, domain_paths
from clusterctl.plan.kube_topology import LEVELS, TOPOGRAPH_LABEL_PREFIX, KubeTopology, worker_groups
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.topology import node_topology_units
from clusterctl.targets.kubernetes.objects import dns_subdomain, label_value, stream

NODE_GROUP_LABEL = "clusterctl.dev/node-group"
"""the node's blueprint node group; the prefix is the project's domain (the blueprint schema's ``$id``), so the
key collides with no other tool's label"""

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
"""the taint on GPU nodes (v1 Taint: key, value, effect)"""

SLINKY_TOPOLOGY_ANNOTATION = "topology.slinky.slurm.net/spec"
"""Slinky's node annotation: the Slurm dynamic topology of the node (``<topology>:<unit>`` joined by ',')"""

PATH = "kubernetes/nodes.yaml"


def _domain_labels(plan: ClusterPlan, topo: KubeTopology) -> dict[str, dict[str, str]]:
    """host -> {label key: domain name} in LEVELS order, every domain name checked once (linear in the hosts)."""
    paths = domain_paths(plan)
    checked: set[str] = set()
    out: dict[str, dict[str, str]] = {}
    for host, domains in topo.host_domains.items():
        labels = {}
        for level in LEVELS:
            name = domains.get(level)
            if name is None:
                continue
            if name not in checked:
                label_value(name, f"the {level} {name} (label {TOPOGRAPH_LABEL_PREFIX}{level})",
                            domain_path(name, paths))
                checked.add(name)
            labels[TOPOGRAPH_LABEL_PREFIX + level] = name
        out[host] = labels
    return out


def _slinky_specs(plan: ClusterPlan) -> dict[str, str]:
    """host -> the value of Slinky's topology annotation (every unit a domain or group name: checked as labels)."""
    paths = domain_paths(plan)
    checked: set[str] = set()
    out: dict[str, str] = {}
    for host, units in node_topology_units(plan, worker_groups(plan)).items():
        for topology, unit in units:
            if unit not in checked:
                label_value(unit, f"the {topology} topology's {unit} (annotation {SLINKY_TOPOLOGY_ANNOTATION})",
                            domain_path(unit, paths))
                checked.add(unit)
        out[host] = ",".join(f"{topology}:{unit}" for topology, unit in units)
    return out


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """``kubernetes/nodes.yaml``: a Node per worker host, in plan order."""
    domain_labels = _domain_labels(plan, topo)
    slinky = _slinky_specs(plan) if plan.kubernetes.slinky else {}
    docs = []
    for g in worker_groups(plan):
        group = label_value(g.name, f"node group {g.name} (label {NODE_GROUP_LABEL})", g.path + ("name",))
        taints = [dict(GPU_TAINT)] if g.type.gpus else []
        for host in g.hosts:
            metadata: dict = {"name": dns_subdomain(host, f"host {host} (a Node's name)", g.path + ("hostnames",)),
                              "labels": {**domain_labels.get(host, {}), NODE_GROUP_LABEL: group}}
            if host in slinky:
                metadata["annotations"] = {SLINKY_TOPOLOGY_ANNOTATION: slinky[host]}
            node: dict = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
            if taints:
                node["spec"] = {"taints": taints}
            docs.append(node)
    comments = ["One Node per worker host: topology labels (NVIDIA Topograph's keys), node group, GPU taint.",
                "Apply to joined nodes: kubectl apply --server-side --field-manager=clusterctl -f nodes.yaml",
                "(check first with --dry-run=server; docs/kubernetes.md)."]
    return {PATH: stream(docs, comments, plan)}
