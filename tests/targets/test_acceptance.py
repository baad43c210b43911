"""The acceptance target: rendered Slurm jobs (nccl-tests, ib_write_bw, DCGM, ibdiagnet, HPL) and the checker that
judges their output against the figures ``clusterctl report`` predicts.

Expected figures are hand-checked from the model's closed forms (docs/report.md), written out below with their
arithmetic; the checker is fed real published outputs (tests/data/acceptance/):

- ``nccl_all_reduce_2x8_h100.out``: all_reduce_perf -b 8 -e 8G -f 2 -g 1 on 2 x 8 H100 (GitHub
  lessizzmore/create-a3mega-ztan-fork, ``ztan-NCCL-test-result``), from its ``# nThread`` line to the end;
- ``ib_write_bw_4qp_400g.out``: the result rows of a 4-QP ib_write_bw --report_gbits on a 400 Gb/s NIC (a published
  lab log, 363.47 Gb/s); ``ib_write_bw_mb.out``: a run without --report_gbits (linux-rdma/perftest#234);
- ``dcgm_nvvs_1_3.json``: DCGM's own diag JSON test string ``NVVS_1_3_JSON`` (NVIDIA/DCGM testing, whitespace
  compacted, the pcie info list shortened to two lines) with its failed sm_stress; ``dcgm_pass.json``: the passing
  ``dcgmi diag -j`` document of facebookresearch/gcm's tests;
- ``hpl_netlib.out``: an HPL 2.3 result and residual lines (cameronbunce/ClusterConfig#1);
- ``ibdiagnet_1.5.7.out``: ibdiagnet 1.5.7's report on a two-CA subnet (a published ibutils how-to).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.report import collective_report
from clusterctl.report.section import ReportContext
from clusterctl.targets import acceptance, subnet_manager
from clusterctl.targets.acceptance import checker, hpl
from tests.helpers import REPO, lab, plan_of, shipped, to_yaml

SAMPLES = REPO / "tests" / "data" / "acceptance"
S = 1 << 33
"""nccl-tests -e 8G: every nccl job's verdict size"""


def render(data: dict) -> dict[str, str]:
    return acceptance.render(plan_of(data))


def expected(data: dict) -> dict:
    return json.loads(render(data)["acceptance/expected.json"])["jobs"]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# --- expected figures, hand-checked ------------------------------------------------------------------------------

def test_lab_expected_figures_are_the_hand_checked_ones():
    """lab-2node: 2 HGX H100, 8 x 400 Gb/s NICs per node: one NIC's goodput 50 GB/s x 0.94 = 47 GB/s, a node's
    8 x 47 = 376 GB/s; NCCL 2.26.2's latencies and launch 5 us for AllReduce (clusterctl/perf/nccl_algorithms.py),
    network step 4 us and NVLink step 1 us for AllToAll (clusterctl/perf/interconnect.py).

    - AllReduce, 16 ranks: NVLS-tree; on two nodes the tree sends each byte across once, so the network allows
      376 x 2(15)/16 = 705 GB/s and NVLS caps it at 450 x 0.61 x 2(7)/8 = 480.375; t = S x 2(15)/16 / 480.375e9
      + (25 + 2 x 14 + 5) us -> 479.545 GB/s busbw;
    - AllReduce, one rail (2 ranks, one NIC): ring, t = S / 47e9 + (8.4 + 2 x 14 + 5) us -> 46.989;
    - AllToAll, 16 ranks: half the bytes leave the node at 47 GB/s per GPU, t = S/2 / 47e9 + (4 x 4 + 5) us,
      busbw x 15/16 -> 88.105;
    - AllToAll, one rail: t = S/2 / 47e9 + (4 + 5) us, busbw x 1/2 -> 46.995;
    - ib_write_bw: 47 GB/s."""
    jobs = expected(lab())
    assert jobs["nccl-all_reduce-gpu-all"]["expected_busbw_gb_per_s"] == 479.545
    assert jobs["nccl-all_reduce-gpu-rail0"]["expected_busbw_gb_per_s"] == 46.989
    assert jobs["nccl-all_to_all-gpu-all"]["expected_busbw_gb_per_s"] == 88.105
    assert jobs["nccl-all_to_all-gpu-rail7"]["expected_busbw_gb_per_s"] == 46.995
    assert jobs["ib-write-bw-gpu"]["expected_gb_per_s"] == 47.0
    assert jobs["ib-write-bw-gpu"]["pairs"] == 1
    assert jobs["nccl-all_reduce-gpu-all"]["ranks"] == 16 and jobs["nccl-all_reduce-gpu-rail0"]["ranks"] == 2
    assert {j["pass_fraction"] for j in jobs.values() if "pass_fraction" in j} == {0.9}


def test_domain_jobs_expect_the_one_domain_figure():
    """Inside one NVLink domain (lab-2node: one node, 8 H100): AllReduce over NVLS at 450 x 0.61 x 2(7)/8 = 480.375
    GB/s busbw, t = S x 2(7)/8 / 480.375e9 + (25 + 5) us -> 479.915; AllToAll over NVLink at 0.8 x 450 = 360
    GB/s, t = S x 7/8 / 360e9 + (3 x 1 + 5) us, busbw x 7/8 -> 359.862. gb200-nvl72-8rack: 8 NVL72 blocks of 18
    trays."""
    jobs = expected(lab())
    assert jobs["nccl-all_reduce-gpu-domain"] == {
        "kind": "nccl", "op": "all_reduce", "bytes": S, "ranks": 8, "scope": "domain", "units": 2,
        "expected_busbw_gb_per_s": 479.915, "pass_fraction": 0.9}
    assert jobs["nccl-all_to_all-gpu-domain"]["expected_busbw_gb_per_s"] == 359.862
    gb200 = render(shipped("gb200-nvl72-8rack"))
    assert json.loads(gb200["acceptance/expected.json"])["jobs"]["nccl-all_reduce-gb200-domain"]["units"] == 8
    script = gb200["acceptance/jobs/nccl-all_reduce-gb200-domain.sbatch"]
    assert "units=('gb[001-018]' 'gb[019-036]' 'gb[037-054]' 'gb[055-072]' 'gb[073-090]' 'gb[091-108]' " \
           "'gb[109-126]' 'gb[127-144]')\nmpi=pmix nodes=18 tasks=4\n" in script


def test_superpod_expected_figures_are_the_hand_checked_ones():
    """dgx-h100-superpod-1su: 32 DGX H100 (256 GPUs), one scalable unit.

    - AllReduce, 256 ranks: NVLS-tree; past two nodes the tree sends each node's data across twice, so the
      network allows 376 x 2(255)/256 / 2 = 374.53 GB/s; t = S x 2(255)/256 / 374.53e9 + (25 + 2 x log2(32) x 14
      + 5) us -> 373.143;
    - AllReduce, one rail (32 ranks, one per node): ring (NCCL's tuner rates the tree at 0.92 x 47), t = S x
      2(31)/32 / 47e9 + (8.4 + 62 x 14 + 5) us -> 46.883;
    - AllToAll, 256 ranks: 248/256 of the bytes leave the node, t = S x 248/256 / 47e9 + (8 x 4 + 5) us,
      busbw x 255/256 -> 48.317."""
    jobs = expected(shipped("dgx-h100-superpod-1su"))
    assert jobs["nccl-all_reduce-dgx-all"]["expected_busbw_gb_per_s"] == 373.143
    assert jobs["nccl-all_reduce-dgx-rail3"]["expected_busbw_gb_per_s"] == 46.883
    assert jobs["nccl-all_to_all-dgx-all"]["expected_busbw_gb_per_s"] == 48.317
    assert jobs["ib-write-bw-dgx"] == {"kind": "ib_write_bw", "expected_gb_per_s": 47.0, "pairs": 16,
                                       "pass_fraction": 0.9,
                                       "rails": ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9",
                                                 "mlx5_10", "mlx5_11"]}
    assert jobs["dcgm-diag-dgx"] == {"kind": "dcgm", "level": 3, "nodes": 32}
    assert {k for k in jobs if k.startswith("ibdiagnet")} == {"ibdiagnet-ib", "ibdiagnet-stor"}
    assert not [k for k in jobs if "-su" in k]  # one scalable unit: the whole group is the unit


@pytest.mark.parametrize("name", ["lab-2node", "dgx-h100-superpod-1su"])
def test_whole_group_job_expects_the_reports_figure(name):
    """The job and the report agree by construction: the whole-group AllReduce expects the report's
    allreduce_8g_busbw_gb_per_s for the same ranks."""
    plan = plan_of(shipped(name))
    section = collective_report.build(ReportContext(plan))
    jobs = json.loads(acceptance.render(plan)["acceptance/expected.json"])["jobs"]
    job = next(j for k, j in jobs.items() if k.startswith("nccl-all_reduce-") and k.endswith("-all"))
    group = next(g for g in section.data["groups"] if g["ranks"] == job["ranks"])
    assert job["expected_busbw_gb_per_s"] == group["allreduce_8g_busbw_gb_per_s"]
    report_a2a = next(p for p in group["ops"]["all_to_all"] if p["bytes"] == S)["busbw_gb_per_s"]
    assert jobs[next(k for k in jobs if k.startswith("nccl-all_to_all-") and k.endswith("-all"))][
        "expected_busbw_gb_per_s"] == report_a2a
    domain = next(j for k, j in jobs.items() if k.startswith("nccl-all_reduce-") and k.endswith("-domain"))
    one_domain = next(g for g in section.data["groups"] if g["ranks"] == domain["ranks"])  # "8 GPUs (one NVLink ..."
    assert domain["expected_busbw_gb_per_s"] == next(
        p for p in one_domain["ops"]["all_reduce"] if p["bytes"] == S)["busbw_gb_per_s"]


def test_scalable_units_get_their_own_jobs():
    """gb200-nvl72-8rack: 144 nodes in scalable units of 32 (gb[001-032], ...): one job per unit and operation,
    over the unit's hosts."""
    files = render(shipped("gb200-nvl72-8rack"))
    su = files["acceptance/jobs/nccl-all_reduce-gb200-su2.sbatch"]
    assert "#SBATCH --nodelist=gb[033-064]\n" in su and "#SBATCH --nodes=32\n" in su
    assert "#SBATCH --ntasks-per-node=4\n" in su and "#SBATCH --gpus-per-node=4\n" in su
    rail = files["acceptance/jobs/nccl-all_reduce-gb200-rail0.sbatch"]
    assert "export NCCL_MNNVL_ENABLE=0\n" in rail  # NVL72: one rank per node would otherwise ride NVLink


def test_roce_gets_rail_jobs_but_no_ib_write_bw():
    jobs = expected(shipped("hgx-h200-roce-1024"))
    assert "nccl-all_reduce-gpu-rail0" in jobs and "nccl-all_to_all-gpu-su2" in jobs
    assert not [k for k in jobs if k.startswith(("ib-write-bw", "ibdiagnet"))]


def test_cloud_groups_get_group_and_domain_jobs_only():
    jobs = expected(shipped("aws-p5"))
    assert sorted(jobs) == ["dcgm-diag-gpu", "hpl-gpu", "nccl-all_reduce-gpu-all", "nccl-all_reduce-gpu-domain",
                            "nccl-all_to_all-gpu-all", "nccl-all_to_all-gpu-domain"]


# --- HPL ------------------------------------------------------------------------------------------------------

def test_hpl_sizing():
    """N: 80 % of the HBM as 8-byte doubles, a multiple of NB. lab-2node: 16 x 80 GB -> sqrt(0.8 x 1.28e12 / 8) =
    357,770.9 -> 349 x 1024 = 357,376. superpod-1su: 256 x 80 GB -> sqrt(2.048e12) = 1,431,083.5 -> 1397 x 1024 =
    1,430,528. P x Q as square as the GPU count allows."""
    assert hpl.problem_size(16, 80, 1024) == 357_376
    assert hpl.problem_size(256, 80, 1024) == 1_430_528
    assert [hpl.process_grid(n) for n in (16, 128, 256, 576, 6)] == [(4, 4), (8, 16), (16, 16), (24, 24), (2, 3)]
    dat = render(lab())["acceptance/hpl/gpu.dat"].splitlines()
    assert len(dat) == 31  # Netlib HPL 2.3's HPL.dat: two title lines and 29 parameter lines
    assert [dat[i].split()[0] for i in (5, 7, 10, 11)] == ["357376", "1024", "4", "4"]
    assert dat[5].endswith("Ns") and dat[7].endswith("NBs") and dat[10].endswith("Ps") and dat[11].endswith("Qs")


def test_hpl_expectation_from_the_blueprint():
    data = lab()
    data["acceptance"] = {"hpl_tflops_per_gpu": 50, "hpl_fraction": 0.8, "busbw_fraction": 0.85}
    jobs = expected(data)
    assert jobs["hpl-gpu"]["expected_gflops"] == 800_000  # 50 TFLOPS x 16 GPUs
    assert jobs["hpl-gpu"]["pass_fraction"] == 0.8
    assert jobs["nccl-all_reduce-gpu-all"]["pass_fraction"] == 0.85


@pytest.mark.parametrize("field, value", [("busbw_fraction", 1.5), ("busbw_fraction", 0), ("nccl_tests", "rel/path"),
                                          ("nccl_tests", "/opt/nccl tests"), ("hpl_container", "24.09;id")])
def test_bad_acceptance_settings_are_refused_at_load(field, value):
    data = lab()
    data["acceptance"] = {field: value}
    with pytest.raises(BlueprintError):
        load_blueprint_text(to_yaml(data), "t.yaml")


# --- the batch scripts --------------------------------------------------------------------------------------

def test_rail_job_script():
    text = render(lab())["acceptance/jobs/nccl-all_reduce-gpu-rail3.sbatch"]
    assert [line for line in text.splitlines() if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=nccl-all_reduce-gpu-rail3", "#SBATCH --partition=gpu", "#SBATCH --nodes=2",
        "#SBATCH --nodelist=gpu[01-02]", "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
        "#SBATCH --exclusive", "#SBATCH --time=00:30:00", "#SBATCH --output=%x-%j.out"]
    assert text.endswith("export NCCL_DEBUG=WARN\nexport NCCL_IB_HCA==mlx5_3\n"
                         "srun --mpi=pmix env CUDA_VISIBLE_DEVICES=3 /opt/nccl-tests/build/all_reduce_perf "
                         "-b 8 -e 8G -f 2 -g 1\n")


@pytest.mark.parametrize("name", ["lab-2node", "dgx-h100-superpod-1su", "gb200-nvl72-8rack", "aws-p5"])
def test_every_script_parses_with_bash_and_is_deterministic(name, tmp_path):
    files = render(shipped(name))
    assert files == render(shipped(name))
    scripts = {p: t for p, t in files.items() if p.endswith((".sbatch", ".sh"))}
    for path, text in scripts.items():
        (tmp_path / "s").write_text(text)
        run = subprocess.run(["bash", "-n", str(tmp_path / "s")], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, (path, run.stderr)
        assert text.startswith("#!/bin/bash\n# generated by clusterctl")
        assert not re.search(r"(?i)password|secret|vault", text), path
    submit = files["acceptance/submit.sh"]
    assert submit.count("\nsbatch jobs/") == sum(p.endswith(".sbatch") for p in files)


STUBS = """srun() { printf '%s\\n' "srun $*" >> "$LOG"; }
scontrol() { printf '%s\\n' gpu01 gpu02 gpu03; }
sleep() { :; }
"""
"""srun, scontrol and sleep as shell functions that record what the script asks of them"""


def run_body(script: str, tmp_path) -> list[str]:
    """The job's body (after its #SBATCH header) under :data:`STUBS`, with SLURM_JOB_NODELIST set: srun's calls."""
    body = script.split("set -uo pipefail\n", 1)[1]
    log = tmp_path / "srun.log"
    log.write_text("")
    run = subprocess.run(["bash", "-c", "set -uo pipefail\n" + STUBS + body], capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin", "LOG": str(log),
                                          "SLURM_JOB_NODELIST": "gpu[01-03]"})
    assert run.returncode == 0, run.stderr
    return log.read_text().splitlines()


def test_domain_steps_one_per_node_each_with_its_own_file(tmp_path):
    calls = run_body(render(lab())["acceptance/jobs/nccl-all_reduce-gpu-domain.sbatch"], tmp_path)
    assert sorted(calls) == [
        f"srun --mpi=pmix --nodelist=gpu0{k} --nodes=1 --ntasks-per-node=8 --output=%x-%j-domain{k}.out "
        "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1" for k in (1, 2, 3)]


def test_ib_write_bw_pairs_every_rail_and_the_odd_node(tmp_path):
    """Three nodes: gpu01 serves gpu02 on each rail, then the odd gpu03 connects to gpu01; one report per run."""
    calls = run_body(render(lab())["acceptance/jobs/ib-write-bw-gpu.sbatch"], tmp_path)
    args = "-F --report_gbits -D 10 -s 8388608 -q 4"
    clients = [c for c in calls if "--output=/dev/null" not in c]
    servers = [c for c in calls if "--output=/dev/null" in c]
    assert clients == [f"srun --nodes=1 --ntasks=1 --nodelist={client} --output=%x-%j-{client}-mlx5_{k}.out "
                       f"ib_write_bw -d mlx5_{k} -p {18515 + k} {args} gpu01"
                       for client in ("gpu02", "gpu03") for k in range(8)]
    assert servers == [f"srun --nodes=1 --ntasks=1 --nodelist=gpu01 --output=/dev/null "
                       f"ib_write_bw -d mlx5_{k} -p {18515 + k} {args}" for _ in (1, 2) for k in range(8)]


def test_ibdiagnet_job_uses_the_planned_cabling():
    plan = plan_of(lab())
    files = acceptance.render(plan)
    assert files["acceptance/ibdiagnet/ib.topo"] == subnet_manager.render(plan)["subnet_manager/ib/ib.topo"]
    job = files["acceptance/jobs/ibdiagnet-ib.sbatch"]
    assert ('srun --nodes=1 --ntasks=1 ibdiagnet -i mlx5_0 -t "$SLURM_SUBMIT_DIR"/ibdiagnet/ib.topo '
            '-o "$SLURM_SUBMIT_DIR"/ibdiagnet-ib-"$SLURM_JOB_ID"\n') in job
    assert "#SBATCH --nodelist=gpu01\n" in job


def test_no_jobs_without_slurm():
    data = lab()
    del data["slurm"]
    assert render(data) == {}


def test_check_py_is_the_package_checker():
    assert render(lab())["acceptance/check.py"] == (REPO / "clusterctl/targets/acceptance/checker.py").read_text()


# --- the checker on real outputs ----------------------------------------------------------------------------

LAB_ALL_REDUCE = {"kind": "nccl", "op": "all_reduce", "bytes": S, "ranks": 16, "scope": "all",
                  "expected_busbw_gb_per_s": 375.868, "pass_fraction": 0.9}


def test_nccl_verdict_on_a_published_run():
    """338.82 GB/s out-of-place at 8 GiB on 2 x 8 H100: >= 0.9 x 375.868 = 338.281 passes; against 400 GB/s
    (>= 360) it fails."""
    text = sample("nccl_all_reduce_2x8_h100.out")
    rows = checker.nccl_rows(text)
    assert len(rows) == 31 and rows[-1] == {"bytes": S, "busbw": 338.82, "wrong": "0", "busbw_in_place": 337.35,
                                            "wrong_in_place": "0"}
    ok, note = checker.judge_nccl(LAB_ALL_REDUCE, [text])
    assert ok and note == "busbw 338.82 GB/s at 8589934592 bytes, expected >= 338.281 (0.9 x 375.868)"
    assert not checker.judge_nccl({**LAB_ALL_REDUCE, "expected_busbw_gb_per_s": 400}, [text])[0]
    wrong = text.replace("  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0",
                         "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      3")
    assert wrong != text and not checker.judge_nccl(LAB_ALL_REDUCE, [wrong])[0]
    assert checker.judge_nccl({**LAB_ALL_REDUCE, "bytes": 1 << 34}, [text]) == (False,
                                                                                "no result row of 17179869184 bytes")


def test_nccl_domain_verdict_judges_each_domain():
    text = sample("nccl_all_reduce_2x8_h100.out")
    job = {**LAB_ALL_REDUCE, "scope": "domain", "units": 2}
    assert checker.judge_nccl(job, ["", text, text])[0]  # the batch log has no table
    assert checker.judge_nccl(job, [text])[1].startswith("1 of 2 domains reported, 0 below")
    slow = text.replace("47535  180.71  338.82", "47535  180.71  300.00")
    ok, note = checker.judge_nccl(job, [text, slow])
    assert not ok and note == ("2 of 2 domains reported, 1 below; first failing: busbw 300 GB/s at 8589934592 bytes, "
                               "expected >= 338.281 (0.9 x 375.868)")


def test_ib_write_bw_verdict():
    """363.47 Gb/s against 0.9 x 47 GB/s x 8 = 338.4 Gb/s passes; a run without --report_gbits is refused."""
    job = {"kind": "ib_write_bw", "rails": ["mlx5_0"], "pairs": 1, "expected_gb_per_s": 47.0, "pass_fraction": 0.9}
    text = sample("ib_write_bw_4qp_400g.out")
    assert checker.ib_write_bw_average(text) == 363.47
    assert checker.judge_ib_write_bw(job, [text]) == (
        True, "1 of 1 pair-rail runs, lowest 363.47 Gb/s, expected >= 338.400 Gb/s (0.9 x 47 GB/s)")
    assert not checker.judge_ib_write_bw({**job, "rails": ["mlx5_0", "mlx5_1"]}, [text])[0]  # a rail missing
    assert not checker.judge_ib_write_bw({**job, "expected_gb_per_s": 50.0, "pass_fraction": 1.0}, [text])[0]
    assert checker.judge_ib_write_bw(job, [sample("ib_write_bw_mb.out")]) == (
        False, "no ib_write_bw result (run with --report_gbits)")


def test_dcgm_verdict():
    failing, passing = sample("dcgm_nvvs_1_3.json"), sample("dcgm_pass.json")
    assert checker.dcgm_statuses(failing).count("FAIL") == 1
    assert set(checker.dcgm_statuses(passing)) == {"PASS"}
    job = {"kind": "dcgm", "level": 3, "nodes": 2}
    assert checker.judge_dcgm(job, [passing, passing]) == (True, "2 of 2 nodes reported, 0 with a failed test "
                                                                 "(level 3)")
    assert checker.judge_dcgm(job, [passing, failing]) == (False, "2 of 2 nodes reported, 1 with a failed test "
                                                                  "(level 3)")
    assert not checker.judge_dcgm(job, [passing, "srun: error: gpu02: task 1: Exited with exit code 1"])[0]


def test_hpl_verdict():
    text = sample("hpl_netlib.out")
    assert checker.hpl_result(text) == (17.533, ["PASSED", "PASSED"])
    job = {"kind": "hpl", "expected_gflops": None, "pass_fraction": 0.9}
    assert checker.judge_hpl(job, [text]) == (True, "17.533 Gflops, residual PASSED")
    assert checker.judge_hpl({**job, "expected_gflops": 20.0}, [text]) == (
        False, "17.533 Gflops, residual PASSED, expected >= 18.000 (0.9 x 20)")
    assert not checker.judge_hpl(job, [text.replace("...... PASSED", "...... FAILED", 1)])[0]


def test_ibdiagnet_verdict():
    text = sample("ibdiagnet_1.5.7.out")
    job = {"kind": "ibdiagnet", "fabric": "ib"}
    assert checker.judge_ibdiagnet(job, [text]) == (True, "0 errors, 1 warnings against the planned cabling of ib")
    assert not checker.judge_ibdiagnet(job, [""])[0]


def test_check_py_end_to_end(tmp_path):
    """The rendered check.py, run as a program (isolated: standard library only), reads the newest run of each
    job and exits 1 unless all passed."""
    files = render(lab())
    for path in ("acceptance/check.py", "acceptance/expected.json"):
        (tmp_path / Path(path).name).write_text(files[path])
    out = tmp_path / "out"
    out.mkdir()
    (out / "nccl-all_reduce-gpu-all-41.out").write_text("srun: error: an older run\n")
    (out / "nccl-all_reduce-gpu-all-42.out").write_text(sample("nccl_all_reduce_2x8_h100.out"))
    (out / "dcgm-diag-gpu-43.out").write_text("")
    (out / "dcgm-diag-gpu-43-gpu01.out").write_text(sample("dcgm_pass.json"))
    (out / "dcgm-diag-gpu-43-gpu02.out").write_text(sample("dcgm_nvvs_1_3.json"))
    (out / "ib-write-bw-gpu-44-gpu02-mlx5_0.out").write_text(sample("ib_write_bw_4qp_400g.out"))
    run = subprocess.run([sys.executable, "-I", str(tmp_path / "check.py"), str(out)], capture_output=True,
                         text=True, timeout=60)
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stderr
    # the sample's 338.82 GB/s is below 0.9 x the 479.545 two HGX H100 nodes reach with NVLS-tree
    assert "FAIL    nccl-all_reduce-gpu-all: busbw 338.82 GB/s at 8589934592 bytes, expected >= 431.591 " \
           "(0.9 x 479.545)" in lines
    assert "FAIL    dcgm-diag-gpu: 2 of 2 nodes reported, 1 with a failed test (level 3): " \
           "dcgm-diag-gpu-43-gpu02.out" in lines
    assert "FAIL    ib-write-bw-gpu: 1 of 8 pair-rail runs, lowest 363.47 Gb/s (ib-write-bw-gpu-44-gpu02-mlx5_0.out), " \
           "expected >= 338.400 Gb/s (0.9 x 47 GB/s)" in lines
    assert "MISSING hpl-gpu: no output" in lines
    assert len(lines) == len(json.loads(files["acceptance/expected.json"])["jobs"])
