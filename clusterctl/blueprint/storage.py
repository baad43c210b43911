"""Storage tiers and the workload hints that size them."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, PositiveFloat, PositiveInt

from clusterctl.blueprint.base import StrictModel
from clusterctl.blueprint.training import ModelSpec, TrainingSpec


class _Tier(StrictModel):
    name: str
    mount: str
    """mount point on the nodes"""
    checkpoint: bool = False
    """checkpoints are written here (default: the first parallel tier)"""


class LocalTier(_Tier):
    """Node-local NVMe (scratch, staging, checkpoint cache)."""

    tier: Literal["local"]
    """node-local NVMe; size and bandwidth come from the servers"""


class _SharedTier(_Tier):
    capacity_tb: PositiveFloat
    read_gb_per_s: PositiveFloat
    """aggregate read bandwidth, GB/s (bytes, not bits)"""
    write_gb_per_s: PositiveFloat
    """aggregate write bandwidth, GB/s"""


class NfsTier(_SharedTier):
    """An NFS export (home directories, software)."""

    tier: Literal["nfs"]
    export: str
    """server:/path"""


class ParallelTier(_SharedTier):
    """A parallel file system (Lustre, GPFS, WEKA, VAST, ...): training data and checkpoints."""

    tier: Literal["parallel"]
    filesystem: Literal["lustre", "gpfs", "weka", "vast", "beegfs", "daos"] = "lustre"
    servers: str | None = None
    """MGS/MDS/OSS host list or management endpoint"""


class ObjectTier(_SharedTier):
    """An S3-compatible object store (datasets, checkpoint archive)."""

    tier: Literal["object"]
    endpoint: str


StorageTier = Annotated[Union[LocalTier, NfsTier, ParallelTier, ObjectTier], Field(discriminator="tier")]


class Workload(StrictModel):
    """What the cluster is for, as far as sizing checks need it."""

    params_b: PositiveFloat
    """model parameters, billions"""
    checkpoint_bytes_per_param: PositiveFloat = 14.0
    """bf16 weights (2) + fp32 master weights (4) + Adam moments (8) = 14 bytes"""
    checkpoint_every_min: PositiveFloat = 30.0
    checkpoint_budget_s: PositiveFloat = 60.0
    """time the job may stall writing one checkpoint"""
    checkpoints_retained: PositiveInt = 3
    model: str | ModelSpec | None = None
    """the model's shape: a preset name (``clusterctl report --list-models``) or layers/hidden/heads/...;
    when given, the report estimates step time, tokens/s and MFU from it"""
    training: TrainingSpec | None = None
    """batch and parallel layout for the training estimate"""
