"""NVLink fabrics: which NVLink software each node group runs (Fabric Manager, NVLSM, IMEX: :func:`nvlink_stack`),
the multi-node NVLink domains (NVL72) and their IMEX facts: which groups have them, which get an IMEX domain
configured here, and what Slurm's IMEX switch plugin needs. Read by the NVLINK rules and by the slurm, ansible,
nccl and nvlink targets alike."""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.catalog.models import accelerator_vendor
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
    return nvlink_stack(g).imex and has_inband(plan, g)


NVLSM_GENERATIONS = ("blackwell",)
"""GPU generations whose 8-GPU baseboards carry fourth-generation NVSwitches, managed through a CX7 bridge by the
NVLink Subnet Manager next to Fabric Manager (NVIDIA Fabric Manager user guide, "Systems Using Fourth Generation
NVSwitches": DGX/HGX B200/B300 and HGX B100). Rubin baseboards are not in that guide: not assumed."""
FABRIC_REGISTRATION_GENERATIONS = ("hopper", "blackwell")
"""GPU generations that register with the NVLink fabric and report it in ``nvidia-smi -q`` ("Fabric": State,
Status): NVIDIA Fabric Manager user guide, "Initializing NVSwitch and NVLink" (DGX/HGX H100 and later systems)"""


@dataclass(frozen=True)
class NvlinkStack:
    """The NVLink software one node group runs, decided once here; the roles' group_vars ask it."""

    fabric_manager: bool
    """nvidia-fabricmanager on the node: NVSwitch baseboards (HGX/DGX 8-GPU), where the node's GPUs are its whole
    NVLink domain. Not on NVL72 trays: there Fabric Manager and NVLSM run in NVOS on the NVLink switch trays (NMX)"""
    nvlsm: bool
    """the NVLink Subnet Manager (package nvlsm) with Fabric Manager: fourth-generation NVSwitch baseboards"""
    imex: bool
    """nvidia-imex: the NVLink domain spans nodes (GB200/GB300 NVL72 trays)"""
    fabric_state: bool
    """each GPU reports its NVLink fabric registration (nvidia-smi -q "Fabric": State Completed, Status Success)"""
    clique: bool
    """each GPU also reports its clique and cluster (CliqueId, ClusterUUID) of a multi-node NVLink partition"""


NO_NVLINK = NvlinkStack(False, False, False, False, False)


def nvlink_stack(g: GroupPlan) -> NvlinkStack:
    """Fabric Manager, NVLSM and IMEX for a node group's node type: Hopper HGX runs Fabric Manager; Blackwell HGX
    (B200/B300) Fabric Manager with NVLSM; GB200/GB300 NVL72 trays IMEX and no Fabric Manager. An 8-GPU cloud VM
    (full passthrough: the guest runs Fabric Manager, FM user guide "Full Passthrough Virtualization Model") keeps
    Fabric Manager as before; its fabric state is not checked (what the provider's VM reports was not verified)."""
    t = g.type
    if not t.gpus:
        return NO_NVLINK
    domain = g.nvlink_domain_gpus or 0
    multi = domain > t.gpus
    fm = domain == t.gpus and t.gpus >= 8
    nvidia = t.accelerator is not None and accelerator_vendor(t.accelerator) == "NVIDIA"
    if not nvidia or t.instance is not None:
        return NvlinkStack(fm, False, False, False, False)
    generation = t.accelerator.generation.lower()
    registers = generation in FABRIC_REGISTRATION_GENERATIONS and (fm or multi)
    return NvlinkStack(fabric_manager=fm, nvlsm=fm and generation in NVLSM_GENERATIONS, imex=multi,
                       fabric_state=registers, clique=registers and multi)


def nvlink_domains(plan: ClusterPlan) -> list[tuple[str, GroupPlan, list[str]]]:
    """Multi-node NVLink domains (GB200/GB300 NVL72: 18 trays of 4 GPUs): (inventory group, node group, hosts).
    Consecutive hosts of the group fill one domain after another, as the plan places them rack by rack."""
    out = []
    for g in plan.groups:
        per = (g.nvlink_domain_gpus or 0) // g.type.gpus if g.type.gpus else 0
        if per > 1:
            for n, start in enumerate(range(0, g.count, per), 1):
                out.append((f"nvlink_{g.name}_{n}", g, list(g.hosts[start:start + per])))
    return out
