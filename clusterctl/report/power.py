"""Power and efficiency: IT power per rack and in total, cooling split, facility power, FLOPS per watt,
tokens per kWh.

All power figures are **planning maxima**: each server's maximum system power and each switch's maximum
power from the catalog (``servers.<model>.power_kw``, ``switches.<model>.power_w``, rack systems'
``power_kw``), summed as the plan places them. Measured draw under training is lower; these are the
figures power and cooling have to be provisioned for.

Formulas
--------
* IT power = sum of rack power + switches placed in no rack + servers placed in no rack
  (``ClusterPlan.it_power_kw``). Liquid / air heat per rack = each item's kW x its liquid fraction / the
  rest.
* Facility power = IT power x PUE. The PUE is the report's (``ReportContext.pue``, e.g. from the command
  line), else the blueprint's declared ``site.pue``; with neither, only IT power is reported and the
  facility figures are ``null``.
* Peak BF16 per watt: at the GPU = ``bf16_dense_tflops / tdp_w`` (TFLOP/s per W); per server =
  GPUs x ``bf16_dense_tflops`` / server maximum power; cluster = peak BF16 of the bare-metal GPUs / IT
  power (and / facility power when a PUE is known).
* GPU share of IT power = bare-metal GPUs x ``tdp_w`` / IT power.
* Tokens per kWh (with a training throughput ``tokens_per_s``) = tokens_per_s x 3600 / kW, where kW is
  facility power when a PUE is known, else IT power; energy per token = kW x 1000 / tokens_per_s (J).

Racks with the same profile and the same contents are one row (count and a compressed host list of their
names), so a 3,000-rack plan gives a handful of rows. Cloud instances draw no power the cluster owner
provisions and providers do not publish it: their power is not reported.
"""

from __future__ import annotations

from typing import Any

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, RackPlan
from clusterctl.report.capacity import Sources, catalog_source, server_ref
from clusterctl.report.markdown import Markup
from clusterctl.report.section import ReportContext, Section, fmt, md_table

KEY = "power"
TITLE = "Power and efficiency"
BASIS = ("planning maxima: catalog maximum system power of servers, maximum power of switches and rack "
         "systems; not measured draw")
_EPS = 1e-9


def _pue(ctx: ReportContext) -> tuple[float | None, str]:
    site = ctx.plan.site
    declared = site is not None and "pue" in site.model_fields_set
    if ctx.pue is not None:
        if site is not None and ctx.pue == site.pue:
            return ctx.pue, "site.pue" if declared else f"site.pue default {site.pue:g} (not declared)"
        return ctx.pue, "report setting (pue)"
    if declared:
        return site.pue, "site.pue"
    if site is None:
        return None, "no site and no PUE given"
    return None, "site.pue not declared and no PUE given"


def rack_rows(plan: ClusterPlan) -> list[dict[str, Any]]:
    """Racks grouped by (profile, contents), in rack order."""
    groups: dict[tuple, list[RackPlan]] = {}
    for r in plan.racks:
        groups.setdefault((r.profile_name, r.items), []).append(r)
    rows = []
    for (profile_name, items), racks in groups.items():
        first = racks[0]
        prof = plan.rack_profile(first)
        kw = first.power_kw
        budget = prof.power_kw if prof is not None else None
        rows.append({
            "racks": hostlist.compress(r.name for r in racks),
            "count": len(racks),
            "profile": profile_name,
            "contents": [{"label": i.label, "count": i.count, "kw_each": i.kw_each} for i in items],
            "kw_each": kw,
            "budget_kw": budget,
            "liquid_kw_each": first.liquid_heat_kw,
            "air_kw_each": first.air_heat_kw,
            "budget_pct": 100 * kw / budget if budget else None,
            "over_budget": budget is not None and kw > budget + _EPS,
            "kw_total": kw * len(racks),
        })
    return rows


def _power_refs(plan: ClusterPlan) -> list[tuple[str, str]]:
    """(catalog key, source) of every power figure the plan's racks and unplaced gear use."""
    refs: dict[str, str] = {}
    for g in plan.groups:
        if g.type.server is not None:
            k, s = server_ref(plan, g.type, "power_kw")
            refs.setdefault(k, s)
    for f in plan.fabrics:
        for t in f.tiers:
            refs.setdefault(f"switches.{t.model}.power_w", catalog_source(plan, "switches", t.model, "power_w"))
    for r in plan.racks:
        if r.system is not None:
            name = plan.rack_profile(r).system if plan.rack_profile(r) else None
            if name:
                refs.setdefault(f"rack_systems.{name}.power_kw",
                                catalog_source(plan, "rack_systems", name, "power_kw"))
    return list(refs.items())


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    racks = rack_rows(plan)
    rack_kw = sum(r.power_kw for r in plan.racks)
    liquid = sum(r.liquid_heat_kw for r in plan.racks)
    air = rack_kw - liquid
    unplaced_nodes_kw = sum(g.unplaced * g.type.power_kw for g in plan.groups if g.type.server is not None)
    bare_metal = any(g.type.server is not None for g in plan.groups)
    cloud_nodes = sum(g.count for g in plan.groups if g.type.instance is not None)
    it_kw = plan.it_power_kw if bare_metal or plan.racks else None
    pue, pue_source = _pue(ctx)
    facility_kw = it_kw * pue if it_kw is not None and pue is not None else None
    site = plan.site

    gpu_tdp, node_types, bm_tflops, gpu_kw = _efficiency_rows(plan)
    has_it = bool(it_kw)
    tokens = _tokens(ctx.tokens_per_s, it_kw, facility_kw)

    data: dict[str, Any] = {
        "basis": BASIS,
        "racks": racks,
        "rack_count": len(plan.racks),
        "racks_over_budget": sum(r["count"] for r in racks if r["over_budget"]),
        "rack_kw": rack_kw,
        "unplaced_switch_kw": plan.unplaced_switch_kw,
        "unplaced_node_kw": unplaced_nodes_kw,
        "it_kw": it_kw,
        "site": None if site is None else {
            "name": site.name, "it_power_kw": site.it_power_kw,
            "it_pct": 100 * it_kw / site.it_power_kw if it_kw is not None else None,
            "air_cooling_kw": site.air_cooling_kw},
        "cooling": {"liquid_kw": liquid, "air_kw": air,
                    "unattributed_kw": plan.unplaced_switch_kw + unplaced_nodes_kw,
                    "liquid_share": liquid / rack_kw if rack_kw else None},
        "pue": pue,
        "pue_source": pue_source,
        "facility_kw": facility_kw,
        "efficiency": {
            "gpu_tdp": gpu_tdp,
            "node_types": node_types,
            "cluster_it_tflops_per_w": bm_tflops / (it_kw * 1000) if has_it and bm_tflops else None,
            "cluster_facility_tflops_per_w": bm_tflops / (facility_kw * 1000) if facility_kw and bm_tflops else None,
            "gpu_kw": gpu_kw,
            "gpu_share_of_it": gpu_kw / it_kw if has_it else None,
        },
        "tokens": tokens,
        "cloud_nodes": cloud_nodes,
        "notes": _notes(plan, it_kw, pue, pue_source, cloud_nodes, bare_metal),
    }
    return Section(KEY, TITLE, data, _markdown(plan, data))


def _efficiency_rows(plan: ClusterPlan) -> tuple[list[dict], list[dict], float, float]:
    """(peak per watt of each GPU model at TDP, of each bare-metal node type at its maximum power, the
    bare-metal GPUs' peak BF16 TFLOP/s, their kW at TDP); cloud instances have no power figure"""
    gpu_tdp, node_types, bm_tflops, gpu_kw = [], [], 0.0, 0.0
    seen_models, seen_types = set(), set()
    for g in plan.groups:
        nt, acc = g.type, g.type.accelerator
        if not g.gpus or acc is None:
            continue
        if nt.gpu_model not in seen_models:
            seen_models.add(nt.gpu_model)
            gpu_tdp.append({
                "model": nt.gpu_model, "bf16_dense_tflops": acc.bf16_dense_tflops, "tdp_w": acc.tdp_w,
                "tflops_per_w": acc.bf16_dense_tflops / acc.tdp_w,
                "catalog": [f"accelerators.{nt.gpu_model}.bf16_dense_tflops", f"accelerators.{nt.gpu_model}.tdp_w"],
                "source": [catalog_source(plan, "accelerators", nt.gpu_model, "bf16_dense_tflops"),
                           catalog_source(plan, "accelerators", nt.gpu_model, "tdp_w")]})
        if nt.server is None:
            continue
        bm_tflops += g.gpus * acc.bf16_dense_tflops
        gpu_kw += g.gpus * acc.tdp_w / 1000
        if nt.name not in seen_types and nt.power_kw > 0:
            seen_types.add(nt.name)
            key, src = server_ref(plan, nt, "power_kw")
            node_types.append({
                "node_type": nt.name, "server": nt.server_name, "gpus": nt.gpus, "power_kw": nt.power_kw,
                "bf16_dense_tflops": nt.gpus * acc.bf16_dense_tflops,
                "tflops_per_w": nt.gpus * acc.bf16_dense_tflops / (nt.power_kw * 1000),
                "gpu_share": nt.gpus * acc.tdp_w / (nt.power_kw * 1000),
                "catalog": [f"accelerators.{nt.gpu_model}.bf16_dense_tflops", key],
                "source": [catalog_source(plan, "accelerators", nt.gpu_model, "bf16_dense_tflops"), src]})
    return gpu_tdp, node_types, bm_tflops, gpu_kw


def _tokens(tokens_per_s: float | None, it_kw: float | None, facility_kw: float | None) -> dict | None:
    """tokens per kWh and joules per token, on facility power where a PUE gives it, else IT power"""
    if not tokens_per_s:
        return None
    kw = facility_kw if facility_kw else (it_kw or None)
    return {
        "tokens_per_s": tokens_per_s,
        "power_basis": "facility" if facility_kw else ("it" if kw else None),
        "kw": kw,
        "tokens_per_kwh": tokens_per_s * 3600 / kw if kw else None,
        "joules_per_token": kw * 1000 / tokens_per_s if kw else None,
    }


def _notes(plan: ClusterPlan, it_kw, pue, pue_source: str, cloud_nodes: int, bare_metal: bool) -> list[str]:
    notes = [f"Power figures are {BASIS}."]
    if cloud_nodes:
        notes.append(f"{cloud_nodes:,} cloud instance node(s): providers do not publish their power; "
                     "not included" + ("" if bare_metal else " (no IT power is reported)") + ".")
    if it_kw is not None and pue is None:
        notes.append(f"No PUE ({pue_source}): facility power is not reported, IT power only.")
    if plan.unplaced_switch_kw:
        notes.append(f"{fmt(plan.unplaced_switch_kw)} kW of switches are in no rack (no switch_racks): counted "
                     "in IT power, not in any rack or cooling split.")
    return notes


def _markdown(plan: ClusterPlan, d: dict[str, Any]) -> str:
    src = Sources()
    out: list[str] = []
    if d["racks"]:
        out.append(_racks_markdown(d["racks"]))

    rows = _figure_rows(plan, d, src) if d["it_kw"] is not None else []
    t = d["tokens"]
    if t is not None:
        rows.append(["Training throughput", fmt(t["tokens_per_s"], 5), "tokens/s", ""])
        if t["tokens_per_kwh"] is not None:
            basis = "facility" if t["power_basis"] == "facility" else "IT (no PUE)"
            rows.append([f"Tokens per kWh ({basis})", fmt(t["tokens_per_kwh"], 4), "tokens/kWh", ""])
            rows.append([f"Energy per token ({basis})", fmt(t["joules_per_token"], 4), "J/token", ""])
        else:
            rows.append(["Tokens per kWh", "not reported (no power figure)", "", ""])
    if rows:
        out.append(md_table(["Figure", "Value", "Unit", "Note / source"], rows, "lrll"))

    e = d["efficiency"]
    if e["gpu_tdp"] or e["node_types"]:
        out.append("\n**Peak BF16 per watt**\n\n")
        erows = [[f"GPU {g['model']} at TDP", f"{fmt(g['bf16_dense_tflops'], 4)} TF / {fmt(g['tdp_w'], 4)} W",
                  fmt(g["tflops_per_w"], 3), src.refs(list(zip(g["catalog"], g["source"])))] for g in e["gpu_tdp"]]
        erows += [[f"Server {n['server']} ({n['node_type']}), max power",
                   f"{n['gpus']} x {fmt(n['bf16_dense_tflops'] / n['gpus'], 4)} TF / {fmt(n['power_kw'] * 1000, 5)} W",
                   fmt(n["tflops_per_w"], 3), src.refs(list(zip(n["catalog"], n["source"])))]
                  for n in e["node_types"]]
        if e["cluster_it_tflops_per_w"]:
            erows.append(["Cluster, IT power", f"{fmt(sum_tf(plan) / 1000, 5)} PF / {fmt(d['it_kw'], 5)} kW",
                          fmt(e["cluster_it_tflops_per_w"], 3), ""])
        out.append(md_table(["Level", "Peak / power", "TFLOP/s per W", "Source"], erows, "llrl"))

    out.append("\n" + "\n".join(f"- {n}" for n in d["notes"]) + "\n")
    notes = src.markdown()
    if notes:
        out.append("\n" + notes)
    return "".join(out)


def _racks_markdown(racks: list[dict[str, Any]]) -> str:
    """the table of racks, identical racks in one row"""
    rows = []
    for r in racks:
        contents = ", ".join(f"{i['count']} x {i['label']}" for i in r["contents"]) or "-"
        pct = "-" if r["budget_pct"] is None else Markup(f"{fmt(r['budget_pct'])} %" + (
            " **over budget**" if r["over_budget"] else ""))
        rows.append([r["racks"], r["count"], r["profile"], contents, fmt(r["kw_each"], 4),
                     fmt(r["budget_kw"], 4) if r["budget_kw"] is not None else "-",
                     fmt(r["liquid_kw_each"], 4), fmt(r["air_kw_each"], 4), pct, fmt(r["kw_total"], 5)])
    return ("**Racks** (identical racks in one row)\n\n"
            + md_table(["Racks", "Count", "Profile", "Contents", "kW each", "Budget kW", "Liquid kW",
                        "Air kW", "% of budget", "kW total"], rows, "lrllrrrrlr") + "\n")

def _figure_rows(plan: ClusterPlan, d: dict[str, Any], src: Sources) -> list[list[Any]]:
    """the power figures' rows (racks, IT, site, heat, PUE, facility, GPU share, peak per watt), when there is
    an IT power"""
    rows = [["Racks", d["rack_count"], "", ""]]
    if d["racks_over_budget"]:
        rows.append(["Racks over their power budget", d["racks_over_budget"], "", ""])
    rows.append(["Rack power (sum of racks)", fmt(d["rack_kw"], 5), "kW", src.refs(_power_refs(plan))])
    if d["unplaced_switch_kw"]:
        rows.append(["Switches in no rack", fmt(d["unplaced_switch_kw"], 5), "kW", ""])
    if d["unplaced_node_kw"]:
        rows.append(["Servers in no rack", fmt(d["unplaced_node_kw"], 5), "kW", ""])
    rows.append([Markup("**IT power**"), fmt(d["it_kw"], 5), "kW", ""])
    if d["site"]:
        s = d["site"]
        rows.append([f"Site IT capacity ({s['name']})", fmt(s["it_power_kw"], 5), "kW",
                     f"{fmt(s['it_pct'])} % used" if s["it_pct"] is not None else ""])
    c = d["cooling"]
    rows.append(["Liquid-cooled heat", fmt(c["liquid_kw"], 5), "kW", ""])
    rows.append(["Air-cooled heat", fmt(c["air_kw"], 5), "kW", ""])
    if c["unattributed_kw"]:
        rows.append(["Heat not in a rack", fmt(c["unattributed_kw"], 5), "kW", ""])
    rows.append(["PUE", fmt(d["pue"], 3) if d["pue"] is not None else "not given", "", d["pue_source"]])
    rows.append([Markup("**Facility power** (IT x PUE)"),
                 fmt(d["facility_kw"], 5) if d["facility_kw"] is not None else "not reported", "kW", ""])
    e = d["efficiency"]
    if e["gpu_kw"]:
        rows.append(["GPU power at TDP", fmt(e["gpu_kw"], 5), "kW", ""])
        rows.append(["GPU share of IT power", f"{fmt(100 * e['gpu_share_of_it'])} %", "", ""])
    if e["cluster_it_tflops_per_w"]:
        rows.append(["Peak BF16 per IT watt", fmt(e["cluster_it_tflops_per_w"], 3), "TFLOP/s per W", ""])
    if e["cluster_facility_tflops_per_w"]:
        rows.append(["Peak BF16 per facility watt", fmt(e["cluster_facility_tflops_per_w"], 3),
                     "TFLOP/s per W", ""])
    return rows


def sum_tf(plan: ClusterPlan) -> float:
    """Peak dense BF16 TFLOP/s of the bare-metal GPUs."""
    return sum(g.gpus * g.type.accelerator.bf16_dense_tflops for g in plan.groups
               if g.gpus and g.type.accelerator is not None and g.type.server is not None)

