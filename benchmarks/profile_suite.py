"""Where the test suite's time goes: the slowest tests and every rehearsal step, as Markdown tables.

Runs the suite (or the tests given after ``--``) once with ``pytest --durations=0`` under a base temporary
directory of its own, then prints:

- the wall time of the run and its pytest summary line, with the machine's cores and load average;
- the seconds per test directory (setup + call + teardown of every test in it);
- the N slowest tests (setup + call + teardown; a session fixture such as a rehearsal is charged to the
  first test that asks for it);
- every rehearsal the e2e tests ran (``tests/e2e/conftest.rehearse`` writes each summary beside its output
  directory as ``rehearsal-summary.json``): its blueprint, scenarios and each step's seconds.

    python3 benchmarks/profile_suite.py                      # the whole suite, as scripts/test runs it
    python3 benchmarks/profile_suite.py -- -n 0              # in one process, one test after another
    python3 benchmarks/profile_suite.py -- tests/e2e         # only the e2e tests
    python3 benchmarks/profile_suite.py --from-log LOG --basetemp DIR   # tables of an earlier run

Run as root on a machine where ``bash scripts/test`` has installed everything (the e2e tests boot
rehearsal nodes). ``CI`` is passed through: set ``CI=true`` to run as CI does (no skips). The tables in
benchmarks/README.md ("The suite") come from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*?)\s*$")
SCRIPTS_TEST_ARGS = ("-n", str((os.cpu_count() or 1) + 1), "--dist", "loadgroup")
"""what scripts/test adds (tests/conftest.py, XDIST_GROUPS); ``-- -n 0`` after them runs everything in one process"""
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed).*?) in ([0-9.]+)s")


def durations(log: str) -> dict[str, float]:
    """test id -> setup + call + teardown seconds, from pytest's ``--durations=0`` section."""
    per_test: dict[str, float] = defaultdict(float)
    section = log.split("slowest durations", 1)
    for line in (section[1] if len(section) == 2 else "").splitlines():
        m = DURATION.match(line)
        if m:
            per_test[m.group(3)] += float(m.group(1))
    return dict(per_test)


def by_directory(per_test: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for test, seconds in per_test.items():
        path = test.split("::", 1)[0]
        parts = path.split("/")
        out["/".join(parts[:2]) if len(parts) > 2 else path] += seconds
    return dict(out)


def rehearsals(basetemp: Path) -> list[tuple[str, dict]]:
    """(the rehearsal's output directory relative to the base, its summary) for every rehearsal run."""
    found = []
    for p in sorted(basetemp.rglob("rehearsal-summary.json")):
        try:
            found.append((str(p.parent.relative_to(basetemp)), json.loads(p.read_text())))
        except (OSError, ValueError):
            continue
    return found


def tables(log: str, basetemp: Path, wall: float | None, top: int) -> str:
    per_test = durations(log)
    lines = []
    summary = next((m for m in map(SUMMARY.match, log.splitlines()[::-1]) if m), None)
    load = os.getloadavg()
    lines.append(f"Machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
                 f"at the end of the run.")
    if summary:
        lines.append(f"pytest: {summary.group(1)} in {float(summary.group(2)):,.0f} s"
                     + (f" ({wall:,.0f} s wall)" if wall else "") + ".")
    lines += ["", "| tests | s |", "|---|---:|"]
    for d, s in sorted(by_directory(per_test).items(), key=lambda kv: -kv[1]):
        lines.append(f"| {d} | {s:,.1f} |")
    lines += ["", f"| {top} slowest tests (setup + call + teardown) | s |", "|---|---:|"]
    for test, s in sorted(per_test.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| `{test}` | {s:,.1f} |")
    for where, summary_json in rehearsals(basetemp):
        scen = ", ".join(k for k, v in summary_json.get("scenarios", {}).items() if v == "run") or "nodes"
        hosts = ", ".join(n["name"] for n in summary_json.get("nodes", []))
        total = sum(st.get("seconds", 0) for st in summary_json.get("steps", []))
        teardown = (summary_json.get("teardown") or {}).get("seconds", 0)
        lines += ["", f"Rehearsal `{where}` ({scen}; nodes {hosts}): {total + teardown:,.0f} s of steps",
                  "", "| step | s |", "|---|---:|"]
        for st in summary_json.get("steps", []):
            lines.append(f"| {st['name']} | {st['seconds']:,.1f} |")
        lines.append(f"| teardown | {teardown:,.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--top", type=int, default=30, help="how many of the slowest tests to list (30)")
    ap.add_argument("--from-log", type=Path, help="print the tables of an earlier run's pytest output")
    ap.add_argument("--basetemp", type=Path, help="the base temporary directory of that run (or of this one)")
    ap.add_argument("--log", type=Path, help="also keep this run's pytest output here")
    ap.add_argument("pytest_args", nargs="*", help="after --: what to run (default: the whole suite)")
    args = ap.parse_args(argv)
    if args.from_log:
        sys.stdout.write(tables(args.from_log.read_text(), args.basetemp or Path("/nonexistent"), None, args.top))
        return 0
    base = args.basetemp or Path(tempfile.mkdtemp(prefix="suite-profile-"))
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
                        f"--basetemp={base}", *SCRIPTS_TEST_ARGS, *args.pytest_args], cwd=REPO, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - started
    if args.log:
        args.log.write_text(r.stdout + r.stderr)
    sys.stdout.write(tables(r.stdout, base, wall, args.top))
    print(f"\n(pytest exit {r.returncode}; base temporary directory {base})")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
