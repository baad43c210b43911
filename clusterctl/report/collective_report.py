"""Report section: collective time and bus bandwidth versus message size on the planned interconnect."""

from __future__ import annotations

from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    SEND_RECV,
)
from clusterctl.perf.interconnect import (
    NIC_EFFICIENCY,
    NVLINK_RING_EFFICIENCY,
    NVLS_EFFICIENCY,
    Interconnect,
    collective,
    compute_group,
    fabric_has_sharp,
    interconnect_of,
    message_sizes,
    placement,
)
from clusterctl.report import domain_scaling
from clusterctl.report.section import ReportContext, Section, fmt, md_table

OPS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, SEND_RECV)
TABLE_SIZES = (1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 27, 1 << 30, 1 << 33)
"""sizes shown in the Markdown table (1 KiB ... 8 GiB); the JSON and the chart have every power of two"""


def size_label(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B" if n < 1024 else f"{n / 1024:g}K"


def groups_to_show(ic: Interconnect, gpus: int, ranks: int | None) -> list[tuple[str, int]]:
    """(label, ranks): one NVLink domain, two domains, the whole GPU group, or what the user asked."""
    out: list[tuple[str, int]] = []
    d = ic.gpus_per_domain
    if ranks:
        return [(f"{ranks:,} GPUs", min(ranks, gpus))]
    if d > 1:
        out.append((f"{d} GPUs (one NVLink domain)", min(d, gpus)))
    if gpus >= 2 * d:
        out.append((f"{2 * d} GPUs (two NVLink domains)", 2 * d))
    if gpus > 2 * d:
        out.append((f"{gpus:,} GPUs (all)", gpus))
    return out


CHART_MIN_BYTES = 1 << 10
"""the bus-bandwidth charts start at 1 KiB (below it every op is latency-bound and near zero)"""


def chart_series(section: Section) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """busbw (GB/s) per op and size for each group the section tabulates, keyed ``<ranks>-gpus``: the
    pictures are drawn from the section's own figures, not a second sweep."""
    if not section.data.get("available"):
        return {}
    return {f"{g['ranks']}-gpus": {op: [(p["bytes"], p["busbw_gb_per_s"]) for p in pts
                                        if p["bytes"] >= CHART_MIN_BYTES]
                                   for op, pts in g["ops"].items()}
            for g in section.data["groups"]}


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    group = compute_group(plan)
    ic = interconnect_of(plan, group)
    if group is None or ic is None:
        return Section("collectives", "Collectives", {"available": False},
                       "No GPU nodes with a network in this blueprint: no collectives to estimate.\n")
    ranks_opt = ctx.extra.get("ranks")
    nvls_eff = NVLS_EFFICIENCY.get(ic.generation, NVLS_EFFICIENCY["hopper"])
    shown = groups_to_show(ic, group.gpus, ranks_opt)
    sizes = message_sizes(8, 1 << 34)
    data_groups = []
    md = [
        f"Estimated for the **{group.name}** nodes ({group.gpus:,} GPUs): NVLink {fmt(ic.nvlink_gb_per_s)} GB/s per "
        f"GPU each way in domains of {ic.gpus_per_domain}, NVLS {'yes' if ic.nvls else 'no'}; "
        f"{fmt(ic.nics_per_domain)} × {fmt(ic.nic_gb_per_s * 8)} Gb/s NICs per domain ({ic.network}), fabric "
        f"oversubscription {fmt(ic.oversubscription)}:1.",
        "",
        *(["The catalog has no scale-up (NVLink) bandwidth for this accelerator: every GPU is taken as its own "
           "domain and reaches the others through the NICs, a pessimistic bound.", ""] if not ic.nvlink_gb_per_s
          else []),
        "Conventions are nccl-tests': `S` is the total message size, algbw = S / time, busbw = algbw × "
        "2(n−1)/n for AllReduce and × (n−1)/n for AllGather, ReduceScatter and AllToAll; GB = 10⁹ bytes. "
        f"Model: NCCL ring at {NVLINK_RING_EFFICIENCY:.0%} of NVLink, NVLS at {nvls_eff:.0%}, "
        f"{NIC_EFFICIENCY[ic.nic_kind]:.0%} of each NIC's line rate; NCCL 2.26.2's algorithms, protocols and "
        "latencies, the one its tuner picks per size (docs/report.md).",
        "",
    ]
    for label, n in shown:
        pl = placement(n, ic)
        sweep = {op: {s: collective(op, s, ic, pl) for s in sizes} for op in OPS}
        per_op = {op: [{"bytes": s, "time_us": round(est.time_s * 1e6, 3),
                        "algbw_gb_per_s": round(est.algbw_gb_per_s, 3),
                        "busbw_gb_per_s": round(est.busbw_gb_per_s, 3), "algorithm": algo}
                       for s, (est, algo) in points.items()]
                  for op, points in sweep.items()}
        rows = [[size_label(s)] + [f"{fmt(sweep[op][s][0].time_s * 1e6)} µs / {fmt(sweep[op][s][0].busbw_gb_per_s)}"
                                   for op in OPS]
                for s in TABLE_SIZES]
        big = sweep[ALL_REDUCE][1 << 33][0]
        per_nic = (big.busbw_gb_per_s / ic.nics_per_domain
                   if pl.domains > 1 and ic.nics_per_domain and pl.per_domain == ic.gpus_per_domain else None)
        data_groups.append({"label": label, "ranks": n, "domains": pl.domains, "per_domain": pl.per_domain,
                            "allreduce_8g_busbw_gb_per_s": round(big.busbw_gb_per_s, 3),
                            "allreduce_8g_busbw_per_nic_gb_per_s": round(per_nic, 3) if per_nic else None,
                            "ops": per_op})
        md.append(f"**{label}** — time / busbw (GB/s)")
        md.append("")
        md.append(md_table(["size", "AllReduce", "AllGather", "ReduceScatter", "AllToAll", "SendRecv"], rows,
                           "lrrrrr"))
        if per_nic:
            note = (" (on two domains NCCL's tree sends each byte across once, half a ring's bytes, so this can "
                    "exceed a NIC's line rate)" if pl.domains == 2 else "")
            md.append(f"Large AllReduce: {fmt(big.busbw_gb_per_s)} GB/s busbw, {fmt(per_nic)} GB/s per NIC{note}.\n")
    data = {
        "available": True,
        "group": group.name,
        "interconnect": {"gpus_per_domain": ic.gpus_per_domain, "nvlink_gb_per_s_one_way": ic.nvlink_gb_per_s,
                         "nvls": ic.nvls, "nics_per_domain": ic.nics_per_domain,
                         "nic_gb_per_s": ic.nic_gb_per_s, "network": ic.network,
                         "oversubscription": ic.oversubscription},
        "efficiencies": {"nvlink_ring": NVLINK_RING_EFFICIENCY, "nvls": nvls_eff,
                         "nic": NIC_EFFICIENCY[ic.nic_kind]},
        "groups": data_groups,
    }
    if ctx.extra.get("racks"):
        sharp = fabric_has_sharp(plan, group)
        scaling = domain_scaling.rows(ic, group.gpus, sharp)
        data["domain_scaling"] = scaling
        md.append(domain_scaling.markdown(scaling, ic, sharp))
    return Section("collectives", "Collectives", data, "\n".join(md) + "\n")
