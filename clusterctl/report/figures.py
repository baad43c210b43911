"""Pictures for ``clusterctl report``: fabric topology, rack elevations, rack power and bus bandwidth.

Pure functions that return standalone SVG 1.1 text, byte-for-byte deterministic for the same input, drawn
with the primitives of ``clusterctl.report.svg``. Large plans are drawn in aggregate so a figure never grows
with the number of GPUs. Figures that make no sense for a plan (no racks, no switches) are ``None``.
``pictures`` names every figure of a plan by file name; ``clusterctl.report.document`` writes them (and their
PNG twins, ``clusterctl.report.png``).
"""

from __future__ import annotations

import math
import re

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, FabricPlan, LinkBundle, RackPlan
from clusterctl.report.section import fmt
from clusterctl.report.svg import Svg, attr, fits, nice, num

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
LIQUID, AIR, OVER = "#4e79a7", "#f28e2b", "#d62728"
MAX_SWITCH_BOXES = 32
"""a tier with more switches is drawn as one aggregate box"""
MAX_MESH_LINES = 128
"""more lines than this between two rows are drawn as one aggregate line"""


def _speed(gbps: float) -> str:
    return f"{gbps:g}G" if gbps >= 1 else f"{gbps * 1000:g}M"


def link_label(b: LinkBundle) -> str:
    """``1,024 × 400G`` (plus the cable count when links break out of one port)."""
    s = f"{b.count:,} × {_speed(b.gbps)}"
    return s + (f" ({b.cables:,} cables)" if b.breakout > 1 else "")


# ---------------------------------------------------------------- topology

def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def oversubscription_label(ratio: float) -> str:
    """``oversubscription 1.94:1`` where hosts can offer more than the uplinks carry (ratio >= 1); a leaf
    whose uplinks exceed its host links (a 1G management leaf with 100G uplinks: 0.02:1) is
    ``non-blocking`` and says by how much, since a ratio below one reads like a typo."""
    if ratio >= 1 - 1e-9:
        return f"oversubscription {fmt(ratio)}:1"
    return f"non-blocking (uplinks {fmt(1 / ratio)}× the host links)"


def node_row_label(fab: FabricPlan) -> str:
    """``32 nodes × 8 rails`` on a rail-optimized fabric (NIC k of every node on rail k); otherwise the
    links per node, which share the leaves (``260 nodes, 4 links each``)."""
    nodes = _plural(fab.nodes, "node")
    if fab.rail_optimized:
        return f"{nodes} × {_plural(fab.rails, 'rail')}"
    return f"{nodes}, {_plural(fab.rails, 'link')} each"


def topology_svg(plan: ClusterPlan) -> str | None:
    """One panel per fabric with switches: tiers as rows (core on top), a node row, link bundles between."""
    fabrics = [f for f in plan.fabrics if f.tiers]
    if not fabrics:
        return None
    svg, width, y = Svg(), 960.0, 20.0
    svg.text(20, y + 6, f"Fabric topology: {plan.name}", size=16, font_weight="bold")
    y += 24
    for fab in fabrics:
        y = _fabric_panel(svg, fab, y, width) + 16
    return svg.render(width, y, f"Fabric topology of {plan.name}")


def _fabric_panel(svg: Svg, fab: FabricPlan, y0: float, width: float) -> float:
    x0, x1, row_gap, box_h = 170.0, width - 20, 90.0, 28.0
    tiers = sorted(fab.tiers, key=lambda t: -t.level)
    rows = len(tiers) + 1
    height = 58 + rows * row_gap - (row_gap - box_h) + 14
    svg.parts.append(f'<g class="fabric" data-fabric="{attr(fab.name)}">')
    svg.rect(10, y0, width - 20, height, fill="#f7f7f7", stroke="#cccccc")
    svg.text(20, y0 + 20, f"{fab.name} ({fab.kind})", size=14, font_weight="bold")
    sub = (f"{_plural(fab.switch_count, 'switch', 'switches')}, {_plural(len(fab.tiers), 'tier')}, "
           f"{oversubscription_label(fab.oversubscription_achieved)}"
           + (", rail-optimized" if fab.rail_optimized else "")
           + (f", {fab.pods:,} pods" if fab.pods > 1 else ""))
    svg.text(20, y0 + 38, sub, size=11, fill="#444444")
    anchors: dict[str, list[float]] = {}
    row_y: dict[str, float] = {}
    cx = (x0 + x1) / 2
    for i, t in enumerate(tiers + [None]):
        ry = y0 + 58 + i * row_gap
        role = t.role if t is not None else "node"
        row_y[role] = ry
        if t is None:
            label = node_row_label(fab)
            w = max(320.0, len(label) * 7.2 + 20)
            svg.rect(cx - w / 2, ry, w, box_h, fill="#e8eef7", stroke="#4e79a7", class_="nodes",
                     data_nodes=fab.nodes, data_rails=fab.rails)
            svg.text(cx, ry + 18, label, size=11, anchor="middle")
            svg.text(20, ry + 13, "nodes", size=11, font_weight="bold")
            svg.text(20, ry + 27, f"{fab.endpoints:,} endpoints", size=10, fill="#444444")
            anchors[role] = [cx]
            continue
        svg.text(20, ry + 13, t.role, size=11, font_weight="bold")
        svg.text(20, ry + 27, f"{t.count:,} × {t.model}", size=10, fill="#444444")
        anchors[role] = _switch_row(svg, t, ry, x0, x1, box_h)
    for b in fab.links:
        if b.a not in anchors or b.b not in anchors:
            continue
        (lo, hi) = (b.a, b.b) if row_y[b.a] > row_y[b.b] else (b.b, b.a)
        y_top, y_bot = row_y[hi] + box_h, row_y[lo]
        xa, xb = anchors[lo], anchors[hi]
        mesh = len(xa) * len(xb) <= MAX_MESH_LINES and (fab.pods <= 1 or len(xa) == 1 or len(xb) == 1)
        if mesh:
            for ax in xa:
                for bx in xb:
                    svg.line(ax, y_bot, bx, y_top, stroke="#999999", stroke_width="1", class_="link")
        else:
            svg.line(cx, y_bot, cx, y_top, stroke="#777777", stroke_width="4", class_="link aggregate")
        label = link_label(b)
        my, lw = (y_top + y_bot) / 2, len(label) * 6.6 + 10
        svg.rect(cx - lw / 2, my - 10, lw, 16, fill="#ffffff", stroke="#bbbbbb", rx="3")
        svg.text(cx, my + 2, label, size=11, anchor="middle", class_="link-label",
                 data_a=b.a, data_b=b.b, data_count=b.count, data_gbps=f"{b.gbps:g}")
    svg.parts.append("</g>")
    return y0 + height


def _switch_row(svg: Svg, t, ry: float, x0: float, x1: float, box_h: float) -> list[float]:
    """One tier's row: a box per switch (named, when the tier is small enough to draw each), else one box
    for the whole tier; returns the x of each box's centre, where links attach."""
    cx = (x0 + x1) / 2
    names: list[str] = []
    if t.count <= MAX_SWITCH_BOXES:
        try:
            names = hostlist.expand(t.names)
        except hostlist.HostlistError:
            names = []
        if len(names) != t.count:
            names = [f"{t.role}{k + 1}" for k in range(t.count)]
    if not names:
        label = f"{t.count:,} × {t.model}"
        w = max(260.0, len(label) * 7.2 + 20)
        svg.rect(cx - w / 2, ry, w, box_h, fill="#ffffff", stroke="#333333", stroke_width="2",
                 class_=f"switch {t.role} aggregate", data_count=t.count, data_model=t.model)
        svg.text(cx, ry + 18, label, size=11, anchor="middle")
        return [cx]
    slot = (x1 - x0) / len(names)
    w = min(110.0, slot - 4)
    xs = []
    for k, name in enumerate(names):
        bx = x0 + k * slot + (slot - w) / 2
        svg.rect(bx, ry, w, box_h, fill="#ffffff", stroke="#333333", class_=f"switch {t.role}",
                 data_name=name, data_model=t.model)
        m = re.search(r"\d+$", name)
        short = name if fits(name, w, 10) else (m.group(0) if m else "")
        if short and fits(short, w, 10):
            svg.text(bx + w / 2, ry + 18, short, size=10, anchor="middle")
        xs.append(bx + w / 2)
    return xs


# ---------------------------------------------------------------- rack elevations

def _rack_hosts(plan: ClusterPlan) -> dict[int, list[tuple[int, int, int, str]]]:
    """rack index -> [(u_bottom, height_u, group index, hostname)] sorted by U."""
    out: dict[int, list[tuple[int, int, int, str]]] = {}
    for gi, g in enumerate(plan.groups):
        h = max(1, g.type.height_u)
        for host, r, u in zip(g.hosts, g.rack_index, g.u_bottom):
            if r >= 0:
                out.setdefault(r, []).append((u, h, gi, host))
    for v in out.values():
        v.sort()
    return out


def _representatives(plan: ClusterPlan, hosts, max_racks: int) -> tuple[list[tuple[RackPlan, str]], int]:
    """(rack, caption) to draw, and how many kinds of rack were left out."""
    if len(plan.racks) <= max_racks:
        return [(r, r.name) for r in plan.racks], 0
    kinds: dict[tuple, list[RackPlan]] = {}
    for r in plan.racks:
        layout = tuple((u, h, gi) for u, h, gi, _ in hosts.get(r.index, ()))
        key = (r.profile_name, tuple((i.label, i.count) for i in r.items), layout)
        kinds.setdefault(key, []).append(r)
    out = []
    for racks in list(kinds.values())[:max_racks]:
        cap = hostlist.compress([r.name for r in racks])
        out.append((racks[0], cap + (f" ({len(racks):,} racks like this)" if len(racks) > 1 else "")))
    return out, max(0, len(kinds) - max_racks)


def _top_free(occupied: set[int], h: int, units: int, ceiling: list[int]) -> int:
    """Lowest U of the highest free run of ``h`` units at or below ``units``; above the rack when none."""
    for top in range(units, h - 1, -1):
        if all(u not in occupied for u in range(top - h + 1, top + 1)):
            return top - h + 1
    bottom = ceiling[0] + 1
    ceiling[0] += h
    return bottom


def _rack_layout(plan: ClusterPlan, rack, nodes) -> tuple[int, int, list[tuple], bool]:
    """(units of the rack, its top unit drawn, its blocks as (kind, u, height, group index, label), whether
    any block's position is assumed): nodes at their planned U, then its switches (one block per switch up
    to 16, else one for all) and reserved units in the top free units."""
    prof = plan.rack_profile(rack)
    units = prof.units if prof else 48
    blocks = [("node", u, h, gi, host) for u, h, gi, host in nodes]
    occupied = {u + k for _, u, h, _, _ in blocks for k in range(h)}
    ceiling = [max([units] + list(occupied))]
    extra: list[tuple[str, int, str]] = []
    for it in rack.items:
        sw = plan.catalog.switches.get(it.label)
        if sw is None:
            continue
        h = max(1, sw.height_u)
        if it.count <= 16:
            extra += [("switch", h, it.label)] * it.count
        else:
            extra.append(("switch", h * it.count, f"{it.count} × {it.label}"))
    if prof and prof.reserved_u:
        extra.append(("reserved", prof.reserved_u, f"reserved ({prof.reserved_u} U)"))
    for kind, h, label in extra:
        u = _top_free(occupied, h, units, ceiling)
        occupied.update(range(u, u + h))
        blocks.append((kind, u, h, -1, label))
    return units, max([units] + list(occupied)), blocks, bool(extra)


def rack_elevations_svg(plan: ClusterPlan, max_racks: int = 24) -> str | None:
    """Front views of racks: nodes at their planned U, colored by group; switches and reserved units in
    the top free units (assumed positions). Many racks: one drawing per distinct rack content."""
    if not plan.racks:
        return None
    hosts = _rack_hosts(plan)
    drawn, left_out = _representatives(plan, hosts, max(1, max_racks))
    u_px, rack_w, col_w, cols = 10.0, 150.0, 200.0, min(len(drawn), 6)
    layouts = []
    assumed_any = False
    for rack, caption in drawn:
        units, top, blocks, assumed = _rack_layout(plan, rack, hosts.get(rack.index, ()))
        assumed_any = assumed_any or assumed
        layouts.append((rack, caption, units, top, blocks))
    tallest = max(top for *_, top, _ in layouts)
    head = 84.0 if assumed_any or left_out else 60.0
    row_h = 46 + tallest * u_px + 30
    rows = -(-len(layouts) // cols)
    width, height = 20 + cols * col_w, head + rows * row_h + 10
    svg = Svg()
    svg.text(20, 24, f"Rack elevations: {plan.name}", size=16, font_weight="bold")
    lx = 20.0
    for gi, g in enumerate(plan.groups):
        svg.rect(lx, 38, 12, 12, fill=PALETTE[gi % len(PALETTE)], stroke="#333333")
        svg.text(lx + 16, 48, g.name, size=11)
        lx += 30 + len(g.name) * 7
    notes = []
    if assumed_any:
        notes.append("Nodes at their planned U; switches and reserved units drawn in the top free units "
                     "(positions assumed).")
    if left_out:
        notes.append(f"{left_out:,} more kinds of rack not drawn.")
    if notes:
        svg.text(20, 72, " ".join(notes), size=10, fill="#444444", class_="note")
    # one or two racks are narrower than the title, the legend and the note: widen to fit them
    title = f"Rack elevations: {plan.name}"
    width = max(width, 40 + len(title) * 16 * 0.62, lx + 20, 40 + len(" ".join(notes)) * 10 * 0.6)
    for k, (rack, caption, units, top, blocks) in enumerate(layouts):
        ox = 20 + (k % cols) * col_w + 22
        oy = head + (k // cols) * row_h + 46 + (tallest - top) * u_px
        svg.parts.append(f'<g class="rack-drawing" data-rack="{attr(rack.name)}" data-top-u="{top}">')
        svg.text(ox + rack_w / 2, oy - 26, caption, size=max(7.0, min(11.0, (col_w - 12) / (0.62 * len(caption)))),
                 anchor="middle", font_weight="bold",
                 class_="rack-caption", data_rack=rack.name)
        svg.text(ox + rack_w / 2, oy - 12, f"{rack.profile_name}: {rack.used_u} / {units} U", size=10,
                 anchor="middle", fill="#444444")
        svg.rect(ox, oy, rack_w, top * u_px, fill="#fafafa", stroke="#222222", stroke_width="1.5",
                 class_="rack", data_rack=rack.name, data_units=units)
        if top > units:
            svg.line(ox - 4, oy + (top - units) * u_px, ox + rack_w + 4, oy + (top - units) * u_px,
                     stroke=OVER, stroke_width="2", class_="over-capacity")
        for u in range(1, top + 1):
            svg.text(ox - 3, oy + (top - u + 1) * u_px - 2, str(u), size=6.5, anchor="end", fill="#777777")
        for kind, u, h, gi, label in blocks:
            by, bh = oy + (top - (u + h - 1)) * u_px, h * u_px
            if kind == "node":
                svg.rect(ox + 2, by + 0.5, rack_w - 4, bh - 1, fill=PALETTE[gi % len(PALETTE)], stroke="#333333",
                         class_="node", data_host=label, data_u=u, data_height_u=h,
                         data_group=plan.groups[gi].name)
            else:
                svg.rect(ox + 2, by + 0.5, rack_w - 4, bh - 1, fill="#dddddd" if kind == "switch" else "#f0f0f0",
                         stroke="#666666", stroke_dasharray="4 2", class_=f"{kind} assumed", data_u=u,
                         data_height_u=h, data_label=label)
            size = 8.0 if bh < 14 else 10.0
            if fits(label, rack_w - 4, size):
                svg.text(ox + rack_w / 2, by + bh / 2 + size * 0.35, label, size=size, anchor="middle",
                         fill="#ffffff" if kind == "node" else "#222222", class_=f"{kind}-label")
        svg.parts.append("</g>")
    return svg.render(width, height, f"Rack elevations of {plan.name}")


# ---------------------------------------------------------------- rack power

def rack_power_svg(plan: ClusterPlan, max_bars: int = 64) -> str | None:
    """IT power per rack, stacked liquid / air heat, against the profile's power budget."""
    if not plan.racks:
        return None
    groups: dict[tuple, list[RackPlan]] = {}
    if len(plan.racks) <= max_bars:
        for r in plan.racks:
            groups[(r.index,)] = [r]
    else:
        for r in plan.racks:
            groups.setdefault((r.profile_name, round(r.power_kw, 3)), []).append(r)
    bars = list(groups.values())
    left_out = max(0, len(bars) - max_bars)
    bars = bars[:max_bars]
    budgets = [(plan.rack_profile(rs[0]).power_kw if plan.rack_profile(rs[0]) else None) for rs in bars]
    top = nice(1.1 * max([rs[0].power_kw for rs in bars] + [b for b in budgets if b is not None] + [1e-9]))
    labels = [hostlist.compress([x.name for x in rs]) + (f" ({len(rs):,})" if len(rs) > 1 else "") for rs in bars]
    reach = max(len(s) for s in labels) * 6.0 * 0.71  # a label's extent at 45 degrees
    slot, bar_w, py0, ph = 40.0, 26.0, 70.0, 260.0
    px0 = max(70.0, reach - 10)
    width = max(560.0, px0 + slot * len(bars) + 30)
    height = py0 + ph + reach + 30
    svg = Svg()
    svg.text(20, 24, f"IT power per rack: {plan.name}", size=16, font_weight="bold")
    lx = 20.0
    for label, fill, stroke in (("liquid heat", LIQUID, None), ("air heat", AIR, None),
                                ("budget", None, "#222222"), ("over budget", "#ffffff", OVER)):
        if fill is None:
            svg.line(lx, 44, lx + 14, 44, stroke=stroke, stroke_width="2")
        else:
            svg.rect(lx, 38, 14, 12, fill=fill, stroke=stroke, stroke_width="2" if stroke else None)
        svg.text(lx + 18, 48, label, size=11)
        lx += 36 + len(label) * 6.5
    if left_out:
        svg.text(width - 20, 48, f"{left_out:,} more bars not drawn", size=10, anchor="end", class_="note")

    def yv(kw: float) -> float:
        return py0 + ph - kw / top * ph

    for k in range(6):
        v = top * k / 5
        svg.line(px0, yv(v), width - 20, yv(v), stroke="#e0e0e0")
        svg.text(px0 - 6, yv(v) + 4, fmt(v), size=10, anchor="end")
    svg.text(18, py0 + ph / 2, "kW", size=11, anchor="middle", transform=f"rotate(-90 18 {num(py0 + ph / 2)})")
    for k, (rs, budget, label) in enumerate(zip(bars, budgets, labels)):
        r = rs[0]
        bx = px0 + k * slot + (slot - bar_w) / 2
        over = budget is not None and r.power_kw > budget + 1e-9
        names = hostlist.compress([x.name for x in rs])
        svg.parts.append(f'<g class="bar{" over-budget" if over else ""}" data-racks="{attr(names)}" '
                         f'data-count="{len(rs)}" data-kw="{r.power_kw:.3f}" data-liquid-kw="{r.liquid_heat_kw:.3f}"'
                         + (f' data-budget-kw="{budget:.3f}"' if budget is not None else "") + ">")
        svg.el("title", f"{names}: {fmt(r.power_kw)} kW" + (f" of {fmt(budget)} kW" if budget else ""))
        liq, air = r.liquid_heat_kw, r.air_heat_kw
        if liq > 0:
            svg.rect(bx, yv(liq), bar_w, yv(0) - yv(liq), fill=LIQUID)
        if air > 0:
            svg.rect(bx, yv(liq + air), bar_w, yv(liq) - yv(liq + air), fill=AIR)
        if over:
            svg.rect(bx, yv(r.power_kw), bar_w, yv(0) - yv(r.power_kw), fill="none", stroke=OVER, stroke_width="2.5")
        if budget is not None:
            svg.line(bx - 4, yv(budget), bx + bar_w + 4, yv(budget), stroke="#222222", stroke_width="2",
                     class_="budget")
        svg.parts.append("</g>")
        tx, ty = bx + bar_w / 2, py0 + ph + 12
        svg.text(tx, ty, label, size=10, anchor="end", transform=f"rotate(-45 {num(tx)} {num(ty)})")
    svg.line(px0, yv(0), width - 20, yv(0), stroke="#333333")
    return svg.render(width, height, f"IT power per rack of {plan.name}")


# ---------------------------------------------------------------- bus bandwidth

def _size_label(k: int) -> str:
    if k < 0:
        return f"{2.0 ** k:g} B"
    unit = min(k // 10, 4)
    return f"{2 ** (k - 10 * unit)} {('B', 'KiB', 'MiB', 'GiB', 'TiB')[unit]}"


def busbw_svg(series: dict[str, list[tuple[float, float]]], title: str) -> str:
    """Bus bandwidth (GB/s, linear) against message size (bytes, log2), one line per series."""
    pts = {name: sorted(p) for name, p in series.items()}
    for name, p in pts.items():
        if any(s <= 0 for s, _ in p):
            raise ValueError(f"series {name!r}: message sizes must be > 0 bytes")
    sizes = [s for p in pts.values() for s, _ in p]
    bws = [b for p in pts.values() for _, b in p]
    lo = math.floor(math.log2(min(sizes))) if sizes else 0
    hi = math.ceil(math.log2(max(sizes))) if sizes else 10
    hi = max(hi, lo + 1)
    ymax = nice(max(bws + [0.0]) * 1.05) if bws and max(bws) > 0 else 1.0
    px0, px1, py0, py1 = 80.0, 560.0, 50.0, 360.0
    # room for the longest name (11 px) and for a "(same as <name>)" note (9 px) under it
    legend_w = max([len(n) * 7 for n in pts] + [(len(n) + 10) * 5.6 for n in pts] + [70]) + 60
    width, height = px1 + legend_w, py1 + 60

    def xv(s: float) -> float:
        return px0 + (math.log2(s) - lo) / (hi - lo) * (px1 - px0)

    def yv(b: float) -> float:
        return py1 - b / ymax * (py1 - py0)

    svg = Svg()
    svg.text(px0, 28, title, size=15, font_weight="bold")
    step = next((s for s in (1, 2, 5, 10, 20) if (hi - lo) / s <= 10), 50)
    for k in range(-(-lo // step) * step, hi + 1, step):
        x = xv(2.0 ** k)
        svg.line(x, py0, x, py1, stroke="#e0e0e0", class_="grid")
        svg.text(x, py1 + 16, _size_label(k), size=10, anchor="middle", class_="x-tick", data_x=num(x))
    for k in range(6):
        v = ymax * k / 5
        svg.line(px0, yv(v), px1, yv(v), stroke="#e0e0e0", class_="grid")
        svg.text(px0 - 6, yv(v) + 4, fmt(v), size=10, anchor="end")
    svg.rect(px0, py0, px1 - px0, py1 - py0, fill="none", stroke="#333333")
    svg.text((px0 + px1) / 2, py1 + 40, "message size (bytes, log2 scale)", size=12, anchor="middle")
    cy = (py0 + py1) / 2
    svg.text(22, cy, "bus bandwidth (GB/s)", size=12, anchor="middle", transform=f"rotate(-90 22 {num(cy)})")
    if not sizes:
        svg.text((px0 + px1) / 2, cy, "no data", size=14, anchor="middle", fill="#777777")
    seen: dict[tuple, str] = {}
    for i, (name, p) in enumerate(pts.items()):
        color = PALETTE[i % len(PALETTE)]
        dash, shape = SERIES_STYLES[i % len(SERIES_STYLES)]
        if p:
            svg.el("polyline", fill="none", stroke=color, stroke_width="2", stroke_dasharray=dash,
                   class_="series", data_series=name, data_marker=shape,
                   points=" ".join(f"{num(xv(s))},{num(yv(b))}" for s, b in p))
            if len(p) <= 64:
                for s, b in p:
                    svg.marker(shape, xv(s), yv(b), color, "marker")
        ly = py0 + 10 + i * 26
        svg.line(px1 + 12, ly, px1 + 44, ly, stroke=color, stroke_width="2", stroke_dasharray=dash,
                 class_="legend-line", data_series=name)
        svg.marker(shape, px1 + 28, ly, color, "legend-marker")
        svg.text(px1 + 50, ly + 4, name, size=11, class_="legend")
        twin = seen.setdefault(tuple(p), name) if p else name
        if twin != name:  # drawn exactly on top of an earlier series: say so, the dashes alone are subtle
            svg.text(px1 + 50, ly + 15, f"(same as {twin})", size=9, fill="#555555", class_="legend-note",
                     data_series=name)
    return svg.render(width, height, title)


SERIES_STYLES = ((None, "circle"), ("7 4", "square"), ("2 3", "triangle"), ("9 3 2 3", "diamond"),
                 ("4 2", "cross"))
"""(stroke-dasharray, marker) per series, so lines that coincide stay distinguishable (all_gather and
reduce_scatter have the same bus bandwidth) and the chart reads in grey-scale too"""


# ---------------------------------------------------------------- every picture of a plan

def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "series"


def pictures(plan: ClusterPlan, busbw_series: dict[str, dict[str, list[tuple[float, float]]]] | None
             ) -> dict[str, str]:
    """Every picture of ``plan`` by file name (``topology.svg``, ..., ``busbw-<name>.svg`` per series;
    names slug-safe and unique), leaving out those with nothing to draw."""
    figures: list[tuple[str, str | None]] = [
        ("topology", topology_svg(plan)),
        ("rack-elevations", rack_elevations_svg(plan)),
        ("rack-power", rack_power_svg(plan)),
    ]
    used: set[str] = set()
    for name, series in (busbw_series or {}).items():
        stem = base = f"busbw-{_slug(name)}"
        k = 2
        while stem in used:
            stem, k = f"{base}-{k}", k + 1
        used.add(stem)
        shown = re.sub(r"\bgpus\b", "GPUs", name.replace("-", " "))
        title = f"{plan.name}: bus bandwidth, {shown}"
        figures.append((stem, busbw_svg(series, title)))
    return {f"{stem}.svg": svg for stem, svg in figures if svg is not None}

