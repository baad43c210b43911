"""Benchmark the rehearsal: boot, SSH, first and second converge and teardown of 4, 8 and 16 nodes (root;
docs/rehearse.md).

*boot* is ``lifecycle.boot`` from nothing to every node's sshd listening (bridge, netns and veths, host and
user keys, the overlay root and the init of every node); *ssh* is one SSH round trip to every node, in
parallel (the ``ssh-check`` step); *converge* and *converge again* are the deploy scenario's first and
second run of the rendered ``site.yml`` as a first bring-up runs it (``-e clusterctl_rolling_batch=100%``:
every compute node at once), *again, rolling batches* a third, idempotent run with the rendered rolling
policy (the compute play in batches of 10 %, at least one node: what a change to a running cluster costs
before any drain wait) (the lab blueprint with its compute group grown to N-1 hosts,
rendered as rehearsed; one controller and N-1 compute nodes); *teardown* is ``lifecycle.down`` until no
process, namespace, link or mount is left. *MB/node* is the resident memory of a node's processes right
after boot (its init and sshd). Each size runs ``--runs`` times (default 1 with converges, 3 with
``--no-converge``) in a fresh state directory; the table shows the best run.

``--ablation`` boots 4 nodes, converges once, then times the idempotent second converge with the
rendered settings and with one of them turned off at a time (pipelining, forks = hosts, fact caching
with smart gathering), so each setting's worth is measured on the same nodes.

    sudo python3 benchmarks/bench_rehearse.py                 # 4, 8 and 16 nodes
    sudo python3 benchmarks/bench_rehearse.py --sizes 4 --runs 1 --no-converge
    sudo python3 benchmarks/bench_rehearse.py --ablation
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clusterctl.rehearse.node import lifecycle  # noqa: E402
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


def _deploy_setup(out: Path, n: int):
    """Render the lab grown to n-1 compute hosts, as rehearsed, into ``out``; return its specs and cluster."""
    from clusterctl.blueprint.load import load_blueprint_text
    from clusterctl.plan import expand
    from clusterctl.rehearse.scenario.deploy import cluster_of
    from clusterctl.rehearse.select import node_specs
    from clusterctl.rehearse.variant import installed_slurm, machine_hardware, rehearsal_variant
    from clusterctl.targets import render_targets
    from clusterctl.write import RENDER_SEALED, write_tree
    from tests.helpers import lab, plan_of, to_yaml

    data = lab()
    data["node_groups"][0].update(count=n - 1, hostnames=f"gpu[01-{n - 1:02d}]")
    variant = rehearsal_variant(data, plan_of(data), installed_slurm(), machine_hardware())
    plan = expand(load_blueprint_text(to_yaml(variant.data), "bench.yaml"))
    files = render_targets(plan)
    write_tree(files, out, executable={p for p in files if p.endswith(".sh")}, sealed=RENDER_SEALED)
    specs = node_specs(plan, n - 1, lifecycle.rehearsal_id(out))
    return specs, cluster_of(plan, [s.name for s in specs])


def _converge(step, state) -> tuple[float, int]:
    result = run_step(step, state, Silent())
    if result.status != "ok":
        raise SystemExit(f"{step.name} failed: {result.to_json()}")
    return result.seconds, sum(o.counts.get("changed", 0) for o in result.hosts.values())


def one(n: int, converge: bool) -> dict[str, float]:
    from clusterctl.rehearse.scenario.deploy import Converge, ConvergeAgain

    with tempfile.TemporaryDirectory(prefix="bench-rehearse-") as tmp:
        out = Path(tmp)
        if converge:
            specs, cluster = _deploy_setup(out, n)
        else:
            specs = lifecycle.fallback_specs([f"node{i:02d}" for i in range(1, n + 1)], lifecycle.rehearsal_id(out))
        t0 = time.perf_counter()
        state = lifecycle.boot(out, specs)
        boot = time.perf_counter() - t0
        first = again = rolling = float("nan")
        try:
            mem = sum(_rss_mb(x.init.pid) for x in state.nodes if x.init) / n
            result = run_step(SshCheck(), state, Silent())
            if result.status != "ok":
                raise SystemExit(f"ssh-check failed: {result.to_json()}")
            if converge:
                first, _ = _converge(Converge(cluster, batch="100%"), state)
                again, changed = _converge(ConvergeAgain(batch="100%"), state)
                assert changed == 0
                rolling, changed = _converge(ConvergeAgain(), state)
                assert changed == 0
        finally:
            t0 = time.perf_counter()
            lifecycle.down(out)
            teardown = time.perf_counter() - t0
    return {"boot": boot, "ssh": result.seconds, "first": first, "again": again, "rolling": rolling,
            "teardown": teardown, "mem": mem}


ABLATIONS = {
    "as rendered (pipelining, forks = hosts, smart gathering + fact cache)": {},
    "pipelining off": {"ANSIBLE_PIPELINING": "False"},
    "forks = 1": {"forks": "1"},
    "facts gathered every play, no cache": {"ANSIBLE_GATHERING": "implicit", "ANSIBLE_CACHE_PLUGIN": "memory"},
}


def ablation(n: int = 4) -> None:
    """Second-converge time with each speed setting turned off in turn, on the same converged nodes."""
    from clusterctl.rehearse.scenario.deploy import Converge, ConvergeAgain

    with tempfile.TemporaryDirectory(prefix="bench-rehearse-") as tmp:
        out = Path(tmp)
        specs, cluster = _deploy_setup(out, n)
        state = lifecycle.boot(out, specs)
        try:
            first, _ = _converge(Converge(cluster), state)
            print(f"first converge of {n} nodes: {first:.1f} s\n")
            print(f"| second converge of {n} nodes | s | vs rendered |")
            print("|---|---:|---:|")
            base = None
            for label, tuning in ABLATIONS.items():
                env = {k: v for k, v in tuning.items() if k != "forks"}
                step = ConvergeAgain(tuning=env, forks=int(tuning["forks"]) if "forks" in tuning else None)
                seconds, changed = _converge(step, state)
                assert changed == 0
                base = base or seconds
                print(f"| {label} | {seconds:.1f} | {seconds / base:.2f}x |", flush=True)
        finally:
            lifecycle.down(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--no-converge", action="store_true", help="boot, ssh and teardown only")
    ap.add_argument("--ablation", action="store_true", help="what pipelining, forks and fact caching are worth")
    args = ap.parse_args()
    if args.ablation:
        ablation()
        return
    converge = not args.no_converge
    runs_n = args.runs or (1 if converge else 3)
    print("| nodes | boot s | ssh (all nodes) s | converge s | converge again s | again, rolling batches s "
          "| teardown s | MB/node |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        runs = [one(n, converge) for _ in range(runs_n)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"| {n} | {best['boot']:.2f} | {best['ssh']:.2f} | {best['first']:.1f} | {best['again']:.1f} "
              f"| {best['rolling']:.1f} | {best['teardown']:.2f} | {best['mem']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
