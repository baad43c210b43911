"""Shared test helpers: load shipped blueprints as data, change them, and validate the result."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan import expand
from clusterctl.rules import run_rules

REPO = Path(__file__).resolve().parent.parent
BLUEPRINTS = REPO / "blueprints"
INVENTORY_DIR = BLUEPRINTS
"""where :func:`plan_of` reads the inventory files a blueprint names (site.inventory): the shipped ones'; a test of
other inventories points it at its own directory (monkeypatch)"""
BROKEN = Path("tests/blueprints/broken")
"""broken blueprints, relative to the repository (the CLI prints paths as given)"""


def shipped(name: str) -> dict:
    """A shipped blueprint as plain data (a fresh copy each call)."""
    return copy.deepcopy(yaml.safe_load((BLUEPRINTS / f"{name}.yaml").read_text()))


def lab() -> dict:
    """The two-node lab blueprint, the base most rule tests change one thing in."""
    return shipped("lab-2node")


def line_of(path: Path, text: str) -> int:
    """The first non-comment line of ``path`` (relative to the repository) that contains ``text``."""
    for n, line in enumerate((REPO / path).read_text().splitlines(), 1):
        if text in line and not line.lstrip().startswith("#"):
            return n
    raise AssertionError(f"{text!r} is not in {path}")


def to_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def plan_of(data: dict):
    return expand(load_blueprint_text(to_yaml(data), "test.yaml", INVENTORY_DIR))


def run(data: dict):
    """Validate blueprint data; returns the RunResult (raises BlueprintError if it cannot be read)."""
    return run_rules(plan_of(data))


def hits(data: dict, code: str):
    """Active findings of one rule."""
    return [f for f in run(data).active() if f.code == code]


def codes(data: dict) -> set[str]:
    return {f.code for f in run(data).active()}


def cli(*args: str, cwd: Path = REPO, input: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a subprocess (``env``: variables set on top of this process's)."""
    return subprocess.run([sys.executable, "-m", "clusterctl", *args], cwd=cwd, capture_output=True, text=True,
                          input=input, timeout=120, env=None if env is None else {**os.environ, **env})


def wait_until(condition, what: str, timeout: float = 30, interval: float = 0.05) -> None:
    """Poll ``condition()`` until it is true; an AssertionError naming ``what`` after ``timeout`` seconds. Tests
    wait for the event itself this way, never for a fixed time that is "long enough"."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def roce_slice() -> dict:
    """hgx-h200-roce-1024 cut to 4 hosts in 2 scalable units of 2: 16 leaves (8 rails x 2), 2 spines, one uplink
    from every leaf to each spine: a RoCE fabric small enough to write its switches out by hand."""
    data = shipped("hgx-h200-roce-1024")
    data["node_groups"][0].update(count=4, hostnames="gpu[001-004]", racks="c01", per_rack=4)
    data["fabrics"][0].update(su_nodes=2, leaf_uplinks=2, spine_count=2)
    return data
