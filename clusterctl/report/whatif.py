"""What if: the figures of a plan with some components failed (``clusterctl whatif``, docs/whatif.md).

The failures' direct effects are clusterctl/plan/failure_domains.py's; this module turns them into the figures
that change, against the healthy report (its JSON: capacity, collectives, training, power):

* **GPUs**: lost (host without power or cooling), isolated (every compute port of the host is on failed
  leaves: it cannot join a multi-node job), degraded (some of its compute rails lost);
* **Slurm**: the nodes to drain (lost, isolated, degraded: a job on a node short of a rail runs every
  collective at that node's bandwidth), the NVLink domains and scalable units (topology blocks) they break;
* **largest job** that still fits in one intact NVLink domain and in one intact scalable unit (its leaves
  non-blocking), and on the GPUs left;
* **bisection** per fabric: ``min(E, U_leaf, U_spine) / 2`` (docs/report.md) with the failed leaves' node
  links and uplinks, the failed spines' and cores' links taken out;
* **all_reduce bus bandwidth** of the report's multi-node job sizes at the largest message: a job that spans a
  degraded node moves its inter-node share at that node's remaining rails (NCCL spreads a node's rings over
  its NICs: one NIC of eight gone leaves 7/8); one inside an NVLink domain is unchanged;
* **training**: the blueprint's job drains the nodes above and keeps its model-parallel group (tp x pp x cp):
  data-parallel replicas ``min(dp, usable GPUs // group)``, tokens/s in proportion (each replica's step time
  unchanged, the global batch smaller); an NVLink tray down slows the rack's NVLink traffic, not shown in
  tokens/s (said);
* **storage**: a tier's bandwidth with building blocks down, and the checkpoint's write time
  (report/whatif_storage.py); a tier the job reads from or checkpoints to that stops serving stops the job;
* **power** and **cooling**: a feed's remaining capacity against the rack's planning maximum; the CDUs left on a
  loop against its heat (capacity and flow).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterctl import hostlist
from clusterctl.plan.failure_domains import DomainIndex, Effect
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.nvlink import nvlink_domains
from clusterctl.plan.roles import slurm_roles
from clusterctl.blueprint.load import format_path
from clusterctl.report.capacity import bisection
from clusterctl.report.training_report import gpus_used_of, tokens_per_s_of
from clusterctl.report.whatif_storage import stopped_by_storage, storage_after


@dataclass
class Healthy:
    """The healthy cluster's figures every failure is compared with, computed once."""

    plan: ClusterPlan
    report: dict[str, Any]
    gpus: int = 0
    host_gpus: dict[str, int] = field(default_factory=dict)
    host_domain: dict[str, str] = field(default_factory=dict)
    domain_gpus: dict[str, int] = field(default_factory=dict)
    host_su: dict[str, tuple[str, int]] = field(default_factory=dict)
    su_gpus: dict[tuple[str, int], int] = field(default_factory=dict)
    compute_ports: dict[str, dict[str, int]] = field(default_factory=dict)
    """compute fabric name -> host -> its ports on it"""
    bisection_gbps: dict[int, float] = field(default_factory=dict)
    """fabric index -> healthy bisection"""
    roles: Any = None
    """the Slurm host roles (controllers, accounting)"""
    domains_by_size: list[tuple[int, str]] = field(default_factory=list)
    sus_by_size: list[tuple[int, tuple[str, int]]] = field(default_factory=list)
    hosts_by_size: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def of(cls, plan: ClusterPlan, report: dict[str, Any]) -> "Healthy":
        h = cls(plan, report)
        h.bisection_gbps = {fp.index: bisection(fp)["bisection_gbps"] for fp in plan.fabrics}
        h.roles = slurm_roles(plan)
        for g in plan.groups:
            for host in g.hosts:
                h.host_gpus[host] = g.type.gpus
            h.gpus += g.gpus
        for name, g, hosts in nvlink_domains(plan):
            h.domain_gpus[name] = len(hosts) * g.type.gpus
            for host in hosts:
                h.host_domain[host] = name
        for fp in plan.fabrics:
            if not any(role == "compute" for _, role in fp.attached):
                continue
            per_group = {}
            for gi, role in dict.fromkeys(fp.attached):
                if role == "compute":
                    per_group[gi] = per_group.get(gi, 0) + plan.groups[gi].type.nic_count(role)
            h.compute_ports[fp.name] = {host: n for gi, n in per_group.items() if n for host in plan.groups[gi].hosts}
            for su in fp.sus:
                key = (fp.name, su.index)
                hosts = hostlist.expand(su.hostlist)
                h.su_gpus[key] = sum(h.host_gpus.get(x, 0) for x in hosts)
                for x in hosts:
                    h.host_su.setdefault(x, key)
        h.domains_by_size = sorted(((g, d) for d, g in h.domain_gpus.items()), key=lambda x: (-x[0], x[1]))
        h.hosts_by_size = sorted(((g, x) for x, g in h.host_gpus.items() if g), key=lambda x: (-x[0], x[1]))
        h.sus_by_size = sorted(((g, s) for s, g in h.su_gpus.items()), key=lambda x: (-x[0], x[1]))
        return h


def _union(effects: list[Effect]) -> tuple[set[str], set[str], dict[int, int]]:
    hosts, switches, trays = set(), set(), {}
    for e in effects:
        hosts.update(e.hosts_down)
        switches.update(e.switches_down)
        for r, n in e.nvlink_trays:
            trays[r] = trays.get(r, 0) + n
    return hosts, switches, trays


def analyse(ix: DomainIndex, healthy: Healthy, effects: list[Effect]) -> dict[str, Any]:
    """The figures of the plan with every component of ``effects`` failed at once."""
    plan = ix.plan
    down, switches, trays = _union(effects)
    ports_lost: dict[str, dict[str, int]] = {}
    for s in sorted(switches):
        fi, role = ix.switch_kind[s]
        fp = plan.fabrics[fi]
        if role == "leaf" and fp.name in healthy.compute_ports:
            for host, _ in ix.leaf_ports.get(s, []):
                if host not in down:
                    ports_lost.setdefault(fp.name, {})
                    ports_lost[fp.name][host] = ports_lost[fp.name].get(host, 0) + 1
    isolated, degraded, rails_left = set(), set(), 1.0
    for fname, lost in ports_lost.items():
        for host, n in lost.items():
            total = healthy.compute_ports[fname][host]
            if n >= total:
                isolated.add(host)
            else:
                degraded.add(host)
                rails_left = min(rails_left, (total - n) / total)
    degraded -= isolated
    drain = down | isolated
    gpus = {k: sum(healthy.host_gpus[h] for h in hs) for k, hs in
            (("lost", down), ("isolated", isolated), ("degraded", degraded))}
    broken_domains = sorted({healthy.host_domain[h] for h in drain if h in healthy.host_domain} |
                            _tray_domains(healthy, ix, trays))
    broken_sus = sorted({healthy.host_su[h] for h in drain if h in healthy.host_su})
    roles = healthy.roles
    storage = storage_after(plan, healthy.report, effects)
    out = {
        "failed": [{"kind": e.component.kind, "name": e.component.name, "effect": e.note,
                    "blueprint": format_path(e.component.path), **({"power": e.power} if e.power else {}),
                    **({"cooling": e.cooling} if e.cooling else {})}
                   for e in effects],
        "gpus": {"total": healthy.gpus, **gpus, "usable": healthy.gpus - gpus["lost"] - gpus["isolated"],
                 "share_lost": _share(gpus["lost"] + gpus["isolated"], healthy.gpus)},
        "drain": {"nodes": len(drain), "hostlist": hostlist.compress(sorted(drain)) if drain else "",
                  "nvlink_domains": broken_domains, "scalable_units": [f"{f} su{i}" for f, i in broken_sus]},
        "degraded": {"nodes": len(degraded), "hostlist": hostlist.compress(sorted(degraded)) if degraded else "",
                     "network_share_left": round(rails_left, 6) if degraded else 1.0},
        "largest_job_gpus": _largest(healthy, drain, broken_domains, broken_sus),
        "bisection": _bisection(plan, ix, healthy, switches),
        "collectives": _collectives(healthy.report, rails_left if degraded else 1.0),
        "storage": storage,
        "training": _training(healthy, drain, rails_left if degraded else 1.0, bool(trays),
                              stopped_by_storage(storage)),
        "slurm": {"controllers_down": [c for c in roles.controllers if c in down],
                  "all_controllers_down": bool(roles.controllers) and all(c in down for c in roles.controllers),
                  "accounting_down": [a for a in roles.accounting if a in down]},
        "nvlink_trays_down": [{"rack": plan.racks[r].name, "trays": n, "of": plan.racks[r].system.nvlink_switch_trays,
                               "nvlink_share_left": round(1 - n / plan.racks[r].system.nvlink_switch_trays, 6)}
                              for r, n in sorted(trays.items())],
        "switches_down": len(switches),
    }
    return out


def _share(x: float, total: float) -> float:
    return round(x / total, 6) if total else 0.0


def _tray_domains(healthy: Healthy, ix: DomainIndex, trays: dict[int, int]) -> set[str]:
    return {healthy.host_domain[h] for r in trays for h in ix.hosts_by_rack.get(r, []) if h in healthy.host_domain}


def _largest(healthy: Healthy, drain: set[str], domains: list[str], sus: list[tuple[str, int]]) -> dict[str, Any]:
    broken_d, broken_s = set(domains), set(sus)
    if healthy.domain_gpus:
        nvl = next((g for g, d in healthy.domains_by_size if d not in broken_d), 0)
    else:  # one NVLink domain per node (8-GPU baseboards)
        nvl = next((g for g, h in healthy.hosts_by_size if h not in drain), 0)
    su = next((g for g, s in healthy.sus_by_size if s not in broken_s), None)
    return {"nvlink_domain": nvl, "scalable_unit": su,
            "cluster": healthy.gpus - sum(healthy.host_gpus[h] for h in drain)}


def _bisection(plan: ClusterPlan, ix: DomainIndex, hl: Healthy, switches: set[str]) -> list[dict[str, Any]]:
    """Per fabric: bisection healthy and with the failed switches' links out of E, U_leaf and U_spine."""
    out = []
    for fp in plan.fabrics:
        healthy = hl.bisection_gbps[fp.index]
        failed = {role: 0 for role in ("leaf", "spine", "core")}
        for s in switches:
            fi, role = ix.switch_kind[s]
            if fi == fp.index:
                failed[role] += 1
        if not any(failed.values()):
            out.append({"fabric": fp.name, "healthy_gbps": healthy, "after_gbps": healthy, "share_left": 1.0})
            continue
        b = {(x.a, x.b): x for x in fp.links}
        node, up1, up2 = b.get(("node", "leaf")), b.get(("leaf", "spine")), b.get(("spine", "core"))
        leaf, spine, core = fp.tier("leaf"), fp.tier("spine"), fp.tier("core")
        lost_node = sum(len(ix.leaf_ports.get(s, [])) for s in switches if ix.switch_kind[s] == (fp.index, "leaf"))
        e = (node.count - lost_node) * node.gbps if node else 0.0
        terms = [e]
        if up1 is not None:
            per_leaf = up1.count / leaf.count
            per_spine_down = up1.count / spine.count
            both = failed["leaf"] * failed["spine"] * up1.count / (leaf.count * spine.count)  # counted twice above
            terms.append(max(0.0, up1.count - failed["leaf"] * per_leaf - failed["spine"] * per_spine_down + both)
                         * up1.gbps)
        if up2 is not None:
            per_spine_up = up2.count / spine.count
            per_core = up2.count / core.count
            both = failed["spine"] * failed["core"] * up2.count / (spine.count * core.count)
            terms.append(max(0.0, up2.count - failed["spine"] * per_spine_up - failed["core"] * per_core + both)
                         * up2.gbps)
        after = min(terms) / 2 if up1 is not None else healthy * (e / (node.count * node.gbps) if node else 0)
        out.append({"fabric": fp.name, "healthy_gbps": healthy, "after_gbps": round(after, 6),
                    "share_left": _share(after, healthy) if healthy else 1.0,
                    "switches_down": {k: v for k, v in failed.items() if v}})
    return out


def _collectives(report: dict[str, Any], factor: float) -> list[dict[str, Any]]:
    """The report's multi-node all_reduce job sizes at their largest message: busbw healthy and for a job that
    spans a degraded node (its inter-node share at ``factor``)."""
    col = report.get("collectives") or {}
    rows = []
    for grp in col.get("groups", []):
        ops = grp.get("ops", {}).get("all_reduce") or []
        if grp.get("domains", 1) <= 1 or not ops:
            continue
        top = ops[-1]
        rows.append({"ranks": grp["ranks"], "bytes": top["bytes"], "healthy_busbw_gb_per_s": top["busbw_gb_per_s"],
                     "spanning_degraded_busbw_gb_per_s": round(top["busbw_gb_per_s"] * factor, 3),
                     "factor": round(factor, 6)})
    return rows


NETWORK_PARTS = ("pp communication", "dp communication (exposed)", "cp communication", "ep communication")
"""the step-time parts (training breakdown) that cross the scale-out network: slowed by a rail lost"""


def _training(healthy: Healthy, drain: set[str], network_left: float, trays: bool,
              stopped: str | None = None) -> dict[str, Any] | None:
    """The blueprint's job after the failures: the drained nodes' replicas gone, and a job on degraded nodes
    (some rails lost) with its scale-out communication at ``network_left`` of its bandwidth."""
    tr = healthy.report.get("training") or {}
    if not tr.get("available"):
        return None
    tps, used = tokens_per_s_of(tr), gpus_used_of(tr)
    if stopped:
        return {"tokens_per_s": tps, "after_tokens_per_s": 0.0, "gpus_used": used, "after_gpus_used": 0,
                "basis": stopped}
    layout = tr.get("layout")
    usable = healthy.gpus - sum(healthy.host_gpus[h] for h in drain)
    if layout is None:
        kept = min(used, usable)
        return {"tokens_per_s": tps, "after_tokens_per_s": tps * kept / used if used else 0.0,
                "gpus_used": used, "after_gpus_used": kept,
                "basis": "simple form: throughput in proportion to the GPUs left; rails lost not modelled"}
    group = layout["tp"] * layout["pp"] * layout["cp"]
    dp = layout["dp"]
    dp_after = min(dp, usable // group)
    step = tr["step_s"]
    slow = sum(tr["breakdown_s"].get(k, 0.0) for k in NETWORK_PARTS) * (1 / network_left - 1) if network_left < 1 \
        else 0.0
    after = tps * dp_after / dp * step / (step + slow)
    basis = (f"the job keeps tp x pp x cp = {group} GPUs per replica and runs {dp_after} of its {dp} data-parallel "
             "replicas on the GPUs left (drained nodes excluded)")
    if slow:
        basis += (f"; on nodes short of a rail its pipeline, data- and expert-parallel traffic runs at "
                  f"{network_left:.3g} of its bandwidth: step {step:.3f} s -> {step + slow:.3f} s")
    if trays:
        basis += "; NVLink switch trays down slow the racks' NVLink traffic, which this figure does not include"
    return {"tokens_per_s": tps, "after_tokens_per_s": after, "gpus_used": used, "after_gpus_used": dp_after * group,
            "model_parallel_gpus": group, "dp": dp, "after_dp": dp_after, "step_s": step,
            "after_step_s": step + slow, "basis": basis}


def whatif(plan: ClusterPlan, report: dict[str, Any], fail: list[str] | None = None,
           each: list[str] | None = None) -> dict[str, Any]:
    """``fail``: component names failed together; ``each``: kinds whose every component is failed alone, in turn
    (ranked worst first). The plan is indexed once; no failure plans anything again."""
    from clusterctl.plan.failure_domains import all_components, components, effect
    from clusterctl.report.whatif_output import WHATIF_FORMAT, rank_key

    ix = DomainIndex.of(plan)
    healthy = Healthy.of(plan, report)
    out: dict[str, Any] = {"whatif_format": WHATIF_FORMAT, "cluster": plan.name}
    if fail:
        known = all_components(plan)
        together = frozenset(fail)
        out |= {"mode": "fail", "analysis": analyse(ix, healthy, [effect(ix, known[n], together) for n in fail])}
        return out
    ranked = [summary(analyse(ix, healthy, [effect(ix, c)])) for kind in each or [] for c in components(plan, kind)]
    ranked.sort(key=rank_key)
    return out | {"mode": "each", "kinds": list(each or []), "gpus": healthy.gpus, "ranked": ranked}


def summary(a: dict[str, Any]) -> dict[str, Any]:
    """One single failure's row of a sweep: what it takes out, what it degrades, what is left."""
    f, g, t = a["failed"][0], a["gpus"], a.get("training")
    return {"kind": f["kind"], "name": f["name"], "blueprint": f["blueprint"], "effect": f["effect"],
            "gpus_out": g["lost"] + g["isolated"], "gpus_degraded": g["degraded"], "share_out": g["share_lost"],
            "drain_nodes": a["drain"]["nodes"],
            "bisection_left": {b["fabric"]: b["share_left"] for b in a["bisection"] if b["share_left"] < 1},
            "training_left": round(t["after_tokens_per_s"] / t["tokens_per_s"], 6) if t and t["tokens_per_s"] else None,
            "largest_nvlink_domain": a["largest_job_gpus"]["nvlink_domain"],
            "largest_scalable_unit": a["largest_job_gpus"]["scalable_unit"],
            "all_controllers_down": a["slurm"]["all_controllers_down"],
            "accounting_down": bool(a["slurm"]["accounting_down"]),
            "storage_left": {s["tier"]: s["share_left"] for s in a["storage"]},
            **({"checkpoint_write_s": c["after_write_s"]} if (c := next(
                (s["checkpoint"] for s in a["storage"] if "checkpoint" in s), None)) else {}),
            **{k: f[k] for k in ("power", "cooling") if k in f}}
