"""Collectives past one NVLink domain and small messages (clusterctl/perf/nccl_algorithms.py).

The expectations are the published figures, written out here (coreweave/nccl-tests README, NVIDIA/nccl#1801,
NVIDIA/nccl#1244, deepseek-ai/DeepEP#303, Azure/AI-benchmarking-guide); the rows carrying them, with sources,
are in clusterctl/perf/published/nccl_domains.py and nccl_small.py.
"""

from __future__ import annotations

import json

import pytest

from clusterctl.perf.collectives import ALL_REDUCE
from clusterctl.perf.interconnect import collective, placement
from clusterctl.perf.nccl_algorithms import tree_traffic
from clusterctl.perf.published.all_rows import families
from clusterctl.perf.published.nccl_domains import ROWS as DOMAIN_ROWS
from clusterctl.perf.published.nccl_small import ROWS as SMALL_ROWS
from clusterctl.perf.published.rows import VALIDATION, evaluate
from clusterctl.perf.published.systems import GB200_NVL72
from tests.helpers import cli

GIB = 2**30
BY_ID = {r.id: r for r in DOMAIN_ROWS + SMALL_ROWS}


def _busbw(racks: int, size: int) -> float:
    return collective(ALL_REDUCE, size, GB200_NVL72, placement(72 * racks, GB200_NVL72))[0].busbw_gb_per_s


@pytest.mark.parametrize("row_id, racks, size, published", [
    ("gb200-nvl72-1rack-4g", 1, 4 * GIB, 839.16),
    ("gb200-nvl72-2racks-16g", 2, 16 * GIB, 810.41),
    ("gb200-nvl72-20racks-16g", 20, 16 * GIB, 405.74),
])
def test_gb200_allreduce_rows_are_within_their_band(row_id, racks, size, published):
    row = BY_ID[row_id]
    assert (row.busbw_gb_per_s, row.ranks, row.size_bytes) == (published, 72 * racks, size)
    band = families()[row.family].band
    assert abs(_busbw(racks, size) / published - 1) <= band


def test_gb200_allreduce_busbw_falls_as_the_job_spans_more_racks():
    # CoreWeave GB200 NVL72, NCCL 2.26.2: 839.16 (1 rack, 4 GiB) > 810.41 (2 racks) > 405.74 (20 racks, 16 GiB)
    one, two, twenty = _busbw(1, 4 * GIB), _busbw(2, 16 * GIB), _busbw(20, 16 * GIB)
    assert one > two > twenty
    assert twenty / one == pytest.approx(405.74 / 839.16, abs=0.05)  # about half: the tree crosses twice
    # and it keeps falling, slowly, at a mid size: latency grows with 2 floor(log2 racks) network steps
    mids = [_busbw(r, 64 * 2**20) for r in (1, 2, 4, 8, 16)]
    assert mids == sorted(mids, reverse=True)


def test_tree_traffic_per_domain_follows_nccls_double_binary_tree():
    assert [tree_traffic(k) for k in (1, 2, 3, 4, 5, 8, 20)] == [0, 1, 1.5, 2, 2, 2, 2]


def test_nccl_tuner_keeps_ring_where_a_forced_tree_is_faster():
    # NVIDIA/nccl#1801, three 8-GPU GB200 partitions over InfiniBand: default Ring 393.66, NCCL_ALGO=Tree 485.68
    ring, tree = BY_ID["nccl-1801-gb200-3x8gpu-ring"], BY_ID["nccl-1801-gb200-3x8gpu-tree"]
    pl = placement(24, ring.interconnect)
    assert collective(ALL_REDUCE, 16 * GIB, ring.interconnect, pl)[1] == "ring"
    assert evaluate(ring).predicted < evaluate(tree).predicted
    assert (ring.busbw_gb_per_s, tree.busbw_gb_per_s) == (393.66, 485.68)


@pytest.mark.parametrize("row_id, published_us", [
    ("small-h20-1node-1k", 16.38),               # one H20 node, deepseek-ai/DeepEP#303
    ("small-h20-1node-4k", 16.69),
    ("small-h20-2nodes-nvlstree-8b", 47.60),     # two H20 nodes, NCCL_ALGO=NVLSTree, NVIDIA/nccl#1244
    ("small-h20-2nodes-nvlstree-512b", 46.58),
    ("small-h100-azure-1k", 25.6),               # one ND H100 v5 node, Azure/AI-benchmarking-guide
])
def test_small_messages_of_two_systems_are_within_25_percent(row_id, published_us):
    row = BY_ID[row_id]
    assert row.role == VALIDATION and row.time_us == published_us
    assert abs(row.predicted() / published_us - 1) <= 0.25


def test_report_racks_view_shows_busbw_falling_with_domains(tmp_path):
    r = cli("report", "blueprints/gb200-nvl72-8rack.yaml", "--racks", "--format", "json")
    assert r.returncode == 0, r.stderr
    scaling = json.loads(r.stdout)["collectives"]["domain_scaling"]
    assert [s["domains"] for s in scaling] == [1, 2, 4, 8]
    large = [s["large_busbw_gb_per_s"] for s in scaling]
    mid = [s["mid_busbw_gb_per_s"] for s in scaling]
    # flat within 1 % once the tree crosses twice (4 domains and more), never rising more
    assert all(b <= a * 1.01 for a, b in zip(large, large[1:])) and large[-1] < 0.6 * large[0]
    assert mid == sorted(mid, reverse=True) and mid[-1] < mid[0]
    assert all("large_busbw_sharp_gb_per_s" in s for s in scaling)  # the fabric has SHARP: shown beside
    md = cli("report", "blueprints/gb200-nvl72-8rack.yaml", "--racks").stdout
    assert "**AllReduce as a job spans more NVLink domains**" in md
    assert "| NVLink domains | GPUs | busbw 8 GiB (GB/s) |" in md
    plain = cli("report", "blueprints/gb200-nvl72-8rack.yaml", "--format", "json")
    assert "domain_scaling" not in json.loads(plain.stdout)["collectives"]
