"""Strong scaling: one model, layout and global batch run on more and more GPUs (family ``strong-scaling``).

At a fixed global batch each data-parallel rank gets fewer sequences as the GPUs grow, so per-GPU throughput
falls: fewer microbatches per step make the pipeline bubble ``(p-1)/(m v)`` a larger share, the data-parallel
gradient reduction (about the same size at every scale) has a shorter step to hide in, pipeline sends and the
straggler wait stay per microbatch or per step. Each row compares the per-GPU throughput of the larger run with
that of the smallest run of the same table (``ScalingRow``): the model's absolute level cancels, and what is
judged is how much it loses.

Role: ``validation`` for every row. No constant was set from these ratios. The MegaScale rows' absolute figures
are holdouts themselves (published/fabric.py). The two Llama 3 rows are calibration rows of the absolute model
(hopper.py), but their ratio was not used to set anything.

Sources and what each row reuses:

* MegaScale (Jiang et al., NSDI 2024) Table 2, the Megatron-LM baseline: batch 768 on 256 -> 512 / 768 / 1,024
  A100, and batch 6,144 on 3,072 -> 6,144 / 8,192 / 12,288. The rows are fabric.py's (one copy of each figure).
* Narayanan et al. 2021 (SC'21, arXiv:2104.04473) Table 2, the PTD-P rows: 174.6B on 384 / 768 / 1,536 A100 at
  batch 1,536 (153 / 149 / 141 TFLOP/s per GPU), and 529.6B on 560 / 1,120 / 2,240 at batch 2,240 (171 / 167 /
  159), micro batch 1. [Q] two copies of the paper agree (research notes, moe_scaling.md section 3). The
  174.6B shape is GPT-3's: 96 layers, hidden 12,288, 96 heads ([D] 12 x 96 x 12,288^2 + 51,200 x 12,288 = 174.6
  B). Its model-parallel size 96 is taken as TP 8 x PP 12: Table 1 runs every model of 18B and more at TP 8. The
  529.6B shape and TP 8 x PP 35 (= 280) are Table 1's. Settings as for Table 1 (narayanan.py): full
  recomputation, no interleaving, gradients all-reduced after the flush.
* Llama 3 (Dubey et al. 2024) Table 4: 405B on 8,192 -> 16,384 H100 at 16M tokens per batch (430 -> 400 TFLOP/s
  per GPU). The rows are hopper.py's.

Collected but not used as rows:

* The Megatron-LM README's "Strong Scaling Results" (GPT-3 175B, 96 -> 4,608 H100 at batch 1,152, MFU 47 % ->
  42 %, NVIDIA/Megatron-LM README.md at d98e8a6): the text gives no layout (TP, PP, interleaving) and the
  intermediate points are only in an image. A layout would have to be invented.
* Narayanan Table 2's ZeRO-3 rows: ZeRO-3 without model parallelism is not modelled.
* MegaScale's own rows (not the Megatron-LM baseline): they use optimisations the model does not have (published/fabric.py).
"""

from __future__ import annotations

from clusterctl.perf.job import ModelShape
from clusterctl.perf.published import fabric, hopper, narayanan
from clusterctl.perf.published.rows import VALIDATION, Family, Row, ScalingRow, TrainingRow
from clusterctl.perf.published.systems import A100, SELENE

FAMILY = "strong-scaling"
MARGIN = 0.03

FAMILIES: list[Family] = [
    Family(FAMILY, 0.100, "largest |error| of the family + 3 points (the ratios of two rounded or derived figures; "
                          "MegaScale's two series do not fall smoothly themselves: -1.8 % from 3,072 to 6,144 GPUs, "
                          "then -9.4 % to 8,192)",
           "per-GPU throughput of the larger run / the smallest run of the same model, layout and global batch",
           margin=MARGIN),
]

_NARAYANAN = ("[Q] Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
              "Megatron-LM (arXiv:2104.04473), Table 2 (PTD-P rows, fixed batch): ")
GPT3_175B = ModelShape(name="gpt3-174.6b", layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048)

# model, TP, PP, batch, [(GPUs, achieved TFLOP/s per GPU incl. recomputation)]
TABLE_2 = [
    (GPT3_175B, 8, 12, 1536, [(384, 153), (768, 149), (1536, 141)]),
    (narayanan.model_of(529.6, 128, 20480, 105), 8, 35, 2240, [(560, 171), (1120, 167), (2240, 159)]),
]


def _narayanan_rows() -> list[tuple[TrainingRow, TrainingRow]]:
    pairs = []
    for model, tp, pp, batch, runs in TABLE_2:
        measured = [TrainingRow(f"narayanan-table2-{model.name}-{gpus}", FAMILY, VALIDATION,
                                _NARAYANAN + f"{model.name} on {gpus:,} GPUs, batch {batch:,}: {tflops} TFLOP/s per GPU",
                                model, gpus, narayanan.parallelism_of(tp, pp, batch), A100, SELENE, tflops=tflops,
                                metric="hardware_tflops")
                    for gpus, tflops in runs]
        pairs += [(measured[0], large) for large in measured[1:]]
    return pairs


def _by_id(rows: list[Row]) -> dict[str, Row]:
    return {r.id: r for r in rows}


def _pair(small: TrainingRow, large: TrainingRow, source: str) -> ScalingRow:
    ident = f"strong-{large.id}" if large.id.startswith("narayanan") else f"strong-{large.id}-vs-{small.gpus}"
    return ScalingRow(ident, FAMILY, VALIDATION, source, small, large)


_MEGASCALE = ("[D] from [Q] Jiang et al., MegaScale, NSDI 2024, Table 2, Megatron-LM rows: tokens/s / GPUs of "
              "the larger run over that of the smaller (published/fabric.py rows ")
_LLAMA3 = ("[Q] Dubey et al. 2024, The Llama 3 Herd of Models (arXiv:2407.21783) Table 4: 400 / 430 TFLOP/s per GPU "
           "at 16,384 / 8,192 H100, 16M tokens per batch (hopper.py rows)")


def _rows() -> list[Row]:
    mega = _by_id(fabric.MEGASCALE_ROWS)
    out: list[Row] = []
    for small, larger in ((256, (512, 768, 1024)), (3072, (6144, 8192, 12288))):
        base = mega[f"megascale-megatron-175b-{small}"]
        for gpus in larger:
            large = mega[f"megascale-megatron-175b-{gpus}"]
            out.append(_pair(base, large, _MEGASCALE + f"{base.id}, {large.id})"))
    out += [_pair(small, large, _NARAYANAN + f"{large.model.name}: {large.tflops} / {small.tflops} TFLOP/s per GPU "
                                             f"at {large.gpus:,} / {small.gpus:,} GPUs")
            for small, large in _narayanan_rows()]
    llama = _by_id(hopper.ROWS)
    out.append(_pair(llama["llama3-405b-table4-8k-8192"], llama["llama3-405b-table4-8k-16384"], _LLAMA3))
    return out


ROWS: list[Row] = _rows()
