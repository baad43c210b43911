"""The calibration and validation tables of docs/report.md, generated from the rows."""

from __future__ import annotations

from clusterctl.perf.published.all_rows import families, rows
from clusterctl.perf.published.constants import CONSTANTS, STEP, perturbed, sensitivity
from clusterctl.perf.published.rows import CALIBRATION, VALIDATION, evaluate


def spreads() -> dict[str, float]:
    """Observed spread of each family: the largest |model / published - 1| over its rows (0 without rows)."""
    out = {name: 0.0 for name in families()}
    for r in rows():
        out[r.family] = max(out[r.family], abs(evaluate(r).error))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def markdown() -> str:
    fams = families()
    results = [evaluate(r) for r in rows()]
    out = []
    for role, title in ((CALIBRATION, "Calibration rows (fits: used to set a constant)"),
                        (VALIDATION, "Validation rows (holdout: not used to set any constant)")):
        out.append(f"#### {title}\n")
        out.append("| row | family | model | published | error | source |")
        out.append("|---|---|--:|--:|--:|---|")
        for res in results:
            r = res.row
            if r.role != role:
                continue
            note = f"; off because: {r.explanation}" if r.explanation else ""
            digits = 3 if r.unit.startswith("×") else 1  # strong-scaling ratios
            out.append(f"| {r.id} | {r.family} | {res.predicted:,.{digits}f} | {res.published:,.{digits}f} {r.unit} | "
                       f"{100 * res.error:+.1f} % | {r.source}{note} |")
        out.append("")
    out.append("#### Families and bands\n")
    out.append("band = observed spread (largest |error| of the family's rows) + the stated margin.\n")
    out.append("| family | calibration rows | validation rows | observed spread | margin | band | how it was set |")
    out.append("|---|--:|--:|--:|--:|--:|---|")
    spread = spreads()
    for f in fams.values():
        n = {role: sum(1 for r in rows() if r.family == f.name and r.role == role) for role in (CALIBRATION, VALIDATION)}
        margin = _pct(f.margin) if f.margin is not None else "not stated"
        out.append(f"| {f.name} | {n[CALIBRATION]} | {n[VALIDATION]} | {_pct(spread[f.name])} | {margin} | "
                   f"±{_pct(f.band)} | {f.band_reason} |")
    out.append("")
    out.append("#### Model constants: constrained by the validation rows or not\n")
    out.append(f"Each constant moved by −{100 * STEP:.0f} % and +{100 * STEP:.0f} %: the validation rows that then "
               "leave their family's band (tests/perf/test_published.py checks the label).\n")
    out.append(f"| constant | module | value | label | rows out at −{100 * STEP:.0f} % | rows out at +{100 * STEP:.0f} % "
               f"| largest move of a validation prediction at +{100 * STEP:.0f} % | why |")
    out.append("|---|---|--:|---|--:|--:|--:|---|")
    validation = [r for r in rows() if r.role == VALIDATION]
    base = {r.id: r.predicted() for r in validation}
    for c in CONSTANTS:
        lo, hi = sensitivity(c).values()
        with perturbed(c, 1 + STEP):
            move = max((abs(r.predicted() / base[r.id] - 1) for r in validation), default=0.0)
        value = c.value()
        shown = " / ".join(f"{v:g}" for v in value) if isinstance(value, tuple) else f"{value:g}"
        out.append(f"| {c.ref} | {c.module.rsplit('.', 1)[1]}.py | {shown} | {c.label} | {len(lo)} | {len(hi)} | "
                   f"{100 * move:.2f} % | {c.why} |")
    return "\n".join(out) + "\n"
