"""The collective model's behaviour (algorithm choice, trends, placement, blueprint links, refusals).

The nccl-tests figures its efficiencies were computed from are calibration rows in
clusterctl/perf/published/nccl.py, judged in tests/perf/test_published.py.
"""

from __future__ import annotations

import pytest

from clusterctl.perf.collectives import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    REDUCE_SCATTER,
    SEND_RECV,
)
from clusterctl.perf.interconnect import (
    Interconnect,
    collective,
    interconnect_of,
    message_sizes,
    placement,
)
from tests.helpers import plan_of, shipped

LARGE = 8 * 2**30  # nccl-tests -e 8G: the bandwidth plateau
# H100 SXM: NVLink4 900 GB/s both directions = 450 GB/s each way; 8 x 400G NDR NICs (DGX H100)
H100_NODE = Interconnect(8, 450, True, 8, 50)
H100_NODE_NO_NVLS = Interconnect(8, 450, False, 8, 50)
# A100 SXM: NVLink3 600 GB/s = 300 each way; no NVLS; 8 x 200G HDR (DGX A100)
A100_NODE = Interconnect(8, 300, False, 8, 25)


def busbw(ic, op, ranks, size=LARGE):
    return collective(op, size, ic, placement(ranks, ic))[0].busbw_gb_per_s


def within(value, target, tol=0.10):
    return abs(value / target - 1) <= tol


def test_h100_single_node_allreduce_runs_nvls_where_the_hardware_has_it():
    # the bandwidths are calibration rows (clusterctl/perf/published/nccl.py); here: the algorithm NCCL picks
    assert collective(ALL_REDUCE, LARGE, H100_NODE, placement(8, H100_NODE))[1] == "nvls"
    assert collective(ALL_REDUCE, LARGE, H100_NODE_NO_NVLS, placement(8, H100_NODE_NO_NVLS))[1] == "ring"


def test_alltoall_busbw_falls_toward_the_per_gpu_network_as_nodes_are_added():
    bws = [busbw(H100_NODE, ALL_TO_ALL, 8 * nodes) for nodes in (2, 4, 16, 64)]
    assert bws == sorted(bws, reverse=True)


def test_allgather_reducescatter_same_busbw():
    for n in (8, 64):
        assert busbw(H100_NODE, ALL_GATHER, n) == pytest.approx(busbw(H100_NODE, REDUCE_SCATTER, n))


def test_small_messages_are_latency_bound_and_tree_wins_at_scale():
    ic = H100_NODE_NO_NVLS
    small = collective(ALL_REDUCE, 8, ic, placement(1024, ic))
    assert small[1] == "tree"  # 2 log2(k) network steps beat 2(n-1) ring steps
    assert small[0].time_s < 2 * 1023 * 4e-6
    sizes = message_sizes(8, 2**33)
    bws = [busbw(ic, ALL_REDUCE, 64, s) for s in sizes]
    # bus bandwidth grows with size to the plateau; where NCCL's tuner hands over from Tree to Ring (it rates a
    # tree at 0.92 of its links, clusterctl/perf/nccl_algorithms.py) the curve may dip by a few per cent
    assert all(b >= 0.95 * max(bws[: i + 1]) for i, b in enumerate(bws))
    assert bws[-1] == pytest.approx(max(bws), rel=0.02)


def test_oversubscription_halves_the_network_bound():
    full = Interconnect(8, 450, False, 8, 50)
    half = Interconnect(8, 450, False, 8, 50, oversubscription=2.0)
    # the network is the bottleneck of both: 8 NICs x 47 GB/s, then half of it
    assert busbw(full, ALL_REDUCE, 64) == pytest.approx(8 * 47, rel=0.02)
    assert busbw(half, ALL_REDUCE, 64) == pytest.approx(8 * 47 / 2, rel=0.02)


def test_send_recv_within_and_across_nodes():
    e_in, a_in = collective(SEND_RECV, LARGE, H100_NODE, placement(2, H100_NODE))
    e_out, a_out = collective(SEND_RECV, LARGE, H100_NODE, placement(2, H100_NODE, stride=8))
    assert (a_in, a_out) == ("p2p-nvlink", "p2p-net")
    assert within(e_out.busbw_gb_per_s, 47)


def test_interconnect_from_shipped_blueprints():
    ic = interconnect_of(plan_of(shipped("dgx-h100-superpod-1su")))
    assert (ic.gpus_per_domain, ic.nvlink_gb_per_s, ic.nvls, ic.nics_per_domain, ic.nic_gb_per_s) == (8, 450, True, 8, 50)
    nvl = interconnect_of(plan_of(shipped("gb200-nvl72-8rack")))
    # one NVL72 rack: 18 trays x 4 GPUs, one 400G NIC per GPU
    assert (nvl.gpus_per_domain, nvl.nics_per_domain, nvl.nvlink_gb_per_s) == (72, 72, 900)
    p5 = interconnect_of(plan_of(shipped("aws-p5")))
    assert p5.nics_per_domain * p5.nic_gb_per_s * 8 == pytest.approx(3200)  # 32 EFA, 3,200 Gbps
    assert p5.network == "efa"


def test_accelerator_without_scale_up_figure_uses_one_gpu_domains():
    # the catalog has no scale-up bandwidth for MI300X: each GPU is its own domain, a share of the NICs
    data = shipped("lab-2node")
    for nt in data["node_types"].values():
        if nt.get("server") == "hgx-h100-8gpu":
            nt["server"] = "mi300x-8gpu"
    ic = interconnect_of(plan_of(data))
    assert (ic.gpus_per_domain, ic.nvlink_gb_per_s, ic.nvls) == (1, 0.0, False)
    assert ic.nics_per_domain * 8 == sum(n.count for n in plan_of(data).groups[0].type.nics_of("compute"))
    est, algo = collective(ALL_REDUCE, LARGE, ic, placement(8, ic))
    assert algo in ("ring", "tree") and est.busbw_gb_per_s > 0


def test_without_compute_nics_collectives_fall_back_to_sockets_on_inband():
    data = shipped("lab-2node")
    spec_group = plan_of(data).groups[0]
    nics = [{"model": n.model, "count": n.count, "role": n.role} for n in spec_group.type.nics if n.role != "compute"]
    server = spec_group.type.server.model_dump(exclude={"nics", "sources", "description", "vendor"})
    data["node_types"][spec_group.type.name] = {"spec": server | {"nics": nics}}
    ic = interconnect_of(plan_of(data))
    assert (ic.nic_kind, ic.network) == ("tcp", "tcp")


def test_interconnect_refuses_impossible_links():
    with pytest.raises(ValueError, match="scale-up"):
        Interconnect(8, 0, False, 8, 50)
    with pytest.raises(ValueError, match="NIC"):
        Interconnect(8, 450, True, 0, 50)
