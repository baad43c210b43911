"""Per-step, per-host progress on stderr with rich; stdout stays free for ``--format json``."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from clusterctl.hidden_chars import escape_hidden
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, StepResult

_MARK = {OK: "[green]ok[/green]", FAILED: "[red]FAILED[/red]", "skipped": "[yellow]skipped[/yellow]"}


def _text(value: str) -> str:
    """Text from the blueprint or a node as rich prints it literally: markup escaped, control, bidi and invisible
    characters as escapes (clusterctl/hidden_chars.py)."""
    return escape(escape_hidden(value))


class RichProgress:
    """Prints one line when a step starts, one per host as it finishes, and one when the step ends; every name
    and message is printed as the characters it is, never as markup or terminal control."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)

    def step_started(self, name: str, hosts: Sequence[str]) -> None:
        self.console.print(f"[bold]{_text(name)}[/bold] on {len(hosts)} host(s)")

    def host_done(self, step: str, host: str, outcome: HostOutcome) -> None:
        counts = " ".join(f"{k}={v}" for k, v in outcome.counts.items())
        detail = f" {_text(outcome.detail)}" if outcome.detail else ""
        self.console.print(f"  {_text(f'{host:<16}')} {_MARK.get(outcome.status, _text(outcome.status))} "
                           f"{outcome.seconds:6.2f} s{(' ' + _text(counts)) if counts else ''}{detail}")

    def step_done(self, result: StepResult) -> None:
        err = f": {_text(result.error)}" if result.error else ""
        self.console.print(f"[bold]{_text(result.name)}[/bold] {_MARK.get(result.status, _text(result.status))} "
                           f"in {result.seconds:.2f} s{err}")

    def note(self, text: str) -> None:
        self.console.print(_text(text))
