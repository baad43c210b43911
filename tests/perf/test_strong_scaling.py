"""Strong scaling (clusterctl/perf/published/strong_scaling.py): at a fixed global batch, the per-GPU throughput
the model loses as the GPUs grow, against published pairs of one model, layout and batch at two or more scales.
Expectations are the sources' own figures."""

from __future__ import annotations

import pytest

from clusterctl.perf.published import strong_scaling
from clusterctl.perf.published.all_rows import families
from clusterctl.perf.published.rows import VALIDATION, ScalingRow, evaluate

ROWS = {r.id: r for r in strong_scaling.ROWS}
BAND = families()[strong_scaling.FAMILY].band

# (row, published per-GPU throughput of the larger run / the smaller run, from the sources' printed figures)
PUBLISHED = [
    # MegaScale NSDI 2024 Table 2, Megatron-LM rows: tokens/s and GPUs
    ("strong-megascale-megatron-175b-512-vs-256", (74_100 / 512) / (39_300 / 256)),
    ("strong-megascale-megatron-175b-768-vs-256", (103_800 / 768) / (39_300 / 256)),
    ("strong-megascale-megatron-175b-1024-vs-256", (132_700 / 1024) / (39_300 / 256)),
    ("strong-megascale-megatron-175b-6144-vs-3072", (851_600 / 6144) / (433_600 / 3072)),
    ("strong-megascale-megatron-175b-8192-vs-3072", (1_027_900 / 8192) / (433_600 / 3072)),
    ("strong-megascale-megatron-175b-12288-vs-3072", (1_466_800 / 12288) / (433_600 / 3072)),
    # Narayanan et al. 2021 Table 2, PTD-P: TFLOP/s per GPU
    ("strong-narayanan-table2-gpt3-174.6b-768", 149 / 153),
    ("strong-narayanan-table2-gpt3-174.6b-1536", 141 / 153),
    ("strong-narayanan-table2-gpt-529.6b-1120", 167 / 171),
    ("strong-narayanan-table2-gpt-529.6b-2240", 159 / 171),
    # Dubey et al. 2024 (Llama 3) Table 4: TFLOP/s per GPU at 16,384 and 8,192 H100
    ("strong-llama3-405b-table4-8k-16384-vs-8192", 400 / 430),
]


def test_every_strong_scaling_row_is_a_holdout_pair_at_one_batch():
    assert set(ROWS) == {rid for rid, _ in PUBLISHED}
    for r in ROWS.values():
        assert isinstance(r, ScalingRow) and r.role == VALIDATION
        assert r.small.model == r.large.model and r.small.par.global_batch == r.large.par.global_batch
        assert (r.small.par.tp, r.small.par.pp) == (r.large.par.tp, r.large.par.pp)
        assert r.large.gpus > r.small.gpus


@pytest.mark.parametrize("rid,published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_strong_scaling_row_within_band_of_the_published_ratio(rid, published):
    res = evaluate(ROWS[rid])
    assert res.published == pytest.approx(published, rel=1e-9)
    assert abs(res.predicted / published - 1) <= BAND
    assert res.predicted < 1  # per-GPU throughput falls as the GPUs grow at a fixed batch


def test_the_losses_grow_with_the_gpus_at_a_fixed_batch():
    # Narayanan 174.6B on 384, 768, 1,536 GPUs at batch 1,536: 384 -> 96 microbatches per step, so the bubble
    # (p-1)/(m v) share grows; the exposed gradient all-reduce and the straggler wait grow too
    small = ROWS["strong-narayanan-table2-gpt3-174.6b-768"].small.run()
    mid = ROWS["strong-narayanan-table2-gpt3-174.6b-768"].large.run()
    large = ROWS["strong-narayanan-table2-gpt3-174.6b-1536"].large.run()
    assert [e.microbatches for e in (small, mid, large)] == [384, 192, 96]
    for part in ("pipeline bubble", "dp communication (exposed)", "stragglers and jitter (scale)"):
        shares = [e.breakdown_s[part] / e.step_s for e in (small, mid, large)]
        assert shares[0] < shares[1] < shares[2], part
    bubble = [e.breakdown_s["pipeline bubble"] / e.breakdown_s["compute"] for e in (small, mid, large)]
    assert bubble[2] > 3.5 * bubble[0]  # (p-1)/m: 11/96 against 11/384, four times


@pytest.mark.parametrize("rid", [p[0] for p in PUBLISHED])
def test_both_runs_of_a_pair_use_every_gpu_and_fit(rid):
    for row in (ROWS[rid].small, ROWS[rid].large):
        e = row.run()
        assert e.gpus == row.gpus and e.fits_memory, row.id
