"""Benchmark `clusterctl compare` on three designs of about 100,000 GPUs (issue 32: at most 5 s).

The designs: `clusterctl init --gpus 100000 --gpu h100 --fabric roce`, `init --gpus 100008 --gpu gb200 --fabric
roce` (1,389 NVL72 racks) and the shipped blueprints/frontier-3tier-100k.yaml (106,496 B200 on three tiers). One
subprocess per run (each design validated, its report built without pictures, the three compared, compare.md,
compare.json and compare.svg written); best wall time of --runs and the peak RSS.

    python benchmarks/bench_compare.py
    python benchmarks/bench_compare.py --runs 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_validate import REPO, best_of, failed, measure  # noqa: E402

TARGET_S = 5.0
STARTERS = (("100000", "h100", "roce"), ("100008", "gb200", "roce"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs (best wall time is reported)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clusterctl-bench-compare-"))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        designs = []
        for gpus, gpu, fabric in STARTERS:
            path = work / f"{gpu}-{gpus}.yaml"
            subprocess.run([sys.executable, "-m", "clusterctl", "init", "--gpus", gpus, "--gpu", gpu, "--fabric",
                            fabric, "-o", str(path)], cwd=REPO, env=env, check=True, capture_output=True)
            designs.append(path)
        designs.append(REPO / "blueprints" / "frontier-3tier-100k.yaml")
        runs = [measure(designs[0], ("compare", *map(str, designs[1:]), "-o", str(work / f"out-{i}")))
                for i in range(args.runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failed(runs, "compare"):
        return 1
    best = best_of(runs)
    print(f"{'designs':>8} {'wall s':>8} {'CPU s':>7} {'peak MB':>8}")
    print(f"{len(designs):>8} {best['wall']:>8.2f} {best['cpu']:>7.2f} {best['rss_mb']:>8.0f}")
    ok = best["wall"] <= TARGET_S
    print(f"target: three 100k-GPU designs compared in <= {TARGET_S:g} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
