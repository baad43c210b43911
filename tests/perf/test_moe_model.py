"""MoE model options (MLA, shared experts, dense leading layers, MTP) and the MoE terms of clusterctl/perf/moe.py,
against published figures written here as literals with their sources."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clusterctl.blueprint.training import ModelSpec, TrainingSpec
from clusterctl.perf import moe
from clusterctl.perf.job import Parallelism
from clusterctl.perf.layout_rules import check, pipeline_split
from clusterctl.perf.model_presets import preset
from clusterctl.perf.published import moe_families
from clusterctl.perf.published.rows import evaluate
from clusterctl.perf.published.systems import B200, DGX_B200, GB200, GB200_NVL72, H100
from clusterctl.perf.training import GEMM_SHAPE_HALF, HBM_EFFICIENCY, SUSTAINED_GEMM, estimate
from clusterctl.perf.workload import parallelism

DSV3 = preset("deepseek-v3")[0]
KIMI_K2 = preset("kimi-k2")[0]
SCOUT = preset("llama4-scout")[0]
MIXTRAL = preset("mixtral-8x7b")[0]
QWEN3_30B = preset("qwen3-30b-a3b")[0]

# (model, published TFLOP/s per GPU, published tokens/s per GPU, causal count?) - NVIDIA's FLOPs per token are
# the ratio of the two (research notes, moe_scaling.md sec. 1b):
RATIOS = [
    # Megatron-Bridge docs/performance-summary.md 26.08, DeepSeek-V3 GB200 256 GPUs MXFP8 (with MTP)
    ("deepseek-v3 26.08 GB200", DSV3, 1276, 4912, True),
    # Megatron-Bridge performance-summary-archive.md 25.09, DeepSeek-V3 H100 1024 GPUs FP8 (with MTP)
    ("deepseek-v3 25.09 H100", DSV3, 338, 1297, True),
    # 25.11 "(w/o MTP)", DeepSeek-V3 GB300 256 GPUs BF16
    ("deepseek-v3 25.11 no MTP", DSV3.model_copy(update={"mtp_depth": 0}), 961, 3848, True),
    # Megatron-Bridge 26.06, Kimi-K2 GB300 256 GPUs MXFP8
    ("kimi-k2 26.06 GB300", KIMI_K2, 1099, 5372, True),
    # NeMo performance summary, NeMo 25.07, Llama 4 Scout GB200 64 GPUs FP8, seq 8192
    ("llama4-scout nemo25.07", SCOUT, 1501, 13783, True),
    # NVIDIA/dgxc-benchmarking llama4/README.md @c5c765f: "The model flops for LLAMA4 Maverick BF16 for GBS=1 is
    # 8.92e14" (one sequence of 8192 tokens)
    ("llama4-maverick dgxc", preset("llama4-maverick")[0], 8.92e14 / 8192 / 1e12, 1, True),
    # NeMo performance summary, NeMo 25.02, Mixtral 8x7B B200 64 GPUs FP8 (NeMo 2.0 then counted the whole
    # score matrix: nemo/utils/flops_formulas.py gained causal_self_attn later)
    ("mixtral-8x7b nemo25.02", MIXTRAL, 1282, 15457, False),
]


@pytest.mark.parametrize("name,model,tflops,tokens,causal", RATIOS, ids=[r[0] for r in RATIOS])
def test_flops_per_token_match_the_published_tflops_over_tokens(name, model, tflops, tokens, causal):
    flops = model.flops_per_token_causal if causal else model.flops_per_token
    assert flops == pytest.approx(tflops * 1e12 / tokens, rel=0.01)


def test_deepseek_v3_parameters_are_the_reports():
    # DeepSeek-V3 report abstract: "671B total parameters with 37B activated for each token"
    assert DSV3.params == pytest.approx(671e9, rel=0.005)
    assert DSV3.active_params == pytest.approx(37e9, rel=0.02)
    # the MTP module: one MoE layer and its 2h x h projection (the report's 14B adds embedding and head copies)
    assert 11e9 < DSV3.mtp_params + DSV3.attention_params + DSV3.shared_expert_params + DSV3.routed_expert_params < 12e9
    # Kimi K2 "1T total" (research notes, shapes table)
    assert KIMI_K2.params == pytest.approx(1.0e12, rel=0.04)


def test_mla_dense_layers_and_mtp_change_the_count_as_megatron_counts_them():
    plain = DSV3.model_copy(update={"mtp_depth": 0})
    # one MTP module: a layer, the 2h x h projection and one more output layer
    layer = plain.dense_flops_per_token_layer + plain.attention_flops_per_token_layer
    extra = DSV3.flops_per_token - plain.flops_per_token
    assert extra == pytest.approx(layer + 6 * 7168 * 129280 + 6 * (2 * 7168**2 + 3 * 7168), rel=0.01)
    # the three dense layers are as wide as an MoE layer's 8 routed + 1 shared experts: 18432 = 9 x 2048
    assert DSV3.mlp_width == pytest.approx(18432)
    # MLA scores: a (d_qk + d_v) = 128 x (192 + 128) per position, not 2 x 128 x 128
    assert DSV3.attention_flops_per_token_layer == 6 * 4096 * 128 * (192 + 128)


def test_mla_fields_go_together_and_moe_options_need_experts():
    base = dict(layers=4, hidden=512, heads=8, vocab=1000, seq_len=128)
    with pytest.raises(ValidationError, match="missing qk_rope_head_dim"):
        ModelSpec(**base, kv_lora_rank=64, qk_nope_head_dim=32, v_head_dim=32)
    with pytest.raises(ValidationError, match="q_lora_rank"):
        ModelSpec(**base, q_lora_rank=128)
    with pytest.raises(ValidationError, match="set experts"):
        ModelSpec(**base, shared_experts=1)
    ok = ModelSpec(**base, experts=8, topk=2, shared_experts=1, leading_dense_layers=1, mtp_depth=1,
                   kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32)
    assert ok.mtp_depth == 1


def test_deepseek_v3_pipeline_counts_mtp_embedding_and_loss_as_layers():
    # Megatron-Bridge's layout "Et*4|(t*4|)*14tmL": 61 layers + 1 MTP + embedding + loss = 64 over 16 stages
    assert DSV3.pipeline_layers == 62
    assert pipeline_split(DSV3.pipeline_layers, 4, 4) == 2
    assert check(DSV3, Parallelism(4096, pp=4, virtual_stages=4, ep=64), 256) == 64


def test_grouped_gemm_width_factor_agrees_with_deepgemm():
    # DeepGEMM README @2e7e580 (H800, FP8, contiguous grouped, M 4096-8192 per group): N 7168 x K 2048 (the
    # DeepSeek-V3 down-projection, K = expert width) 1,214 TFLOPS against N 4096 x K 7168 1,346 TFLOPS
    published = 1214 / 1346
    rate = SUSTAINED_GEMM * H100.fp8_mamf_tflops * 1e12
    par = Parallelism(4096, ep=64, precision="fp8")
    factor = moe.expert_gemm_factor(DSV3, par, 65536, H100, rate, GEMM_SHAPE_HALF, HBM_EFFICIENCY)
    assert factor == pytest.approx(published, rel=0.07)


def test_fp8_grouped_gemm_share_reproduces_its_kernel_timings_and_a_qwen3_run():
    # pytorch/ao PR #3193 (MXFP8 MoE training benchmark): BF16 / MXFP8 time at the Llama 4 (N 8192) and
    # DeepSeek-V3 (N 2048) expert shapes - the two points the constants were solved from
    for n, bf16_ms, fp8_ms in ((8192, 252.799, 185.525), (2048, 96.285, 83.764)):
        assert moe.FP8_GROUPED_GEMM_FLOOR + moe.FP8_CAST_WIDTH / n == pytest.approx(fp8_ms / bf16_ms, rel=0.01)
    # a holdout [S]: mlc-ai/pith-train#79, Qwen3-30B-A3B on 8 B200, PP 2, EP 4, force-balanced, dropless:
    # FP8 18.20k, BF16 19.74k tokens/s/GPU - FP8 slower with 768-wide experts
    runs = {p: estimate(QWEN3_30B, Parallelism(256, pp=2, ep=4, micro_batch=4, precision=p, expert_load=1.0), 8,
                        B200, DGX_B200).tokens_per_s for p in ("bf16", "fp8")}
    assert runs["fp8"] < runs["bf16"]
    assert runs["fp8"] / runs["bf16"] == pytest.approx(18.20 / 19.74, rel=0.06)
    # wide experts still gain: Llama 4 Scout's 8192 runs its experts faster in FP8 than in BF16
    assert moe.fp8_expert_time_factor(SCOUT, Parallelism(64, precision="fp8"), 2.0, 1.0) < 2.0


def test_flex_dispatcher_reaches_hybridep_bandwidth_on_nvl72_and_sends_once_per_remote_domain():
    # deepseek-ai/DeepEP hybrid-ep docs/README_Hybrid-EP.md: GB200 MNNVL, 32 ranks, 32 SMs, BF16 dispatch
    # 484.22 GB/s algorithm bandwidth
    par = Parallelism(4096, pp=4, virtual_stages=4, ep=32, precision="fp8", expert_load=1.0, moe_flex_dispatcher=True)
    ep = estimate(DSV3, par, 256, GB200, GB200_NVL72).comm["ep"]
    assert ep["bytes"] / ep["time_s"] / 1e9 == pytest.approx(484.22, rel=0.05)
    # top-8 of 64 ranks on 8-GPU domains: a token reaches 7 x (1 - (7/8)^8) = 4.6 remote domains, not 7 copies
    assert moe.remote_copy_share(DSV3, 64, 8) == pytest.approx(7 * (1 - (7 / 8) ** 8) / 7, rel=1e-6)
    assert moe.remote_copy_share(DSV3, 64, 64) == 1.0
    nccl = estimate(DSV3, Parallelism(4096, pp=4, virtual_stages=4, ep=32, precision="fp8", expert_load=1.0), 256,
                    B200, DGX_B200)
    flex = estimate(DSV3, Parallelism(4096, pp=4, virtual_stages=4, ep=32, precision="fp8", expert_load=1.0,
                                      moe_flex_dispatcher=True), 256, B200, DGX_B200)
    assert flex.comm["ep"]["time_s"] < 0.75 * nccl.comm["ep"]["time_s"]


def test_overlap_hides_the_all_to_all_and_a_capacity_factor_caps_the_load():
    base = dict(pp=4, virtual_stages=4, ep=64, precision="fp8", moe_flex_dispatcher=True)
    exposed = estimate(DSV3, Parallelism(4096, expert_load=1.0, **base), 256, B200, DGX_B200)
    hidden = estimate(DSV3, Parallelism(4096, expert_load=1.0, overlap_moe_comm=True, **base), 256, B200, DGX_B200)
    assert hidden.breakdown_s["ep communication"] < exposed.breakdown_s["ep communication"]
    assert hidden.step_s < exposed.step_s
    par = Parallelism(4096, ep=64, expert_load=1.6, capacity_factor=1.25)
    assert moe.moe_load(DSV3, par, 4096) == 1.25
    assert moe.moe_load(DSV3, Parallelism(4096, ep=64, expert_load=1.6), 4096) == 1.6


def test_moe_rows_of_deepseek_mixtral_and_llama4_within_15_percent_or_explained():
    inside = {r.model.name for r in moe_families.ROWS if abs(evaluate(r).error) <= 0.15}
    assert {"deepseek-v3", "mixtral-8x7b", "mixtral-8x22b", "llama4-scout"} <= inside
    # Llama 4 Maverick: 400 B (dgxc "400b"), alternate layers MoE
    assert preset("llama4-maverick")[0].params == pytest.approx(400e9, rel=0.01)
    for r in moe_families.ROWS:
        assert abs(evaluate(r).error) <= 0.15 or r.explanation, r.id
        assert r.par.expert_load == 1.0  # NVIDIA force-balances its MoE benchmarks: the rows say so


def test_the_blueprint_states_the_moe_run_options():
    spec = TrainingSpec(global_batch=4096, ep=64, expert_load=1.2, capacity_factor=1.25, moe_flex_dispatcher=True,
                        overlap_moe_comm=True)
    par = parallelism(spec, DSV3, 1, 4, 256)
    assert (par.expert_load, par.capacity_factor, par.moe_flex_dispatcher, par.overlap_moe_comm) == (
        1.2, 1.25, True, True)
