"""What the plan means for Slurm: release facts, where controller state lives, slurmd's message fan-out.

Facts both the rules (``clusterctl.rules.slurm``, which judge the blueprint's Slurm before anything is
rendered) and the slurm and ansible targets (which render for one release) need: one place, so a finding and
a rendered file never disagree. The release facts come from the Slurm CHANGELOG and man pages as summarised in
the project's reference notes (slurm-nccl.md section 6) and from SchedMD/slurm ``src/common/read_config.c``.
"""

from __future__ import annotations

import math
import re

from clusterctl.path_policy import under
from clusterctl.plan.model import ClusterPlan

Version = tuple[int, int]
"""a Slurm release as (year, month): 24.05 is (24, 5)"""

_VERSION = re.compile(r"(\d{2})\.(\d{2})(?:\.(\d+))?")
RELEASE_MONTHS = ("02", "05", "08", "11")
"""months of Slurm major releases: 17.02, 17.11, 18.08, 19.05, 20.02, 20.11, 21.08, 22.05, 23.02, 23.11,
24.05, 24.11, 25.05, 25.11 (08 was used by 18.08 and 21.08)"""

BLOCK_PLUGIN: Version = (23, 11)
"""topology/block added 2023-08 (tag slurm-23-11-0-0rc1)"""
BLOCK_SIZES: Version = (24, 5)
"""BlockLevels replaced by BlockSizes in 24.05 (CHANGELOG/slurm-24.05.md)"""
TOPOLOGY_YAML: Version = (25, 5)
"""topology.yaml arrived in 25.05 (CHANGELOG/slurm-25.05.md: "Add ability to configure multiple topology plugins
via the new topology.yaml"; topology.yaml(5): "Slurm will first check for topology.yaml. If this file exists,
topology.conf will be ignored"), not 24.11"""
AUTODETECT_NVIDIA: Version = (24, 11)
"""gres.conf AutoDetect=nvidia (no NVML library needed) arrived in 24.11 (gres.conf(5); reference notes
slurm-nccl.md sec. 6)"""
CLOUD_FANOUT: Version = (23, 11)
"""NEWS 23.11.0rc1 "Enable fanout for dynamic and unaddresable cloud nodes"; before it SchedMD's Cloud Scheduling
Guide (elastic_computing.html of 22.05) says to "configure TreeWidth to a number at least as large as the maximum
node count" because slurmd daemons do not know each other's cloud addresses"""
TREE_WIDTH_MAX = 65533
"""slurm.conf(5) TreeWidth: "The value may not exceed 65533" """


def parse_version(text: str) -> Version | None:
    """``"24.05"`` or ``"24.05.3"`` -> (24, 5); None for anything that is not a Slurm release."""
    m = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if not m or m.group(2) not in RELEASE_MONTHS:
        return None
    return int(m.group(1)), int(m.group(2))


def provides_nvml(install) -> bool:
    """The install source gives slurmd the gpu/nvml plugin (AutoDetect=nvml): repo and debs packages as declared
    (``gpu_nvml``), the distribution only with its separate plugin package installed (``gpu_nvml: true``)."""
    return bool(install.gpu_nvml)


# --- controller state -----------------------------------------------------------------------------------------

SHARED_TIERS = ("nfs", "parallel")
"""storage tiers every host that mounts them reads and writes alike (local is per node, object is no file system)"""


def state_tier(plan: ClusterPlan):
    """(index, tier) of the shared storage tier StateSaveLocation is on (the deepest mount holding it), or None."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return None
    found = [(len(t.mount), i, t) for i, t in enumerate(plan.blueprint.storage)
             if t.tier in SHARED_TIERS and under(slurm.state_save_location, t.mount)]
    return max(found, key=lambda x: x[0])[1:] if found else None


# --- slurmd's message fan-out -----------------------------------------------------------------------------------

def tree_width(nodes: int) -> int:
    """TreeWidth (slurmd message fan-out): "the square root of the number of nodes in the cluster for systems
    having no more than 2500 nodes or the cube root for larger systems" (big_sys.html); at least 2."""
    root = math.isqrt(max(nodes - 1, 0)) + 1 if nodes <= 2500 else math.ceil(round(nodes ** (1 / 3), 9))
    return max(2, min(root, TREE_WIDTH_MAX))


def cloud_tree_width(plan: ClusterPlan, version: Version) -> int | None:
    """TreeWidth before :data:`CLOUD_FANOUT` with elastic nodes: at least the node count (no fan-out through
    slurmd daemons that cannot resolve each other), at most 65533; None from 23.11 (the usual width)."""
    if version >= CLOUD_FANOUT:
        return None
    return min(TREE_WIDTH_MAX, max(plan.nodes, tree_width(plan.nodes)))
