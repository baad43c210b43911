"""firewall target: nftables rules per host role (docs/monitoring.md, "Host firewall"), from the plan's hosts and
addresses. Input is dropped unless a rule admits it; output is not filtered. Every host admits SSH, ICMP, replies
(conntrack established/related) and loopback; then what its roles serve, from whom:

- every Slurm host: srun's ports (slurm.conf SrunPortRange) from the cluster: srun listens there for its steps'
  I/O, on login and head nodes and inside batch jobs on compute nodes;
- compute (slurmd): slurmd 6818 from the cluster, every port from the other compute nodes (NCCL's bootstrap,
  MPI and PMIx pick ephemeral ports between the job's nodes);
- Slurm controllers: slurmctld 6817 from the cluster, the name servers (53), time (123) from the cluster, DHCP
  (67, from anywhere: a booting node has no address yet) and the Kea HA peer port from the other controllers;
- accounting hosts: slurmdbd 6819 from the cluster (sacct and sacctmgr talk to it from any node), MariaDB 3306
  from the accounting hosts only (munge is local: no port);
- NFS servers: 2049 from the cluster (NFSv4, which needs no rpcbind or mountd);
- monitoring: the node exporter (9100) and dcgm-exporter (9400) from the monitoring server only; Prometheus
  (9090) on the server from the cluster.

One file per node group (``firewall/groups/<group>.nft``) and one per host that serves more than its group
(``firewall/hosts/<host>.nft``); the host_firewall role installs the host's own file, else its group's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from clusterctl.plan.allocations import host_addresses
from clusterctl.plan.dhcp import dhcp_servers, serves_dhcp
from clusterctl.plan.inventory_groups import served_nfs_tiers
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.monitoring import (DCGM_EXPORTER_PORT, NODE_EXPORTER_PORT, PROMETHEUS_PORT, SRUN_PORT_RANGE,
                                        firewall_enabled, monitoring_plan)
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.site_records import name_servers
from clusterctl.targets.ansible.storage import checked_served_ranges
from clusterctl.targets.common import header, path_part
from clusterctl.targets.dhcp import HA_PORT

SLURMCTLD_PORT, SLURMD_PORT, SLURMDBD_PORT = 6817, 6818, 6819
"""slurm.conf(5) SlurmctldPort, SlurmdPort and slurmdbd.conf(5) DbdPort defaults (the rendered files keep them)"""
MARIADB_PORT = 3306


@dataclass(frozen=True, slots=True)
class Allow:
    """Admit ``proto`` ``ports`` (None: every port) from the named address set (None: anywhere)."""

    why: str
    proto: str
    ports: str | None
    source: str | None


def _ranges(addresses: list[str]) -> list[str]:
    """Addresses as nft set elements: runs of consecutive addresses become ``a-b`` (a 4,000-node group is a few)."""
    nums = sorted({int(ipaddress.ip_address(a)) for a in addresses})
    out: list[str] = []
    start = prev = None
    for n in nums + [None]:
        if start is not None and (n is None or n != prev + 1):
            a, b = ipaddress.ip_address(start), ipaddress.ip_address(prev)
            out.append(str(a) if a == b else f"{a}-{b}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return out


@dataclass
class Context:
    """What the rules of every host are made from, worked out once."""

    sets: dict[str, list[str]]
    controllers: frozenset[str]
    accounting: frozenset[str]
    nfs: frozenset[str]
    dns: frozenset[str]
    dhcp: frozenset[str]
    monitoring_server: str | None
    gpu_hosts: frozenset[str]


def context(plan: ClusterPlan) -> Context:
    roles = slurm_roles(plan)
    m = monitoring_plan(plan)
    special = roles.controllers + roles.accounting
    addresses = host_addresses(plan, special + ((m.server,) if m else ()))
    compute = [a for g in plan.groups if g.role == "compute"
               for a in host_addresses(plan, g.hosts).values()]
    sets = {"cluster": list(checked_served_ranges(plan)), "compute": _ranges(compute),
            "controllers": _ranges([addresses[h] for h in roles.controllers if h in addresses]),
            "accounting": _ranges([addresses[h] for h in roles.accounting if h in addresses]),
            "monitoring": [m.address] if m else []}
    return Context(sets, frozenset(roles.controllers), frozenset(roles.accounting),
                   frozenset(s.host for s in served_nfs_tiers(plan)), frozenset(r.name for r in name_servers(plan)),
                   frozenset(dhcp_servers(plan)) if serves_dhcp(plan) else frozenset(),
                   m.server if m else None, frozenset(m.gpu_nodes) if m else frozenset())


def group_allows(plan: ClusterPlan, g: GroupPlan, ctx: Context) -> list[Allow]:
    """What every host of ``g`` admits because of its group's role."""
    out = [Allow("SSH (operators, Ansible)", "tcp", "22", None)]
    srun = f"{SRUN_PORT_RANGE[0]}-{SRUN_PORT_RANGE[1]}"
    if plan.slurm is not None and g.role == "compute":
        out += [Allow("slurmd (slurmctld, srun, the other slurmd of a job's fan-out)", "tcp", str(SLURMD_PORT),
                      "cluster"),
                Allow("the jobs' own traffic between compute nodes (NCCL bootstrap, MPI, PMIx)", "tcp", None,
                      "compute"),
                Allow("the jobs' own traffic between compute nodes (UDP)", "udp", None, "compute")]
    if plan.slurm is not None:  # srun runs on login and head nodes, and inside batch jobs on compute nodes
        out.append(Allow("srun's I/O and step ports (SrunPortRange)", "tcp", srun, "cluster"))
    if ctx.monitoring_server is not None:
        out.append(Allow("node exporter, from the monitoring server", "tcp", str(NODE_EXPORTER_PORT), "monitoring"))
        if g.type.gpus > 0:
            out.append(Allow("dcgm-exporter, from the monitoring server", "tcp", str(DCGM_EXPORTER_PORT),
                             "monitoring"))
    return out


def host_allows(host: str, ctx: Context) -> list[Allow]:
    """What ``host`` admits beyond its group: the services of the hosts the plan names for them."""
    out = []
    if host in ctx.controllers:
        out.append(Allow("slurmctld (every node, srun, the Slurm commands)", "tcp", str(SLURMCTLD_PORT), "cluster"))
        out.append(Allow("time (chrony serves the cluster)", "udp", "123", "cluster"))
    if host in ctx.dns:
        out += [Allow("DNS (unbound serves the cluster's zones)", "udp", "53", "cluster"),
                Allow("DNS over TCP", "tcp", "53", "cluster")]
    if host in ctx.dhcp:
        out.append(Allow("DHCP (a booting node has no address yet: from anywhere)", "udp", "67", None))
        if len(ctx.dhcp) > 1:
            out.append(Allow("Kea HA peer", "tcp", str(HA_PORT), "controllers"))
    if host in ctx.accounting:
        out += [Allow("slurmdbd (slurmctld, sacct and sacctmgr on any node)", "tcp", str(SLURMDBD_PORT), "cluster"),
                Allow("MariaDB, from the accounting hosts only", "tcp", str(MARIADB_PORT), "accounting")]
    if host in ctx.nfs:
        out.append(Allow("NFSv4", "tcp", "2049", "cluster"))
    if host == ctx.monitoring_server:
        out.append(Allow("Prometheus (its web UI and API)", "tcp", str(PROMETHEUS_PORT), "cluster"))
    return out


def _set_lines(name: str, elements: list[str]) -> list[str]:
    lines = []
    for family, kind in ((4, "ipv4_addr"), (6, "ipv6_addr")):
        mine = [e for e in elements if ipaddress.ip_network(e.split("-")[0], strict=False).version == family]
        if mine:
            lines += [f"  set {name}_v{family} {{", f"    type {kind}", "    flags interval",
                      f"    elements = {{ {', '.join(mine)} }}", "  }"]
    return lines


def ruleset(plan: ClusterPlan, title: str, allows: list[Allow], ctx: Context) -> str:
    used = sorted({a.source for a in allows if a.source})
    lines = [header(plan).rstrip("\n"), f"# {title}: installed as /etc/nftables.conf by the host_firewall role",
             "# (docs/monitoring.md, \"Host firewall\"); only this table is replaced, other tables stay.",
             "table inet clusterctl", "delete table inet clusterctl", "", "table inet clusterctl {"]
    for name in used:
        lines += _set_lines(name, ctx.sets.get(name, []))
    lines += ["  chain input {", "    type filter hook input priority filter; policy drop;",
              "    ct state established,related accept", "    ct state invalid drop", '    iif "lo" accept',
              "    meta l4proto { icmp, ipv6-icmp } accept"]
    for a in allows:
        port = f" {a.proto} dport {a.ports}" if a.ports else f" meta l4proto {a.proto}"
        lines.append(f"    # {a.why}")
        if a.source is None:
            lines.append(f"   {port} accept")
            continue
        for family in (4, 6):
            if any(ipaddress.ip_network(e.split("-")[0], strict=False).version == family
                   for e in ctx.sets.get(a.source, [])):
                lines.append(f"    {'ip' if family == 4 else 'ip6'} saddr @{a.source}_v{family}{port} accept")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def render(plan: ClusterPlan) -> dict[str, str]:
    if not firewall_enabled(plan):
        return {}
    ctx = context(plan)
    files = {}
    for g in plan.groups:
        if g.type.instance is not None:
            continue
        base = group_allows(plan, g, ctx)
        files[f"firewall/groups/{path_part(g.name, 'node group name')}.nft"] = ruleset(
            plan, f"node group {g.name} ({g.role})", base, ctx)
        for h in g.hosts:
            extra = host_allows(h, ctx)
            if extra:
                files[f"firewall/hosts/{path_part(h, 'host name')}.nft"] = ruleset(
                    plan, f"host {h} of node group {g.name}", base + extra, ctx)
    return files
