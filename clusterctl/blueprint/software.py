"""Scheduler intent, software versions, the optional cloud target and validation settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from clusterctl.blueprint.base import StrictModel


class Partition(StrictModel):
    """A Slurm partition made of whole node groups."""

    name: str
    groups: list[str] = Field(min_length=1)
    default: bool = False
    max_time: str = "UNLIMITED"
    """Slurm time limit (minutes, HH:MM:SS, D-HH:MM:SS or UNLIMITED)"""


class Slurm(StrictModel):
    """Slurm intent; slurm.conf, gres.conf and topology.conf are rendered from it and the plan."""

    version: str
    """Slurm release, e.g. "24.05" (quote it: YAML reads 24.10 as the number 24.1)"""
    cluster_name: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    """Slurm ClusterName (at most 40 characters: slurm.conf(5)); default: the blueprint name"""
    controllers: str
    """host list of slurmctld hosts: first primary, the rest backups"""
    accounting_host: str | None = None
    """slurmdbd host; default: the first controller"""
    partitions: list[Partition] = Field(min_length=1)
    topology: Literal["tree", "block", "yaml", "none"] = "tree"
    block_sizes: list[PositiveInt] = Field(default_factory=list)
    """topology/block BlockSizes (Slurm >= 24.05): base block size in nodes, then power-of-two multiples"""
    gres_autodetect: Literal["nvml", "nvidia", "rsmi", "off"] = "nvml"
    """gres.conf AutoDetect: nvml (NVIDIA, Slurm built with NVML), nvidia (24.11+, no NVML needed), rsmi (AMD)"""
    memory_reserve_gb: PositiveFloat | None = None
    """memory kept back from RealMemory for the OS and daemons; default 3 % of the node, at least 16 GB"""


class Software(StrictModel):
    """Versions installed on the nodes."""

    os: str = "ubuntu-22.04"
    driver: str
    """NVIDIA driver branch or full version ("550" or "550.90.07")"""
    cuda: str
    nccl: str | None = None
    doca: str | None = None
    containers: Literal["enroot", "apptainer", "none"] = "enroot"


class Cloud(StrictModel):
    """Cloud target for node types given as instance types."""

    provider: Literal["aws", "gcp", "azure"]
    region: str
    zone: str | None = None
    placement_group: bool = True
    """cluster placement group / compact placement policy / proximity placement group"""
    reservation: str | None = None
    """capacity reservation, Capacity Block or GCP reservation name"""
    admin_cidr: str = "0.0.0.0/32"
    """where SSH to the head node may come from"""
    hourly_budget_usd: PositiveFloat | None = None


class Suppression(StrictModel):
    """A rule that does not apply to this blueprint, and why."""

    rule: str
    reason: str = Field(min_length=1)
    """why the finding does not apply here: shown in reports, required"""


class Validation(StrictModel):
    """Validation settings kept with the blueprint."""

    suppress: list[Suppression] = Field(default_factory=list)
