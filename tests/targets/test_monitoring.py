"""The monitoring target (docs/monitoring.md): Prometheus scrapes every node's node exporter and the GPU nodes'
dcgm-exporter on their in-band addresses (lab-2node: 10.10.0.0/24 with 16 reserved, so gpu01, gpu02 and head01
are .17, .18 and .19); promtool accepts the configuration and the rules, and the rules fire on literal series
(promtool test rules) for the failures issue 30 lists."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from clusterctl.targets.monitoring import render
from tests.conftest import require_tool
from tests.helpers import lab, plan_of

REPO = Path(__file__).resolve().parents[2]
SLURM_METRICS = REPO / "roles" / "monitoring_exporters" / "files" / "slurm-metrics"


def rendered(tmp: Path) -> dict[str, str]:
    files = render(plan_of(lab()))
    for path, text in files.items():
        (tmp / Path(path).name).write_text(text)
    return files


def test_prometheus_scrapes_every_node_and_the_gpu_nodes_dcgm_on_their_inband_addresses(tmp_path):
    config = yaml.safe_load(rendered(tmp_path)["monitoring/prometheus.yml"])
    jobs = {j["job_name"]: [(c["targets"], c["labels"]["instance"]) for c in j["static_configs"]]
            for j in config["scrape_configs"]}
    assert jobs == {
        "prometheus": [(["10.10.0.19:9090"], "head01")],
        "node": [(["10.10.0.17:9100"], "gpu01"), (["10.10.0.18:9100"], "gpu02"), (["10.10.0.19:9100"], "head01")],
        "dcgm": [(["10.10.0.17:9400"], "gpu01"), (["10.10.0.18:9400"], "gpu02")],
    }
    assert config["global"]["scrape_interval"] == "30s"
    promtool = require_tool("promtool")
    r = subprocess.run([promtool, "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_monitoring_section_renders_nothing():
    data = lab()
    del data["monitoring"]
    assert render(plan_of(data)) == {}


def test_the_rules_pass_promtool_check_rules(tmp_path):
    rendered(tmp_path)
    promtool = require_tool("promtool")
    r = subprocess.run([promtool, "check", "rules", str(tmp_path / "alerts.yml")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 25 rules found" in r.stdout


def test_the_dcgm_counters_enable_the_error_fields_the_rules_read(tmp_path):
    csv = rendered(tmp_path)["monitoring/dcgm-counters.csv"]
    fields = [line.split(",")[0] for line in csv.splitlines() if line and not line.startswith("#")]
    for field in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                  "DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
                  "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"):
        assert field in fields


def _alert(name: str, series: list[tuple[str, str]], quiet_at: str, fires_at: str, labels: dict,
           summary: str) -> dict:
    return {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
            "alert_rule_test": [{"eval_time": quiet_at, "alertname": name, "exp_alerts": []},
                                {"eval_time": fires_at, "alertname": name,
                                 "exp_alerts": [{"exp_labels": labels, "exp_annotations": {"summary": summary}}]}]}


RULE_TESTS = [
    # slurmd stops at minute 2: pending for the rule's 1 m, firing from minute 3
    _alert("SlurmdDown", [('node_systemd_unit_state{instance="gpu01",job="node",name="slurmd.service",state="active"}',
                           "1 1 0 0 0")], "2m", "3m",
           {"severity": "critical", "instance": "gpu01", "job": "node", "name": "slurmd.service", "state": "active"},
           "gpu01: slurmd is not active"),
    _alert("NodeDown", [('up{instance="gpu02",job="node"}', "1 0 0 0 0 0")], "3m", "4m",
           {"severity": "critical", "instance": "gpu02", "job": "node"},
           "gpu02: node exporter not answering (host down or off the in-band network)"),
    # Xid 13 (an application's fault) at minute 1, then 79 (fallen off the bus) at minute 3
    _alert("GpuCriticalXid", [('DCGM_FI_DEV_XID_ERRORS{instance="gpu01",gpu="3",job="dcgm"}', "0 13 13 79")],
           "2m", "3m", {"severity": "critical", "instance": "gpu01", "gpu": "3", "job": "dcgm"},
           "gpu01 GPU 3: Xid 79 (reset the GPU or reboot)"),
    _alert("GpuDoubleBitEcc", [('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{instance="gpu02",gpu="0",job="dcgm"}',
                                "0 0 0 0 1")], "3m", "4m",
           {"severity": "critical", "instance": "gpu02", "gpu": "0", "job": "dcgm"},
           "gpu02 GPU 0: uncorrectable (double-bit) ECC errors"),
    _alert("NvlinkRecoveryErrors", [('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{instance="gpu01",gpu="5",'
                                     'job="dcgm"}', "2 2 2 3")], "2m", "3m",
           {"severity": "critical", "instance": "gpu01", "gpu": "5", "job": "dcgm"},
           "gpu01 GPU 5: NVLink recovery errors"),
    _alert("InfinibandLinkFlapping", [('node_infiniband_link_downed_total{instance="gpu02",device="mlx5_3",'
                                       'port="1",job="node"}', "4 4 4 5")], "2m", "3m",
           {"severity": "warning", "instance": "gpu02", "device": "mlx5_3", "port": "1", "job": "node"},
           "gpu02 mlx5_3 port 1: link went down 1 times in an hour"),
    _alert("SlurmNodeDrained", [('slurm_node_state{instance="head01",job="node",node="gpu01",state="drained"}',
                                 "1x20")], "14m", "15m",
           {"severity": "warning", "instance": "head01", "job": "node", "node": "gpu01", "state": "drained"},
           "Slurm node gpu01 is drained (node_health or an operator drained it)"),
    _alert("SlurmJobsFailing", [('slurm_jobs_failed_total{instance="head01",job="node"}', "0 0 0 2")], "2m", "3m",
           {"severity": "warning", "instance": "head01", "job": "node"},
           "2 jobs failed in the last hour on slurmd or launch errors (sdiag \"Jobs failed\")"),
]


def test_the_rules_fire_on_literal_series(tmp_path):
    rendered(tmp_path)
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(
        {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": RULE_TESTS}, sort_keys=False))
    promtool = require_tool("promtool")
    r = subprocess.run([promtool, "test", "rules", "tests.yml"], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


SINFO = "gpu01 idle\ngpu02 drained*\ngpu02 drained*\nhead01 down~\n"  # gpu02 in two partitions: listed twice
SQUEUE = "RUNNING\nRUNNING\nPENDING\nCOMPLETING\n"
SDIAG = """*******************************************************
sdiag output at Sat Dec 05 13:00:00 2026 (1764939600)
Data since      Sat Dec 05 00:00:00 2026 (1764892800)
*******************************************************
Server thread count:  3
Agent queue size:     0
Agent count:          0
Agent thread count:   0
DBD Agent queue size: 0

Jobs submitted: 12
Jobs started:   10
Jobs completed: 7
Jobs canceled:  1
Jobs failed:    2
"""


def test_slurm_metrics_from_sinfo_squeue_and_sdiag(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("sinfo", SINFO), ("squeue", SQUEUE), ("sdiag", SDIAG)):
        (tmp_path / f"{name}.txt").write_text(text)
        (bin_ / name).write_text(f"#!/bin/sh\ncat {tmp_path / (name + '.txt')}\n")
        (bin_ / name).chmod(0o755)
    out = tmp_path / "slurm.prom"
    r = subprocess.run(["bash", str(SLURM_METRICS), str(out)], capture_output=True, text=True, timeout=30,
                       env={"PATH": f"{bin_}:/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    samples = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert samples == [
        "slurm_controller_up 1",
        'slurm_node_state{node="gpu01",state="idle"} 1',
        'slurm_node_state{node="gpu02",state="drained"} 1',
        'slurm_node_state{node="head01",state="down"} 1',
        'slurm_node_not_responding{node="gpu01"} 0',
        'slurm_node_not_responding{node="gpu02"} 1',
        'slurm_node_not_responding{node="head01"} 0',
        'slurm_jobs{state="completing"} 1',
        'slurm_jobs{state="pending"} 1',
        'slurm_jobs{state="running"} 2',
        "slurm_scheduler_threads 3",
        "slurm_scheduler_agent_queue_size 0",
        "slurm_jobs_failed_total 2",
    ]
    promtool = require_tool("promtool")
    check = subprocess.run([promtool, "check", "metrics"], input=out.read_text(), capture_output=True, text=True,
                           timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr


def test_slurm_metrics_say_when_slurmctld_does_not_answer(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "sinfo").write_text("#!/bin/sh\n"
                                "echo 'slurm_load_partitions: Unable to contact slurm controller' >&2\nexit 1\n")
    (bin_ / "sinfo").chmod(0o755)
    out = tmp_path / "slurm.prom"
    r = subprocess.run(["bash", str(SLURM_METRICS), str(out)], capture_output=True, text=True, timeout=30,
                       env={"PATH": f"{bin_}:/usr/bin:/bin"})
    assert r.returncode == 0
    assert [line for line in out.read_text().splitlines() if not line.startswith("#")] == ["slurm_controller_up 0"]
