"""Workload rules: the 1-SU blueprint (256 H100, llama3-70b) with its training job changed one thing at a time."""

from __future__ import annotations

from tests.helpers import hits, shipped

CODES = ("WORKLOAD001", "WORKLOAD002", "WORKLOAD003", "WORKLOAD004", "WORKLOAD005")


def job(**training) -> dict:
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["training"] = training
    return data


def test_shipped_and_a_good_layout_are_quiet():
    for data in (shipped("dgx-h100-superpod-1su"),
                 job(tp=8, pp=4, global_batch=512, recompute="selective")):
        for code in CODES:
            assert hits(data, code) == [], code


def test_unknown_preset_with_suggestion():
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["model"] = "llama3-70"
    (h,) = hits(data, "WORKLOAD001")
    assert h.path == ("workload", "model") and "llama3-70b" in h.hint


def test_layout_larger_than_the_cluster():
    (h,) = hits(job(tp=8, pp=8, dp=8, global_batch=512), "WORKLOAD002")  # 512 GPUs of 256
    assert h.path == ("workload", "training") and "512 GPUs" in h.message and "256" in h.message


def test_heads_not_divisible_and_batch_not_whole():
    assert "heads" in hits(job(tp=3, pp=1), "WORKLOAD002")[0].message
    assert "global batch 100 is not divisible" in hits(job(tp=8, pp=1, global_batch=100), "WORKLOAD002")[0].message


def test_job_asks_for_more_gpus_than_the_group():
    (h,) = hits(job(gpus=1024), "WORKLOAD002")
    assert h.path == ("workload", "training", "gpus") and "1,024" in h.message


def test_tp_beyond_the_nvlink_domain():
    (h,) = hits(job(tp=16, pp=1), "WORKLOAD003")
    assert h.path == ("workload", "training", "tp") and "NVLink domain" in h.message and "(8 GPUs)" in h.message


def test_memory_over_hbm():
    # 70B on tp 1 x pp 1: 70e9 x (2 + 4) bytes of weights and fp32 gradients alone exceed 80 GB
    (h,) = hits(job(tp=1, pp=1, recompute="full", global_batch=512), "WORKLOAD004")
    assert "of 80 GiB HBM (85.9 GB), of which 82.5 GB is usable" in h.message
    # not checked while the report is left to choose the layout
    assert hits(job(tp=1, pp=1), "WORKLOAD004") == []


def test_params_b_disagrees_with_the_model():
    data = shipped("dgx-h100-superpod-1su")
    data["workload"]["params_b"] = 7
    (h,) = hits(data, "WORKLOAD005")
    assert h.path == ("workload", "params_b") and "70.6 B" in h.message


# DeepSeek-V3's shape (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization reproduce guide: 61 layers,
# hidden 7168, 128 heads, 256 experts of width 2048, top 8) and Llama 3.1 405B's 126 layers, on the 256 GPUs
DEEPSEEK_V3_LIKE = {"layers": 61, "hidden": 7168, "heads": 128, "vocab": 129280, "seq_len": 4096,
                    "ffn_hidden": 18432, "swiglu": True, "experts": 256, "topk": 8, "moe_ffn_hidden": 2048,
                    "tied_embeddings": False}


def moe_job(**training) -> dict:
    data = job(**training)
    data["workload"]["model"] = DEEPSEEK_V3_LIKE
    return data


def test_uneven_first_and_last_stages_megatron_accepts_are_quiet():
    # Megatron-Bridge's DeepSeek-V3 splits: pp 16 = 15 x 4 + 1, pp 8 = 7 x 8 + 5 (the last stage also holds the
    # MTP layer and the loss); --decoder-last-pipeline-num-layers leaves the rest even over the other stages
    assert hits(moe_job(tp=1, pp=16, ep=16, global_batch=256, last_stage_layers=1), "WORKLOAD002") == []
    assert hits(moe_job(tp=1, pp=8, ep=32, global_batch=256, last_stage_layers=5), "WORKLOAD002") == []
    assert hits(moe_job(tp=1, pp=16, ep=16, global_batch=256, first_stage_layers=3, last_stage_layers=2),
                "WORKLOAD002") == []
    # Llama 3.1 405B: 126 layers + embedding + loss = 128 on pp 16, 2 per chunk with 4 virtual stages
    data = job(tp=8, pp=16, global_batch=256, virtual_stages=4, account_for_embedding=True, account_for_loss=True)
    data["workload"]["model"] = "llama3-405b"
    assert hits(data, "WORKLOAD002") == []


def test_uneven_splits_megatron_refuses_are_located_at_the_option():
    (h,) = hits(moe_job(tp=1, pp=16, ep=16, global_batch=256), "WORKLOAD002")
    assert h.path == ("workload", "training") and "61 layers" in h.message and "last_stage_layers" in h.message
    # 61 - 4 - 13 = 44 layers over 2 middle stages of 4 chunks: 22 per stage is not a multiple of 4
    (h,) = hits(moe_job(tp=1, pp=4, ep=64, global_batch=256, virtual_stages=4, first_stage_layers=4,
                        last_stage_layers=13), "WORKLOAD002")
    assert h.path == ("workload", "training", "first_stage_layers")
    assert "the last stage's 13 layers are not divisible by 4 chunks" in h.message
    assert "transformer_config.py:2295-2367" in h.message
    (h,) = hits(moe_job(tp=1, pp=16, ep=16, global_batch=256, last_stage_layers=2), "WORKLOAD002")
    assert "leave 59 layers, not divisible by the 15 middle stages" in h.message
    (h,) = hits(moe_job(tp=1, pp=16, ep=16, global_batch=256, last_stage_layers=1, account_for_loss=True),
                "WORKLOAD002")
    assert h.path == ("workload", "training", "last_stage_layers") and "cannot be combined" in h.message
    assert "transformer_config.py:2229-2239" in h.message
    # only the embedding counted: 127 layers do not split over 16 stages
    data = job(tp=8, pp=16, global_batch=256, account_for_embedding=True)
    data["workload"]["model"] = "llama3-405b"
    (h,) = hits(data, "WORKLOAD002")
    assert h.path == ("workload", "training", "account_for_embedding")
    assert "126 layers + 1 for embedding = 127 do not split evenly over pp 16" in h.message
