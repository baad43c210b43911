"""Volcano: a HyperNode per switch and NVLink domain, the scheduler configuration, and the training Queue.

``kubernetes/volcano/hypernodes.yaml``: one ``HyperNode`` (``topology.volcano.sh/v1alpha1``, CRD
``config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml`` at volcano-sh/volcano v1.15.1, commit
0a56ed331897f5455916a44d3075671376d731d6) per domain of the worker groups' scheduling levels
(:mod:`clusterctl.plan.kube_topology`). A level has one tier across the cluster, counted from the lowest
scheduling level any group has (tier 1: the NVLink domain where there is one, else the leaf), and its level
name as ``tierName``: the scheduler maps each ``tierName`` to one tier (``HyperNodeTierNameMap`` in
``pkg/scheduler/api/hyper_node_info.go``), so a job may say ``highestTierName: accelerator`` as well as
``highestTierAllowed: 1``. A node is a ``Node`` member of the lowest domain of its group's levels; every other
domain lists the domains of the next level down as ``HyperNode`` members, so the HyperNodes form the same tree
as the plan's switches. A HyperNode is named after its domain (:func:`hypernode_names`: with the level as prefix
where domains of two levels share a name).

Members are selected by ``exactMatch`` of the node's name rather than ``labelMatch`` of the Topograph label,
though a label selector would be one member instead of 18 to 64: the HyperNode must hold exactly the designed
nodes whether or not the labels of ``nodes.yaml`` were applied, and a Topograph run after bring-up relabels the
nodes with the names it discovers, which would silently empty a label-selected HyperNode. ``regexMatch`` could
be shorter for a host range, but a regular expression for ``gb[001-018]`` is easy to get subtly wrong and no
shorter for the scattered hosts of a partly failed rack.

``kubernetes/volcano/scheduler.yaml``: the ConfigMap ``volcano-scheduler-configmap`` in ``volcano-system`` (the
name the Helm chart gives it for the release name ``volcano``: ``{{ .Release.Name }}-scheduler-configmap`` in
``installer/helm/chart/volcano/templates/scheduler.yaml``), holding the chart's default
``volcano-scheduler.conf`` of v1.15.1 with the ``network-topology-aware`` plugin added to the second tier (as
``docs/user-guide/how_to_use_network_topology_aware_scheduling.md`` shows), and the ``Queue``
(``scheduling.volcano.sh/v1beta1``, ``config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml``) named
``kubernetes.queue``, capped at the GPU count of the worker nodes. ``kubernetes/volcano/helm/values.yaml`` holds
the same scheduler configuration as the chart's ``custom.scheduler_config_override``, for a Helm-managed
install (the chart owns that ConfigMap, and ``helm upgrade`` would put back its default).
"""

from __future__ import annotations

from clusterctl import yamlout
from clusterctl.plan.kube_names import domain_path, domain_paths
from clusterctl.plan.kube_topology import KubeTopology, worker_groups
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import RenderError
from clusterctl.targets.kubernetes.objects import dns_subdomain, stream
from clusterctl.targets.kubernetes.scheduling_levels import GPU_RESOURCE, gpu_workers

TOPOLOGY_API = "topology.volcano.sh/v1alpha1"
SCHEDULING_API = "scheduling.volcano.sh/v1beta1"
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_NAMESPACE = "volcano-system"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"

SCHEDULER_CONF = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}]},
        {"plugins": [{"name": "overcommit"}, {"name": "drf", "enablePreemptable": False}, {"name": "predicates"},
                     {"name": "proportion"}, {"name": "nodeorder"}, {"name": "binpack"},
                     # network_topology_aware.go: HyperNode-level bin packing weighs the resources listed here
                     # (besides cpu and memory); GPUs are what a training cluster packs
                     {"name": "network-topology-aware", "arguments": {"hypernode.binpack.resources": GPU_RESOURCE}}]},
    ],
}
"""installer/helm/chart/volcano/config/volcano-scheduler.conf at v1.15.1, plus network-topology-aware"""


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    if plan.kubernetes is None or "volcano" not in plan.kubernetes.schedulers:
        return {}
    tiers = level_tiers(topo)
    legend = ", ".join(f"tier {t} = {lv}" for lv, t in sorted(tiers.items(), key=lambda item: item[1]))
    return {
        "kubernetes/volcano/hypernodes.yaml": stream(hypernodes(plan, topo), [
            f"Volcano HyperNodes of the designed network ({legend}); a job's networkTopology.highestTierAllowed "
            "(or highestTierName) bounds the tier its pods may span"], plan),
        "kubernetes/volcano/scheduler.yaml": stream([scheduler_configmap(), queue(plan)], [
            "the Volcano scheduler configuration with the network-topology-aware plugin (replaces the Helm "
            "release's ConfigMap; helm/values.yaml holds the same for helm install -f), and the training Queue"],
            plan),
        "kubernetes/volcano/helm/values.yaml": stream([helm_values()], [
            "Helm values for the volcano chart (helm install volcano volcano-sh/volcano -n volcano-system "
            "-f values.yaml): the scheduler configuration of scheduler.yaml, which a helm upgrade keeps"], plan),
    }


def level_tiers(topo: KubeTopology) -> dict[str, int]:
    """level -> its HyperNode tier: 1 for the lowest scheduling level any worker group has, counting up."""
    return {lv: tier for tier, lv in enumerate(reversed(topo.levels), start=1)}


Domain = tuple[str, str]
"""(level, name): names are unique within a level only (a rack may be named like a switch)"""


def _tree(plan: ClusterPlan, topo: KubeTopology) -> tuple[dict[Domain, list[Domain]], dict[Domain, list[str]]]:
    """(domain -> its child domains, domain -> its Node members), from each worker node's chain of domains
    over its group's scheduling levels (top first), in plan order. A domain with two parents is no tree."""
    host_domains = topo.host_domains
    children: dict[Domain, dict[Domain, None]] = {}
    nodes: dict[Domain, list[str]] = {}
    parent_of: dict[Domain, Domain] = {}
    for g in worker_groups(plan):
        levels, where = topo.group_levels.get(g.name, ()), g.path + ("hostnames",)
        for h in g.hosts:
            doms = host_domains.get(h, {})
            chain = [(lv, doms[lv]) for lv in levels if lv in doms]
            if not chain:
                continue
            nodes.setdefault(chain[-1], []).append(dns_subdomain(h, f"host {h} (a Node's name)", where))
            for upper, lower in zip(chain, chain[1:]):
                if parent_of.setdefault(lower, upper) != upper:
                    raise RenderError(f"kubernetes target: {lower[0]} {lower[1]} lies under both "
                                      f"{parent_of[lower][1]} and {upper[1]}: the HyperNodes would be no tree")
                children.setdefault(upper, {})[lower] = None
    return {d: list(c) for d, c in children.items()}, nodes


def hypernode_names(topo: KubeTopology, domains: set[Domain], paths: dict) -> dict[Domain, str]:
    """The HyperNode name of each domain: its own name, checked (and located) as an object name; where domains
    of two levels that both get a HyperNode share a name, each is prefixed with its level (``leaf.ib-su1``,
    ``accelerator.ib-su1``), so the names are unique without refusing the blueprint."""
    levels_of: dict[str, set[str]] = {}
    for level, name in domains:
        levels_of.setdefault(name, set()).add(level)
    return {(d.level, d.name): f"{d.level}." * (len(levels_of[d.name]) > 1) +
            dns_subdomain(d.name, f"{d.level} {d.name} (a HyperNode's name)", domain_path(d.name, paths))
            for d in topo.domains if (d.level, d.name) in domains}


def hypernodes(plan: ClusterPlan, topo: KubeTopology) -> list[dict]:
    """One HyperNode per domain some worker node's scheduling levels reach, top level first."""
    children, nodes = _tree(plan, topo)
    tiers = level_tiers(topo)
    named = hypernode_names(topo, set(children) | set(nodes), domain_paths(plan))
    docs = []
    for d in topo.domains:
        key = (d.level, d.name)
        if key not in named:
            continue  # a level its groups' schedulers leave out (an NVLink domain straddles it)
        members = [_member("HyperNode", named[c]) for c in children.get(key, ())]
        members += [_member("Node", h) for h in nodes.get(key, ())]
        docs.append({
            "apiVersion": TOPOLOGY_API,
            "kind": "HyperNode",
            "metadata": {"name": named[key]},
            "spec": {"tier": tiers[d.level], "tierName": d.level, "members": members},
        })
    return docs


def _member(kind: str, name: str) -> dict:
    """One member (a checked name), on one line: a tier-1 HyperNode lists every node."""
    return yamlout.FlowMap(type=kind, selector={"exactMatch": {"name": name}})


def scheduler_configmap() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCHEDULER_CONFIGMAP, "namespace": SCHEDULER_NAMESPACE},
        "data": {SCHEDULER_CONF_KEY: yamlout.Block(yamlout.body(SCHEDULER_CONF))},
    }


def helm_values() -> dict:
    """The chart's ``custom.scheduler_config_override`` (installer/helm/chart/volcano/values.yaml at v1.15.1): the
    chart writes it into the same ConfigMap, so a later ``helm upgrade`` does not undo the plugin."""
    return {"custom": {"scheduler_config_override": yamlout.Block(yamlout.body(SCHEDULER_CONF))}}


def queue(plan: ClusterPlan) -> dict:
    """The Queue training jobs name (``spec.queue`` of a Volcano Job): capability = every worker GPU."""
    gpus = sum(g.gpus for g in gpu_workers(plan))
    spec: dict = {"weight": 1}
    if gpus:
        spec["capability"] = {GPU_RESOURCE: gpus}
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "Queue",
        "metadata": {"name": dns_subdomain(plan.kubernetes.queue, "queue", ("kubernetes", "queue"))},
        "spec": spec,
    }
