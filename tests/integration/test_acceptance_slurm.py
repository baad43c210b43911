"""The rendered acceptance jobs under a real Slurm: the real-Slurm test's cluster (munged, slurmctld and two slurmd
on this machine, tests/integration/test_slurm_real.py) runs three of them as rendered, with stand-ins for the GPU
and RDMA programs this machine lacks, and the rendered check.py judges their outputs.

What it shows that the unit tests cannot: sbatch takes the #SBATCH lines (partition, node list, tasks and GPUs per
node, --exclusive, time, output pattern); the steps start with srun --mpi=pmix; the per-rail job hands the program
its rail (NCCL_IB_HCA, CUDA_VISIBLE_DEVICES); the ib_write_bw pairing loop starts a server and a client step per
rail and the client's report lands as %x-%j-<client>-<device>.out; the DCGM job writes one file per node (named by $SLURMD_NODENAME); and
check.py finds every file of the newest run. The stand-ins print published outputs (tests/data/acceptance/).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clusterctl.rehearse.variant import machine_hardware
from clusterctl.targets import acceptance
from tests.helpers import REPO, lab, plan_of
from tests.integration.test_slurm_real import (  # noqa: F401 (cluster is the fixture this module uses)
    JOB_TMP_PARENT, blueprint, cluster, installed_slurm)

pytestmark = pytest.mark.slurm

SAMPLES = REPO / "tests" / "data" / "acceptance"
JOBS = ("nccl-all_reduce-gpu-rail0", "ib-write-bw-gpu", "dcgm-diag-gpu")
STAND_INS = {
    # rank 0 prints the table nccl-tests prints, after a comment line with what the step was given
    "nccl/all_reduce_perf": '[ "$SLURM_PROCID" = 0 ] || exit 0\n'
                            'echo "# given: $CUDA_VISIBLE_DEVICES $NCCL_IB_HCA $PMIX_RANK"\n'
                            'cat {samples}/nccl_all_reduce_2x8_h100.out\n',
    # the server (no host argument) returns; the client prints a published report
    "bin/ib_write_bw": 'for a; do last=$a; done\ncase $last in slit*) cat {samples}/ib_write_bw_4qp_400g.out;; esac\n',
    "bin/dcgmi": 'cat {samples}/dcgm_pass.json\n',
}


@pytest.fixture(scope="module", autouse=True)
def cluster_outside_tmp():
    """sbatch spools the batch script under the cluster's directory (SlurmdSpoolDir) and slurmstepd executes it in
    the job's mount namespace, where /tmp is the job's own (job_container/tmpfs): for this module the real-Slurm
    cluster's directory (tempfile.mkdtemp in its fixture, which runs after this autouse one) is made under
    /var/tmp."""
    parent = Path(tempfile.mkdtemp(prefix="clusterctl-acceptance-it-", dir=JOB_TMP_PARENT))
    parent.chmod(0o755)  # slurmctld runs as SlurmUser and needs its StateSaveLocation below
    saved, tempfile.tempdir = tempfile.tempdir, str(parent)
    yield
    tempfile.tempdir = saved
    shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def work(cluster):
    """The submit directory: under /var/tmp, which the jobs see (their /tmp is private)."""
    path = JOB_TMP_PARENT / f"{cluster.base.name}-acceptance"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_rendered_jobs_run_under_slurm_and_check_py_judges_them(cluster, work):
    bp = blueprint(socket.gethostname().split(".")[0], installed_slurm(), machine_hardware())
    bp["acceptance"] = {"nccl_tests": str(work / "nccl")}
    bp["node_types"]["hgx"]["interfaces"] = lab()["node_types"]["hgx"]["interfaces"]  # the rails' device names
    files = acceptance.render(plan_of(bp))
    for path, text in files.items():
        if path.endswith("ib-write-bw-gpu.sbatch"):  # the stand-in server needs no time to listen: 8 x 2 s saved
            assert text.count("sleep 2  #") == 1
            text = text.replace("sleep 2  #", "sleep 0.1  #")
        (work / path.removeprefix("acceptance/")).parent.mkdir(parents=True, exist_ok=True)
        (work / path.removeprefix("acceptance/")).write_text(text)
    samples = work / "samples"  # beside the jobs: a checkout under /tmp is not in the jobs' private /tmp
    shutil.copytree(SAMPLES, samples)
    for path, body in STAND_INS.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text("#!/bin/sh\n" + body.format(samples=samples))
        (work / path).chmod(0o755)
    env = {**cluster.env, "PATH": f"{work / 'bin'}:{cluster.env['PATH']}"}
    for job in JOBS:
        r = subprocess.run(["sbatch", "--wait", f"jobs/{job}.sbatch"], cwd=work, env=env, capture_output=True,
                           text=True, timeout=180, check=False)
        shown = "".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(work.glob(f"{job}-*.out")))
        assert r.returncode == 0, f"{job}: {r.stdout}{r.stderr}\n{shown}\n{cluster.logs()}"
    def parts(job: str) -> list[str]:  # what follows <job>-<job id>- in the step output files' names
        return sorted(re.sub(r"^\d+-", "", p.name[len(job) + 1:]) for p in work.glob(f"{job}-*-*.out"))

    assert parts("ib-write-bw-gpu") == [f"slit02-mlx5_{k}.out" for k in range(8)]
    assert parts("dcgm-diag-gpu") == ["slit01.out", "slit02.out"]
    rail = next(work.glob("nccl-all_reduce-gpu-rail0-*.out")).read_text()
    assert rail.startswith("# given: 0 =mlx5_0 0\n"), rail[:200]
    run = subprocess.run([sys.executable, "-I", "check.py", "."], cwd=work, capture_output=True, text=True,
                         timeout=60, check=False)
    verdicts = {line.split()[1].rstrip(":"): line.split()[0] for line in run.stdout.splitlines()}
    assert {job: verdicts[job] for job in JOBS} == dict.fromkeys(JOBS, "PASS"), run.stdout
    assert run.returncode == 1  # the jobs not run here are MISSING
    assert set(verdicts) == set(json.loads(files["acceptance/expected.json"])["jobs"])
