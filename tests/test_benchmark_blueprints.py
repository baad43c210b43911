"""The benchmarks measure valid clusters: the synthetic blueprint of benchmarks/bench_validate.py (also used by
bench_render and bench_report) must load and validate with no error, or the benchmarks time a refusal."""

from __future__ import annotations

import sys

import pytest

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan import expand
from clusterctl.rules import Severity, run_rules
from tests.helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_validate import GPUS_PER_NODE, blueprint  # noqa: E402


@pytest.mark.parametrize("gpus", [1_000, 20_000])
def test_benchmark_blueprint_validates_without_errors(gpus):
    plan = expand(load_blueprint_text(blueprint(gpus), f"bench-{gpus}.yaml"))
    errors = [f"{f.code}: {f.message}" for f in run_rules(plan).active() if f.severity is Severity.ERROR]
    assert errors == []
    assert plan.gpus == -(-gpus // GPUS_PER_NODE) * GPUS_PER_NODE
