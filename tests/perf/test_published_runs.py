"""The benchmarked model shapes against the per-token FLOP counts their sources print.

The published H100 runs themselves (BF16 and FP8, DGX Cloud recipes, NeMo and Megatron-Bridge summaries,
Nemotron-4 and Llama 3 reports) are rows of clusterctl/perf/published/hopper.py, judged with their family's
band in tests/perf/test_published.py. DGXC = github.com/NVIDIA/dgxc-benchmarking.
"""

from __future__ import annotations

import pytest

from clusterctl.perf.published.hopper import (
    GPT3_175B,
    LLAMA3_405B,
    LLAMA31_8B,
    LLAMA31_70B,
    LLAMA31_405B_KV16,
    NEMOTRON4_340B,
)


@pytest.mark.parametrize("model,source_flops_per_token", [
    # DGXC nemo_megatron/README_175b.md "Notes": attention + mlp + embedding FLOPs per token
    (GPT3_175B, 376_883_380_224 + 695_784_701_952 + 3_774_873_600),
    # DGXC llama3.1/README_405b.md "Notes" (16 query groups)
    (LLAMA31_405B_KV16, 659_545_915_392 + 1_978_637_746_176 + 12_608_077_824),
    # DGXC llama3.1/README_70b.md "Notes"
    (LLAMA31_70B, 136_902_082_560 + 338_228_674_560 + 6_304_038_912),
    # DGXC llama3.1/README_8b.md "Notes"
    (LLAMA31_8B, 20_937_965_568 + 33_822_867_456 + 3_152_019_456),
    # DGXC nemotron4-340b/README.md "MFU formula" (GQA-aware)
    (NEMOTRON4_340B, 510_966_890_496 + 1_565_515_579_392 + 28_311_552_000),
], ids=["gpt3-175b", "llama3.1-405b-kv16", "llama3.1-70b", "llama3.1-8b", "nemotron4-340b"])
def test_flop_count_matches_the_source(model, source_flops_per_token):
    # the shapes above are the benchmarked ones: Megatron's count reproduces the sources' integers
    assert model.flops_per_token == pytest.approx(source_flops_per_token, rel=1e-12)


def test_llama3_405b_rows_use_the_repo_preset():
    from clusterctl.perf.model_presets import preset

    assert LLAMA3_405B.model_dump(exclude={"name"}) == preset("llama3-405b")[0].model_dump(exclude={"name"})
