"""The ``kubernetes:`` section: which Kubernetes objects ``render --target kubernetes`` writes from the plan.

The plan already holds every fact a topology-aware scheduler on Kubernetes needs (which nodes share a leaf, a
spine, an NVLink domain; which NICs are which rail). This section only chooses what to emit for: the
schedulers, Slinky, the NVIDIA operators and their releases, and the namespace and queue names
(docs/kubernetes.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from clusterctl.kinds import DnsLabel, Version
from clusterctl.strict import StrictModel, listed_once

Scheduler = Literal["volcano", "kueue", "kai"]
"""a topology-aware gang scheduler on Kubernetes: Volcano (HyperNodes), Kueue (Topology Aware Scheduling),
NVIDIA KAI Scheduler (Topology)"""


class KubernetesSpec(StrictModel):
    """Kubernetes objects rendered from the same plan as Slurm's topology (docs/kubernetes.md)."""

    schedulers: list[Scheduler] = Field(default_factory=list, max_length=3)
    """the topology-aware schedulers to write objects for: volcano (HyperNodes, scheduler ConfigMap, Queue),
    kueue (Topology, ResourceFlavors, ClusterQueue, LocalQueue), kai (Topology); each at most once"""
    slinky: bool = False
    """write the Slinky slurm-operator's NodeSets, LoginSet and Helm values (needs a ``slurm:`` section)"""
    gpu_operator: Version | None = None
    """NVIDIA GPU Operator release the ClusterPolicy is written for (e.g. "25.3.4"); none: no ClusterPolicy"""
    network_operator: Version | None = None
    """NVIDIA Network Operator release the NicClusterPolicy and nv-ipam IPPools are written for (e.g. "25.7.0");
    none: not written"""
    rdma: Literal["shared", "sriov"] = "shared"
    """how pods get the RDMA NICs: shared (the RDMA shared device plugin) or sriov (the SR-IOV device plugin and
    a SriovNetworkNodePolicy per rail)"""
    dra_driver: Version | None = None
    """NVIDIA DRA driver for GPUs release the ComputeDomains (IMEX over multi-node NVLink) are written for
    (e.g. "25.8.0"); none: no ComputeDomain"""
    compute_domain_nodes: int | None = Field(default=None, ge=1, le=1024)
    """nodes one ComputeDomain requests (default: every tray of its NVLink domain); at most the trays of one
    NVLink domain (rule K8S003)"""
    namespace: DnsLabel = "training"
    """namespace of the namespaced objects (Kueue's LocalQueue, ComputeDomains, Slinky's NodeSets)"""
    queue: DnsLabel = "training"
    """name of Kueue's ClusterQueue and LocalQueue and of Volcano's Queue"""

    @field_validator("schedulers")
    @classmethod
    def _unique_schedulers(cls, value: list[str]) -> list[str]:
        listed_once(value)
        return value
