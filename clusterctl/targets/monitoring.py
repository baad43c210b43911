"""monitoring target: the Prometheus configuration (every node's node exporter, the GPU nodes' dcgm-exporter, on
their in-band addresses), its alert rules and the dcgm-exporter counters they need (docs/monitoring.md). The
roles monitoring_exporters and monitoring_server install them; nothing is rendered without a ``monitoring``
section."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.monitoring import (DCGM_EXPORTER_PORT, NODE_EXPORTER_PORT, PROMETHEUS_PORT, MonitoringPlan,
                                        monitoring_plan, monitoring_refusal)
from clusterctl.targets import RenderError
from clusterctl.targets.common import at, header
from clusterctl.targets.monitoring_alerts import dcgm_counters, rule_groups
from clusterctl.yamlout import Flow, FlowMap, comment_lines, dump

RULES_GLOB = "/etc/prometheus/rules/*.yml"
"""where monitoring_server installs the rule files (a glob: promtool check config passes before they exist)"""


def _targets(hosts: list[tuple[str, str]], port: int) -> list[FlowMap]:
    """One static config per host: its in-band address, ``instance`` its name (alerts name hosts, not addresses)."""
    return [FlowMap({"targets": Flow([f"{address}:{port}"]), "labels": FlowMap({"instance": host})})
            for host, address in hosts]


def prometheus_config(m: MonitoringPlan) -> dict:
    interval = f"{m.scrape_interval_s}s"
    gpu = set(m.gpu_nodes)
    jobs = [
        {"job_name": "prometheus", "static_configs": _targets([(m.server, m.address)], PROMETHEUS_PORT)},
        {"job_name": "node", "static_configs": _targets(list(m.nodes), NODE_EXPORTER_PORT)},
    ]
    if gpu:
        jobs.append({"job_name": "dcgm",
                     "static_configs": _targets([(h, a) for h, a in m.nodes if h in gpu], DCGM_EXPORTER_PORT)})
    return {"global": {"scrape_interval": interval, "evaluation_interval": interval,
                       "external_labels": {"monitor": "clusterctl"}},
            "rule_files": [RULES_GLOB], "scrape_configs": jobs}


def render(plan: ClusterPlan) -> dict[str, str]:
    refusal = monitoring_refusal(plan)
    if refusal is not None:
        with at(("monitoring", "server")):
            raise RenderError(refusal)
    m = monitoring_plan(plan)
    if m is None:
        return {}
    head = header(plan).rstrip("\n").removeprefix("# ")
    slurm = ", ".join(m.slurm_nodes) or "none"
    return {
        "monitoring/prometheus.yml": dump(prometheus_config(m), [
            head, f"Prometheus on {m.server} ({m.address}:{PROMETHEUS_PORT}), installed by the monitoring_server role "
            f"as /etc/prometheus/prometheus.yml; samples kept {m.retention_days} days.",
            f"The Slurm metrics come through the node exporter of the Slurm controllers ({slurm}): its textfile "
            "collector reads", "what the slurm-metrics timer writes from sinfo, squeue and sdiag "
            "(docs/monitoring.md)."]),
        "monitoring/alerts.yml": dump({"groups": rule_groups()}, [
            head, "Alert rules (docs/monitoring.md, \"Alerts\"); installed in /etc/prometheus/rules/ and checked "
            "with promtool check rules."]),
        "monitoring/dcgm-counters.csv": comment_lines([head]) + dcgm_counters(),
    }
