"""The monitoring stack's server (clusterctl/plan/monitoring.py): Prometheus must run on a host of the blueprint
that the nodes' exporters can be scraped from."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.monitoring import monitoring_refusal
from clusterctl.rules.base import Hit, Severity, rule


@rule("MON001", "monitoring", Severity.ERROR, "the monitoring server is not a host with an in-band address")
def monitoring_server_unknown(plan: ClusterPlan) -> Iterator[Hit]:
    """Prometheus scrapes every node's exporters over the in-band network, and the exporters and the host firewall
    accept scrapes from the server's in-band address only: ``monitoring.server`` (default: the first Slurm
    controller) must be a host of a machine node group with an in-band address."""
    refusal = monitoring_refusal(plan)
    if refusal is not None:
        yield Hit(("monitoring", "server"), refusal,
                  "name a host of a node group with an in-band pool, e.g. the head node")
