"""Fabric kind and scale: RoCE with static ECMP vs InfiniBand / adaptive routing, and the per-step
straggler/jitter term that grows with the node count (sources in clusterctl/perf/published/fabric.py)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterctl.perf import interconnect as icm
from clusterctl.perf import training
from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    busbw_factor,
)
from clusterctl.perf.interconnect import (
    ECMP_EFFICIENCY,
    Interconnect,
    collective,
    group_network_gb_per_s,
    interconnect_of,
    placement,
)
from clusterctl.perf.job import Parallelism
from clusterctl.perf.published import fabric, hopper
from clusterctl.perf.published.rows import evaluate
from clusterctl.perf.published.systems import DGX_H100, H100
from clusterctl.perf.training import estimate, expected_max_normal
from tests.helpers import plan_of, shipped

SIZE = 8 * 2**30
IB = Interconnect(8, 450, True, 8, 50, network="infiniband", leaf_domains=4)
ROCE_ECMP = replace(IB, network="roce", adaptive_routing=False)
ROCE_ADAPTIVE = replace(IB, network="roce", adaptive_routing=True)  # Spectrum-X


def busbw(ic, op, ranks, stride=8):
    return collective(op, SIZE, ic, placement(ranks, ic, stride))[0].busbw_gb_per_s


@pytest.mark.parametrize("op", [ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL])
def test_static_ecmp_roce_is_below_infiniband_across_leaves_and_equal_on_one_leaf(op):
    # 16 ranks one per node: 16 nodes > 4 under one leaf group -> the spine, hashed flows
    across = busbw(ROCE_ECMP, op, 16) / busbw(IB, op, 16)
    assert across == pytest.approx(ECMP_EFFICIENCY, rel=0.02)
    assert across < 0.7
    # 4 nodes: one leaf group, no path choice, no loss
    assert busbw(ROCE_ECMP, op, 4) == pytest.approx(busbw(IB, op, 4), rel=1e-3)  # (latency 5 vs 4 us)


def test_adaptive_routing_closes_the_gap_within_published_bounds():
    ecmp, adaptive, ib = (busbw(ic, ALL_REDUCE, 64) for ic in (ROCE_ECMP, ROCE_ADAPTIVE, IB))
    assert adaptive == pytest.approx(ib, rel=1e-3)  # Spectrum-X: "InfiniBand-class"
    # NVIDIA: Spectrum-X 1.6x standard Ethernet; Meta: enhanced ECMP + QP scaling up to +40 % over ECMP,
    # still hashed, so adaptive routing gains at least that much
    assert adaptive / ecmp == pytest.approx(1.6, rel=0.02)
    assert adaptive / ecmp >= 1.4


def test_static_ecmp_slows_a_training_step_only_when_data_parallelism_crosses_leaves():
    model = hopper.GPT3_175B
    par = Parallelism(512, tp=8, pp=8, grad_bytes=4, overlap_grad_reduce=False)
    ib, ecmp = (estimate(model, par, 2048, H100, ic) for ic in (IB, ROCE_ECMP))
    assert ecmp.step_s > ib.step_s  # 32 data-parallel ranks, one per node, over 8 leaf groups
    assert ecmp.breakdown_s["dp communication (exposed)"] > 1.5 * ib.breakdown_s["dp communication (exposed)"]
    one_leaf = replace(ROCE_ECMP, leaf_domains=256)
    assert estimate(model, par, 2048, H100, one_leaf).step_s == pytest.approx(ib.step_s, rel=1e-3)


def test_interconnect_of_takes_routing_and_leaf_groups_from_the_plan():
    ib = interconnect_of(plan_of(shipped("dgx-h100-superpod-4su")))
    assert (ib.network, ib.adaptive_routing, ib.leaf_domains) == ("infiniband", True, 32)  # 32-node SU
    roce = interconnect_of(plan_of(shipped("hgx-h200-roce-1024")))
    assert (roce.network, roce.adaptive_routing) == ("roce", True)  # SN5600: Spectrum-X
    assert roce.leaf_domains == 64


def test_routing_of_static_ecmp_and_ib_without_adaptive_routing():
    tier = SimpleNamespace(switch=SimpleNamespace(description="Broadcom Tomahawk 5 Ethernet switch"))
    eth = SimpleNamespace(kind="roce", index=0, tiers=(tier, tier), nodes=128, su_nodes=16)
    assert icm._routing_of(None, eth, 8, 8) == (False, 16)
    one_tier = replace_ns(eth, tiers=(tier,))
    assert icm._routing_of(None, one_tier, 8, 8) == (False, 128)  # one leaf holds every node
    ib = SimpleNamespace(kind="infiniband", index=0, tiers=(tier, tier), nodes=128, su_nodes=32)
    plan = SimpleNamespace(fabric_spec=lambda fabric: SimpleNamespace(adaptive_routing=False))
    assert icm._routing_of(plan, ib, 8, 8) == (False, 32)
    assert icm._routing_of(plan, None, 8, 8) == (True, icm.LEAF_DOMAINS)


def replace_ns(ns, **kw):
    return SimpleNamespace(**{**vars(ns), **kw})


def test_expected_maximum_of_normals():
    assert expected_max_normal(1) == 0.0
    # exact values: 0.5642 (2), 1.5388 (10), 3.2414 (1000)
    for n, exact in ((2, 0.5642), (10, 1.5388), (1000, 3.2414)):
        assert expected_max_normal(n) == pytest.approx(exact, rel=0.05)


def test_scale_term_is_zero_on_one_node_and_grows_with_nodes():
    model = hopper.LLAMA31_8B
    terms = []
    for gpus in (8, 16, 64, 512, 4096):
        e = estimate(model, Parallelism(gpus * 4, tp=1, pp=1), gpus, H100, DGX_H100)
        terms.append(e.breakdown_s["stragglers and jitter (scale)"] / e.step_s)
    assert terms[0] == 0.0
    assert all(b > a for a, b in zip(terms, terms[1:]))
    assert 0.02 < terms[-1] < 0.06  # 512 nodes: 0.014 x E[max of 512] = 4.2 % of the step


@pytest.mark.parametrize("name", fabric.WEAK_SCALING)
def test_weak_scaling_creep(name):
    """The published step-time creep from the smallest to the largest run of one layout is reproduced
    within 1 point (Llama 3.1 405B within 1.5: its table creeps 2.4 %, the model 1.0 %)."""
    small, large = fabric.weak_pair(name)
    published = large.published() / small.published()
    predicted = large.predicted() / small.predicted()
    tolerance = 0.015 if name == "dgxc-llama3.1-405b" else 0.01
    assert abs(predicted - published) <= tolerance, (name, predicted, published)


def test_scale_constant_matters_on_the_holdout_series(monkeypatch):
    """Without the term the holdout Nemotron-4 15B table's creep (1.5 %) is missed by more than a point."""
    monkeypatch.setattr(training, "STEP_JITTER_CV", 0.0)
    small, large = fabric.weak_pair("dgxc-nemotron4-15b")
    assert abs(large.predicted() / small.predicted() - large.published() / small.published()) > 0.01


def test_static_ecmp_brings_megascale_large_runs_closer():
    """Holdout for ECMP_EFFICIENCY: MegaScale's Megatron-LM baseline on RoCE with ECMP hashing. At 6,144 to
    12,288 GPUs the data-parallel groups (96-192 nodes) leave the 64-node leaf group; modelling the fabric
    as adaptive overestimates those runs by 5-11 %, static ECMP by 1-7 %."""
    large = [r for r in fabric.MEGASCALE_ROWS if r.gpus >= 6144]
    static = [abs(evaluate(r).error) for r in large]
    adaptive = [abs(evaluate(replace(r, interconnect=replace(r.interconnect, adaptive_routing=True))).error)
                for r in large]
    assert sum(static) < 0.6 * sum(adaptive)
    assert max(static) < 0.08
    # below the leaf group (256-1,024 GPUs: data-parallel groups of 4-16 nodes) the routing changes nothing
    small = fabric.MEGASCALE_ROWS[0]
    assert evaluate(small).predicted == pytest.approx(evaluate(
        replace(small, interconnect=replace(small.interconnect, adaptive_routing=True))).predicted, rel=1e-3)


# every row inside its family's band, and explained beyond 15 %: tests/perf/test_published.py (all rows)


def test_fabric_rows_keep_a_third_as_holdouts():
    roles = [r.role for r in fabric.ROWS]
    assert roles.count("validation") >= len(roles) / 3


@settings(max_examples=200, deadline=None)
@given(g=st.sampled_from([1, 4, 8, 72]), nics=st.sampled_from([1, 4, 8]), leaf=st.integers(1, 64),
       ranks=st.integers(2, 4096), stride=st.sampled_from([1, 2, 4, 8, 64]),
       op=st.sampled_from([ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL]))
def test_static_ecmp_never_helps_and_costs_only_across_leaves(g, nics, leaf, ranks, stride, op):
    ib = Interconnect(g, 450 if g > 1 else 0, g >= 4, nics * max(1, g // 8), 50, leaf_domains=leaf)
    roce = replace(ib, network="roce", adaptive_routing=False)
    pl = placement(ranks, ib, stride)
    t_ib = collective(op, SIZE, ib, pl)[0].time_s
    t_roce = collective(op, SIZE, roce, pl)[0].time_s
    assert t_roce >= t_ib * (1 - 1e-12)
    if pl.span <= leaf or pl.domains == 1:  # one leaf group: only the latency per step (5 vs 4 us) differs
        assert t_roce <= t_ib + 2 * ranks * 1e-6 * (1 + 1e-9)  # at most 1 us more for each of <= 2n steps
    elif g == 1:  # one-GPU domains: the network is the bottleneck, and loses 1 - ECMP_EFFICIENCY of it: the
        # bandwidth part of the time grows by 1/0.632 - 1 = 0.58 (the latency part, NCCL's per step, is the same)
        bandwidth_part = SIZE * busbw_factor(op, ranks) / (group_network_gb_per_s(ib, pl) * 1e9)
        assert t_roce - t_ib > 0.5 * bandwidth_part
