"""Benchmark the rehearsal node layer: boot and teardown of 4, 8 and 16 nodes (root; docs/rehearse.md).

*boot* is ``nodes.boot`` from nothing to every node's sshd listening (bridge, netns and veths, host and
user keys, the overlay root and the init of every node); *ssh* is one SSH round trip to every node, in
parallel (the ``ssh-check`` step); *teardown* is ``nodes.down`` until no process, namespace, link or mount
is left. *MB/node* is the resident memory of a node's processes right after boot (its init and sshd).
Each size runs ``--runs`` times (default 3) in a fresh state directory; the table shows the best run.
Converge times (first and second ``site.yml``) join this table when that step exists.

    sudo python3 benchmarks/bench_rehearse.py                 # 4, 8 and 16 nodes
    sudo python3 benchmarks/bench_rehearse.py --sizes 4 --runs 1
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clusterctl.rehearse import nodes  # noqa: E402
from clusterctl.rehearse.steps import Silent, SshCheck, run_step  # noqa: E402

SIZES = (4, 8, 16)


def _rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,rss="], capture_output=True, text=True, check=True).stdout
    rows = [tuple(int(x) for x in line.split()) for line in out.splitlines() if line.strip()]
    children: dict[int, list[int]] = {}
    rss = {}
    for p, pp, r in rows:
        children.setdefault(pp, []).append(p)
        rss[p] = r
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total / 1024


def one(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-rehearse-") as tmp:
        out = Path(tmp)
        specs = nodes.fallback_specs([f"node{i:02d}" for i in range(1, n + 1)], nodes.rehearsal_id(out))
        t0 = time.perf_counter()
        state = nodes.boot(out, specs)
        boot = time.perf_counter() - t0
        try:
            mem = sum(_rss_mb(x.init.pid) for x in state.nodes if x.init) / n
            result = run_step(SshCheck(), state, Silent())
            if result.status != "ok":
                raise SystemExit(f"ssh-check failed: {result.to_json()}")
        finally:
            t0 = time.perf_counter()
            nodes.down(out)
            teardown = time.perf_counter() - t0
    return {"boot": boot, "ssh": result.seconds, "teardown": teardown, "mem": mem}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print("| nodes | boot s | ssh (all nodes) s | teardown s | MB/node |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        runs = [one(n) for _ in range(args.runs)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"| {n} | {best['boot']:.2f} | {best['ssh']:.2f} | {best['teardown']:.2f} | {best['mem']:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
