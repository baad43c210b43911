"""Report section ``storage``: checkpoint size, write and restore time per tier, and data-loading bandwidth.

The figures come from the storage model (clusterctl/perf/storage_io.py: checkpoint size, the checkpoint
tier, each tier's bandwidth limited by the tier or the GPU nodes' NICs); this module takes the model size,
checkpoint interval and tokens/s from the report's context and lays the figures out as JSON and Markdown.
"""

from __future__ import annotations

from clusterctl.perf.storage_io import (
    bytes_per_token,
    checkpoint_bytes,
    checkpoint_tier,
    client_bandwidth,
    data_tier,
    local_capacity_tb,
    tier_time,
)
from clusterctl.plan.model import ClusterPlan
from clusterctl.report.section import ReportContext, Section, fmt, md_table

GB = 1e9
TB = 1e12


def token_bytes(ctx: ReportContext) -> int:
    """Bytes per stored token id of the training model's vocabulary (``bytes_per_token``)."""
    training = ctx.extra.get("training")
    model = training.workload.model if training is not None else None
    return bytes_per_token(model.vocab if model is not None else None)


BYTES_PER_PARAM_NOTE = ("bf16 weights 2 + fp32 master weights 4 + Adam moments m, v 4 + 4 = 14 bytes per "
                        "parameter")
DEFAULT_RETAINED = 3
"""checkpoints kept when the blueprint has no workload (``Workload.checkpoints_retained`` default)"""


def model_params(ctx: ReportContext) -> tuple[float | None, str]:
    """(parameter count, where it came from): the context, else ``workload.params_b`` x 1e9, else None."""
    if ctx.params is not None:
        return float(ctx.params), "model"
    w = ctx.plan.workload
    if w is not None:
        return w.params_b * 1e9, "workload.params_b"
    return None, "none"


def interval_s(ctx: ReportContext) -> float | None:
    """Checkpoint interval in seconds: the context, else ``workload.checkpoint_every_min``, else None."""
    if ctx.checkpoint_interval_s is not None:
        return float(ctx.checkpoint_interval_s)
    w = ctx.plan.workload
    return w.checkpoint_every_min * 60.0 if w is not None else None


def _r(x: float | None, digits: int = 6) -> float | None:
    """Round for JSON (stable output, no float noise)."""
    if x is None:
        return None
    return float(f"{x:.{digits}g}")


def _cell(x: float | None, unit: str = "") -> str:
    return "n/a" if x is None else fmt(x) + unit


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    w = plan.workload
    params, params_from = model_params(ctx)
    bpp = ctx.checkpoint_bytes_per_param
    size = checkpoint_bytes(params, bpp) if params is not None else None
    client = client_bandwidth(plan)
    found = checkpoint_tier(plan)
    ck_index = found[0] if found else None
    retained = w.checkpoints_retained if w is not None else DEFAULT_RETAINED
    tiers = _tier_rows(plan, size, retained, client, ck_index)
    data = {
        "model": {
            "params": _r(params),
            "params_from": params_from,
            "bytes_per_param": bpp,
            "bytes_per_param_note": BYTES_PER_PARAM_NOTE if bpp == 14 else "as given",
            "checkpoint_bytes": _r(size),
        },
        "client": {
            "gpu_nodes": client.gpu_nodes,
            "gb_per_s": _r(client.gb_per_s),
            "basis": client.basis,
            "groups": [{"group": n, "nodes": c, "gb_per_s_per_node": _r(bw), "basis": b}
                       for n, c, bw, b in client.groups],
        },
        "checkpoint": _checkpoint(tiers[ck_index] if ck_index is not None else None, interval_s(ctx), w, retained),
        "tiers": tiers,
        "data_loading": _data_loading(ctx, tiers),
    }
    return Section("storage", "Storage", data, _markdown(data, tiers))


def _tier_rows(plan: ClusterPlan, size: float | None, retained: int, client, ck_index: int | None) -> list[dict]:
    """each storage tier: capacity, bandwidths and what limits them, checkpoint write and restore times, the
    share of it the retained checkpoints take"""
    local_tb = local_capacity_tb(plan)
    tiers = []
    for i, t in enumerate(plan.storage):
        tt = tier_time(size, t, plan, client)
        cap = t.capacity_tb if t.tier != "local" else local_tb
        kept_tb = retained * size / TB if size is not None else None
        tiers.append({
            "name": t.name,
            "tier": t.tier,
            "checkpoint": i == ck_index,
            "capacity_tb": _r(cap),
            "tier_write_gb_per_s": _r(getattr(t, "write_gb_per_s", None)),
            "tier_read_gb_per_s": _r(getattr(t, "read_gb_per_s", None)),
            "write_gb_per_s": _r(tt.write_gb_per_s),
            "write_limited_by": tt.write_limited_by,
            "write_s": _r(tt.write_s),
            "read_gb_per_s": _r(tt.read_gb_per_s),
            "read_limited_by": tt.read_limited_by,
            "restore_s": _r(tt.read_s),
            "retained_tb": _r(kept_tb),
            "retained_share": _r(kept_tb / cap) if (kept_tb is not None and cap) else None,
            "available": tt.no_path is None,
            "path": tt.path,
            "no_path_reason": tt.no_path,
        })
    return tiers


def _checkpoint(ck: dict | None, tau: float | None, w, retained: int) -> dict:
    """the checkpoint tier's row seen as the job sees it: time, overhead per interval, budget, retention"""
    write_s = ck["write_s"] if ck else None
    overhead = write_s / tau if (write_s is not None and tau) else None
    return {
        "tier": ck["name"] if ck else None,
        "interval_s": _r(tau),
        "write_s": write_s,
        "restore_s": ck["restore_s"] if ck else None,
        "overhead_fraction": _r(overhead),
        "budget_s": _r(w.checkpoint_budget_s) if w is not None else None,
        "retained": retained,
        "retained_tb": ck["retained_tb"] if ck else None,
        "capacity_tb": ck["capacity_tb"] if ck else None,
        "retained_share": ck["retained_share"] if ck else None,
        "available": ck is None or ck["available"],
        "reason": ck["no_path_reason"] if ck else None,
    }


def _data_loading(ctx: ReportContext, tiers: list[dict]) -> dict:
    """the tier training data is read from, and the share of its read bandwidth the job's tokens need"""
    dt = data_tier(ctx.plan)
    id_bytes = token_bytes(ctx)
    need = ctx.tokens_per_s * id_bytes / GB if ctx.tokens_per_s is not None else None
    avail = tiers[dt[0]]["read_gb_per_s"] if dt else None
    return {
        "tier": dt[1].name if dt else None,
        "tokens_per_s": _r(ctx.tokens_per_s),
        "bytes_per_token": id_bytes,
        "need_gb_per_s": _r(need),
        "available_gb_per_s": avail,
        "limited_by": tiers[dt[0]]["read_limited_by"] if dt else None,
        "share": _r(need / avail) if (need is not None and avail) else None,
        "available": dt is None or tiers[dt[0]]["available"],
        "reason": tiers[dt[0]]["no_path_reason"] if dt else None,
    }


def _markdown(data: dict, tiers: list[dict]) -> str:
    m, c, ck, dl = data["model"], data["client"], data["checkpoint"], data["data_loading"]
    out = []
    if m["params"] is None:
        out.append("No model is given (no training model and no `workload.params_b`): checkpoint times are not "
                   "computed; only bandwidths are reported.\n")
    else:
        src = "the training model" if m["params_from"] == "model" else "`workload.params_b`"
        note = f" ({m['bytes_per_param_note']})" if m["bytes_per_param"] == 14 else ""
        out.append(f"One checkpoint: {fmt(m['params'] / 1e9)} B parameters (from {src}) × "
                   f"{fmt(m['bytes_per_param'])} bytes{note} = **{fmt(m['checkpoint_bytes'] / TB)} TB**.\n")
    bw = "n/a" if c["gb_per_s"] is None else f"{fmt(c['gb_per_s'])} GB/s"
    local = " On a local tier the checkpoint is sharded evenly across all GPU nodes' NVMe." if any(
        t["tier"] == "local" for t in tiers) else ""
    out.append(f"GPU nodes reach shared storage at {bw} together ({c['gpu_nodes']:,} nodes; {c['basis']}); "
               f"a shared tier runs at the smaller of its aggregate bandwidth and this.{local}\n")
    rows = []
    for t in tiers:
        rows.append([t["name"] + (" (checkpoint)" if t["checkpoint"] else ""), t["tier"],
                     _cell(t["capacity_tb"]), _cell(t["write_gb_per_s"]), t["write_limited_by"],
                     _cell(t["write_s"]), _cell(t["read_gb_per_s"]), _cell(t["restore_s"]),
                     _cell(t["retained_share"] * 100 if t["retained_share"] is not None else None, " %")])
    if rows:
        out.append(md_table(["Tier", "Kind", "Capacity TB", "Write GB/s", "Limited by", "Write s",
                             "Read GB/s", "Restore s", f"{ck['retained']} kept / capacity"],
                            rows, "llrrlrrrr"))
    else:
        out.append("No storage tiers are declared.\n")
    for t in tiers:
        if not t["available"]:
            out.append(f"**{t['name']} is not reachable from the GPU nodes**: {t['no_path_reason']}. No bandwidth, "
                       "checkpoint or restore time is stated for it.\n")
    if ck["tier"] is not None and not ck["available"]:
        out.append(f"Checkpoints go to **{ck['tier']}**, which the GPU nodes have no network path to (above): no "
                   "checkpoint write or restore time can be stated.\n")
    elif ck["tier"] is None:
        out.append("No shared tier takes checkpoints (none marked `checkpoint: true`, no parallel or NFS tier).\n")
    elif ck["write_s"] is not None:
        line = (f"Checkpoints go to **{ck['tier']}**: {fmt(ck['write_s'])} s to write, "
                f"{fmt(ck['restore_s'])} s to restore")
        if ck["overhead_fraction"] is not None:
            line += (f"; written every {fmt(ck['interval_s'] / 60)} min and blocking, that is "
                     f"**{fmt(ck['overhead_fraction'] * 100)} %** of training time")
        if ck["budget_s"] is not None:
            line += f" (budget {fmt(ck['budget_s'])} s per checkpoint)"
        out.append(line + f". {ck['retained']} retained checkpoints take {fmt(ck['retained_tb'])} TB of "
                          f"{fmt(ck['capacity_tb'])} TB ({fmt(ck['retained_share'] * 100)} %).\n")
    else:
        out.append(f"Checkpoints go to **{ck['tier']}**.\n")
    if dl["tier"] is None:
        out.append("Data loading: no parallel, object or NFS tier to read training data from.\n")
    elif not dl["available"]:
        need = (f"the need is {fmt(dl['need_gb_per_s'])} GB/s ({fmt(dl['tokens_per_s'])} tokens/s × "
                f"{dl['bytes_per_token']} bytes/token), " if dl["need_gb_per_s"] is not None else "")
        out.append(f"Data loading: {need}but **{dl['tier']}** has no network path from the GPU nodes (above): "
                   "it delivers nothing to them.\n")
    elif dl["need_gb_per_s"] is None:
        out.append(f"Data loading: no training throughput is given (tokens/s), so the need is not computed; "
                   f"**{dl['tier']}** can deliver {_cell(dl['available_gb_per_s'], ' GB/s')} to the GPU nodes "
                   f"(limited by {dl['limited_by']}).\n")
    else:
        share = _cell(dl["share"] * 100 if dl["share"] is not None else None, " %")
        ids = "int32" if dl["bytes_per_token"] == 4 else "uint16"
        out.append(f"Data loading: {fmt(dl['tokens_per_s'])} tokens/s × {dl['bytes_per_token']} bytes/token "
                   f"({ids} token ids) = {fmt(dl['need_gb_per_s'])} GB/s from **{dl['tier']}**, which delivers "
                   f"{_cell(dl['available_gb_per_s'], ' GB/s')} to the GPU nodes (the need is {share} of it).\n")
    return "\n".join(out)
