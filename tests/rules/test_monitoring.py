"""MON001: Prometheus runs on a host of the blueprint with an in-band address (clusterctl/plan/monitoring.py)."""

from __future__ import annotations

import pytest

from clusterctl.targets import RenderError
from clusterctl.targets.monitoring import render
from tests.helpers import hits, lab, plan_of


def test_mon001_refuses_a_server_that_is_not_a_host_and_render_agrees():
    data = lab()
    data["monitoring"]["server"] = "prom01"
    (h,) = hits(data, "MON001")
    assert h.path == ("monitoring", "server")
    assert h.message == "monitoring.server prom01 is not a host of any node group"
    with pytest.raises(RenderError):
        render(plan_of(data))


def test_mon001_is_quiet_for_the_head_node_and_the_default_server():
    data = lab()
    assert hits(data, "MON001") == []
    del data["monitoring"]["server"]  # the first Slurm controller: head01
    assert hits(data, "MON001") == []
    assert "10.10.0.19:9090" in render(plan_of(data))["monitoring/prometheus.yml"]


def test_mon001_refuses_a_blueprint_without_server_or_controller():
    data = lab()
    del data["monitoring"]["server"]
    del data["slurm"]
    (h,) = hits(data, "MON001")
    assert h.message == ("monitoring has no server: name one (monitoring.server) or give the blueprint a Slurm "
                         "controller")
