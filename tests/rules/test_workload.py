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
