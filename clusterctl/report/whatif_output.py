"""``clusterctl whatif``'s forms: a terminal summary, Markdown, and one SVG failure-domain picture (the JSON is the
analysis itself). A sweep (``--each``) ranks its single failures by the GPUs they take out of service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterctl.report.markdown import text
from clusterctl.report.section import fmt, md_table
from clusterctl.report.svg import Svg, nice
from clusterctl.report.whatif_storage import storage_lines

WHATIF_FORMAT = 1
"""version of the JSON's shape"""
TOP = 20
"""rows of a sweep the terminal and Markdown show (the JSON has every one)"""


def rank_key(r: dict[str, Any]) -> tuple:
    """worst first: GPUs out of service, then GPUs degraded, then the bisection left, then the storage bandwidth
    left, then the name"""
    return (-r["gpus_out"], -r["gpus_degraded"], min(r["bisection_left"].values(), default=1.0),
            min(r.get("storage_left", {}).values(), default=1.0), r["name"])


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{fmt(100 * x)} %"


def row(r: dict[str, Any]) -> list[Any]:
    notes = [n for n, on in (("all Slurm controllers", r["all_controllers_down"]),
                             ("accounting", r["accounting_down"])) if on]
    return [r["kind"], r["name"], r["gpus_out"], r["gpus_degraded"],
            ", ".join(f"{f} {_pct(x)}" for f, x in r["bisection_left"].items()) or "all 100 %",
            _pct(r["training_left"]), r["largest_nvlink_domain"], r["largest_scalable_unit"] or "-",
            "; ".join(notes) or "-",
            ", ".join(f"{t} {_pct(x)}" for t, x in r.get("storage_left", {}).items()) or "-"]


HEADERS = ["Kind", "Component", "GPUs out", "GPUs degraded", "Bisection left", "Training throughput left",
           "Largest intact NVLink domain", "Largest intact SU", "Slurm services down", "Storage left"]


def _tokens(a: dict[str, Any]) -> str:
    t = a.get("training")
    if not t:
        return "-"
    return _pct(t["after_tokens_per_s"] / t["tokens_per_s"] if t["tokens_per_s"] else 0.0)


def detail_lines(a: dict[str, Any]) -> list[str]:
    """The figures of one analysis, a line each."""
    g, d = a["gpus"], a["drain"]
    out = [f"failed: {x['kind']} {x['name']}: {x['effect']} (blueprint: {x['blueprint']})" for x in a["failed"]]
    out.append(f"GPUs: {g['total']:,} in all; lost {g['lost']:,}, isolated {g['isolated']:,} (every compute port on "
               f"a failed leaf), degraded {g['degraded']:,} (a rail short); usable {g['usable']:,} "
               f"({fmt(100 * g['share_lost'])} % out of service)")
    out.append(f"Slurm: drain {d['nodes']:,} node(s) {d['hostlist'] or '-'}; NVLink domains broken: "
               f"{', '.join(d['nvlink_domains']) or 'none'}; scalable units broken: "
               f"{', '.join(d['scalable_units']) or 'none'}")
    if a["degraded"]["nodes"]:
        out.append(f"degraded nodes {a['degraded']['hostlist']}: {fmt(100 * a['degraded']['network_share_left'])} % "
                   "of their scale-out bandwidth")
    lj = a["largest_job_gpus"]
    out.append(f"largest job: {lj['nvlink_domain']:,} GPUs in one NVLink domain, "
               f"{lj['scalable_unit'] if lj['scalable_unit'] is not None else '-'} in one intact scalable unit, "
               f"{lj['cluster']:,} on the GPUs left")
    for b in a["bisection"]:
        if b["share_left"] < 1:
            out.append(f"bisection {b['fabric']}: {fmt(b['healthy_gbps'])} -> {fmt(b['after_gbps'])} Gb/s "
                       f"({fmt(100 * b['share_left'])} %)")
    for c in a["collectives"]:
        if c["factor"] < 1:
            out.append(f"all_reduce {c['ranks']:,} GPUs, {c['bytes']:,} B: busbw {fmt(c['healthy_busbw_gb_per_s'])} -> "
                       f"{fmt(c['spanning_degraded_busbw_gb_per_s'])} GB/s for a job spanning a degraded node")
    out += storage_lines(a.get("storage", []))
    t = a.get("training")
    if t:
        out.append(f"training: {t['tokens_per_s']:,.0f} -> {t['after_tokens_per_s']:,.0f} tokens/s "
                   f"({_tokens(a)}); {t['basis']}")
    s = a["slurm"]
    if s["controllers_down"] or s["accounting_down"]:
        out.append(f"Slurm services: controllers down {', '.join(s['controllers_down']) or 'none'}"
                   f"{' (ALL of them)' if s['all_controllers_down'] else ''}; accounting down "
                   f"{', '.join(s['accounting_down']) or 'none'}")
    for n in a["nvlink_trays_down"]:
        out.append(f"NVLink: {n['trays']} of {n['of']} switch trays down in {n['rack']}: its GPUs keep "
                   f"{fmt(100 * n['nvlink_share_left'])} % of their NVLink bandwidth")
    return out


def to_text(d: dict[str, Any]) -> str:
    if d["mode"] == "fail":
        return "\n".join(detail_lines(d["analysis"])) + "\n"
    rows = [row(a) for a in d["ranked"][:TOP]]
    table = [HEADERS] + [[f"{c:,}" if isinstance(c, int) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    out = [f"{d['cluster']}: {len(d['ranked']):,} single failures of {', '.join(d['kinds'])}, worst first"
           + (f" (the first {TOP})" if len(d["ranked"]) > TOP else "")]
    for n, r in enumerate(table):
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def to_markdown(d: dict[str, Any], picture: str | None = None) -> str:
    out = [f"# What if: {text(d['cluster'])}\n\n"]
    if d["mode"] == "fail":
        out += [f"- {text(line)}\n" for line in detail_lines(d["analysis"])]
    else:
        out.append(f"{len(d['ranked']):,} single failures of {', '.join(d['kinds'])}, worst first"
                   + (f" (the first {TOP}; whatif.json has every one)" if len(d["ranked"]) > TOP else "") + ".\n\n")
        out.append(md_table(HEADERS, [row(a) for a in d["ranked"][:TOP]], "llrrllrrll"))
    if picture:
        out.append(f"\n![failure domains]({picture})\n")
    return "".join(out)


def to_svg(d: dict[str, Any]) -> str:
    """Each failure (the worst 30 of a sweep) as a bar of GPUs out of service (dark) and degraded (light) on a
    scale of the whole cluster, with the training throughput left at its end."""
    if d["mode"] == "fail":
        a = d["analysis"]
        g = a["gpus"]
        bars = [(", ".join(f"{x['kind']} {x['name']}" for x in a["failed"]), g["lost"] + g["isolated"],
                 g["degraded"], _tokens(a))]
        total = g["total"]
    else:
        bars = [(f"{r['kind']} {r['name']}", r["gpus_out"], r["gpus_degraded"], _pct(r["training_left"]))
                for r in d["ranked"][:30]]
        total = d["gpus"]
    svg = Svg()
    label_w, bar_w, bar_h, gap = 230.0, 420.0, 14.0, 5.0
    svg.text(10, 22, f"What if: {d['cluster']} - GPUs out of service (dark) and degraded (light), of {total:,}",
             13, font_weight="bold")
    top = nice(total)
    y = 40.0
    for name, out, degraded, training in bars:
        svg.text(label_w - 6, y + bar_h - 3, name if len(name) <= 36 else name[:35] + "…", 10, anchor="end")
        svg.rect(label_w, y, bar_w, bar_h, fill="#eeeeee")
        svg.rect(label_w, y, bar_w * out / top, bar_h, fill="#b22222")
        svg.rect(label_w + bar_w * out / top, y, bar_w * degraded / top, bar_h, fill="#f4a582")
        svg.text(label_w + bar_w + 8, y + bar_h - 3, f"{out:,} out, {degraded:,} degraded; training {training}", 10)
        y += bar_h + gap
    return svg.render(label_w + bar_w + 260, y + 10, f"clusterctl whatif: {d['cluster']}")


def write(d: dict[str, Any], out_dir: Path) -> list[str]:
    """whatif.md, whatif.json and whatif.svg into ``out_dir``, atomically; the file names."""
    from clusterctl.report.forms import write_forms

    return write_forms("whatif", d, to_markdown(d, "whatif.svg"), to_svg(d), out_dir)
