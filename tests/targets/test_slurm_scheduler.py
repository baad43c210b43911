"""slurm.conf's scheduler lines (SchedulerParameters, MaxJobCount, MaxArraySize, OverSubscribe) for shipped blueprints.

Every expected value is worked out by hand from slurm.conf(5) (22.05.8 and 25.11 say the same): bf_window "at least
as long as the highest allowed time limit" (Default 1440, Max 43200 minutes), bf_resolution raised with the window
(the default's 1,440 slots of 60 s kept: window minutes x 60 / 1440), MaxJobCount default 10000 (10 per slurmd node
above that), MaxArraySize a tenth of MaxJobCount plus one (the 10000/1001 default pair).
"""

from __future__ import annotations

from clusterctl.targets import slurm
from tests.helpers import lab, plan_of, shipped


def scheduler_lines(data: dict) -> list[str]:
    conf = slurm.render(plan_of(data))["slurm/slurm.conf"].splitlines()
    keys = ("SchedulerType=", "SchedulerParameters=", "MaxJobCount=", "MaxArraySize=")
    return [line for line in conf if line.startswith(keys)]


def partition_lines(data: dict) -> list[str]:
    return [line for line in slurm.render(plan_of(data))["slurm/slurm.conf"].splitlines()
            if line.startswith("PartitionName=")]


def test_lab_2node():
    # partition gpu is UNLIMITED: bf_window at its maximum 43200 (30 days); 43200 x 60 / 1440 = 1800 s resolution;
    # 2 slurmd nodes: MaxJobCount stays at the default 10000 and MaxArraySize at the default 1001
    assert scheduler_lines(lab()) == [
        "SchedulerType=sched/backfill",
        "SchedulerParameters=bf_continue,bf_interval=30,bf_max_job_test=500,bf_resolution=1800,bf_window=43200,"
        "max_rpc_cnt=128",
        "MaxJobCount=10000",
        "MaxArraySize=1001",
    ]
    # no time limit to judge by: the partition stays shared
    assert "OverSubscribe" not in partition_lines(lab())[0]


def test_dgx_h100_superpod_4su():
    # batch MaxTime 7-00:00:00 = 10080 min -> bf_window 10080, 10080 x 60 / 1440 = 420 s; 127 DGX nodes x 10 is
    # below the default 10000
    assert scheduler_lines(shipped("dgx-h100-superpod-4su")) == [
        "SchedulerType=sched/backfill",
        "SchedulerParameters=bf_continue,bf_interval=30,bf_max_job_test=500,bf_resolution=420,bf_window=10080,"
        "max_rpc_cnt=128",
        "MaxJobCount=10000",
        "MaxArraySize=1001",
    ]
    # the 7-day GPU partition takes whole nodes; the 2-hour debug partition is shared
    assert partition_lines(shipped("dgx-h100-superpod-4su")) == [
        "PartitionName=batch Nodes=dgx[001-127] Default=YES MaxTime=7-00:00:00 DefCpuPerGPU=28 DefMemPerGPU=254336 "
        "OverSubscribe=EXCLUSIVE State=UP",
        "PartitionName=debug Nodes=dgx[001-127] MaxTime=02:00:00 DefCpuPerGPU=28 DefMemPerGPU=254336 State=UP",
    ]


def test_frontier_3tier_100k():
    # batch 14-00:00:00 = 20160 min -> bf_window 20160, 20160 x 60 / 1440 = 840 s; 13,312 slurmd nodes (gpu[00001-13312])
    # x 10 = 133120 jobs, MaxArraySize 13312 + 1; above 1,000 nodes bf_interval 60
    assert scheduler_lines(shipped("frontier-3tier-100k")) == [
        "SchedulerType=sched/backfill",
        "SchedulerParameters=bf_continue,bf_interval=60,bf_max_job_test=500,bf_resolution=840,bf_window=20160,"
        "max_rpc_cnt=128",
        "MaxJobCount=133120",
        "MaxArraySize=13313",
    ]


def test_overrides_win():
    data = lab()
    data["slurm"]["scheduler"] = {"bf_window_minutes": 2880, "bf_max_job_test": 2000, "max_rpc_cnt": 0,
                                  "max_job_count": 50000, "max_array_size": 4001, "exclusive_partitions": ["gpu"]}
    # the resolution follows the overridden window: 2880 x 60 / 1440 = 120 s
    assert scheduler_lines(data)[1:] == [
        "SchedulerParameters=bf_continue,bf_interval=30,bf_max_job_test=2000,bf_resolution=120,bf_window=2880,"
        "max_rpc_cnt=0",
        "MaxJobCount=50000",
        "MaxArraySize=4001",
    ]
    assert "OverSubscribe=EXCLUSIVE" in partition_lines(data)[0]


def test_window_capped_at_30_days():
    data = lab()
    data["slurm"]["partitions"][0]["max_time"] = "45-00:00:00"
    # bf_window Max 43200; bf_resolution 1800
    assert "bf_resolution=1800,bf_window=43200" in scheduler_lines(data)[1]
