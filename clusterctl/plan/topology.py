"""The scheduler's view of the network: which switches and blocks exist and which nodes each holds.

Plain data derived from the planned fabrics and NVLink domains; the slurm target writes it as topology.conf
or topology.yaml lines (docs/slurm.md, "topology"):

- a tree of switches per compute fabric: a rail-optimized scalable unit (SU) is *one* switch, because its
  nodes share every rail leaf (a tree whose leaves are rails would say that nodes of one SU are far apart),
  then the spine (two tiers) or the pods and the core (three tiers);
- one block per multi-node NVLink domain (an NVL72 rack), and one per node group without such domains.

Host sets are compressed host lists (:mod:`clusterctl.hostlist`), as everywhere in the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, FabricPlan, GroupPlan
from clusterctl.plan.nvlink import multi_node


TREE_TOPOLOGY = "fabric"
"""topology.yaml(5): the name of the tree topology (the compute fabric's switches)"""
BLOCK_TOPOLOGY = "nvlink"
"""topology.yaml(5): the name of the block topology (the NVLink domains), present with multi-node domains"""


@dataclass(frozen=True, slots=True)
class Switch:
    """A switch of the tree: either a leaf level holding ``nodes`` or a higher one over ``switches``."""
    name: str
    nodes: str | None = None
    """host list of the nodes directly under it"""
    switches: str | None = None
    """host list of the names of the switches directly under it"""


@dataclass(frozen=True, slots=True)
class Block:
    """The nodes of one NVLink domain (or of a node group without multi-node domains)."""
    name: str
    nodes: str
    """host list"""


def _width(n: int) -> int:
    return len(str(n))


def _fabric_switches(plan: ClusterPlan, f: FabricPlan, members: list[GroupPlan]) -> list[Switch]:
    """Scalable units as the leaf level, then the spine (two tiers) or pods and core (three tiers).

    A rail-optimized SU (or a non-rail SU spread over several leaves) is one switch named
    ``<fabric>-su<N>``: every node of it reaches every other over one leaf hop on each rail. A non-rail SU
    on one leaf is that leaf, by its planned name."""
    attached = {plan.groups[gi].name for gi, role in f.attached if role == "compute"}
    keep: set[str] | None = None
    if attached - {g.name for g in members}:
        keep = {h for g in members for h in g.hosts}  # attached hosts that are no slurm nodes (rare)
    w = _width(len(f.sus))
    su_names: list[str | None] = []
    out: list[Switch] = []
    for su in f.sus:
        nodes = su.hostlist
        if keep is not None:
            nodes = hostlist.compress(h for h in hostlist.expand(su.hostlist) if h in keep) if su.hostlist else ""
        if not nodes:
            su_names.append(None)
            continue
        one_leaf = su.leaves and not f.rail_optimized and hostlist.count(su.leaves) == 1
        name = su.leaves if one_leaf else f"{f.name}-su{str(su.index + 1).zfill(w)}"
        su_names.append(name)
        out.append(Switch(name, nodes=nodes))
    named = [n for n in su_names if n]
    if f.tiers_declared == 2 and named:
        out.append(Switch(f"{f.name}-spine", switches=hostlist.compress(named)))
    elif f.tiers_declared >= 3 and named:
        per_pod = max(1, f.leaves_per_pod // max(1, f.leaves_per_su))
        pods = []
        n_pods = -(-len(su_names) // per_pod)
        pw = max(2, _width(n_pods))
        for p in range(n_pods):
            children = [n for n in su_names[p * per_pod:(p + 1) * per_pod] if n]
            if children:
                pod = f"{f.name}-pod{str(p + 1).zfill(pw)}"
                pods.append(pod)
                out.append(Switch(pod, switches=hostlist.compress(children)))
        out.append(Switch(f"{f.name}-core", switches=hostlist.compress(pods)))
    return out


def tree_switches(plan: ClusterPlan, groups: Sequence[GroupPlan]) -> list[Switch]:
    """The switch tree of every compute fabric the given node groups are on (each fabric's SUs, then its
    upper levels). A node group on no compute fabric is a switch of its own (topology/tree wants every node
    under a switch; jobs then never span it and the other groups, which is right: it shares no fabric with
    them)."""
    by_fabric: dict[int, list[GroupPlan]] = {}
    alone: list[GroupPlan] = []
    fabrics: dict[int, FabricPlan] = {}
    for g in groups:
        f = plan.compute_fabric(g)
        if f is None:
            alone.append(g)
        else:
            by_fabric.setdefault(f.index, []).append(g)
            fabrics[f.index] = f
    out: list[Switch] = []
    for fi, members in by_fabric.items():
        out.extend(_fabric_switches(plan, fabrics[fi], members))
    for g in alone:
        out.append(Switch(g.name, nodes=g.hostlist))
    return out


def nvlink_blocks(plan: ClusterPlan, groups: Sequence[GroupPlan]) -> list[Block]:
    """One block per multi-node NVLink domain: the hosts of one NVL72 rack (18 trays), named after the rack
    (``<rack>-<k>`` when a rack holds several domains, ``<group>-nvl<NN>`` for unplaced hosts). Node groups
    without multi-node domains are one block each, so they stay schedulable under topology/block."""
    domain_groups = {g.name for g in multi_node(plan)}
    out: list[Block] = []
    for g in groups:
        if g.name not in domain_groups:
            out.append(Block(g.name, g.hostlist))
            continue
        per = max(1, g.nvlink_domain_gpus // g.type.gpus)
        by_rack: dict[int, list[str]] = {}
        for host, r in zip(g.hosts, g.rack_index):
            by_rack.setdefault(r, []).append(host)
        unplaced = 0
        for r, hosts in by_rack.items():
            chunks = [hosts[i:i + per] for i in range(0, len(hosts), per)]
            for k, chunk in enumerate(chunks):
                if r >= 0:
                    name = plan.racks[r].name if len(chunks) == 1 else f"{plan.racks[r].name}-{k + 1}"
                else:
                    unplaced += 1
                    name = f"{g.name}-nvl{unplaced:02d}"
                out.append(Block(name, hostlist.compress(chunk)))
    return out


def node_topology_units(plan: ClusterPlan, groups: Sequence[GroupPlan]) -> dict[str, tuple[tuple[str, str], ...]]:
    """host -> ((topology, unit), ...): per topology of topology.yaml (:data:`TREE_TOPOLOGY`, then
    :data:`BLOCK_TOPOLOGY` with multi-node NVLink domains), the switch that holds the host directly and its block.
    What a dynamic node's ``Topology=`` says (``fabric:compute-su01,nvlink:rack01``), and what Slinky's node
    annotation ``topology.slinky.slurm.net/spec`` carries to the Slurm node of a NodeSet pod."""
    units: dict[str, list[tuple[str, str]]] = {}
    for sw in tree_switches(plan, groups):
        if sw.nodes:
            for h in hostlist.expand(sw.nodes):
                units.setdefault(h, []).append((TREE_TOPOLOGY, sw.name))
    if multi_node(plan):
        for b in nvlink_blocks(plan, groups):
            for h in hostlist.expand(b.nodes):
                units.setdefault(h, []).append((BLOCK_TOPOLOGY, b.name))
    return {h: tuple(u) for h, u in units.items()}
