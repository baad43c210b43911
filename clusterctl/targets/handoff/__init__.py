"""handoff target: the plan in the formats a provisioner and NVIDIA's bring-up tools read (docs/handoff.md).

- ``handoff/warewulf/nodes.conf``: Warewulf v4.6's node registry (:mod:`.warewulf`);
- ``handoff/nvidia/siteinfo.yaml``: the site facts of NVIDIA Mission Control's network generator (:mod:`.nvidia`);
- ``handoff/nvidia/p2p/<fabric>.csv``: every cable of a fabric as the UFM Cable Validation Tool's P2P sheet
  (:mod:`.nvidia`).

The registry and the sheets grow with the cluster: they are written for blueprints up to :data:`WAREWULF_NODE_LIMIT`
bare-metal nodes and :data:`P2P_CABLE_LIMIT` cables, and for any on request (``clusterctl render --handoff-all``).
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.handoff.nvidia import p2p_files, siteinfo
from clusterctl.targets.handoff.warewulf import nodes_conf

P2P_CABLE_LIMIT = 20_000
"""cables above which the P2P sheets are written only on request: the 100,000-GPU plan's 307,908 cables take 1.1 s
to unfold and write (16 MB), on every render (docs/handoff.md, "Size")"""
WAREWULF_NODE_LIMIT = 4_096
"""bare-metal nodes above which nodes.conf is written only on request: the 100,000-GPU plan's 13,331 nodes take 1.6 s
(2.2 MB of YAML through the emitter), on every render"""


def cable_count(plan: ClusterPlan) -> int:
    """The plan's cables without unfolding them: every link bundle counts its links (plan/cables.py lists the
    same number, port by port)."""
    return sum(link.count for fp in plan.fabrics for link in fp.links)


def bare_metal_nodes(plan: ClusterPlan) -> int:
    return sum(g.count for g in plan.groups if g.type.instance is None)


def render(plan: ClusterPlan, full: bool = False) -> dict[str, str]:
    """The hand-off files; ``full``: the registry and the sheets whatever the blueprint's size. None for a cloud
    blueprint: the provider provisions its instances (docs/cloud.md)."""
    if not bare_metal_nodes(plan):
        return {}
    files = {"handoff/nvidia/siteinfo.yaml": siteinfo(plan)}
    if full or bare_metal_nodes(plan) <= WAREWULF_NODE_LIMIT:
        files["handoff/warewulf/nodes.conf"] = nodes_conf(plan)
    if full or cable_count(plan) <= P2P_CABLE_LIMIT:
        files.update(p2p_files(plan))
    return files
