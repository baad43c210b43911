"""Benchmark `clusterctl render` (every target) on the synthetic 1k-200k GPU blueprints of bench_validate.

Each size is rendered into a fresh output directory in a new subprocess (best wall time of --runs,
peak RSS of the render process). Also prints the line count of the rendered slurm.conf, which must stay
small (host ranges, never one line per host).

    python benchmarks/bench_render.py
    python benchmarks/bench_render.py --sizes 200000 --runs 1
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_validate import GPUS_PER_NODE, SIZES, best_of, blueprint, failed, measure  # noqa: E402

TARGET_S, TARGET_MB, TARGET_GPUS, TARGET_SLURM_LINES = 4.0, 1024, 200_000, 300
LARGE_GPUS, LARGE_S, LARGE_MB = 700_000, 5.0, 500
"""issue 9: the largest valid synthetic size (87,500 nodes, /13 host pools) in <= 5 s and <= 500 MB"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[*SIZES, LARGE_GPUS], help="GPU counts")
    ap.add_argument("--runs", type=int, default=3, help="runs per size (best wall time is reported)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clusterctl-bench-render-"))
    rows, ok = [], True
    try:
        for gpus in args.sizes:
            bp = work / f"bench-{gpus}.yaml"
            bp.write_text(blueprint(gpus))
            runs = []
            for i in range(args.runs):
                out = work / f"out-{gpus}-{i}"
                runs.append(measure(bp, ("render", "-o", str(out))))
            if failed(runs, f"bench-{gpus}: render"):
                ok = False
                continue
            out = work / f"out-{gpus}-0"
            files = [p for p in out.rglob("*") if p.is_file()]
            slurm_lines = len((out / "slurm" / "slurm.conf").read_text().splitlines())
            size_mb = sum(p.stat().st_size for p in files) / 2**20
            best = best_of(runs)
            rows.append((gpus, -(-gpus // GPUS_PER_NODE), best["wall"], best["cpu"], best["rss_mb"], len(files),
                         size_mb, slurm_lines))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'GPUs':>9} {'nodes':>7} {'wall s':>8} {'CPU s':>7} {'peak RSS MB':>12} {'files':>6} {'out MB':>7} "
          f"{'slurm.conf lines':>17}")
    for gpus, nodes, wall, cpu, rss, nfiles, mb, lines in rows:
        print(f"{gpus:>9,} {nodes:>7,} {wall:>8.3f} {cpu:>7.3f} {rss:>12.1f} {nfiles:>6} {mb:>7.1f} {lines:>17}")
    if len(rows) > 1:
        (g0, _, _, c0, *_), (g1, _, _, c1, *_) = rows[0], rows[-1]
        print(f"marginal CPU cost {(c1 - c0) / (g1 - g0) * 1e6:.2f} us/GPU between {g0:,} and {g1:,} GPUs "
              f"(fixed start-up ~{c0 - (c1 - c0) / (g1 - g0) * g0:.2f} s)")
    for gpus, _, wall, cpu, rss, _, _, _ in rows:
        if gpus == LARGE_GPUS:
            good = min(wall, cpu) <= LARGE_S and rss <= LARGE_MB
            print(f"target {LARGE_GPUS:,} GPUs <= {LARGE_S} s, <= {LARGE_MB} MB: {'meets' if good else 'MISSES'} "
                  f"({wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB)")
    for gpus, _, wall, _, rss, _, _, lines in rows:
        if gpus == TARGET_GPUS:
            good = wall < TARGET_S and rss < TARGET_MB and lines < TARGET_SLURM_LINES
            print(f"target {TARGET_GPUS:,} GPUs < {TARGET_S} s, < {TARGET_MB} MB, slurm.conf < {TARGET_SLURM_LINES} "
                  f"lines: {'meets' if good else 'MISSES'} ({wall:.2f} s, {rss:.0f} MB, {lines} lines)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
