"""Node-local scratch: where the node-local tier lives and what uses it, decided once.

The blueprint's ``local`` storage tier names a directory (lab: ``/raid``); the catalog names the data NVMe drives
of each server (``nvme: {count, size_tb}``). A compute node of a server with data NVMe gets them assembled into
one XFS file system mounted at the tier's mount (md RAID0 over two or more drives, the one drive alone
otherwise: roles/local_scratch), and what belongs on node-local flash is put on it: job_container/tmpfs's
``BasePath`` (every job's private /tmp and /dev/shm) and enroot's data and cache (``ENROOT_DATA_PATH``,
``ENROOT_CACHE_PATH``: enroot's configuration reference, doc/configuration.md). The Slurm and enroot targets ask
this module for the paths and the Ansible target for the devices; the node health check drains a node whose
scratch has less free space than the tier's ``min_free_percent``.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan, GroupPlan

JOB_TMP_DEFAULT = "/var/spool/slurmd/job_tmp"
"""job_container BasePath without a node-local tier: under SlurmdSpoolDir, on the node's own disk"""

REFUSED_PREFIXES = ("/tmp", "/dev/shm")
"""job_container/tmpfs refuses a BasePath under these at slurmd start (22.05's plugin: "Cannot use /tmp or
/dev/shm as BasePath", fatal); a local tier there is not the scratch"""

SIZE_TOLERANCE = 0.02
"""how far a drive's size may be from the catalog's ``size_tb`` (decimal TB) and still be a data drive: a drive
sold as 3.84 TB has 7,501,476,528 sectors of 512 bytes = 3,840,755,982,336 bytes (IDEMA LBA1-03 capacity formula:
97,696,368 + 1,953,504 x (GB - 50) sectors), 0.02 % above; 2 % keeps other vendors' rounding and refuses the
next size class (3.2 or 7.68 TB)"""


@dataclass(frozen=True)
class Scratch:
    """The node-local tier and the directories on it."""

    tier: str
    """the tier's name"""
    mount: str
    """its mount point on the compute nodes"""
    min_free_percent: int
    """the node health check drains a node whose scratch has less free space"""

    @property
    def job_tmp(self) -> str:
        """job_container/tmpfs BasePath (every job's private /tmp and /dev/shm)"""
        return f"{self.mount}/slurm-job-tmp"

    @property
    def enroot_data(self) -> str:
        """the parent of enroot's per-user ENROOT_DATA_PATH (unpacked container root file systems)"""
        return f"{self.mount}/enroot/data"

    @property
    def enroot_cache(self) -> str:
        """the parent of enroot's per-group ENROOT_CACHE_PATH (downloaded image layers)"""
        return f"{self.mount}/enroot/cache"


@dataclass(frozen=True)
class ScratchDevices:
    """The data NVMe drives of one node type, from the catalog."""

    count: int
    size_bytes: int
    """the catalog's size of one drive, in bytes (decimal TB)"""

    @property
    def raid0(self) -> bool:
        """md RAID0 over the drives (two or more), else the one drive carries the file system"""
        return self.count >= 2


def scratch(plan: ClusterPlan) -> Scratch | None:
    """The first ``local`` tier whose mount job_container accepts, or None."""
    for t in plan.storage:
        mount = t.mount.rstrip("/")
        if t.tier == "local" and not mount.startswith(REFUSED_PREFIXES):
            return Scratch(t.name, mount, t.min_free_percent)
    return None


def job_tmp_base(plan: ClusterPlan) -> str:
    """BasePath of job_container/tmpfs: on the scratch (node-local NVMe, where a job's /tmp belongs), else
    :data:`JOB_TMP_DEFAULT`. Never /tmp or /dev/shm (the plugin refuses them)."""
    s = scratch(plan)
    return s.job_tmp if s is not None else JOB_TMP_DEFAULT


def scratch_devices(plan: ClusterPlan, group: GroupPlan) -> ScratchDevices | None:
    """The data drives ``group``'s nodes assemble at the scratch mount: compute nodes of a server whose catalog
    entry has NVMe, when the blueprint has a scratch tier; None otherwise (a cloud instance's instance store, or
    no drive: the tier stays a directory, rule STORAGE006)."""
    server = group.type.server
    if scratch(plan) is None or group.role != "compute" or server is None or server.nvme is None:
        return None
    if server.nvme.count == 0 or server.nvme.size_tb == 0:
        return None
    return ScratchDevices(server.nvme.count, round(server.nvme.size_tb * 10**12))
