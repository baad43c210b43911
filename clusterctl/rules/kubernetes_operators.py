"""Kubernetes operators: the releases a ``kubernetes:`` section chooses, and the ComputeDomains it asks for.

Both rules ask :mod:`clusterctl.plan.kube_operators`, as the kubernetes target does: an error here is exactly
what ``render --target kubernetes`` refuses; a warning is what it works around (and says so in the file).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.kube_operators import (doca_driver, gpu_driver, gpu_operator_release, network_operator_release,
                                            oversized_compute_domain, unknown_releases)
from clusterctl.plan.kube_topology import kube_topology
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule

CATALOG_FILE = "clusterctl/catalog/kubernetes_operators.yaml"


@rule("K8S003", "kubernetes", Severity.ERROR, "ComputeDomain larger than an NVLink domain")
def compute_domain_fits(plan: ClusterPlan) -> Iterator[Hit]:
    """A ComputeDomain (NVIDIA DRA driver for GPUs) gives a job IMEX channels: GPU memory shared over multi-node
    NVLink, which reaches only the trays of one NVLink domain (an NVL72 rack, one NVLink clique). A
    ``kubernetes.compute_domain_nodes`` larger than the trays of an NVLink domain asks for more: the driver then
    runs one IMEX domain per clique (its ComputeDomainClique objects), and the job's pods in different racks share
    no memory, which is what a job asking for such a domain counts on."""
    if plan.kubernetes is None or plan.kubernetes.compute_domain_nodes is None:
        return
    over = oversized_compute_domain(plan, kube_topology(plan))
    if over is not None:
        yield Hit(("kubernetes", "compute_domain_nodes"), over.message,
                  f"set compute_domain_nodes to {over.trays} or less (or remove it: every tray of the domain)")


@rule("K8S004", "kubernetes", Severity.WARNING, "operator release does not support the pinned software")
def operator_versions(plan: ClusterPlan) -> Iterator[Hit]:
    """Each NVIDIA operator release supports a list of versions (clusterctl/catalog/kubernetes_operators.yaml,
    from the releases' component matrices): the GPU Operator the data center drivers of its matrix, the Network
    Operator the DOCA-OFED driver containers it ships (its own DOCA and the LTS one). A release clusterctl has
    no table for is an error (the target cannot know its fields). A ``software.driver`` the GPU Operator release
    does not list is a warning: the ClusterPolicy then leaves the driver to the host (``driver.enabled: false``),
    so the nodes must have it installed. A ``software.doca`` the Network Operator release does not ship is a
    warning: the NicClusterPolicy leaves DOCA-OFED to the host."""
    for unknown in unknown_releases(plan):
        yield Hit(unknown.path, unknown.message, f"choose one of {', '.join(unknown.known)} (or add the release "
                  f"to {CATALOG_FILE} with its sources)", severity=Severity.ERROR)
    sw = plan.software
    gpu = gpu_operator_release(plan)
    if gpu is not None and sw is not None and gpu_driver(plan) is None:
        branches = sorted({v.split(".")[0] for v in gpu.drivers}, key=int, reverse=True)
        yield Hit(("software", "driver"),
                  f"software.driver {sw.driver} is not in GPU Operator {plan.kubernetes.gpu_operator}'s component "
                  f"matrix (branches {', '.join(branches)}): the ClusterPolicy leaves the driver to the host "
                  f"(driver.enabled: false)",
                  f"choose a driver of branch {', '.join(branches)}, or a GPU Operator release that lists "
                  f"{sw.driver}; keep it only if the nodes' image carries the driver")
    net = network_operator_release(plan)
    if net is not None and sw is not None and sw.doca is not None and doca_driver(plan) is None:
        shipped = ", ".join(net.doca_drivers)
        yield Hit(("software", "doca"),
                  f"software.doca {sw.doca} is not a DOCA-OFED driver container of Network Operator "
                  f"{plan.kubernetes.network_operator} (it ships DOCA {shipped}): the NicClusterPolicy leaves "
                  f"DOCA-OFED to the host (no ofedDriver)",
                  f"set software.doca to one of {shipped}, or choose the Network Operator release that ships "
                  f"{sw.doca}; keep it only if the nodes' image carries DOCA-OFED {sw.doca}")
