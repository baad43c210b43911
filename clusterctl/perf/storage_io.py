"""Storage I/O of a training job: which tier checkpoints go to, how large a checkpoint is, and how fast the
GPU nodes write and restore it and read training data on each tier.

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
from clusterctl.plan.roles import gpu_groups
from clusterctl.plan.paths import StoragePath, no_path_reason, storage_path

GB = 1e9

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


def checkpoint_tier(plan: ClusterPlan):
    """(index, tier) checkpoints go to: the first shared tier marked ``checkpoint: true``, else the first
    parallel tier, else the first NFS tier; None when only local or object tiers exist."""
    tiers = list(enumerate(plan.storage))
    for pick in (lambda t: t.checkpoint and t.tier != "local", lambda t: t.tier == "parallel",
                 lambda t: t.tier == "nfs"):
        for i, t in tiers:
            if pick(t):
                return i, t
    return None


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



def checkpoint_bytes(params: float, bytes_per_param: float = 14.0) -> float:
    """Bytes of one full training checkpoint (weights + optimizer state)."""
    return params * bytes_per_param


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
    return bool(plan.fabrics_on(role, g)) or (role == "inband" and not plan.fabrics_on("inband"))


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
    """Blocking write time of one checkpoint on the checkpoint tier (``checkpoint_tier``),
    limited by the tier and the GPU nodes' storage NICs; None without a checkpoint tier."""
    found = checkpoint_tier(plan)
    if found is None:
        return None
    return tier_time(size_bytes, found[1], plan).write_s


def data_tier(plan: ClusterPlan):
    """(index, tier) training data is read from: the first parallel tier, else object, else nfs; or None."""
    for kind in ("parallel", "object", "nfs"):
        for i, t in enumerate(plan.storage):
            if t.tier == kind:
                return i, t
    return None
