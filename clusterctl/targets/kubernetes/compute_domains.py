"""NVLink ComputeDomains: IMEX for multi-node NVLink jobs, one per NVLink domain of the plan.

``kubernetes/dra/computedomains.yaml``: a ``ComputeDomain`` (``resource.nvidia.com/v1beta1``; NVIDIA DRA driver
for GPUs, deployments/helm/nvidia-dra-driver-gpu/crds/resource.nvidia.com_computedomains.yaml at v25.8.0 through
v25.12.0, and kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 where the project moved) per domain of the
``accelerator`` level of :func:`clusterctl.plan.kube_topology.kube_topology` (an NVL72 rack: the same blocks as
Slurm's topology/block), in ``kubernetes.namespace``, named after the domain:

- ``spec.numNodes``: :func:`clusterctl.plan.kube_operators.compute_domain_nodes` (``kubernetes.compute_domain_nodes``,
  else every tray of the domain; rule K8S003 refuses more than the domain holds). With the driver's
  ``IMEXDaemonsWithDNSNames`` feature gate on (its default from v25.8) the CRD's own description recommends 0 and
  uses a non-zero value only to report the domain Ready when that many IMEX daemons are; with it off, workload
  pods wait until ``numNodes`` daemons have joined.
- ``spec.channel.resourceClaimTemplate.name``: ``<domain>-channel``, the ResourceClaimTemplate the driver creates
  for the workload's pods to claim (``resourceClaims[].resourceClaimTemplateName``); ``allocationMode`` is left
  at the CRD's default (``Single``: one IMEX channel per pod).

A ComputeDomain does not pin its pods: a job keeps its pods in the domain's rack with the node label
``network.topology.nvidia.com/accelerator: <domain>`` (nodes.yaml), or the topology-aware schedulers' level.
"""

from __future__ import annotations

from clusterctl import hostlist
from clusterctl.plan.kube_names import domain_path, domain_paths
from clusterctl.plan.kube_operators import compute_domain_nodes, dra_driver_release, oversized_compute_domain
from clusterctl.plan.kube_topology import KubeTopology
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import RenderError
from clusterctl.targets.kubernetes.objects import dns_subdomain, stream
from clusterctl.targets.kubernetes.releases import refuse_unknown

PATH = "kubernetes/dra/computedomains.yaml"


def claim_template(domain: str) -> str:
    """The ResourceClaimTemplate name of a domain's ComputeDomain."""
    return f"{domain}-channel"


def _refuse_oversized(plan: ClusterPlan, topo: KubeTopology) -> None:
    over = oversized_compute_domain(plan, topo)
    if over is not None:
        err = RenderError(f"kubernetes target: {over.message}")
        err.path, err.hint = ("kubernetes", "compute_domain_nodes"), f"at most {over.trays} (rule K8S003)"
        raise err


def compute_domains(plan: ClusterPlan, topo: KubeTopology) -> list[dict]:
    api = dra_driver_release(plan).compute_domain_api
    paths = domain_paths(plan)
    docs = []
    for d in topo.of_level("accelerator"):
        name = dns_subdomain(d.name, f"NVLink domain {d.name} (a ComputeDomain's name)", domain_path(d.name, paths))
        docs.append({"apiVersion": api, "kind": "ComputeDomain",
                     "metadata": {"name": name, "namespace": plan.kubernetes.namespace},
                     "spec": {"numNodes": compute_domain_nodes(plan, hostlist.count(d.hosts)),
                              "channel": {"resourceClaimTemplate": {"name": claim_template(name)}}}})
    return docs


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """``kubernetes/dra/computedomains.yaml``; ``{}`` unless ``kubernetes.dra_driver`` names a release and the
    worker groups have multi-node NVLink domains."""
    refuse_unknown(plan, "dra_driver")
    release = dra_driver_release(plan)
    if release is None or not topo.of_level("accelerator"):
        return {}
    _refuse_oversized(plan, topo)
    comments = [f"NVIDIA DRA driver for GPUs {plan.kubernetes.dra_driver} ({release.repository}): a ComputeDomain "
                "per NVLink domain.",
                "Pods claim <domain>-channel and select the label network.topology.nvidia.com/accelerator=<domain>."]
    return {PATH: stream(compute_domains(plan, topo), comments, plan)}
