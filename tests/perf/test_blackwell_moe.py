"""Blackwell and MoE: the published B200/GB200 and expert-parallel rows, and the MoE terms of estimate()."""

from __future__ import annotations

import pytest

from clusterctl.perf.job import Parallelism
from clusterctl.perf.model_presets import preset
from clusterctl.perf.published import blackwell, moe
from clusterctl.perf.published.rows import CALIBRATION, VALIDATION, evaluate
from clusterctl.perf.published.systems import B200, DGX_B200, GB200, GB200_NVL72
from clusterctl.perf.moe import EXPERT_WEIGHT_BYTES, expert_gemm_factor, gemm_roofline, moe_load
from clusterctl.perf.training import GEMM_SHAPE_HALF, HBM_EFFICIENCY, estimate

ROWS = blackwell.ROWS + moe.ROWS
QWEN3_30B = preset("qwen3-30b-a3b")[0]
QWEN3_235B = preset("qwen3-235b-a22b")[0]

# every row inside its family's band, and explained beyond 15 %: tests/perf/test_published.py (all rows)

def test_roles_and_sources_are_honest():
    roles = [r.role for r in ROWS]
    assert set(roles) <= {CALIBRATION, VALIDATION}
    assert roles.count(VALIDATION) >= len(roles) / 3
    assert all(r.source.startswith("[P] NVIDIA-NeMo/Megatron-Bridge") for r in ROWS)
    assert {r.accelerator.name for r in ROWS} >= {"b200", "gb200"}
    assert all(r.par.expert_load == 1.0 for r in moe.ROWS)  # the source force-balances its routing

def test_blackwell_dense_rows_are_all_holdout_and_within_15_percent_on_average():
    errors = [evaluate(r).error for r in blackwell.ROWS]
    assert all(r.role == VALIDATION for r in blackwell.ROWS)
    assert abs(sum(errors) / len(errors)) < 0.1

def _qwen235(ep=32, pp=8, load=1.0, gpus=256, ic=GB200_NVL72, acc=GB200, **kw):
    par = Parallelism(8192, pp=pp, ep=ep, precision="fp8", expert_load=load, **kw)
    return estimate(QWEN3_235B, par, gpus, acc, ic)

def test_token_imbalance_raises_expert_time_and_all_to_all_bytes():
    balanced, skewed = _qwen235(load=1.0), _qwen235(load=1.3)
    assert skewed.comm["ep"]["bytes"] == pytest.approx(1.3 * balanced.comm["ep"]["bytes"])
    assert skewed.comm["ep"]["time_s"] > 1.25 * balanced.comm["ep"]["time_s"]
    assert skewed.breakdown_s["compute"] > 1.1 * balanced.breakdown_s["compute"]
    assert skewed.step_s > 1.15 * balanced.step_s

def test_derived_imbalance_is_the_multinomial_maximum():
    par = Parallelism(8192, pp=8, ep=32)
    # mu = 4096 tokens x top-8 routed copies per rank; E[max of 32] ~ mu + sigma sqrt(2 ln 32)
    assert moe_load(QWEN3_235B, par, 4096) == pytest.approx(1 + (2 * 3.4657 * (31 / 32) / 32768) ** 0.5, rel=1e-3)
    assert 1.0 < moe_load(QWEN3_235B, par, 4096) < 1.02  # large microbatch: small
    assert moe_load(QWEN3_235B, par, 64) > 1.1  # few tokens per microbatch: the busiest rank dominates
    derived = _qwen235(load=None)
    assert derived.step_s > _qwen235(load=1.0).step_s
    assert derived.comm["ep"]["load"] > 1.0

def test_all_to_all_on_nvlink_when_ep_x_tp_fits_the_domain():
    nvl72 = _qwen235(ep=32)  # EP 32 x TP 1 inside one 72-GPU NVLink domain
    dgx = _qwen235(ep=32, ic=DGX_B200, acc=B200)  # the same group spread over four 8-GPU nodes
    assert nvl72.comm["ep"]["ranks_per_nvlink_domain"] == 32
    assert dgx.comm["ep"]["ranks_per_nvlink_domain"] == 8
    # 24 of 31 peers over one 400G NIC per GPU instead of 900 GB/s NVLink: several times slower
    assert dgx.comm["ep"]["time_s"] > 5 * nvl72.comm["ep"]["time_s"]
    # EP 8 x TP 8 = 64 still fits an NVL72 domain, not a DGX B200
    wide = Parallelism(512, tp=8, ep=8, expert_load=1.0, precision="fp8")
    m = QWEN3_235B.model_copy(update={"layers": 8})
    assert estimate(m, wide, 512, GB200, GB200_NVL72).comm["ep"]["ranks_per_nvlink_domain"] == 8
    assert estimate(m, wide, 512, B200, DGX_B200).comm["ep"]["ranks_per_nvlink_domain"] == 1

def test_expert_ranks_are_tp_apart_not_tp_x_cp():
    """Megatron folds EP into DP x CP (expert order tp-ep-dp-pp): with TP 2 and CP 2 the 4 EP ranks of a
    group are 2 GPUs apart and share one 8-GPU node."""
    par = Parallelism(64, tp=2, cp=2, ep=4, expert_load=1.0)
    e = estimate(QWEN3_30B, par, 16, B200, DGX_B200)
    assert e.comm["ep"]["ranks_per_nvlink_domain"] == 4

def test_grouped_gemm_slows_with_few_tokens_per_expert():
    # roofline ridge on B200 in FP8: 0.86 x 3,432.5 TF x 10 bytes / (6 x 8 TB/s x 0.7) = 878 tokens
    rate = 0.86 * 3432.5e12
    assert EXPERT_WEIGHT_BYTES["fp8"] == 10
    assert gemm_roofline(B200, rate, "fp8", 878.4, HBM_EFFICIENCY) == pytest.approx(0.5, rel=1e-3)
    small, large = (Parallelism(512, ep=8, micro_batch=mb, precision="fp8") for mb in (1, 8))
    f_small = expert_gemm_factor(QWEN3_30B, small, 4096, B200, rate, GEMM_SHAPE_HALF, HBM_EFFICIENCY)
    f_large = expert_gemm_factor(QWEN3_30B, large, 8 * 4096, B200, rate, GEMM_SHAPE_HALF,
                                 HBM_EFFICIENCY)
    assert f_small < f_large < 1.0
    # without EP a Qwen3-235B expert sees 4096 x 8 / 128 = 256 tokens per microbatch: weight-bound
    assert expert_gemm_factor(QWEN3_235B, Parallelism(512, precision="fp8"), 4096, B200, rate, GEMM_SHAPE_HALF,
                              HBM_EFFICIENCY) < 0.4
    # the wider EP of the GB200 layout (more tokens per local expert) runs its experts faster than EP 8
    gb = _qwen235(ep=32, acc=B200, ic=GB200_NVL72)
    b = _qwen235(ep=8, acc=B200, ic=GB200_NVL72)
    assert gb.comm["ep"]["tokens_per_expert"] == 4 * b.comm["ep"]["tokens_per_expert"]
    assert gb.tokens_per_s > b.tokens_per_s
