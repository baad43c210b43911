"""WEKA clients: a checkpoint tier whose clients run in UDP mode, and DPDK clients without a NIC to drive.

The client each node group runs is :func:`clusterctl.plan.weka.weka_client`'s, the one the ansible target mounts
with and the slurm target reserves cores for.
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.perf.storage_io import checkpoint_bytes, checkpoint_tier
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.weka import WEKA_NIC_HINT, weka_client, weka_tier
from clusterctl.rules.base import Hit, Severity, rule


@rule("WEKA001", "weka", Severity.WARNING, "WEKA checkpoint tier in UDP mode")
def udp_checkpoints(plan: ClusterPlan) -> Iterator[Hit]:
    """A tier's ``write_gb_per_s`` is what the file system delivers to performance-optimized clients: WEKA's
    networking guide names DPDK with dedicated cores as that mode, and UDP (in-kernel, no dedicated cores) as the
    CPU-optimized one for hosts where DPDK cannot run. With the compute nodes' clients in UDP mode the checkpoint
    budget STORAGE001 checks against that figure is not what the nodes get, so a blueprint that writes its
    checkpoints to a WEKA tier within a budget is warned."""
    found, tier = weka_tier(plan), checkpoint_tier(plan)
    w = plan.blueprint.workload
    if found is None or tier is None or tier[0] != found[0] or w is None:
        return
    spec = found[1].weka
    if spec is None or spec.mode != "udp" or not any(g.role == "compute" for g in plan.groups):
        return
    size = checkpoint_bytes(w.params_b * 1e9, w.checkpoint_bytes_per_param)
    yield Hit(("storage", found[0], "weka", "mode"),
              f"the compute nodes' WEKA clients run in UDP mode, but the {size / 1e12:.2f} TB checkpoint must reach "
              f"tier {found[1].name} at {size / 1e9 / w.checkpoint_budget_s:.1f} GB/s within "
              f"{w.checkpoint_budget_s:g} s, a figure WEKA quotes for DPDK clients",
              "drop weka.mode (DPDK with dedicated cores, the default) or raise workload.checkpoint_budget_s")


@rule("WEKA002", "weka", Severity.ERROR, "WEKA DPDK client without a NIC", suppressible=False)
def dpdk_nic(plan: ClusterPlan) -> Iterator[Hit]:
    """A DPDK client drives NICs by name (``net=<netdev>`` once per NIC): the node type's storage ports, else its
    compute rails, each with a netdev name from the blueprint or the catalog. Without one the mount cannot be
    written; the ansible target refuses it, and this reports it first, once per node group."""
    found = weka_tier(plan)
    if found is None:
        return
    for g in plan.groups:
        client = weka_client(plan, g)
        if client is not None and client.problem:
            yield Hit(("storage", found[0], "weka"), f"node group {g.name}: {client.problem}", WEKA_NIC_HINT)
