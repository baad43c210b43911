"""Capacity: GPUs and nodes, peak FLOPS, HBM, injection and bisection bandwidth, NVLink domains.

Every figure is computed from the plan's groups, node types, tiers and link bundles (never per host), so
the section takes milliseconds on a 200,000-GPU plan.

Formulas
--------
* **Peak dense BF16 / FP8** = GPUs x the catalog's per-GPU dense figure
  (``accelerators.<model>.bf16_dense_tflops`` / ``fp8_dense_tflops``), summed over accelerator models;
  PFLOP/s = TFLOP/s / 1000. No sparsity, clocks or utilisation: the ceiling MFU is measured against.
  FP8 is ``null`` ("n/a") when a model in the cluster has no FP8 figure in the catalog.
* **HBM** = GPUs x ``hbm_gb`` / 1000 (TB); **HBM bandwidth** = GPUs x ``hbm_tb_per_s`` (TB/s).
* **Injection per node** = sum over the node's NICs of one role of ports x port speed
  (``nics.<model>.speed_gbps``; for a cloud instance its ``network.total_gbps`` over its ``gpu_nics``);
  GB/s = Gb/s / 8. The cluster total is that times the nodes, counting only NICs cabled to a fabric (each
  row names the fabrics; cloud instances: their instance network).
* **Bisection bandwidth** of a fat-tree fabric, one direction across a balanced cut::

      bisection = min(E, U_leaf, U_spine) / 2

  ``E``: endpoint bandwidth = node-leaf links x link speed (node ports and extra endpoints as planned);
  ``U_leaf``: all leaf-to-spine links x their speed; ``U_spine``: all spine-to-core links x their speed
  (three tiers only). Half of the endpoints sit on each side of a balanced cut; what they send to the
  other half crosses at most half of the leaf uplinks and, with three tiers, half of the spine uplinks, so
  the smallest of the three capacities halves to the bisection. An oversubscribed leaf (2:1) shows up as
  ``U_leaf = E / 2``. **One tier**: a single switch gives min(E, native ports x native speed) / 2; several
  leaves with no tier above are not connected to each other, so the bisection is 0. Rail-optimized fabrics
  use the same formula (it counts links, not which leaf a NIC lands on).
  **Bisection per GPU** = bisection / GPUs on the nodes cabled to the fabric.
* **NVLink domains** = GPUs of a group / the group's ``nvlink_domain_gpus`` (the group's value, else the
  server's), rounded up; scale-up bandwidth per GPU is ``accelerators.<model>.scaleup_gb_per_s``.

Cloud instances: injection comes from the instance type's network; the provider does not publish the
bisection bandwidth of its network, so none is reported.
"""

from __future__ import annotations

import math
from typing import Any

from clusterctl.plan.model import ClusterPlan, FabricPlan, NodeTypePlan
from clusterctl.report.markdown import Markup, text
from clusterctl.report.section import ReportContext, Section, fmt, md_table

KEY = "capacity"
TITLE = "Capacity"
ROLES = ("compute", "storage", "inband", "bmc", "mgmt")
NO_SOURCE = "blueprint catalog entry (no source given)"
CLOUD_BISECTION = "not published by the provider"


# --- shared by the capacity, power and bom sections ---------------------------------------------------

class Sources:
    """Numbered references for a section's Markdown: ``[1]`` next to a figure, the list at the end."""

    def __init__(self) -> None:
        self._refs: dict[str, tuple[int, str]] = {}

    def ref(self, key: str | None, source: str | None) -> str:
        if not key:
            return ""
        if key not in self._refs:
            self._refs[key] = (len(self._refs) + 1, source or NO_SOURCE)
        return Markup(f"[{self._refs[key][0]}]")

    def refs(self, pairs: list[tuple[str, str | None]]) -> str:
        return Markup(" ".join(r for r in (self.ref(k, s) for k, s in pairs) if r))

    def markdown(self) -> str:
        if not self._refs:
            return ""
        lines = ["Sources:", ""]
        lines += [f"{n}. `{key}`: {text(source)}" for key, (n, source) in self._refs.items()]
        return "\n".join(lines) + "\n"


def catalog_source(plan: ClusterPlan, section: str, name: str, field: str) -> str:
    """The ``sources`` line of a catalog entry's figure (or what is known about its origin)."""
    entry = plan.catalog.section(section).get(name)
    text = entry.sources.get(field) if entry is not None else None
    if text:
        return text
    if plan.catalog.origin.get((section, name)) == "blueprint":
        return NO_SOURCE
    return "no source line for this figure in the catalog entry"


def server_ref(plan: ClusterPlan, nt: NodeTypePlan, field: str) -> tuple[str, str]:
    """(catalog key, source) of a figure of a node type's server (catalog entry or inline ``spec:``)."""
    if nt.server_name is not None and plan.catalog.servers.get(nt.server_name) is nt.server:
        return f"servers.{nt.server_name}.{field}", catalog_source(plan, "servers", nt.server_name, field)
    return f"node_types.{nt.name}.spec.{field}", "blueprint (server described inline with spec:)"


def gpu_models(plan: ClusterPlan) -> dict[str, int]:
    """Accelerator model -> GPUs, in blueprint order."""
    out: dict[str, int] = {}
    for g in plan.groups:
        if g.gpus and g.type.gpu_model:
            out[g.type.gpu_model] = out.get(g.type.gpu_model, 0) + g.gpus
    return out


def model_figure(plan: ClusterPlan, field: str, unit: str, scale: float = 1.0) -> dict[str, Any]:
    """GPUs x the catalog's per-GPU ``field`` / ``scale``, per accelerator model and in total.

    ``value`` is ``None`` when some model has no such figure (``missing`` names them)."""
    by_model, missing = [], []
    for model, gpus in gpu_models(plan).items():
        acc = plan.catalog.accelerators.get(model)
        per = getattr(acc, field) if acc is not None else None
        if per is None:
            missing.append(model)
            continue
        by_model.append({"model": model, "gpus": gpus, "per_gpu": per, "value": gpus * per / scale,
                         "catalog": f"accelerators.{model}.{field}",
                         "source": catalog_source(plan, "accelerators", model, field)})
    value = None if missing or not by_model else sum(m["value"] for m in by_model)
    one = by_model[0] if len(by_model) == 1 and not missing else None
    return {
        "value": value,
        "unit": unit,
        "catalog": one["catalog"] if one else ", ".join(m["catalog"] for m in by_model) or None,
        "per_gpu": one["per_gpu"] if one else None,
        "source": one["source"] if one else (" | ".join(m["source"] for m in by_model) or None),
        "by_model": by_model,
        "missing": missing,
    }


def figure_refs(src: Sources, fig: dict[str, Any]) -> str:
    return src.refs([(m["catalog"], m["source"]) for m in fig.get("by_model", [])])


def value_text(fig: dict[str, Any], digits: int = 5) -> str:
    return "n/a" if fig["value"] is None else fmt(fig["value"], digits)


def ratio_text(x: float) -> str:
    return f"{fmt(x)}:1"


# --- injection -------------------------------------------------------------------------------------

def _node_types_in_use(plan: ClusterPlan) -> dict[str, int]:
    nodes: dict[str, int] = {}
    for g in plan.groups:
        nodes[g.type.name] = nodes.get(g.type.name, 0) + g.count
    return nodes


def _hardware(nt: NodeTypePlan) -> str:
    return f"instance {nt.instance_name}" if nt.instance is not None else f"server {nt.server_name}"


def injection_rows(plan: ClusterPlan) -> list[dict[str, Any]]:
    rows = []
    for name, nodes in _node_types_in_use(plan).items():
        nt = plan.node_types[name]
        for role in ROLES:
            nics = nt.nics_of(role)
            if not nics:
                continue
            gbps = sum(n.count * n.speed_gbps for n in nics)
            if nt.instance is not None:
                refs = [(f"instances.{nt.instance_name}.network.total_gbps",
                         catalog_source(plan, "instances", nt.instance_name, "network.total_gbps"))]
                desc = f"{nt.instance.network.gpu_nics} x {nt.instance.network.fabric}"
            else:
                refs = [(f"nics.{n.model}.speed_gbps", catalog_source(plan, "nics", n.model, "speed_gbps"))
                        for n in nics]
                desc = " + ".join(f"{n.count} x {n.model} ({fmt(n.speed_gbps)}G)" for n in nics)
            rows.append({"node_type": name, "hardware": _hardware(nt), "role": role, "ports": desc,
                         "gbps_per_node": gbps, "gb_per_s_per_node": gbps / 8, "nodes": nodes,
                         "total_gbps": gbps * nodes, "catalog": [k for k, _ in refs],
                         "source": [s for _, s in refs], "cabled_to": cabled_to(plan, name, role)})
    return rows


def cabled_to(plan: ClusterPlan, node_type: str, role: str) -> list[str]:
    """Fabrics the ``role`` NICs of ``node_type``'s groups are cabled to (cloud: the instance network; in-band NICs
    when no fabric models the in-band network: that network); empty: attached to no fabric, injecting nothing."""
    groups = [g for g in plan.groups if g.type.name == node_type]
    if plan.node_types[node_type].instance is not None:
        return ["instance network"]
    names = [f.name for f in plan.fabrics_on(role, *groups)] if groups else []
    if not names and role == "inband" and not plan.fabrics_on("inband"):
        return ["in-band network (no fabric models it)"]
    return names


# --- bisection ---------------------------------------------------------------------------------------

def fabric_gpus(plan: ClusterPlan, fp: FabricPlan) -> int:
    """GPUs on the nodes whose NICs are cabled to ``fp``."""
    members = {gi for gi, role in fp.attached if plan.groups[gi].type.nics_of(role)}
    return sum(plan.groups[gi].gpus for gi in sorted(members))


def bisection(fp: FabricPlan) -> dict[str, Any]:
    """min(E, U_leaf, U_spine) / 2 from the fabric's link bundles (see the module docstring)."""
    bundles = {(b.a, b.b): b for b in fp.links}
    node = bundles.get(("node", "leaf"))
    up1 = bundles.get(("leaf", "spine"))
    up2 = bundles.get(("spine", "core"))
    e = node.count * node.gbps if node else 0.0
    u1 = up1.count * up1.gbps if up1 else None
    u2 = up2.count * up2.gbps if up2 else None
    leaf = fp.tier("leaf")
    switch_cap = None
    if up1 is None:
        if leaf is not None and leaf.count > 1:
            return {"endpoint_gbps": e, "leaf_up_gbps": None, "spine_up_gbps": None, "switch_gbps": None,
                    "bisection_gbps": 0.0, "limited_by": "leaves not connected (one tier, several leaves)"}
        switch_cap = leaf.native_ports * leaf.native_gbps if leaf is not None else 0.0
        terms = [("endpoints", e), ("switch ports", switch_cap)]
    else:
        terms = [("endpoints", e), ("leaf uplinks", u1)]
        if u2 is not None:
            terms.append(("spine uplinks", u2))
    low = min(v for _, v in terms)
    limited = [n for n, v in terms if math.isclose(v, low)]
    return {"endpoint_gbps": e, "leaf_up_gbps": u1, "spine_up_gbps": u2, "switch_gbps": switch_cap,
            "bisection_gbps": low / 2, "limited_by": " = ".join(limited)}


def fabric_rows(plan: ClusterPlan) -> list[dict[str, Any]]:
    rows = []
    for fp in plan.fabrics:
        b = bisection(fp)
        gpus = fabric_gpus(plan, fp)
        rows.append({
            "name": fp.name, "kind": fp.kind, "tiers": fp.tiers_declared, "rail_optimized": fp.rail_optimized,
            "nic_roles": list(dict.fromkeys(role for _, role in fp.attached)),
            "nodes": fp.nodes, "endpoints": fp.endpoints, "gpus": gpus, "link_gbps": fp.nic_gbps,
            "switches": [{"role": t.role, "model": t.model, "count": t.count} for t in fp.tiers],
            "oversubscription_declared": fp.oversubscription_declared,
            "oversubscription_achieved": fp.oversubscription_achieved,
            **b,
            "bisection_tbps": b["bisection_gbps"] / 1000,
            "bisection_per_gpu_gbps": b["bisection_gbps"] / gpus if gpus else None,
        })
    return rows


def cloud_rows(plan: ClusterPlan) -> list[dict[str, Any]]:
    rows = []
    for g in plan.groups:
        inst = g.type.instance
        if inst is None or not inst.network.gpu_nics:
            continue
        net = inst.network
        rows.append({"group": g.name, "instance": g.type.instance_name, "provider": inst.provider,
                     "fabric": net.fabric, "nodes": g.count, "gpu_nics": net.gpu_nics,
                     "gbps_per_node": net.total_gbps, "total_gbps": net.total_gbps * g.count,
                     "bisection_gbps": None, "note": f"bisection {CLOUD_BISECTION}",
                     "catalog": f"instances.{g.type.instance_name}.network.total_gbps",
                     "source": catalog_source(plan, "instances", g.type.instance_name, "network.total_gbps")})
    return rows


# --- NVLink ----------------------------------------------------------------------------------------

def nvlink_rows(plan: ClusterPlan) -> list[dict[str, Any]]:
    rows = []
    for g in plan.groups:
        nt = g.type
        if not g.gpus:
            continue
        domain = g.nvlink_domain_gpus
        if plan.group_spec(g).nvlink_domain_gpus is not None:
            dkey, dsrc = f"node_groups[{g.index}].nvlink_domain_gpus", "blueprint (node group)"
        elif nt.instance is not None:
            dkey = f"instances.{nt.instance_name}.gpus"
            dsrc = catalog_source(plan, "instances", nt.instance_name, "gpus")
        else:
            dkey, dsrc = server_ref(plan, nt, "nvlink_domain_gpus")
        acc = nt.accelerator
        per = acc.scaleup_gb_per_s if acc is not None else None
        rows.append({
            "group": g.name, "gpu_model": nt.gpu_model, "nodes": g.count, "gpus_per_node": nt.gpus,
            "gpus": g.gpus, "domain_gpus": domain,
            "domains": -(-g.gpus // domain) if domain else None,
            "partial_domain": bool(domain) and g.gpus % domain != 0,
            "domain_catalog": dkey if domain else None, "domain_source": dsrc if domain else None,
            "scaleup_gb_per_s_per_gpu": per,
            "scaleup_catalog": f"accelerators.{nt.gpu_model}.scaleup_gb_per_s" if per else None,
            "scaleup_source": catalog_source(plan, "accelerators", nt.gpu_model, "scaleup_gb_per_s") if per else None,
            "domain_gb_per_s": per * domain if per and domain else None,
        })
    return rows


# --- the section -----------------------------------------------------------------------------------

def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    models = gpu_models(plan)
    bf16 = model_figure(plan, "bf16_dense_tflops", "PFLOP/s", 1000)
    fp8 = model_figure(plan, "fp8_dense_tflops", "PFLOP/s", 1000)
    hbm = model_figure(plan, "hbm_gb", "TB", 1000)
    hbm_bw = model_figure(plan, "hbm_tb_per_s", "TB/s")
    inj = injection_rows(plan)
    totals: dict[str, float] = {}
    for r in inj:  # NICs cabled to no fabric inject nothing
        totals[r["role"]] = totals.get(r["role"], 0.0) + (r["total_gbps"] if r["cabled_to"] else 0.0)
    gpus = plan.gpus
    compute_total = totals.get("compute", 0.0)
    fabrics = fabric_rows(plan)
    clouds = cloud_rows(plan)
    nvl = nvlink_rows(plan)

    groups = [{"name": g.name, "role": g.role, "node_type": g.type.name, "hardware": _hardware(g.type),
               "nodes": g.count, "gpus_per_node": g.type.gpus, "gpus": g.gpus, "gpu_model": g.type.gpu_model}
              for g in plan.groups]
    accelerators = []
    for model, n in models.items():
        acc = plan.catalog.accelerators.get(model)
        accelerators.append({"model": model, "gpus": n, "description": acc.description if acc else None,
                             "nodes": sum(g.count for g in plan.groups if g.gpus and g.type.gpu_model == model)})

    data: dict[str, Any] = {
        "gpus": gpus,
        "nodes": plan.nodes,
        "accelerators": accelerators,
        "groups": groups,
        "peak_bf16": bf16,
        "peak_fp8": fp8,
        "hbm": hbm,
        "hbm_bandwidth": hbm_bw,
        "injection": {
            "per_node_type": inj,
            "total_gbps_by_role": {role: totals[role] for role in ROLES if role in totals},
            "compute_total_gbps": compute_total,
            "compute_total_gb_per_s": compute_total / 8,
            "compute_gbps_per_gpu": compute_total / gpus if gpus else None,
        },
        "bisection_formula": "min(endpoint bw, leaf uplink bw, spine uplink bw [3 tiers]) / 2; "
                             "one switch: min(endpoint bw, switch ports x speed) / 2",
        "fabrics": fabrics,
        "cloud_networks": clouds,
        "nvlink": {
            "groups": nvl,
            "domains": sum(r["domains"] or 0 for r in nvl),
        },
    }
    return Section(KEY, TITLE, data, _markdown(plan, data))


def _headline_rows(d: dict[str, Any], src: Sources) -> list[list[Any]]:
    """GPUs, nodes, peak compute and HBM (with their sources), injection, bisection per compute fabric,
    NVLink domains"""
    inj = d["injection"]
    rows: list[list[Any]] = [
        ["GPUs", d["gpus"], "", ""],
        ["Nodes", d["nodes"], "", ""],
    ]
    for label, fig in (("Peak dense BF16", d["peak_bf16"]), ("Peak dense FP8", d["peak_fp8"]),
                       ("HBM capacity", d["hbm"]), ("HBM bandwidth (aggregate)", d["hbm_bandwidth"])):
        if d["gpus"]:
            note = figure_refs(src, fig)
            if fig["missing"]:
                note = (note + " " if note else "") + f"(no catalog figure for {', '.join(fig['missing'])})"
            rows.append([label, value_text(fig), fig["unit"], note])
    if inj["compute_total_gbps"]:
        rows.append(["Compute injection (all nodes)", fmt(inj["compute_total_gbps"] / 1000, 5), "Tb/s", ""])
        rows.append(["Compute injection per GPU", fmt(inj["compute_gbps_per_gpu"] or 0, 4), "Gb/s", ""])
    for f in (f for f in d["fabrics"] if f["gpus"] and "compute" in f["nic_roles"]):
        rows.append([f"Bisection, fabric {f['name']}", fmt(f["bisection_tbps"], 5), "Tb/s", ""])
        if f["bisection_per_gpu_gbps"] is not None:
            rows.append([f"Bisection per GPU, fabric {f['name']}", fmt(f["bisection_per_gpu_gbps"], 4), "Gb/s", ""])
    if d["nvlink"]["domains"]:
        rows.append(["NVLink domains", d["nvlink"]["domains"], "", ""])
    return rows


def _bisection_markdown(fabrics: list[dict[str, Any]]) -> str:
    """the table of fabrics with their bisection bandwidth, and how it is computed"""
    frows = []
    for f in fabrics:
        sw = ", ".join(f"{s['count']:,} {s['role']} {s['model']}" for s in f["switches"])
        frows.append([
            f["name"], f"{f['kind']}, {f['tiers']} tier{'s' if f['tiers'] > 1 else ''}"
            + (", rail-optimized" if f["rail_optimized"] else ""),
            sw, f["endpoints"], fmt(f["endpoint_gbps"] / 1000, 5),
            fmt(f["leaf_up_gbps"] / 1000, 5) if f["leaf_up_gbps"] is not None else "-",
            fmt(f["spine_up_gbps"] / 1000, 5) if f["spine_up_gbps"] is not None else "-",
            f"{ratio_text(f['oversubscription_declared'])} / {ratio_text(f['oversubscription_achieved'])}",
            fmt(f["bisection_tbps"], 5),
            fmt(f["bisection_per_gpu_gbps"], 4) if f["bisection_per_gpu_gbps"] is not None else "-",
            f["limited_by"]])
    table = md_table(["Fabric", "Kind", "Switches", "Endpoints", "Endpoint Tb/s", "Leaf up Tb/s", "Spine up Tb/s",
                      "Oversub. declared / planned", "Bisection Tb/s", "Per GPU Gb/s", "Limited by"],
                     frows, "lllrrrrlrrl")
    return ("\n**Bisection bandwidth per fabric**\n\n" + table
            + "\nBisection = min(E, U_leaf, U_spine) / 2, one direction across a balanced cut: E is the "
            "endpoints' link bandwidth (node-leaf links x speed), U_leaf all leaf-to-spine links x speed, "
            "U_spine all spine-to-core links x speed (three tiers only). A single switch gives "
            "min(E, ports x speed) / 2; unconnected leaves give 0. Per GPU: bisection / GPUs on the "
            "fabric's nodes.\n")


def _markdown(plan: ClusterPlan, d: dict[str, Any]) -> str:
    src = Sources()
    out: list[str] = []
    models = ", ".join(f"{a['gpus']:,} x {a['model']}" for a in d["accelerators"]) or "no GPUs"
    out.append(f"**{d['gpus']:,} GPUs** ({models}) in **{d['nodes']:,} nodes**.\n\n")

    inj = d["injection"]
    out.append(md_table(["Figure", "Value", "Unit", "Source"], _headline_rows(d, src), "lrll"))
    out.append("\nPeak figures are GPUs x the catalog's per-GPU dense (non-sparse) figure: a ceiling, not a "
               "measured rate.\n")

    out.append("\n**Node groups**\n\n")
    out.append(md_table(["Group", "Role", "Hardware", "Nodes", "GPUs/node", "GPUs", "Accelerator"],
                        [[g["name"], g["role"], g["hardware"], g["nodes"], g["gpus_per_node"], g["gpus"],
                          g["gpu_model"] or "-"] for g in d["groups"]], "lllrrrl"))

    if inj["per_node_type"]:
        out.append("\n**Injection bandwidth per node** (NIC ports x speed; NICs cabled to no fabric inject "
                   "nothing and are left out of the totals)\n\n")
        out.append(md_table(
            ["Node type", "Role", "Ports", "Cabled to", "Gb/s per node", "GB/s per node", "Nodes", "Total Tb/s",
             "Source"],
            [[r["node_type"], r["role"], r["ports"], ", ".join(r["cabled_to"]) or Markup("**no fabric**"),
              fmt(r["gbps_per_node"], 4), fmt(r["gb_per_s_per_node"], 4),
              r["nodes"], fmt(r["total_gbps"] / 1000, 5), src.refs(list(zip(r["catalog"], r["source"])))]
             for r in inj["per_node_type"]], "llllrrrrl"))

    if d["fabrics"]:
        out.append(_bisection_markdown(d["fabrics"]))

    if d["cloud_networks"]:
        out.append("\n**Cloud accelerator networks**\n\n")
        out.append(md_table(["Group", "Instance", "Network", "Nodes", "Gb/s per node", "Total Tb/s", "Bisection",
                             "Source"],
                            [[c["group"], c["instance"], f"{c['gpu_nics']} x {c['fabric']}", c["nodes"],
                              fmt(c["gbps_per_node"], 4), fmt(c["total_gbps"] / 1000, 5), CLOUD_BISECTION,
                              src.ref(c["catalog"], c["source"])] for c in d["cloud_networks"]], "lllrrrll"))

    if d["nvlink"]["groups"]:
        out.append("\n**NVLink / scale-up domains**\n\n")
        out.append(md_table(
            ["Group", "Accelerator", "GPUs", "GPUs per domain", "Domains", "Scale-up GB/s per GPU",
             "Domain GB/s", "Source"],
            [[r["group"], r["gpu_model"], r["gpus"], r["domain_gpus"] or "-",
              (f"{r['domains']:,}" + (" (last partial)" if r["partial_domain"] else "")) if r["domains"] else "-",
              fmt(r["scaleup_gb_per_s_per_gpu"], 4) if r["scaleup_gb_per_s_per_gpu"] else "n/a",
              fmt(r["domain_gb_per_s"], 5) if r["domain_gb_per_s"] else "-",
              src.refs([(r["domain_catalog"], r["domain_source"]), (r["scaleup_catalog"], r["scaleup_source"])])]
             for r in d["nvlink"]["groups"]], "llrrrrrl"))

    notes = src.markdown()
    if notes:
        out.append("\n" + notes)
    return "".join(out)
