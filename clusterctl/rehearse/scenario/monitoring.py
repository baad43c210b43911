"""``monitoring``: after the converge, Prometheus on the monitoring server scrapes every node's node exporter on its
in-band address (``up == 1`` from its HTTP API) and the controller's Slurm metrics; the host firewall refuses a
node exporter to anyone but the monitoring server; stopping slurmd on a compute node fires the rendered
``SlurmdDown`` alert, and starting it again clears it (docs/rehearse.md, "The monitoring scenario").

Rehearsal changes, before the converge (a rehearsal cannot wait minutes): the rendered scrape and evaluation
intervals become :data:`INTERVAL_S` and ``SlurmdDown``'s ``for:`` :data:`FOR_S`.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from clusterctl.plan.monitoring import NODE_EXPORTER_PORT, PROMETHEUS_PORT, monitoring_plan, monitoring_unmet
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Need, Scenario
from clusterctl.rehearse.scenario.deploy import Cluster
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import node_state, rewrite_rendered, ssh_ok, wait_for
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

INTERVAL_S = 2
"""scrape and evaluation interval as rehearsed (the blueprint's monitoring.scrape_interval_s: 30 on lab)"""
FOR_S = 4
"""SlurmdDown's ``for:`` as rehearsed (1m rendered)"""
TARGETS_TIMEOUT_S = 40
"""how long every node exporter may take to be scraped up after the converge"""
PROBE = ("import sys, urllib.request; "
         "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())")
REFUSED = ("import socket, sys; s = socket.socket(); s.settimeout(2); "
           "print('open' if s.connect_ex((sys.argv[1], int(sys.argv[2]))) == 0 else 'closed')")


MONITORING = Need("a monitoring section", monitoring_unmet, "add monitoring: {server: head01} to the blueprint")


@dataclass
class ShortIntervals:
    """Before the converge: the rendered intervals and SlurmdDown's ``for:`` shortened (rehearsal changes)."""

    name: str = "monitoring-intervals"

    def run(self, state: State, record: Record) -> None:
        out = Path(state.dir) / "monitoring"
        conf = (out / "prometheus.yml").read_text()
        conf, n = re.subn(r"(?m)^(  (?:scrape|evaluation)_interval): \d+s$", rf"\1: {INTERVAL_S}s", conf)
        if n != 2:
            raise StepFailed(f"{out / 'prometheus.yml'}: no scrape and evaluation interval to shorten")
        rewrite_rendered(out / "prometheus.yml", conf)
        rules = (out / "alerts.yml").read_text()
        rules, n = re.subn(r"(- alert: SlurmdDown\n(?:    .*\n)*?    for:) \S+", rf"\1 {FOR_S}s", rules)
        if n != 1:
            raise StepFailed(f"{out / 'alerts.yml'}: no SlurmdDown for: to shorten")
        rewrite_rendered(out / "alerts.yml", rules)


def query(state: State, server: str, address: str, path: str, **params: str) -> dict:
    """Prometheus's HTTP API, asked on the server itself over SSH."""
    url = f"http://{address}:{PROMETHEUS_PORT}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    text = ssh_ok(state, server, f"python3 -c {shlex.quote(PROBE)} {shlex.quote(url)}")
    return json.loads(text)


def _up(state: State, server: str, address: str) -> dict[tuple[str, str], str]:
    data = query(state, server, address, "/api/v1/query", query="up")
    return {(r["metric"].get("job", ""), r["metric"].get("instance", "")): r["value"][1]
            for r in data["data"]["result"]}


@dataclass
class Scraped:
    """Every node's node exporter and the server itself up; the Slurm metrics of the controllers there; the node
    exporter of another node refused by its firewall to anyone but the monitoring server."""

    cluster: Cluster
    server: str
    address: str
    nodes: tuple[str, ...]
    name: str = "scraped"

    def run(self, state: State, record: Record) -> None:
        want = {("node", h) for h in self.nodes} | {("prometheus", self.server)}
        got, took = wait_for(lambda: (lambda up: up if all(up.get(k) == "1" for k in want) else None)(
            _up(state, self.server, self.address)), TARGETS_TIMEOUT_S)
        up = got or _up(state, self.server, self.address)
        ok = {h: up.get(("node", h)) == "1" for h in self.nodes}
        detail = {h: [f"node exporter up={up.get(('node', h), 'not scraped')}"] for h in self.nodes}
        counts: dict[str, dict[str, float]] = {h: {} for h in self.nodes}
        dcgm = sorted(i for j, i in up if j == "dcgm")
        slurm, _ = wait_for(lambda: query(state, self.server, self.address, "/api/v1/query",
                                          query="slurm_node_state")["data"]["result"], 40)
        nodes = sorted({r["metric"]["node"] for r in slurm or ()})
        ok[self.server] = ok.get(self.server, True) and up.get(("prometheus", self.server)) == "1" \
            and set(self.cluster.compute) <= set(nodes)
        detail.setdefault(self.server, []).append(
            f"prometheus up={up.get(('prometheus', self.server), 'not scraped')}; Slurm metrics for "
            f"{', '.join(nodes) or 'no node'}; dcgm targets {', '.join(dcgm) or 'none'} down (no dcgm-exporter in a "
            "rehearsal node)")
        counts.setdefault(self.server, {})["targets_seconds"] = round(took, 1)
        probe = self.cluster.compute[0]  # the compute nodes admit each other's every port (jobs): ask the server's
        seen = ssh_ok(state, probe, f"python3 -c {shlex.quote(REFUSED)} {self.address} {NODE_EXPORTER_PORT}").strip()
        ok[probe] = ok.get(probe, True) and seen == "closed"
        detail.setdefault(probe, []).append(f"{self.server}'s node exporter from here: {seen} (only the monitoring "
                                            "server may scrape it)")
        for h in detail:
            record(h, HostOutcome(OK if ok[h] else FAILED, took, "; ".join(detail[h]), counts.get(h, {})))


def _alert(state: State, server: str, address: str, name: str, instance: str) -> str | None:
    alerts = query(state, server, address, "/api/v1/alerts")["data"]["alerts"]
    return next((a["state"] for a in alerts if a["labels"].get("alertname") == name
                 and a["labels"].get("instance") == instance), None)


@dataclass
class SlurmdAlert:
    """Stop slurmd on a compute node: SlurmdDown fires for it; start it again: the alert clears and the node
    stays in service."""

    cluster: Cluster
    server: str
    address: str
    name: str = "slurmd-alert"

    def run(self, state: State, record: Record) -> None:
        victim, via = self.cluster.compute[0], self.cluster.controllers[0]
        limit = 2 * INTERVAL_S + FOR_S + 15
        ssh_ok(state, victim, "systemctl stop slurmd")
        t0 = time.monotonic()
        fired, took = wait_for(lambda: _alert(state, self.server, self.address, "SlurmdDown", victim) == "firing",
                               limit)
        ssh_ok(state, victim, "systemctl start slurmd")
        if not fired:
            raise StepFailed(f"SlurmdDown did not fire for {victim} within {limit} s of stopping slurmd")
        cleared, took2 = wait_for(lambda: _alert(state, self.server, self.address, "SlurmdDown", victim) is None,
                                  limit)
        idle, _ = wait_for(lambda: node_state(state, via, victim)[0].lower() == "idle" or None, 30)
        record(victim, HostOutcome(OK if cleared and idle else FAILED, time.monotonic() - t0,
                                   f"SlurmdDown firing {took:.1f} s after slurmd stopped; "
                                   + (f"cleared {took2:.1f} s after it started" if cleared else "never cleared")
                                   + f"; Slurm state {node_state(state, via, victim)[0]}",
                                   {"fire_seconds": round(took, 1), "clear_seconds": round(took2, 1)}))


class MonitoringScenario(Scenario):
    name = "monitoring"
    proves = ("Prometheus scrapes every node's exporter on its in-band address and the Slurm metrics; the firewall "
              "keeps the exporters to the monitoring server; stopping slurmd fires the rendered alert, starting it "
              "clears it")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE, MONITORING)

    def before_converge(self, build: Build) -> list:
        return [build.label(ShortIntervals(), self.name)]

    def steps(self, build: Build) -> list:
        m = monitoring_plan(build.base)
        if m is None:
            raise StepFailed("the plan as rehearsed has no monitoring server")
        nodes = tuple(h for h in build.cluster.groups)
        return [build.label(s, self.name) for s in (Scraped(build.cluster, m.server, m.address, nodes),
                                                    SlurmdAlert(build.cluster, m.server, m.address))]
