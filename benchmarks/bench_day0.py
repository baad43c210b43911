"""Benchmark the Day-0 targets (issue 28: DNS and DHCP) on the shipped 100,000-GPU blueprint.

The issue's budget: rendering DHCP and DNS for frontier-3tier-100k adds at most 2 s and 200 MB to its render.
Reports, in this process (the plan expanded once), for each Day-0 target: its render time (CPU seconds, best of
--runs), the peak memory it allocates (tracemalloc, one more run) and the size of what it writes; then the total
against the budget, and what NAME009 (the same names checked at validate) costs.

    python benchmarks/bench_day0.py
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from clusterctl.blueprint.load import load_blueprint  # noqa: E402
from clusterctl.plan import expand  # noqa: E402
from clusterctl.plan.site_records import name_refusals  # noqa: E402
from clusterctl.targets import TARGETS, render_targets  # noqa: E402

BLUEPRINT = REPO / "blueprints" / "frontier-3tier-100k.yaml"
DAY0_TARGETS = tuple(t for t in ("dns", "dhcp") if t in TARGETS)
"""the Day-0 targets this checkout has"""
BUDGET_S = 2.0
BUDGET_MB = 200.0


def best(runs: int, work) -> tuple[float, object]:
    """The best of ``runs`` in CPU seconds of this process (``time.process_time``: on a machine other work shares, the
    wall clock measures the neighbours too) and the last result."""
    times, result = [], None
    for _ in range(runs):
        t0 = time.process_time()
        result = work()
        times.append(time.process_time() - t0)
    return min(times), result


def peak_mb(work) -> float:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    plan = expand(load_blueprint(BLUEPRINT))
    total_s = total_mb = 0.0
    for target in DAY0_TARGETS:
        seconds, files = best(args.runs, lambda t=target: render_targets(plan, [t]))
        mb = peak_mb(lambda t=target: render_targets(plan, [t]))
        size = sum(len(text.encode()) for text in files.values()) / 1e6
        total_s, total_mb = total_s + seconds, total_mb + mb
        print(f"{BLUEPRINT.name}: {target} target {seconds:.3f} s CPU, peak {mb:.0f} MB allocated, "
              f"{len(files)} files, {size:.1f} MB written")
    rule_s, _ = best(args.runs, lambda: name_refusals(plan))
    print(f"Day-0 targets together: {total_s:.3f} s (budget {BUDGET_S} s), {total_mb:.0f} MB (budget {BUDGET_MB:.0f} MB); "
          f"NAME009's name check at validate: {rule_s:.3f} s")
    return 0 if total_s <= BUDGET_S and total_mb <= BUDGET_MB else 1


if __name__ == "__main__":
    raise SystemExit(main())
