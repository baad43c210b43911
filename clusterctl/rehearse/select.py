"""Which blueprint hosts become rehearsal nodes, and their addresses.

Every Slurm controller, the accounting host and every host of a login group, plus the first K hosts of
each compute group (K = ``--nodes-per-group``): the hosts whose interplay the rehearsal proves, at a
size that fits one machine. Addresses are the blueprint's in-band addresses (what the rendered
inventory and /etc/hosts use) when every selected host has one; for a cloud blueprint with one IPv4 VPC range,
addresses of that range as the cloud would assign them (after the first :data:`CLOUD_RESERVED`); otherwise a
rehearsal range.
"""

from __future__ import annotations

import ipaddress

from clusterctl.cloud.stack.spec import cloud_network
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.lifecycle import NodeSpec, fallback_specs
from clusterctl.targets.ansible import group_addresses

NODE_INIT = "systemd"
"""a rehearsal's nodes run systemd as PID 1, as a real node does: the roles' units, handlers and slurmd's Delegate=
are exercised, and SchedMD's packages ship systemd units only (no /etc/init.d scripts); docs/rehearse.md, 'Init and
services'"""

CLOUD_RESERVED = 4
"""addresses at the start of a subnet the provider keeps for itself (AWS and Azure: 4; GCP: 2)"""


def selected_hosts(plan: ClusterPlan, per_group: int) -> list[str]:
    """Host names in rehearsal order: controllers, accounting, login hosts, then K of each compute group."""
    roles = slurm_roles(plan)
    names: list[str] = [*roles.controllers, *roles.accounting, *roles.login]
    for g in plan.groups:
        if g.role == "compute":
            names += g.hosts[:per_group]
    return list(dict.fromkeys(names))


def node_specs(plan: ClusterPlan, per_group: int, rid: str) -> list[NodeSpec]:
    """The nodes to boot for ``plan``, each on :data:`NODE_INIT`; ``rid`` picks the rehearsal range when in-band
    addresses are missing."""
    names = selected_hosts(plan, per_group)
    return [NodeSpec(n, a, init=NODE_INIT) for n, a in zip(names, _addresses(plan, names, rid))]


def _addresses(plan: ClusterPlan, names: list[str], rid: str) -> list[str]:
    """Each host's in-band IPv4 address; else addresses of the cloud VPC range after the provider's reserved
    ones; else the rehearsal range of ``rid``."""
    wanted = set(names)
    address: dict[str, str | None] = {}
    for g in plan.groups:
        hit = [(i, h) for i, h in enumerate(g.hosts) if h in wanted]
        if not hit:
            continue
        addrs = group_addresses(plan, g)
        for i, h in hit:
            address[h] = addrs[i] if addrs is not None else None
    unknown = [n for n in names if n not in address]
    if unknown:
        raise RehearsalError(f"Slurm host(s) {', '.join(unknown)} are not hosts of any node group",
                             "name a host of a node group in slurm.controllers / slurm.accounting_host")
    values = [address[n] for n in names]
    if all(a is not None and ":" not in a for a in values):
        return values  # type: ignore[return-value]
    vpc = cloud_network(plan) if plan.cloud is not None else None
    if vpc is not None:
        net = ipaddress.ip_network(vpc.cidr)
        if net.num_addresses >= len(names) + CLOUD_RESERVED + 2:
            return [str(net.network_address + CLOUD_RESERVED + i) for i in range(len(names))]
    return [s.address for s in fallback_specs(names, rid)]
