"""nccl-tests all_reduce across NVLink domains: GB200 NVL72 racks, GB200 partitions over InfiniBand, two-node
NVLS-tree runs (see clusterctl/perf/published/rows.py for rows and families).

Family ``nccl-multi-domain``. What the rows test: the bus bandwidth of one communicator as it spans more NVLink
domains (clusterctl/perf/nccl_algorithms.py): NVLS inside a domain; NCCL's double binary tree across domains,
which sends a domain's share once on two domains and twice on four or more (``tree_traffic``); the ring, which
NCCL's tuner prefers over a plain tree for large messages; and the NICs one communicator drives per domain
(``NET_HEAD_GPUS``, interconnect.py).

Calibration: the one-rack GB200 row sets NVLS_EFFICIENCY["blackwell"]; the 20-rack 16 GiB row sets
NET_HEAD_GPUS; the A3 Mega row sets NIC_EFFICIENCY["tcp"]. Everything else is a holdout: the 2-rack rows (the
tree's single crossing on two domains and the NVLS cap), the NVIDIA/nccl#1801 partitions (ring and tree
network bounds with NIC_EFFICIENCY["rdma"], which was set on HGX figures), and the two-node NVLS-tree runs of
DGX H100 and p5.

Sources abbreviated: COREWEAVE = github.com/coreweave/nccl-tests README.md "Expected Performance > GB200" (also
PR coreweave/nccl-tests#43 and #48), NCCL 2.26.2, MNNVL on (``NCCL_MNNVL_ENABLE=1``), no NCCL_ALGO, no CollNet /
SHARP variables in the Slurm script; out-of-place busbw.

Collected but not used as rows (and why):

* CoreWeave GB200 at 512 MiB - 2 GiB (1 rack 586.06 / 681.17 / 757.78; 2 racks 493.94 / 596.10 / 680.30; 20
  racks 150.95 / 218.85 / 286.52 GB/s): the times carry a fixed cost of ~0.5 ms (1 rack), ~0.9 ms (2 racks)
  and ~5 ms (20 racks) that no term of the model represents (NCCL's latencies for these algorithms are tens to
  hundreds of µs); the model is optimistic there (docs/report.md, "Collectives", known limits).
* CoreWeave H100 SHARP job (8 nodes, 386.56 GB/s at 8 GiB): the NCCL version and the algorithm of that output
  are not stated (the current manifest sets NCCL_ALGO=COLLNETCHAIN, which the model does not have).
* NVIDIA/nccl#1031 (H100 RoCE, 2 servers 310 / 4 servers 180 GB/s) and the H20 two-node 512 MiB figure
  (NVIDIA/nccl#1244, 312.75): below what the same links reach elsewhere, with configuration questions open in
  the threads; not a fabric figure.
"""

from __future__ import annotations

from clusterctl.perf.collectives import ALL_REDUCE
from clusterctl.perf.interconnect import Interconnect
from clusterctl.perf.published.rows import CALIBRATION, VALIDATION, CollectiveRow, Family, Row
from clusterctl.perf.published.systems import DGX_H100, GB200_NVL72

MULTI_DOMAIN = "nccl-multi-domain"

FAMILIES: list[Family] = [
    Family(MULTI_DOMAIN, 0.085, "largest |error| of the family + 3 points (nccl-tests run-to-run spread)",
           "nccl-tests all_reduce across NVLink domains: GB200 NVL72 at 1, 2 and 20 racks, GB200 partitions "
           "over InfiniBand, two-node NVLS-tree runs", margin=0.03),
]

GIB = 2**30
COREWEAVE = "[P] github.com/coreweave/nccl-tests README.md, \"Expected Performance > GB200\" (NCCL 2.26.2, MNNVL): "
# NVIDIA/nccl#1801: three NVL partitions on different racks, InfiniBand only between them, NCCL_NVLS_ENABLE=0;
# "NVL4" = one compute tray (4 GPUs, 4 x 400G NICs), "NVL8" = two trays (8 GPUs, 8 NICs)
_NVL4_PARTITION = Interconnect(4, 900, False, 4, 50, generation="blackwell")
_NVL8_PARTITION = Interconnect(8, 900, False, 8, 50, generation="blackwell")
_ISSUE_1801 = ("[P] github.com/NVIDIA/nccl/issues/1801 (mawi2017, 2025-08-06, NCCL 2.27.3): three GB200 NVL "
               "partitions on different racks, IB only between them, NCCL_NVLS_ENABLE=0, all_reduce 16 GiB: ")
# AWS p5.48xlarge: 8 x H100 (NVLS), 32 EFA devices x 100 Gb/s (catalog instances.yaml p5.48xlarge)
P5 = Interconnect(8, 450, True, 32, 12.5, network="efa")
# GCP A3 Mega: 8 x H100 (NVLS), 8 x 200 Gb/s GPUDirect-TCPXO NICs (catalog instances.yaml a3-megagpu-8g)
A3_MEGA = Interconnect(8, 450, True, 8, 25, nic_kind="tcp", network="tcp")


def _gb200(id, role, racks, size_gib, busbw, note) -> CollectiveRow:
    return CollectiveRow(id, MULTI_DOMAIN, role, COREWEAVE + note, ALL_REDUCE, size_gib * GIB, 72 * racks,
                         GB200_NVL72, busbw)


ROWS: list[Row] = [
    _gb200("gb200-nvl72-1rack-4g", CALIBRATION, 1, 4, 839.16,
           "\"Single Rack\", 72 GPUs, 4 GiB: 839.16 GB/s busbw (sets NVLS_EFFICIENCY[\"blackwell\"])"),
    _gb200("gb200-nvl72-2racks-8g", VALIDATION, 2, 8, 793.06, "\"2 Racks\", 144 GPUs, 8 GiB: 793.06 GB/s busbw"),
    _gb200("gb200-nvl72-2racks-16g", VALIDATION, 2, 16, 810.41,
           "\"2 Racks\", 144 GPUs, 16 GiB: 810.41 GB/s busbw (out-of-place)"),
    _gb200("gb200-nvl72-20racks-8g", VALIDATION, 20, 8, 381.48, "\"20 Racks\", 1,440 GPUs, 8 GiB: 381.48 GB/s busbw"),
    _gb200("gb200-nvl72-20racks-16g", CALIBRATION, 20, 16, 405.74,
           "\"20 Racks\", 1,440 GPUs, 16 GiB: 405.74 GB/s busbw (sets NET_HEAD_GPUS)"),
    CollectiveRow("nccl-1801-gb200-3x4gpu-ring", MULTI_DOMAIN, VALIDATION, _ISSUE_1801 + "3 x 4 GPUs, Ring "
                  "(the default): 196.72 GB/s busbw", ALL_REDUCE, 16 * GIB, 12, _NVL4_PARTITION, 196.72),
    CollectiveRow("nccl-1801-gb200-3x4gpu-tree", MULTI_DOMAIN, VALIDATION, _ISSUE_1801 + "3 x 4 GPUs, "
                  "NCCL_ALGO=Tree: 234.43 GB/s busbw", ALL_REDUCE, 16 * GIB, 12, _NVL4_PARTITION, 234.43,
                  algorithm="tree"),
    CollectiveRow("nccl-1801-gb200-3x8gpu-ring", MULTI_DOMAIN, VALIDATION, _ISSUE_1801 + "3 x 8 GPUs, Ring "
                  "(the default): 393.66 GB/s busbw", ALL_REDUCE, 16 * GIB, 24, _NVL8_PARTITION, 393.66),
    CollectiveRow("nccl-1801-gb200-3x8gpu-tree", MULTI_DOMAIN, VALIDATION, _ISSUE_1801 + "3 x 8 GPUs, "
                  "NCCL_ALGO=Tree: 485.68 GB/s busbw", ALL_REDUCE, 16 * GIB, 24, _NVL8_PARTITION, 485.68,
                  algorithm="tree"),
    CollectiveRow("nccl-tests-309-h100-8nic-2nodes", MULTI_DOMAIN, VALIDATION,
                  "[P] NVIDIA/nccl-tests#309 (qoofyk, 2025-05): HGX H100 hosts with 8 GPU-NIC pairs each, "
                  "all_reduce_perf -b 8 -e 16g on 2 nodes: 470 GB/s busbw (above the 8 x 47 GB/s the NICs carry: "
                  "the two-node tree sends each byte once, NVIDIA/nccl-tests#196)",
                  ALL_REDUCE, 16 * GIB, 16, DGX_H100, 470.0),
    CollectiveRow("p5-efa-2nodes-16g", MULTI_DOMAIN, VALIDATION,
                  "[P] aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md (2 x "
                  "p5.48xlarge, 16 GPUs, 8 B - 16 GiB; NCCL version not stated): 487.09 GB/s busbw at 16 GiB",
                  ALL_REDUCE, 16 * GIB, 16, P5, 487.09),
    CollectiveRow("a3mega-tcpxo-2nodes-8g", MULTI_DOMAIN, CALIBRATION,
                  "[P] github.com/lessizzmore/create-a3mega-ztan-fork, file ztan-NCCL-test-result (commit 02dd8f45; "
                  "2 x A3 Mega, 16 GPUs, GPUDirect-TCPXO; NCCL version not stated): 338.82 GB/s busbw at 8 GiB "
                  "(sets NIC_EFFICIENCY[\"tcp\"]: 338.82 / (1.875 x 8 x 25 GB/s) = 0.90)",
                  ALL_REDUCE, 8 * GIB, 16, A3_MEGA, 338.82),
]
