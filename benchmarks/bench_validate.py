"""Benchmark `clusterctl validate` on synthetic clusters of 1k, 10k, 100k and 200k GPUs.

Each blueprint is a complete, valid design: 8-GPU nodes (a blueprint-local HGX B200 server with eight
ConnectX-8 800G NICs), four per rack, a rail-optimized Quantum-X800 (q3400-ra) compute fabric (two tiers
up to 10k GPUs, three tiers above), an out-of-band management fabric with a leaf in every rack, address
pools, storage, a workload and Slurm. Every size is validated in a fresh `python -m clusterctl validate`
subprocess, three times; the table shows the best wall time and the peak resident memory of that
subprocess (ru_maxrss of a wrapper process's only child, so runs do not mask each other).

    python benchmarks/bench_validate.py                 # all sizes
    python benchmarks/bench_validate.py --sizes 1000 10000 --runs 1
    python benchmarks/bench_validate.py --keep DIR      # keep the generated blueprints in DIR
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIZES = (1_000, 10_000, 100_000, 200_000, 700_000)
TARGETS = {200_000: (1.5, 500), 700_000: (5.0, 500)}
"""GPUs -> (seconds, MB): the original target, and issue 9's at the largest valid synthetic size"""

GPUS_PER_NODE = 8
NODES_PER_RACK = 4
NODE_KW = 14.3
SWITCHES_PER_NET_RACK = 8
Q3400_PORTS = 144

# Runs in a fresh interpreter: times one validate subprocess and reports that child's peak RSS and CPU
# time (user + system: what the wall time would be on an otherwise idle machine, the command is one thread).
# ru_maxrss is in KiB on Linux (bytes on macOS).
_WRAPPER = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
rss = usage.ru_maxrss
rss_mb = rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": rss_mb, "rc": r.returncode,
                  "stderr": r.stderr[-2000:]}))
"""


def _host_pools(nodes: int) -> str:
    """The in-band, BMC and management pools: /16 each while the nodes fit (up to 200,000 GPUs), /13 each
    beyond (87,500 nodes at 700,000 GPUs)."""
    if nodes < 60_000:
        cidrs = ("10.16.0.0/16", "10.17.0.0/16", "10.18.0.0/16")
    else:
        cidrs = ("10.16.0.0/13", "10.24.0.0/13", "10.32.0.0/13")
    return "".join(f"  {role}: {{cidr: {cidr}, role: {role}}}\n" for role, cidr in zip(("inband", "bmc", "mgmt"), cidrs))


def blueprint(gpus: int) -> str:
    """A valid blueprint of ``gpus`` GPUs (rounded up to whole nodes)."""
    nodes = -(-gpus // GPUS_PER_NODE)
    racks = -(-nodes // NODES_PER_RACK)
    rails = GPUS_PER_NODE
    endpoints = nodes * rails
    tiers = 2 if endpoints <= Q3400_PORTS * Q3400_PORTS // 2 else 3
    leaves = -(-nodes // (Q3400_PORTS // 2)) * rails
    switches = leaves * (2 if tiers == 2 else 3)  # leaves + spines (+ cores), an upper estimate
    oob = racks + 2 * -(-racks // 32) + 8
    net_racks = max(2, -(-(switches + oob // 8) // SWITCHES_PER_NET_RACK) + 2)
    width = len(str(nodes))
    rwidth = len(str(racks))
    nwidth = len(str(net_racks))
    it_kw = math.ceil((nodes * NODE_KW + switches * 4.4 + oob * 0.85) * 1.2 + 100)
    return f"""\
# synthetic benchmark blueprint: {gpus:,} GPUs, {nodes:,} nodes, {racks:,} compute racks, {tiers}-tier fabric
name: bench-{gpus}
site: {{name: bench, it_power_kw: {it_kw}, air_cooling_kw: {it_kw}}}
catalog:
  servers:
    bench-b200-800g:
      description: "HGX B200 with eight ConnectX-8 800G compute NICs (benchmark)"
      gpus: {{model: b200, count: 8}}
      cpu: {{sockets: 2, cores_per_socket: 56, threads_per_core: 2}}
      memory_gb: 2048
      nics:
        - {{model: cx8-800g, count: 8, role: compute}}
        - {{model: bf3-2x200g, count: 1, role: inband}}
        - {{model: eth-1g-bmc, count: 1, role: bmc}}
      nvme: {{count: 8, size_tb: 3.84}}
      power_kw: {NODE_KW}
      height_u: 8
      cooling: air
      nvlink_domain_gpus: 8
rack_profiles:
  gpu: {{power_kw: 60, feeds: 3, feed_kw: 43.1, redundancy: N+1, units: 48, reserved_u: 2, air_kw: 60}}
  net: {{power_kw: 60, feeds: 4, feed_kw: 43.1, redundancy: 2N, units: 48, reserved_u: 2, air_kw: 60}}
  mgmt: {{power_kw: 20, feeds: 2, feed_kw: 22, redundancy: 2N, units: 48, reserved_u: 2, air_kw: 20}}
racks:
  - {{names: "c[{1:0{rwidth}d}-{racks:0{rwidth}d}]", profile: gpu}}
  - {{names: "n[{1:0{nwidth}d}-{net_racks:0{nwidth}d}]", profile: net}}
  - {{names: m01, profile: mgmt}}
node_types:
  gpu: {{server: bench-b200-800g}}
  head: {{server: cpu-2u}}
node_groups:
  - {{name: gpu, type: gpu, count: {nodes}, hostnames: "gpu[{1:0{width}d}-{nodes:0{width}d}]",
     racks: "c[{1:0{rwidth}d}-{racks:0{rwidth}d}]", per_rack: {NODES_PER_RACK}}}
  - {{name: head, type: head, role: head, count: 2, hostnames: "head[01-02]", racks: m01}}
fabrics:
  - name: ib
    kind: infiniband
    tiers: {tiers}
    rail_optimized: true
    switch: q3400-ra
    su_nodes: {Q3400_PORTS // 2}
    switch_racks: "n[{1:0{nwidth}d}-{net_racks:0{nwidth}d}]"
    attach: [{{group: gpu, nic_role: compute}}]
  - name: oob
    kind: ethernet
    tiers: {2 if racks <= 32 * 32 else 3}
    su_by: rack
    switch: sn2201
    spine_switch: sn4600c
    leaf_uplinks: 2
    switch_racks: "n[{1:0{nwidth}d}-{net_racks:0{nwidth}d}]"
    attach: [{{group: all, nic_role: bmc}}]
storage:
  - {{name: lustre, tier: parallel, mount: /lustre, checkpoint: true, capacity_tb: {max(1000, gpus * 2)},
     read_gb_per_s: {max(200, gpus // 10)}, write_gb_per_s: {max(100, gpus // 20)}}}
  - {{name: nvme, tier: local, mount: /scratch}}
workload: {{params_b: 70, checkpoint_every_min: 30, checkpoint_budget_s: 60}}
addressing:
  rdma: {{cidr: 10.0.0.0/12, role: compute}}
{_host_pools(nodes)}slurm:
  version: "24.11"
  controllers: "head[01-02]"
  state_save_location: /lustre/slurm/statesave
  partitions: [{{name: batch, groups: [gpu], default: true}}]
  topology: tree
software: {{os: ubuntu-24.04, driver: "570", cuda: "12.8", containers: enroot}}
"""


def measure(path: Path, command: tuple[str, ...] = ("validate",)) -> dict:
    """Wall time and peak RSS of one ``python -m clusterctl COMMAND... BLUEPRINT`` subprocess."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "clusterctl", command[0], str(path), *command[1:]]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def best_of(runs: list[dict]) -> dict:
    """Several runs of one command as one row: the best wall and CPU time, the largest peak RSS."""
    return {"wall": min(r["wall"] for r in runs), "cpu": min(r["cpu"] for r in runs),
            "rss_mb": max(r["rss_mb"] for r in runs)}


def failed(runs: list[dict], what: str) -> bool:
    """Whether a run did not exit 0 (then the first run's exit code and stderr are printed after ``what``)."""
    if all(r["rc"] == 0 for r in runs):
        return False
    print(f"{what} exited {runs[0]['rc']}\n{runs[0]['stderr']}", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="GPU counts")
    ap.add_argument("--runs", type=int, default=3, help="runs per size (best wall time is reported)")
    ap.add_argument("--keep", type=Path, help="write the blueprints here and keep them")
    args = ap.parse_args(argv)

    out_dir = args.keep or Path(tempfile.mkdtemp(prefix="clusterctl-bench-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, ok = [], True
    for gpus in args.sizes:
        path = out_dir / f"bench-{gpus}.yaml"
        path.write_text(blueprint(gpus))
        runs = [measure(path) for _ in range(args.runs)]
        if failed(runs, f"bench-{gpus}: validate"):
            ok = False
        best = best_of(runs)
        rows.append((gpus, -(-gpus // GPUS_PER_NODE), best["wall"], best["rss_mb"], best["cpu"]))

    print(f"{'GPUs':>9} {'nodes':>7} {'wall s':>8} {'CPU s':>7} {'peak RSS MB':>12} {'us/GPU':>8}")
    for gpus, nodes, wall, rss, cpu in rows:
        print(f"{gpus:>9,} {nodes:>7,} {wall:>8.3f} {cpu:>7.2f} {rss:>12.1f} {wall / gpus * 1e6:>8.2f}")
    if len(rows) > 1:
        (g0, _, w0, _, _), (g1, _, w1, _, _) = rows[0], rows[-1]
        print(f"marginal cost {((w1 - w0) / (g1 - g0)) * 1e6:.2f} us/GPU between {g0:,} and {g1:,} GPUs "
              f"(fixed start-up ~{w0 - (w1 - w0) / (g1 - g0) * g0:.2f} s)")
    for gpus, _, wall, rss, _ in rows:
        if gpus in TARGETS:
            target_s, target_mb = TARGETS[gpus]
            verdict = "meets" if wall < target_s and rss < target_mb else "MISSES"
            print(f"target {gpus:,} GPUs < {target_s} s and < {target_mb} MB: {verdict} ({wall:.2f} s, {rss:.0f} MB)")
    if not args.keep:
        for p in out_dir.glob("bench-*.yaml"):
            p.unlink()
        out_dir.rmdir()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
