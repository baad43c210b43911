"""Scheduler parameters: the blueprint's ``slurm.scheduler`` overrides judged against what the plan sizes.

The numbers are :mod:`clusterctl.plan.scheduler`'s, the ones the slurm target writes: a finding and slurm.conf never
disagree. Every rule is silent without a ``slurm:`` section.
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.blueprint.load import did_you_mean
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.scheduler import BF_WINDOW_MAX_MIN, scheduler_plan
from clusterctl.plan.slurm import time_minutes
from clusterctl.rules.base import Hit, Severity, rule


def _days(minutes: int) -> str:
    return f"{minutes:,} min ({minutes / 1440:g} days)"


@rule("SCHED001", "scheduler", Severity.WARNING, "backfill window shorter than a partition's time limit")
def backfill_window(plan: ClusterPlan) -> Iterator[Hit]:
    """slurm.conf(5) bf_window: "A value at least as long as the highest allowed time limit is generally advisable
    to prevent job starvation": backfill plans no reservation past the window, so a large job waiting behind jobs
    that may run longer than it is starved by every small job that fits in front of it. The window is at most
    43,200 minutes (30 days): a longer MaxTime is capped there, and an override below the longest MaxTime is
    reported here. UNLIMITED partitions get the maximum without a finding (no limit to reach)."""
    if plan.slurm is None:
        return
    sched = scheduler_plan(plan)
    longest = sched.longest_min
    if longest is None or sched.bf_window_min >= longest:
        return
    worst = max(range(len(plan.slurm.partitions)), key=lambda i: _minutes_or_zero(plan, i))
    name = plan.slurm.partitions[worst].name
    if plan.slurm.scheduler.bf_window_minutes is not None:
        yield Hit(("slurm", "scheduler", "bf_window_minutes"),
                  f"bf_window {_days(sched.bf_window_min)} is shorter than partition {name}'s MaxTime "
                  f"{_days(longest)}: jobs waiting behind longer ones get no backfill reservation and can starve",
                  f"drop slurm.scheduler.bf_window_minutes (planned: {min(longest, BF_WINDOW_MAX_MIN)}) or shorten "
                  f"the partition's max_time")
    else:
        yield Hit(("slurm", "partitions", worst, "max_time"),
                  f"partition {name}'s MaxTime {_days(longest)} is beyond bf_window's maximum "
                  f"{_days(BF_WINDOW_MAX_MIN)}: backfill is capped there and cannot reserve for the longest jobs",
                  "keep max_time at 30 days or less (checkpoint and requeue longer runs)")


def _minutes_or_zero(plan: ClusterPlan, i: int) -> int:
    return time_minutes(plan.slurm.partitions[i].max_time) or 0


@rule("SCHED002", "scheduler", Severity.WARNING, "MaxArraySize not below MaxJobCount")
def array_size(plan: ClusterPlan) -> Iterator[Hit]:
    """slurm.conf(5) MaxArraySize: "The value of MaxJobCount should be much larger than MaxArraySize, since each job
    array task still counts as a separate job": an array as large as MaxJobCount fills slurmctld's job table and
    every other submission fails until its tasks age out."""
    if plan.slurm is None:
        return
    sched = scheduler_plan(plan)
    if sched.max_array_size < sched.max_job_count:
        return
    ov = plan.slurm.scheduler
    path = ("slurm", "scheduler", "max_array_size" if ov.max_array_size is not None else "max_job_count")
    yield Hit(path, f"MaxArraySize {sched.max_array_size:,} is not below MaxJobCount {sched.max_job_count:,}: one "
                    "full job array fills slurmctld's job table",
              f"keep max_array_size well below max_job_count (planned: a tenth, {sched.max_job_count // 10 + 1:,})")


@rule("SCHED003", "scheduler", Severity.ERROR, "exclusive partition is no partition")
def exclusive_names(plan: ClusterPlan) -> Iterator[Hit]:
    """``slurm.scheduler.exclusive_partitions`` names partitions that get OverSubscribe=EXCLUSIVE; a name that is no
    partition of the blueprint is a typo that leaves the intended partition shared."""
    if plan.slurm is None or plan.slurm.scheduler.exclusive_partitions is None:
        return
    names = [p.name for p in plan.slurm.partitions]
    for i, name in enumerate(plan.slurm.scheduler.exclusive_partitions):
        if name not in names:
            yield Hit(("slurm", "scheduler", "exclusive_partitions", i),
                      f"exclusive_partitions names {name}, which is no partition", did_you_mean(name, names)
                      or f"name one of {', '.join(names)}")
