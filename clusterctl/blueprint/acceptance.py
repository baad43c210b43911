"""Acceptance and burn-in jobs (docs/acceptance.md): where the test programs are on the cluster and how close a
measured figure must come to the one ``clusterctl report`` predicts for the same job."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterctl.kinds import AbsolutePath, Version
from clusterctl.strict import StrictModel


class Acceptance(StrictModel):
    """The rendered acceptance jobs (``acceptance/`` of the render): nccl-tests, ib_write_bw, DCGM diagnostics,
    ibdiagnet and HPL, each judged by ``acceptance/check.py`` against the report's prediction."""

    busbw_fraction: float = Field(default=0.9, gt=0, le=1)
    """an nccl-tests job passes when its bus bandwidth at the largest message reaches this share of the report's
    prediction for the same operation, size and ranks (default 90 %)"""
    ib_write_bw_fraction: float = Field(default=0.9, gt=0, le=1)
    """an ib_write_bw pair passes when its average bandwidth reaches this share of the report's per-NIC goodput"""
    nccl_tests: AbsolutePath = "/opt/nccl-tests/build"
    """directory of the nccl-tests programs on the GPU nodes (NVIDIA/nccl-tests built with MPI=1)"""
    mpi: Literal["pmix", "pmi2"] = "pmix"
    """srun's --mpi plugin the nccl-tests and HPL ranks are started with"""
    hpl_container: Version = "24.09"
    """tag of NVIDIA's HPC-Benchmarks container (nvcr.io/nvidia/hpc-benchmarks) the HPL job runs with pyxis"""
    hpl_block_size: int = Field(default=1024, ge=32, le=16384)
    """HPL.dat NB"""
    hpl_tflops_per_gpu: float | None = Field(default=None, gt=0, le=1_000_000)
    """the site's expected HPL Rmax per GPU (TFLOPS); the report predicts no FP64 figure, so without it the HPL
    verdict is the residual check alone"""
    hpl_fraction: float = Field(default=0.9, gt=0, le=1)
    """with ``hpl_tflops_per_gpu``: HPL passes at this share of it"""
