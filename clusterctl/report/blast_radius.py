"""The report's "Blast radius" section (``clusterctl report --whatif``): every component of the design failed alone,
the worst of each kind, and the single points of failure (docs/whatif.md).

The single points of failure are rule BLAST001's (plan/failure_domains.py ``single_points``): a component whose
failure takes more than ``validation.max_blast_radius`` of the GPUs out of service (a rack's own not counted), or,
where the blueprint has a backup, every Slurm controller or slurmdbd host, or StateSaveLocation's server; each is
listed with what it takes, its effect and the blueprint place to change.
"""

from __future__ import annotations

from typing import Any

from clusterctl.plan.failure_domains import KINDS, single_points
from clusterctl.plan.model import ClusterPlan
from clusterctl.report.markdown import text
from clusterctl.report.section import Section, fmt, md_table
from clusterctl.report.whatif import whatif
from clusterctl.report.whatif_output import HEADERS, row

KEY = "blast_radius"
TITLE = "Blast radius"


def build(plan: ClusterPlan, report: dict[str, Any]) -> Section:
    sweep = whatif(plan, report, each=list(KINDS))
    kinds = [k for k in KINDS if any(r["kind"] == k for r in sweep["ranked"])]
    limit = plan.max_blast_radius
    worst = [next(r for r in sweep["ranked"] if r["kind"] == k) for k in kinds]
    rows = {r["name"]: r for r in sweep["ranked"]}
    spof = [{"kind": sp.component.kind, "name": sp.component.name, "takes": list(sp.takes), "gpus_out": sp.gpus_out,
             "effect": rows[sp.component.name]["effect"], "blueprint": rows[sp.component.name]["blueprint"]}
            for sp in single_points(plan)]
    data = {"max_blast_radius": limit, "failures": len(sweep["ranked"]),
            "components": {k: sum(1 for r in sweep["ranked"] if r["kind"] == k) for k in kinds},
            "worst_by_kind": worst, "single_points_of_failure": spof}
    return Section(KEY, TITLE, data, _markdown(data))


def _markdown(d: dict[str, Any]) -> str:
    out = [f"Every component failed alone ({d['failures']:,} failures: "
           + ", ".join(f"{n:,} {k}" for k, n in d["components"].items())
           + "); how: docs/whatif.md. The worst of each kind:\n\n",
           md_table(HEADERS, [row(r) for r in d["worst_by_kind"]], "llrrllrrll")]
    spof = d["single_points_of_failure"]
    if not spof:
        out.append(f"\nNo single component takes more than {fmt(100 * d['max_blast_radius'])} % of the GPUs out of "
                   "service (a rack's own not counted), every Slurm controller or slurmdbd host of an HA pair, or "
                   "StateSaveLocation's server (rule BLAST001).\n")
        return "".join(out)
    out.append(f"\n**Single points of failure** ({len(spof):,}, rule BLAST001): more than "
               f"{fmt(100 * d['max_blast_radius'])} % of the GPUs out of service (`validation.max_blast_radius`; a "
               "rack's own not counted), or every Slurm controller or slurmdbd host of an HA pair, or "
               "StateSaveLocation's server, with the blueprint place to change:\n\n")
    for r in spof[:50]:
        out.append(f"- {r['kind']} {text(r['name'])} takes {text('; '.join(r['takes']))}: {text(r['effect'])} "
                   f"(blueprint: {text(r['blueprint'])})\n")
    if len(spof) > 50:
        out.append(f"- ... and {len(spof) - 50:,} more (report.json has every one)\n")
    return "".join(out)
