"""Pluggable rehearsal steps: what runs once the nodes answer.

A :class:`Step` has a name and a ``run(state, record)`` method; it reports each host's outcome through
``record`` as it learns it (an SSH check per host, or Ansible's per-host events), and raises
:class:`StepFailed` (or anything else) to fail as a whole. :func:`run_steps` times every step, turns
exceptions into a failed step, skips the steps after a failure and tells a :class:`Progress` about
everything, so the CLI can print per-step, per-host progress and a JSON summary. Later steps (converge,
testinfra, srun, the scenarios) plug in by implementing :class:`Step`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


@dataclass
class HostOutcome:
    """One host's result in one step; ``counts`` holds step-specific numbers (changed, passed, ...)."""

    status: str
    seconds: float = 0.0
    detail: str = ""
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class StepResult:
    name: str
    status: str
    seconds: float = 0.0
    hosts: dict[str, HostOutcome] = field(default_factory=dict)
    error: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 3),
                **({"error": self.error} if self.error else {}),
                "hosts": {h: {"status": o.status, "seconds": round(o.seconds, 3),
                              **({"detail": o.detail} if o.detail else {}), **o.counts}
                          for h, o in self.hosts.items()}}


Record = Callable[[str, HostOutcome], None]
"""how a step reports a host's outcome: record(host name, outcome)"""


class Step(Protocol):
    name: str

    def run(self, state: State, record: Record) -> None:
        """Do the step on the booted nodes; report each host through ``record``; raise to fail."""


class StepFailed(Exception):
    """A step failed as a whole (the message says why); per-host outcomes already recorded stand."""


class Progress(Protocol):
    def step_started(self, name: str, hosts: Sequence[str]) -> None: ...

    def host_done(self, step: str, host: str, outcome: HostOutcome) -> None: ...

    def step_done(self, result: StepResult) -> None: ...


class Silent:
    """A :class:`Progress` that shows nothing (library use, tests)."""

    def step_started(self, name: str, hosts: Sequence[str]) -> None:
        pass

    def host_done(self, step: str, host: str, outcome: HostOutcome) -> None:
        pass

    def step_done(self, result: StepResult) -> None:
        pass


def run_step(step: Step, state: State, progress: Progress) -> StepResult:
    """Run one step; it fails when it raises or when any host it reported failed."""
    result = StepResult(step.name, OK)
    progress.step_started(step.name, [n.name for n in state.nodes])

    def record(host: str, outcome: HostOutcome) -> None:
        result.hosts[host] = outcome
        progress.host_done(step.name, host, outcome)

    t0 = time.monotonic()
    try:
        step.run(state, record)
    except Exception as exc:  # a failing step must not stop the teardown; the summary says why
        result.status, result.error = FAILED, f"{type(exc).__name__}: {exc}" if not isinstance(exc, StepFailed) else str(exc)
    result.seconds = time.monotonic() - t0
    if any(o.status == FAILED for o in result.hosts.values()):
        result.status = FAILED
    progress.step_done(result)
    return result


def run_steps(steps: Sequence[Step], state: State, progress: Progress) -> list[StepResult]:
    """Run the steps in order; after a failed step the rest are reported as skipped, not run."""
    results: list[StepResult] = []
    for step in steps:
        if results and results[-1].status != OK:
            results.append(StepResult(step.name, SKIPPED))
            progress.step_done(results[-1])
            continue
        results.append(run_step(step, state, progress))
    return results


@dataclass
class SshCheck:
    """Each node answers SSH as root with the rehearsal key, under its own host name and address: the
    property every later step (Ansible over SSH, testinfra's ssh backend) relies on."""

    name: str = "ssh-check"
    timeout_s: float = 20.0

    def _one(self, state: State, host: str, address: str) -> HostOutcome:
        t0 = time.monotonic()
        try:
            r = ssh(state, host, "hostname; hostname -I", timeout=self.timeout_s)
        except Exception as exc:
            return HostOutcome(FAILED, time.monotonic() - t0, f"ssh: {exc}")
        seconds = time.monotonic() - t0
        lines = r.stdout.split("\n")
        if r.returncode != 0:
            return HostOutcome(FAILED, seconds, f"ssh exit {r.returncode}: {r.stderr.strip()[-300:]}")
        name, addrs = lines[0].strip(), lines[1].split() if len(lines) > 1 else []
        if name != host:
            return HostOutcome(FAILED, seconds, f"answered as {name!r}, not {host!r}")
        if addrs != [address]:
            return HostOutcome(FAILED, seconds, f"has address(es) {addrs}, not [{address}]")
        return HostOutcome(OK, seconds, f"{name} {address}")

    def run(self, state: State, record: Record) -> None:
        with ThreadPoolExecutor(max_workers=min(16, len(state.nodes) or 1)) as pool:
            futures = {n.name: pool.submit(self._one, state, n.name, n.address) for n in state.nodes}
            for host, fut in futures.items():
                record(host, fut.result())


def default_steps() -> list[Step]:
    """The steps ``clusterctl rehearse`` runs after boot (converge, tests and scenarios join here)."""
    return [SshCheck()]
