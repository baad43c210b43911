"""Kubernetes: the topology the schedulers see, and names the Kubernetes API would refuse.

Every rule is silent when the blueprint has no ``kubernetes:`` section. The topology is the plan's
(:func:`clusterctl.plan.kube_topology.kube_topology`, the same the kubernetes target writes), and the name limits
are :mod:`clusterctl.plan.kube_names`', which the target refuses by: so K8S002 reports first every value
``render --target kubernetes`` would refuse (docs/kubernetes.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.hidden_chars import shown
from clusterctl.plan.kube_names import HINTS, planned_names, problem
from clusterctl.plan.kube_topology import kube_topology
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule


@rule("K8S001", "kubernetes", Severity.WARNING, "NVLink domains straddle a level Kubernetes schedulers need")
def domains_across_levels(plan: ClusterPlan) -> Iterator[Hit]:
    """Kueue's and KAI's ``Topology`` levels and Volcano's HyperNode tiers must nest strictly: every node in one
    domain per level, every domain inside one domain of the level above. When a node group's NVLink domains (NVL72
    racks of 18 trays) sit under several leaf switches (scalable units of 32 trays, as QM9700 leaves at 1:1 take),
    the group's scheduling levels leave the leaf out, so a job larger than one rack is packed by spine only, and
    the leaf labels the nodes carry serve no scheduler. Scalable units of a whole number of NVLink domains keep
    the leaf level (the same alignment Slurm's block topology prefers)."""
    if plan.kubernetes is None:
        return
    topo = kube_topology(plan)
    for name, levels in topo.skipped.items():
        g = plan.group(name)
        fabric = plan.compute_fabric(g) if g is not None else None
        trays = g.nvlink_domain_gpus // g.type.gpus if g is not None and g.nvlink_domain_gpus else 0
        where = fabric.path + ("su_nodes",) if fabric is not None else (g.path if g is not None else ("kubernetes",))
        fix = (f"set su_nodes of fabric {fabric.name} to a multiple of {trays} (the trays of one NVLink domain) so "
               f"every domain sits under one leaf switch" if fabric is not None and trays else
               "place whole NVLink domains under one switch")
        yield Hit(where, f"group {name}: its NVLink domains straddle the {', '.join(levels)} level; Kubernetes "
                         f"schedulers see {', '.join(topo.group_levels.get(name, ()))} only", fix)


@rule("K8S002", "kubernetes", Severity.ERROR, "planned name the Kubernetes API would refuse")
def refused_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Host names become Node names (RFC 1123 subdomains: lower case, no '_'), switch and NVLink domain names
    become node-label values (at most 63 characters) and the names of HyperNodes and ComputeDomains, node group
    names become label values and object names. The Kubernetes API refuses a value outside its limits, so the
    kubernetes target refuses to write it (exit 2); this rule reports the same values at validate time, one
    finding per blueprint place and use, with the first value and how many there are."""
    if plan.kubernetes is None:
        return
    bad: dict[tuple, list] = {}
    for name in planned_names(plan, kube_topology(plan)):
        reason = problem(name.value, name.use)
        if reason is not None:
            bad.setdefault((name.path, name.use), []).append((name, reason))
    for (path, use), found in bad.items():
        first, reason = found[0]
        more = f" (and {len(found) - 1:,} more)" if len(found) > 1 else ""
        yield Hit(path, f"{first.what}: {shown(first.value)} cannot be a Kubernetes {use}: {reason}{more}",
                  HINTS[use])
