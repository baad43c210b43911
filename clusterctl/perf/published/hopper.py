"""Published H100 training runs (BF16 and FP8): model TFLOP/s per GPU of the estimate against the measured
throughput of runs with a published shape and layout.

Roles. The NVIDIA benchmark rows (DGX Cloud recipes, NeMo and Megatron-Bridge performance summaries) and the
Nemotron-4 reports were collected *after* the constants were set on Narayanan et al. 2021 and the nccl-tests
figures (commit "73 published H100 runs ... as tests"); no constant was changed for them: they are
``validation`` rows. They did expose four changes of the model's *structure*, made in that same commit
(git log --follow -p clusterctl/perf/training.py), so they are a holdout for the constants, not for the structure:

1. the context-parallel KV exchange carries this TP rank's KV heads only (``2 s/cp x kv / tp`` bytes, was
   all KV heads);
2. the distributed optimizer reduce-scatters the gradients and all-gathers the updated *bf16* weights (not
   one fp32 all-reduce-sized exchange), and the all-gather overlaps with the next step's first forward;
3. the data-parallel reduction runs over the ``dp x cp`` ranks that hold the same weights (was ``dp``);
4. the busiest pipeline stage holds ``ceil(L / pp)`` layers over all its interleaved chunks (was
   ``ceil(L / (pp v)) x v``, which overcounted uneven interleaved splits).

A later cleanup (commit "simplifications from reading the change") also sharded the optimizer step over
``dp x cp`` like the memory estimate. The two Llama 3 405B 8K rows of Dubey et al. 2024 Table 4 (8,192 and
16,384 GPUs) were in the commit that introduced the calibration tests ("calibration tests (nccl-tests,
Narayanan Table 1, Llama 3)") and were in view when the constants were set: they are ``calibration`` rows,
although their test said "not used to fit". The 128K-context row of the same table came later:
``validation``.

Every row gives the model shape and the parallel layout its source publishes, and the measured figure. One
accelerator and one interconnect for all rows: H100 SXM on DGX H100 nodes (8 GPUs on NVLink4/NVSwitch, 8 x
400 Gb/s per node). The Nemotron-4 reports name DGX H100 nodes with 8 x 400 Gb/s InfiniBand; the DGX Cloud
benchmark READMEs say "DGX H100" without the fabric (assumed the same); Llama 3 ran on Meta's 8 x H100
servers with RoCE (same node shape).

What is compared. ``e.model_tflops_per_gpu`` counts model FLOPs the way Megatron-LM does (GQA-aware, full
causal score matrix, no recomputation; see clusterctl/perf/training.py). Sources count differently:
the older DGX Cloud READMEs count Nemotron-4 attention as if it had no GQA, Megatron-Bridge halves the
causal score FLOPs. So wherever a source publishes a measured *throughput* (seconds per step or tokens
per second per GPU), the published figure used here is that throughput times the Megatron count of the
row's shape, ``global batch x seq x flops_per_token / step / GPUs``; only where a source publishes no
throughput, or a more precise utilisation figure than its rounded step time, is its own TFLOP/s or MFU x 989
used, and the row says so. tests/perf/test_published_runs.py checks the shapes against the per-token
FLOP counts the sources print.

Settings a source does not state take the Parallelism defaults (micro batch 1, no recomputation, sequence
parallelism, flash attention, distributed optimizer with overlapped fp32 gradient reduction); where the
configuration file of the run states them (NeMo-Framework-Launcher / DGX Cloud YAML) those values are used.
TP communication overlap (Transformer Engine userbuffers, ``ub_tp_comm_overlap: true`` in the NeMo configs
of every TP > 1 DGX Cloud row) has no switch in the model: it always puts TP collectives on the critical path.

Not added, because the model cannot express them: GPT-OSS 120B (Megatron-Bridge, H100, BF16: alternating
128-token sliding-window attention, attention sinks), DeepSeek-V3 / Kimi K2 (multi-head latent attention),
Nemotron-H / Nemotron 3 (Mamba hybrids), and FSDP rows (NeMo AutoModel "DGX-H100, BF16" table: per-layer
parameter all-gathers, ZeRO-3, are not modelled; the torchtitan runs, FSDP2-based, were not examined). The
Megatron-LM README's 2B-462B weak-scaling table is an image (shapes not in text) and is not used. The
Nemotron-4 340B report's earlier batch-ramp stages (fewer GPUs) were not found in a stored copy: not used.

FP8. The FP8 rows (family ``h100-fp8-benchmarks``) are the FP8 rows found (H100, >= 64 GPUs, shapes as
above) with their layouts (``precision="fp8"``) and measured throughput, compared the same way (model
TFLOP/s per GPU, Megatron count) and held to their family's band like every other row; the H100's FP8 rate
is the catalog's measured FP8 MAMF (1,402.6 TFLOP/s). NVIDIA's own MFU for FP8 rows is against the 1,979
TFLOP/s FP8 peak.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from clusterctl.perf.job import ModelShape, Parallelism
from clusterctl.perf.published.rows import (
    CALIBRATION,
    VALIDATION,
    Family,
    Row,
    TrainingRow,
)
from clusterctl.perf.published.systems import DGX_H100, H100

BENCH_BF16 = "h100-bf16-benchmarks"
PRETRAINING = "h100-bf16-pretraining"
FP8 = "h100-fp8-benchmarks"
MARGIN = 0.03
"""points added to each family's observed spread to make its band (the same for every family here)"""

FAMILIES: list[Family] = [
    Family(BENCH_BF16, 0.131,
           "largest |error| of the family + 3 points (run-to-run spread of the published step times)", "NVIDIA DGX Cloud benchmark recipes, BF16, 64-2,304 H100", margin=MARGIN),
    Family(PRETRAINING, 0.158,
           "largest |error| of the family + 3 points (the reports round their figures and leave settings unstated)",
           "pre-training runs reported in technical reports (Nemotron-4 15B/340B, Llama 3 405B), 768-16,384 H100",
           margin=MARGIN),
    Family(FP8, 0.196,
           "largest |error| of the family + 3 points (run-to-run spread of the published figures)",
           "FP8 benchmark rows: DGX Cloud recipes, NeMo 24.07 and Megatron-Bridge performance summaries",
           margin=MARGIN),
]


class _Src(NamedTuple):
    family: str
    source: str
    role: str = VALIDATION


def _row(src: _Src, id: str, model: ModelShape, gpus: int, par: Parallelism, **figure) -> TrainingRow:
    return TrainingRow(id, src.family, src.role, src.source, model, gpus, par, H100, DGX_H100, **figure)


def _runs(src: _Src, prefix, model, par_of, table) -> list[TrainingRow]:
    return [_row(src, f"{prefix}-{gpus}", model, gpus, par_of(gbs), step_s=step) for gpus, gbs, step in table]


# Sources abbreviated below: DGXC = github.com/NVIDIA/dgxc-benchmarking (DGX Cloud benchmark recipes, H100
# numbers in their READMEs); LAUNCHER = github.com/NVIDIA/NeMo-Framework-Launcher,
# launcher_scripts/conf/training/ (the NeMo configs those recipes run).

# --- model shapes ----------------------------------------------------------------------------------------
# GPT-3 175B as NVIDIA benchmarks it: DGXC nemo_megatron/gpt3_175b_hydra.yaml (96 layers, hidden 12288,
# ffn 49152, 96 heads, seq 2048, GPT2BPETokenizer); vocabulary 51,200 as in the README's FLOP formula
# (Megatron pads 50,257 to 50,688 at TP 4: 0.4 % fewer logit FLOPs, ignored).
GPT3_175B = ModelShape(name="gpt3-175b", layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048,
                       kv_heads=None, ffn_hidden=49152, swiglu=False)
# Llama 3.1 405B *as benchmarked*: LAUNCHER llama/llama3_1_405b.yaml has num_query_groups: 16 (the released
# model has 8), and DGXC llama3.1/README_405b.md counts FLOPs with 16/128 - so 16 KV heads here.
LLAMA31_405B_KV16 = ModelShape(name="llama3.1-405b-kv16", layers=126, hidden=16384, heads=128, vocab=128256,
                               seq_len=8192, kv_heads=16, ffn_hidden=53248, swiglu=True, tied_embeddings=False)
# Llama 3 405B as released (Dubey et al. 2024 Table 3; the repo preset llama3-405b), 128K context stage
LLAMA3_405B_128K = ModelShape(name="llama3-405b-128k", layers=126, hidden=16384, heads=128, vocab=128256,
                              seq_len=131072, kv_heads=8, ffn_hidden=53248, swiglu=True, tied_embeddings=False)
LLAMA3_405B = LLAMA3_405B_128K.model_copy(update={"name": "llama3-405b", "seq_len": 8192})
# Llama 3.1 70B / 8B: LAUNCHER llama/llama3_1_70b.yaml, llama3_1_8b.yaml (= Dubey et al. 2024 Table 3)
LLAMA31_70B = ModelShape(name="llama3.1-70b", layers=80, hidden=8192, heads=64, vocab=128256, seq_len=8192,
                         kv_heads=8, ffn_hidden=28672, swiglu=True, tied_embeddings=False)
LLAMA31_8B = ModelShape(name="llama3.1-8b", layers=32, hidden=4096, heads=32, vocab=128256, seq_len=8192,
                        kv_heads=8, ffn_hidden=14336, swiglu=True, tied_embeddings=False)
# Nemotron-4 15B: Parmar et al. 2024 "Nemotron-4 15B Technical Report" (arXiv:2402.16819) Table 1 and sec. 2
# (32 layers, hidden 6144, 48 heads, 8 KV heads, seq 4096, vocabulary 256,000, squared-ReLU MLP, untied
# embeddings); ffn 24576 from LAUNCHER nemotron/nemotron_15b.yaml (= 12.5 B non-embedding parameters).
NEMOTRON4_15B = ModelShape(name="nemotron4-15b", layers=32, hidden=6144, heads=48, vocab=256000, seq_len=4096,
                           kv_heads=8, ffn_hidden=24576, swiglu=False, tied_embeddings=False)
# Nemotron-4 340B: LAUNCHER nemotron/nemotron_340b.yaml (96 layers, hidden 18432, ffn 4 x 18432 = 73728,
# 96 heads, num_query_groups 8, squared-relu, untied embeddings) and DGXC nemotron4-340b/README.md "MFU
# formula" (vocabulary 256,000, seq 4096). Squared-ReLU MLP: two matrices, swiglu=False.
NEMOTRON4_340B = ModelShape(name="nemotron4-340b", layers=96, hidden=18432, heads=96, vocab=256000, seq_len=4096,
                            kv_heads=8, ffn_hidden=73728, swiglu=False, tied_embeddings=False)


# --- memory settings the runs' configurations state (they change what fits, not the throughput) ----------
# * DGX Cloud GPT-3 175B and Llama 3.1 405B: NeMo's apex distributed Adam with fp32 state and
#   store_param_remainders keeps 10 bytes per parameter (NeMo megatron_base_model.py; DGXC
#   gpt3_175b_hydra.yaml, LAUNCHER llama/llama3_1_405b.yaml: distributed_fused_adam).
# * DGX Cloud Nemotron-4 340B: DGXC nemotron/nemotron4-340b-synth.yaml, distributed_fused_adam with
#   `dtype: bf16` and `grad_sync_dtype: bf16`: 4 bytes of optimizer state. The NeMo 24.07 FP8 340B row is
#   taken to use the same settings (assumed: the performance summary prints no configuration).
# * Llama 3 (Dubey et al. 2024 sec. 3.3.2): FSDP-sharded gradients, one layer fewer on the first and the last
#   of 16 stages (Megatron: the embedding and the loss counted as layers, 7, 14 x 8, 7).
APEX_ADAM = dict(optimizer_bytes=10)
BF16_ADAM = dict(optimizer_bytes=4)
LLAMA3_MEMORY = dict(shard_gradients=True, account_for_embedding=True, account_for_loss=True)


# --- BF16 rows -------------------------------------------------------------------------------------------
# The GPT-3 175B, Llama 3.1 70B and Nemotron-4 340B BF16 tables are calibration rows: their step-time creep
# from the smallest to the largest GPU count set training.STEP_JITTER_CV (published/fabric.py WEAK_SCALING).
ROWS: list[Row] = []


# DGXC nemo_megatron/README_175b.md, table "NeMo Megatron BF16 (TP=4,PP=8, MBS=1, VP=12, SEQ=2048)":
# training step time; the README's MFU (its count = Megatron's for GPT-3) 53.54 / 52.91 / 52.84 / 52.63 /
# 52.40 %. Config DGXC nemo_megatron/gpt3_175b_hydra.yaml: no recomputation, sequence parallel,
# ub_tp_comm_overlap, distributed_fused_adam with overlap_grad_sync and grad_sync_dtype bf16 (2 bytes).
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking nemo_megatron/README_175b.md, table "NeMo Megatron '
                       'BF16 (TP=4,PP=8, MBS=1, VP=12, SEQ=2048)": step time', CALIBRATION)
ROWS += _runs(src, "dgxc-gpt3-175b", GPT3_175B,
              lambda gbs: Parallelism(gbs, tp=4, pp=8, virtual_stages=12, micro_batch=1, grad_bytes=2), [
                  (128, 256, 8.309),
                  (256, 512, 8.408),
                  (512, 1024, 8.42),
                  (1024, 2048, 8.453),
                  (2048, 4096, 8.49),
              ])

# DGXC llama3.1/README_405b.md, table "Llama 3.1 405b 24.09 BF16 (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)":
# step time; README MFU 55.78 / 54.76 / 54.45 % at 576 / 1152 / 2304 GPUs. Config LAUNCHER
# llama/llama3_1_405b.yaml: no recomputation, sequence parallel, ub_tp_comm_overlap, flash attention.
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_405b.md, table "Llama 3.1 405b 24.09'
                       ' BF16 (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)": step time')
ROWS += _runs(src, "dgxc-llama3.1-405b", LLAMA31_405B_KV16,
              lambda gbs: Parallelism(gbs, tp=8, pp=9, cp=2, virtual_stages=7, micro_batch=1), [
                  (576, 252, 17.20),
                  (1152, 504, 17.52),
                  (2304, 1008, 17.62),
              ])
# same table, the "proxy" columns: fewer layers on fewer GPUs (DGXC llama3.1/configure.sh: 96 GPUs -> 21
# layers, PP 3, GBS 126; 192 GPUs -> 42 layers, PP 3, GBS 252); README MFU 56.17 / 57.25 %.
# The 96-GPU step time is printed "8.7  5"; its tokens/s (117,965 = 126 x 8192 / 8.75) gives 8.75.
src = _Src(BENCH_BF16, "[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_405b.md, same table, proxy columns "
                       "(layers per llama3.1/configure.sh): step time")
ROWS += [
    _row(src, "dgxc-llama3.1-405b-proxy21L-96", LLAMA31_405B_KV16.model_copy(update={"layers": 21}), 96,
        Parallelism(126, tp=8, pp=3, cp=2, virtual_stages=7, micro_batch=1), step_s=8.75),
    _row(src, "dgxc-llama3.1-405b-proxy42L-192", LLAMA31_405B_KV16.model_copy(update={"layers": 42}), 192,
        Parallelism(252, tp=8, pp=3, cp=2, virtual_stages=7, micro_batch=1), step_s=16.93),
]

# DGXC llama3.1/README_70b.md, table "Llama 3.1 70b 24.09 BF16 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)":
# step time; README MFU 54.10 / 54.06 / 53.81 / 53.48 / 53.38 / 53.38 %. Config LAUNCHER
# llama/llama3_1_70b.yaml: no recomputation, sequence parallel, ub_tp_comm_overlap (gradient dtype unstated).
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_70b.md, table "Llama 3.1 70b 24.09 '
                       'BF16 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)": step time', CALIBRATION)
ROWS += _runs(src, "dgxc-llama3.1-70b", LLAMA31_70B,
              lambda gbs: Parallelism(gbs, tp=4, pp=4, cp=2, virtual_stages=5, micro_batch=1), [
                  (64, 128, 14.72),
                  (128, 256, 14.73),
                  (256, 512, 14.8),
                  (512, 1024, 14.89),
                  (1024, 2048, 14.92),
                  (2048, 4096, 14.98),
              ])

# DGXC llama3.1/README_8b.md, table "Llama 3.1 8b 24.09 BF16 (TP=1, PP=1, CP=2, MBS=1, GA=32)", the
# >= 64-GPU columns: step time; README MFU 58.60 / 58.51 %. Config LAUNCHER llama/llama3_1_8b.yaml:
# no recomputation, sequence_parallel false (TP 1).
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_8b.md, table "Llama 3.1 8b 24.09 '
                       'BF16 (TP=1, PP=1, CP=2, MBS=1, GA=32)": step time')
ROWS += _runs(src, "dgxc-llama3.1-8b", LLAMA31_8B,
              lambda gbs: Parallelism(gbs, tp=1, pp=1, cp=2, micro_batch=1, sequence_parallel=False), [
                  (64, 1024, 13.08),
                  (128, 2048, 13.10),
              ])

# DGXC nemotron/README_15b.md, table "Nemotron4 15b BF16 (TP=4, PP=1, MBS=4, GA=4)", the >= 64-GPU
# columns: step time. (The README's MFU, 61.8-60.7 %, counts attention without GQA: 106.1 GFLOP per
# token against Megatron's 94.0.) Config LAUNCHER nemotron/nemotron_15b.yaml: no recomputation,
# sequence parallel, ub_tp_comm_overlap.
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking nemotron/README_15b.md, table "Nemotron4 15b BF16 '
                       '(TP=4, PP=1, MBS=4, GA=4)": step time')
ROWS += _runs(src, "dgxc-nemotron4-15b", NEMOTRON4_15B,
              lambda gbs: Parallelism(gbs, tp=4, pp=1, micro_batch=4), [
                  (64, 256, 2.845),
                  (128, 512, 2.859),
                  (256, 1024, 2.852),
                  (512, 2048, 2.875),
                  (1024, 4096, 2.895),
                  (2048, 8192, 2.887),
              ])

# DGXC nemotron/README_340b.md (also catalog.ngc.nvidia.com/orgs/nvidia/teams/dgxc-benchmarking/
# resources/nemotron340b-dgxc-benchmarking-a), table "Nemotron4 340b 24.11 BF16 (TP=8, PP=8, MBS=1,
# GA=16, VP=12)": step time. (README MFU 55.38-52.75 % counts attention without GQA.) Config LAUNCHER
# nemotron/nemotron_340b.yaml (the README's "default configuration"): no recomputation, sequence
# parallel, ub_tp_comm_overlap, mcore_distributed_optim with overlap_grad_sync, grad_sync_dtype bf16.
src = _Src(BENCH_BF16, '[P] github.com/NVIDIA/dgxc-benchmarking nemotron/README_340b.md, table "Nemotron4 340b 24.11'
                       ' BF16 (TP=8, PP=8, MBS=1, GA=16, VP=12)": step time', CALIBRATION)
ROWS += _runs(src, "dgxc-nemotron4-340b", NEMOTRON4_340B,
              lambda gbs: Parallelism(gbs, tp=8, pp=8, virtual_stages=12, micro_batch=1, grad_bytes=2), [
                  (128, 32, 4.61),
                  (256, 64, 4.67),
                  (512, 128, 4.70),
                  (1024, 256, 4.73),
                  (2048, 512, 4.84),
              ])

# Nemotron-4 15B Technical Report (arXiv:2402.16819) sec. 2 "Pre-training" and Table 2 (batch size ramp):
# 384 DGX H100 nodes, 8-way tensor parallelism + data parallelism (96 / 192 / 288), distributed optimizer;
# GPUs 768 / 1,536 / 2,304, batch 384 / 768 / 1,152, iteration 0.57 / 0.58 / 0.64 s, MFU 34.3 / 33.3 /
# 30.5 % of the 989 TFLOP/s bf16 peak. Published figure: MFU x 989 (the iteration times are rounded to
# two digits; they give 337.7 / 331.9 / 300.8 TFLOP/s with the Megatron count, the same count within
# rounding). Micro batch, recomputation and gradient dtype are not stated: defaults (1, none, fp32).
src = _Src(PRETRAINING, "[P] Parmar et al. 2024, Nemotron-4 15B Technical Report (arXiv:2402.16819) sec. 2 and Table"
                        " 2: MFU x 989")
ROWS += [
    _row(src, f"nemotron4-15b-report-{gpus}", NEMOTRON4_15B, gpus, Parallelism(gbs, tp=8, pp=1, micro_batch=1),
        tflops=mfu * 989)
    for gpus, gbs, mfu in [(768, 384, 0.343), (1536, 768, 0.333), (2304, 1152, 0.305)]
]

# Nemotron-4 340B Technical Report (NVIDIA 2024, arXiv:2406.11704) sec. 3 and Table 2, last stage: 6,144
# H100 (768 DGX H100 nodes), 8-way tensor and 12-way pipeline parallelism (-> data parallelism 64),
# batch 2,304 x 4,096 tokens, iteration 8.0 s, MFU ~41 %. The primary text was not found in a stored copy:
# 6,144 GPUs / batch 2,304 / 8.0 s / "41-42 %" as quoted from Table 2 in Epoch AI's notes
# (aiportalx.com/nvidia/nemotron-4-340b); batch and sequence also in the model card
# (huggingface.co/nvidia/Nemotron-4-340B-Base); 768 nodes, TP 8, PP 12, ~41 % MFU in secondary summaries
# of sec. 3. 8.0 s gives 404 TFLOP/s (40.9 %) with the Megatron count. The interleaving depth is not in
# those texts: one layer per virtual stage as in NVIDIA's own 340B config (LAUNCHER nemotron_340b.yaml,
# 96 / (8 x 12)) -> v = 8. Micro batch 1 (that config), no recomputation, fp32 gradients (unstated).
src = _Src(PRETRAINING, "[Q] Nemotron-4 340B Technical Report (arXiv:2406.11704) sec. 3 and Table 2, last stage: "
                        "iteration 8.0 s, as quoted in Epoch AI's notes (aiportalx.com/nvidia/nemotron-4-340b)")
ROWS += [
    _row(src, "nemotron4-340b-report-6144", NEMOTRON4_340B, 6144,
        Parallelism(2304, tp=8, pp=12, virtual_stages=8, micro_batch=1), step_s=8.0),
]

# Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783) Table 4: 8K sequences, TP 8, PP 16,
# 8,192 GPUs at DP 64 -> 430 TFLOP/s per GPU (43 % BF16 MFU); 16,384 GPUs at DP 128 -> 400 (41 %).
# Batch 16M tokens (2,048 sequences); interleaved pipeline schedule (section 3.3.2): depth not stated,
# virtual_stages=4 assumed. Section 3.3.2: "we could pre-train Llama 3 on sequences of 8K tokens without
# activation checkpointing" (recompute none); "Our use of FSDP for Llama 3 shards optimizer states and
# gradients" (shard_gradients); "we reduce one Transformer layer each from the first and the last stages"
# (126 layers on 16 stages: 7 on the first). Calibration: in view when the constants were set (see the module
# docstring).
src = _Src(PRETRAINING, "[Q] Dubey et al. 2024, The Llama 3 Herd of Models (arXiv:2407.21783) Table 4, first two "
           "rows: 430 and 400 TFLOP/s per GPU, as reproduced at glennklockwood.com/garden/llama-3.1 (Balaji, SC'24)",
           CALIBRATION)
ROWS += [
    _row(src, f"llama3-405b-table4-8k-{gpus}", LLAMA3_405B, gpus,
         Parallelism(2048, tp=8, pp=16, virtual_stages=4, **LLAMA3_MEMORY), tflops=tflops)
    for gpus, tflops in [(8192, 430), (16384, 400)]
]

# Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783) Table 4, third row (long-context
# stage): 16,384 GPUs, TP 8, CP 16, PP 16, DP 8, sequence 131,072, batch size/DP 16 (-> 128 sequences,
# 16M tokens), 380 TFLOPs/GPU, 38 % BF16 MFU. The paper gives no step time: its TFLOP/s is the figure.
# Interleaving depth and recomputation not stated: virtual_stages=4 as above, selective recomputation; the
# memory measures of section 3.3.2 as for the 8K rows.
src = _Src(PRETRAINING, "[Q] Dubey et al. 2024, The Llama 3 Herd of Models (arXiv:2407.21783) Table 4, third row: "
                        "380 TFLOP/s per GPU, as reproduced at glennklockwood.com/garden/llama-3.1 (Balaji, SC'24)")
ROWS += [
    _row(src, "llama3-405b-table4-128k-16384", LLAMA3_405B_128K, 16384,
         Parallelism(128, tp=8, pp=16, cp=16, virtual_stages=4, micro_batch=1, recompute="selective",
                     **LLAMA3_MEMORY),
         tflops=380,
         explanation="The model is fast here: Megatron's count (the model's figure) charges the full causal "
                     "score matrix, 12 s q FLOPs per token and layer, which at 128K is a large share of the "
                     "step, while flash attention computes the causal half; Meta's 380 counts differently "
                     "(not stated)."),
]


# --- FP8 rows (held to their family's band like the BF16 rows) -----------------------------------------------
FP8_ROWS: list[TrainingRow] = []
# DGXC nemo_megatron/README_175b.md, "NeMo Megatron FP8 (TP=4,PP=8, MBS=1, VP=12, SEQ=2048)": step time
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking nemo_megatron/README_175b.md, table "NeMo Megatron FP8 '
                '(TP=4,PP=8, MBS=1, VP=12, SEQ=2048)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-gpt3-175b", GPT3_175B,
                  lambda gbs: Parallelism(gbs, tp=4, pp=8, virtual_stages=12, micro_batch=1, grad_bytes=2), [
                      (128, 256, 5.626), (256, 512, 5.725), (512, 1024, 5.774), (1024, 2048, 5.82),
                      (2048, 4096, 5.96)])
# DGXC llama3.1/README_405b.md, "Llama 3.1 405b 24.09 FP8 (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)"
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_405b.md, table "Llama 3.1 405b 24.09 FP8 '
                '(TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-llama3.1-405b", LLAMA31_405B_KV16,
                  lambda gbs: Parallelism(gbs, tp=8, pp=9, cp=2, virtual_stages=7, micro_batch=1), [
                      (576, 252, 11.24), (1152, 504, 11.31), (2304, 1008, 12.35)])
src = _Src(FP8, "[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_405b.md, same FP8 table, proxy columns: "
                "step time")
FP8_ROWS += [
    _row(src, "fp8-dgxc-llama3.1-405b-proxy21L-96", LLAMA31_405B_KV16.model_copy(update={"layers": 21}), 96,
        Parallelism(126, tp=8, pp=3, cp=2, virtual_stages=7, micro_batch=1), step_s=5.71),
    _row(src, "fp8-dgxc-llama3.1-405b-proxy42L-192", LLAMA31_405B_KV16.model_copy(update={"layers": 42}), 192,
        Parallelism(252, tp=8, pp=3, cp=2, virtual_stages=7, micro_batch=1), step_s=11.00),
]
# DGXC llama3.1/README_70b.md, "Llama 3.1 70b 24.09 FP8 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)"
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_70b.md, table "Llama 3.1 70b 24.09 FP8 '
                '(TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-llama3.1-70b", LLAMA31_70B,
                  lambda gbs: Parallelism(gbs, tp=4, pp=4, cp=2, virtual_stages=5, micro_batch=1), [
                      (64, 128, 11.01), (128, 256, 10.93), (256, 512, 11.16), (512, 1024, 11.18),
                      (1024, 2048, 11.28), (2048, 4096, 11.39)])
# DGXC llama3.1/README_8b.md, "Llama 3.1 8b 24.09 FP8 (TP=1, PP=1, CP=2, MBS=1, GA=32)", >= 64 GPUs
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking llama3.1/README_8b.md, table "Llama 3.1 8b 24.09 FP8 (TP=1,'
                ' PP=1, CP=2, MBS=1, GA=32)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-llama3.1-8b", LLAMA31_8B,
                  lambda gbs: Parallelism(gbs, tp=1, pp=1, cp=2, micro_batch=1, sequence_parallel=False), [
                      (64, 1024, 9.80), (128, 2048, 9.82)])
# DGXC nemotron/README_15b.md, "Nemotron4 15b FP8 (TP=4, PP=1, MBS=4, GA=4)", >= 64 GPUs
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking nemotron/README_15b.md, table "Nemotron4 15b FP8 (TP=4, '
                'PP=1, MBS=4, GA=4)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-nemotron4-15b", NEMOTRON4_15B,
                  lambda gbs: Parallelism(gbs, tp=4, pp=1, micro_batch=4), [
    (64, 256, 2.048), (128, 512, 2.059), (256, 1024, 2.075), (512, 2048, 2.12), (1024, 4096, 2.094),
    (2048, 8192, 2.12)])
# DGXC nemotron/README_340b.md, "Nemotron4 340b 24.11 FP8 (TP=8, PP=8, MBS=1, GA=16, VP=12)"
src = _Src(FP8, '[P] github.com/NVIDIA/dgxc-benchmarking nemotron/README_340b.md, table "Nemotron4 340b 24.11 FP8 '
                '(TP=8, PP=8, MBS=1, GA=16, VP=12)": step time')
FP8_ROWS += _runs(src, "fp8-dgxc-nemotron4-340b", NEMOTRON4_340B,
                  lambda gbs: Parallelism(gbs, tp=8, pp=8, virtual_stages=12, micro_batch=1, grad_bytes=2), [
                      (128, 32, 3.16), (256, 64, 3.21), (512, 128, 3.26), (1024, 256, 3.34), (2048, 512, 3.49)])
# NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, "pre-training
# performance ... at FP8 precision"): tokens/s/GPU; the table's Model TFLOP/s/GPU in brackets (its count
# matches Megatron's full-causal count: 726 x 1.0764e12 = 782).
src = _Src(FP8, "[P] github.com/NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, "
                "FP8): tokens/s/GPU")
FP8_ROWS += [
    _row(src, "fp8-nemo24.07-gpt3-175b-128", GPT3_175B, 128,
        Parallelism(256, tp=4, pp=8, virtual_stages=6, micro_batch=1), tokens_per_s_per_gpu=726),   # [782]
    _row(src, "fp8-nemo24.07-gpt3-175b-512", GPT3_175B, 512,
        Parallelism(2048, tp=4, pp=8, virtual_stages=6, micro_batch=2), tokens_per_s_per_gpu=782),  # [842]
    _row(src, "fp8-nemo24.07-nemotron-340b-128", NEMOTRON4_340B, 128,
        Parallelism(32, tp=8, pp=8, virtual_stages=12, micro_batch=1), tokens_per_s_per_gpu=322),   # [678]
    _row(src, "fp8-nemo24.07-llama3-70b-64", LLAMA31_70B, 64,
        Parallelism(128, tp=4, pp=4, cp=2, virtual_stages=5, micro_batch=1), tokens_per_s_per_gpu=1533),  # [738]
]
# NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (25.11, "System: DGX-H100", FP8-CS) and
# docs/performance-summary-archive.md (26.02 "FP8", 25.09 H100 table) =
# docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary(-archive).html: tokens/s/GPU; the
# table's Model TFLOP/s/GPU in brackets counts causal attention at half (0.933 x Megatron's for 70B at 8K).
src = _Src(FP8, "[P] github.com/NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (25.11) and "
                "docs/performance-summary-archive.md (26.02, 25.09), DGX-H100: tokens/s/GPU")
FP8_ROWS += [
    _row(src, "fp8-mbridge25.11-llama3-70b-64", LLAMA31_70B, 64,
        Parallelism(128, tp=4, pp=8, virtual_stages=5, micro_batch=1), tokens_per_s_per_gpu=1602),   # [719]
    _row(src, "fp8-mbridge25.11-llama3.1-405b-1024", LLAMA3_405B, 1024,
        Parallelism(512, tp=8, pp=8, cp=2, virtual_stages=8, micro_batch=1), tokens_per_s_per_gpu=292),  # [737]
    _row(src, "fp8-mbridge26.02-llama3-70b-64", LLAMA31_70B, 64,
        Parallelism(256, tp=4, pp=8, virtual_stages=5, micro_batch=1), tokens_per_s_per_gpu=1621),   # [728]
    _row(src, "fp8-mbridge26.02-llama3.1-405b-1024", LLAMA3_405B, 1024,
        Parallelism(1536, tp=8, pp=8, cp=2, virtual_stages=8, micro_batch=1), tokens_per_s_per_gpu=311),  # [784]
    # 25.09 H100 table has no precision column; the same layouts are "FP8-CS" in 25.11
    _row(src, "fp8-mbridge25.09-llama3-70b-64", LLAMA31_70B, 64,
        Parallelism(128, tp=4, pp=8, virtual_stages=5, micro_batch=1), tokens_per_s_per_gpu=1619),   # [727]
    _row(src, "fp8-mbridge25.09-llama3.1-405b-1024", LLAMA3_405B, 1024,
        Parallelism(512, tp=8, pp=8, cp=2, virtual_stages=8, micro_batch=1), tokens_per_s_per_gpu=302),  # [763]
]

FP8_ROWS = [replace(r, par=replace(r.par, precision="fp8")) for r in FP8_ROWS]
ROWS += FP8_ROWS


def _with_memory_settings(row: TrainingRow) -> TrainingRow:
    """The row with the optimizer settings its run's configuration states (see the top of the BF16 rows)."""
    for part, settings in (("dgxc-gpt3-175b", APEX_ADAM), ("dgxc-llama3.1-405b", APEX_ADAM),
                           ("dgxc-nemotron4-340b", BF16_ADAM),
                           ("nemo24.07-nemotron-340b", dict(BF16_ADAM, grad_bytes=2))):
        if part in row.id:
            return replace(row, par=replace(row.par, **settings))
    return row


EXPLANATIONS = {
    "fp8-dgxc-llama3.1-405b-proxy21L-96":
        "the model is slow here: the run overlaps its tensor-parallel communication with GEMMs "
        "(ub_tp_comm_overlap in LAUNCHER llama/llama3_1_405b.yaml), which the model does not (TP all-reduces "
        "on the critical path are 13 % of its FP8 step, 9 % in BF16); FP8 shrinks the compute, so the missing "
        "overlap weighs more than in the BF16 twin (-10 %). The whole DGX Cloud 405B table sits 8-10 % below",
}


def _explained(row: TrainingRow) -> TrainingRow:
    return replace(row, explanation=EXPLANATIONS[row.id]) if row.id in EXPLANATIONS else row


ROWS = [_explained(_with_memory_settings(r)) for r in ROWS]

