"""Which node groups need GPUDirect-TCPXO's receive-datapath manager (RxDM) per Slurm job.

A3 Mega (``a3-megagpu-8g``, 8 GPU NICs, GPUDirect-TCPXO) runs RxDM on every node of a job, started by a Slurm
prolog and stopped by an epilog (GoogleCloudPlatform/slurm-gcp tools/prologs-epilogs/
receive-data-path-manager-mega). The
``gcp_tcpxo`` role installs both pieces; site.yml applies it to the node groups :func:`needs_rxdm` names.
"""

from __future__ import annotations

from clusterctl.plan.model import GroupPlan

RXDM_INSTANCE_TYPES = ("a3-megagpu-8g",)
"""instance types whose GPUDirect-TCPXO stack needs RxDM per job (A3 High's TCPX is not covered)"""
RXDM_ROLE = "gcp_tcpxo"


def needs_rxdm(group: GroupPlan) -> bool:
    return group.type.instance is not None and group.type.instance_name in RXDM_INSTANCE_TYPES
