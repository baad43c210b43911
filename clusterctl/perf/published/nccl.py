"""nccl-tests bus bandwidths: the figures the collective model's efficiencies were computed from.

Role: every row here is ``calibration``. NVLINK_RING_EFFICIENCY is 370/450 and 230/300 (averaged),
NVLS_EFFICIENCY is 480 / (450 x 2 x 7/8), NIC_EFFICIENCY["rdma"] is 47/50 (NDR) and 24/25 (HDR)
(clusterctl/perf/interconnect.py): these rows reproduce the quotients they were made from, so agreement
proves the arithmetic and the algorithm choice (ring / NVLS / tree, the NVLink g/(g-1) lift, the NIC bound
across 2-128 nodes), not the constants. The all-to-all rows' figure is itself built from the same ~47 GB/s per
NIC (sjeaugey: multi-node AlltoAll busbw = N/(N-1) x per-GPU network bandwidth), so they are fits too.

Message size: 8 GiB (nccl-tests ``-e 8G``, the bandwidth plateau). Systems: DGX H100 (8 x H100 SXM, NVLink4
450 GB/s each way, 8 x 400 Gb/s NDR), the same without NVLS (``NCCL_NVLS_ENABLE=0``), DGX A100 (NVLink3 300
GB/s each way, 8 x 200 Gb/s HDR). Multi-node rows use rings (NCCL_ALGO=RING is how networks are benchmarked,
nccl#209 / nccl-tests#196); the model picks the faster of ring and tree, which is the network bound for both
at 8 GiB.

Not found as a primary measurement in the stored corpora: no holdout nccl-tests figure for these systems; the
fabric rows of clusterctl/perf/published/fabric.py (RoCE, scale) are collected separately.
"""

from __future__ import annotations

from dataclasses import replace

from clusterctl.perf.collectives import ALL_REDUCE, ALL_TO_ALL
from clusterctl.perf.published.rows import CALIBRATION, CollectiveRow, Family, Row
from clusterctl.perf.published.systems import DGX_H100, SELENE

NVLINK = "nccl-nvlink"
NETWORK = "nccl-network"
MARGIN = 0.03

FAMILIES: list[Family] = [
    Family(NVLINK, 0.072, "largest |error| of the family + 3 points (nccl-tests run-to-run spread)",
           "nccl-tests all_reduce_perf on one 8-GPU NVLink domain", margin=MARGIN),
    Family(NETWORK, 0.092, "largest |error| of the family + 3 points (nccl-tests run-to-run spread)",
           "nccl-tests across nodes: AllReduce per NIC at 2-128 nodes, AlltoAll", margin=MARGIN),
]

LARGE = 8 * 2**30
DGX_H100_NO_NVLS = replace(DGX_H100, nvls=False)
ISSUES = "[S] NVIDIA/nccl-tests GitHub issues (user reports, several threads; project reference slurm-nccl.md)"


def _row(id, family, source, op, ranks, ic, busbw) -> CollectiveRow:
    return CollectiveRow(id, family, CALIBRATION, source, op, LARGE, ranks, ic, busbw)


ROWS: list[Row] = [
    # ~480 GB/s busbw, 8 x H100 with NVLS (NVIDIA/nccl-tests issues; project reference slurm-nccl.md)
    _row("nccl-h100-8gpu-nvls", NVLINK, ISSUES + ": ~480 GB/s busbw, 8 x H100 SXM with NVLS", ALL_REDUCE, 8,
         DGX_H100, 480),
    # ~370 GB/s busbw, 8 x H100 without NVLS (NCCL_NVLS_ENABLE=0; NVIDIA/nccl-tests issues)
    _row("nccl-h100-8gpu-no-nvls", NVLINK, ISSUES + ": ~370 GB/s busbw, 8 x H100 SXM, NCCL_NVLS_ENABLE=0",
         ALL_REDUCE, 8, DGX_H100_NO_NVLS, 370),
    # ~230 GB/s busbw, 8 x A100 SXM (NVIDIA/nccl-tests issues)
    _row("nccl-a100-8gpu", NVLINK, ISSUES + ": ~230 GB/s busbw, 8 x A100 SXM", ALL_REDUCE, 8, SELENE, 230),
]
# "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NVIDIA/nccl-tests#290, AddyLaddy): the middle, 47 GB/s
# per NIC x 8 NICs per node, ring AllReduce across 2-128 nodes
ROWS += [
    _row(f"nccl-ndr-allreduce-{nodes}nodes", NETWORK,
         "[Q] NVIDIA/nccl-tests#290 (AddyLaddy): \"For NDR @ 400Gbps you should see 46-48GB/s per NIC\"; "
         "47 x 8 NICs", ALL_REDUCE, 8 * nodes, DGX_H100_NO_NVLS, 8 * 47)
    for nodes in (2, 4, 16, 128)
]
ROWS += [
    # "~160GB/s intra-node and 24GB/s inter-node" with 1 x HDR per GPU (NVIDIA/nccl#412, sjeaugey): 24 x 8 NICs
    _row("nccl-hdr-allreduce-2nodes", NETWORK,
         "[P] github.com/NVIDIA/nccl/issues/412 (sjeaugey): \"~160GB/s intra-node and 24GB/s inter-node\" per HDR "
         "NIC at 8G; github.com/NVIDIA/nccl-tests/issues/119: \"24GB/s is the peak performance per 200G NIC\"; "
         "24 x 8 NICs", ALL_REDUCE, 16, SELENE, 8 * 24),
    # multi-node AlltoAll busbw = N/(N-1) x per-GPU network bandwidth, N = nodes (sjeaugey,
    # NVIDIA/nccl-tests#130): 2 nodes -> 2 x ~47 GB/s; 64 nodes -> 64/63 x 47
    _row("nccl-ndr-alltoall-2nodes", NETWORK,
         "[D] NVIDIA/nccl-tests#130 (sjeaugey): AlltoAll busbw = N/(N-1) x per-GPU network bandwidth; "
         "2/1 x 47 GB/s (nccl-tests#290)", ALL_TO_ALL, 16, DGX_H100, 2 * 47),
    _row("nccl-ndr-alltoall-64nodes", NETWORK,
         "[D] NVIDIA/nccl-tests#130 (sjeaugey): AlltoAll busbw = N/(N-1) x per-GPU network bandwidth; "
         "64/63 x 47 GB/s (nccl-tests#290)", ALL_TO_ALL, 8 * 64, DGX_H100, 64 / 63 * 47),
]
