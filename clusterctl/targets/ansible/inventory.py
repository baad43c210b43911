"""The Ansible inventory (ansible/inventory.yml): one group per node group, node role, Slurm daemon, GPU nodes,
rack, scalable unit and multi-node NVLink domain, hosts written as Ansible ranges (``gpu[0001:0128]``), never one
line per host, so a 13,000-node inventory stays a few hundred lines; and the checks that keep its names
unambiguous."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterctl import hostlist
from clusterctl.names import ansible_group_name
from clusterctl.plan.inventory_groups import ROLE_GROUPS
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.nvlink import nvlink_domains
from clusterctl.plan.roles import gpu_groups, slurm_roles
from clusterctl.targets import RenderError
from clusterctl.targets.ansible.document import head_line
from clusterctl.targets.ansible.storage import nfs_exports
from clusterctl.targets.host_runs import host_runs
from clusterctl.yamlout import dump



class InventoryError(RenderError):
    """The plan's names cannot form an unambiguous Ansible inventory."""


def group_name(text: str) -> str:
    """An Ansible group name: letters, digits and underscores only (``ib-core`` -> ``ib_core``); the mapping
    lives in clusterctl/names.py, where rule NAME006 asks it which rack names would become one group."""
    return ansible_group_name(text)


def ansible_ranges(names: Iterable[str]) -> list[str]:
    """Host names as Ansible host patterns: each run of consecutive numbered names (clusterctl/targets/host_runs.py)
    becomes one ``[lo:hi]`` range, ``gpu0001..gpu0128`` -> ``gpu[0001:0128]``."""
    out = []
    for prefix, width, lo, hi, _ in host_runs(list(names)):
        if width < 0:
            out.append(prefix)
            continue
        fmt = (lambda n: str(n).zfill(width)) if width else str
        out.append(f"{prefix}{fmt(lo)}" if lo == hi else f"{prefix}[{fmt(lo)}:{fmt(hi)}]")
    return out


def _hostlist_ranges(expr: str) -> list[str]:
    return ansible_ranges(hostlist.expand(expr))


@dataclass
class InvGroup:
    name: str
    comment: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _rack_hosts(plan: ClusterPlan) -> list[tuple[str, list[str]]]:
    per_rack: dict[int, list[str]] = {}
    for g in plan.groups:
        for host, r in zip(g.hosts, g.rack_index):
            if r >= 0:
                per_rack.setdefault(r, []).append(host)
    return [(plan.racks[r].name, per_rack[r]) for r in sorted(per_rack)]



def inventory_groups(plan: ClusterPlan) -> list[InvGroup]:
    """The inventory's groups in output order: node groups, roles, Slurm, GPU nodes, racks, scalable units."""
    groups: dict[str, InvGroup] = {}

    def add(group: InvGroup) -> None:
        if group.name in groups:
            first = groups[group.name].comment or "a rack or scalable unit"
            raise InventoryError(f"Ansible group '{group.name}' would be defined twice ({first} and "
                                 f"{group.comment or 'a rack or scalable unit'}); rename the node group")
        groups[group.name] = group

    for g in plan.groups:
        add(InvGroup(g.name, f"node group {g.name}: {g.count} x {g.type.name}, role {g.role}",
                     hosts=ansible_ranges(g.hosts)))
    for role in ROLE_GROUPS:
        members = [g.name for g in plan.groups if g.role == role]
        if not members:
            continue
        if role in groups:  # a node group named after its own role (lab: group 'head', role head)
            own = plan.group(role)
            if own is None or own.role != role:
                raise InventoryError(f"node group '{role}' has role {own.role if own else '?'} but Ansible group "
                                     f"'{role}' holds the {role} nodes; rename the node group")
            groups[role].children = [m for m in members if m != role]
            groups[role].comment += f"; also the {role} role group"
        else:
            add(InvGroup(role, f"every node with role {role}", children=members))
    roles = slurm_roles(plan)
    controllers, accounting = roles.controllers, roles.accounting
    if controllers:
        add(InvGroup("slurm_controllers", "slurmctld hosts, primary first",
                     hosts=_hostlist_ranges(",".join(controllers))))
        add(InvGroup("slurm_accounting", "slurmdbd host", hosts=_hostlist_ranges(",".join(accounting))))
        members = [r for r in ("compute", "head", "login") if r in groups] + ["slurm_controllers", "slurm_accounting"]
        add(InvGroup("slurm_cluster", "every node that runs a Slurm daemon or command (gets MUNGE)",
                     children=members))
    servers = sorted({e["host"] for e in nfs_exports(plan)})
    if servers:
        add(InvGroup("nfs_servers", "nodes that serve an NFS tier of the blueprint (storage: tier nfs)",
                     hosts=servers))
    gpus = [g.name for g in gpu_groups(plan)]
    if gpus:
        add(InvGroup("gpu_nodes", "node groups with GPUs (driver, DCGM, containers)", children=gpus))
    for k, (rack, hosts) in enumerate(_rack_hosts(plan)):  # one comment for all racks: O(racks) lines
        add(InvGroup(f"rack_{group_name(rack)}", "" if k else "racks: rack_<name> holds the nodes in that rack",
                     hosts=ansible_ranges(hosts)))
    for f in plan.compute_fabrics():
        for su in f.sus:
            add(InvGroup(f"su_{group_name(f.name)}_{su.index + 1}",
                         "" if su.index else f"scalable units of compute fabric {f.name}: su_{group_name(f.name)}_<n>",
                         hosts=_hostlist_ranges(su.hostlist)))
    for k, (name, g, hosts) in enumerate(nvlink_domains(plan)):
        add(InvGroup(name, "" if k else f"multi-node NVLink (IMEX) domains: nvlink_<group>_<n>, "
                                         f"{g.nvlink_domain_gpus} GPUs each", hosts=ansible_ranges(hosts)))
    return list(groups.values())


INVENTORY_COMMENTS = (
    "Ansible YAML inventory. Hosts are ranges: gpu[0001:0128] is gpu0001 to gpu0128 (width of the lower bound).",
    "Groups: one per node group, per node role, Slurm controllers/accounting, GPU nodes, per rack (rack_<name>)",
    "and per scalable unit of the compute fabric (su_<fabric>_<n>). No host variables: group_vars/ holds them.",
)
_GROUP_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_HOST_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+(\[[0-9]+:[0-9]+\])?$")


def inventory_name(name: str, what: str) -> str:
    """A group or host key of the inventory: Ansible reads ``[`` as a range, ``:`` ``,`` and spaces as pattern
    separators, so only names the plan can produce pass (the model refuses others first)."""
    pattern = _HOST_PATTERN if what == "host" else _GROUP_NAME
    if not pattern.match(name):
        raise InventoryError(f"{what} name {name!r} cannot be written into the Ansible inventory; "
                             "use letters, digits, '-', '_' and '.'")
    return name


def inventory_data(plan: ClusterPlan, groups: Sequence[InvGroup] | None = None) -> dict:
    """``{"all": {"children": {group: {"hosts": {pattern: None}, "children": {name: None}}}}}``."""
    children: dict[str, dict] = {}
    for group in inventory_groups(plan) if groups is None else groups:
        entry: dict[str, dict] = {}
        if group.hosts:
            entry["hosts"] = {inventory_name(h, "host"): None for h in group.hosts}
        if group.children:
            entry["children"] = {inventory_name(c, "group"): None for c in group.children}
        children[inventory_name(group.name, "group")] = entry or None
    return {"all": {"children": children}}


def inventory_file(plan: ClusterPlan) -> str:
    groups = inventory_groups(plan)
    listing = [f"  {g.name}: {g.comment}" for g in groups if g.comment]
    return dump(inventory_data(plan, groups), [head_line(plan), *INVENTORY_COMMENTS, "", "groups:", *listing])
