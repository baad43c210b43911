"""Tests for clusterctl.perf.collectives (numbers computed by hand in comments)."""

import dataclasses
from itertools import pairwise

import pytest

from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    OPS,
    REDUCE_SCATTER,
    SEND_RECV,
    CollectiveEstimate,
    Link,
    busbw_factor,
    hierarchical,
    hierarchical_time,
    ring,
    ring_time,
)

GIB = 1 << 30


def test_busbw_factors_for_8_ranks():
    # AllReduce 2(n-1)/n = 14/8 = 1.75; AG/RS/A2A (n-1)/n = 7/8 = 0.875; SendRecv 1.
    assert busbw_factor(ALL_REDUCE, 8) == 1.75
    assert busbw_factor(ALL_GATHER, 8) == 0.875
    assert busbw_factor(REDUCE_SCATTER, 8) == 0.875
    assert busbw_factor(ALL_TO_ALL, 8) == 0.875
    assert busbw_factor(SEND_RECV, 8) == 1.0


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("ranks", [2, 8, 64])
def test_busbw_equals_link_bandwidth_without_latency(op, ranks):
    # t = S*factor/B  =>  algbw = B/factor  =>  busbw = B ("busbw reflects the bottleneck").
    est = ring(op, GIB, ranks, Link(bandwidth_gb_per_s=48.0, latency_us=0.0))
    assert est.busbw_gb_per_s == pytest.approx(48.0)
    assert est.algbw_gb_per_s == pytest.approx(48.0 / busbw_factor(op, ranks))


def test_allreduce_8_ranks_exact_time():
    # S = 1e9 B, B = 100 GB/s, latency 5 us: steps = 2*7 = 14 -> 70 us;
    # bandwidth term 1e9 * 1.75 / 1e11 = 0.0175 s; t = 0.01757 s.
    est = ring(ALL_REDUCE, 10**9, 8, Link(100.0, 5.0))
    assert est.time_s == pytest.approx(0.01757)
    assert est.algbw_gb_per_s == pytest.approx(1 / 0.01757)  # 56.915 GB/s
    assert est.busbw_gb_per_s == pytest.approx(1.75 / 0.01757)  # 99.60 GB/s


def test_two_ranks():
    link = Link(100.0, 10.0)
    # AllReduce n=2: factor 1, steps 2 -> t = 2*10e-6 + 1e9/1e11 = 0.01002 s.
    ar = ring(ALL_REDUCE, 10**9, 2, link)
    assert ar.time_s == pytest.approx(0.01002)
    assert ar.algbw_gb_per_s == pytest.approx(1 / 0.01002)  # 99.80 GB/s
    assert ar.busbw_gb_per_s == pytest.approx(1 / 0.01002)  # factor 2*1/2 = 1
    # AllGather n=2: factor 1/2, steps 1 -> t = 10e-6 + 0.005 = 0.00501 s; busbw = 0.5/0.00501.
    ag = ring(ALL_GATHER, 10**9, 2, link)
    assert ag.time_s == pytest.approx(0.00501)
    assert ag.busbw_gb_per_s == pytest.approx(0.5 / 0.00501)
    # SendRecv: one step, factor 1 -> t = 10e-6 + 0.01 = 0.01001 s.
    sr = ring(SEND_RECV, 10**9, 2, link)
    assert sr.time_s == pytest.approx(0.01001)
    assert sr.busbw_gb_per_s == sr.algbw_gb_per_s == pytest.approx(1 / 0.01001)


@pytest.mark.parametrize("op", [ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL])
def test_single_rank_is_free(op):
    est = ring(op, GIB, 1, Link(100.0, 10.0))
    assert est == CollectiveEstimate(op, GIB, 1, 0.0, 0.0, 0.0)
    assert busbw_factor(op, 1) == 0.0


def test_hierarchical_allreduce_8x16_worked_example():
    # g = 8 GPUs/domain, k = 16 domains, n = 128, S = 1e9 B, no latency.
    # intra (RS + AG over NVLink 450 GB/s): 2*7/8 * 1e9/450e9 = 1.75/450 = 7/1800 s
    # inter (AR of S/8 over 48 GB/s):      2*15/16 * 1e9/8/48e9 = 0.234375/48 = 5/1024 s
    # t = 7/1800 + 5/1024 = 0.0038889 + 0.0048828 = 0.0087717 s
    nvlink, network = Link(450.0, 0.0), Link(48.0, 0.0)
    t = 7 / 1800 + 5 / 1024
    est = hierarchical(ALL_REDUCE, 10**9, 128, 8, nvlink, network)
    assert est.time_s == pytest.approx(t)
    assert est.time_s == pytest.approx(0.0087717, rel=1e-4)
    # algbw = 1/t = 114.00 GB/s; busbw = algbw * 2*127/128 = 226.22 GB/s
    assert est.algbw_gb_per_s == pytest.approx(1 / t)
    assert est.busbw_gb_per_s == pytest.approx(1.984375 / t)
    assert est.busbw_gb_per_s == pytest.approx(226.22, abs=0.01)
    # Flat ring over the network: 1.984375 / 48 = 0.04134 s -> hierarchical is ~4.7x faster.
    flat = ring(ALL_REDUCE, 10**9, 128, network)
    assert flat.time_s == pytest.approx(1.984375 / 48)
    assert flat.time_s / est.time_s == pytest.approx(4.713, abs=1e-3)


def test_hierarchical_with_latency_and_allgather():
    nvlink, network = Link(450.0, 2.0), Link(48.0, 10.0)
    # AllReduce latency: 2*7 * 2 us + 2*15 * 10 us = 28 + 300 = 328 us on top of the bandwidth terms.
    t = hierarchical_time(ALL_REDUCE, 10**9, 128, 8, nvlink, network)
    assert t == pytest.approx(7 / 1800 + 5 / 1024 + 328e-6)
    # AllGather: half of each AllReduce term: 7/3600 + 5/2048 + (7*2 + 15*10) us = ... + 164 us.
    t_ag = hierarchical_time(ALL_GATHER, 10**9, 128, 8, nvlink, network)
    assert t_ag == pytest.approx(7 / 3600 + 5 / 2048 + 164e-6)
    assert hierarchical_time(REDUCE_SCATTER, 10**9, 128, 8, nvlink, network) == t_ag


def test_hierarchical_degenerates_to_flat_ring():
    nvlink, network = Link(450.0, 1.0), Link(48.0, 5.0)
    # one domain -> ring over NVLink; one GPU per domain -> ring over the network
    assert hierarchical_time(ALL_REDUCE, GIB, 8, 8, nvlink, network) == pytest.approx(
        ring_time(ALL_REDUCE, GIB, 8, nvlink)
    )
    assert hierarchical_time(ALL_REDUCE, GIB, 16, 1, nvlink, network) == pytest.approx(
        ring_time(ALL_REDUCE, GIB, 16, network)
    )


@pytest.mark.parametrize("op", OPS)
def test_time_monotonic_in_size(op):
    link = Link(48.0, 8.0)
    sizes = [0, 1, 1 << 10, 1 << 20, 1 << 30, 1 << 34]
    times = [ring_time(op, s, 8, link) for s in sizes]
    assert all(a < b for a, b in pairwise(times))
    if op in (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER):
        h = [hierarchical_time(op, s, 32, 8, Link(450.0, 1.0), link) for s in sizes]
        assert all(a < b for a, b in pairwise(h))


def test_empty_message_costs_latency_only():
    # 14 steps * 5 us = 70 us; bandwidths stay finite.
    est = ring(ALL_REDUCE, 0, 8, Link(100.0, 5.0))
    assert est.time_s == pytest.approx(70e-6)
    assert est.algbw_gb_per_s == 0.0


def test_link_is_frozen():
    link = Link(48.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        link.bandwidth_gb_per_s = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: Link(0.0, 1.0), "bandwidth must be > 0"),
        (lambda: Link(-1.0, 1.0), "bandwidth must be > 0"),
        (lambda: Link(float("nan"), 1.0), "bandwidth must be > 0"),
        (lambda: Link(10.0, -1.0), "latency must be >= 0"),
        (lambda: ring(ALL_REDUCE, GIB, 0, Link(1.0)), "ranks must be an integer >= 1"),
        (
            lambda: ring(ALL_REDUCE, GIB, 2.5, Link(1.0)),
            "ranks must be an integer >= 1",
        ),
        (lambda: ring(ALL_REDUCE, -1, 8, Link(1.0)), "size must be >= 0"),
        (lambda: ring("broadcast_all", GIB, 8, Link(1.0)), "unknown collective"),
        (lambda: busbw_factor(ALL_REDUCE, 0), "ranks must be an integer >= 1"),
        (
            lambda: hierarchical(ALL_REDUCE, GIB, 12, 8, Link(450.0), Link(48.0)),
            "multiple of gpus_per_domain",
        ),
        (
            lambda: hierarchical(ALL_REDUCE, GIB, 16, 0, Link(450.0), Link(48.0)),
            "gpus_per_domain must be an integer >= 1",
        ),
        (
            lambda: hierarchical(ALL_TO_ALL, GIB, 16, 8, Link(450.0), Link(48.0)),
            "unknown collective",
        ),
    ],
)
def test_invalid_inputs_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
