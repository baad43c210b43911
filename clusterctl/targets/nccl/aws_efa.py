"""AWS EFA profile of the nccl target: nothing but the socket interface (the aws-ofi-nccl plugin needs no
FI_* on current versions), plus the software versions P5 needs. Source: the aws-ofi-nccl EFA cheatsheet
(docs/nccl.md).
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.targets.nccl.settings import ANY_IFNAME, CloudProfile, Setting, nccl_version, version_text


def settings(plan: ClusterPlan, nt: NodeTypePlan) -> list[Setting]:
    out = [Setting((
        "EFA is reached through the AWS OFI NCCL plugin (aws-ofi-nccl, shipped by the EFA installer and the DLAMI).",
        "With libfabric 1.18+ and aws-ofi-nccl 1.7+ no FI_* variable is needed; FI_PROVIDER efa and",
        "NCCL_PROTO simple were for plugin 1.5.0 and older only, FI_EFA_USE_DEVICE_RDMA 1 for 1.6.x. Upgrade rather",
        "than add them. NCCL_BUFFSIZE and NCCL_MIN_NCHANNELS stay at their defaults (aws-ofi-nccl EFA cheatsheet)."))]
    version = nccl_version(plan)
    if (nt.instance_name or "").startswith("p5"):
        ok = version is None or version >= (2, 18, 5)
        out.append(Setting((
            "P5 needs nccl 2.18.5+, aws-ofi-nccl 1.7.3+, efa-installer 1.29+ (cheatsheet)"
            + ("." if ok else f"; WARNING: software.nccl is {version_text(version)}."),)))
    out.append(Setting((
        "Bootstrap and out-of-band TCP on the ENA interface: every interface but loopback and docker bridges",
        "(EFA devices carry no IP traffic)."), "NCCL_SOCKET_IFNAME", ANY_IFNAME))
    out.append(Setting((
        "FI_EFA_USE_HUGE_PAGE is not set. Setting it to 0 (no huge pages) fixes fork() failing with ENOMEM",
        "(multi-process PyTorch data loaders) at a small cost: do that only when it happens.")))
    return out


PROFILE = CloudProfile(settings)
