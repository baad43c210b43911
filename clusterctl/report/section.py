"""The shape every report section shares: a JSON-ready dict and a Markdown body.

A section module exposes ``build(ctx: ReportContext) -> Section``.  ``data`` holds only JSON types
(dict/list/str/int/float/bool/None) in a fixed key order, so the JSON report is deterministic; figures that
come from the catalog carry the catalog entry and its ``sources`` line next to the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterctl.plan.model import ClusterPlan
from clusterctl.report.markdown import Markup, text


@dataclass(frozen=True)
class Section:
    key: str
    """JSON key of the section (``capacity``, ``bom``, ...)"""
    title: str
    """Markdown heading text"""
    data: dict[str, Any]
    markdown: str
    """Markdown body, without the heading; ends with a newline"""


@dataclass(frozen=True)
class ReportContext:
    """Everything a section may need beyond the plan; sections ignore what they do not use."""

    plan: ClusterPlan
    params: float | None = None
    """model parameters (a count, not billions) from the training model or ``workload.params_b``"""
    tokens_per_s: float | None = None
    """cluster training throughput from the training estimate, when there is one"""
    checkpoint_bytes_per_param: float = 14.0
    checkpoint_interval_s: float | None = None
    """from ``workload.checkpoint_every_min`` or the command line"""
    restart_s: float = 600.0
    """time from an interruption to training again (reschedule, load checkpoint, warm up)"""
    pue: float | None = None
    """facility PUE (``site.pue``, or the command line)"""
    extra: dict[str, Any] = field(default_factory=dict)


def md_table(headers: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table. ``align`` is one letter per column: l, r or c (default: text left,
    numbers right). A string cell is escaped (:func:`clusterctl.report.markdown.text`) unless it is
    :class:`~clusterctl.report.markdown.Markup`; headers are the report's own words."""
    if align is None:
        first = rows[0] if rows else []
        align = "".join("r" if isinstance(v, (int, float)) and not isinstance(v, bool) else "l"
                        for v in first) or "l" * len(headers)
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(headers) + " |",
           "| " + " | ".join(marks[a] for a in align) + " |"]
    for row in rows:
        out.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(out) + "\n"


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return fmt(v)
    if isinstance(v, Markup):
        return v.replace("|", "\\|")
    return text(v)


def fmt(x: float, digits: int = 3) -> str:
    """A number with ``digits`` significant figures and thousands separators (1,012.7; 0.0481; 46)."""
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 10 ** digits:
        return f"{x:,.0f}"
    import math
    decimals = max(0, digits - 1 - math.floor(math.log10(ax)))
    s = f"{x:,.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s
