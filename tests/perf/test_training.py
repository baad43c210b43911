"""The training model's behaviour (trends, breakdown sums, refusals) and the FLOPs count against Megatron-LM's
formula. The published rows it is calibrated and validated on: tests/perf/test_published.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterctl.perf.job import Parallelism, TrainingConfigError
from clusterctl.perf.model_presets import preset
from clusterctl.perf.published import narayanan
from clusterctl.perf.published.systems import A100, DGX_H100, H100, SELENE
from clusterctl.perf.training import estimate, simple_throughput

# The published rows (Narayanan et al. 2021 Table 1 on A100, the Llama 3 405B and NVIDIA H100 runs) are in
# clusterctl/perf/published/ and judged in tests/perf/test_published.py; here: behaviour.
H100_CLUSTER = DGX_H100


def narayanan_run(params_b, heads, hidden, layers, tp, pp, gpus, batch):
    """A Narayanan et al. 2021 Table 1 shape, run as the paper ran (clusterctl/perf/published/narayanan.py)."""
    model = narayanan.model_of(params_b, heads, hidden, layers)
    return model, estimate(model, narayanan.parallelism_of(tp, pp, batch), gpus, A100, SELENE)


def test_narayanan_shapes_are_the_papers_models():
    for row in narayanan.TABLE_1:
        assert narayanan.model_of(*row[:4]).params / 1e9 == pytest.approx(row[0], rel=0.06)


def test_narayanan_trend_larger_models_are_more_efficient():
    # the paper's point: 1T on 3,072 GPUs runs at a higher fraction of peak than 39B on 512
    small = narayanan_run(*narayanan.TABLE_1[4][:-1])[1]
    big = narayanan_run(*narayanan.TABLE_1[-1][:-1])[1]
    assert big.hardware_tflops_per_gpu > small.hardware_tflops_per_gpu


def test_megatron_flops_formula_matches_narayanan_closed_form():
    # model FLOPs per step = 72 B s l h^2 (1 + s/6h + V/12lh); with recomputation 96 B s l h^2 (1 + s/6h + V/16lh)
    B, s, l, h, V = 512, 2048, 24, 2304, 51200
    model, e = narayanan_run(1.7, 24, h, l, 1, 1, 32, B)
    closed_model = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    closed_hw = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert model.flops_per_token * B * s == pytest.approx(closed_model, rel=1e-12)
    assert e.hardware_tflops_per_gpu / e.model_tflops_per_gpu == pytest.approx(closed_hw / closed_model, rel=1e-12)


def test_step_breakdown_adds_up_and_tokens_per_second():
    model, _ = preset("llama3-70b")
    e = estimate(model, Parallelism(512, tp=4, pp=4), 256, H100, H100_CLUSTER)
    assert sum(e.breakdown_s.values()) == pytest.approx(e.step_s)
    assert e.tokens_per_s == pytest.approx(512 * 8192 / e.step_s)
    assert e.breakdown_s["pipeline bubble"] > 0 and e.breakdown_s["tp communication"] > 0


def test_pipeline_bubble_shrinks_with_interleaving():
    model, _ = preset("llama3-70b")
    plain = estimate(model, Parallelism(512, tp=8, pp=8), 256, H100, H100_CLUSTER)
    inter = estimate(model, Parallelism(512, tp=8, pp=8, virtual_stages=5), 256, H100, H100_CLUSTER)
    assert inter.breakdown_s["pipeline bubble"] < plain.breakdown_s["pipeline bubble"] / 4


def test_slower_network_costs_throughput():
    model, _ = preset("llama3-70b")
    par = Parallelism(512, tp=8, pp=1, recompute="full", overlap_grad_reduce=False)
    fast = estimate(model, par, 256, H100, H100_CLUSTER)
    slow = estimate(model, par, 256, H100, replace(H100_CLUSTER, nic_gb_per_s=12.5))
    assert slow.step_s > fast.step_s
    assert slow.breakdown_s["dp communication (exposed)"] > fast.breakdown_s["dp communication (exposed)"]


def test_memory_check_flags_a_model_that_cannot_fit():
    model, _ = preset("llama3-405b")
    e = estimate(model, Parallelism(512, tp=1, pp=1), 256, H100, H100_CLUSTER)
    assert not e.fits_memory and e.memory_gb["total"] > 1000  # 405B params x 18 bytes on one GPU


def test_moe_counts_active_parameters():
    model, _ = preset("mixtral-8x7b")
    assert model.params / 1e9 == pytest.approx(46.7, rel=0.02)        # Mixtral: 47B total
    assert model.active_params / 1e9 == pytest.approx(12.9, rel=0.02)  # 13B active


@pytest.mark.parametrize("bad,message", [
    (dict(tp=3), "heads"),
    (dict(tp=8, pp=8, dp=8), "GPUs"),
    (dict(global_batch=100), "not divisible by micro batch 1 x dp 16"),
    (dict(recompute="sometimes"), "recompute"),
    (dict(ep=2), "not an MoE model"),
])
def test_bad_layouts_are_refused_with_a_reason(bad, message):
    model, _ = preset("llama3-70b")
    par = replace(Parallelism(512, tp=8, pp=2), **bad)
    with pytest.raises(TrainingConfigError, match=message):
        estimate(model, par, 256, H100, H100_CLUSTER)


def test_simple_form():
    # throughput = GPUs x peak x MFU / FLOPs per token: 1,024 H100 at 40 % MFU on 6 x 70e9 FLOPs per token
    assert simple_throughput(6 * 70e9, 1024, 989, 0.4) == pytest.approx(1024 * 989e12 * 0.4 / 420e9)
    with pytest.raises(TrainingConfigError):
        simple_throughput(1.0, 8, 989, 1.5)


def test_fp8_speeds_up_the_linear_layers_only():
    model, _ = preset("llama3-70b")
    bf16 = estimate(model, Parallelism(512, tp=4, pp=4), 256, H100, H100_CLUSTER)
    fp8 = estimate(model, Parallelism(512, tp=4, pp=4, precision="fp8"), 256, H100, H100_CLUSTER)
    speedup = bf16.step_s / fp8.step_s
    # faster, but less than the FP8/BF16 GEMM ratio (1402.6 / 794.5 = 1.77): attention, logits,
    # element-wise work (now with FP8 casts) and communication do not speed up
    assert 1.15 < speedup < 1402.6 / 794.5
    assert fp8.breakdown_s["logits (last stage)"] == pytest.approx(bf16.breakdown_s["logits (last stage)"])
    assert fp8.mfu == pytest.approx(fp8.model_tflops_per_gpu / 989)  # MFU stays against the BF16 peak


def test_fp8_needs_an_fp8_rate():
    model, _ = preset("llama3-8b")
    with pytest.raises(TrainingConfigError, match="FP8"):
        estimate(model, Parallelism(512, tp=1, pp=1, precision="fp8"), 32, A100, SELENE)
