"""What a published row is: its role (calibration or validation), its family and band, the training run or
collective it records, and the model's result for it (package docstring: clusterctl/perf/published/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from clusterctl.perf.interconnect import Interconnect, collective, placement
from clusterctl.perf.job import Accelerator, ModelShape, Parallelism
from clusterctl.perf.training import TrainingEstimate, estimate

CALIBRATION = "calibration"
VALIDATION = "validation"
ROLES = (CALIBRATION, VALIDATION)


@dataclass(frozen=True)
class Family:
    """Rows of one kind, judged with one band."""

    name: str
    band: float
    """allowed |model / published - 1|"""
    band_reason: str
    """how the band was set: the observed spread of the family and the margin added to it"""
    description: str = ""
    margin: float | None = None
    """the stated margin added to the observed spread (max |error| over the family's rows); the band may not
    be looser than spread + margin (tests/perf/test_published.py)"""


@dataclass(frozen=True)
class TrainingRow:
    """A published training run: the estimate is compared on model TFLOP/s per GPU (Megatron-LM count) unless
    ``metric`` says ``hardware_tflops`` (Narayanan et al. 2021 count recomputation)."""

    id: str
    family: str
    role: str
    source: str
    model: ModelShape
    gpus: int
    par: Parallelism
    accelerator: Accelerator
    interconnect: Interconnect
    step_s: float | None = None
    """measured seconds per step"""
    tokens_per_s_per_gpu: float | None = None
    tflops: float | None = None
    """the source's own TFLOP/s per GPU (only where it publishes no usable throughput)"""
    metric: str = "model_tflops"
    explanation: str = ""
    """why the row is outside 15 %, when it is"""
    memory_gb: float | None = None
    """published peak memory per GPU, when the source gives it"""

    def published(self) -> float:
        if self.tflops is not None:
            return self.tflops
        if self.step_s is not None:
            tokens_per_gpu = self.par.global_batch * self.model.seq_len / self.step_s / self.gpus
        else:
            tokens_per_gpu = self.tokens_per_s_per_gpu
        return tokens_per_gpu * self.model.flops_per_token / 1e12

    def run(self) -> TrainingEstimate:
        return estimate(self.model, self.par, self.gpus, self.accelerator, self.interconnect)

    def predicted(self) -> float:
        e = self.run()
        return e.hardware_tflops_per_gpu if self.metric == "hardware_tflops" else e.model_tflops_per_gpu

    @property
    def unit(self) -> str:
        return "TFLOP/s per GPU" + (" (incl. recomputation)" if self.metric == "hardware_tflops" else "")


def _modelled(row: "CollectiveRow | CollectiveTimeRow"):
    """The model's run of a published nccl-tests row: its collective on its ranks, placed with its stride."""
    return collective(row.op, row.size_bytes, row.interconnect, placement(row.ranks, row.interconnect, row.stride),
                      row.algorithm)[0]


@dataclass(frozen=True)
class CollectiveRow:
    """A published nccl-tests figure: bus bandwidth of ``op`` on ``ranks`` GPUs at ``size_bytes``."""

    id: str
    family: str
    role: str
    source: str
    op: str
    size_bytes: int
    ranks: int
    interconnect: Interconnect
    busbw_gb_per_s: float
    stride: int = 1
    explanation: str = ""
    algorithm: str | None = None
    """the algorithm the run forced (NCCL_ALGO) or is known to have used; None: the one the model picks"""

    def published(self) -> float:
        return self.busbw_gb_per_s

    def predicted(self) -> float:
        return _modelled(self).busbw_gb_per_s

    unit = "GB/s busbw"


@dataclass(frozen=True)
class CollectiveTimeRow:
    """A published nccl-tests time (µs) of ``op`` on ``ranks`` GPUs at ``size_bytes``: small messages, where the
    time is latency, not bandwidth."""

    id: str
    family: str
    role: str
    source: str
    op: str
    size_bytes: int
    ranks: int
    interconnect: Interconnect
    time_us: float
    algorithm: str | None = None
    """the algorithm the run forced (NCCL_ALGO); None: the one the model picks"""
    explanation: str = ""
    stride: int = 1

    def published(self) -> float:
        return self.time_us

    def predicted(self) -> float:
        return _modelled(self).time_s * 1e6

    unit = "µs"


@dataclass(frozen=True)
class ScalingRow:
    """Strong scaling: one model, layout and global batch on two GPU counts. The figure is the larger run's
    per-GPU throughput over the smaller run's (each the source's own figure of its ``TrainingRow``), so the
    model's absolute level cancels and what is judged is what it loses per GPU as the GPUs grow: the pipeline
    bubble at fewer microbatches, exposed data-parallel and pipeline communication, stragglers."""

    id: str
    family: str
    role: str
    source: str
    small: TrainingRow
    large: TrainingRow
    explanation: str = ""

    def published(self) -> float:
        return self.large.published() / self.small.published()

    def predicted(self) -> float:
        return self.large.predicted() / self.small.predicted()

    @property
    def unit(self) -> str:
        return f"× the per-GPU throughput on {self.small.gpus:,} GPUs"


Row = Union[TrainingRow, CollectiveRow, CollectiveTimeRow, ScalingRow]


@dataclass(frozen=True)
class Result:
    row: Row
    predicted: float
    published: float
    notes: tuple[str, ...] = field(default=())

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1


def evaluate(row: Row) -> Result:
    return Result(row, row.predicted(), row.published())


__all__ = ["CALIBRATION", "ROLES", "VALIDATION", "CollectiveRow", "CollectiveTimeRow", "Family", "Result", "Row",
           "ScalingRow", "TrainingRow", "evaluate"]
