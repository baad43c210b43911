"""Scheduler rules SCHED001-SCHED003: each triggered by one change to the lab blueprint and quiet on the shipped ones."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab, shipped


@pytest.mark.parametrize("name", ["lab-2node", "dgx-h100-superpod-4su", "hgx-h200-roce-1024"])
def test_shipped_blueprints_are_quiet(name):
    for code in ("SCHED001", "SCHED002", "SCHED003"):
        assert hits(shipped(name), code) == []


def test_window_override_shorter_than_max_time():
    data = lab()
    data["slurm"]["partitions"][0]["max_time"] = "7-00:00:00"
    data["slurm"]["scheduler"] = {"bf_window_minutes": 1440}
    (h,) = hits(data, "SCHED001")
    assert h.path == ("slurm", "scheduler", "bf_window_minutes")
    assert h.message == ("bf_window 1,440 min (1 days) is shorter than partition gpu's MaxTime 10,080 min (7 days): "
                         "jobs waiting behind longer ones get no backfill reservation and can starve")
    assert "planned: 10080" in h.hint


def test_max_time_beyond_the_window_maximum():
    data = lab()
    data["slurm"]["partitions"][0]["max_time"] = "45-00:00:00"
    (h,) = hits(data, "SCHED001")
    assert h.path == ("slurm", "partitions", 0, "max_time")
    assert "64,800 min (45 days) is beyond bf_window's maximum 43,200 min (30 days)" in h.message


def test_array_as_large_as_the_job_table():
    data = lab()
    data["slurm"]["scheduler"] = {"max_array_size": 10000}
    (h,) = hits(data, "SCHED002")
    assert h.path == ("slurm", "scheduler", "max_array_size")
    assert "MaxArraySize 10,000 is not below MaxJobCount 10,000" in h.message


def test_exclusive_partition_typo():
    data = lab()
    data["slurm"]["scheduler"] = {"exclusive_partitions": ["gpus"]}
    (h,) = hits(data, "SCHED003")
    assert h.path == ("slurm", "scheduler", "exclusive_partitions", 0) and h.hint == "did you mean 'gpu'?"


def test_bounds_from_the_man_page():
    from clusterctl.errors import BlueprintError
    from tests.helpers import plan_of
    data = lab()
    data["slurm"]["scheduler"] = {"bf_window_minutes": 43201}  # slurm.conf(5): Max 43200
    with pytest.raises(BlueprintError):
        plan_of(data)
