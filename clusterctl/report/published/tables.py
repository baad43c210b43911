"""The calibration and validation tables of docs/report.md, generated from the rows."""

from __future__ import annotations

from clusterctl.report.published import CALIBRATION, VALIDATION, evaluate, families, rows


def markdown() -> str:
    fams = families()
    out = []
    for role, title in ((CALIBRATION, "Calibration rows (fits: used to set a constant)"),
                        (VALIDATION, "Validation rows (holdout: not used to set any constant)")):
        out.append(f"#### {title}\n")
        out.append("| row | family | model | published | error | source |")
        out.append("|---|---|--:|--:|--:|---|")
        for r in rows():
            if r.role != role:
                continue
            res = evaluate(r)
            out.append(f"| {r.id} | {r.family} | {res.predicted:,.1f} | {res.published:,.1f} {r.unit} | "
                       f"{100 * res.error:+.1f} % | {r.source} |")
        out.append("")
    out.append("#### Families and bands\n")
    out.append("| family | band | how it was set |")
    out.append("|---|--:|---|")
    for f in fams.values():
        out.append(f"| {f.name} | ±{100 * f.band:.0f} % | {f.band_reason} |")
    return "\n".join(out) + "\n"
