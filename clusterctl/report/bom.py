"""Bill of materials: switches, cables, transceivers, NICs, GPUs, servers or instances, racks, PDU feeds, CDUs.

Counted from the plan's tiers, link bundles, groups and racks (never per host or per cable).

Rules for cables and transceivers (facts and their sources in ``clusterctl/catalog/optics.yaml``)
------------------------------------------------------------------------------------------------
* **Cables** are the plan's: one per link bundle cable (``LinkBundle.cables`` = links / breakout; a
  breakout or splitter cable feeding several NIC ports from one switch port counts once). Links at
  <= 25 Gb/s (BMC 1GbE RJ45, 10/25GbE) are copper (RJ45 / DAC); faster links are counted as optical
  fibre (an upper bound: DACs reach 2 m, so only in-rack links could use them).
* **Copper links need no transceivers.**
* **Switch end** (both ends of a switch-switch link, the leaf end of a node link): one pluggable per
  ``links_per_transceiver x breakout`` links, where ``links_per_transceiver`` is what one cage carries
  at the switch's native speed (QM9700 twin-port OSFP: 2 x 400G; SN5600: 1 x 800G) and ``breakout`` the
  switch's split at the link speed (SN5600 at 400G: 2; QM9700 at 200G: 2, giving 4 x 200G per plug with
  1:2 splitter fibres). Counted per link bundle, rounded up.
* **Node end**: one pluggable per NIC port, typed by the NIC (ConnectX-7 400G: single-port OSFP;
  BlueField-3 / dual-port ConnectX-7: QSFP112), except servers whose compute NICs leave through twin-port
  cages (DGX H100/H200/B200: four OSFP cages for eight ConnectX-7), which take one twin-port plug per two
  ports. A link slower than its NIC is typed by the link speed.
* **Extra endpoints** (storage or UFM appliance ports on the leaves): their far-end optics come with the
  appliance and are not counted.
* Anything without an entry in ``optics.yaml`` is typed by its speed (``generic``).

DGX SuperPOD H100, one SU (``dgx-h100-superpod-1su``): 8 leaf + 4 spine QM9700 on the compute fabric (RA
Table 4); its 256 node links and 256 leaf-spine links take 128 + 128 + 128 twin-port switch-end plugs and
128 twin-port DGX-end plugs.
"""

from __future__ import annotations

import math
from typing import Any

from clusterctl.catalog.optics import OPTICS_REF, optics
from clusterctl.plan.fabric import ports_at
from clusterctl.plan.cooling import cdu_loads
from clusterctl.plan.model import ClusterPlan, FabricPlan, LinkBundle
from clusterctl.report.capacity import Sources
from clusterctl.report.section import ReportContext, Section, fmt, md_table

KEY = "bom"
TITLE = "Bill of materials"


def copper_max_gbps() -> float:
    return float(optics()["rules"]["copper_max_gbps"])


def _generic(gbps: float) -> str:
    table = optics()["generic"]["by_gbps"]
    return table.get(f"{gbps:g}", f"{fmt(gbps)}G pluggable")


def _generic_price_item(gbps: float) -> str:
    return f"pluggable-{gbps:g}g"


def cable_price_item(gbps: float) -> str:
    """The price item of a cable at ``gbps`` (clusterctl/catalog/hardware_prices.py): copper RJ45 at 1G, a DAC up
    to the copper limit, optical fibre above (a breakout fibre priced as one cable)."""
    if gbps <= copper_max_gbps():
        return "cable-rj45" if gbps <= 1 else f"cable-dac-{gbps:g}g"
    return f"cable-fibre-{gbps:g}g"


def cable_type(gbps: float, breakout: int) -> str:
    if gbps <= copper_max_gbps():
        if gbps <= 1:
            return "1G RJ45 copper"
        return f"{fmt(gbps)}G copper / DAC"
    kind = f"{fmt(gbps)}G optical"
    return kind + (f", 1:{breakout} breakout" if breakout > 1 else "")


def _source_text(entry: dict[str, Any]) -> str:
    """An optics entry's source lines, one per figure (unsourced part numbers left out)."""
    return "; ".join(f"{k}: {v}" for k, v in entry["sources"].items() if not v.startswith("[D] not sourced"))


# --- transceivers --------------------------------------------------------------------------------------

def _switch_end(plan: ClusterPlan, fp: FabricPlan, bundle: LinkBundle, role: str) -> dict[str, Any] | None:
    tier = fp.tier(role)
    if tier is None:
        return None
    sw = tier.switch
    entry = optics()["switches"].get(tier.model)
    if sw.uplinks is not None and role == "leaf" and bundle.a == "leaf" and math.isclose(
            sw.uplinks.speed_gbps, bundle.gbps):
        per_port = 1  # dedicated uplink cages
    else:
        per_port = ports_at(sw, bundle.gbps)[1]
    if entry is not None:
        per = int(entry["links_per_transceiver"]) * per_port
        typ, parts, item = entry["transceiver"], entry.get("parts", ""), entry["price_item"]
        ref = (f"optics.switches.{tier.model}", _source_text(entry))
    else:
        per = per_port
        typ, parts, item = _generic(sw.port_modes[0].speed_gbps), "", _generic_price_item(sw.port_modes[0].speed_gbps)
        ref = ("optics.generic.by_gbps", optics()["generic"]["sources"]["by_gbps"])
    return {"fabric": fp.name, "link": f"{bundle.a}-{bundle.b}", "end": f"{role} ({tier.model})",
            "type": typ, "parts": parts, "price_item": item, "links": bundle.count, "links_per_transceiver": per,
            "count": -(-bundle.count // per), "ref": ref}


def _node_ends(plan: ClusterPlan, fp: FabricPlan, bundle: LinkBundle) -> tuple[list[dict[str, Any]], int]:
    """Node-end transceivers of a node-leaf bundle, and the node ports it covers."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    ports_total = 0
    servers, nics = optics()["servers"], optics()["nics"]
    for gi, role in dict.fromkeys(fp.attached):
        g = plan.groups[gi]
        nt = g.type
        for nic in nt.nics_of(role):
            ports = nic.count * g.count
            if not ports:
                continue
            ports_total += ports
            srv = servers.get(nt.server_name) if nt.server is not None else None
            if srv is not None and srv["role"] == role:
                per = int(srv["links_per_transceiver"])
                typ, parts, item = srv["transceiver"], "", srv["price_item"]
                ref = (f"optics.servers.{nt.server_name}", _source_text(srv))
            elif nic.model in nics and math.isclose(nic.speed_gbps, bundle.gbps):
                per, typ, parts = 1, nics[nic.model]["transceiver"], nics[nic.model].get("parts", "")
                item = nics[nic.model]["price_item"]
                ref = (f"optics.nics.{nic.model}", _source_text(nics[nic.model]))
            else:
                per, typ, parts, item = 1, _generic(bundle.gbps), "", _generic_price_item(bundle.gbps)
                ref = ("optics.generic.by_gbps", optics()["generic"]["sources"]["by_gbps"])
            count = -(-nic.count // per) * g.count
            key = (typ, nt.server_name or nt.name)
            row = rows.setdefault(key, {"fabric": fp.name, "link": "node-leaf",
                                        "end": f"node ({nt.server_name or nt.name})", "type": typ,
                                        "parts": parts, "price_item": item, "links": 0,
                                        "links_per_transceiver": per, "count": 0,
                                        "ref": ref})
            row["links"] += ports
            row["count"] += count
    return list(rows.values()), ports_total


def fabric_transceivers(plan: ClusterPlan, fp: FabricPlan) -> tuple[list[dict[str, Any]], int]:
    """Transceiver rows of one fabric and its extra endpoints (far ends not counted)."""
    rows: list[dict[str, Any]] = []
    extra = 0
    for b in fp.links:
        if b.gbps <= copper_max_gbps():
            continue
        if b.a == "node":
            sw = _switch_end(plan, fp, b, b.b)
            if sw:
                rows.append(sw)
            nodes, ports = _node_ends(plan, fp, b)
            rows.extend(nodes)
            extra += max(0, b.count - ports)
        else:
            for role in (b.a, b.b):
                sw = _switch_end(plan, fp, b, role)
                if sw:
                    rows.append(sw)
    return rows, extra


# --- the section -----------------------------------------------------------------------------------

def _add(table: dict, key, n: int) -> None:
    table[key] = table.get(key, 0) + n


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    network, xcvr_fabric = _network(plan)
    nodes = _nodes(plan)
    racks, systems, pdus = _rack_rows(plan)
    data: dict[str, Any] = {
        **network,
        **nodes,
        "racks": racks,
        "rack_systems": systems,
        "pdus": {"by_profile": pdus, "total_feeds": sum(p["feeds"] for p in pdus)},
        "cdus": _cdus(plan),
        "notes": _notes(network["transceivers"]["extra_endpoints"], bool(nodes["instances"])),
        "rules_file": OPTICS_REF,
    }
    return Section(KEY, TITLE, data, _markdown(data, xcvr_fabric))


def _network(plan: ClusterPlan) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """({switches, cables, transceivers} by fabric and in total, the transceiver rows with their catalog
    references for the Markdown's sources)"""
    cat = plan.catalog
    sw_fabric, sw_model = [], {}
    cables_fabric, cables_type = [], {}
    xcvr_fabric, xcvr_type, parts_of, item_of = [], {}, {}, {}
    extras = []
    for fp in plan.fabrics:
        for t in fp.tiers:
            sw_fabric.append({"fabric": fp.name, "tier": t.level, "role": t.role, "model": t.model,
                              "count": t.count})
            _add(sw_model, t.model, t.count)
        for b in fp.links:
            typ = cable_type(b.gbps, b.breakout)
            cables_fabric.append({"fabric": fp.name, "link": f"{b.a}-{b.b}", "links": b.count, "gbps": b.gbps,
                                  "breakout": b.breakout, "cables": b.cables, "type": typ})
            _add(cables_type, (typ, cable_price_item(b.gbps)), b.cables)
        rows, extra = fabric_transceivers(plan, fp)
        for r in rows:
            _add(xcvr_type, r["type"], r["count"])
            parts_of.setdefault(r["type"], r["parts"])
            item_of.setdefault(r["type"], r["price_item"])
        xcvr_fabric.extend(rows)
        if extra:
            extras.append({"fabric": fp.name, "endpoints": extra})
    return {
        "switches": {
            "by_fabric": sw_fabric,
            "by_model": [{"model": m, "count": n, "description": cat.switches[m].description
                          if m in cat.switches else None} for m, n in sw_model.items()],
            "total": sum(sw_model.values()),
        },
        "cables": {
            "by_fabric": cables_fabric,
            "by_type": [{"type": t, "price_item": item, "count": n} for (t, item), n in cables_type.items()],
            "total": sum(cables_type.values()),
        },
        "transceivers": {
            "by_fabric": [{k: v for k, v in r.items() if k != "ref"} | {"catalog": r["ref"][0],
                                                                         "source": r["ref"][1]}
                          for r in xcvr_fabric],
            "by_type": [{"type": t, "count": n, "parts": parts_of.get(t, ""), "price_item": item_of[t]}
                        for t, n in xcvr_type.items()],
            "total": sum(xcvr_type.values()),
            "extra_endpoints": extras,
        },
    }, xcvr_fabric


def nic_cards(plan: ClusterPlan, n) -> int:
    """Cards one node carries for its NIC entry ``n`` (ports over the catalog card's ports; one port per card for
    a NIC the catalog does not know)."""
    return n.count // (plan.catalog.nics[n.model].ports if n.model in plan.catalog.nics else 1)


def _nodes(plan: ClusterPlan) -> dict[str, Any]:
    """{gpus, servers, instances, nics}: what the node groups are built from"""
    cat = plan.catalog
    gpus, servers, instances, nic_rows = {}, {}, {}, {}
    for g in plan.groups:
        nt = g.type
        if g.gpus and nt.gpu_model:
            _add(gpus, nt.gpu_model, g.gpus)
        if nt.instance is not None:
            _add(instances, (nt.instance_name, nt.instance.provider), g.count)
            continue
        name = nt.server_name if cat.servers.get(nt.server_name) is nt.server else f"{nt.name} (inline spec)"
        _add(servers, name, g.count)
        for n in nt.nics:
            key = (n.model, n.role)
            row = nic_rows.setdefault(key, {"model": n.model, "role": n.role, "cards": 0, "ports": 0})
            row["cards"] += nic_cards(plan, n) * g.count
            row["ports"] += n.count * g.count
    return {
        "gpus": [{"model": m, "count": n} for m, n in gpus.items()],
        "servers": [{"model": m, "count": n} for m, n in servers.items()],
        "instances": [{"type": t, "provider": p, "count": n} for (t, p), n in instances.items()],
        "nics": list(nic_rows.values()),
    }


def _rack_rows(plan: ClusterPlan) -> tuple[list[dict], list[dict], list[dict]]:
    """(racks per profile, rack systems with their trays, PDU feeds per profile)"""
    by_profile: dict[str, list] = {}
    for r in plan.racks:
        by_profile.setdefault(r.profile_name, []).append(r)
    racks, pdus, systems = [], [], {}
    for name, rs in by_profile.items():
        prof = plan.rack_profile(rs[0])  # every rack of rs has this profile
        racks.append({"profile": name, "count": len(rs), "budget_kw": prof.power_kw if prof else None,
                      "units": prof.units if prof else None, "system": prof.system if prof else None})
        if prof is not None:
            pdus.append({"profile": name, "racks": len(rs), "feeds_per_rack": prof.feeds,
                         "feeds": len(rs) * prof.feeds, "feed_kw": prof.feed_kw or prof.power_kw,
                         "redundancy": prof.redundancy})
            if prof.system:
                sysent = plan.catalog.rack_systems.get(prof.system)
                row = systems.setdefault(prof.system, {"system": prof.system, "racks": 0, "compute_trays": 0,
                                                       "nvlink_switch_trays": 0})
                row["racks"] += len(rs)
                if sysent is not None:
                    row["compute_trays"] += len(rs) * sysent.compute_trays
                    row["nvlink_switch_trays"] += len(rs) * sysent.nvlink_switch_trays
    return racks, list(systems.values()), pdus


def _cdus(plan: ClusterPlan) -> list[dict]:
    """each CDU with the racks whose profile names it and their liquid heat at full load"""
    loads = cdu_loads(plan)
    return [{"name": c.name, "capacity_kw": c.capacity_kw, "coolant": c.coolant, "racks": loads[c.name][1],
             "liquid_load_kw": loads[c.name][0]} for c in plan.cooling.cdus]


def _notes(extras: list[dict], has_instances: bool) -> list[str]:
    notes = [
        ("Cables: one per planned cable (a breakout cable counts once); links at <= "
         f"{fmt(copper_max_gbps())} Gb/s are copper, faster ones counted as optical (upper bound)."),
        ("Transceivers: switch end one per links-per-cage x breakout links; node end one per NIC port, or "
         "one twin-port plug per two ports on servers with twin-port OSFP cages (DGX); copper links none."),
    ]
    if extras:
        notes.append("Extra endpoints (appliance ports) on the leaves: " + ", ".join(
            f"{e['endpoints']:,} on {e['fabric']}" for e in extras) + "; their far-end optics are not counted.")
    if has_instances:
        notes.append("Cloud instances are listed by type; the provider supplies their network, so no switches, "
                     "cables or transceivers are counted for them.")
    return notes


def _markdown(d: dict[str, Any], xcvr_rows: list[dict[str, Any]]) -> str:
    src = Sources()
    out: list[str] = []

    def block(title: str, headers: list[str], rows: list[list[Any]], align: str) -> None:
        if rows:
            out.append(("\n" if out else "") + f"**{title}**\n\n")
            out.append(md_table(headers, rows, align))

    items = []
    items += [["GPU", m["model"], m["count"]] for m in d["gpus"]]
    items += [["Server", m["model"], m["count"]] for m in d["servers"]]
    items += [["Cloud instance", f"{i['type']} ({i['provider']})", i["count"]] for i in d["instances"]]
    items += [["Rack system", s["system"], s["racks"]] for s in d["rack_systems"]]
    items += [["NVLink switch tray", s["system"], s["nvlink_switch_trays"]] for s in d["rack_systems"]
              if s["nvlink_switch_trays"]]
    items += [["Switch", m["model"], m["count"]] for m in d["switches"]["by_model"]]
    items += [["NIC", f"{n['model']} ({n['role']})", n["cards"]] for n in d["nics"]]
    items += [["Cable", c["type"], c["count"]] for c in d["cables"]["by_type"]]
    items += [["Transceiver", t["type"] + (f" - {t['parts']}" if t["parts"] else ""), t["count"]]
              for t in d["transceivers"]["by_type"]]
    items += [["Rack", f"profile {r['profile']}", r["count"]] for r in d["racks"]]
    items += [["PDU / power feed", f"profile {p['profile']} ({fmt(p['feed_kw'], 4)} kW, {p['redundancy']})",
               p["feeds"]] for p in d["pdus"]["by_profile"]]
    items += [["CDU", f"{c['name']} ({fmt(c['capacity_kw'], 4)} kW, {c['coolant']})", 1] for c in d["cdus"]]
    block("Summary", ["Item", "Model / type", "Count"], items, "llr")

    block("Switches per fabric and tier", ["Fabric", "Tier", "Model", "Count"],
          [[s["fabric"], f"{s['tier']} {s['role']}", s["model"], s["count"]] for s in d["switches"]["by_fabric"]],
          "lllr")
    block("Links and cables per fabric", ["Fabric", "Link", "Links", "Gb/s", "Cables", "Type"],
          [[c["fabric"], c["link"], c["links"], fmt(c["gbps"], 4), c["cables"], c["type"]]
           for c in d["cables"]["by_fabric"]], "llrrrl")
    block("Transceivers per fabric", ["Fabric", "Link", "End", "Links", "Links per plug", "Transceivers", "Type",
                                      "Source"],
          [[r["fabric"], r["link"], r["end"], r["links"], r["links_per_transceiver"], r["count"], r["type"],
            src.ref(r["ref"][0], r["ref"][1])] for r in xcvr_rows], "lllrrrll")
    block("NICs", ["Model", "Role", "Cards", "Ports"],
          [[n["model"], n["role"], n["cards"], n["ports"]] for n in d["nics"]], "llrr")
    block("Power feeds (PDUs)", ["Rack profile", "Racks", "Feeds per rack", "Feeds", "kW per feed", "Redundancy"],
          [[p["profile"], p["racks"], p["feeds_per_rack"], p["feeds"], fmt(p["feed_kw"], 4), p["redundancy"]]
           for p in d["pdus"]["by_profile"]], "lrrrrl")
    block("CDUs", ["CDU", "Capacity kW", "Coolant", "Racks served", "Liquid heat kW (planned)"],
          [[c["name"], fmt(c["capacity_kw"], 4), c["coolant"], c["racks"], fmt(c["liquid_load_kw"], 4)]
           for c in d["cdus"]], "lrlrr")

    out.append(("\n" if out else "") + "\n".join(f"- {n}" for n in d["notes"]) + "\n")
    notes = src.markdown()
    if notes:
        out.append("\n" + notes)
    return "".join(out)
