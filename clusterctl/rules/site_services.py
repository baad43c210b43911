"""The services the Slurm controllers give the rest of the cluster from day 0: DHCP (clusterctl/plan/dhcp.py) and
time (clusterctl/targets/ansible/chrony.py). Hosts without a MAC in the inventory are counted by the inventory's
coverage rule, not here."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.dhcp import boot_server_refusal
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.rules.base import Hit, Severity, rule


@rule("DHCP001", "site_services", Severity.ERROR, "the provisioner's boot server has no address")
def boot_server_unknown(plan: ClusterPlan) -> Iterator[Hit]:
    """DHCP hands a booting node the address of its boot server (``next-server``, Kea ARM "Setting Fixed Fields in
    Classification"): ``site.provisioner.server`` must be a host of the blueprint with an in-band address (the
    plan knows it) or an IPv4 address. A name the plan does not hold has no address the DHCP file can carry."""
    refusal = boot_server_refusal(plan)
    if refusal is not None:
        yield Hit(("site", "provisioner", "server"), refusal,
                  "name a host of the blueprint or write the boot server's IPv4 address")


@rule("TIME001", "site_services", Severity.WARNING, "no site time servers")
def no_site_time_servers(plan: ClusterPlan) -> Iterator[Hit]:
    """The Slurm controllers are the cluster's time servers; they follow ``site.time_servers`` and no public pool
    unless it is written there (an air-gapped site cannot reach one). With none, the cluster keeps its own time:
    the controllers peer each other in chrony's orphan mode and every node follows them, so MUNGE and Slurm agree,
    but the clocks drift from the world's (log timestamps, certificates, the storage's own clock). A cloud
    cluster follows the provider's time service and is not judged."""
    if plan.cloud is not None or not slurm_roles(plan).controllers:
        return
    if plan.site is not None and plan.site.time_servers:
        return
    yield Hit(("site",), "no site time servers: the cluster keeps its own time (the Slurm controllers serve their "
              "own clock in orphan mode and drift from the world's)",
              "write the site's NTP servers in site.time_servers (a public pool such as pool.ntp.org only where "
              "the cluster may reach the internet)")
