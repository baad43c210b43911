"""Report section ``validation``: what ``clusterctl validate`` finds in the blueprint, at the top of the report.

The CLI validates before it reports and refuses a blueprint with (unsuppressed) error findings (exit 1), so a
written report lists warnings and infos; a library caller (``document.build``) may pass any findings, errors
included. Suppressed findings stay suppressed: they are counted, never listed. Each finding has its rule code,
severity, ``file:line`` and message, as ``validate`` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.output.diagnostics import Diagnostic
from clusterctl.report.section import ReportContext, Section, md_table


def build(ctx: ReportContext) -> Section | None:
    diags: Sequence[Diagnostic] | None = ctx.extra.get("findings")
    if diags is None:  # not validated by the caller: nothing to say
        return None
    active = [d for d in diags if d.suppressed is None]
    counts = {s: sum(1 for d in active if str(d.severity) == s) for s in ("error", "warning", "info")}
    data = {"errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"],
            "suppressed": len(diags) - len(active),
            "findings": [{"code": d.code, "severity": str(d.severity), "title": d.title, "message": d.message,
                          "hint": d.hint, "location": f"{d.file}:{d.line}"} for d in active]}
    summary = (f"`clusterctl validate` finds {counts['error']} error(s), {counts['warning']} warning(s) and "
               f"{counts['info']} info(s) in this blueprint")
    if data["suppressed"]:
        summary += f" ({data['suppressed']} suppressed finding(s) not listed)"
    if not active:
        return Section("validation", "Validation findings", data, summary + ".\n")
    table = md_table(["severity", "code", "where", "message"],
                     [[str(d.severity), d.code, f"{d.file}:{d.line}", d.message + (f" (hint: {d.hint})" if d.hint else "")]
                      for d in active], "llll")
    return Section("validation", "Validation findings", data, summary + ":\n\n" + table)
