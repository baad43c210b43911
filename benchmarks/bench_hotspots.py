"""Time the in-process hot spots that tests used to time with wall-clock asserts (issue 15, item 9).

Each case builds its input first (not timed, anew for every run), then times one call, best of --runs, and
compares it with the limit the test used to assert. Wall-clock limits flake on a busy test runner, so the tests
now check only what the code produces and this script is where the speed is watched.

    python benchmarks/bench_hotspots.py
    python benchmarks/bench_hotspots.py --runs 5 --cases slurm-100k layout-search

Exits 1 when a case's best run is over its limit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.helpers import plan_of, shipped  # noqa: E402  (the tests built these inputs the same way)


# --- the cases: each returns the call to time (its input built already) -----------------------------------

def naming_100k_duplicates() -> Callable[[], object]:
    """NAME001/NAME002 on two groups of the same 50,000 host names (one finding per group pair)."""
    from clusterctl.rules.naming import unique_hosts, valid_hosts

    data = shipped("lab-2node")
    for g in data["node_groups"]:
        g.pop("racks", None)
    data["node_groups"][0].update(count=50000, hostnames="gpu[00001-50000]")
    data["node_groups"].append({"name": "more", "type": "hgx", "count": 50000, "hostnames": "gpu[00001-50000]"})
    data.pop("fabrics")
    plan = plan_of(data)
    return lambda: list(unique_hosts(plan)) + list(valid_hosts(plan))


def slurm_100k() -> Callable[[], object]:
    """The Slurm target for frontier-3tier-100k (13,312 nodes, host ranges)."""
    from clusterctl.targets import slurm

    plan = plan_of(shipped("frontier-3tier-100k"))
    return lambda: slurm.render(plan)


def slurm_200k() -> Callable[[], object]:
    """The Slurm target for frontier-3tier-100k grown to 26,624 nodes (212,992 GPUs)."""
    from clusterctl.targets import slurm

    data = shipped("frontier-3tier-100k")
    data["node_groups"][0].update({"count": 26624, "hostnames": "gpu[00001-26624]", "racks": "c[0001-6656]"})
    data["racks"][0]["names"] = "c[0001-6656]"
    plan = plan_of(data)
    return lambda: slurm.render(plan)


def slurm_elastic_29k() -> Callable[[], object]:
    """slurm.conf of aws-p5 with an elastic group of 25,000 GPU nodes and 4,000 static CPU nodes
    (SuspendExcNodes as host ranges)."""
    from clusterctl.targets import slurm

    data = shipped("aws-p5")
    data["node_groups"][0]["cloud"] = {"elastic": True}
    data["slurm"].update(version="24.11", install={"kind": "distro"})
    data["node_groups"].append({"name": "cpu", "type": "head", "count": 4, "hostnames": "cpu[1-4]"})
    data["slurm"]["partitions"][0]["groups"] = ["gpu", "cpu"]
    data["node_groups"][0].update(count=25_000, hostnames="gpu[00001-25000]")
    data["node_groups"][2].update(count=4_000, hostnames="cpu[0001-4000]")
    data["cloud"]["reservation"] = None
    plan = plan_of(data)
    return lambda: slurm.render(plan)["slurm/slurm.conf"]


def layout_search() -> Callable[[], object]:
    """The training-layout search for Llama 3 405B on 16,384 H100 (HGX, 8-GPU NVLink domains)."""
    from clusterctl.blueprint.training import TrainingSpec
    from clusterctl.perf.interconnect import Interconnect
    from clusterctl.perf.layout_search import search
    from clusterctl.perf.job import Accelerator
    from clusterctl.perf.model_presets import preset

    h100 = Accelerator("h100-sxm", 989, 794.5, "", 80, 3.35)
    hgx = Interconnect(8, 450, True, 8, 50)
    model, _ = preset("llama3-405b")
    return lambda: search(model, TrainingSpec(), 16384, h100, hgx)


def report_storage_100k() -> Callable[[], object]:
    """The report's storage section for frontier-3tier-100k."""
    from clusterctl.report import storage
    from clusterctl.report.section import ReportContext

    plan = plan_of(shipped("frontier-3tier-100k"))
    return lambda: storage.build(ReportContext(plan))


def report_reliability_100k() -> Callable[[], object]:
    """The report's reliability section for frontier-3tier-100k (failure rates loaded once before)."""
    from clusterctl.report import reliability
    from clusterctl.report.section import ReportContext

    plan = plan_of(shipped("frontier-3tier-100k"))
    reliability.build(ReportContext(plan))
    return lambda: reliability.build(ReportContext(plan))


CASES: dict[str, tuple[Callable[[], Callable[[], object]], float]] = {
    "naming-100k-duplicates": (naming_100k_duplicates, 2.0),
    "slurm-100k": (slurm_100k, 2.0),
    "slurm-200k": (slurm_200k, 2.0),
    "slurm-elastic-29k": (slurm_elastic_29k, 2.0),
    "layout-search": (layout_search, 2.0),
    "report-storage-100k": (report_storage_100k, 0.2),
    "report-reliability-100k": (report_reliability_100k, 0.2),
}
"""name -> (set-up returning the call to time, limit in seconds: what the test used to assert)"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--runs", type=int, default=3, help="runs per case (the best is reported)")
    args = ap.parse_args(argv)
    ok = True
    print(f"{'case':<26} {'best s':>8} {'CPU s':>7} {'limit s':>8}  verdict")
    for name in args.cases:
        setup, limit = CASES[name]
        best_wall = best_cpu = float("inf")
        for _ in range(args.runs):
            call = setup()  # fresh input each run: some results are cached on the plan
            w0, c0 = time.perf_counter(), time.process_time()
            call()
            best_wall = min(best_wall, time.perf_counter() - w0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        verdict = "ok" if best_wall < limit else ("ok (CPU)" if best_cpu < limit else "OVER")
        ok &= verdict != "OVER"
        print(f"{name:<26} {best_wall:>8.3f} {best_cpu:>7.3f} {limit:>8.1f}  {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
