"""The monitoring scenario's logic that needs no node: the rehearsal's shorter intervals are written into the
rendered files (and nothing else changes), and the steps read Prometheus's API answers as Prometheus 2.42 gives
them (``/api/v1/query`` vector results, ``/api/v1/alerts``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import yaml

from clusterctl.rehearse.scenario import monitoring
from clusterctl.rehearse.scenario.base import write_render
from clusterctl.targets.monitoring import render
from tests.helpers import lab, plan_of


def test_short_intervals_rewrite_the_scrape_interval_and_slurmd_downs_for(tmp_path):
    files = render(plan_of(lab()))
    write_render(files, tmp_path)
    monitoring.ShortIntervals().run(SimpleNamespace(dir=str(tmp_path)), lambda *a: None)
    config = yaml.safe_load((tmp_path / "monitoring" / "prometheus.yml").read_text())
    assert config["global"]["scrape_interval"] == "2s" and config["global"]["evaluation_interval"] == "2s"
    rules = {r["alert"]: r for g in yaml.safe_load((tmp_path / "monitoring" / "alerts.yml").read_text())["groups"]
             for r in g["rules"]}
    assert rules["SlurmdDown"]["for"] == "4s"
    assert rules["NodeDown"]["for"] == "3m" and rules["MungeDown"]["for"] == "2m"  # only SlurmdDown is shortened
    before = yaml.safe_load(files["monitoring/alerts.yml"])
    assert len([r for g in before["groups"] for r in g["rules"]]) == len(rules)


UP = {"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"__name__": "up", "instance": "gpu01", "job": "node"}, "value": [1764939600.0, "1"]},
    {"metric": {"__name__": "up", "instance": "head01", "job": "prometheus"}, "value": [1764939600.0, "1"]},
    {"metric": {"__name__": "up", "instance": "gpu01", "job": "dcgm"}, "value": [1764939600.0, "0"]}]}}
ALERTS = {"status": "success", "data": {"alerts": [
    {"labels": {"alertname": "SlurmdDown", "instance": "gpu01", "job": "node", "severity": "critical"},
     "annotations": {"summary": "gpu01: slurmd is not active"}, "state": "firing",
     "activeAt": "2026-12-05T13:00:00Z", "value": "0e+00"},
    {"labels": {"alertname": "DcgmExporterDown", "instance": "gpu01", "job": "dcgm", "severity": "warning"},
     "annotations": {}, "state": "pending", "activeAt": "2026-12-05T13:00:00Z", "value": "0e+00"}]}}


def test_the_steps_read_prometheus_answers(monkeypatch):
    answers = {"/api/v1/query": UP, "/api/v1/alerts": ALERTS}
    asked = []

    def fake(state, host, cmd, timeout=60.0):
        asked.append((host, cmd))
        path = cmd.split("9090", 1)[1].split("?")[0].rstrip("'")
        return json.dumps(answers[path])

    monkeypatch.setattr(monitoring, "ssh_ok", fake)
    assert monitoring._up(None, "head01", "10.46.0.19") == {("node", "gpu01"): "1", ("prometheus", "head01"): "1",
                                                             ("dcgm", "gpu01"): "0"}
    assert monitoring._alert(None, "head01", "10.46.0.19", "SlurmdDown", "gpu01") == "firing"
    assert monitoring._alert(None, "head01", "10.46.0.19", "SlurmdDown", "gpu02") is None
    assert asked[0] == ("head01", "python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], "
                                  "timeout=5).read().decode())' 'http://10.46.0.19:9090/api/v1/query?query=up'")
