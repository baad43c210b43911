"""The collectives section's ``--racks`` view: AllReduce bus bandwidth as one job spans more NVLink domains.

One row per domain count (1, 2, 4, 8, ... up to the GPU group's, and the group's own count): the busbw of an
all_reduce over every GPU of that many whole domains at a large and a mid size, the algorithm NCCL's tuner picks
(clusterctl/perf/nccl_algorithms.py), and, where the compute fabric has SHARP, the same with NCCL's CollNet plugin
on. Why the figure falls: docs/report.md, "Collectives", "Across NVLink domains".
"""

from __future__ import annotations

from dataclasses import replace

from clusterctl.perf.collectives import ALL_REDUCE
from clusterctl.perf.interconnect import Interconnect, collective, placement
from clusterctl.report.section import fmt, md_table

LARGE_BYTES = 1 << 33
"""8 GiB: the report's large size (nccl-tests ``-e 8G``)"""
MID_BYTES = 1 << 26
"""64 MiB: a mid size (a data-parallel bucket or a tensor-parallel activation)"""


def domain_counts(total: int) -> list[int]:
    """1, 2, 4, ... up to ``total`` domains, and ``total`` itself when it is no power of two."""
    out, d = [], 1
    while d <= total:
        out.append(d)
        d *= 2
    if out[-1] != total:
        out.append(total)
    return out


def rows(ic: Interconnect, gpus: int, sharp: bool) -> list[dict]:
    """The JSON rows of the view for a group of ``gpus`` GPUs on ``ic`` (``sharp``: add the SHARP column)."""
    g = ic.gpus_per_domain
    out = []
    for d in domain_counts(max(1, gpus // g)):
        ranks = d * g
        if ranks < 2:
            continue
        pl = placement(ranks, ic)
        large, algo = collective(ALL_REDUCE, LARGE_BYTES, ic, pl)
        mid, mid_algo = collective(ALL_REDUCE, MID_BYTES, ic, pl)
        row = {"domains": d, "gpus": ranks, "large_busbw_gb_per_s": round(large.busbw_gb_per_s, 3),
               "large_algorithm": algo, "mid_busbw_gb_per_s": round(mid.busbw_gb_per_s, 3),
               "mid_algorithm": mid_algo}
        if sharp:
            with_sharp, sharp_algo = collective(ALL_REDUCE, LARGE_BYTES, replace(ic, sharp=True), pl)
            row["large_busbw_sharp_gb_per_s"] = round(with_sharp.busbw_gb_per_s, 3)
            row["large_algorithm_sharp"] = sharp_algo
        out.append(row)
    return out


def markdown(data_rows: list[dict], ic: Interconnect, sharp: bool) -> str:
    headers = ["NVLink domains", "GPUs", "busbw 8 GiB (GB/s)", "algorithm", "busbw 64 MiB (GB/s)", "algorithm"]
    if sharp:
        headers += ["busbw 8 GiB with SHARP (GB/s)", "algorithm"]
    table = []
    for r in data_rows:
        cells = [r["domains"], r["gpus"], fmt(r["large_busbw_gb_per_s"]), r["large_algorithm"],
                 fmt(r["mid_busbw_gb_per_s"]), r["mid_algorithm"]]
        if sharp:
            cells += [fmt(r["large_busbw_sharp_gb_per_s"]), r["large_algorithm_sharp"]]
        table.append(cells)
    lines = [f"**AllReduce as a job spans more NVLink domains** ({ic.gpus_per_domain} GPUs each; every GPU of each "
             "domain in the job, NCCL's default algorithm for the size):", "",
             md_table(headers, table, "rrrlrl" + ("rl" if sharp else "")).rstrip("\n"), "",
             "Past one domain the traffic leaves through the NICs of a few GPUs per domain, and NCCL's double binary "
             "tree sends a domain's data once on two domains but twice on four or more: the bus bandwidth falls "
             "toward what those NICs carry (docs/report.md, \"Across NVLink domains\"). The 64 MiB figures are "
             "optimistic across domains: the model has no term for NCCL's pipeline filling."]
    if sharp:
        lines.append("")
        lines.append("SHARP reduces in the switch, so a domain sends its data once however many domains there are; "
                     "NCCL uses it only with its CollNet plugin and NCCL_COLLNET_ENABLE=1, which the rendered NCCL "
                     "environment leaves off.")
    return "\n".join(lines) + "\n"
