"""Shared test helpers: load shipped blueprints as data, change them, and validate the result."""

from __future__ import annotations

import base64
import copy
import json
import locale
import os
import select
import signal
import subprocess
import sys
import threading
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


def superpod_one_network_rack() -> dict:
    """The SuperPOD SU as the reference architecture draws it: every InfiniBand switch in network rack ib01 and both
    head nodes in mgmt01 (the shipped one spreads them over two racks each, rule BLAST001)."""
    data = shipped("dgx-h100-superpod-1su")
    for f in data["fabrics"]:
        f["switch_racks"] = "ib01" if f["name"] in ("ib", "stor") else "mgmt01"
    for g in data["node_groups"]:
        if g["name"] in ("head", "login"):
            g["racks"] = "mgmt01"
    return data


def rename_only_rack(data: dict, name: str) -> dict:
    """``data`` (a one-rack blueprint) with its rack, and every group and fabric placed in it, renamed ``name``."""
    data["racks"][0]["names"] = name
    for g in data["node_groups"]:
        g["racks"] = name
    for f in data["fabrics"]:
        f["switch_racks"] = name
    return data


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


CLI_TIMEOUT_S = 120


def cli(*args: str, cwd: Path = REPO, input: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a process of its own (``env``: variables set on top of this process's): a child
    forked from tests/cli_server.py, which imported the command line once (about 0.7 s of CPU a run less), or
    ``python -m clusterctl`` itself when ``env`` sets a ``PYTHON*`` variable (a hash seed of its own), when another
    thread of this test runs one at the same time, or with CLUSTERCTL_TEST_CLI=subprocess."""
    argv = [sys.executable, "-m", "clusterctl", *args]
    fresh = (any(k.startswith("PYTHON") for k in env or {}) or os.environ.get("CLUSTERCTL_TEST_CLI") == "subprocess")
    if fresh or not _CLI_LOCK.acquire(blocking=False):
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, input=input, timeout=CLI_TIMEOUT_S,
                              env=None if env is None else {**os.environ, **env})
    try:
        return _forked_cli(argv, cwd, input, {**os.environ, **(env or {})})
    finally:
        _CLI_LOCK.release()


_CLI_LOCK = threading.Lock()
_cli_server: subprocess.Popen | None = None


def _forked_cli(argv: list[str], cwd: Path, input: str | None, env: dict[str, str]) -> subprocess.CompletedProcess:
    global _cli_server
    if _cli_server is None or _cli_server.poll() is not None:
        _cli_server = subprocess.Popen([sys.executable, "-m", "tests.cli_server"], cwd=REPO, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, start_new_session=True)
    server = _cli_server
    server.stdin.write(json.dumps({"args": argv[3:], "cwd": str(cwd), "env": env, "input": input}) + "\n")
    server.stdin.flush()
    ready, _, _ = select.select([server.stdout], [], [], CLI_TIMEOUT_S)
    line = server.stdout.readline() if ready else ""
    if not line:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        _cli_server = None
        if not ready:
            raise subprocess.TimeoutExpired(argv, CLI_TIMEOUT_S)
        raise RuntimeError(f"tests/cli_server.py ended without an answer to {argv[3:]}")
    reply = json.loads(line)
    encoding = locale.getpreferredencoding(False)

    def text(b64: str) -> str:  # as subprocess.run(text=True) reads a pipe: strictly, universal newlines
        return base64.b64decode(b64).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")

    return subprocess.CompletedProcess(argv, reply["rc"], text(reply["stdout"]), text(reply["stderr"]))


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
