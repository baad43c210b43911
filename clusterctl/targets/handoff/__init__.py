"""handoff target: the plan in the formats a provisioner and NVIDIA's bring-up tools read (docs/handoff.md).

- ``handoff/warewulf/nodes.conf``: Warewulf v4.6's node registry (:mod:`.warewulf`);
- ``handoff/nvidia/siteinfo.yaml``: the site facts of NVIDIA Mission Control's network generator (:mod:`.nvidia`);
- ``handoff/nvidia/p2p/<fabric>.csv``: every cable of a fabric as the UFM Cable Validation Tool's P2P sheet
  (:mod:`.nvidia`); written for blueprints up to :data:`P2P_CABLE_LIMIT` cables, and for any on request
  (``clusterctl render --cabling``).
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.handoff.nvidia import p2p_files, siteinfo
from clusterctl.targets.handoff.warewulf import nodes_conf

P2P_CABLE_LIMIT = 20_000
"""cables above which the P2P sheets are written only on request: unfolding a 100,000-GPU plan's 307,908 cables
alone takes 0.8 s and the sheets would be about 17 MB, on every render (docs/handoff.md, "Size")"""


def cable_count(plan: ClusterPlan) -> int:
    """The plan's cables without unfolding them: every link bundle counts its links (plan/cables.py lists the
    same number, port by port)."""
    return sum(link.count for fp in plan.fabrics for link in fp.links)


def render(plan: ClusterPlan, cabling: bool = False) -> dict[str, str]:
    files = {"handoff/warewulf/nodes.conf": nodes_conf(plan), "handoff/nvidia/siteinfo.yaml": siteinfo(plan)}
    if cabling or cable_count(plan) <= P2P_CABLE_LIMIT:
        files.update(p2p_files(plan))
    return files
