"""Cost per hour at list price, for cloud blueprints (clusterctl/cloud/stack/cost.py computes it).

Only blueprints with a ``cloud:`` section get this section; ``build`` returns None for the others.
"""

from __future__ import annotations

from typing import Any

from clusterctl.catalog.prices import PRICES_REF
from clusterctl.cloud.stack.cost import EXCLUDED, GroupCost, HourlyCost, hourly_cost, usd
from clusterctl.report.markdown import text
from clusterctl.report.section import ReportContext, Section, md_table

KEY = "cost"
TITLE = "Cost per hour at list price"
DIGITS = 6
"""JSON figures are rounded to 6 decimals (a millionth of a dollar) so float noise never shows"""


def _r(x: float | None) -> float | None:
    return round(x, DIGITS) if x is not None else None


def _group(g: GroupCost) -> dict[str, Any]:
    p, cb = g.price, g.capacity_block
    return {"group": g.group, "instance_type": g.instance_type, "count": g.count, "elastic": g.elastic,
            "usd_per_instance_hour": p.usd_per_hour if p else None,
            "usd_per_hour": _r(g.usd_per_hour),
            "as_of": p.as_of.isoformat() if p else None, "source": p.source if p else None,
            "capacity_block": None if cb is None else {
                "usd_per_instance_hour": cb.usd_per_hour, "usd_per_hour": _r(cb.usd_per_hour * g.count),
                "as_of": cb.as_of.isoformat(), "source": cb.source}}


def data(cost: HourlyCost) -> dict[str, Any]:
    return {
        "provider": cost.provider, "region": cost.region, "currency": "USD",
        "basis": "on-demand (pay-as-you-go) list price, Linux, per instance-hour",
        "groups": [_group(g) for g in cost.groups],
        "static_usd_per_hour": _r(cost.static_usd_per_hour),
        "elastic_usd_per_hour_max": _r(cost.elastic_usd_per_hour_max) if cost.has_elastic else None,
        "full_usd_per_hour": _r(cost.full_usd_per_hour),
        "unpriced": [{"group": g.group, "instance_type": g.instance_type, "count": g.count,
                      "regions_with_price": cost.prices.regions(g.instance_type)} for g in cost.unpriced],
        "excluded": list(EXCLUDED),
        "sources": cost.used_sources(),
        "prices_file": PRICES_REF,
    }


def build(ctx: ReportContext) -> Section | None:
    cost = hourly_cost(ctx.plan)
    if cost is None:
        return None
    d = data(cost)
    return Section(KEY, TITLE, d, markdown(d))


def _dollars(x: float | None) -> str:
    return usd(x) if x is not None else "no list price in the catalog"


def markdown(d: dict[str, Any]) -> str:
    rows = []
    for g in d["groups"]:
        cb = g["capacity_block"]
        rows.append([g["group"], g["instance_type"], g["count"], "elastic (up to)" if g["elastic"] else "static",
                     _dollars(g["usd_per_instance_hour"]), _dollars(g["usd_per_hour"]),
                     g["as_of"] or "-", g["source"] or "-",
                     f"{usd(cb['usd_per_hour'])} ({usd(cb['usd_per_instance_hour'])} each, {cb['as_of']})"
                     if cb else "-"])
    out = [f"On-demand list prices in **{d['region']}** ({d['provider']}), Linux, USD per hour, from "
           f"`{d['prices_file']}`.\n\n",
           md_table(["Group", "Instance type", "Count", "Runs", "Per instance", "Group per hour", "Price as of",
                     "Source", "Capacity Block rate"], rows, "llrlrrlll"),
           "\n"]
    static = usd(d["static_usd_per_hour"])
    who = "the priced instances (those without a list price, below, are not counted)" if d["unpriced"] else \
        "every instance"
    if d["elastic_usd_per_hour_max"] is None:
        out.append(f"- **{static} per hour**, all the time: {who}.\n")
    else:
        out.append(f"- **{static} per hour** for the static groups, all the time: {who}.\n")
        out.append(f"- **up to {usd(d['full_usd_per_hour'])} per hour** with the elastic groups at full size "
                   f"(they add up to {usd(d['elastic_usd_per_hour_max'])} while every elastic node runs; "
                   "nothing while Slurm has them powered down).\n")
    for u in d["unpriced"]:
        where = (f"; the catalog prices it in {', '.join(u['regions_with_price'])}" if u["regions_with_price"]
                 else "")
        out.append(f"- {u['count']:,} × {u['instance_type']} (group {u['group']}): no list price in the catalog "
                   f"for {d['region']}{where}. Not counted in the totals.\n")
    if any(g["capacity_block"] for g in d["groups"]):
        out.append("- Capacity Block rate: what an EC2 Capacity Block for ML reservation is charged per "
                   "instance-hour instead of the on-demand price (reservation fee, paid up front for the whole "
                   "block; the Linux fee comes on top while instances run).\n")
    out.append(f"- Not counted: {'; '.join(d['excluded'])}.\n")
    out.append("\nSources:\n\n" + "".join(f"- `{k}`: {text(v)}\n" for k, v in d["sources"].items()))
    return "".join(out)
