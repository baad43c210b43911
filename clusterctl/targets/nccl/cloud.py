"""Cloud instance types: the NCCL settings come from the provider profile registered for the instance type's
accelerator network (:data:`PROFILES`, keyed by ``(provider, network.fabric)``); a network without a profile
gets TCP sockets. Each profile is its own module: :mod:`~clusterctl.targets.nccl.aws_efa`,
:mod:`~clusterctl.targets.nccl.azure_nd`, :mod:`~clusterctl.targets.nccl.gcp_gpudirect`.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan, GroupPlan, NodeTypePlan
from clusterctl.targets.nccl.aws_efa import PROFILE as AWS_EFA
from clusterctl.targets.nccl.azure_nd import PROFILE as AZURE_ND
from clusterctl.targets.nccl.gcp_gpudirect import NAMES as GCP_GPUDIRECT_NETWORKS
from clusterctl.targets.nccl.gcp_gpudirect import PROFILE as GCP_GPUDIRECT
from clusterctl.targets.nccl.nvlink import nvlink_settings
from clusterctl.targets.nccl.settings import ANY_IFNAME, CloudProfile, Setting, ShellStep

PROFILES: dict[tuple[str, str], CloudProfile] = {
    ("aws", "efa"): AWS_EFA,
    ("azure", "infiniband"): AZURE_ND,
    **{("gcp", network): GCP_GPUDIRECT for network in GCP_GPUDIRECT_NETWORKS},
}
"""(provider, instance network fabric) -> the provider's NCCL profile for it"""


def profile(nt: NodeTypePlan) -> CloudProfile | None:
    """The profile of a cloud node type's accelerator network; None on bare metal or without a profile."""
    inst = nt.instance
    return PROFILES.get((inst.provider, inst.network.fabric)) if inst is not None else None


def cloud_settings(plan: ClusterPlan, nt: NodeTypePlan,
          groups: Sequence[GroupPlan]) -> tuple[list[Setting], list[ShellStep], str]:
    """(nccl.conf settings, env.sh steps, the preamble line naming the network) of a cloud node type."""
    inst = nt.instance
    assert inst is not None
    fabric, provider = inst.network.fabric, inst.provider
    line = (f"Accelerator network: {provider} {fabric} ({inst.network.gpu_nics} interfaces, "
            f"{inst.network.total_gbps:g} Gb/s) of instance type {nt.instance_name}.")
    prof = profile(nt)
    if prof is None:
        return [Setting((f"No NCCL profile known for {provider} {fabric}: inter-node traffic uses TCP sockets.",),
                        "NCCL_IB_DISABLE", "1"),
                Setting(("Bootstrap and socket traffic: any interface but loopback and docker bridges.",),
                        "NCCL_SOCKET_IFNAME", ANY_IFNAME)] + nvlink_settings(plan, nt, groups, cloud=True), [], line
    settings = prof.settings(plan, nt)
    if prof.nvlink:
        settings += nvlink_settings(plan, nt, groups, cloud=True)
    return settings, prof.steps(nt) if prof.steps is not None else [], line
