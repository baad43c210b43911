"""Multi-node NVLink domains (NVL72) and their IMEX facts: which groups have them, which get an IMEX domain
configured here, and what Slurm's IMEX switch plugin needs. Read by the NVLINK rules and by the slurm, ansible
and nccl targets alike."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.slurm import SWITCH_NVIDIA_IMEX, Release, slurm_supports

IMEX_SWITCH: Release = SWITCH_NVIDIA_IMEX.first
"""first release of SwitchType=switch/nvidia_imex, for targets/ansible.py's imex_vars only until it asks
:func:`imex_channel0` (the release table, :data:`clusterctl.plan.slurm.FEATURES`, holds the fact)"""
IMEX_CHANNEL_COUNT = 2048
"""SwitchParameters=imex_channel_count: the plugin's default (src/plugins/switch/nvidia_imex: channel_count =
2048, channel 0 reserved) and the driver's default NVreg_ImexChannelCount; the plugin hands out minors below it"""


def multi_node(plan: ClusterPlan) -> list[GroupPlan]:
    """Groups whose NVLink domain spans more than one node (NVL72: 18 trays × 4 GPUs)."""
    return [g for g in plan.groups if g.type.gpus and g.nvlink_domain_gpus and g.nvlink_domain_gpus > g.type.gpus]


def imex_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """Multi-node NVLink groups on machines this project configures (cloud providers run their own IMEX)."""
    return [g for g in multi_node(plan) if g.type.instance is None]


def imex_channel0(plan: ClusterPlan) -> bool:
    """Whether the nvidia_imex role opens IMEX channel 0 to everyone: only where Slurm's switch/nvidia_imex does not
    give each job its own channel (/dev/nvidia-caps-imex-channels/channelN). Without the plugin the channels must
    be created by the administrator (NVIDIA IMEX guide, "IMEX Channels": not created by default, dependent CUDA
    calls fail)."""
    return not slurm_supports(plan, SWITCH_NVIDIA_IMEX)


def has_inband(plan: ClusterPlan, g: GroupPlan) -> bool:
    """Whether an in-band address pool covers the group: the IMEX peer list (nodes_config.cfg) is made of it."""
    return any(p.role == "inband" and any(gi == g.index for gi, _, _ in p.group_offsets) for p in plan.addresses)


def imex_configured(plan: ClusterPlan, g: GroupPlan) -> bool:
    """The nvidia_imex role configures an IMEX domain for every NVLink domain of this group."""
    return (g.type.instance is None and bool(g.type.gpus) and (g.nvlink_domain_gpus or 0) > g.type.gpus
            and has_inband(plan, g))
