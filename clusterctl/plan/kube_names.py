"""Planned names that reach Kubernetes objects, and the limits the Kubernetes API puts on them.

A host name becomes a Node's ``metadata.name``, a switch or NVLink domain name a node-label value (and the name
of the HyperNode or ComputeDomain that stands for it), a node group name a label value. The blueprint's kinds
allow names Kubernetes does not (upper case and ``_`` in host names, 64-character rack names), so the one check
of each value is here: the kubernetes target refuses to write a value that fails it
(:mod:`clusterctl.targets.kubernetes.objects`) and rule K8S002 reports the same values at validate time, from
:func:`planned_names` (so ``validate`` exits 0 exactly when ``render --target kubernetes`` succeeds).

The limits are Kubernetes' own (kubernetes/apimachinery v0.34.0 = Kubernetes 1.34,
``pkg/util/validation/validation.go``):
``IsValidLabelValue`` (at most 63 characters, ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``),
``IsDNS1123Label`` (at most 63, ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``) and ``IsDNS1123Subdomain`` (at most 253, such
labels joined by dots), which is what most object names must be (Node, HyperNode, ResourceFlavor, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from clusterctl.kinds import DNS_LABEL, Kind
from clusterctl.plan.kube_topology import KubeTopology, gpu_workers, worker_groups
from clusterctl.plan.model import BPath, ClusterPlan

LABEL_VALUE = Kind(
    "KubeLabelValue", "a Kubernetes label value", "at most 63 letters, digits, '-', '_' and '.', starting and "
    "ending with a letter or digit (Kubernetes' IsValidLabelValue)", "rack01",
    r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", 63, "starts and ends with a letter or digit", r"A-Za-z0-9_.-")

DNS_SUBDOMAIN = Kind(
    "DnsSubdomain", "a Kubernetes object name", "an RFC 1123 subdomain: lower-case letters, digits, '-' and '.', "
    "every part between dots starting and ending with a letter or digit, at most 253 characters (Kubernetes' "
    "IsDNS1123Subdomain)", "gpu0001", r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", 253,
    "has every part between dots start and end with a lower-case letter or digit", r"a-z0-9.-")

CHECKS: dict[str, Kind] = {"label value": LABEL_VALUE, "DNS label": DNS_LABEL, "object name": DNS_SUBDOMAIN}
"""what a value is used as -> the Kubernetes limit on it"""

HINTS = {
    "label value": "Kubernetes label values have at most 63 characters: letters, digits, '-', '_' and '.', "
                   "starting and ending with a letter or digit; rename it in the blueprint",
    "DNS label": "use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
    "object name": "Kubernetes object names are lower-case letters, digits, '-' and '.' (RFC 1123), each part "
                   "starting and ending with a letter or digit; rename it in the blueprint (host names in lower "
                   "case, '-' for '_')",
}


def problem(value: str, use: str) -> str | None:
    """Why ``value`` cannot be used as ``use`` (a key of :data:`CHECKS`) in a Kubernetes object, or None."""
    return CHECKS[use].explain(value)


@dataclass(frozen=True, slots=True)
class KubeName:
    """One planned value the kubernetes target writes where Kubernetes limits it."""
    value: str
    use: str
    """a key of CHECKS"""
    what: str
    """what it is, for messages: "host gpu0001 (a Node's name)" """
    path: BPath
    """where the blueprint decides it"""


def group_object_name(group: str) -> str:
    """The object name of things named after a node group (ResourceFlavors, NodeSets): node group names are
    lower-case letters, digits and '_' (kinds.GroupName), object names take '-' for '_' (one-to-one: a group name
    holds no '-')."""
    return group.replace("_", "-")


def domain_paths(plan: ClusterPlan) -> dict[str, BPath]:
    """Where each planned switch or NVLink domain name comes from: a fabric's, a rack's or a node group's name."""
    paths: dict[str, BPath] = {}
    for f in plan.fabrics:
        paths[f.name] = f.path + ("name",)
    for r in plan.racks:
        paths[r.name] = r.path
    for g in plan.groups:
        paths[g.name] = g.path + ("name",)
    return paths


def domain_path(name: str, paths: dict[str, BPath]) -> BPath:
    """The fabric, rack or group a domain is named after: its own name, or the longest one before a '-' suffix
    (compute-su01, rack01-2, gpu-nvl01)."""
    while name:
        if name in paths:
            return paths[name]
        if "-" not in name:
            break
        name = name.rsplit("-", 1)[0]
    return ()


def planned_names(plan: ClusterPlan, topo: KubeTopology) -> Iterator[KubeName]:
    """Every planned value the kubernetes target writes as a Node name, a label value or an object name: the
    worker hosts (Node names), every topology domain (node-label value; HyperNode and ComputeDomain name), every
    worker node group (label value; object name with '-' for '_')."""
    for g in worker_groups(plan):
        where = g.path + ("hostnames",)
        for host in g.hosts:
            yield KubeName(host, "object name", f"host {host} (a Node's name)", where)
        yield KubeName(g.name, "label value", f"node group {g.name} (a node-label value)", g.path + ("name",))
        yield KubeName(group_object_name(g.name), "object name",
                       f"node group {g.name} (the name of objects made for it)", g.path + ("name",))
    paths = domain_paths(plan)
    for d in topo.domains:
        where = domain_path(d.name, paths)
        yield KubeName(d.name, "label value", f"{d.level} {d.name} (a node-label value)", where)
        yield KubeName(d.name, "object name", f"{d.level} {d.name} (the name of the object for it)", where)


KUEUE_MAX_FLAVORS = 64
"""``resourceGroups[].flavors`` maxItems in Kueue's ClusterQueue CRD (kueue v0.19.2,
config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml): the kueue part writes one ResourceFlavor per GPU
worker group into one resource group"""


def kueue_flavor_overflow(plan: ClusterPlan) -> str | None:
    """Why Kueue's ClusterQueue cannot hold a flavor per GPU worker group (more than KUEUE_MAX_FLAVORS groups), or
    None. The kueue part refuses to write it, and rule K8S005 reports it at validate time."""
    if plan.kubernetes is None or "kueue" not in plan.kubernetes.schedulers:
        return None
    n = len(gpu_workers(plan))
    if n <= KUEUE_MAX_FLAVORS:
        return None
    return (f"{n} GPU worker node groups, but a Kueue ClusterQueue's resource group holds at most "
            f"{KUEUE_MAX_FLAVORS} flavors (one ResourceFlavor per group)")
