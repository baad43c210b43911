"""nccl-tests times of small all_reduce messages (8 B - 4 KiB), where a collective's time is its latency (see
clusterctl/perf/published/rows.py for rows and families).

The latencies are NCCL's own (NCCL 2.26.2 src/graph/tuning.cc, adopted in clusterctl/perf/nccl_algorithms.py, not
fitted) plus three measured terms, each set on one row here (calibration): LAUNCH_LATENCY_US on one GB200 compute
tray at 1 KiB, NET_PLUGIN_LATENCY_US["efa"] and ["tcp"] on the 8-byte point of two p5 and two A3 Mega nodes.
The other rows are holdouts: one H100 node with NVLS (Azure), one H20 node and two H20 nodes with NVLS-tree
forced (InfiniBand), and the 1 KiB points of the EFA and TCPXO sweeps (same runs as their calibration rows: they
check only that the time stays latency-bound, so they are weak).

Families: ``nccl-latency`` (times printed by nccl-tests) and ``nccl-latency-derived`` (times worked out from a
bus bandwidth printed to two decimals: ``t = S x 2(n-1)/n / busbw``, uncertain by the rounding).

Collected but not used as rows (and why):

* Sizes from 64 KiB to 16 MiB (p5: 135.1 / 123.2 / 298.1 µs at 64 KiB / 1 MiB / 16 MiB; A3 Mega 159.4 / 203.2 /
  977.6; H20 two nodes 121.8 / 203.0 at 1 / 16 MiB; Azure H100 42.2 / 42.0 / 125.2; H200 30.8 / 34.6 / 122.1):
  there the time is neither latency nor the plateau bandwidth; NCCL's chunked pipeline fills slowly and the
  model, which has no pipeline-fill term, is 13-74 % fast across nodes (docs/report.md, "Collectives").
* H20 single node at 8 B (12.49 µs): 4 µs faster than the same run's 1 KiB point (16.38), a difference NCCL's
  latency model has no term for; the 1 KiB and 4 KiB points are rows.
* A100 2 x p4de.24xlarge (EFA, 164.3 µs at 8 B): EFA of another generation than p5's; it would need its own
  plugin latency, set from itself.
* GB200 NVL72 small messages at 72 GPUs or across racks: none published (NVIDIA's NCCL 2.27 blog gives a plot
  only).
"""

from __future__ import annotations

from clusterctl.perf.collectives import ALL_REDUCE
from clusterctl.perf.interconnect import Interconnect
from clusterctl.perf.published.nccl_domains import A3_MEGA, P5
from clusterctl.perf.published.rows import CALIBRATION, VALIDATION, CollectiveTimeRow, Family, Row
from clusterctl.perf.published.systems import DGX_H100

LATENCY, DERIVED = "nccl-latency", "nccl-latency-derived"

FAMILIES: list[Family] = [
    Family(LATENCY, 0.275, "largest |error| of the family + 3 points (nccl-tests run-to-run spread of small "
           "messages)", "nccl-tests all_reduce time, 8 B - 4 KiB, one and two nodes", margin=0.03),
    Family(DERIVED, 0.360, "largest |error| of the family + 3 points; the times are derived from a busbw "
           "printed to two decimals", "nccl-tests all_reduce time at 1 KiB worked out from a rounded busbw",
           margin=0.03),
]

K = 1024
# one GB200 compute tray as an Azure ND GB200 v6 VM: 4 GPUs, NVLink5 (900 GB/s each way), Ring (the guide's label)
GB200_TRAY = Interconnect(4, 900, False, 4, 50, generation="blackwell")
# H20: the NVLink and NICs of an HGX H100 (900 GB/s NVLink, NVLS, 8 x 400G NDR)
H20_NODE = DGX_H100
AZURE = "[P] github.com/Azure/AI-benchmarking-guide Azure_Results/"
ISSUE_1244 = "[P] github.com/NVIDIA/nccl/issues/1244 (comment by haswelliris, 2024-04-09, NCCL 2.21.5): "
DEEPEP_303 = ("[P] github.com/deepseek-ai/DeepEP/issues/303: one H20 node (8 ranks: busbw / algbw = 1.75), "
              "all_reduce_perf: ")
AWS = ("[P] aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md (2 x p5.48xlarge, "
       "16 GPUs, EFA; NCCL version not stated): ")
A3 = ("[P] github.com/lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result (commit 02dd8f45; 2 x A3 Mega, "
      "16 GPUs, GPUDirect-TCPXO): ")


_FAST_AZURE = ("the model is fast by a fifth: NCCL's own Ring LL estimate for 8 GPUs (6.6 + 14 x 0.6 µs) plus the "
               "launch cost is 20 µs; this NCCL 2.18.5 run, whose time is derived from a busbw printed as 0.07 "
               "(23.9-27.6 µs), took longer")
_SLOW_H20 = ("the model is slow by a fifth: NCCL's Ring LL estimate for 8 GPUs (15 µs) plus the 5 µs launch cost "
             "set on a GB200 tray is 20 µs, 3.6 µs more than this run; the launch cost differs by host and "
             "software, and the model has one")
_SLOW_NVLS_TREE = ("the model is slow by a fifth: NCCL's NVLS-Tree estimate (25 µs inside the node + 2 x 14 µs "
                   "across) plus the launch cost is 58 µs; the NCCL 2.21.5 run took 47 µs, so NCCL's estimate is "
                   "conservative here")


def _row(id, family, role, source, size, ranks, ic, time_us, algorithm=None, explanation="") -> CollectiveTimeRow:
    return CollectiveTimeRow(id, family, role, source, ALL_REDUCE, size, ranks, ic, time_us, algorithm, explanation)


ROWS: list[Row] = [
    _row("small-gb200-tray-1k", DERIVED, CALIBRATION,
         "[D] " + AZURE + "ND_GB200_v6_results.md (commit 2a370be6, NCCL 2.25.1, 4 GPUs, Ring, in-place): busbw "
         "0.10 GB/s at 1 KiB -> 1024 x 1.5 / 0.10 = 15.4 µs (sets LAUNCH_LATENCY_US)", K, 4, GB200_TRAY, 15.4),
    _row("small-h100-azure-1k", DERIVED, VALIDATION,
         "[D] " + AZURE + "ND_H100_v5_results.md (snapshot 8fd0c6e1, NCCL 2.18.5, 8 GPUs, NVLS, in-place): busbw "
         "0.07 GB/s at 1 KiB -> 1024 x 1.75 / 0.07 = 25.6 µs", K, 8, DGX_H100, 25.6,
         explanation=_FAST_AZURE),
    _row("small-h200-azure-1k", DERIVED, VALIDATION,
         "[D] " + AZURE + "ND_H200_v5_results.md (NCCL 2.20.5, 8 GPUs, in-place): busbw 0.06 GB/s at 1 KiB -> "
         "1024 x 1.75 / 0.06 = 29.9 µs", K, 8, DGX_H100, 29.9,
         explanation="the model is fast by a third: the busbw is printed as 0.06, so the time lies between 27.6 "
         "and 32.6 µs, and the same guide's H100 run of the same 8-GPU NVLink4 baseboard gives 25.6 µs: the "
         "two runs differ by 17 % where the model, which knows the links only, cannot"),
    _row("small-h20-1node-1k", LATENCY, VALIDATION, DEEPEP_303 + "16.38 µs at 1 KiB", K, 8, H20_NODE, 16.38,
         explanation=_SLOW_H20),
    _row("small-h20-1node-4k", LATENCY, VALIDATION, DEEPEP_303 + "16.69 µs at 4 KiB", 4 * K, 8, H20_NODE, 16.69,
         explanation=_SLOW_H20),
    _row("small-h20-2nodes-nvlstree-8b", LATENCY, VALIDATION,
         ISSUE_1244 + "two H20 nodes with 8 x 400G NDR each, NCCL_ALGO=NVLSTree: 47.60 µs at 8 B", 8, 16, H20_NODE,
         47.60, algorithm="nvls-tree", explanation=_SLOW_NVLS_TREE),
    _row("small-h20-2nodes-nvlstree-512b", LATENCY, VALIDATION,
         ISSUE_1244 + "two H20 nodes, NCCL_ALGO=NVLSTree: 46.58 µs at 512 B", 512, 16, H20_NODE, 46.58,
         algorithm="nvls-tree", explanation=_SLOW_NVLS_TREE),
    _row("small-p5-efa-2nodes-8b", LATENCY, CALIBRATION,
         AWS + "69.12 µs at 8 B (sets NET_PLUGIN_LATENCY_US[\"efa\"])", 8, 16, P5, 69.12),
    _row("small-p5-efa-2nodes-1k", LATENCY, VALIDATION, AWS + "69.24 µs at 1 KiB (same run as the 8 B row)", K, 16,
         P5, 69.24),
    _row("small-a3mega-tcpxo-2nodes-8b", LATENCY, CALIBRATION,
         A3 + "135.8 µs at 8 B (sets NET_PLUGIN_LATENCY_US[\"tcp\"])", 8, 16, A3_MEGA, 135.8),
    _row("small-a3mega-tcpxo-2nodes-1k", LATENCY, VALIDATION, A3 + "147.1 µs at 1 KiB (same run as the 8 B row)",
         K, 16, A3_MEGA, 147.1),
]
