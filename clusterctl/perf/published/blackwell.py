"""Published rows: dense pre-training on B200 and GB200 NVL72 (Megatron-Bridge performance summaries).

Sources: NVIDIA-NeMo/Megatron-Bridge ``docs/performance-summary-archive.md`` [P]: "25.11 NeMo Container"
(tables "System: DGX-GB200" and "System: DGX-B200"), "25.09 NeMo Container" (same tables), "26.04.01 NeMo
Container" (tables "Model: LLAMA3_70B", "Model: LLAMA3.1_405B"). Columns used: #-GPUs, Precision, GBS, MBS,
Sequence Length, FSDP, TP, PP, CP, VP, Tokens / sec / GPU. FP8-CS and MXFP8 are modelled as ``precision="fp8"``
(the linear layers' GEMMs at the FP8 MAMF); recomputation is not stated, none is assumed. The GB200 405B
rows (TP 4, PP 16, VP 4) carry the settings the Megatron-Bridge performance scripts state (bf16 gradient
reduction, embedding and loss counted in the pipeline split; see ``_GB200_405B_BRIDGE``); without them the
memory model puts the layout at 208 GB, above the GB200's usable 191.7 GB.

Roles: no constant of the model was set from a Blackwell row (``SUSTAINED_GEMM``, ``GEMM_SHAPE_HALF`` and the
attention constants come from Hopper/Ampere rows; the B200/GB200 MAMF figures are measured matmul rates from
the catalog), so every row here is validation.

Left out: rows with FSDP = 1 / FSDP 64 (Megatron FSDP is not modelled); the 25.09 GB200 LLAMA3_70B alternative
layout (its parenthesised GA 16 does not follow from its GBS, MBS and DP); NVFP4 rows (no FP4 rate in the
model); DGX-GB300 and DGX-B300 rows (not in the accelerator catalog). MLPerf Training v5.0/v5.1 (Llama 3.1
405B, Llama 2 70B LoRA on GB200/B200): the results report time to train to a target loss, with evaluation
pauses and, for LoRA, frozen weights; turning that into tokens/s per GPU needs the samples to converge and
the evaluation time, which the results tables do not give - not used. NVIDIA/dgxc-benchmarking READMEs
(llama3.1, qwen3, deepseek_v3, gpt-oss recipes for B200/GB200) publish layouts and how to compute
throughput from a run's s/iter, but no measured figures - not rows.
"""

from __future__ import annotations

from clusterctl.perf.job import Parallelism
from clusterctl.perf.model_presets import preset
from clusterctl.perf.published.rows import VALIDATION, Family, Row, TrainingRow
from clusterctl.perf.published.systems import B200, DGX_B200, GB200, GB200_NVL72

ARCHIVE = "[P] NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md, {container} NeMo Container, {table}"

LLAMA3_8B = preset("llama3-8b")[0]
LLAMA3_70B = preset("llama3-70b")[0]
LLAMA3_405B = preset("llama3-405b")[0]

FAMILIES = [
    Family("blackwell-dense", 0.178,
           "largest |error| of the family + 3 points (the same layout's published figure moves up to 6 % between releases)",
           "dense Llama 3 pre-training on DGX-B200 and GB200 NVL72, FP8, Megatron-Bridge 25.09-26.04.01", margin=0.03),
]


def _row(id: str, container: str, table: str, model, gpus: int, par: Parallelism, acc, ic, tokens: float,
         explanation: str = "") -> TrainingRow:
    return TrainingRow(id=id, family="blackwell-dense", role=VALIDATION,
                       source=ARCHIVE.format(container=container, table=table), model=model, gpus=gpus, par=par,
                       accelerator=acc, interconnect=ic, tokens_per_s_per_gpu=tokens, explanation=explanation)


_FP8 = {"precision": "fp8"}

# Megatron-Bridge's Llama 3.1 405B performance runs (scripts/performance/configs/llama/llama31_llm_pretrain.py,
# set_llama31_common_configs: ``cfg.ddp.grad_reduce_in_fp32 = False``, from r0.2.0 (25.11) to r0.4.x (26.04);
# recipe src/megatron/bridge/recipes/llama/llama3.py llama31_405b_pretrain_config:
# ``account_for_embedding_in_pipeline_split = True`` and ``account_for_loss_in_pipeline_split = True``, so
# Megatron-core splits 126 + 2 layers over PP 16 x VP 4 chunks of 2 and the first chunk, holding the
# embedding, builds one layer: 7 layers on the first stage). The GB200 TP 4 / PP 16 / VP 4 layout itself is
# LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2 in scripts/performance/configs/llama/
# llama31_workload_base_configs.py (r0.3.0 onwards; no recompute, no CPU offloading, no Megatron FSDP).
# [P] NVIDIA-NeMo/Megatron-Bridge at release branches r0.2.0, r0.3.0, r0.4.1. The 25.11 table (Dec 2025) is
# older than that V2 config (Jan 2026; r0.2.0 has only a 128-GPU GB200 FP8-CS config: TP 2, Megatron FSDP, 92
# layers offloaded); both settings used here are in r0.2.0's common code as well.
_GB200_405B_BRIDGE = {"grad_bytes": 2, "account_for_embedding": True, "account_for_loss": True, **_FP8}

ROWS: list[Row] = [
    _row("llama3-8b-b200-25.11", "25.11", "System: DGX-B200, LLAMA3_8B, 8 GPUs, FP8-CS, GBS 128, MBS 2",
         LLAMA3_8B, 8, Parallelism(128, micro_batch=2, **_FP8), B200, DGX_B200, 30624),
    _row("llama3-8b-gb200-25.11", "25.11", "System: DGX-GB200, LLAMA3_8B, 8 GPUs, FP8-CS, GBS 128, MBS 2",
         LLAMA3_8B, 8, Parallelism(128, micro_batch=2, **_FP8), GB200, GB200_NVL72, 31508),
    _row("llama3-8b-b200-25.09", "25.09", "System: DGX-B200, LLAMA3_8B, 8 GPUs, GBS 128, MBS 2 (FP8-CS)",
         LLAMA3_8B, 8, Parallelism(128, micro_batch=2, **_FP8), B200, DGX_B200, 29994),
    _row("llama3.1-405b-b200-tp4-pp8-cp2-25.11", "25.11",
         "System: DGX-B200, LLAMA3.1_405B, 128 GPUs, FP8-CS, GBS 64, MBS 1, TP 4, PP 8, CP 2, VP 8",
         LLAMA3_405B, 128, Parallelism(64, tp=4, pp=8, cp=2, virtual_stages=8, **_FP8), B200, DGX_B200, 661),
    _row("llama3.1-405b-b200-tp4-pp8-cp2-25.09", "25.09",
         "System: DGX-B200, LLAMA3.1_405B, 128 GPUs, GBS 64, MBS 1, TP 4, PP 8, CP 2, VP 8 (FP8-CS)",
         LLAMA3_405B, 128, Parallelism(64, tp=4, pp=8, cp=2, virtual_stages=8, **_FP8), B200, DGX_B200, 664),
    _row("llama3.1-405b-gb200-tp4-pp16-25.11", "25.11",
         "System: DGX-GB200, LLAMA3.1_405B, 256 GPUs, FP8-CS, GBS 1536, MBS 1, TP 4, PP 16, VP 4",
         LLAMA3_405B, 256, Parallelism(1536, tp=4, pp=16, virtual_stages=4, **_GB200_405B_BRIDGE), GB200,
         GB200_NVL72, 813),
    _row("llama3.1-405b-gb200-tp4-pp16-26.04.01", "26.04.01",
         "Model: LLAMA3.1_405B, DGX-GB200, 256 GPUs, FP8, GBS 1536, MBS 1, TP 4, PP 16, VP 4",
         LLAMA3_405B, 256, Parallelism(1536, tp=4, pp=16, virtual_stages=4, **_GB200_405B_BRIDGE), GB200,
         GB200_NVL72, 864),
    _row("llama3-70b-gb200-tp2-pp4-26.04.01", "26.04.01",
         "Model: LLAMA3_70B, DGX-GB200, 64 GPUs, MXFP8, GBS 256, MBS 1, TP 2, PP 4, VP 5",
         LLAMA3_70B, 64, Parallelism(256, tp=2, pp=4, virtual_stages=5, **_FP8), GB200, GB200_NVL72, 3712),
]
