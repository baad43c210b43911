"""One rehearsal from booted nodes to teardown: boot, run the steps, tear down unless kept.

The CLI renders the blueprint first and calls :func:`rehearse`; teardown happens in a ``finally`` so an
error, Ctrl-C or SIGTERM (turned into KeyboardInterrupt while a rehearsal runs) still stops every node.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.rehearse.image.catalog import Image
from clusterctl.rehearse.node import lifecycle
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import (
    OK,
    HostOutcome,
    Progress,
    Step,
    StepResult,
    run_steps,
)


@dataclass
class Summary:
    """What ``--format json`` prints."""

    state: State | None
    steps: list[StepResult] = field(default_factory=list)
    kept: bool = False
    teardown_seconds: float | None = None
    info: dict = field(default_factory=dict)
    """what the CLI adds to the summary (the blueprint as rehearsed: slurm_version, rehearsed_as)"""

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.status == OK for s in self.steps)

    def to_json(self) -> dict:
        st = self.state
        return {
            "status": "ok" if self.ok else "failed",
            **self.info,
            "rehearsal": None if st is None else {
                "id": st.id, "dir": st.dir, "bridge": st.bridge, "host_address": st.host_address,
                "ssh_config": st.ssh_config, "kept": self.kept},
            "nodes": [] if st is None else [
                {"name": n.name, "address": n.address, "netns": n.netns,
                 "init_pid": n.init.pid if n.init else None, "upper": str(n.upper)} for n in st.nodes],
            "steps": [s.to_json() for s in self.steps],
            "teardown": None if self.teardown_seconds is None else {"seconds": round(self.teardown_seconds, 3)},
        }


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt()


def rehearse(out: Path, specs: Sequence[lifecycle.NodeSpec], steps: Sequence[Step], progress: Progress,
             keep: bool = False, info: dict | None = None, image: Image | None = None,
             links: Sequence[lifecycle.Link] = ()) -> Summary:
    """Boot ``specs`` under ``out``, run ``steps``, and tear down unless ``keep``. A failed step is a result
    (kept nodes can then be inspected); an exception or an interrupt always tears down."""
    summary = Summary(None, kept=keep, info=dict(info or {}))
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    booted = completed = False
    try:
        progress.step_started("boot", [s.name for s in specs])
        t0 = time.monotonic()
        state = lifecycle.boot(out, specs, image=image, links=links)
        booted = True
        boot = StepResult("boot", OK, time.monotonic() - t0)
        for n in state.nodes:
            boot.hosts[n.name] = HostOutcome(OK, 0.0, f"{n.address} init pid {n.init.pid if n.init else '?'}")
            progress.host_done("boot", n.name, boot.hosts[n.name])
        progress.step_done(boot)
        summary.state = state
        summary.steps = [boot] + run_steps(steps, state, progress)
        completed = True
    finally:
        try:
            if booted and not (keep and completed):
                t0 = time.monotonic()
                summary.state = lifecycle.down(out)
                summary.teardown_seconds = time.monotonic() - t0
                summary.kept = False
        finally:
            signal.signal(signal.SIGTERM, previous)
    return summary
