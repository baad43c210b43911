"""The network topology as Kubernetes schedulers see it: levels of node labels, from the same plan as Slurm's.

Every topology-aware scheduler on Kubernetes (Volcano's HyperNodes, Kueue's and KAI's ``Topology``, Slinky's
node annotations) and NVIDIA Topograph describe the network as nested *domains* per *level*, each node
carrying one label per level. This module plans those domains once, from :mod:`clusterctl.plan.topology`
(the switches and blocks Slurm's topology.conf / topology.yaml are written from), so every output agrees with
``topology.conf`` by construction:

- ``leaf``: a switch of the tree that holds nodes (a scalable unit of the compute fabric, or a node group on no
  compute fabric);
- ``spine``: a switch over leaves (the spine of a two-tier fabric, a pod of a three-tier one);
- ``core``: a switch over spines (the core of a three-tier fabric);
- ``accelerator``: a multi-node NVLink domain (an NVL72 rack: one Slurm topology/block block). Node groups
  without multi-node NVLink domains have no accelerator level.

Strict nesting (each node in exactly one domain per level, each domain inside one domain of the level above) is
what Kueue's and KAI's ``Topology`` and Volcano's HyperNode tiers require. Where an NVLink domain's nodes sit
under several leaves (an NVL72 rack of 18 trays on a fabric whose scalable units hold 32, as QM9700 leaves at
1:1 do), the group's *scheduling levels* leave the leaf out: the NVLink domain nests in the spine (or the
lowest level that holds it whole). Its nodes still carry the leaf label (Topograph's model keeps every fact),
``KubeTopology.skipped`` says which levels a group's schedulers do not see, and rule K8S001 warns.

The level names are NVIDIA Topograph's node-label tiers (``network.topology.nvidia.com/<level>``); a domain's
name is the planned switch or block name, which is also the label value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.nvlink import multi_node
from clusterctl.plan.topology import nvlink_blocks, tree_switches

LEVELS = ("core", "spine", "leaf", "accelerator")
"""every level, from the top of the network down (Topograph's tiers)"""

TOPOGRAPH_LABEL_PREFIX = "network.topology.nvidia.com/"
"""NVIDIA Topograph's node-label key prefix: ``network.topology.nvidia.com/<level>``"""

HOSTNAME_LABEL = "kubernetes.io/hostname"
"""the well-known node label Kueue's Topology wants as its lowest level"""


@dataclass(frozen=True, slots=True)
class TopologyDomain:
    """One domain of one level: a switch of the tree or an NVLink domain, with the nodes under it."""
    level: str
    """one of LEVELS"""
    name: str
    """the planned switch or block name (topology.conf's SwitchName / BlockName): the label value"""
    parent: str | None
    """the name of the domain of the lowest level above this one that holds every node of this one (for an
    NVLink domain across leaves: the spine, or the core); None at the top"""
    hosts: str
    """host list of every node under the domain"""


@dataclass(frozen=True, slots=True)
class KubeTopology:
    """The domains of every level over the Kubernetes worker nodes (the compute node groups)."""
    domains: tuple[TopologyDomain, ...]
    """top level first (LEVELS order), then in plan order"""
    group_levels: dict[str, tuple[str, ...]]
    """node group name -> its scheduling levels, top first (e.g. ('spine', 'leaf', 'accelerator')): the levels
    its nodes carry that nest strictly"""
    skipped: dict[str, tuple[str, ...]]
    """node group name -> levels its nodes carry but its scheduling levels leave out (NVLink domains across
    them); only groups with such levels"""
    groups: tuple[str, ...]
    """the worker node groups, in plan order"""
    host_domains: dict[str, dict[str, str]] = field(init=False)
    """host -> {level: domain name}, for every worker node (a host in two domains of one level keeps the first);
    worked out once from ``domains``, as ``problems`` is"""
    problems: tuple[str, ...] = field(init=False)
    """where the domains are no strict tree: a node in two domains of one level (none by construction)"""

    def __post_init__(self) -> None:
        host_domains, problems = _host_domains(self.domains)
        object.__setattr__(self, "host_domains", host_domains)
        object.__setattr__(self, "problems", problems)

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels any node carries, top first."""
        present = {lv for lvs in self.group_levels.values() for lv in lvs}
        return tuple(lv for lv in LEVELS if lv in present)

    def of_level(self, level: str) -> tuple[TopologyDomain, ...]:
        return tuple(d for d in self.domains if d.level == level)


def worker_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """The node groups that are Kubernetes worker nodes for training: the compute groups."""
    return [g for g in plan.groups if g.role == "compute"]


def gpu_workers(plan: ClusterPlan) -> list[GroupPlan]:
    """The worker node groups with GPUs: what the queues' ``nvidia.com/gpu`` quota counts and Kueue's
    ResourceFlavors select (one flavor per group)."""
    return [g for g in worker_groups(plan) if g.type.gpus > 0]


def _height(name: str, below: dict[str, list[str]], leaves: set[str]) -> int:
    """0 for a switch holding nodes, 1 for one over those, 2 over those (iterative: the tree is shallow)."""
    h, frontier = 0, [name]
    while frontier and not all(n in leaves for n in frontier):
        frontier = [c for n in frontier for c in below.get(n, [])]
        h += 1
    return h


def _level_of(name: str, below: dict[str, list[str]], leaves: set[str], height_level: dict[int, str]) -> str:
    return height_level.get(_height(name, below, leaves), "core")


def kube_topology(plan: ClusterPlan) -> KubeTopology:
    """The domains of every level over the worker nodes, from the same switches and blocks as topology.conf."""
    groups = worker_groups(plan)
    switches = tree_switches(plan, groups)
    below = {s.name: hostlist.expand(s.switches) for s in switches if s.switches}
    leaves = {s.name for s in switches if s.nodes}
    height_level = {0: "leaf", 1: "spine", 2: "core"}
    parent_of: dict[str, str] = {}
    for s in switches:
        for child in below.get(s.name, []):
            parent_of.setdefault(child, s.name)
    hosts_of: dict[str, list[str]] = {s.name: hostlist.expand(s.nodes) for s in switches if s.nodes}
    for s in switches:  # upper levels: the nodes of every leaf under them (children are listed before parents)
        if s.switches:
            hosts_of[s.name] = [h for c in below[s.name] for h in hosts_of.get(c, [])]
    switch_level = {s.name: _level_of(s.name, below, leaves, height_level) for s in switches}
    by_level: dict[str, list[TopologyDomain]] = {lv: [] for lv in LEVELS}
    for s in switches:
        level = switch_level[s.name]
        by_level[level].append(TopologyDomain(level, s.name, parent_of.get(s.name), hostlist.compress(hosts_of[s.name])))
    leaf_of = {h: s.name for s in switches if s.nodes for h in hosts_of[s.name]}
    host_group = {h: g.name for g in groups for h in g.hosts}
    skipped: dict[str, set[str]] = {}
    domain_groups = {g.name for g in multi_node(plan)}
    blocks = nvlink_blocks(plan, [g for g in groups if g.name in domain_groups])
    for b in blocks:  # climb from the domain's leaves until one switch holds it whole (None: nothing above does)
        members = hostlist.expand(b.nodes)
        under = {leaf_of.get(h) for h in members}
        while len(under) > 1:
            skipped.setdefault(host_group[members[0]], set()).update(switch_level[n] for n in under if n)
            under = {parent_of.get(n) for n in under if n}
    for b in blocks:  # a group's NVLink domains all nest in its lowest kept level
        members = hostlist.expand(b.nodes)
        gone, parent = skipped.get(host_group[members[0]], set()), leaf_of.get(members[0])
        while parent is not None and switch_level[parent] in gone:
            parent = parent_of.get(parent)
        by_level["accelerator"].append(TopologyDomain("accelerator", b.name, parent, b.nodes))
    group_levels: dict[str, set[str]] = {g.name: set() for g in groups}
    for level, domains in by_level.items():
        for d in domains:
            for h in hostlist.expand(d.hosts):
                group_levels[host_group[h]].add(level)
    return KubeTopology(
        domains=tuple(d for lv in LEVELS for d in by_level[lv]),
        group_levels={g: tuple(lv for lv in LEVELS if lv in lvs and lv not in skipped.get(g, ()))
                      for g, lvs in group_levels.items()},
        skipped={g: tuple(lv for lv in LEVELS if lv in lvs) for g, lvs in skipped.items()},
        groups=tuple(g.name for g in groups))


def _host_domains(domains: Sequence[TopologyDomain]) -> tuple[dict[str, dict[str, str]], tuple[str, ...]]:
    """host -> {level: domain}, and a sentence for each node found in a second domain of one level."""
    out: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for d in domains:
        for h in hostlist.expand(d.hosts):
            other = out.setdefault(h, {}).setdefault(d.level, d.name)
            if other != d.name:
                problems.append(f"node {h} is in two {d.level} domains, {other} and {d.name}")
    return out, tuple(problems)


def tree_problems(topo: KubeTopology) -> list[str]:
    """Where the scheduling levels are no strict tree, one sentence each: a node in two domains of one level.
    (By construction there are none; the kubernetes target refuses to write a topology that has one.)"""
    return list(topo.problems)
