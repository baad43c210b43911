"""Issue 24's acceptance sweep as a table: every string field x every payload class, in-process.

For each payload class (tests/security/payloads.py) prints how many cases were refused (and by which codes),
rendered with nothing new in a privilege-bearing position ("rendered-safe"), rendered with a payload in such a
position ("violations"), or ended in an exception (exit 3), and the slowest case. tests/security/test_sweep.py
asserts the same invariants; this script gives the figures (and ``--json`` writes them).

    PYTHONPATH=. python3 benchmarks/sweep_meaning.py
    PYTHONPATH=. python3 benchmarks/sweep_meaning.py --classes ip-names privileged-paths --examples 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.security import payloads as P  # noqa: E402
from tests.security import sweep as S  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", nargs="+", choices=P.CLASSES, default=list(P.CLASSES))
    ap.add_argument("--examples", type=int, default=5, help="failures shown per class")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    print(f"{'class':<17} {'cases':>6} {'refused':>8} {'rendered-safe':>14} {'violations':>11} {'exit 3':>7} "
          f"{'wall s':>7} {'CPU s':>6} {'slowest s':>9}  top refusal codes")
    rows, ok = [], True
    for cls in args.classes:
        t0, c0 = time.perf_counter(), time.process_time()
        r = S.run_class(cls)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        top = ", ".join(f"{code or '?'} {n}" for code, n in sorted(r.refused.items(), key=lambda kv: -kv[1])[:4])
        print(f"{cls:<17} {r.cases:>6} {r.refused_total:>8} {r.rendered_safe:>14} {r.violations:>11} {r.exit3:>7} "
              f"{seconds:>7.1f} {cpu:>6.1f} {r.slowest[0]:>9.2f}  {top}")
        for failure in r.failures[:args.examples]:
            print(f"    {failure[:300]}")
        ok &= not r.failures
        rows.append({"class": cls, "cases": r.cases, "refused": r.refused_total, "refused_by_code": r.refused,
                     "rendered_safe": r.rendered_safe, "violations": r.violations, "exit3": r.exit3,
                     "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                     "slowest": {"seconds": round(r.slowest[0], 3), "case": r.slowest[1]},
                     "failures": r.failures})
    total = {k: sum(row[k] for row in rows)
             for k in ("cases", "refused", "rendered_safe", "violations", "exit3", "seconds", "cpu_seconds")}
    print(f"{'total':<17} {total['cases']:>6} {total['refused']:>8} {total['rendered_safe']:>14} "
          f"{total['violations']:>11} {total['exit3']:>7} {total['seconds']:>7.1f} {total['cpu_seconds']:>6.1f}")
    if args.json:
        args.json.write_text(json.dumps({"classes": rows, "total": total}, indent=2, ensure_ascii=True) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
