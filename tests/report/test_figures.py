"""The report's pictures: valid SVG, the plan's real figures in them, PNG (byte-identical output across processes:
tests/report/test_report_cli.py::test_report_is_deterministic)."""

from __future__ import annotations

import itertools
import re
import struct
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from clusterctl.report.document import write_figures
from clusterctl.report.figures import (
    busbw_svg,
    rack_elevations_svg,
    rack_power_svg,
    topology_svg,
)
from clusterctl.report.png import svg_to_png
from tests.helpers import BLUEPRINTS, plan_of, shipped

NS = "{http://www.w3.org/2000/svg}"
U_PX = 10.0
ALL = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))
CLOUD = ("aws-p5", "gcp-a3-mega", "azure-nd-h100-v5", "lab-cloud")

_plans: dict = {}


def plan(name: str):
    if name not in _plans:
        _plans[name] = plan_of(shipped(name))
    return _plans[name]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    title = root.find(f"{NS}title")
    assert title is not None and title.text
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    return root


def classes(el: ET.Element) -> set[str]:
    return set((el.get("class") or "").split())


def find(root: ET.Element, tag: str, *cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}{tag}") if set(cls) <= classes(e)]


def texts(root: ET.Element) -> list[str]:
    return [e.text or "" for e in root.iter(f"{NS}text")]


def speed(gbps: float) -> str:
    return f"{gbps:g}G" if gbps >= 1 else f"{gbps * 1000:g}M"


# ---------------------------------------------------------------- every blueprint

@pytest.mark.parametrize("name", ALL)
def test_plan_figures_are_valid_svg_or_none(name):
    p = plan(name)
    figs = {"topology": topology_svg(p), "elevations": rack_elevations_svg(p), "power": rack_power_svg(p)}
    if name in CLOUD:
        assert figs == {"topology": None, "elevations": None, "power": None}
        return
    assert p.racks and any(f.tiers for f in p.fabrics)
    for svg in figs.values():
        root = parse(svg)
        assert sum(1 for _ in root.iter()) < 2000


def test_shipped_blueprints_include_the_cloud_ones():
    assert set(CLOUD) <= set(ALL) and len(ALL) >= 9


# ---------------------------------------------------------------- topology

def panel(root: ET.Element, fabric: str) -> ET.Element:
    (g,) = [g for g in find(root, "g", "fabric") if g.get("data-fabric") == fabric]
    return g


def test_topology_superpod_switch_boxes_and_link_labels():
    p = plan("dgx-h100-superpod-1su")
    root = parse(topology_svg(p))
    fabrics = [f for f in p.fabrics if f.tiers]
    assert [g.get("data-fabric") for g in find(root, "g", "fabric")] == [f.name for f in fabrics]
    ib = p.fabrics[0]
    assert ib.name == "ib"
    g = panel(root, "ib")
    leaf, spine = ib.tier("leaf"), ib.tier("spine")
    assert (leaf.count, spine.count) == (8, 4)
    leaves = find(g, "rect", "switch", "leaf")
    spines = find(g, "rect", "switch", "spine")
    assert len(leaves) == leaf.count and len(spines) == spine.count
    assert [r.get("data-name") for r in leaves] == [f"ib-leaf{k:02d}" for k in range(1, 9)]
    words = texts(g)
    for b in ib.links:
        assert f"{b.count:,} × {speed(b.gbps)}" in " ".join(words)
    assert f"{ib.nodes} nodes × {ib.rails} rails" in words
    # spines drawn above leaves, leaves above the node row
    node_y = float(find(g, "rect", "nodes")[0].get("y"))
    assert float(spines[0].get("y")) < float(leaves[0].get("y")) < node_y
    # the storage fabric's node links break out two per port: the cable count is shown too
    stor = p.fabrics[1]
    b = stor.links[0]
    assert b.breakout == 2
    assert f"{b.count:,} × {speed(b.gbps)} ({b.cables:,} cables)" in texts(panel(root, "stor"))


def test_topology_frontier_is_aggregated_and_small():
    p = plan("frontier-3tier-100k")
    svg = topology_svg(p)
    root = parse(svg)
    assert sum(1 for _ in root.iter()) < 2000
    assert len(svg) < 100_000
    for f in p.fabrics:
        g = panel(root, f.name)
        words = " ".join(texts(g))
        for t in f.tiers:
            assert f"{t.count:,} × {t.model}" in words
            boxes = find(g, "rect", "switch", t.role)
            if t.count > 32:
                assert len(boxes) == 1 and "aggregate" in classes(boxes[0])
                assert int(boxes[0].get("data-count")) == t.count
            else:
                assert len(boxes) == t.count
        for b in f.links:
            assert f"{b.count:,} × {speed(b.gbps)}" in words
    assert p.fabrics[0].tier("leaf").count > 1000  # really the big case


# ---------------------------------------------------------------- rack elevations

@pytest.mark.parametrize("name", ["lab-2node", "dgx-h100-superpod-1su", "gb200-nvl72-8rack"])
def test_rack_elevations_put_real_hosts_at_their_u(name):
    p = plan(name)
    assert len(p.racks) <= 24
    where = {}
    for g in p.groups:
        for host, r, u in zip(g.hosts, g.rack_index, g.u_bottom):
            where[host] = (p.racks[r].name, u, g.type.height_u, g.name)
    root = parse(rack_elevations_svg(p))
    drawings = find(root, "g", "rack-drawing")
    assert [d.get("data-rack") for d in drawings] == [r.name for r in p.racks]
    seen = []
    for d in drawings:
        frame = find(d, "rect", "rack")[0]
        top_u = int(d.get("data-top-u"))
        assert float(frame.get("height")) == pytest.approx(top_u * U_PX)
        bottom = float(frame.get("y")) + float(frame.get("height"))
        for n in find(d, "rect", "node"):
            host = n.get("data-host")
            rack, u, h, group = where[host]
            assert (rack, int(n.get("data-u")), int(n.get("data-height-u")), n.get("data-group")) == \
                (d.get("data-rack"), u, h, group)
            # geometry: the block's lower edge sits (u - 1) units above the rack floor, h units tall
            y, hh = float(n.get("y")), float(n.get("height"))
            assert y + hh + 0.5 == pytest.approx(bottom - (u - 1) * U_PX, abs=0.06)
            assert hh + 1 == pytest.approx(h * U_PX, abs=0.06)
            seen.append(host)
        # every node is labelled with its hostname (they all fit at 10 px per U)
        labels = [t.text for t in find(d, "text", "node-label")]
        assert sorted(labels) == sorted(n.get("data-host") for n in find(d, "rect", "node"))
    assert sorted(seen) == sorted(where)  # every placed host drawn exactly once
    # switches have no planned U: they are drawn, flagged as assumed, and the figure says so
    assumed = find(root, "rect", "switch", "assumed")
    n_switch = sum(i.count for r in p.racks for i in r.items if i.label in p.catalog.switches)
    assert len(assumed) == n_switch
    assert any("positions assumed" in t for t in texts(root))


def test_rack_elevations_nodes_and_assumed_blocks_never_overlap():
    p = plan("dgx-h100-superpod-4su")
    root = parse(rack_elevations_svg(p))
    for d in find(root, "g", "rack-drawing"):
        used = Counter()
        for r in find(d, "rect", "node") + find(d, "rect", "assumed"):
            u, h = int(r.get("data-u")), int(r.get("data-height-u"))
            used.update(range(u, u + h))
        assert used and max(used.values()) == 1


def test_rack_elevations_many_racks_draws_one_per_kind():
    p = plan("hgx-h200-roce-1024")
    assert len(p.racks) > 24
    root = parse(rack_elevations_svg(p))
    drawings = find(root, "g", "rack-drawing")
    assert 1 < len(drawings) <= 24
    total = 0
    for cap in find(root, "text", "rack-caption"):
        m = re.search(r"\((\d[\d,]*) racks like this\)", cap.text)
        total += int(m.group(1).replace(",", "")) if m else 1
    assert total == len(p.racks)
    compute = Counter(r.profile_name for r in p.racks)["hgx"]
    assert any(f"({compute} racks like this)" in t for t in texts(root))
    # capped: fewer drawings than kinds, and a note says how many were left out
    root2 = parse(rack_elevations_svg(p, max_racks=2))
    assert len(find(root2, "g", "rack-drawing")) == 2
    m = re.search(r"(\d+) more kinds of rack not drawn", " ".join(texts(root2)))
    assert m and int(m.group(1)) == len(drawings) - 2


def test_rack_elevations_frontier_is_bounded():
    p = plan("frontier-3tier-100k")
    root = parse(rack_elevations_svg(p))
    assert len(find(root, "g", "rack-drawing")) <= 24
    assert sum(1 for _ in root.iter()) < 2000


# ---------------------------------------------------------------- rack power

def test_rack_power_one_bar_per_rack_with_real_kw():
    p = plan("dgx-h100-superpod-1su")
    root = parse(rack_power_svg(p))
    bars = find(root, "g", "bar")
    assert len(bars) == len(p.racks) == 12
    for bar, rack in zip(bars, p.racks):
        assert bar.get("data-racks") == rack.name
        assert float(bar.get("data-kw")) == pytest.approx(rack.power_kw, abs=5e-4)
        assert float(bar.get("data-budget-kw")) == pytest.approx(p.rack_profile(rack).power_kw)
        assert "over-budget" not in classes(bar)
        assert len(find(bar, "line", "budget")) == 1


def test_rack_power_marks_over_budget_racks():
    data = shipped("dgx-h100-superpod-1su")
    data["rack_profiles"]["dgx"]["power_kw"] = 30  # four DGX H100 draw ~41 kW
    p = plan_of(data)
    root = parse(rack_power_svg(p))
    over = {b.get("data-racks") for b in find(root, "g", "bar", "over-budget")}
    expected = {r.name for r in p.racks if r.power_kw > p.rack_profile(r).power_kw}
    assert over == expected == {f"r{k:02d}" for k in range(1, 9)}


def test_rack_power_stacks_liquid_and_air():
    p = plan("gb200-nvl72-8rack")
    root = parse(rack_power_svg(p))
    bar = find(root, "g", "bar")[0]
    rack = p.racks[0]
    assert rack.liquid_heat_kw > 0 and rack.air_heat_kw > 0
    assert float(bar.get("data-liquid-kw")) == pytest.approx(rack.liquid_heat_kw, abs=5e-4)
    fills = [r for r in bar.iter(f"{NS}rect") if r.get("fill") != "none"]
    assert len(fills) == 2
    total = sum(float(r.get("height")) for r in fills)
    assert float(fills[0].get("height")) / total == pytest.approx(rack.liquid_heat_kw / rack.power_kw, abs=0.01)


def test_rack_power_groups_identical_racks_beyond_max_bars():
    p = plan("frontier-3tier-100k")
    root = parse(rack_power_svg(p))
    bars = find(root, "g", "bar")
    kinds = {(r.profile_name, round(r.power_kw, 3)) for r in p.racks}
    assert len(bars) == len(kinds) <= 64
    assert sum(int(b.get("data-count")) for b in bars) == len(p.racks)
    small = plan("dgx-h100-superpod-1su")
    grouped = find(parse(rack_power_svg(small, max_bars=4)), "g", "bar")
    assert [b.get("data-racks") for b in grouped] == ["r[01-08]", "ib[01-02]", "mgmt01", "mgmt02"]


# ---------------------------------------------------------------- bus bandwidth

SERIES = {
    "ring <8 GPUs>": [(2.0 ** k, min(390.0, 2.0 ** k / 2e6)) for k in range(3, 34)],
    "tree & NVLS": [(2.0 ** k, min(450.0, 2.0 ** k / 1e6)) for k in range(30, 9, -1)],  # descending input
}


def test_busbw_points_axis_and_legend():
    root = parse(busbw_svg(SERIES, "AllReduce, 64 GPUs"))
    lines = find(root, "polyline", "series")
    assert [p.get("data-series") for p in lines] == list(SERIES)
    for poly, (name, pts) in zip(lines, SERIES.items()):
        xy = [tuple(map(float, p.split(","))) for p in poly.get("points").split()]
        assert len(xy) == len(pts)
        xs = [x for x, _ in xy]
        assert xs == sorted(xs) and len(set(xs)) == len(xs)
        # equal steps in log2(size) are equal steps in x
        steps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
        assert max(steps) - min(steps) <= 0.11
        # higher bandwidth is drawn higher up
        best = max(range(len(pts)), key=lambda i: sorted(pts)[i][1])
        assert min(y for _, y in xy) == xy[best][1]
    legend = [t.text for t in find(root, "text", "legend")]
    assert legend == list(SERIES)
    words = texts(root)
    ticks = {t.text: float(t.get("data-x")) for t in find(root, "text", "x-tick")}
    assert {"1 KiB", "1 MiB", "1 GiB"} <= set(ticks)
    first = [tuple(map(float, p.split(","))) for p in lines[0].get("points").split()]
    assert first[10 - 3][0] == ticks["1 KiB"] and first[30 - 3][0] == ticks["1 GiB"]  # 2^10 and 2^30 bytes
    assert "bus bandwidth (GB/s)" in words and any("message size" in w for w in words)


def test_busbw_rejects_non_positive_sizes_and_handles_empty():
    with pytest.raises(ValueError):
        busbw_svg({"x": [(0, 1.0)]}, "t")
    root = parse(busbw_svg({}, "nothing"))
    assert "no data" in texts(root)


# ---------------------------------------------------------------- PNG, files (determinism: test_report_cli.py)

def png_size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


def test_svg_to_png():
    svg = rack_power_svg(plan("lab-2node"))
    one, two = svg_to_png(svg), svg_to_png(svg, scale=2.0)
    assert one.startswith(b"\x89PNG") and two.startswith(b"\x89PNG")
    root = ET.fromstring(svg)
    assert png_size(one) == (int(root.get("width")), int(root.get("height")))
    assert png_size(two) == (2 * int(root.get("width")), 2 * int(root.get("height")))


def test_svg_to_png_without_cairosvg(monkeypatch):
    monkeypatch.setitem(sys.modules, "cairosvg", None)
    with pytest.raises(RuntimeError, match=r"pip install 'clusterctl\[png\]'"):
        svg_to_png(busbw_svg(SERIES, "t"))


def test_write_figures(tmp_path):
    p = plan("dgx-h100-superpod-1su")
    series = {"AllReduce 256 GPUs": SERIES, "all_gather/NVLink": {"a": [(8.0, 0.1), (16.0, 0.2)]}}
    written = write_figures(p, series, tmp_path / "svg", png=False)
    assert written == ["busbw-all-gather-nvlink.svg", "busbw-allreduce-256-gpus.svg", "rack-elevations.svg",
                       "rack-power.svg", "topology.svg"]
    assert sorted(f.name for f in (tmp_path / "svg").iterdir()) == written
    for f in written:
        parse((tmp_path / "svg" / f).read_text(encoding="utf-8"))
    assert (tmp_path / "svg" / "topology.svg").read_text(encoding="utf-8") == topology_svg(p)
    with_png = write_figures(p, None, tmp_path / "png", png=True)
    assert with_png == ["rack-elevations.png", "rack-elevations.svg", "rack-power.png", "rack-power.svg",
                        "topology.png", "topology.svg"]
    assert (tmp_path / "png" / "topology.png").read_bytes().startswith(b"\x89PNG")


def test_write_figures_cloud_blueprint_skips_rack_figures(tmp_path):
    written = write_figures(plan("aws-p5"), {"x": {"s": [(8.0, 1.0)]}}, tmp_path, png=False)
    assert written == ["busbw-x.svg"]


# ---------------------------------------------------------------- what a reviewer reads off the pictures

def test_busbw_coinciding_series_stay_distinguishable():
    """all_gather and reduce_scatter have the same bus bandwidth: each series has its own dash pattern and
    marker shape, the legend shows both, and a series drawn on top of another says so."""
    same = [(2.0 ** k, min(300.0, 2.0 ** k / 1e6)) for k in range(10, 31)]
    series = {"all_reduce": [(s, 1.2 * b) for s, b in same], "all_gather": same, "reduce_scatter": list(same),
              "all_to_all": [(s, b / 2) for s, b in same], "send_recv": [(s, b / 3) for s, b in same]}
    root = parse(busbw_svg(series, "t"))
    lines = find(root, "polyline", "series")
    styles = [(p.get("stroke-dasharray"), p.get("data-marker")) for p in lines]
    assert len(set(styles)) == len(series)
    assert len({d for d, _ in styles}) == len(series)  # dash patterns alone tell them apart
    legend_lines = find(root, "line", "legend-line")
    assert [(e.get("data-series"), e.get("stroke-dasharray")) for e in legend_lines] == \
        [(p.get("data-series"), p.get("stroke-dasharray")) for p in lines]
    assert [e.get("data-shape") for e in root.iter() if "legend-marker" in classes(e)] == \
        [m for _, m in styles]
    assert [t.text for t in find(root, "text", "legend")] == list(series)
    notes = find(root, "text", "legend-note")
    assert [(n.get("data-series"), n.text) for n in notes] == [("reduce_scatter", "(same as all_gather)")]


def test_topology_labels_follow_the_topology():
    """Only a rail-optimized fabric has rails; a ratio below 1:1 is shown as non-blocking."""
    p = plan("gb200-nvl72-8rack")
    root = parse(topology_svg(p))
    for fab in p.fabrics:
        if not fab.tiers:
            continue
        words = texts(panel(root, fab.name))
        node_row = [w for w in words if w.startswith(f"{fab.nodes:,} node")]
        if fab.rail_optimized:
            assert node_row == [f"{fab.nodes:,} nodes × {fab.rails} rails"]
        else:
            assert node_row and "rail" not in node_row[0], node_row
        sub = next(w for w in words if "switch" in w)
        if fab.oversubscription_achieved < 1:
            assert "non-blocking" in sub and "oversubscription" not in sub
        assert not re.search(r"\b1 switches|\b1 tiers", sub)


def test_busbw_axis_top_is_close_to_the_peak():
    """A 480 GB/s peak gets a 600 GB/s axis (ticks of 120), not 1,000 with half the chart empty."""
    root = parse(busbw_svg({"all_reduce": [(2.0 ** k, min(480.0, 2.0 ** k / 1e6)) for k in range(10, 34)]}, "t"))
    assert "600" in texts(root) and "1,000" not in texts(root)


def test_one_rack_elevation_is_wide_enough_for_its_title_and_note():
    """lab-ha has one rack: the picture is widened so the title and the 'positions assumed' note are not cut."""
    root = parse(rack_elevations_svg(plan("lab-ha")))
    width = float(root.get("width"))
    note = find(root, "text", "note")[0].text
    assert width >= 20 + len(note) * 10 * 0.6
    assert width >= 20 + len("Rack elevations: lab-ha") * 16 * 0.6
