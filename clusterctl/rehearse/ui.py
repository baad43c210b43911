"""Per-step, per-host progress on stderr with rich; stdout stays free for ``--format json``."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, StepResult

_MARK = {OK: "[green]ok[/green]", FAILED: "[red]FAILED[/red]", "skipped": "[yellow]skipped[/yellow]"}


class RichProgress:
    """Prints one line when a step starts, one per host as it finishes, and one when the step ends."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)

    def step_started(self, name: str, hosts: Sequence[str]) -> None:
        self.console.print(f"[bold]{name}[/bold] on {len(hosts)} host(s)")

    def host_done(self, step: str, host: str, outcome: HostOutcome) -> None:
        counts = " ".join(f"{k}={v}" for k, v in outcome.counts.items())
        detail = f" {escape(outcome.detail)}" if outcome.detail else ""
        self.console.print(f"  {host:<16} {_MARK.get(outcome.status, outcome.status)} "
                           f"{outcome.seconds:6.2f} s{(' ' + counts) if counts else ''}{detail}")

    def step_done(self, result: StepResult) -> None:
        err = f": {escape(result.error)}" if result.error else ""
        self.console.print(f"[bold]{result.name}[/bold] {_MARK.get(result.status, result.status)} "
                           f"in {result.seconds:.2f} s{err}")

    def note(self, text: str) -> None:
        self.console.print(escape(text))
