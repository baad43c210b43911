"""NVIDIA GPU Operator: the ``ClusterPolicy`` that puts the blueprint's driver and the GPU stack on the GPU nodes.

``kubernetes/gpu-operator/clusterpolicy.yaml``: one ``ClusterPolicy`` (``nvidia.com/v1``; NVIDIA/gpu-operator
api/nvidia/v1/clusterpolicy_types.go, config/crd/bases/nvidia.com_clusterpolicies.yaml at the chosen release)
named ``cluster-policy`` as the operator's Helm chart names its own, for ``kubernetes.gpu_operator`` (a release
of clusterctl/catalog/kubernetes_operators.yaml, whose images are the release's Helm values):

- ``driver``: the operator wants a full driver version: ``driver.version`` is the tag of
  ``nvcr.io/nvidia/driver`` without its ``-<os>`` suffix, which the operator adds for each node's OS. It is
  ``software.driver`` resolved against the release's component matrix
  (:func:`clusterctl.plan.kube_operators.gpu_driver`: a branch such as "570" becomes the newest 570 driver the
  matrix lists). When the matrix lists none, ``driver.enabled: false`` leaves the driver to the host (rule
  K8S004 warns). ``driver.rdma`` (GPUDirect RDMA through nvidia-peermem) is on when a worker group's compute
  fabric is InfiniBand or RoCE, ``useHostMofed`` when DOCA-OFED is the host's rather than the Network Operator's
  container.
- ``toolkit``, ``devicePlugin``, ``dcgmExporter``, ``gfd`` (GPU Feature Discovery, which also labels
  ``nvidia.com/gpu.clique`` on NVL72), ``migManager``, ``validator``: the release's images, enabled;
  ``mig.strategy`` the chart's ``single``; ``dcgm`` (the standalone host engine) and ``nodeStatusExporter`` off,
  as the chart leaves them.
- ``daemonsets``: tolerate the GPU nodes' ``nvidia.com/gpu`` taint (nodes.yaml) and run as
  ``system-node-critical``, as the chart's defaults do.
- ``operator: {}``: as the chart's own templates/clusterpolicy.yaml writes it. Up to 25.10 the CRD marks
  ``operator.defaultRuntime`` required with a default (``docker``), which the API server fills in before it
  validates; from 26.3 the field is deprecated (the runtime is detected), so it is not written.
"""

from __future__ import annotations

from clusterctl.plan.interfaces import RDMA_FABRICS
from clusterctl.plan.kube_operators import doca_driver, gpu_driver, gpu_operator_release
from clusterctl.plan.kube_topology import KubeTopology, worker_groups
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.kubernetes.nodes import GPU_TAINT
from clusterctl.targets.kubernetes.objects import stream
from clusterctl.targets.kubernetes.releases import refuse_unknown

PATH = "kubernetes/gpu-operator/clusterpolicy.yaml"
NAME = "cluster-policy"


def _image(image) -> dict:
    out = {"repository": image.repository, "image": image.image}
    if image.version is not None:
        out["version"] = image.version
    return out


def _enabled(image) -> dict:
    return {"enabled": True, **_image(image)}


def gpudirect_rdma(plan: ClusterPlan) -> bool:
    """A GPU worker group's compute fabric carries RDMA (InfiniBand or RoCE)."""
    return any(g.type.gpus and (f := plan.compute_fabric(g)) is not None and f.kind in RDMA_FABRICS
               for g in worker_groups(plan))


def driver_spec(plan: ClusterPlan, images) -> dict:
    version = gpu_driver(plan)
    if version is None:
        return {"enabled": False}
    spec = {"enabled": True, **_image(images.driver), "version": version,
            "manager": _image(images.driver_manager)}
    if gpudirect_rdma(plan):
        spec["rdma"] = {"enabled": True, "useHostMofed": doca_driver(plan) is None}
    return spec


def cluster_policy(plan: ClusterPlan) -> dict:
    images = gpu_operator_release(plan).images
    spec = {
        "operator": {},
        "daemonsets": {"priorityClassName": "system-node-critical",
                       "tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}]},
        "driver": driver_spec(plan, images),
        "toolkit": _enabled(images.toolkit),
        "devicePlugin": _enabled(images.device_plugin),
        "dcgm": {"enabled": False},
        "dcgmExporter": _enabled(images.dcgm_exporter),
        "gfd": _enabled(images.gfd),
        "mig": {"strategy": "single"},
        "migManager": _enabled(images.mig_manager),
        "nodeStatusExporter": {"enabled": False},
        "validator": _image(images.validator),
    }
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": NAME}, "spec": spec}


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """``kubernetes/gpu-operator/clusterpolicy.yaml``; ``{}`` unless ``kubernetes.gpu_operator`` names a release
    (and the blueprint pins ``software``)."""
    refuse_unknown(plan, "gpu_operator")
    if gpu_operator_release(plan) is None or plan.software is None:
        return {}
    version = gpu_driver(plan)
    driver = (f"driver {version} (software.driver {plan.software.driver})" if version is not None else
              f"the host's driver (software.driver {plan.software.driver} is not in this release's matrix: "
              "rule K8S004)")
    comments = [f"NVIDIA GPU Operator {plan.kubernetes.gpu_operator}: {driver}.",
                "Replaces the chart's own cluster-policy: kubectl apply --server-side --force-conflicts -f "
                "clusterpolicy.yaml (docs/kubernetes.md)."]
    return {PATH: stream([cluster_policy(plan)], comments, plan)}
