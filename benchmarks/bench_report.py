"""Benchmark `clusterctl report` (all sections and pictures) on the synthetic 1k-200k GPU blueprints.

Each size runs in a new subprocess (best wall time of --runs, peak RSS) with a Llama 3 405B training
estimate (the layout search included) and writes report.md, report.json and the SVG pictures.
Target from the issue: the 200,000-GPU report in under 3 s.

    python benchmarks/bench_report.py
    python benchmarks/bench_report.py --sizes 200000 --runs 1
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_validate import GPUS_PER_NODE, SIZES, best_of, blueprint, failed, measure  # noqa: E402

TARGETS = {200_000: (3.0, 1024), 700_000: (5.0, 500)}
"""GPUs -> (seconds, MB): the report's original target, and issue 9's at the largest valid synthetic size"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="GPU counts")
    ap.add_argument("--runs", type=int, default=3, help="runs per size (best wall time is reported)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clusterctl-bench-report-"))
    rows, ok = [], True
    try:
        for gpus in args.sizes:
            bp = work / f"bench-{gpus}.yaml"
            bp.write_text(blueprint(gpus))
            runs = [measure(bp, ("report", "-o", str(work / f"out-{gpus}-{i}"), "--model", "llama3-405b"))
                    for i in range(args.runs)]
            if failed(runs, f"bench-{gpus}: report"):
                ok = False
                continue
            out = work / f"out-{gpus}-0"
            size_kb = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1024
            best = best_of(runs)
            rows.append((gpus, -(-gpus // GPUS_PER_NODE), best["wall"], best["rss_mb"], size_kb, best["cpu"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'GPUs':>9} {'nodes':>7} {'wall s':>8} {'CPU s':>7} {'peak MB':>8} {'output KB':>10}")
    for gpus, nodes, wall, rss, kb, cpu in rows:
        print(f"{gpus:>9,} {nodes:>7,} {wall:>8.2f} {cpu:>7.2f} {rss:>8.0f} {kb:>10.0f}")
        if gpus in TARGETS and (wall > TARGETS[gpus][0] or rss > TARGETS[gpus][1]):
            ok = False
            print(f"  over target: {TARGETS[gpus][0]} s / {TARGETS[gpus][1]} MB at {gpus:,} GPUs", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
