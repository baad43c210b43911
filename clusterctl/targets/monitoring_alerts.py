"""The alert rules of the monitoring stack (monitoring/alerts.yml; docs/monitoring.md, "Alerts"): one entry per
failure the operators of a training cluster page on, each from a metric the rendered exporters serve:

- node exporter (prometheus-node-exporter 1.5): ``up``, the systemd collector's ``node_systemd_unit_state``
  (collector/systemd_linux.go), the InfiniBand collector's ``node_infiniband_*`` (collector/infiniband_linux.go:
  ``state_id`` 4 = ACTIVE, ``link_downed_total``, ``link_error_recovery_total``, ``port_errors_received_total``),
  the mountstats collector's NFS times and diskstats' read/write times, the textfile collector's mtime;
- dcgm-exporter with the counters of monitoring/dcgm-counters.csv (DCGM field names, dcgm_fields.h);
- the Slurm metrics the controllers' slurm-metrics timer writes from sinfo, squeue and sdiag
  (roles/monitoring_exporters/files/slurm-metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

CRITICAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
"""Xids NVIDIA's Xid catalogue resolves with a GPU reset or a reboot: the list node_health drains on
(roles/node_health/defaults/main.yml, node_health_xids)"""

DCGM_FIELDS = (
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending (a GPU reset applies it)."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
)
"""the dcgm-exporter counters the alerts need: its default-counters.csv leaves the ECC and NVLink error fields
commented out, so the GPU nodes run with this list (dcgm_exporter_collectors)"""

SYSTEMD_UNITS = ("slurmd", "slurmctld", "slurmdbd", "munge", "nvidia-dcgm", "nvidia-fabricmanager")
"""units the node exporter's systemd collector reports (--collector.systemd.unit-include)"""


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    expr: str
    duration: str
    severity: str
    summary: str


def _xid_expr() -> str:
    return " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {x}" for x in CRITICAL_XIDS)


ALERTS: tuple[tuple[str, tuple[Alert, ...]], ...] = (
    ("nodes", (
        Alert("NodeDown", 'up{job="node"} == 0', "3m", "critical",
              "{{ $labels.instance }}: node exporter not answering (host down or off the in-band network)"),
        Alert("SlurmdDown", 'node_systemd_unit_state{name="slurmd.service",state="active"} == 0', "1m", "critical",
              "{{ $labels.instance }}: slurmd is not active"),
        Alert("SlurmctldUnitDown", 'node_systemd_unit_state{name="slurmctld.service",state="active"} == 0', "2m",
              "critical", "{{ $labels.instance }}: slurmctld is not active"),
        Alert("MungeDown", 'node_systemd_unit_state{name="munge.service",state="active"} == 0', "2m", "critical",
              "{{ $labels.instance }}: munged is not active (Slurm authentication fails)"),
        Alert("FilesystemAlmostFull",
              'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay|squashfs"} '
              '/ node_filesystem_size_bytes{fstype!~"tmpfs|overlay|squashfs"} < 0.05', "10m", "warning",
              "{{ $labels.instance }}: {{ $labels.mountpoint }} has less than 5 % free"),
    )),
    ("slurm", (
        Alert("SlurmctldNotAnswering", "slurm_controller_up == 0", "2m", "critical",
              "{{ $labels.instance }}: sinfo gets no answer from slurmctld"),
        Alert("SlurmMetricsStale", 'time() - node_textfile_mtime_seconds{file=~".*slurm[.]prom"} > 300', "5m",
              "warning", "{{ $labels.instance }}: the Slurm metrics were not refreshed for 5 minutes"),
        Alert("SlurmNodeDown", 'slurm_node_state{state=~"down.*"} == 1', "5m", "critical",
              "Slurm node {{ $labels.node }} is {{ $labels.state }}"),
        Alert("SlurmNodeNotResponding", "slurm_node_not_responding == 1", "5m", "critical",
              "Slurm node {{ $labels.node }} does not respond to slurmctld"),
        Alert("SlurmNodeDrained", 'slurm_node_state{state=~".*drain.*"} == 1', "15m", "warning",
              "Slurm node {{ $labels.node }} is {{ $labels.state }} (node_health or an operator drained it)"),
        Alert("SlurmJobsFailing", "increase(slurm_jobs_failed_total[1h]) > 0", "0s", "warning",
              "{{ printf \"%.0f\" $value }} jobs failed in the last hour on slurmd or launch errors "
              "(sdiag \"Jobs failed\")"),
    )),
    ("gpu", (
        Alert("GpuCriticalXid", _xid_expr(), "0s", "critical",
              "{{ $labels.instance }} GPU {{ $labels.gpu }}: Xid {{ $value }} (reset the GPU or reboot)"),
        Alert("GpuDoubleBitEcc", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0", "0s", "critical",
              "{{ $labels.instance }} GPU {{ $labels.gpu }}: uncorrectable (double-bit) ECC errors"),
        Alert("GpuSingleBitEccStorm", "increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h]) > 1000", "0s", "warning",
              "{{ $labels.instance }} GPU {{ $labels.gpu }}: over 1000 corrected ECC errors in an hour"),
        Alert("GpuRowRemapPending", "DCGM_FI_DEV_ROW_REMAP_PENDING > 0", "0s", "warning",
              "{{ $labels.instance }} GPU {{ $labels.gpu }}: row remap pending (reset the GPU)"),
        Alert("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "0s", "critical",
              "{{ $labels.instance }} GPU {{ $labels.gpu }}: row remapping failed (replace the GPU)"),
        Alert("NvlinkRecoveryErrors", "increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m]) > 0", "0s",
              "critical", "{{ $labels.instance }} GPU {{ $labels.gpu }}: NVLink recovery errors"),
        Alert("NvlinkCrcErrors", "increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[10m]) > 100", "0s",
              "warning", "{{ $labels.instance }} GPU {{ $labels.gpu }}: NVLink CRC errors rising"),
        Alert("DcgmExporterDown", 'up{job="dcgm"} == 0', "5m", "warning",
              "{{ $labels.instance }}: dcgm-exporter not answering (no GPU alerts from this node)"),
    )),
    ("fabric", (
        Alert("InfinibandPortNotActive", "node_infiniband_state_id != 4 and node_infiniband_physical_state_id != 3",
              "2m", "critical", "{{ $labels.instance }} {{ $labels.device }} port {{ $labels.port }} is not ACTIVE"),
        Alert("InfinibandLinkFlapping", "increase(node_infiniband_link_downed_total[1h]) > 0", "0s", "warning",
              "{{ $labels.instance }} {{ $labels.device }} port {{ $labels.port }}: link went down "
              "{{ printf \"%.0f\" $value }} times in an hour"),
        Alert("InfinibandLinkRecoveries", "increase(node_infiniband_link_error_recovery_total[1h]) > 3", "0s",
              "warning", "{{ $labels.instance }} {{ $labels.device }} port {{ $labels.port }}: link error "
              "recoveries"),
        Alert("InfinibandReceiveErrors", "increase(node_infiniband_port_errors_received_total[10m]) > 100", "0s",
              "warning", "{{ $labels.instance }} {{ $labels.device }} port {{ $labels.port }}: receive errors"),
    )),
    ("storage", (
        Alert("NfsLatencyHigh",
              "rate(node_mountstats_nfs_operations_response_time_seconds_total[5m]) "
              "/ rate(node_mountstats_nfs_operations_requests_total[5m]) > 0.05", "10m", "warning",
              "{{ $labels.instance }}: NFS {{ $labels.operation }} on {{ $labels.export }} averages over 50 ms"),
        Alert("DiskLatencyHigh",
              "rate(node_disk_write_time_seconds_total[5m]) / rate(node_disk_writes_completed_total[5m]) > 0.05 "
              "or rate(node_disk_read_time_seconds_total[5m]) / rate(node_disk_reads_completed_total[5m]) > 0.05",
              "10m", "warning", "{{ $labels.instance }}: {{ $labels.device }} I/O averages over 50 ms"),
    )),
)


def rule_groups() -> list[dict]:
    """Prometheus rule groups (the rule file format, prometheus.io "Alerting rules")."""
    out = []
    for group, alerts in ALERTS:
        rules = []
        for a in alerts:
            rule: dict[str, object] = {"alert": a.name, "expr": a.expr}
            if a.duration != "0s":
                rule["for"] = a.duration
            rule["labels"] = {"severity": a.severity}
            rule["annotations"] = {"summary": a.summary}
            rules.append(rule)
        out.append({"name": f"clusterctl-{group}", "rules": rules})
    return out


def dcgm_counters() -> str:
    """dcgm-exporter's counters file (its CSV format: field, Prometheus type, help)."""
    lines = ["# DCGM FIELD, Prometheus metric type, help message"]
    lines += [f"{field}, {kind}, {text}" for field, kind, text in DCGM_FIELDS]
    return "\n".join(lines) + "\n"
