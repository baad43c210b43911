"""Benchmark the switches target (routed fabrics' startup files, issue 27) on the shipped 100,000-GPU blueprint.

frontier-3tier-100k has over 1,024 routed switches, so a render writes one table per tier; the issue's budget is
that the switch configurations add at most 1 s to its render. Reports, best of --runs, in this process (the plan
expanded once): the switches target alone, every target, and every target without the switches target (the
difference is what the switch files add); and what every switch's own directory costs when asked for
(``clusterctl render --switches all``: files in memory, not written).

    python benchmarks/bench_switches.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from clusterctl.blueprint.load import load_blueprint  # noqa: E402
from clusterctl.plan import expand  # noqa: E402
from clusterctl.targets import TARGETS, render_targets  # noqa: E402
from clusterctl.targets.switches import render as render_switches  # noqa: E402
from clusterctl.targets.switches import routed_switches  # noqa: E402

BLUEPRINT = REPO / "blueprints" / "frontier-3tier-100k.yaml"
BUDGET_S = 1.0
"""issue 27: rendering the switch configurations of the 100k-GPU blueprint adds at most 1 s"""


def best(runs: int, work) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        count = len(work())
        times.append(time.perf_counter() - t0)
    return min(times), count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    plan = expand(load_blueprint(BLUEPRINT))
    others = [t for t in TARGETS if t != "switches"]
    switches_s, files = best(args.runs, lambda: render_targets(plan, ["switches"]))
    all_s, _ = best(args.runs, lambda: render_targets(plan))
    others_s, _ = best(args.runs, lambda: render_targets(plan, others))
    every = routed_switches(plan)
    each_s, each_files = best(1, lambda: render_switches(plan, every))
    print(f"{BLUEPRINT.name}: switches target {switches_s:.3f} s ({files} files); every target {all_s:.3f} s, "
          f"without switches {others_s:.3f} s: the switch files add {all_s - others_s:.3f} s (budget {BUDGET_S} s)")
    print(f"every switch's own directory (render --switches all): {len(every):,} switches, {each_files:,} files "
          f"in {each_s:.2f} s, in memory")
    return 0 if switches_s <= BUDGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
