"""Benchmark `clusterctl whatif --each` on the shipped 100,000-GPU blueprint (issue 33: every leaf, spine, feed and
CDU of it in at most 10 s and 1 GB).

blueprints/frontier-3tier-100k.yaml: 106,496 B200 on a three-tier fabric; the sweep fails each leaf, spine, rack
feed and CDU alone (about 18,000 failures) on one index of the plan, ranks them and writes the JSON. One subprocess
per run; best wall time of --runs and the peak RSS.

    python benchmarks/bench_whatif.py
    python benchmarks/bench_whatif.py --runs 1
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_validate import REPO, best_of, failed, measure  # noqa: E402

TARGET_S, TARGET_MB = 10.0, 1024
BLUEPRINT = REPO / "blueprints" / "frontier-3tier-100k.yaml"
KINDS = ("leaf", "spine", "feed", "cdu")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs (best wall time is reported)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clusterctl-bench-whatif-"))
    each = [a for k in KINDS for a in ("--each", k)]
    try:
        runs = [measure(BLUEPRINT, ("whatif", *each, "-o", str(work / f"out-{i}"))) for i in range(args.runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failed(runs, "whatif"):
        return 1
    best = best_of(runs)
    print(f"{'wall s':>8} {'CPU s':>7} {'peak MB':>8}")
    print(f"{best['wall']:>8.2f} {best['cpu']:>7.2f} {best['rss_mb']:>8.0f}")
    ok = best["wall"] <= TARGET_S and best["rss_mb"] <= TARGET_MB
    print(f"target: every leaf, spine, feed and CDU of the 100k-GPU blueprint in <= {TARGET_S:g} s and "
          f"<= {TARGET_MB} MB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
