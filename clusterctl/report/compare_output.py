"""``clusterctl compare``'s three forms: a terminal table, Markdown and one SVG picture (the JSON is
:func:`clusterctl.compare.comparison` itself). The better value of a row is marked ``◀``; rows whose best two
overlap within their ranges say ``≈`` (indistinguishable); a cost that is a lower bound (unpriced items) says
``≥``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterctl.report.markdown import Markup, text
from clusterctl.report.section import fmt, md_table
from clusterctl.report.svg import Svg, fits, nice

BEST, SAME, AT_LEAST = "◀", "≈", "≥"
PICTURE_ROWS = ("tokens_per_s", "mfu", "train_days", "facility_kw", "capital", "usd_per_gpu_hour",
                "usd_per_million_tokens", "goodput")
"""the rows the picture draws, one panel each"""
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")


def _money(x: float) -> str:
    ax = abs(x)
    if ax >= 1e9:
        return f"${x / 1e9:.3g}B"
    if ax >= 1e6:
        return f"${x / 1e6:.3g}M"
    if ax >= 1e4:
        return f"${x / 1e3:.3g}k"
    return f"${fmt(x)}"


def cell(row: dict[str, Any], i: int) -> str:
    v = row["values"][i]
    if v is None:
        return "-"
    show = _money if row["unit"] == "USD" else (lambda x: fmt(x))
    s = (AT_LEAST + " " if v.get("lower_bound") else "") + show(v["value"])
    if show(v["low"]) != show(v["high"]):
        s += f" ({show(v['low'])}–{show(v['high'])})"
    if row["best"] == i:
        s += " " + BEST
    return s


def _label(row: dict[str, Any]) -> str:
    unit = f" ({row['unit']})" if row["unit"] and row["unit"] != "USD" else ""
    mark = f" {SAME}" if row["indistinguishable"] else ""
    return row["label"] + unit + mark


def _header_lines(d: dict[str, Any]) -> list[str]:
    lines = [f"WARNING {w}" for w in d["warnings"]]
    for des in d["designs"]:
        if des["cost_complete"] is False:
            lines.append(f"{des['name']}: cost figures are lower bounds ({len(des['unpriced'])} unpriced item(s): "
                         f"{', '.join(des['unpriced'][:6])}{', ...' if len(des['unpriced']) > 6 else ''})")
    return lines


def _legend() -> str:
    return (f"{BEST} better (ranges apart); {SAME} the best two overlap within their ranges (price ranges, the "
            f"training model's validated band): indistinguishable; {AT_LEAST} a lower bound (unpriced items)")


def to_text(d: dict[str, Any]) -> str:
    names = [x["name"] for x in d["designs"]]
    table = [["Figure", *names]] + [[_label(r), *(cell(r, i) for i in range(len(names)))] for r in d["rows"]]
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    out = _header_lines(d)
    for n, row in enumerate(table):
        out.append("  ".join(row[0].ljust(widths[0]) if c == 0 else row[c].rjust(widths[c])
                             for c in range(len(row))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    out.append(_legend())
    return "\n".join(out) + "\n"


def to_markdown(d: dict[str, Any], picture: str | None = None) -> str:
    names = [text(x["name"]).replace("|", "\\|") for x in d["designs"]]
    out = [f"# Designs compared: {', '.join(names)}\n\n"]
    out += [f"**{text(line)}**\n\n" if line.startswith("WARNING") else f"- {text(line)}\n"
            for line in _header_lines(d)]
    out.append("\n" + md_table(["Figure", *names], [[_label(r), *(Markup(cell(r, i).replace("$", "\\$"))
                                                                  for i in range(len(names)))]
                                                    for r in d["rows"]], "l" + "r" * len(names)))
    out.append(f"\n{text(_legend())}.\n")
    out.append("\nFiles: " + ", ".join(text(x["file"]) for x in d["designs"]) + "\n")
    if picture:
        out.append(f"\n![designs compared]({picture})\n")
    return "".join(out)


def to_svg(d: dict[str, Any]) -> str:
    """One panel per figure in PICTURE_ROWS: a bar per design, scaled to the panel's largest high, with its
    low-high range as a whisker and the better design's bar outlined."""
    names = [x["name"] for x in d["designs"]]
    panels = [r for r in d["rows"] if r["key"] in PICTURE_ROWS]
    svg = Svg()
    label_w, bar_w, bar_h, gap = 220.0, 380.0, 14.0, 4.0
    panel_h = len(names) * (bar_h + gap) + 26
    width = label_w + bar_w + 230
    svg.text(10, 22, "Designs compared (bars: value; whiskers: low-high; outline: better)", 13, font_weight="bold")
    for i, n in enumerate(names):
        svg.rect(10 + (i % 4) * 190, 28 + (i // 4) * 14, 10, 8, fill=COLORS[i % len(COLORS)])
        svg.text(24 + (i % 4) * 190, 36 + (i // 4) * 14, n if fits(n, 170, 10) else n[:26] + "…", 10)
    y = 50.0 + (len(names) - 1) // 4 * 14
    for line in _header_lines(d):
        chars = int((width - 20) / 6)
        svg.text(10, y, line if len(line) <= chars else line[:chars - 1] + "…", 10,
                 fill="#b00000" if line.startswith("WARNING") else "#555555")
        y += 14
    for r in panels:
        svg.text(10, y + 12, _label(r), 11, font_weight="bold")
        top = nice(max((v["high"] for v in r["values"] if v is not None), default=1.0))
        for i, v in enumerate(r["values"]):
            by = y + 18 + i * (bar_h + gap)
            svg.text(label_w - 6, by + bar_h - 3, names[i] if fits(names[i], label_w, 10) else names[i][:28] + "…",
                     10, anchor="end")
            if v is None:
                svg.text(label_w + 4, by + bar_h - 3, "not known", 10, fill="#777777")
                continue
            w = bar_w * v["value"] / top
            svg.rect(label_w, by, w, bar_h, fill=COLORS[i % len(COLORS)], fill_opacity="0.8",
                     stroke="#000000" if r["best"] == i else None, stroke_width="2" if r["best"] == i else None)
            if v["high"] > v["low"]:
                x1, x2 = label_w + bar_w * v["low"] / top, label_w + bar_w * v["high"] / top
                svg.line(x1, by + bar_h / 2, x2, by + bar_h / 2, stroke="#000000", stroke_width="1")
                svg.line(x1, by + 2, x1, by + bar_h - 2, stroke="#000000", stroke_width="1")
                svg.line(x2, by + 2, x2, by + bar_h - 2, stroke="#000000", stroke_width="1")
            svg.text(label_w + bar_w + 8, by + bar_h - 3, cell(r, i).replace(" " + BEST, ""), 10)
        y += panel_h
    return svg.render(width, y + 10, "clusterctl compare: " + ", ".join(names))


def write(d: dict[str, Any], out_dir: Path) -> list[str]:
    """compare.md, compare.json and compare.svg into ``out_dir``, atomically; the file names."""
    from clusterctl.report.forms import write_forms

    return write_forms("compare", d, to_markdown(d, "compare.svg"), to_svg(d), out_dir)
