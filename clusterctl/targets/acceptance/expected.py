"""The figures an acceptance job is judged against: the ones ``clusterctl report`` predicts for the same job.

Each figure is computed by the report's own functions (``clusterctl/perf/interconnect.py``: ``interconnect_of``,
``placement``, ``collective``, ``Interconnect.nic_effective_gb_per_s``) for the job's operation, message size and
ranks, and rounded as the report's JSON rounds it (3 decimals), so a job and the report agree by construction:
the whole-group nccl-tests job expects exactly the report's ``allreduce_8g_busbw_gb_per_s``.
"""

from __future__ import annotations

from clusterctl.perf.interconnect import Interconnect, Placement, collective, placement

NCCL_MAX_BYTES = 1 << 33
"""nccl-tests ``-e 8G``: the largest message of every nccl-tests job, the size its verdict reads (the report's
Markdown and ``allreduce_8g_busbw_gb_per_s`` use the same 8 GiB)"""


def busbw(op: str, ic: Interconnect, pl: Placement) -> float:
    """The report's bus bandwidth (GB/s) of ``op`` at ``NCCL_MAX_BYTES`` on placement ``pl``."""
    est, _ = collective(op, NCCL_MAX_BYTES, ic, pl)
    return round(est.busbw_gb_per_s, 3)


def group_busbw(op: str, ic: Interconnect, gpus: int) -> float:
    """All GPUs of ``gpus`` ranks, placed as the report places a group (``placement(ranks, ic)``)."""
    return busbw(op, ic, placement(gpus, ic))


def rail_busbw(op: str, ic: Interconnect, nodes: int) -> float:
    """One rank per node on one rail's NIC: each rank its own domain (NVLink unused), the group holding one of the
    domain's NICs (the report's ``Placement`` with ``nic_share`` = 1 / NICs per domain)."""
    return busbw(op, ic, Placement(nodes, 1, 1.0 / ic.nics_per_domain))


def nic_gb_per_s(ic: Interconnect) -> float:
    """One NIC's goodput as the report models it (line rate x NIC efficiency / oversubscription): what one
    ib_write_bw stream between two nodes should reach."""
    return round(ic.nic_effective_gb_per_s, 3)
