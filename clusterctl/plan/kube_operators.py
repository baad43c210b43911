"""The operator releases a blueprint's ``kubernetes:`` section chooses, resolved against what each release supports.

One function per fact, asked by the kubernetes target and by rules K8S003/K8S004 alike (so ``validate`` reports
what ``render`` refuses or works around):

- :func:`gpu_driver`: the data center driver version the GPU Operator's ClusterPolicy deploys. The operator
  wants a full version (``driver.version`` is the tag of ``nvcr.io/nvidia/driver``, ``<version>-<os>``), from the
  release's component matrix: ``software.driver`` given as a full version must be one of them; given as a branch
  ("570") it is that branch's newest listed version. None when the release lists none of it: the ClusterPolicy
  leaves the driver to the host (K8S004 warns).
- :func:`doca_driver`: the doca-driver (DOCA-OFED) container tag the NicClusterPolicy deploys, when
  ``software.doca`` is one the Network Operator release ships (its own or the LTS one); None: the host's DOCA-OFED
  (no finding: upstream states no limit on a host's DOCA-OFED).
- :func:`unknown_releases`: chosen releases the catalog does not know (K8S004 error; the target refuses).
- :func:`compute_domain_nodes`: the nodes one ComputeDomain requests, and the trays of the NVLink domains
  (K8S003 compares them).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.catalog.kubernetes_operators import (DraDriverRelease, GpuOperatorRelease, NetworkOperatorRelease,
                                                     SlinkyRelease, shipped_releases)
from clusterctl.plan.kube_topology import KubeTopology
from clusterctl.plan.model import BPath, ClusterPlan

SECTION = ("kubernetes",)


@dataclass(frozen=True, slots=True)
class UnknownRelease:
    """A chosen release the catalog has no entry for."""
    path: BPath
    what: str
    """"GPU Operator", "Network Operator", "DRA driver" """
    release: str
    known: tuple[str, ...]

    @property
    def message(self) -> str:
        return (f"kubernetes.{self.path[-1]} is {self.what} {self.release}, a release clusterctl has no table for "
                f"(clusterctl/catalog/kubernetes_operators.yaml knows {', '.join(self.known)})")


def _release(table: dict, version: str | None):
    return table.get(version) if version is not None else None


def gpu_operator_release(plan: ClusterPlan) -> GpuOperatorRelease | None:
    k = plan.kubernetes
    return _release(shipped_releases().gpu_operator, k.gpu_operator) if k is not None else None


def network_operator_release(plan: ClusterPlan) -> NetworkOperatorRelease | None:
    k = plan.kubernetes
    return _release(shipped_releases().network_operator, k.network_operator) if k is not None else None


def dra_driver_release(plan: ClusterPlan) -> DraDriverRelease | None:
    k = plan.kubernetes
    return _release(shipped_releases().dra_driver, k.dra_driver) if k is not None else None


def slinky_release() -> tuple[str, SlinkyRelease]:
    """The Slinky release the NodeSets and Helm values are written for: the newest in the catalog."""
    table = shipped_releases().slinky
    name = max(table, key=_version_key)
    return name, table[name]


def unknown_releases(plan: ClusterPlan) -> list[UnknownRelease]:
    k = plan.kubernetes
    if k is None:
        return []
    table = shipped_releases()
    out = []
    for field, what, known in (("gpu_operator", "GPU Operator", table.gpu_operator),
                               ("network_operator", "Network Operator", table.network_operator),
                               ("dra_driver", "DRA driver", table.dra_driver)):
        chosen = getattr(k, field)
        if chosen is not None and chosen not in known:
            out.append(UnknownRelease(SECTION + (field,), what, chosen, tuple(known)))
    return out


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in text.split("."))


def _matches(wanted: str, version: str) -> bool:
    """``version`` is ``wanted`` or in its branch: "570" matches 570.195.03, "3.2" matches 3.2.2."""
    return version == wanted or version.startswith(wanted + ".")


def gpu_driver(plan: ClusterPlan) -> str | None:
    """The driver version the ClusterPolicy deploys: ``software.driver``'s newest version in the release's
    matrix; None without a GPU Operator release, a ``software`` section or a listed version."""
    release, sw = gpu_operator_release(plan), plan.software
    if release is None or sw is None:
        return None
    listed = [v for v in release.drivers if _matches(sw.driver, v)]
    return max(listed, key=_version_key) if listed else None


def doca_driver(plan: ClusterPlan) -> str | None:
    """The doca-driver container tag the NicClusterPolicy deploys: the release's container of ``software.doca``;
    None (the host's DOCA-OFED) without one."""
    release, sw = network_operator_release(plan), plan.software
    if release is None or sw is None or sw.doca is None:
        return None
    listed = [v for v in release.doca_drivers if _matches(sw.doca, v)]
    return release.doca_drivers[max(listed, key=_version_key)] if listed else None


def nvlink_trays(topo: KubeTopology) -> dict[str, int]:
    """NVLink domain name -> its trays (nodes), for every multi-node NVLink domain of the worker groups (the
    accelerator level of the Kubernetes topology: one NVL72 rack each)."""
    return {d.name: hostlist.count(d.hosts) for d in topo.of_level("accelerator")}


def compute_domains_chosen(plan: ClusterPlan, topo: KubeTopology) -> bool:
    """ComputeDomains are written: a DRA driver release is chosen and the workers have multi-node NVLink
    domains."""
    return plan.kubernetes is not None and plan.kubernetes.dra_driver is not None and bool(nvlink_trays(topo))


def compute_domain_nodes(plan: ClusterPlan, domain_trays: int) -> int:
    """The nodes one ComputeDomain of a domain with ``domain_trays`` trays requests (``numNodes``):
    ``kubernetes.compute_domain_nodes``, else every tray of the domain."""
    k = plan.kubernetes
    chosen = k.compute_domain_nodes if k is not None else None
    return chosen if chosen is not None else domain_trays


@dataclass(frozen=True, slots=True)
class OversizedComputeDomain:
    """``kubernetes.compute_domain_nodes`` asks more nodes than an NVLink domain holds."""
    requested: int
    domain: str
    """the smallest NVLink domain (first of that size in plan order)"""
    trays: int

    @property
    def message(self) -> str:
        return (f"kubernetes.compute_domain_nodes asks {self.requested} nodes per ComputeDomain but NVLink domain "
                f"{self.domain} has {self.trays} trays: NVLink (and IMEX) reach only the nodes of one domain, so "
                f"a ComputeDomain of {self.requested} spans several, each its own IMEX domain, and its pods share "
                f"no GPU memory across them")


def oversized_compute_domain(plan: ClusterPlan, topo: KubeTopology) -> OversizedComputeDomain | None:
    """The smallest NVLink domain when ``compute_domain_nodes`` exceeds its trays; None when it fits (or is not
    set, or there is no multi-node NVLink domain: :func:`compute_domain_nodes` then asks nothing)."""
    k = plan.kubernetes
    trays = nvlink_trays(topo)
    if k is None or k.compute_domain_nodes is None or not trays:
        return None
    smallest = min(trays, key=lambda name: trays[name])
    if k.compute_domain_nodes <= trays[smallest]:
        return None
    return OversizedComputeDomain(k.compute_domain_nodes, smallest, trays[smallest])
