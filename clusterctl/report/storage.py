"""Report section ``storage``: checkpoint size, write and restore time per tier, and data-loading bandwidth.

Checkpoint size is parameters x bytes per parameter; the default 14 bytes are bf16 weights (2) + fp32
master weights (4) + the two fp32 Adam moments m and v (4 + 4 = 8). Writing one checkpoint to a shared tier
(nfs, parallel, object) runs at the smaller of

* the tier's aggregate ``write_gb_per_s`` (``read_gb_per_s`` for a restore), and
* what the GPU nodes can push through their storage NICs: nodes x storage ports x port speed / 8
  (GB/s, 1e9 bytes; the in-band ports when a server has no storage-role NIC, the instance's total network
  bandwidth for cloud instances, an upper bound).

On the node-local tier the checkpoint is sharded across all GPU nodes: each node writes size / nodes to its
own NVMe at the server's ``nvme.write_gb_per_s`` (catalog), so the slowest node type sets the time.

Everything is computed per node group, never per host, so a 200k-GPU plan costs the same as a small one.
The STORAGE rules (``clusterctl.rules.storage``) use the tier's aggregate bandwidth only;
``shared_bandwidth`` / ``checkpoint_write_s`` here are the same arithmetic with the NIC limit added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.paths import StoragePath, no_path_reason, storage_path
from clusterctl.report.section import ReportContext, Section, fmt, md_table
from clusterctl.rules.storage import checkpoint_tier

GB = 1e9
TB = 1e12

UINT16_VOCAB_LIMIT = 65500
"""Training data is read as pre-tokenized token ids in Megatron-LM's indexed dataset (``.bin``/``.idx``):
``megatron/core/datasets/indexed_dataset.py`` ``DType.optimal_dtype(cardinality)`` stores them as uint16 (2 bytes)
when the cardinality is below 65,500 and as int32 (4 bytes) otherwise, and ``tools/preprocess_data.py`` passes
the tokenizer's vocabulary size as the cardinality [P]. GPT-3's 51,200 ids fit uint16; Llama 3's 128,256 and
most current vocabularies need int32."""


def bytes_per_token(vocab: int | None) -> int:
    """Bytes per stored token id for a vocabulary of ``vocab`` ids, as Megatron-LM chooses them: 2 below
    UINT16_VOCAB_LIMIT, else 4; 4 when the vocabulary is not known (``optimal_dtype(None)`` is int32)."""
    return 2 if vocab is not None and vocab < UINT16_VOCAB_LIMIT else 4


def token_bytes(ctx: ReportContext) -> int:
    """Bytes per stored token id of the training model's vocabulary (``bytes_per_token``)."""
    training = ctx.extra.get("training")
    model = training.workload.model if training is not None else None
    return bytes_per_token(model.vocab if model is not None else None)


BYTES_PER_PARAM_NOTE = ("bf16 weights 2 + fp32 master weights 4 + Adam moments m, v 4 + 4 = 14 bytes per "
                        "parameter")
DEFAULT_RETAINED = 3
"""checkpoints kept when the blueprint has no workload (``Workload.checkpoints_retained`` default)"""


@dataclass(frozen=True)
class ClientBandwidth:
    """What the GPU nodes together can move to or from shared storage."""

    gpu_nodes: int
    gb_per_s: float | None
    """None when some GPU node type has no known path to storage"""
    basis: str
    """how the figure was found (storage NICs, in-band NICs, instance network, or why it is unknown)"""
    groups: tuple[tuple[str, int, float | None, str], ...]
    """(group name, nodes, GB/s per node, basis) per GPU group"""


@dataclass(frozen=True)
class TierTime:
    """Effective bandwidth and time of one checkpoint write and restore on one tier."""

    write_gb_per_s: float | None
    write_limited_by: str
    read_gb_per_s: float | None
    read_limited_by: str
    write_s: float | None
    read_s: float | None
    path: str = "node-local NVMe"
    """how the GPU nodes reach the tier (per group when they differ)"""
    no_path: str | None = None
    """why some GPU group has no network path to the tier (then no bandwidth or time is stated)"""


def gpu_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """Node groups with GPUs (the nodes that train, write checkpoints and read data)."""
    return [g for g in plan.groups if g.type.gpus > 0 and g.count > 0]


def checkpoint_bytes(params: float, bytes_per_param: float = 14.0) -> float:
    """Bytes of one full training checkpoint (weights + optimizer state)."""
    return params * bytes_per_param


def model_params(ctx: ReportContext) -> tuple[float | None, str]:
    """(parameter count, where it came from): the context, else ``workload.params_b`` x 1e9, else None."""
    if ctx.params is not None:
        return float(ctx.params), "model"
    w = ctx.plan.blueprint.workload
    if w is not None:
        return w.params_b * 1e9, "workload.params_b"
    return None, "none"


def interval_s(ctx: ReportContext) -> float | None:
    """Checkpoint interval in seconds: the context, else ``workload.checkpoint_every_min``, else None."""
    if ctx.checkpoint_interval_s is not None:
        return float(ctx.checkpoint_interval_s)
    w = ctx.plan.blueprint.workload
    return w.checkpoint_every_min * 60.0 if w is not None else None


def _node_storage_gb_per_s(g: GroupPlan, plan: ClusterPlan | None = None) -> tuple[float | None, str]:
    """GB/s one node of ``g`` moves to shared storage: its storage NICs, else its in-band NICs, counting only NICs
    cabled to a fabric of ``plan`` (in-band NICs also when no fabric models the in-band network)."""
    nt = g.type
    uncabled = []
    for role in ("storage", "inband"):
        nics = nt.nics_of(role)
        if nics and nt.server is not None:
            if plan is not None and not _cabled(plan, g, role):
                uncabled.append(role)
                continue
            return sum(n.count * n.speed_gbps for n in nics) / 8, f"{role} NICs"
    if nt.instance is not None:
        return nt.instance.network.total_gbps / 8, "instance network (upper bound)"
    if uncabled:
        return None, f"{g.name}'s {' and '.join(uncabled)} NICs are attached to no fabric"
    return None, "no storage or in-band NIC"


def _cabled(plan: ClusterPlan, g: GroupPlan, role: str) -> bool:
    return any((g.index, role) in f.attached for f in plan.fabrics) or (
        role == "inband" and not any(r == "inband" for f in plan.fabrics for _, r in f.attached))


def _path_gb_per_s(g: GroupPlan, path: StoragePath) -> tuple[float | None, str]:
    """GB/s one node of ``g`` moves over ``path`` (the NICs of its role; cloud: the instance network)."""
    if path.nic_role is None:
        return _node_storage_gb_per_s(g)
    return sum(n.count * n.speed_gbps for n in g.type.nics_of(path.nic_role)) / 8, path.via


def tier_client(plan: ClusterPlan, tier: Any) -> tuple[ClientBandwidth, tuple[str, ...]]:
    """(what the GPU nodes move to or from shared ``tier`` over their network paths to it, why a GPU group has
    no path: one sentence per such group). The bandwidth is None when some group has no path."""
    groups, missing = [], []
    total: float | None = 0.0
    for g in gpu_groups(plan):
        path = storage_path(plan, g, tier)
        if path is None:
            missing.append(no_path_reason(plan, g, tier))
            groups.append((g.name, g.count, None, "no network path"))
            total = None
            continue
        per_node, basis = _path_gb_per_s(g, path)
        groups.append((g.name, g.count, per_node, basis))
        total = None if per_node is None or total is None else total + g.count * per_node
    if not groups:
        total = None
    bases = sorted({b for _, _, _, b in groups}) or ["no GPU nodes"]
    return ClientBandwidth(sum(n for _, n, _, _ in groups), total, ", ".join(bases), tuple(groups)), tuple(missing)


def client_bandwidth(plan: ClusterPlan) -> ClientBandwidth:
    """Sum over GPU nodes of their storage-path bandwidth (GB/s)."""
    groups = []
    total: float | None = 0.0
    for g in gpu_groups(plan):
        per_node, basis = _node_storage_gb_per_s(g, plan)
        groups.append((g.name, g.count, per_node, basis))
        if per_node is None or total is None:
            total = None
        else:
            total += g.count * per_node
    bases = sorted({b for _, _, _, b in groups})
    nodes = sum(n for _, n, _, _ in groups)
    if not groups:
        total, bases = None, ["no GPU nodes"]
    return ClientBandwidth(nodes, total, ", ".join(bases), tuple(groups))


def shared_bandwidth(tier_gb_per_s: float, client: ClientBandwidth) -> tuple[float, str]:
    """(effective GB/s, what limits it) for a shared tier: min(tier aggregate, node NIC sum)."""
    if client.gb_per_s is not None and client.gb_per_s < tier_gb_per_s:
        return client.gb_per_s, "node NICs"
    return tier_gb_per_s, "tier"


def local_bandwidth(plan: ClusterPlan, read: bool = False) -> tuple[float | None, str]:
    """(GB/s, basis) of the node-local tier with a checkpoint sharded evenly across all GPU nodes: every node
    moves 1/nodes of it, so the slowest node type sets the pace and the aggregate is nodes x its NVMe
    bandwidth. None when a GPU node type has no NVMe bandwidth in the catalog."""
    groups = gpu_groups(plan)
    if not groups:
        return None, "no GPU nodes"
    slowest = None
    for g in groups:
        nvme = g.type.server.nvme if g.type.server is not None else None
        bw = (nvme.read_gb_per_s if read else nvme.write_gb_per_s) if nvme is not None else 0.0
        if not bw:
            return None, f"no NVMe {'read' if read else 'write'} GB/s in catalog ({g.type.name})"
        slowest = bw if slowest is None else min(slowest, bw)
    return sum(g.count for g in groups) * slowest, "node NVMe"


def local_capacity_tb(plan: ClusterPlan) -> float:
    """NVMe capacity of all GPU nodes (servers: count x size; cloud: local_nvme_tb)."""
    total = 0.0
    for g in gpu_groups(plan):
        nt = g.type
        if nt.server is not None:
            nv = nt.server.nvme
            total += g.count * (nv.count * nv.size_tb if nv is not None else 0.0)
        else:
            total += g.count * nt.instance.local_nvme_tb
    return total


def tier_time(size_bytes: float | None, tier: Any, plan: ClusterPlan,
              client: ClientBandwidth | None = None) -> TierTime:
    """Write and restore time of a ``size_bytes`` checkpoint on ``tier`` (times None without a size)."""
    path, no_path = "node-local NVMe", None
    if tier.tier == "local":
        w_bw, w_by = local_bandwidth(plan)
        r_bw, r_by = local_bandwidth(plan, read=True)
    else:
        client, missing = tier_client(plan, tier)  # over the GPU nodes' network paths to this tier
        path = client.basis
        if missing:
            no_path = "; ".join(missing)
            return TierTime(None, "no network path", None, "no network path", None, None, path, no_path)
        w_bw, w_by = shared_bandwidth(tier.write_gb_per_s, client)
        r_bw, r_by = shared_bandwidth(tier.read_gb_per_s, client)
    w_s = size_bytes / (w_bw * GB) if (size_bytes is not None and w_bw) else None
    r_s = size_bytes / (r_bw * GB) if (size_bytes is not None and r_bw) else None
    return TierTime(w_bw, w_by, r_bw, r_by, w_s, r_s, path, no_path)


def checkpoint_write_s(plan: ClusterPlan, size_bytes: float) -> float | None:
    """Blocking write time of one checkpoint on the checkpoint tier (``rules.storage.checkpoint_tier``),
    limited by the tier and the GPU nodes' storage NICs; None without a checkpoint tier."""
    found = checkpoint_tier(plan)
    if found is None:
        return None
    return tier_time(size_bytes, found[1], plan).write_s


def data_tier(plan: ClusterPlan):
    """(index, tier) training data is read from: the first parallel tier, else object, else nfs; or None."""
    for kind in ("parallel", "object", "nfs"):
        for i, t in enumerate(plan.blueprint.storage):
            if t.tier == kind:
                return i, t
    return None


def _r(x: float | None, digits: int = 6) -> float | None:
    """Round for JSON (stable output, no float noise)."""
    if x is None:
        return None
    return float(f"{x:.{digits}g}")


def _cell(x: float | None, unit: str = "") -> str:
    return "n/a" if x is None else fmt(x) + unit


def build(ctx: ReportContext) -> Section:
    plan = ctx.plan
    bp = plan.blueprint
    w = bp.workload
    params, params_from = model_params(ctx)
    bpp = ctx.checkpoint_bytes_per_param
    size = checkpoint_bytes(params, bpp) if params is not None else None
    client = client_bandwidth(plan)
    found = checkpoint_tier(plan)
    ck_index = found[0] if found else None
    tau = interval_s(ctx)
    retained = w.checkpoints_retained if w is not None else DEFAULT_RETAINED
    local_tb = local_capacity_tb(plan)

    tiers = []
    for i, t in enumerate(bp.storage):
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

    ck = tiers[ck_index] if ck_index is not None else None
    write_s = ck["write_s"] if ck else None
    overhead = write_s / tau if (write_s is not None and tau) else None

    dt = data_tier(plan)
    bytes_per_token = token_bytes(ctx)
    need = ctx.tokens_per_s * bytes_per_token / GB if ctx.tokens_per_s is not None else None
    avail = tiers[dt[0]]["read_gb_per_s"] if dt else None
    data_loading = {
        "tier": dt[1].name if dt else None,
        "tokens_per_s": _r(ctx.tokens_per_s),
        "bytes_per_token": bytes_per_token,
        "need_gb_per_s": _r(need),
        "available_gb_per_s": avail,
        "limited_by": tiers[dt[0]]["read_limited_by"] if dt else None,
        "share": _r(need / avail) if (need is not None and avail) else None,
        "available": dt is None or tiers[dt[0]]["available"],
        "reason": tiers[dt[0]]["no_path_reason"] if dt else None,
    }

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
        "checkpoint": {
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
        },
        "tiers": tiers,
        "data_loading": data_loading,
    }
    return Section("storage", "Storage", data, _markdown(data, tiers))


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
