"""Report section ``reliability``: expected job interruptions, mean time between them, and goodput.

The failure rates (``failure_rates.yaml``, every figure with its source) are per component and day, taken
from the 419 unexpected interruptions of Llama 3 405B pre-training on 16,384 H100 GPUs over 54 days: GPU
and software causes per GPU-day, host causes per GPU-node-day, network switch/cable per GPU-fabric link-day.
This cluster's interruptions per day are the sum of rate x component count; they are the sourced cluster's
failure rates applied to this size, not a prediction for this hardware.

Goodput follows the first-order checkpoint/restart model of Young (1974) and Daly (2006): with checkpoint
interval tau, blocking checkpoint write time delta, restart time R and mean time between interruptions M,

    wasted fraction = delta / tau + (tau / 2 + R) / M,    goodput = 1 - wasted (at least 0),

and Young's optimal interval tau* = sqrt(2 delta M). The model assumes delta, tau and R are small next to M.

These rates are the central point of a band across published logs (:mod:`clusterctl.report.reliability_band`):
the interruptions, MTBI, goodput and tau* are also given at the band's low and high points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from clusterctl.perf import storage_io
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import gpu_groups
from clusterctl.report import reliability_band, storage
from clusterctl.report.markdown import text
from clusterctl.report.section import ReportContext, Section, fmt, md_table

RATES_FILE = reliability_band.RATES_FILE
UNITS = ("gpu", "node", "switch", "link")
"""what a rate is counted per (one component for one day)"""
UNIT_LABEL = {"gpu": "GPU-day", "node": "GPU-node-day", "switch": "switch-day", "link": "link-day"}
CATEGORIES = ("gpu", "host", "network", "software")
CATEGORY_UNIT = {"gpu": "gpu", "host": "node", "network": "link", "software": "gpu"}
"""the component each category's rates are counted per"""
CATEGORY_LABEL = {"gpu": "GPU (incl. HBM, SRAM, NVLink, SDC)", "host": "Host (CPU, memory, NIC, SSD, PSU, ...)",
                  "network": "Network switch / cable", "software": "Software / other"}
REFERENCE_JOB_GPUS = 1024


@dataclass(frozen=True)
class Rate:
    key: str
    cause: str
    category: str
    per: str
    """gpu, node, switch or link"""
    events: int
    rate_per_day: float
    """interruptions per component per day"""
    source: str
    derivation: str


@dataclass(frozen=True)
class FailureRates:
    calibration: dict[str, Any]
    rates: tuple[Rate, ...]
    cross_checks: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Counts:
    """Components of a cluster that the rates apply to."""

    gpus: int
    nodes: int
    """GPU nodes"""
    switches: int
    """switches of the GPU (compute-role) fabrics"""
    links: int
    """links of the GPU fabrics (node-to-leaf and switch-to-switch)"""
    links_basis: str


@lru_cache(maxsize=4)
def load_rates(path: Path = RATES_FILE) -> FailureRates:
    """The failure-rate file, parsed (cached)."""
    raw = yaml.safe_load(Path(path).read_text())
    rates = []
    for key, r in raw["rates"].items():
        if r["per"] not in UNITS or r["category"] not in CATEGORIES:
            raise ValueError(f"{path}: rate {key} has per={r['per']!r}, category={r['category']!r}")
        rates.append(Rate(key, r["cause"], r["category"], r["per"], int(r["events"]), float(r["rate_per_day"]),
                          r["source"], r["derivation"]))
    return FailureRates(dict(raw["calibration"]), tuple(rates), dict(raw.get("cross_checks") or {}))


def rate_totals(rates: Iterable[Rate] | Mapping[str, float]) -> dict[str, float]:
    """Summed rate per unit (``gpu``, ``node``, ``switch``, ``link``), per component-day."""
    if isinstance(rates, Mapping):
        unknown = set(rates) - set(UNITS)
        if unknown:
            raise ValueError(f"unknown rate units {sorted(unknown)}; expected {UNITS}")
        return {u: float(rates.get(u, 0.0)) for u in UNITS}
    out = dict.fromkeys(UNITS, 0.0)
    for r in rates:
        out[r.per] += r.rate_per_day
    return out


def interruptions_per_day(gpus: float, nodes: float, switches: float, links: float,
                          rates: Iterable[Rate] | Mapping[str, float]) -> float:
    """Expected unexpected job interruptions per day: sum over causes of rate x component count, for a job
    that spans ``gpus`` GPUs on ``nodes`` nodes and depends on ``switches`` switches and ``links`` links."""
    t = rate_totals(rates)
    return t["gpu"] * gpus + t["node"] * nodes + t["switch"] * switches + t["link"] * links


def mtbi_hours(per_day: float) -> float | None:
    """Mean time between interruptions in hours (None when nothing fails)."""
    return 24.0 / per_day if per_day > 0 else None


def wasted_fraction(interval_s: float, write_s: float, restart_s: float, mtbi_s: float) -> float:
    """First-order (Young/Daly) share of time lost: delta/tau for checkpoints, (tau/2 + R)/M for the
    recomputation and restart after each interruption."""
    if interval_s <= 0 or mtbi_s <= 0:
        raise ValueError("interval and MTBI must be > 0")
    return write_s / interval_s + (interval_s / 2 + restart_s) / mtbi_s


def goodput(interval_s: float, write_s: float, restart_s: float, mtbi_s: float) -> float:
    """1 - wasted fraction, clamped at 0."""
    return max(0.0, 1.0 - wasted_fraction(interval_s, write_s, restart_s, mtbi_s))


def optimal_interval_s(write_s: float, mtbi_s: float) -> float:
    """Young's optimal checkpoint interval sqrt(2 delta M)."""
    return math.sqrt(2.0 * write_s * mtbi_s)


def gpu_fabrics(plan: ClusterPlan):
    """Fabrics that carry a GPU group's compute-role NICs (the network a training job depends on)."""
    groups = gpu_groups(plan)
    return list(plan.compute_fabrics(*groups)) if groups else []


def cluster_counts(plan: ClusterPlan, calibration: Mapping[str, Any] | None = None) -> Counts:
    """GPUs, GPU nodes, and the switches and links of the GPU fabrics. Without a planned GPU fabric (cloud)
    the links are estimated at the calibration cluster's links per GPU."""
    groups = gpu_groups(plan)
    gpus = sum(g.gpus for g in groups)
    nodes = sum(g.count for g in groups)
    fabrics = gpu_fabrics(plan)
    switches = sum(f.switch_count for f in fabrics)
    links = sum(l.count for f in fabrics for l in f.links)
    if links:
        basis = "GPU fabric " + ", ".join(f.name for f in fabrics)
    else:
        cal = calibration or load_rates().calibration
        links = round(gpus * cal["links"] / cal["gpus"])
        basis = (f"estimated: no GPU fabric in the plan; {fmt(cal['links'] / cal['gpus'])} links per GPU as in "
                 f"the calibration cluster")
    return Counts(gpus, nodes, switches, links, basis)


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else float(f"{x:.{digits}g}")


def _components(c: Counts) -> dict[str, int]:
    return {"gpu": c.gpus, "node": c.nodes, "switch": c.switches, "link": c.links}


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    fr = load_rates()
    cal = fr.calibration
    counts = cluster_counts(plan, cal)
    comp = _components(counts)
    per_day = interruptions_per_day(counts.gpus, counts.nodes, counts.switches, counts.links, fr.rates)
    mtbi_h = mtbi_hours(per_day)

    cal_per_day = cal["unexpected_interruptions"] / cal["days"]
    categories = []
    for cat in CATEGORIES:
        rs = [r for r in fr.rates if r.category == cat]
        units = sorted({r.per for r in rs})
        d = sum(r.rate_per_day * comp[r.per] for r in rs)
        categories.append({
            "category": cat,
            "per": units[0] if len(units) == 1 else ",".join(units),
            "components": comp[units[0]] if len(units) == 1 else None,
            "rate_per_day": _r(sum(r.rate_per_day for r in rs)),
            "events_in_source": sum(r.events for r in rs),
            "per_day": _r(d),
            "share": _r(d / per_day) if per_day else None,
        })
    causes = [{"key": r.key, "cause": r.cause, "category": r.category, "per": r.per,
               "rate_per_day": r.rate_per_day, "components": comp[r.per],
               "per_day": _r(r.rate_per_day * comp[r.per]), "events_in_source": r.events,
               "source": r.source, "derivation": r.derivation} for r in fr.rates]

    jobs = [{"label": "whole cluster", "gpus": counts.gpus, "per_day": _r(per_day), "mtbi_h": _r(mtbi_h)}]
    if counts.gpus and counts.gpus != REFERENCE_JOB_GPUS:
        ref = per_day * REFERENCE_JOB_GPUS / counts.gpus
        jobs.append({"label": f"{REFERENCE_JOB_GPUS:,}-GPU job", "gpus": REFERENCE_JOB_GPUS, "per_day": _r(ref),
                     "mtbi_h": _r(mtbi_hours(ref)),
                     "larger_than_cluster": REFERENCE_JOB_GPUS > counts.gpus})

    gp = _goodput(ctx, mtbi_h)
    band = _band(ctx, reliability_band.load_band(), per_day, categories)

    cross = []
    for key, x in fr.cross_checks.items():
        item = {"key": key, "label": x["label"], "source": x["source"], "derivation": x["derivation"]}
        if "hours" in x:
            item["hours"] = x["hours"]
        if "per_1000_gpu_days" in x:
            item["per_1000_gpu_days"] = x["per_1000_gpu_days"]
        cross.append(item)

    data = {
        "basis": (f"failure rates of {cal['name']} (419 unexpected interruptions in {cal['days']} days), per "
                  f"component-day, applied to this cluster's size"),
        "counts": {"gpus": counts.gpus, "gpu_nodes": counts.nodes, "switches": counts.switches,
                   "links": counts.links, "links_basis": counts.links_basis},
        "calibration": {"gpus": cal["gpus"], "nodes": cal["nodes"], "links": cal["links"], "days": cal["days"],
                        "unexpected_interruptions": cal["unexpected_interruptions"],
                        "per_day": _r(cal_per_day)},
        "interruptions_per_day": _r(per_day),
        "mtbi_h": _r(mtbi_h),
        "by_category": categories,
        "jobs": jobs,
        "goodput": gp,
        "band": band,
        "causes": causes,
        "cross_checks": cross,
    }
    return Section("reliability", "Reliability", data, _markdown(data))


def _band(ctx: ReportContext, band: reliability_band.Band, per_day: float,
          categories: list[dict[str, Any]]) -> dict[str, Any]:
    """The band's three points on this cluster (each per-component rate x the point's scale), the logs against
    the band, and the per-class logs against the band's per-class rates."""
    points = []
    for p in band.points:
        d = per_day * p.scale
        mtbi = mtbi_hours(d)
        points.append({
            "point": p.point, "log": p.log.key, "name": p.log.name, "operator": p.log.operator,
            "per_1000_gpu_days": p.log.per_1000_gpu_days, "evidence": p.log.evidence, "why": p.why,
            "scale": _r(p.scale),
            "per_class": ("measured: counts per root cause" if p.point == "central"
                          else "scaled: the central per-component rates x scale"),
            "by_category": [{"category": k["category"], "per": k["per"],
                             "per_1000_component_days": _r(k["rate_per_day"] * p.scale * 1000),
                             "per_day": _r(k["per_day"] * p.scale)} for k in categories],
            "interruptions_per_day": _r(d), "mtbi_h": _r(mtbi), "goodput": _goodput(ctx, mtbi)})
    logs = [{"key": g.key, "name": g.name, "operator": g.operator, "era": g.era, "gpu": g.gpu, "gpus": g.gpus,
             "days": g.days, "counted": g.counted, "per_1000_gpu_days": g.per_1000_gpu_days,
             "per_1000_gpu_days_upper": g.per_1000_gpu_days_upper, "evidence": g.evidence, "use": g.use,
             "excluded_why": g.excluded_why, "position": reliability_band.position(g, band),
             "source": g.source, "derivation": g.derivation} for g in band.logs]
    per_class = {k["category"]: k["rate_per_day"] * 1000 for k in categories}
    lo, hi = band.point("low").scale, band.point("high").scale
    class_logs = []
    for c in band.class_logs:
        comparable = CATEGORY_UNIT[c.category] == c.per
        top = c.per_1000_component_days_upper or c.per_1000_component_days
        if not comparable:
            where = None
        elif c.per_1000_component_days < per_class[c.category] * lo:
            where = "below"
        elif top > per_class[c.category] * hi:
            where = "above"
        else:
            where = "inside"
        class_logs.append({"key": c.key, "category": c.category, "per": c.per, "kind": c.kind, "log": c.log,
                           "per_1000_component_days": c.per_1000_component_days,
                           "per_1000_component_days_upper": c.per_1000_component_days_upper,
                           "evidence": c.source[1], "position": where, "source": c.source,
                           "derivation": c.derivation})
    return {"unit": "unexpected interruptions per 1,000 GPU-days", "basis": reliability_band.basis(band),
            "points": points, "logs": logs, "class_logs": class_logs,
            "not_separated": list(band.not_separated)}


def _goodput(ctx: ReportContext, mtbi_h: float | None) -> dict[str, Any]:
    tau = storage.interval_s(ctx)
    params, _ = storage.model_params(ctx)
    size = storage_io.checkpoint_bytes(params, ctx.checkpoint_bytes_per_param) if params is not None else None
    delta = storage_io.checkpoint_write_s(ctx.plan, size) if size is not None else None
    out: dict[str, Any] = {"interval_s": _r(tau), "write_s": _r(delta), "restart_s": _r(ctx.restart_s),
                           "mtbi_s": _r(mtbi_h * 3600) if mtbi_h else None,
                           "wasted_fraction": None, "goodput": None,
                           "optimal_interval_s": None, "goodput_at_optimal": None, "missing": None}
    missing = [name for name, v in (("a checkpoint write time (model size, checkpoint tier and a network path to it)", delta),
                                    ("a checkpoint interval", tau), ("a failure rate", mtbi_h)) if v is None]
    if missing:
        out["missing"] = ", ".join(missing)
        return out
    m = mtbi_h * 3600
    out["wasted_fraction"] = _r(wasted_fraction(tau, delta, ctx.restart_s, m))
    out["goodput"] = _r(goodput(tau, delta, ctx.restart_s, m))
    if delta > 0:
        opt = optimal_interval_s(delta, m)
        out["optimal_interval_s"] = _r(opt)
        out["goodput_at_optimal"] = _r(goodput(opt, delta, ctx.restart_s, m))
    return out


def _hours(h: float | None) -> str:
    if h is None:
        return "n/a"
    return f"{fmt(h)} h" if h >= 1 else f"{fmt(h * 60)} min"


def _markdown(d: dict[str, Any]) -> str:
    c, cal, gp = d["counts"], d["calibration"], d["goodput"]
    intro = (f"Failure rates of the Llama 3 405B pre-training cluster (Meta, {cal['gpus']:,} H100 GPUs, "
             f"{cal['nodes']:,} servers: {cal['unexpected_interruptions']} unexpected interruptions in "
             f"{cal['days']} days = {fmt(cal['per_day'])} per day; Dubey et al. 2024, Table 5) **applied to this "
             f"cluster's size**: they are that cluster's rates scaled to these component counts, not a prediction "
             f"for this hardware. GPU and software causes count per GPU, host causes per GPU node, network "
             f"switch/cable failures per link of the GPU fabric (the source network taken as {cal['links']:,} "
             f"links; see `failure_rates.yaml`).\n")
    out = [intro]
    out.append(f"This cluster: {c['gpus']:,} GPUs, {c['gpu_nodes']:,} GPU nodes, {c['links']:,} GPU-fabric "
               f"links ({c['links_basis']}), {c['switches']:,} GPU-fabric switches (their failures are inside "
               f"the per-link rate).\n")
    rows = []
    for k in d["by_category"]:
        rows.append([CATEGORY_LABEL[k["category"]], UNIT_LABEL.get(k["per"], k["per"]),
                     k["components"] if k["components"] is not None else "n/a",
                     f"{k['rate_per_day']:.3g}", k["events_in_source"], fmt(k["per_day"]) if k["per_day"] else "0",
                     fmt(k["share"] * 100) + " %" if k["share"] is not None else "n/a"])
    out.append(md_table(["Cause", "Rate per", "Components", "Rate per component-day", "Events in source",
                         "Interruptions/day", "Share"], rows, "llrrrrr"))
    out.append(f"Expected unexpected interruptions: **{fmt(d['interruptions_per_day'])} per day**, mean time "
               f"between interruptions (MTBI) **{_hours(d['mtbi_h'])}** for one job on the whole cluster.\n")
    jrows = [[j["label"] + (" (larger than this cluster)" if j.get("larger_than_cluster") else ""), j["gpus"],
              fmt(j["per_day"]) if j["per_day"] else "0", _hours(j["mtbi_h"])] for j in d["jobs"]]
    out.append("The rate scales with the job's size (GPUs, their nodes and links):\n")
    out.append(md_table(["Job", "GPUs", "Interruptions/day", "MTBI"], jrows, "lrrr"))
    if gp["missing"]:
        out.append(f"Goodput is not computed: it needs {gp['missing']}.\n")
    else:
        line = (f"Goodput of a whole-cluster job (Young 1974 / Daly 2006 first order: wasted = δ/τ + (τ/2 + R)/M) "
                f"with checkpoints every τ = {fmt(gp['interval_s'] / 60)} min, blocking write δ = "
                f"{fmt(gp['write_s'])} s (checkpoint tier, see storage), restart R = {fmt(gp['restart_s'] / 60)} min, "
                f"M = {_hours(gp['mtbi_s'] / 3600)}: **{fmt(gp['goodput'] * 100)} %**")
        if gp["optimal_interval_s"] is not None:
            line += (f"; Young's optimal interval τ* = √(2δM) = {fmt(gp['optimal_interval_s'] / 60)} min gives "
                     f"**{fmt(gp['goodput_at_optimal'] * 100)} %**")
        out.append(line + ".\n")
        if gp["interval_s"] + gp["restart_s"] > gp["mtbi_s"] / 2:
            out.append("τ + R is not small next to the MTBI here, so the first-order model is rough (and "
                       "pessimistic once goodput nears 0).\n")
    out.extend(_band_markdown(d["band"], d["cross_checks"]))
    return "\n".join(out)


def _per_1000(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _band_markdown(b: dict[str, Any], cross_checks: list[dict[str, Any]]) -> list[str]:
    out = []
    pts = {p["point"]: p for p in b["points"]}
    low, central, high = pts["low"], pts["central"], pts["high"]
    inside = [g for g in b["logs"] if g["use"] == "band"]
    out.append(f"**Band across {len(inside)} published logs.** The figures above are the central point of a band "
               f"of unexpected interruptions per 1,000 GPU-days: low {_per_1000(low['per_1000_gpu_days'])} "
               f"({text(low['name'])}), central {_per_1000(central['per_1000_gpu_days'])} "
               f"({text(central['name'])}), high {_per_1000(high['per_1000_gpu_days'])} ({text(high['name'])}). "
               f"Neither bound's log publishes counts per component class, so at low and high every per-component "
               f"rate is the central one scaled by the ratio of the overall rates.\n")
    rows = []
    for p in b["points"]:
        g = p["goodput"]
        rows.append([p["point"], _per_1000(p["per_1000_gpu_days"]), f"{text(p['name'])} [{p['evidence']}]",
                     fmt(p["interruptions_per_day"]) if p["interruptions_per_day"] else "0", _hours(p["mtbi_h"]),
                     _pct(g["goodput"]),
                     fmt(g["optimal_interval_s"] / 60) + " min" if g["optimal_interval_s"] else "n/a",
                     _pct(g["goodput_at_optimal"])])
    out.append(md_table(["Point", "Per 1,000 GPU-days", "Set by (evidence)", "Interruptions/day", "MTBI",
                         "Goodput at τ", "Young's τ*", "Goodput at τ*"], rows, "lrlrrrrr"))
    out.append("Why each point: " + "; ".join(f"{p['point']}: {text(p['why'])}" for p in b["points"]) + ".\n")
    crow = []
    for cat in CATEGORIES:
        per = [next(k for k in p["by_category"] if k["category"] == cat) for p in (low, central, high)]
        crow.append([CATEGORY_LABEL[cat], UNIT_LABEL.get(per[0]["per"], per[0]["per"]),
                     *(_per_1000(k["per_1000_component_days"]) for k in per)])
    out.append("Per component class (interruptions per 1,000 component-days; low and high scaled):\n")
    out.append(md_table(["Cause", "Rate per", "Low", "Central", "High"], crow, "llrrr"))
    lrows = [[text(g["name"]), text(g["operator"]), f"{text(g['gpu'])}, {g['era']}", g["gpus"],
              g["days"] if g["days"] is not None else "n/a", text(g["counted"]),
              _range(g["per_1000_gpu_days"], g["per_1000_gpu_days_upper"]), g["evidence"],
              g["position"] if g["use"] == "band" else "excluded: " + text(g["excluded_why"])]
             for g in b["logs"]]
    out.append("The logs (rates and sources in `failure_rates.yaml`; evidence: P primary read, Q primary quoted by "
               "a copy, S secondary only):\n")
    out.append(md_table(["Log", "Operator", "GPU, era", "GPUs", "Days", "Counted", "Per 1,000 GPU-days",
                         "Evidence", "Against the band"], lrows, "lllrrlrll"))
    meta = sorted({g["name"] for g in inside if g["operator"] == "Meta"})
    others = sorted({g["operator"] for g in inside if g["operator"] != "Meta"})
    out.append(f"Independence: {len(meta)} of these logs are Meta's ({', '.join(text(m) for m in meta)}): "
               f"separate clusters and eras, but one operator's health checks and failure accounting, so they "
               f"are not independent of each other. The other operators: {', '.join(text(o) for o in others)}.\n")
    krows = [[CATEGORY_LABEL[c["category"]], text(c["log"]), _range(c["per_1000_component_days"],
              c["per_1000_component_days_upper"]), UNIT_LABEL.get(c["per"], c["per"]), c["kind"], c["evidence"],
              c["position"] or "n/a"] for c in b["class_logs"]]
    out.append("Logs that separate one component class (interruptions: failures that stop a job, comparable with "
               "the class's band; events: error events, flaps or faults that need not stop a job, context only):\n")
    out.append(md_table(["Class", "Log", "Per 1,000 component-days", "Rate per", "Counts", "Evidence",
                         "Against the class's band"], krows, "llrllll"))
    out.append("No published log separates, with an interruption rate: "
               + "; ".join(text(x) for x in b["not_separated"]) + ".\n")
    for x in cross_checks:
        if "per_1000_gpu_days" in x:
            out.append(f"Not in the band: {text(x['label'])}, {fmt(x['hours'])} h, which is "
                       f"{_per_1000(x['per_1000_gpu_days'])} per 1,000 GPU-days, above the high point; it probably "
                       f"counts every failure that ended a job, and its definition was not checked (secondary "
                       f"figure).\n")
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else fmt(x * 100) + " %"


def _range(x: float, upper: float | None) -> str:
    return reliability_band.rate_text(x, upper)
