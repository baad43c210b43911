"""Time: every node follows the Slurm controllers, which follow site.time_servers (else the cloud provider's
time service, else the public pool) and serve the in-band networks in orphan mode (chrony, common role)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.ansible.storage import checked_served_ranges
from clusterctl.yamlout import Flow, unsafe

CHRONY_CONF = "/etc/chrony/chrony.conf"
"""the common role's common_chrony_conf_path (Debian/Ubuntu)"""
PUBLIC_TIME_POOL = "pool.ntp.org"
"""the controllers' upstream when the blueprint names no site.time_servers"""
ORPHAN_STRATUM = 10
"""chrony ``local stratum 10 orphan`` on the time servers: chrony's recipe for an isolated network"""
CLOUD_TIME_SERVERS = {"aws": ["169.254.169.123"], "gcp": ["metadata.google.internal"]}
"""the provider's time service, reachable from every instance without internet access (Amazon Time Sync
Service; the GCE metadata server); Azure's is a PTP clock device, not NTP: the public pool there"""


def site_time_servers(plan: ClusterPlan) -> list[str]:
    """Where the controllers take their time from: site.time_servers, else the cloud provider's time service;
    empty: the public pool."""
    if plan.site is not None and plan.site.time_servers:
        return list(plan.site.time_servers)
    return list(CLOUD_TIME_SERVERS.get(plan.cloud.provider, [])) if plan.cloud is not None else []


def time_vars(plan: ClusterPlan, controllers: Sequence[str]) -> tuple[dict, dict]:
    """chrony variables: (every host: follow the Slurm controllers; the controllers: follow site.time_servers or
    the public pool, serve the in-band networks, orphan mode). Empty dicts without Slurm controllers (the
    role's defaults: the public pool)."""
    if not controllers:
        return {}, {}
    upstream = site_time_servers(plan)
    inband = list(checked_served_ranges(plan))
    return ({"common_chrony_servers": unsafe(Flow(list(controllers))), "common_chrony_pools": Flow([])},
            {"common_chrony_servers": unsafe(Flow(upstream)),
             "common_chrony_pools": Flow([] if upstream else [PUBLIC_TIME_POOL]),
             "common_chrony_allow": unsafe(Flow(inband)), "common_chrony_local_stratum": ORPHAN_STRATUM})
