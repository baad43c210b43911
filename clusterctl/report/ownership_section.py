"""The report's "Cost of ownership" section: clusterctl/report/ownership.py's figures in Markdown.

Every dollar figure is shown with its low and high; a total over a design with unpriced items says "priced items
only" and names what is missing, and $ per GPU-hour or per million tokens is then "at least".
"""

from __future__ import annotations

from typing import Any

from clusterctl.report.markdown import text
from clusterctl.report.ownership import ownership
from clusterctl.report.section import ReportContext, Section, fmt, md_table

KEY = "ownership"
TITLE = "Cost of ownership"


def build(ctx: ReportContext) -> Section | None:
    sections = ctx.extra.get("sections") or {}
    if "bom" not in sections or "power" not in sections:
        return None
    d = ownership(ctx.plan, {k: s.data for k, s in sections.items()})
    if d is None:
        return None
    return Section(KEY, TITLE, d, markdown(d))


def usd(x: float) -> str:
    """$1.23M, $456k, $7.89, $0.0123: three significant figures with the scale a reader expects"""
    ax = abs(x)
    if ax >= 1e9:
        return f"${x / 1e9:,.3g}B" if ax < 1e12 else f"${x / 1e9:,.0f}B"
    if ax >= 1e6:
        return f"${x / 1e6:.3g}M"
    if ax >= 1e4:
        return f"${x / 1e3:.3g}k"
    return f"${fmt(x)}"


def span(t: dict[str, float] | None) -> str:
    """a figure with its range: ``$1.2M ($1.1M-$1.4M)``; one figure when low = high"""
    if t is None:
        return "-"
    if usd(t["low"]) == usd(t["high"]):
        return usd(t["usd"])
    return f"{usd(t['usd'])} ({usd(t['low'])}–{usd(t['high'])})"


def markdown(d: dict[str, Any]) -> str:
    a = d["assumptions"]
    at_least = "" if d["complete"] else "at least "
    out = [f"Prices from `{d['prices_file']}`"
           + (f" with the site's price sheet `{text(d['price_sheet'])}` over them" if d["price_sheet"] else "")
           + f"; USD. Hardware written off over {fmt(a['life_years'])} years"
           + (f", the facility over {fmt(a['facility_life_years'])}" if a["facility"] == "owned" else "")
           + f"; facility {a['facility']}; {a['gpus']:,} GPUs working {fmt(100 * a['utilisation'])} % of the year "
           f"({a['hours_per_year']:,.0f} h); IT {fmt(a['it_kw'])} kW at PUE {fmt(a['pue'])} = "
           f"{fmt(a['facility_kw'])} kW at the meter (planning maxima: an upper bound on the draw).\n\n"]
    if not d["complete"]:
        out.append(f"**Priced items only:** {len(d['unpriced']) + len(d['unpriced_operating'])} item(s) have no "
                   "sourced price and are left out of every total below, so totals and rates are lower bounds "
                   "(listed under *Not priced*; a site's price sheet fills them).\n\n")
    cap = d["capital"]
    rows = [[c["category"], span(c)] for c in cap["by_category"]]
    rows.append(["**total**", span(cap["total"])])
    out.append("**Capital**\n\n" + md_table(["Category", "USD (low–high)"], rows, "lr") + "\n")
    op = d["operating_per_year"]
    orows = []
    if op["energy"]:
        e = op["energy"]
        orows.append(["energy", f"{e['kwh']:,.0f} kWh at ${fmt(e['usd_per_kwh'])}/kWh", span(e)])
    if op["colocation"]:
        c = op["colocation"]
        orows.append(["colocation", f"{fmt(c['kw'])} kW at ${fmt(c['usd_per_kw_month'])} per kW-month", span(c)])
    if op["support"]:
        s = op["support"]
        orows.append(["support", f"{fmt(100 * s['share'])} % of hardware capital", span(s)])
    orows.append(["depreciation", "capital / life", span(d["depreciation_per_year"])])
    orows.append(["**per year**", "", span(d["annual"])])
    out.append("**Per year**\n\n" + md_table(["Cost", "Basis", "USD (low–high)"], orows, "llr") + "\n")
    figs = []
    if d["usd_per_gpu_hour"]:
        figs.append(f"- **{at_least}{span(d['usd_per_gpu_hour'])} per GPU-hour** "
                    f"({d['gpu_hours_per_year']:,.0f} GPU-hours a year).\n")
    m = d["usd_per_million_tokens"]
    if m:
        band = d["training_band"]
        why = (f"the training model's ±{fmt(100 * band['band'])} % band ({band['basis']}) included"
               if band["band"] else f"no model band: {band['basis']}")
        figs.append(f"- **{at_least}{span(m)} per million training tokens** at {d['tokens_per_s']:,.0f} tokens/s "
                    f"and goodput {fmt(100 * d['goodput'])} % ({m['tokens_per_year']:,.3g} tokens a year; {why}).\n")
    else:
        figs.append("- No $ per million tokens: the report has no training estimate or goodput for this design.\n")
    out.append("".join(figs))
    out.append(_cloud_markdown(d))
    out.append(_lines_markdown(d))
    out.append("\nSources:\n\n" + "".join(f"- `{k}`: {text(v)}\n" for k, v in d["sources"].items()))
    return "".join(out)


def _cloud_markdown(d: dict[str, Any]) -> str:
    if not d["cloud"]:
        return ("\nNo cloud instance with this design's accelerator has a list price in "
                "`clusterctl/catalog/prices.yaml`: no rent to compare.\n")
    rows = []
    for c in d["cloud"]:
        for kind, label in (("on_demand", "on demand"), ("capacity_block", "capacity block")):
            p = c[kind]
            if p is None:
                continue
            be = p["break_even_utilisation"]
            rows.append([c["instance_type"], label, f"${fmt(p['usd_per_gpu_hour'])} ({p['region']})",
                         usd(p["annual_usd"]), f"{fmt(100 * be)} %" if be is not None else "never"])
    per_gpu_hour = d["usd_per_gpu_hour"]["usd"] if d["usd_per_gpu_hour"] else None
    head = ("\n**Renting the same GPUs instead** (the cheapest region's list price per GPU-hour, for the same hours; "
            f"owning: {'$' + fmt(per_gpu_hour) if per_gpu_hour is not None else '-'} per GPU-hour). Break-even "
            "utilisation: the share of the year at which owning costs what renting only those hours costs; "
            "\"never\": renting stays cheaper at full use.\n\n")
    return head + md_table(["Instance", "Price", "Per GPU-hour", "Per year", "Break-even utilisation"], rows,
                           "llrrr")


def _lines_markdown(d: dict[str, Any]) -> str:
    rows = [[ln["category"], ln["description"], ln["count"], ln["unit"], span({"usd": ln["usd_each"],
             "low": ln["low_each"], "high": ln["high_each"]}), span(ln), ln["as_of"], ln["source"]]
            for ln in d["capital"]["lines"]]
    out = ["\n**Capital lines**\n\n", md_table(["Category", "Item", "Count", "Unit", "Each", "Total", "As of",
                                               "Source"], rows, "llrlrrll") if rows else "none priced\n"]
    if d["unpriced"] or d["unpriced_operating"]:
        out.append("\n**Not priced** (left out of the totals):\n\n")
        out += [f"- {ln['category']}: {text(ln['description'])} × {ln['count']:,g} (`{ln['item']}`)\n"
                for ln in d["unpriced"]]
        out += [f"- operating: `{x}`\n" for x in d["unpriced_operating"]]
    return "".join(out)
