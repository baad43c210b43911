"""Storage tiers and the workload hints that size them."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Discriminator, Field, Tag, ValidationInfo, field_validator

from clusterctl.blueprint.training import ModelSpec, TrainingSpec
from clusterctl.kinds import (LUSTRE_SOURCE, AptRepoUrl, Endpoint, Identifier, LocalDirectory, MountSource,
                              NfsExport, SharedMountPoint)
from clusterctl.strict import StrictModel


class _Tier(StrictModel):
    name: Identifier
    mount: SharedMountPoint
    """mount point on the nodes (docs/security.md, "Privilege-bearing paths": not /, not in a system or
    world-writable directory, not under another tier's mount)"""
    checkpoint: bool = False
    """checkpoints are written here (default: the first parallel tier)"""


class LocalTier(_Tier):
    """Node-local NVMe (scratch, staging, checkpoint cache)."""

    mount: LocalDirectory
    """the directory on the nodes' NVMe (created when missing, mode 1777; not /home itself)"""
    tier: Literal["local"]
    """node-local NVMe; size and bandwidth come from the servers"""
    min_free_percent: int = Field(default=10, ge=0, le=90)
    """the node health check drains a compute node whose scratch file system has less free space (percent of its
    size; 0: not checked). Default 10: clusterctl's choice, room for one more container image import or
    checkpoint copy on a multi-TB scratch before writes fail with ENOSPC (docs/ansible.md, "Node-local scratch")"""


class _SharedTier(_Tier):
    capacity_tb: float = Field(gt=0, le=10_000_000)  # 10 EB: above any file system deployed
    read_gb_per_s: float = Field(gt=0, le=10_000_000)  # 10 PB/s: far above any file system deployed
    """aggregate read bandwidth, GB/s (bytes, not bits)"""
    write_gb_per_s: float = Field(gt=0, le=10_000_000)  # as read_gb_per_s
    """aggregate write bandwidth, GB/s"""
    building_blocks: int | None = Field(default=None, ge=1, le=100_000)  # 100,000 servers: above any deployment
    """the units the tier is built of, each carrying an equal share of its bandwidth: Lustre OSS failover pairs,
    GPFS NSD server pairs, WEKA backends, VAST CNodes, DDN or NetApp appliances. ``clusterctl whatif`` fails them
    as ``<name>-bb<k>`` (docs/whatif.md); absent: the tier is one element there"""
    blocks_tolerated: int = Field(default=1, ge=0, le=64)  # erasure codes protect against a handful
    """building blocks that may be down at once while the file system still serves every file, at the others'
    bandwidth (failover partners, erasure coding across blocks: WEKA N+2 tolerates 2); more stops its I/O. 0: a
    block's loss makes its share of the files unreachable (Lustre OSTs without failover)"""

    @field_validator("blocks_tolerated")
    @classmethod
    def _fewer_than_blocks(cls, value: int, info: ValidationInfo) -> int:
        blocks = info.data.get("building_blocks")
        if blocks is not None and value >= blocks:
            raise ValueError(f"blocks_tolerated {value} must be below building_blocks {blocks}: a file system "
                             "serves from at least one block")
        return value


class NfsTier(_SharedTier):
    """An NFS export (home directories, software)."""

    tier: Literal["nfs"]
    export: NfsExport
    """server:/path"""


class WekaClient(StrictModel):
    """How the compute nodes' WEKA client runs (docs/slurm.md, "WEKA clients in DPDK mode"): DPDK, the
    performance-optimized mode with dedicated frontend cores (the default), or UDP through the kernel."""

    mode: Literal["dpdk", "udp"] = "dpdk"
    """dpdk: ``num_cores`` dedicated cores, ``net=`` per NIC, hugepage memory; udp: ``net=udp,num_cores=0``"""
    cores: int | None = Field(default=None, ge=1, le=32)
    """frontend cores (mount option ``num_cores``), reserved from Slurm with CoreSpecCount; planned: one per NIC"""
    nics: Literal["storage", "compute"] | None = None
    """which ports the client drives (``net=``); planned: the node type's storage ports, else its compute rails"""
    memory_mib: int | None = Field(default=None, ge=1, le=1_048_576)
    """client hugepage memory (mount option ``memory_mb``), kept from jobs with MemSpecLimit; planned: 1,400 MiB per
    frontend core"""


class ParallelTier(_SharedTier):
    """A parallel file system (Lustre, GPFS, WEKA, VAST, ...): training data and checkpoints."""

    tier: Literal["parallel"]
    filesystem: Literal["lustre", "gpfs", "weka", "vast", "beegfs", "daos"] = "lustre"
    servers: MountSource | None = None
    """MGS/MDS/OSS host list or management endpoint; Lustre: the MGS's LNet NIDs and file system name,
    ``10.0.0.1@o2ib:/lustre`` (mount.lustre(8)), a host list naming failover MGSs (``10.0.0.[1-2]@o2ib`` mounts
    ``10.0.0.1@o2ib:10.0.0.2@o2ib``); WEKA: backends (a host list or a comma list, optionally ``/filesystem``:
    ``weka[01-16]/pfs`` mounts ``weka01,...,weka16/pfs``); VAST: one server (NFS), ``vip[:/path]``"""
    client_repo: AptRepoUrl | None = None
    """Lustre: the apt repository of the client packages (flat, ``Suites: /``), e.g. Whamcloud's
    ``https://downloads.whamcloud.com/public/lustre/lustre-2.15.6/ubuntu2204/client``"""
    client_repo_key: AptRepoUrl | None = Field(default=None, validate_default=True)
    """Lustre: the ASCII-armoured key the client repository is signed with (required with client_repo)"""
    weka: WekaClient | None = None
    """WEKA: the compute nodes' client mode, cores, NICs and memory (default: DPDK, planned from the node type)"""

    @field_validator("servers")
    @classmethod
    def _lustre_nid(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A Lustre source names the MGS by its LNet NID (address@network): a bare host name cannot say
        whether the client reaches it over o2ib or tcp."""
        if value is not None and info.data.get("filesystem") == "lustre":
            LUSTRE_SOURCE._validate(value)
        return value

    @field_validator("weka")
    @classmethod
    def _weka_only(cls, value: WekaClient | None, info: ValidationInfo) -> WekaClient | None:
        if value is not None and info.data.get("filesystem") != "weka":
            raise ValueError("weka: configures a WEKA client; this tier's filesystem is "
                             f"{info.data.get('filesystem')}")
        return value

    @field_validator("client_repo_key")
    @classmethod
    def _repo_signed(cls, value: str | None, info: ValidationInfo) -> str | None:
        if (value is None) != (info.data.get("client_repo") is None):
            raise ValueError("client_repo and client_repo_key go together: apt installs only from a signed "
                             "repository (give the URL of the key the repository is signed with)")
        return value


class ObjectTier(_SharedTier):
    """An S3-compatible object store (datasets, checkpoint archive)."""

    tier: Literal["object"]
    endpoint: Endpoint


def _model_form(value: object) -> str:
    """``workload.model`` is a preset name (text) or the model's shape (a mapping): decided by the YAML
    type, so an error speaks about the one form the user wrote."""
    return "shape" if isinstance(value, dict) else "preset"


ModelChoice = Annotated[Union[Annotated[Identifier, Tag("preset")], Annotated[ModelSpec, Tag("shape")]],
                        Discriminator(_model_form)]

StorageTier = Annotated[Union[LocalTier, NfsTier, ParallelTier, ObjectTier], Field(discriminator="tier")]


class Workload(StrictModel):
    """What the cluster is for, as far as sizing checks need it."""

    params_b: float = Field(gt=0, le=1_000_000)  # a quadrillion parameters
    """model parameters, billions"""
    checkpoint_bytes_per_param: float = Field(default=14.0, gt=0, le=1024)  # 14 is Adam in mixed precision
    """bf16 weights (2) + fp32 master weights (4) + Adam moments (8) = 14 bytes"""
    checkpoint_every_min: float = Field(default=30.0, gt=0, le=525_600)  # a year
    checkpoint_budget_s: float = Field(default=60.0, gt=0, le=31_536_000)  # a year
    """time the job may stall writing one checkpoint"""
    checkpoints_retained: int = Field(default=3, gt=0, le=100_000)
    tokens_t: float | None = Field(default=None, gt=0, le=1_000_000)  # a quintillion tokens
    """the training run's token budget, trillions of tokens (Llama 3 405B: 15.6); ``clusterctl compare`` shows the
    time to train it; absent: no time to train"""
    model: ModelChoice | None = None
    """the model's shape: a preset name (``clusterctl report --list-models``) or layers/hidden/heads/...;
    when given, the report estimates step time, tokens/s and MFU from it"""
    training: TrainingSpec | None = None
    """batch and parallel layout for the training estimate"""
