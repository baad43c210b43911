"""Estimate push vs pull wall time of a change to 1k, 10k and 100k nodes (benchmarks/README.md, "Push vs pull").

What is **measured** here, on this machine: the rendered tree of a synthetic blueprint of each size (bench_validate's,
8 GPUs a node, with slurm.rollout.pull), committed into a bare git repository; the CPU time and bytes of a
first fetch of it (``git clone --bare`` over the pack protocol, as a node's first pull) and of an incremental
fetch after a re-render that changes one setting (as every node's next pull). What comes from the rehearsal
(benchmarks/README.md, arguments below): the push's control-node cost per host and the pull's per-host converge
time. What is **modelled**: everything else (formulas in :func:`push_s` and :func:`pull_s`; assumptions as
arguments, printed with the table).

    python benchmarks/estimate_pull.py                     # 1k, 10k, 100k nodes
    python benchmarks/estimate_pull.py --pull-host-s 40 --control-cores 32
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_validate import GPUS_PER_NODE, blueprint  # noqa: E402

NODES = (1_000, 10_000, 100_000)
LARGEST = 87_500
"""the largest valid synthetic blueprint (700,000 GPUs: bench_render); a larger size's git figures are this
size's, scaled linearly (the rendered tree grows with the node count only through host ranges)"""
PUSH_CORE_S = 130.3 * 2 / 8
"""README, "Converge": the idempotent converge of 8 rehearsal nodes took 130.3 s on 2 cores, CPU-bound: 32.6
core-seconds per host (control node and node work together: they share the cores in a rehearsal)"""
PULL_HOST_S = 42.8
"""README, "Push vs pull": seconds of one node's idempotent pull (clusterctl-pull on a rehearsal node: fetch,
gating, ansible-playbook -c local of site.yml), measured by the pull scenario (mean of the 3 lab nodes'
pull-again, 39.7-45.9 s, the three pulling at once on 2 shared cores)"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args], cwd=cwd, check=True,
                   capture_output=True)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _render(bp: str, interval: int, out: Path) -> None:
    data = yaml.safe_load(bp)
    shared = [t["mount"] for t in data.get("storage") or [] if t.get("tier") in ("nfs", "parallel")]
    if shared:  # two controllers: StateSaveLocation on a shared tier (rule of issue 11, item 2)
        data["slurm"].setdefault("state_save_location", shared[0] + "/slurmctld")
    data["slurm"]["rollout"] = {"pull": {"source": "https://git.example.com/cluster/bench.git",
                                         "interval_minutes": interval}}
    src = out.parent / f"{out.name}.yaml"
    src.write_text(yaml.safe_dump(data, sort_keys=False))
    subprocess.run([sys.executable, "-m", "clusterctl", "render", str(src), "-o", str(out)], check=True,
                   capture_output=True, cwd=Path(__file__).resolve().parent.parent)


def measure_git(wanted: int, work: Path) -> dict:
    """(first fetch, incremental fetch): CPU seconds (both ends, one machine) and bytes on disk of the pack."""
    nodes = min(wanted, LARGEST)
    if nodes < wanted:
        g = measure_git(nodes, work)
        k = wanted / nodes
        return {"measured": nodes, **{w: {**g[w], "cpu": g[w]["cpu"] * k, "bytes": g[w]["bytes"] * k}
                                      for w in ("first", "incremental")}}
    bp = blueprint(nodes * GPUS_PER_NODE)
    tree, bare = work / f"tree-{nodes}", work / f"remote-{nodes}.git"
    _render(bp, 30, tree)
    _git("init", "-q", "-b", "main", cwd=tree)
    _git("add", "-A", cwd=tree)
    _git("commit", "-q", "-m", "v1", cwd=tree)
    _git("clone", "-q", "--bare", str(tree), str(bare))
    node = work / f"node-{nodes}.git"
    c0, t0 = _cpu(), time.monotonic()
    _git("clone", "-q", "--bare", "--no-local", f"file://{bare}", str(node))
    first = {"cpu": _cpu() - c0, "wall": time.monotonic() - t0, "bytes": _size(node / "objects"),
             "files": sum(1 for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts)}
    _render(bp, 15, tree)
    _git("add", "-A", cwd=tree)
    _git("commit", "-q", "-m", "v2", cwd=tree)
    _git("push", "-q", str(bare), "main", cwd=tree)
    before = _size(node / "objects")
    c0, t0 = _cpu(), time.monotonic()
    _git("--git-dir", str(node), "fetch", "-q", f"file://{bare}", "+refs/heads/*:refs/heads/*")
    incr = {"cpu": _cpu() - c0, "wall": time.monotonic() - t0, "bytes": _size(node / "objects") - before}
    return {"measured": nodes, "first": first, "incremental": incr}


def push_s(n: int, a) -> float:
    """One control host, serial batches of batch_percent (Ansible: int(N * p / 100), at least 1), forks F: each
    batch takes the longer of its CPU bound (B hosts x core-seconds per host / control cores) and its latency
    bound (ceil(B / F) waves of one host's converge time); batches run one after another."""
    b = int(n * a.batch_percent / 100) or 1
    batches = math.ceil(n / b)
    per_batch = max(b * a.push_core_s / a.control_cores, math.ceil(b / a.forks) * a.pull_host_s)
    return batches * per_batch


def pull_s(n: int, a, fetch: dict, gated: bool, trigger: bool = False) -> float:
    """Every node converges itself; a released batch is seen at each node's next timer run (worst case: a full
    interval plus the random splay), and finishes after the longer of that window and the git server's time to serve the batch's fetches (CPU: fetches x CPU each / server cores; bytes: fetches x bytes
    each / bandwidth), plus one host's converge. Gated: the control batch and each compute batch released one
    after another (the operator's wait between releases is not counted); not gated: one release to all.
    Triggered: instead of waiting for the timer, the control host starts the service on the batch's nodes
    (``ssh NODE systemctl start --no-block clusterctl-pull``: one SSH connection per node, CPU-bound)."""
    def one(batch: int) -> float:
        server = max(batch * fetch["cpu"] / a.server_cores, batch * fetch["bytes"] * 8 / (a.server_gbps * 1e9))
        wait = batch * a.ssh_core_s / a.control_cores if trigger else (a.interval_min + a.splay_min) * 60
        return max(wait, server) + a.pull_host_s
    if not gated:
        return one(n)
    b = int(n * a.batch_percent / 100) or 1
    return one(1) + sum(one(min(b, n - i)) for i in range(0, n, b))


def _fmt(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    ap.add_argument("--push-core-s", type=float, default=PUSH_CORE_S, help="control-node core-seconds per host")
    ap.add_argument("--pull-host-s", type=float, default=PULL_HOST_S, help="one node's converge, seconds")
    ap.add_argument("--control-cores", type=int, default=64, help="cores of the push's control host (assumed)")
    ap.add_argument("--forks", type=int, default=100, help="the rendered ansible.cfg's forks")
    ap.add_argument("--batch-percent", type=int, default=10, help="slurm.rollout.batch_percent")
    ap.add_argument("--interval-min", type=float, default=30, help="slurm.rollout.pull.interval_minutes")
    ap.add_argument("--splay-min", type=float, default=15, help="slurm.rollout.pull.splay_minutes")
    ap.add_argument("--ssh-core-s", type=float, default=0.34,
                    help="control-host core-seconds of one fresh SSH connection (README: 0.17 s a node on 2 cores)")
    ap.add_argument("--server-cores", type=int, default=16, help="git server cores (assumed)")
    ap.add_argument("--server-gbps", type=float, default=10, help="git server bandwidth, Gb/s (assumed)")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="clusterctl-estimate-pull-") as tmp:
        for n in a.nodes:
            rows.append((n, measure_git(n, Path(tmp))))
    print("measured git fetch of the rendered tree (this machine, both ends; CPU s, MB):")
    print("| nodes | files | first fetch CPU s | first fetch MB | incremental CPU s | incremental KB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, g in rows:
        f, i = g["first"], g["incremental"]
        note = "" if g["measured"] == n else f" (from {g['measured']:,}, scaled)"
        print(f"| {n:,}{note} | {f['files']} | {f['cpu']:.2f} | {f['bytes'] / 2**20:.1f} | {i['cpu']:.2f} | "
              f"{i['bytes'] / 1024:.0f} |")
    print(f"\nmodel: push {a.push_core_s:.1f} core-s/host on {a.control_cores} cores, forks {a.forks}; pull "
          f"{a.pull_host_s:.0f} s/host, timer every {a.interval_min:g} min + splay {a.splay_min:g} min, git server {a.server_cores} cores, "
          f"{a.server_gbps:g} Gb/s; batches of {a.batch_percent} %")
    print("| nodes | push, rolling batches | pull, gated batches, on the timer | pull, gated batches, triggered | "
          "pull, all released at once | pull, first bring-up (full clone, all at once) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, g in rows:
        print(f"| {n:,} | {_fmt(push_s(n, a))} | {_fmt(pull_s(n, a, g['incremental'], True))} | "
              f"{_fmt(pull_s(n, a, g['incremental'], True, trigger=True))} | "
              f"{_fmt(pull_s(n, a, g['incremental'], False))} | {_fmt(pull_s(n, a, g['first'], False))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
