"""Cost of ownership of a bare-metal design: capital by category, operating cost per year, depreciation, $ per
GPU-hour and per million training tokens, and renting the same GPUs in a cloud instead (docs/report.md, "Cost of
ownership"). The Markdown is clusterctl/report/ownership_section.py's.

Quantities come from the report's own sections (bill of materials, power, training, reliability), prices from
:func:`prices_of`: the shipped catalog (clusterctl/catalog/hardware_prices.yaml) with the site's price sheet in
place. Arithmetic, per year of ``H = 8,760 x utilisation`` working hours:

* **capital** = sum over BOM lines of count x price; an unpriced line is named and left out (the totals are then
  "priced items only": a lower bound);
* **depreciation** = hardware capital / ``life_years`` + facility capital / ``facility_life_years`` (straight line,
  no residual value, no cost of money);
* **energy** = facility kW (IT planning maximum x PUE) x ``H`` x USD/kWh; **colocation** = IT kW x USD per
  kW-month x 12 (``facility: colocation``); **support** = share x hardware capital;
* **annual cost** = depreciation + energy + colocation + support;
* **$ per GPU-hour** = annual cost / (GPUs x ``H``); **$ per million tokens** = annual cost / (tokens/s x goodput x
  3,600 x ``H``) x 10^6;
* **cloud**: instance price / its GPUs per GPU-hour; renting the cluster's GPUs for ``H`` hours costs
  GPUs x ``H`` x that; **break-even utilisation** = the ``u`` at which owning (fixed cost + energy at ``u``)
  costs what renting only the hours used costs: ``fixed / (GPUs x 8,760 x (cloud $/GPU-h - energy $/GPU-h))``.

Low and high carry the prices' own ranges; $ per million tokens also carries the training model's validated
error band (clusterctl/perf/published: the family of the estimate's accelerator, precision and model kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterctl.catalog.hardware_prices import (HARDWARE_PRICES_REF, HardwarePrice, HardwarePriceList, merged,
                                                shipped_hardware_prices)
from clusterctl.perf.interconnect import compute_group
from clusterctl.plan.model import ClusterPlan
from clusterctl.report.bom import nic_cards
from clusterctl.report.training_report import tokens_per_s_of

HOURS_PER_YEAR = 8760
COMPUTE_ADAPTER_ROLES = ("compute", "storage")
"""the NIC roles a server price with ``nics_included: false`` leaves out (its on-board in-band and BMC ports are in
the price)"""
BLACKWELL = ("b200", "gb200", "b300", "gb300")
HOPPER = ("h100-sxm", "h200-sxm")


def prices_of(plan: ClusterPlan) -> HardwarePriceList:
    """The prices the report uses for ``plan``: the shipped catalog, the site's price sheet over it."""
    return merged(shipped_hardware_prices(), plan.price_sheet)


@dataclass(frozen=True)
class Line:
    category: str
    item: str
    """the price item (a section key of the price list)"""
    description: str
    count: float
    unit: str
    price: HardwarePrice | None

    def data(self) -> dict[str, Any]:
        p = self.price
        out: dict[str, Any] = {"category": self.category, "item": self.item, "description": self.description,
                               "count": _r(self.count), "unit": self.unit}
        if p is None:
            return out
        lo, hi = p.bounds
        return out | {"usd_each": _r(p.point), "low_each": _r(lo), "high_each": _r(hi),
                      "usd": _r(self.count * p.point), "low": _r(self.count * lo), "high": _r(self.count * hi),
                      "as_of": p.as_of.isoformat(), "source": p.source}


def _r(x: float) -> float:
    """figures rounded to a thousandth of a dollar (no float noise in the JSON)"""
    return round(x, 3)


def _rack_system_trays(plan: ClusterPlan, systems: list[dict]) -> set[str]:
    return {plan.catalog.rack_systems[s["system"]].compute_tray for s in systems
            if s["system"] in plan.catalog.rack_systems}


def capital_lines(plan: ClusterPlan, bom: dict[str, Any], it_kw: float, prices: HardwarePriceList) -> list[Line]:
    """Every capital line of the design, priced or not, in a fixed order (servers first, facility last)."""
    lines: list[Line] = []
    trays = _rack_system_trays(plan, bom["rack_systems"])
    for s in bom["rack_systems"]:
        lines.append(Line("rack systems", s["system"], f"{s['system']} rack (compute and NVLink switch trays, power "
                          "shelves)", s["racks"], "rack", prices.rack_systems.get(s["system"])))
    for s in bom["servers"]:
        if s["model"] in trays:
            continue  # priced with its rack system
        lines.append(Line("servers", s["model"], s["model"], s["count"], "server", prices.servers.get(s["model"])))
    lines += _adapter_lines(plan, prices)
    for m in bom["switches"]["by_model"]:
        lines.append(Line("switches", m["model"], m["model"], m["count"], "switch", prices.switches.get(m["model"])))
    for t in bom["transceivers"]["by_type"]:
        lines.append(Line("transceivers", t["price_item"], t["type"], t["count"], "transceiver",
                          prices.transceivers.get(t["price_item"])))
    for c in bom["cables"]["by_type"]:
        lines.append(Line("cables", c["price_item"], c["type"], c["count"], "cable",
                          prices.cables.get(c["price_item"])))
    racks = sum(r["count"] for r in bom["racks"] if not r["system"])
    if racks:
        lines.append(Line("racks", "racks", "rack enclosure", racks, "rack", prices.racks))
    if bom["pdus"]["total_feeds"]:
        lines.append(Line("power distribution", "pdu_feeds", "rack power feed and PDU", bom["pdus"]["total_feeds"],
                          "feed", prices.pdu_feeds))
    if bom["cdus"]:
        lines.append(Line("cooling", "cdus", "coolant distribution unit", len(bom["cdus"]), "CDU", prices.cdus))
    lines += _storage_lines(plan, prices)
    if plan.cost.facility == "owned":
        lines.append(Line("facility", "facility_kw", "power and cooling build-out per kW of IT load", it_kw, "kW",
                          prices.facility_kw))
    return lines


def _adapter_lines(plan: ClusterPlan, prices: HardwarePriceList) -> list[Line]:
    """The compute and storage adapters of servers whose price leaves them out (``nics_included: false``)."""
    cards: dict[str, int] = {}
    for g in plan.groups:
        nt = g.type
        p = prices.servers.get(nt.server_name) if nt.instance is None else None
        if p is None or p.nics_included:
            continue
        for n in nt.nics:
            if n.role in COMPUTE_ADAPTER_ROLES:
                cards[n.model] = cards.get(n.model, 0) + nic_cards(plan, n) * g.count
    return [Line("network adapters", m, f"{m} (servers priced without their adapters)", n, "card",
                 prices.nics.get(m)) for m, n in cards.items()]


def _storage_lines(plan: ClusterPlan, prices: HardwarePriceList) -> list[Line]:
    lines = []
    for t in plan.storage:
        if t.tier == "local":
            continue  # the servers' own drives, in the server price
        by_tb, by_bw = prices.storage_tb.get(t.tier), prices.storage_gb_per_s.get(t.tier)
        if by_tb is None and by_bw is None:
            lines.append(Line("storage", f"storage_tb.{t.tier}", f"{t.name} ({t.tier}, {t.capacity_tb:,g} TB, "
                              f"{t.write_gb_per_s:,g} GB/s write)", t.capacity_tb, "TB", None))
            continue
        if by_tb is not None:
            lines.append(Line("storage", f"storage_tb.{t.tier}", f"{t.name} ({t.tier}) capacity", t.capacity_tb,
                              "TB", by_tb))
        if by_bw is not None:
            lines.append(Line("storage", f"storage_gb_per_s.{t.tier}", f"{t.name} ({t.tier}) write bandwidth",
                              t.write_gb_per_s, "GB/s", by_bw))
    return lines


def _sum(lines: list[Line]) -> dict[str, float]:
    priced = [ln for ln in lines if ln.price is not None]
    return {"usd": _r(sum(ln.count * ln.price.point for ln in priced)),
            "low": _r(sum(ln.count * ln.price.bounds[0] for ln in priced)),
            "high": _r(sum(ln.count * ln.price.bounds[1] for ln in priced))}


def _triple(usd: float, low: float, high: float) -> dict[str, float]:
    return {"usd": _r(usd), "low": _r(low), "high": _r(high)}


def training_band(training: dict[str, Any] | None) -> tuple[float | None, str]:
    """(the validated error band of the training estimate, the family it comes from or why there is none)"""
    from clusterctl.perf.published.all_rows import families

    if not training or not training.get("available"):
        return None, "no training estimate"
    layout = training.get("layout")
    if layout is None:
        return None, "simple form: throughput from an assumed MFU, which no published run validates"
    acc, moe = training["accelerator"], (training.get("model") or {}).get("experts", 0) > 0
    if moe:
        family = "moe-ep"
    elif acc in BLACKWELL:
        family = "blackwell-dense"
    elif acc in HOPPER:
        family = "h100-fp8-benchmarks" if layout.get("precision") == "fp8" else "h100-bf16-pretraining"
    elif acc.startswith("a100"):
        family = "a100-megatron-2021"
    else:
        return None, f"no published run validates the model on {acc}"
    return families()[family].band, family


def cloud_rent(plan: ClusterPlan, gpus: int, accelerator: str | None) -> list[dict[str, Any]]:
    """Per cloud instance type of the cluster's accelerator with a list price: the lowest on-demand and Capacity
    Block price per GPU-hour over its regions (with the region), and the range over regions."""
    from clusterctl.catalog.prices import shipped_prices

    if accelerator is None:
        return []
    cloud_prices = shipped_prices()
    out = []
    for name, inst in sorted(plan.catalog.instances.items()):
        if inst.gpus is None or inst.gpus.model != accelerator or name not in cloud_prices.prices:
            continue
        n = inst.gpus.count
        row: dict[str, Any] = {"instance_type": name, "provider": inst.provider, "gpus_per_instance": n}
        for kind in ("on_demand", "capacity_block"):
            regional = getattr(cloud_prices.prices[name], kind)
            if not regional:
                row[kind] = None
                continue
            region, best = min(regional.items(), key=lambda kv: (kv[1].usd_per_hour, kv[0]))
            per_gpu = [p.usd_per_hour / n for p in regional.values()]
            row[kind] = {"usd_per_gpu_hour": _r(best.usd_per_hour / n), "region": region,
                         "low": _r(min(per_gpu)), "high": _r(max(per_gpu)), "regions": len(regional),
                         "as_of": best.as_of.isoformat(), "source": best.source}
        out.append(row)
    return out


def ownership(plan: ClusterPlan, sections: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The cost-of-ownership figures of a bare-metal ``plan`` from the report's ``sections`` (key -> data: bom,
    power, training, reliability); None for a cloud blueprint (renting: the hourly cost section)."""
    if plan.cloud is not None:
        return None
    power = sections["power"]
    prices, cost = prices_of(plan), plan.cost
    lines = capital_lines(plan, sections["bom"], power["it_kw"], prices)
    priced = [ln for ln in lines if ln.price is not None]
    hardware = _sum([ln for ln in lines if ln.category != "facility"])
    facility = _sum([ln for ln in lines if ln.category == "facility"])
    hours = HOURS_PER_YEAR * cost.utilisation
    gpus = sum(g.gpus for g in plan.groups)
    gpu_hours = gpus * hours
    dep = {k: _r(hardware[k] / cost.life_years + facility[k] / cost.facility_life_years) for k in hardware}
    op = _operating(plan, prices, power, hardware, hours)
    parts = [x for x in (op["energy"], op["colocation"], op["support"]) if x is not None]
    annual = {k: _r(dep[k] + op["total"][k]) for k in dep}
    training = sections.get("training")
    tokens_per_s = tokens_per_s_of(training)
    goodput = ((sections.get("reliability") or {}).get("goodput") or {}).get("goodput")
    band, band_basis = training_band(training)
    missing = [name for name, part in (("energy_kwh", op["energy"]), ("support", op["support"]),
                                       ("colocation_kw_month", op["colocation"])) if part is None
               and (name != "colocation_kw_month" or cost.facility == "colocation")]
    return {
        "currency": "USD",
        "prices_file": HARDWARE_PRICES_REF,
        "price_sheet": cost.price_sheet,
        "assumptions": {"life_years": cost.life_years, "facility": cost.facility,
                        "facility_life_years": cost.facility_life_years, "utilisation": cost.utilisation,
                        "hours_per_year": _r(hours), "pue": power["pue"], "it_kw": _r(power["it_kw"]),
                        "facility_kw": _r(power["facility_kw"]), "gpus": gpus},
        "capital": {"lines": [ln.data() for ln in priced], "by_category": _by_category(priced),
                    "hardware": hardware, "facility": facility,
                    "total": {k: _r(hardware[k] + facility[k]) for k in hardware}},
        "unpriced": [ln.data() for ln in lines if ln.price is None],
        "unpriced_operating": missing,
        "complete": len(priced) == len(lines) and not missing,
        "operating_per_year": op,
        "depreciation_per_year": dep,
        "annual": annual,
        "gpu_hours_per_year": _r(gpu_hours),
        "usd_per_gpu_hour": {k: _r(annual[k] / gpu_hours) for k in annual} if gpu_hours else None,
        "usd_per_million_tokens": _per_million_tokens(annual, tokens_per_s, goodput, band, hours),
        "tokens_per_s": _r(tokens_per_s) if tokens_per_s else None,
        "goodput": goodput,
        "training_band": {"band": band, "basis": band_basis},
        "cloud": _cloud_rows(plan, gpus, gpu_hours, annual["usd"], op["energy"]),
        "sources": {k: prices.sources[k] for k in sorted({ln.price.source for ln in priced} |
                                                         {x["source"] for x in parts})},
    }


def _operating(plan: ClusterPlan, prices: HardwarePriceList, power: dict[str, Any], hardware: dict[str, float],
               hours: float) -> dict[str, Any]:
    """Energy, colocation and support per year (each None when unpriced or not applicable) and their total."""
    it_kw, kwh = power["it_kw"], power["facility_kw"] * hours
    e, c, s = prices.energy_kwh, prices.colocation_kw_month, prices.support
    energy = None if e is None else {"kwh": _r(kwh), **_triple(kwh * e.point, *(kwh * b for b in e.bounds)),
                                     "usd_per_kwh": e.point, "as_of": e.as_of.isoformat(), "source": e.source}
    colo = None if c is None or plan.cost.facility != "colocation" else {
        "kw": _r(it_kw), **_triple(it_kw * 12 * c.point, *(it_kw * 12 * b for b in c.bounds)),
        "usd_per_kw_month": c.point, "as_of": c.as_of.isoformat(), "source": c.source}
    support = None if s is None else {
        "share": s.share, **_triple(hardware["usd"] * s.share, hardware["low"] * s.bounds[0],
                                    hardware["high"] * s.bounds[1]),
        "as_of": s.as_of.isoformat(), "source": s.source}
    parts = [x for x in (energy, colo, support) if x is not None]
    return {"energy": energy, "colocation": colo, "support": support,
            "total": {k: _r(sum(x[k] for x in parts)) for k in ("usd", "low", "high")}}


def _per_million_tokens(annual: dict[str, float], tokens_per_s: float | None, goodput: float | None,
                        band: float | None, hours: float) -> dict[str, float] | None:
    """USD per million tokens, the low and high widened by the training model's band"""
    if not tokens_per_s or not goodput:
        return None
    tokens_year = tokens_per_s * goodput * 3600 * hours
    b = band or 0.0
    return {"usd": _r(annual["usd"] / tokens_year * 1e6),
            "low": _r(annual["low"] / (tokens_year * (1 + b)) * 1e6),
            "high": _r(annual["high"] / (tokens_year * (1 - b)) * 1e6),
            "tokens_per_year": _r(tokens_year)}


def _cloud_rows(plan: ClusterPlan, gpus: int, gpu_hours: float, annual: float,
                energy: dict[str, Any] | None) -> list[dict[str, Any]]:
    """:func:`cloud_rent` with each price's cost for the same GPU-hours and its break-even utilisation"""
    energy_per_gpu_hour = energy["usd"] / gpu_hours if energy and gpu_hours else 0.0
    fixed = annual - (energy["usd"] if energy else 0.0)
    rows = cloud_rent(plan, gpus, _accelerator(plan))
    for row in rows:
        for kind in ("on_demand", "capacity_block"):
            if row[kind] is None:
                continue
            price = row[kind]["usd_per_gpu_hour"]
            row[kind]["annual_usd"] = _r(price * gpu_hours)
            margin = price - energy_per_gpu_hour
            u = fixed / (gpus * HOURS_PER_YEAR * margin) if margin > 0 and gpus else None
            row[kind]["break_even_utilisation"] = round(u, 4) if u is not None and u <= 1 else None
    return rows


def _by_category(priced: list[Line]) -> list[dict[str, Any]]:
    cats: dict[str, list[Line]] = {}
    for ln in priced:
        cats.setdefault(ln.category, []).append(ln)
    return [{"category": c, **_sum(ls)} for c, ls in cats.items()]


def _accelerator(plan: ClusterPlan) -> str | None:
    """the accelerator of the GPU group the training estimate and the collectives run on"""
    g = compute_group(plan)
    return g.type.gpu_model if g is not None else None
