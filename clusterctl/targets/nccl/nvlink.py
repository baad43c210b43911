"""NVLink settings of a GPU node type: NVLink SHARP on Hopper+ NVSwitch domains, multi-node NVLink on NVL72
(needs IMEX); on a VM only a note (the VM decides). Sources: docs/nccl.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan, GroupPlan, NodeTypePlan
from clusterctl.plan.nvlink import imex_configured
from clusterctl.catalog.models import accelerator_vendor
from clusterctl.targets.nccl.settings import Setting, nccl_version, version_text

NVLS_GENERATIONS = ("hopper", "blackwell", "rubin")
NVLS_MIN_DOMAIN = 8


def nvlink_settings(plan: ClusterPlan, nt: NodeTypePlan, groups: Sequence[GroupPlan],
                    cloud: bool = False) -> list[Setting]:
    acc = nt.accelerator
    if acc is None or accelerator_vendor(acc) != "NVIDIA":
        return []
    domain = max((g.nvlink_domain_gpus or 0 for g in groups), default=0) or (nt.nvlink_domain_gpus or 0)
    version = nccl_version(plan)
    out: list[Setting] = []
    nvls = acc.generation.lower() in NVLS_GENERATIONS and domain >= NVLS_MIN_DOMAIN
    if cloud:
        out.append(Setting((
            "NCCL_NVLS_ENABLE left at NCCL's default (2): NVLink SHARP is used when the VM exposes it.",)))
    elif not nvls:
        out.append(Setting((
            (f"NCCL_NVLS_ENABLE not set: NVLink SHARP needs Hopper or later GPUs behind NVSwitch "
            f"(an NVLink domain of {NVLS_MIN_DOMAIN} or more GPUs)."),)))
    elif version is not None and version < (2, 17):
        out.append(Setting((f"NCCL_NVLS_ENABLE not set: NCCL {version_text(version)} predates NVLink SHARP (2.17).",)))
    else:
        out.append(Setting((
            f"NVSwitch system, {domain}-GPU NVLink domain, {acc.generation} GPUs: NVLink SHARP offloads reductions",
            "into the NVSwitches. Needs NVIDIA Fabric Manager (NVLSM on NVL72). 1 states the intent; the default 2",
            "differed only in NCCL 2.27-2.28 (silent fallback). A job short of GPU memory can set 0."),
            "NCCL_NVLS_ENABLE", "1"))
    if not cloud and nt.gpus and domain > nt.gpus:
        if version is not None and version < (2, 21):
            out.append(Setting(((f"NCCL_MNNVL_ENABLE not set: NCCL {version_text(version)} predates "
                                 "multi-node NVLink (2.21); upgrade NCCL."),)))
        elif not (mnnvl := [g for g in groups if (g.nvlink_domain_gpus or 0) > nt.gpus]) or not all(
                imex_configured(plan, g) for g in mnnvl):
            out.append(Setting(("NCCL_MNNVL_ENABLE not set: no IMEX domain is configured for these nodes (no in-band "
                                "address pool for nodes_config.cfg, rule NVLINK006); 1 would fail NCCL at init.",)))
        else:
            out.append(Setting((
                (f"Multi-node NVLink domain (NVL{domain}: {domain // nt.gpus} nodes x {nt.gpus} GPUs): NCCL talks "
                "NVLink between the nodes."),
                "Needs a working IMEX domain: the nvidia_imex role runs nvidia-imex on every node of the NVLink domain",
                ("(nodes_config.cfg: its in-band addresses); Slurm's switch/nvidia_imex gives each job a channel; "
                 "cuMem on."),
                "1 makes NCCL fail at init when IMEX is broken instead of silently falling back (default 2)."),
                "NCCL_MNNVL_ENABLE", "1"))
    return out
