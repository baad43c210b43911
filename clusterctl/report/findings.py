"""Report section ``validation``: what ``clusterctl validate`` finds in the blueprint, at the top of the report.

The CLI validates before it reports and refuses a blueprint with (unsuppressed) error findings (exit 1), so a
written report lists warnings and infos; a library caller (``document.build``) may pass any findings, errors
included. Suppressed warnings and infos stay suppressed: they are counted, never listed. Suppressed errors
(only ``--suppress`` on the command line can suppress one) are listed in a table of their own. Each finding
has its rule code, severity, ``file:line`` and message, as ``validate`` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.output.diagnostics import Diagnostic
from clusterctl.output.suppressed import suppressed_errors
from clusterctl.report.section import ReportContext, Section, md_table


def build(ctx: ReportContext) -> Section | None:
    diags: Sequence[Diagnostic] | None = ctx.extra.get("findings")
    if diags is None:  # not validated by the caller: nothing to say
        return None
    active = [d for d in diags if d.suppressed is None]
    overridden = suppressed_errors(diags)
    counts = {s: sum(1 for d in active if str(d.severity) == s) for s in ("error", "warning", "info")}
    data = {"errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"],
            "suppressed": len(diags) - len(active),
            "findings": [{"code": d.code, "severity": str(d.severity), "title": d.title, "message": d.message,
                          "hint": d.hint, "location": f"{d.file}:{d.line}"} for d in active],
            "suppressed_errors": [{"code": d.code, "title": d.title, "message": d.message, "suppressed": d.suppressed,
                                   "location": f"{d.file}:{d.line}"} for d in overridden]}
    summary = (f"`clusterctl validate` finds {counts['error']} error(s), {counts['warning']} warning(s) and "
               f"{counts['info']} info(s) in this blueprint")
    if data["suppressed"]:
        summary += f" ({data['suppressed']} suppressed finding(s) not listed)"
    body = summary + ".\n"
    if active:
        body = summary + ":\n\n" + md_table(
            ["severity", "code", "where", "message"],
            [[str(d.severity), d.code, f"{d.file}:{d.line}", d.message + (f" (hint: {d.hint})" if d.hint else "")]
             for d in active], "llll")
    if overridden:
        body = body.rstrip("\n") + "\n\n" + _suppressed_errors_table(overridden)
    return Section("validation", "Validation findings", data, body)


def _suppressed_errors_table(diags: Sequence[Diagnostic]) -> str:
    """The errors this report was made in spite of: suppressed on the command line, each listed."""
    return (f"**{len(diags)} error(s) suppressed on the command line (`--suppress`)**; the figures below are of a "
            f"design `clusterctl validate` refuses:\n\n"
            + md_table(["code", "where", "message"], [[d.code, f"{d.file}:{d.line}", d.message] for d in diags], "lll"))
