"""Azure ND profile of the nccl target: on ND H100/H200 v5 the values the Azure HPC image writes to its own
/etc/nccl.conf (which the rendered file replaces), on every ND VM the IB HCAs without the Accelerated
Networking VF and the primary interface for bootstrap. Sources: Azure/azhpc-images (docs/nccl.md).
"""

from __future__ import annotations

import re

from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.targets.nccl.settings import CloudProfile, Setting

# Azure HPC image (Azure/azhpc-images customizations/ndv5.sh, used for ND H100 v5 and ND H200 v5)
AZURE_NDV5 = re.compile(r"standard_nd96is.*_h[12]00_v5", re.IGNORECASE)
AZURE_NDV5_TOPO = "/opt/microsoft/ndv5/topo.xml"


def settings(plan: ClusterPlan, nt: NodeTypePlan) -> list[Setting]:
    out: list[Setting] = []
    if AZURE_NDV5.fullmatch(nt.instance_name or ""):
        src = "Azure HPC image (azhpc-images customizations/ndv5.sh)"
        out += [
            Setting((
                f"The {src} writes these values to /etc/nccl.conf; this file replaces it,",
                ("so it carries them. Relaxed ordering 'can greatly help' IB in VMs (NCCL docs); "
                 "1 fails if unavailable.")),
                "NCCL_IB_PCI_RELAXED_ORDERING", "1"),
            Setting((
                "The VM's PCI topology is virtual: NCCL needs Azure's file to pair GPUs with their IB HCAs",
                "(a link the image creates to /opt/microsoft/ndv5-topo.xml)."), "NCCL_TOPO_FILE", AZURE_NDV5_TOPO),
            Setting((
                "NCCL uses the GPU's CPU affinity from the topology file instead of the task binding (image value;",
                "NCCL still stays inside the Slurm cgroup's cpuset)."), "NCCL_IGNORE_CPU_AFFINITY", "1"),
        ]
    else:
        out.append(Setting((f"No Azure topology file known for {nt.instance_name}: NCCL_TOPO_FILE not set.",)))
    out += [
        Setting((
            "Keep NCCL off the Accelerated Networking VF (mlx5_an0, Ethernet) and on the mlx5_ib* HCAs. An exclude",
            "list, so a different naming only loses the exclusion (azurehpc-health-checks names the VF mlx5_an0)."),
            "NCCL_IB_HCA", "^=mlx5_an0"),
        Setting(("Bootstrap and out-of-band TCP on the VM's primary interface eth0 (exact match).",),
                "NCCL_SOCKET_IFNAME", "=eth0"),
        Setting((
            "The blueprint does not describe Azure's IB fabric (tiers, rails): NCCL_CROSS_NIC,",
            "NCCL_IB_QPS_PER_CONNECTION and NCCL_IB_TIMEOUT stay at NCCL's defaults.")),
    ]
    return out


PROFILE = CloudProfile(settings)
