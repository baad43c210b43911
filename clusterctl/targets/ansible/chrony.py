"""Time: a hierarchy of the cluster's own (chrony, common role; docs/network.md, "Time").

- The Slurm controllers are the cluster's time servers. They follow ``site.time_servers`` (``server ... iburst``;
  else the cloud provider's time service) and *no public pool* unless the blueprint names one there (an
  air-gapped site cannot reach it; rule TIME001 warns when a bare-metal cluster names no upstream). They ``peer``
  each other (chrony.conf(5), "peer": a symmetric association; chrony's ``iburst`` does not work there) and all
  run ``local stratum 10 orphan`` (chrony.conf(5), "local", option ``orphan``: "each server needs to be configured
  to poll all other servers"; the one with the smallest reference id serves its clock, the others follow it),
  so when no upstream answers the controllers still agree on one time and every node follows it.
- Every other node follows every controller (``server <controller> iburst``).
- The controllers ``allow`` the in-band pools (the nodes) and the BMC and management pools (the BMCs and switches
  Kea hands the controllers as NTP servers: clusterctl/targets/dhcp.py).
PTP is out of scope (docs/network.md, "Time").
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.ranges import is_world, network
from clusterctl.targets.ansible.storage import checked_served_ranges
from clusterctl.yamlout import Flow, unsafe

CHRONY_CONF = "/etc/chrony/chrony.conf"
"""the common role's common_chrony_conf_path (Debian/Ubuntu)"""
PUBLIC_TIME_POOL = "pool.ntp.org"
"""the common role's default pool: only where clusterctl renders no time variables (a blueprint without Slurm)"""
ORPHAN_STRATUM = 10
"""chrony ``local stratum 10 orphan`` on the time servers: chrony's recipe for an isolated network"""
CLOUD_TIME_SERVERS = {"aws": ["169.254.169.123"], "gcp": ["metadata.google.internal"]}
"""the provider's time service, reachable from every instance without internet access (Amazon Time Sync
Service; the GCE metadata server); Azure's is a PTP clock device, not NTP: none there"""
DEVICE_POOL_ROLES = ("bmc", "mgmt")
"""pools of devices that take the controllers as NTP servers from DHCP: the controllers ``allow`` them too"""


def site_time_servers(plan: ClusterPlan) -> list[str]:
    """Where the controllers take their time from: site.time_servers, else the cloud provider's time service;
    empty: nowhere (the controllers keep the cluster's own time in orphan mode)."""
    if plan.site is not None and plan.site.time_servers:
        return list(plan.site.time_servers)
    return list(CLOUD_TIME_SERVERS.get(plan.cloud.provider, [])) if plan.cloud is not None else []


def time_clients(plan: ClusterPlan) -> list[str]:
    """chrony's ``allow`` on the controllers: the in-band pools, then the BMC and management pools (never a world
    range: rule ADDR005 refuses it; ``checked_served_ranges`` raises for an in-band one)."""
    inband = list(checked_served_ranges(plan))
    devices = [p.cidr for p in plan.addresses if p.role in DEVICE_POOL_ROLES
               and (net := network(p.cidr)) is not None and not is_world(net)]
    return inband + [c for c in devices if c not in inband]


def time_vars(plan: ClusterPlan, controllers: Sequence[str]) -> tuple[dict, dict]:
    """chrony variables: (every host: follow the Slurm controllers; the controllers: follow site.time_servers,
    peer each other, serve the cluster's networks, orphan mode). Empty dicts without Slurm controllers (the
    role's defaults)."""
    if not controllers:
        return {}, {}
    served = {"common_chrony_servers": unsafe(Flow(site_time_servers(plan))), "common_chrony_pools": Flow([])}
    if len(controllers) > 1:
        served["common_chrony_peers"] = unsafe(Flow(list(controllers)))
    served |= {"common_chrony_allow": unsafe(Flow(time_clients(plan))),
               "common_chrony_local_stratum": ORPHAN_STRATUM}
    return {"common_chrony_servers": unsafe(Flow(list(controllers))), "common_chrony_pools": Flow([])}, served
