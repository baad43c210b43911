"""``clusterctl compare A.yaml B.yaml [C.yaml ...]``: designs side by side (docs/cli.md, "compare").

Each design's figures are its own report's (clusterctl/report/document.py, without pictures), so a compared
figure is the figure the design's report shows. One row per figure, with which way is better; the better value
is marked only when the designs are told apart: two figures whose ranges overlap (price ranges, the training
model's validated band) are *indistinguishable*, and a cost total with unpriced items is a lower bound, which is
never called better. A design whose training estimate uses fewer GPUs than it has is said first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterctl.plan.model import ClusterPlan
from clusterctl.report.ownership import training_band
from clusterctl.report.training_report import gpus_used_of, tokens_per_s_of

COMPARE_FORMAT = 1
"""version of the JSON's shape"""
MAX_DESIGNS = 8


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    better: str | None
    """"higher", "lower" or None (a figure that is neither better nor worse: GPUs, racks)"""
    values: list[dict[str, float] | None]
    """per design: {"value", "low", "high", "lower_bound"?} or None (not known for that design)"""


WORKLOAD_ROWS = ("tokens_per_s", "train_days", "usd_per_million_tokens")
"""rows that depend on what is trained: no design is called better on them when the designs train different
models"""


def design_figures(report_json: dict[str, Any], tokens_t: float | None) -> dict[str, Any]:
    """The compared figures of one design's report (its JSON)."""
    cap, tr = report_json["capacity"], report_json.get("training") or {}
    power, rel = report_json["power"], report_json["reliability"]
    own = report_json.get("ownership")
    band, basis = training_band(tr)
    gpus = cap["gpus"]
    used, tps = gpus_used_of(tr), tokens_per_s_of(tr)
    goodput = (rel.get("goodput") or {}).get("goodput")
    mfu = tr.get("mfu") if tr.get("available") else None
    if mfu is None and tr.get("available"):
        mfu = (tr.get("simple") or {}).get("mfu")
    model = tr.get("model") or {}
    workload = model.get("name") or (f"{model['params'] / 1e9:g}B parameters" if model.get("params") else None)
    if workload is None and tr.get("available"):
        fpt = (tr.get("simple") or {}).get("flops_per_token")
        workload = f"{fpt / 6e9:g}B parameters (simple form)" if fpt else "simple form"
    return {"gpus": gpus, "gpus_used": used, "workload": workload, "tokens_per_s": tps, "band": band,
            "band_basis": basis, "mfu": mfu,
            "goodput": goodput, "tokens_t": tokens_t, "peak_pflops": cap["peak_bf16"]["value"],
            "it_kw": power["it_kw"], "facility_kw": power["facility_kw"], "liquid_kw": power["cooling"]["liquid_kw"],
            "air_kw": power["cooling"]["air_kw"], "racks": power["rack_count"],
            "interruptions_per_day": rel["interruptions_per_day"], "mtbi_h": rel["mtbi_h"], "ownership": own,
            "hourly": report_json.get("cost")}


def _v(value: float | None, low: float | None = None, high: float | None = None,
       lower_bound: bool = False) -> dict[str, Any] | None:
    if value is None:
        return None
    out = {"value": value, "low": value if low is None else low, "high": value if high is None else high}
    if lower_bound:
        out["lower_bound"] = True
    return out


def _banded(x: float | None, band: float | None, inverse: bool = False) -> dict[str, Any] | None:
    """``x`` with the training model's band: x(1 - b)..x(1 + b), or for a time x/(1 + b)..x/(1 - b)"""
    if x is None:
        return None
    b = band or 0.0
    return _v(x, x / (1 + b), x / (1 - b)) if inverse else _v(x, x * (1 - b), x * (1 + b))


def _cost(own: dict | None, key: str) -> dict[str, Any] | None:
    if own is None or own.get(key) is None:
        return None
    t = own[key]
    return _v(t["usd"], t["low"], t["high"], lower_bound=not own["complete"])


def _capital(f: dict[str, Any]) -> dict[str, Any] | None:
    own = f["ownership"]
    if own is None:
        return None
    t = own["capital"]["total"]
    return _v(t["usd"], t["low"], t["high"], lower_bound=not own["complete"])


def rows(figs: list[dict[str, Any]]) -> list[Row]:
    def col(fn) -> list:
        return [fn(f) for f in figs]

    def train_days(f):
        tps, g = f["tokens_per_s"], f["goodput"]
        if not (tps and g and f["tokens_t"]):
            return None
        return _banded(f["tokens_t"] * 1e12 / (tps * g) / 86400, f["band"], inverse=True)

    def hourly_gpu(f):
        own = f["ownership"]
        if own is not None:
            return _cost(own, "usd_per_gpu_hour")
        h = f["hourly"]
        if h is None or not f["gpus"]:
            return None
        return _v(h["static_usd_per_hour"] / f["gpus"], lower_bound=bool(h["unpriced"]))

    return [
        Row("gpus", "GPUs", "", None, col(lambda f: _v(f["gpus"]))),
        Row("gpus_used", "GPUs the training estimate uses", "", None, col(lambda f: _v(f["gpus_used"]))),
        Row("peak_pflops", "Peak dense BF16", "PFLOP/s", "higher", col(lambda f: _v(f["peak_pflops"]))),
        Row("tokens_per_s", "Sustained training throughput", "tokens/s", "higher",
            col(lambda f: _banded(f["tokens_per_s"], f["band"]))),
        Row("mfu", "MFU", "%", "higher",
            col(lambda f: _banded(100 * f["mfu"], f["band"]) if f["mfu"] is not None else None)),
        Row("train_days", "Time to train the token budget", "days", "lower", col(train_days)),
        Row("goodput", "Goodput (checkpoint and restart losses)", "%", "higher",
            col(lambda f: _v(100 * f["goodput"]) if f["goodput"] is not None else None)),
        Row("interruptions_per_day", "Unexpected interruptions", "per day", "lower",
            col(lambda f: _v(f["interruptions_per_day"]))),
        Row("it_kw", "IT power (planning maximum)", "kW", "lower", col(lambda f: _v(f["it_kw"]))),
        Row("facility_kw", "Facility power (IT x PUE)", "kW", "lower", col(lambda f: _v(f["facility_kw"]))),
        Row("liquid_kw", "Heat to liquid", "kW", None, col(lambda f: _v(f["liquid_kw"]))),
        Row("air_kw", "Heat to air", "kW", "lower", col(lambda f: _v(f["air_kw"]))),
        Row("racks", "Racks", "", "lower", col(lambda f: _v(f["racks"]))),
        Row("capital", "Capital cost", "USD", "lower", col(_capital)),
        Row("annual", "Cost per year (depreciation + operating)", "USD", "lower",
            col(lambda f: _cost(f["ownership"], "annual"))),
        Row("usd_per_gpu_hour", "Cost per GPU-hour", "USD", "lower", col(hourly_gpu)),
        Row("usd_per_million_tokens", "Cost per million training tokens", "USD", "lower",
            col(lambda f: _cost(f["ownership"], "usd_per_million_tokens"))),
    ]


def verdict(row: Row) -> tuple[int | None, bool]:
    """(index of the better design or None, whether the best is indistinguishable from the runner-up)"""
    known = [(i, v) for i, v in enumerate(row.values) if v is not None]
    if row.better is None or len(known) < 2:
        return None, False
    if any(v.get("lower_bound") for _, v in known):
        return None, False  # a partial total is no ground to call a design cheaper
    sign = 1 if row.better == "higher" else -1
    ranked = sorted(known, key=lambda iv: (-sign * iv[1]["value"], iv[0]))
    (best, b), (_, second) = ranked[0], ranked[1]
    if b["value"] == second["value"]:
        return None, False
    overlap = b["low"] <= second["high"] and second["low"] <= b["high"]
    return (None, True) if overlap else (best, False)


def gpu_warnings(names: list[str], figs: list[dict[str, Any]]) -> list[str]:
    """GPUs a design cannot use for its workload first, then designs that train different workloads."""
    out = []
    for name, f in zip(names, figs):
        if f["gpus_used"] is not None and f["gpus_used"] < f["gpus"]:
            out.append(f"{name}: the training estimate uses {f['gpus_used']:,} of its {f['gpus']:,} GPUs "
                       f"({f['gpus'] - f['gpus_used']:,} idle for this workload)")
    if len({f["workload"] for f in figs}) > 1:
        out.append("the designs train different workloads (" + "; ".join(
            f"{n}: {f['workload'] or 'none'}" for n, f in zip(names, figs)) + "): throughput, time to train and "
            "$ per token are each design's own, and none is called better")
    return out


def comparison(files: list[str], designs: list[tuple[ClusterPlan, dict[str, Any]]],
               tokens_t: float | None = None) -> dict[str, Any]:
    """The comparison of ``designs`` (each plan with its report's JSON) read from ``files``: the JSON form.
    ``tokens_t``: the token budget (trillions) for every design; default each design's ``workload.tokens_t``."""
    names = [plan.name for plan, _ in designs]
    if len(set(names)) < len(names):
        names = [f"{n} ({f})" for n, f in zip(names, files)]
    figs = [design_figures(r, tokens_t if tokens_t is not None else
                           plan.workload.tokens_t if plan.workload is not None else None) for plan, r in designs]
    same_workload = len({f["workload"] for f in figs}) == 1
    out_rows = []
    for r in rows(figs):
        best, same = verdict(r) if same_workload or r.key not in WORKLOAD_ROWS else (None, False)
        out_rows.append({"key": r.key, "label": r.label, "unit": r.unit, "better": r.better,
                         "values": [_rounded(v) for v in r.values], "best": best, "indistinguishable": same})
    return {
        "compare_format": COMPARE_FORMAT,
        "warnings": gpu_warnings(names, figs),
        "designs": [{"name": n, "file": f, "workload": fg["workload"], "gpus": fg["gpus"], "gpus_used": fg["gpus_used"],
                     "training_band": fg["band"], "training_band_basis": fg["band_basis"],
                     "cost_complete": fg["ownership"]["complete"] if fg["ownership"] else None,
                     "unpriced": [u["item"] for u in fg["ownership"]["unpriced"]] if fg["ownership"] else []}
                    for n, f, fg in zip(names, files, figs)],
        "rows": out_rows,
    }


def _rounded(v: dict[str, Any] | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {k: (round(x, 6) if isinstance(x, float) else x) for k, x in v.items()}
