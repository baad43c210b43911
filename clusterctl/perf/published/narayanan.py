"""Narayanan et al. 2021 Table 1: the A100 calibration set of the training model (Megatron-LM on Selene).

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
(SC'21, arXiv:2104.04473), Table 1 (weak scaling, A100 80 GB on Selene; sequence 2048, vocabulary 51,200,
activation recomputation; TFLOP/s per GPU counted *with* recomputation, ``metric="hardware_tflops"``).

Role: ``calibration``. These ten rows were in view when SUSTAINED_GEMM, GEMM_SHAPE_HALF,
UNFUSED_ATTENTION_EFFICIENCY, HBM_EFFICIENCY and ELEMENTWISE_REPLICATED were set (commit "calibration tests
(nccl-tests, Narayanan Table 1, Llama 3)"): agreement is a fit, not evidence. Their trend (larger models run
at a higher fraction of peak) and the closed-form FLOP count stay as behaviour tests in
tests/perf/test_training.py.

Run as the paper ran (2021 Megatron-LM): full recomputation, no sequence parallelism, no flash attention,
gradient all-reduce after the pipeline flush (not overlapped), no distributed optimizer, fp16 gradients.

The Llama 3 405B rows of Dubey et al. 2024 Table 4 are H100 rows: clusterctl/perf/published/hopper.py.
"""

from __future__ import annotations

from clusterctl.perf.job import ModelShape, Parallelism
from clusterctl.perf.published.rows import CALIBRATION, Family, Row, TrainingRow
from clusterctl.perf.published.systems import A100, SELENE

FAMILY = "a100-megatron-2021"
MARGIN = 0.03

FAMILIES: list[Family] = [
    Family(FAMILY, 0.154, "largest |error| of the family + 3 points (the paper rounds to 1 TFLOP/s and does not state every setting)",
           "Narayanan et al. 2021 Table 1: GPT 1.7B-1T on 32-3,072 A100 (Selene)", margin=MARGIN),
]

SOURCE = ("[P] Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
          "Megatron-LM (arXiv:2104.04473), Table 1: achieved TFLOP/s per GPU (incl. recomputation)")

# params (B), heads, hidden, layers, TP, PP, GPUs, batch, achieved TFLOP/s per GPU
TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def model_of(params_b: float, heads: int, hidden: int, layers: int) -> ModelShape:
    return ModelShape(name=f"gpt-{params_b}b", layers=layers, hidden=hidden, heads=heads, vocab=51200, seq_len=2048)


def parallelism_of(tp: int, pp: int, batch: int) -> Parallelism:
    """2021 Megatron-LM: full recomputation, no sequence parallelism / flash attention, gradient all-reduce
    after the pipeline flush (not overlapped), fp16 gradients."""
    return Parallelism(batch, tp=tp, pp=pp, micro_batch=1, recompute="full", sequence_parallel=False,
                       flash_attention=False, overlap_grad_reduce=False, distributed_optimizer=False, grad_bytes=2)


EXPLANATIONS = {
    18.4: "the model is slow here: of Table 1's models this one spends the largest share of its step in "
          "tensor-parallel all-reduces (TP 8 at hidden 6,144: 25 MB each, 6 per layer with full recomputation, "
          "exposed), and since the collectives take NCCL 2.26.2's own latencies (clusterctl/perf/"
          "nccl_algorithms.py: ~50 µs per 8-GPU ring) "
          "each costs ~20 % more than under the 1 µs-per-step assumption before; the 2021 runs used the NCCL of "
          "that year, whose latencies are not known here",
}

ROWS: list[Row] = [
    TrainingRow(f"narayanan-table1-{params_b}b", FAMILY, CALIBRATION, SOURCE, model_of(params_b, heads, hidden, layers),
                gpus, parallelism_of(tp, pp, batch), A100, SELENE, tflops=tflops, metric="hardware_tflops",
                explanation=EXPLANATIONS.get(params_b, ""))
    for params_b, heads, hidden, layers, tp, pp, gpus, batch, tflops in TABLE_1
]
