"""Day-2 operations of the cluster's own hosts: the monitoring stack (Prometheus on one server scraping every
node's exporters, with the alert rules of docs/monitoring.md) and the host firewall (nftables, per role)."""

from __future__ import annotations

from pydantic import Field

from clusterctl.kinds import HostName
from clusterctl.strict import StrictModel


class Monitoring(StrictModel):
    """Prometheus from the distribution's packages on ``server``, node exporter on every node (its textfile
    collector carries the Slurm metrics on the controllers), dcgm-exporter on the GPU nodes bound to their
    in-band address, and the alert rules clusterctl renders (docs/monitoring.md)."""

    server: HostName | None = None
    """the host running Prometheus; absent: the first Slurm controller (MON001 when there is none)"""
    retention_days: int = Field(default=30, ge=1, le=3650)
    """how long Prometheus keeps samples (``--storage.tsdb.retention.time``)"""
    scrape_interval_s: int = Field(default=30, ge=5, le=600)
    """how often every target is scraped and every rule evaluated"""


class Firewall(StrictModel):
    """nftables on every node of the blueprint: input dropped unless the host's roles need it (docs/monitoring.md,
    "Host firewall"); output is not filtered."""

    enabled: bool = True
    """false keeps the section written but renders no rules (hosts keep what they have)"""
