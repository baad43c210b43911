"""The scheduler parameters slurm.conf gets, sized from the plan: backfill, RPC back-off, job counts, exclusive partitions.

Decided once here; the slurm target writes them (``SchedulerParameters``, ``MaxJobCount``, ``MaxArraySize``,
partition ``OverSubscribe``) and rules SCHED001-SCHED003 judge the blueprint's overrides (``slurm.scheduler``) by
the same numbers. Every figure is slurm.conf(5)'s (the same in 22.05.8 and 25.11: SchedMD/slurm
doc/man/man5/slurm.conf.5) or SchedMD's scheduling guides (sched_config.html, high_throughput.html,
big_sys.html); docs/slurm.md, "Scheduler parameters", says why each is what it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.slurm import node_groups, partition_groups, time_minutes

BF_WINDOW_DEFAULT_MIN = 1440
"""slurm.conf(5) bf_window: "Default: 1440 (1 day)" """
BF_WINDOW_MAX_MIN = 43200
"""slurm.conf(5) bf_window: "Max: 43200 (30 days)" """
BF_RESOLUTION_DEFAULT_S = 60
"""slurm.conf(5) bf_resolution: "Default: 60" """
BF_RESOLUTION_MAX_S = 3600
"""slurm.conf(5) bf_resolution: "Max: 3600 (1 hour)" """
BF_SLOTS = BF_WINDOW_DEFAULT_MIN * 60 // BF_RESOLUTION_DEFAULT_S
"""time slots of the default window at the default resolution (1,440): a longer window keeps that many, so the
backfill map grows no larger ("if the value of bf_window is increased, then it is generally advisable to also
increase bf_resolution", slurm.conf(5))"""
BF_MAX_JOB_TEST = 500
"""slurm.conf(5) bf_max_job_test default: "the default values are fine" (high_throughput.html); written out so an
operator sees and overrides it in one place"""
BF_INTERVAL_S = 30
BF_INTERVAL_LARGE_S = 60
"""bf_interval: the default 30 s, and 60 s above :data:`LARGE_CLUSTER_NODES`, where a backfill cycle over a long
window takes longer ("bf_interval to 30 seconds or more will limit the overhead", high_throughput.html)"""
LARGE_CLUSTER_NODES = 1000
"""the node count above which slurm.conf's scale section uses its large-cluster values too (targets/slurm.py)"""
MAX_SERVER_THREADS = 256
"""slurm.conf(5) max_rpc_cnt NOTE: "The maximum number of threads (MAX_SERVER_THREADS) is internally set to 256" """
MAX_RPC_CNT = MAX_SERVER_THREADS // 2
"""max_rpc_cnt: scheduling defers once half of slurmctld's RPC threads are busy, well before RPCs queue at the thread
limit (the option is off by default: "Default: 0 (option disabled), Min: 0, Max: 1000")"""
MAX_JOB_COUNT_DEFAULT = 10000
"""slurm.conf(5) MaxJobCount: "The default value is 10000 jobs" """
JOBS_PER_NODE = 10
"""MaxJobCount per node: the default's 10,000 is ten jobs per node of a 1,000-node cluster"""
MAX_JOB_COUNT_CAP = 200_000
"""slurm.conf(5) MaxJobCount: "Performance can suffer with more than a few hundred thousand jobs" """
MAX_ARRAY_SIZE_MAX = 4_000_001
"""slurm.conf(5) MaxArraySize: "The value may not exceed 4000001" """
ARRAY_SHARE = 10
"""MaxJobCount / MaxArraySize: "MaxJobCount should be much larger than MaxArraySize" (slurm.conf(5)); Slurm's own
defaults are 10,000 and 1,001, the ratio kept here"""
EXCLUSIVE_MIN_TIME_MIN = 1440
"""a GPU partition whose MaxTime is longer than a day holds training jobs: whole nodes each (OverSubscribe=EXCLUSIVE)"""


@dataclass(frozen=True, slots=True)
class SchedulerPlan:
    """What slurm.conf's scheduler lines say, overrides applied."""

    bf_window_min: int
    bf_resolution_s: int
    bf_max_job_test: int
    bf_interval_s: int
    max_rpc_cnt: int
    max_job_count: int
    max_array_size: int
    exclusive: tuple[str, ...]
    """names of the partitions with OverSubscribe=EXCLUSIVE"""
    longest_min: int | None
    """the longest partition MaxTime in minutes; None when a partition has none (UNLIMITED)"""

    @property
    def parameters(self) -> list[str]:
        """``SchedulerParameters`` items in slurm.conf(5)'s spelling."""
        return ["bf_continue", f"bf_interval={self.bf_interval_s}", f"bf_max_job_test={self.bf_max_job_test}",
                f"bf_resolution={self.bf_resolution_s}", f"bf_window={self.bf_window_min}",
                f"max_rpc_cnt={self.max_rpc_cnt}"]


def longest_time_limit(plan: ClusterPlan) -> int | None:
    """The longest partition MaxTime in minutes, None when a partition is UNLIMITED."""
    limits = [time_minutes(p.max_time) for p in plan.slurm.partitions]
    return None if None in limits else max(limits)


def planned_window(longest_min: int | None) -> int:
    """bf_window: "at least as long as the highest allowed time limit" (slurm.conf(5)), never below the default and
    never above the 30-day maximum (an UNLIMITED partition gets the maximum)."""
    if longest_min is None:
        return BF_WINDOW_MAX_MIN
    return min(BF_WINDOW_MAX_MIN, max(BF_WINDOW_DEFAULT_MIN, longest_min))


def planned_resolution(window_min: int) -> int:
    """bf_resolution that keeps :data:`BF_SLOTS` slots over the window: 60 s for a day, 420 s for 7 days, 1,800 s for
    30 days; within 60 s and the 3,600 s maximum."""
    return min(BF_RESOLUTION_MAX_S, max(BF_RESOLUTION_DEFAULT_S, math.ceil(window_min * 60 / BF_SLOTS)))


def planned_max_job_count(nodes: int) -> int:
    """MaxJobCount: :data:`JOBS_PER_NODE` per node, at least Slurm's default and at most :data:`MAX_JOB_COUNT_CAP`."""
    return min(MAX_JOB_COUNT_CAP, max(MAX_JOB_COUNT_DEFAULT, JOBS_PER_NODE * nodes))


def planned_array_size(max_job_count: int) -> int:
    """MaxArraySize: a tenth of MaxJobCount, plus one for index 0 (10,000 -> 1,001, Slurm's default pair)."""
    return min(MAX_ARRAY_SIZE_MAX, max_job_count // ARRAY_SHARE + 1)


def planned_exclusive(plan: ClusterPlan) -> tuple[str, ...]:
    """GPU partitions (every node a GPU node) with a finite MaxTime over :data:`EXCLUSIVE_MIN_TIME_MIN`: a multi-day
    training job gets its nodes whole (all CPUs and GRES: slurm.conf(5) OverSubscribe=EXCLUSIVE), so no small job
    shares a node's PCIe switches, NICs and memory bandwidth with its collectives. Short (debug) partitions and
    UNLIMITED ones (no time limit to judge by: name them in ``exclusive_partitions``) stay shared."""
    out = []
    for p in plan.slurm.partitions:
        groups = partition_groups(plan, p)
        limit = time_minutes(p.max_time)
        if groups and all(g.type.gpus > 0 for g in groups) and limit is not None and limit > EXCLUSIVE_MIN_TIME_MIN:
            out.append(p.name)
    return tuple(out)


def scheduler_plan(plan: ClusterPlan) -> SchedulerPlan:
    """The planned values with ``slurm.scheduler``'s overrides applied (a resolution follows an overridden window)."""
    ov = plan.slurm.scheduler
    longest = longest_time_limit(plan)
    window = ov.bf_window_minutes or planned_window(longest)
    nodes = sum(g.count for g in node_groups(plan))  # the nodes running slurmd
    jobs = ov.max_job_count or planned_max_job_count(nodes)
    return SchedulerPlan(
        bf_window_min=window,
        bf_resolution_s=ov.bf_resolution_s or planned_resolution(window),
        bf_max_job_test=ov.bf_max_job_test or BF_MAX_JOB_TEST,
        bf_interval_s=ov.bf_interval_s or (BF_INTERVAL_LARGE_S if nodes > LARGE_CLUSTER_NODES else BF_INTERVAL_S),
        max_rpc_cnt=MAX_RPC_CNT if ov.max_rpc_cnt is None else ov.max_rpc_cnt,
        max_job_count=jobs,
        max_array_size=planned_array_size(jobs) if ov.max_array_size is None else ov.max_array_size,
        exclusive=planned_exclusive(plan) if ov.exclusive_partitions is None else tuple(ov.exclusive_partitions),
        longest_min=longest)
