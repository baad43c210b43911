"""Suppressed errors, said in every output.

Only the command line (``--suppress CODE``) can suppress an error finding (clusterctl/rules/suppression.py),
and whoever reads an output must see that it was: ``validate`` prints suppressed errors in text even without
``--show-suppressed`` (JSON and SARIF list every finding), and the commands that produce files (render,
report, inventory, rehearse) print one line on stderr per suppressed error.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusterctl.output.diagnostics import Diagnostic, is_suppressed_error


def suppressed_errors(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if is_suppressed_error(d)]


def notice_lines(diags: Iterable[Diagnostic]) -> list[str]:
    """One stderr line per suppressed error: where, which rule, by what, and the message."""
    return [f"warning: {d.file}:{d.line}:{d.col}: error {d.code} ({d.title}) suppressed ({d.suppressed}): "
            f"{d.message}" for d in suppressed_errors(diags)]
