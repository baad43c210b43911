"""The Ansible inventory's group names, and the NFS tiers the plan's own hosts serve: what the ansible target
writes and what validate judges, decided once so a node group name or an NFS tier that render refuses is an error
finding first (rules NAME008 and STORAGE011).

The inventory holds one group per node group (named as it is), one per node role that has nodes, the Slurm
groups, ``nfs_servers``, ``gpu_nodes``, ``rack_<rack>``, ``su_<fabric>_<n>`` and ``nvlink_<group>_<n>``
(docs/ansible.md); Ansible keeps one group per name, so a node group named like another group would merge the two.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from clusterctl.names import ansible_group_name
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.roles import slurm_roles

ROLE_GROUPS = ("compute", "head", "login", "storage", "service")
"""inventory groups by node role, in this order"""
SLURM_GROUPS = {"slurm_controllers": "the slurmctld hosts", "slurm_accounting": "the slurmdbd hosts",
                "slurm_cluster": "every node that runs a Slurm daemon or command"}
"""the Slurm groups of a plan with controllers: group -> what it holds"""
NFS_SERVERS = "nfs_servers"
GPU_NODES = "gpu_nodes"


@dataclass(frozen=True, slots=True)
class ServedTier:
    """An NFS tier exported by a host of the plan (``export: head01:/export/home``): the nfs_server role serves it."""

    index: int
    tier: object
    host: str
    path: str


def served_nfs_tiers(plan: ClusterPlan) -> list[ServedTier]:
    """The NFS tiers whose server is a host of a machine group of the plan (cloud groups serve nothing)."""
    own = {h for g in plan.groups if g.type.instance is None for h in g.hosts}
    out = []
    for i, t in enumerate(plan.storage):
        if t.tier == "nfs":
            host, _, path = t.export.partition(":")
            if host in own:
                out.append(ServedTier(i, t, host, path))
    return out


def unserved_exports(plan: ClusterPlan) -> list[ServedTier]:
    """Served NFS tiers with nobody to export to: the export's clients are the in-band pools, and the plan has none."""
    if any(p.role == "inband" for p in plan.addresses):
        return []
    return served_nfs_tiers(plan)


def _other_groups(plan: ClusterPlan) -> Iterator[tuple[str, str]]:
    """(name, what it holds) of every inventory group that is not a node group's own."""
    roles = {g.role for g in plan.groups}
    for role in ROLE_GROUPS:
        if role in roles:
            yield role, f"the {role} nodes"
    if slurm_roles(plan).controllers:
        yield from SLURM_GROUPS.items()
    if served_nfs_tiers(plan):
        yield NFS_SERVERS, "the nodes that serve an NFS tier"
    if any(g.type.gpus > 0 for g in plan.groups):
        yield GPU_NODES, "the node groups with GPUs"
    for r in plan.racks:
        yield f"rack_{ansible_group_name(r.name)}", f"rack {r.name}"
    for f in plan.compute_fabrics():
        for su in f.sus:
            yield f"su_{ansible_group_name(f.name)}_{su.index + 1}", f"scalable unit {su.index + 1} of fabric {f.name}"
    for g in plan.groups:
        per = (g.nvlink_domain_gpus or 0) // g.type.gpus if g.type.gpus else 0
        if per > 1:
            for n in range(1, -(-g.count // per) + 1):
                yield f"nvlink_{g.name}_{n}", f"NVLink domain {n} of node group {g.name}"


def group_name_clashes(plan: ClusterPlan) -> Iterator[tuple[GroupPlan, str]]:
    """(node group, what the other inventory group of its name holds) for every node group named like another
    inventory group: a node group named after its own role (group ``head`` of role head) is that role's group."""
    others: dict[str, str] = {}
    for name, what in _other_groups(plan):
        others.setdefault(name, what)
    for g in plan.groups:
        if g.name in others and not (g.name in ROLE_GROUPS and g.role == g.name):
            yield g, others[g.name]
