"""Kubernetes: the topology the schedulers see, names the Kubernetes API would refuse, the ComputeDomains asked
for, and the operator releases chosen.

Every rule is silent when the blueprint has no ``kubernetes:`` section. The topology is the plan's
(:func:`clusterctl.plan.kube_topology.kube_topology`, the same the kubernetes target writes), and the name limits
are :mod:`clusterctl.plan.kube_names`', which the target refuses by: so K8S002 reports first every value
``render --target kubernetes`` would refuse (docs/kubernetes.md). K8S003 and K8S004 ask
:mod:`clusterctl.plan.kube_operators`, as the target's operator parts do: an error is what the render refuses, a
warning what it works around (and says so in the file).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.hidden_chars import shown
from clusterctl.plan.kube_names import HINTS, kueue_flavor_overflow, planned_names, problem
from clusterctl.plan.kube_operators import gpu_driver, gpu_operator_release, oversized_compute_domain, unknown_releases
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
    so the nodes must have it installed. The Network Operator's table says which DOCA-OFED containers a release
    deploys, not which DOCA a host may run: a ``software.doca`` it ships no container of is no finding, the
    NicClusterPolicy leaves DOCA-OFED to the host (where clusterctl's roles install ``software.doca``) and says
    so."""
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


@rule("K8S005", "kubernetes", Severity.ERROR, "more GPU node groups than a Kueue ClusterQueue holds flavors")
def kueue_flavors(plan: ClusterPlan) -> Iterator[Hit]:
    """The kueue part gives every GPU worker group a ResourceFlavor (its nodes, its Topology) and lists them all
    in one resource group of the ClusterQueue, which Kueue's CRD bounds at 64 flavors; the render refuses more."""
    overflow = kueue_flavor_overflow(plan)
    if overflow is not None:
        yield Hit(("node_groups",), overflow, "merge node groups of the same node type, or leave kueue out of "
                  "kubernetes.schedulers and queue with Volcano or KAI")


@rule("K8S006", "kubernetes", Severity.WARNING, "Slinky chosen without a Slurm section")
def slinky_without_slurm(plan: ClusterPlan) -> Iterator[Hit]:
    """Slinky's slurm-operator runs the blueprint's Slurm cluster in Kubernetes: its NodeSets, partitions and
    topology.yaml come from the ``slurm:`` section. Without one, ``kubernetes.slinky: true`` writes no Slinky files
    (the Node objects still carry the topology annotation), which a reader of the blueprint would not expect."""
    if plan.kubernetes is not None and plan.kubernetes.slinky and plan.slurm is None:
        yield Hit(("kubernetes", "slinky"), "kubernetes.slinky is true, but the blueprint has no slurm section: no "
                  "Slinky NodeSets, Helm values or topology.yaml are written",
                  "add the slurm section the operator should run, or set slinky to false")
