"""The monitoring stack and host firewall facts (docs/monitoring.md): which host runs Prometheus, why it cannot
run where the blueprint says, and the in-band addresses of the hosts each scrape and firewall rule names."""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.plan.allocations import host_addresses
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import host_groups, slurm_roles

NODE_EXPORTER_PORT = 9100
"""prometheus-node-exporter's default --web.listen-address port (its README, "Usage")"""
DCGM_EXPORTER_PORT = 9400
"""dcgm-exporter's default port (roles/dcgm: dcgm_exporter_port)"""
PROMETHEUS_PORT = 9090
"""Prometheus's default --web.listen-address port"""
SRUN_PORT_RANGE = (60001, 63000)
"""slurm.conf SrunPortRange rendered with a host firewall (srun's ports are ephemeral otherwise): the range of
slurm.conf(5)'s own example"""


@dataclass(frozen=True, slots=True)
class MonitoringPlan:
    """Prometheus on ``server`` (its in-band ``address``), scraping ``scrape_interval_s``, keeping
    ``retention_days``; ``nodes``: every host with an in-band address, with it, in plan order; ``gpu_nodes``: those
    of GPU node groups (dcgm-exporter); ``slurm_nodes``: the Slurm controllers (the Slurm metrics)."""

    server: str
    address: str
    retention_days: int
    scrape_interval_s: int
    nodes: tuple[tuple[str, str], ...]
    gpu_nodes: tuple[str, ...]
    slurm_nodes: tuple[str, ...]


def _server_name(plan: ClusterPlan) -> str | None:
    m = plan.blueprint.monitoring
    if m is None:
        return None
    if m.server is not None:
        return m.server
    controllers = slurm_roles(plan).controllers
    return controllers[0] if controllers else None


def monitoring_refusal(plan: ClusterPlan) -> str | None:
    """Why the blueprint's ``monitoring`` section cannot be rendered (MON001 says it at validate time), or None."""
    if plan.blueprint.monitoring is None:
        return None
    server = _server_name(plan)
    if server is None:
        return "monitoring has no server: name one (monitoring.server) or give the blueprint a Slurm controller"
    group = host_groups(plan).get(server)
    if group is None:
        return f"monitoring.server {server} is not a host of any node group"
    if group.type.instance is not None or server not in host_addresses(plan, (server,)):
        return f"monitoring.server {server} has no planned in-band address (its node group has no in-band pool)"
    return None


def monitoring_plan(plan: ClusterPlan) -> MonitoringPlan | None:
    """The stack to render, or None when the blueprint has no ``monitoring`` section or it is refused."""
    m = plan.blueprint.monitoring
    if m is None or monitoring_refusal(plan) is not None:
        return None
    server = _server_name(plan)
    assert server is not None
    hosts = tuple(h for g in plan.groups if g.type.instance is None for h in g.hosts)
    addresses = host_addresses(plan, hosts)
    nodes = tuple((h, addresses[h]) for h in hosts if h in addresses)
    gpu = tuple(h for g in plan.groups if g.type.gpus > 0 and g.type.instance is None for h in g.hosts
                if h in addresses)
    return MonitoringPlan(server, addresses[server], m.retention_days, m.scrape_interval_s, nodes, gpu,
                          tuple(h for h in slurm_roles(plan).controllers if h in addresses))


def monitoring_unmet(plan: ClusterPlan) -> str:
    """'' when the blueprint has a monitoring stack to render, else why not (the monitoring scenario's need)."""
    if plan.blueprint.monitoring is None:
        return "no monitoring section"
    return monitoring_refusal(plan) or ""


def firewall_enabled(plan: ClusterPlan) -> bool:
    """Whether nftables rules are rendered: a ``firewall`` section that is enabled."""
    f = plan.blueprint.firewall
    return f is not None and f.enabled
