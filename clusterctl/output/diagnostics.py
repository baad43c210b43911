"""Findings and load problems as located diagnostics, printed as text, JSON or SARIF 2.1.0.

Rules and the loader speak in paths (``node_groups[1].count``); this is the only place paths become
``file:line:col``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from clusterctl import __version__
from clusterctl.blueprint.load import format_path
from clusterctl.errors import LoadCode, Problem
from clusterctl.hidden_chars import escape_hidden, escaped_column
from clusterctl.hostlist import compress
from clusterctl.location import SourceMap
from clusterctl.output import finite_json
from clusterctl.rules.base import Finding, Rule, Severity
from clusterctl.rules.suppression import CLI_REASON

COLLAPSE_AFTER = 3
"""in text output, findings of one rule at one location beyond this many are summarised in one line"""
MAX_PER_CODE = 25
"""in text output, at most this many diagnostics of one code (a rule, or a kind of load problem); the rest are
counted. Above the loader's 20 problems per kind plus its summary line (clusterctl/blueprint/load.py), so that
summary is shown when one kind of problem repeats"""
MAX_BLOCKS = 100
"""in text output, at most this many diagnostics in all: with the limits below, a few hundred KB at most"""
MAX_TEXT = 400
"""characters of a message or hint kept in every format (messages quote values, which can be megabytes)"""
SOURCE_WIDTH = 120
"""characters of the source line shown around the caret"""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    title: str
    message: str
    hint: str
    path: tuple
    file: str
    line: int
    col: int
    source_line: str
    suppressed: str | None = None
    subject: tuple[str, str] | None = None
    """(kind, name) of a finding a rule repeats per rack or host; text output groups them"""
    summary: str = ""

    def as_dict(self) -> dict:
        out = {"code": self.code, "severity": str(self.severity), "title": self.title, "message": self.message,
               "hint": self.hint, "path": format_path(self.path),
               "location": {"file": self.file, "line": self.line, "column": self.col}}
        if self.suppressed is not None:
            out["suppressed"] = self.suppressed
        if self.subject is not None:
            out["subject"] = {"kind": self.subject[0], "name": self.subject[1]}
        return out


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def from_findings(findings: Iterable[Finding], source: SourceMap) -> list[Diagnostic]:
    out = []
    for f in findings:
        pos = source.locate(f.path)
        out.append(Diagnostic(f.code, f.severity, f.title, clip(f.message), clip(f.hint), f.path, source.file,
                              pos.line, pos.col, source.line_text(pos.line), f.suppressed, f.subject, clip(f.summary)))
    return sorted(out, key=lambda d: (-d.severity, d.line, d.col, d.code))


def from_problems(problems: Iterable[Problem], source: SourceMap) -> list[Diagnostic]:
    out = []
    for p in problems:
        pos = p.position or source.locate(p.path, key=p.key)
        out.append(Diagnostic(p.code, Severity.ERROR, LoadCode(p.code).title, clip(p.message),
                              clip(p.hint), p.path, source.file, pos.line, pos.col, source.line_text(pos.line)))
    return sorted(out, key=lambda d: (d.line, d.col, d.code))


# --- text ----------------------------------------------------------------------------------------------

GROUP_SEGMENTS = 3
"""in a grouped finding, at most this many distinct figures are listed (each over its host list)"""


def _grouped(diags: Iterable[Diagnostic]) -> list[tuple[Diagnostic, list[Diagnostic]]]:
    """Diagnostics in order, those one rule repeats per rack or host at one location with one hint
    gathered behind the first: (first, all of its group)."""
    groups: dict[tuple, list[Diagnostic]] = {}
    out: list[tuple[Diagnostic, list[Diagnostic]]] = []
    for d in diags:
        if d.subject is None:
            out.append((d, [d]))
            continue
        key = (d.code, d.severity, d.line, d.col, d.hint, d.suppressed, d.subject[0])
        if key not in groups:
            groups[key] = []
            out.append((d, groups[key]))
        groups[key].append(d)
    return out


def _plural(kind: str, names: list[str]) -> str:
    return f"{kind}{'s' if len(names) > 1 else ''} {compress(names)}"


def group_message(members: Sequence[Diagnostic]) -> str:
    """One line for findings of one rule over many racks or hosts, by figures:
    ``racks c[01-30]: 41.1 kW of 38.0 kW; rack c31: 45.2 kW of 38.0 kW (+3 more racks)``."""
    kind = members[0].subject[0]
    by_figures: dict[str, list[str]] = {}
    for d in members:
        by_figures.setdefault(d.summary or d.message, []).append(d.subject[1])
    figures = list(by_figures.items())
    if len(figures) == 1:
        return clip(f"{_plural(kind, figures[0][1])}: {figures[0][0]} each")
    text = "; ".join(f"{_plural(kind, names)}: {fig}" for fig, names in figures[:GROUP_SEGMENTS])
    rest = sum(len(names) for _, names in figures[GROUP_SEGMENTS:])
    if rest:
        text += f" (+{rest:,} more {kind}{'s' if rest > 1 else ''})"
    return clip(text)


def to_text(diags: Sequence[Diagnostic], summary: str, show_suppressed: bool = False) -> str:
    """Diagnostics as text for a person, bounded and escaped: control, bidi and other invisible characters a
    message, path or source line quotes are printed as escapes (clusterctl/hidden_chars.py); findings one rule repeats per rack or host at one location print as one
    block over a host list, other repeats at one location collapse after COLLAPSE_AFTER, each code shows
    at most MAX_PER_CODE and the whole at most MAX_BLOCKS; what is left out is counted, never dropped
    silently (JSON and SARIF keep every finding)."""
    lines: list[str] = []
    shown: dict[tuple, int] = {}
    hidden: dict[tuple, int] = {}
    per_code: dict[str, int] = {}
    over_code: dict[str, int] = {}
    printed: set[tuple] = set()
    blocks = over_total = 0
    for d, members in _grouped(x for x in diags if _printed(x, show_suppressed)):
        key = (d.code, d.line, d.col)
        shown[key] = shown.get(key, 0) + 1
        if shown[key] > COLLAPSE_AFTER and key in printed:
            hidden[key] = hidden.get(key, 0) + 1  # one line per printed location: at most MAX_BLOCKS lines
            continue
        if shown[key] > COLLAPSE_AFTER:
            over_code[d.code] = over_code.get(d.code, 0) + 1
            continue
        if per_code.get(d.code, 0) >= MAX_PER_CODE:
            over_code[d.code] = over_code.get(d.code, 0) + 1
            continue
        if blocks >= MAX_BLOCKS:
            over_total += 1
            continue
        per_code[d.code] = per_code.get(d.code, 0) + 1
        blocks += 1
        printed.add(key)
        lines.extend(_block(d, members))
        if shown[key] == COLLAPSE_AFTER:
            lines.append(f"   = (more {d.code} findings at this line are counted below)")
    for (code, line, col), n in hidden.items():
        lines.append(f"... and {n} more {code} finding(s) at line {line}:{col} (use --format json for all)")
    for code, n in over_code.items():
        lines.append(f"... and {n:,} more {code} diagnostic(s) of this kind not shown (use --format json for all)")
    if over_total:
        lines.append(f"... and {over_total:,} more diagnostic(s) not shown (use --format json for all)")
    lines.append(summary)
    return escape_hidden("\n".join(lines) + "\n")  # blueprint text never drives the terminal (docs/security.md)


def _printed(d: Diagnostic, show_suppressed: bool) -> bool:
    """Active findings, and suppressed ones with ``show_suppressed``; a suppressed *error* always (only the
    command line can suppress one, and the output says so: clusterctl/rules/suppression.py)."""
    return d.suppressed is None or show_suppressed or is_suppressed_error(d)


def is_suppressed_error(d: Diagnostic) -> bool:
    """An error finding suppressed (only ``--suppress`` can): every output prints it."""
    return d.suppressed is not None and d.severity >= Severity.ERROR


def _excerpt(line: str, col: int) -> tuple[str, int]:
    """At most SOURCE_WIDTH characters of ``line`` around ``col``, escaped as :func:`escape_hidden` does, and the
    caret's column in them (under the escape of a hidden character the problem is about)."""
    if len(line) > SOURCE_WIDTH:
        start = max(0, min(col - 1 - SOURCE_WIDTH // 2, len(line) - SOURCE_WIDTH))
        head = "..." if start else ""
        tail = "..." if start + SOURCE_WIDTH < len(line) else ""
        line, col = head + line[start:start + SOURCE_WIDTH] + tail, col - start + len(head)
    return escape_hidden(line), escaped_column(line, col)


def _block(d: Diagnostic, members: Sequence[Diagnostic] = ()) -> list[str]:
    sup = f" (suppressed: {d.suppressed})" if d.suppressed is not None else ""
    width = len(str(d.line))
    out = [f"{d.severity}[{d.code}]: {d.title}{sup}",
           f"{' ' * width}--> {d.file}:{d.line}:{d.col}"]
    if d.source_line:
        text, col = _excerpt(d.source_line, d.col)
        out.append(f"{' ' * width} |")
        out.append(f"{d.line} | {text}")
        out.append(f"{' ' * width} | {' ' * (col - 1)}^")
    if len(members) > 1:
        out.append(f"{' ' * width} = {group_message(members)}")
        out.append(f"{' ' * width} = e.g. {d.message}")
    else:
        out.append(f"{' ' * width} = {d.message}")
    if d.hint:
        out.append(f"{' ' * width} = hint: {d.hint}")
    out.append("")
    return out


def summary_line(diags: Sequence[Diagnostic], rules_run: int | None = None) -> str:
    active = [d for d in diags if d.suppressed is None]
    counts = {s: sum(1 for d in active if d.severity == s) for s in Severity}
    parts = [f"{counts[Severity.ERROR]} error(s)", f"{counts[Severity.WARNING]} warning(s)",
             f"{counts[Severity.INFO]} info"]
    sup = len(diags) - len(active)
    text = ", ".join(parts)
    if sup:
        text += f", {sup} suppressed" + _suppressed_errors_note(diags)
    if rules_run is not None:
        text += f" from {rules_run} rules"
    return text


def _suppressed_errors_note(diags: Sequence[Diagnostic]) -> str:
    n = sum(1 for d in diags if is_suppressed_error(d))
    return f" ({n} error(s), by --suppress)" if n else ""


# --- JSON ----------------------------------------------------------------------------------------------

def to_json(diags: Sequence[Diagnostic], file: str, status: str, extra: dict | None = None) -> str:
    active = [d for d in diags if d.suppressed is None]
    doc = {"blueprint": file, "status": status,
           "summary": {str(s): sum(1 for d in active if d.severity == s) for s in Severity}
           | {"suppressed": len(diags) - len(active),
              "suppressed_errors": sum(1 for d in diags if is_suppressed_error(d))},
           "findings": [d.as_dict() for d in diags]}
    if extra:
        doc.update(extra)
    return finite_json.dumps(doc, indent=2, sort_keys=False) + "\n"


# --- SARIF 2.1.0 -----------------------------------------------------------------------------------------

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def artifact_uri(file: str) -> str:
    """``file`` as SARIF's ``artifactLocation.uri``, a URI reference (RFC 3986): ``/`` separators, and every
    character but unreserved ones and ``/`` percent-encoded as UTF-8 (``my bp #1.yaml`` -> ``my%20bp%20%231.yaml``)."""
    return quote(file.replace("\\", "/"), safe="/")


def to_sarif(diags: Sequence[Diagnostic], rules: Sequence[Rule]) -> str:
    rule_ids = [r.code for r in rules]
    descriptors = [{
        "id": r.code, "name": r.title.title().replace(" ", ""),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.doc or r.title},
        "defaultConfiguration": {"level": _LEVEL[r.severity]},
        "properties": {"area": r.area},
    } for r in rules]
    for code in sorted(c for c in LoadCode if c.unreadable):
        title = code.title
        rule_ids.append(code)
        descriptors.append({"id": code, "name": title.title().replace(" ", ""), "shortDescription": {"text": title},
                            "defaultConfiguration": {"level": "error"}, "properties": {"area": "load"}})
    for code in sorted({d.code for d in diags} - set(rule_ids)):
        rule_ids.append(code)
        descriptors.append({"id": code, "shortDescription": {"text": code},
                            "defaultConfiguration": {"level": "warning"}})
    results = []
    for d in diags:
        res = {
            "ruleId": d.code, "ruleIndex": rule_ids.index(d.code), "level": _LEVEL[d.severity],
            "message": {"text": d.message + (f" Hint: {d.hint}" if d.hint else "")},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(d.file)},
                "region": {"startLine": d.line, "startColumn": d.col}}}],
            "properties": {"path": format_path(d.path)},
        }
        if d.suppressed is not None:
            res["suppressions"] = [_sarif_suppression(d)]
        results.append(res)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "clusterctl", "version": __version__,
                                "informationUri": "https://github.com/clusterctl/clusterctl",
                                "rules": descriptors}},
            "results": results,
        }],
    }
    return finite_json.dumps(doc, indent=2) + "\n"


def _sarif_suppression(d: Diagnostic) -> dict:
    """``external`` for ``--suppress`` (the only way to suppress an error), ``inSource`` for the blueprint's
    entries with their reason."""
    if d.suppressed == CLI_REASON:
        return {"kind": "external", "status": "accepted",
                "justification": f"{d.severity} suppressed on the command line with --suppress {d.code}"}
    return {"kind": "inSource", "justification": d.suppressed}
