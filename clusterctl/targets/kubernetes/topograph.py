"""kubernetes/topograph/model.yaml: the designed topology as an NVIDIA Topograph model file.

NVIDIA Topograph discovers a cluster's topology after bring-up (cloud APIs, ibnetdiscover, NetQ) and writes it
as Slurm's topology.conf or as node labels. Its *model* files describe a topology by hand for its simulation
providers (``test``, ``aws-sim`` ...) and its ``kwok-nodes`` tool. This module writes the plan's
:class:`~clusterctl.plan.kube_topology.KubeTopology` in that format: the topology as designed, in the shape of
Topograph's own input, so a site can diff the design against what Topograph discovers (docs/kubernetes.md,
"Topograph model").

Format: NVIDIA/topograph release v1.0.0 (commit aab33e18e83ee3bc88794d001caa16954850f0b4), ``pkg/models/model.go``
(``Model``, ``Switch``, ``CapacityBlock``, ``UnmarshalYAML``, ``completeCapacityBlocks``, ``buildSwitchMaps``,
``ToGraph``), ``docs/modeling.md``, ``tests/models/nvl72.yaml``; node ranges as ``internal/cluset/cluset.go``
expands them. (v1.0.0 replaced v0.5.0's ``nodes``/``capacity_blocks`` sections: its CHANGELOG, #394.)

- ``switches``: switch ID -> ``{switches: [child IDs]}``; a switch without children is ``{}`` (a null value is
  refused, "switch %q has empty definition"). Every switch of every level (core, spine, leaf) is listed, top
  level first; each has at most one parent (``buildSwitchMaps``).
- ``blocks``: the only place nodes are declared. Each entry attaches ``nodes`` to its leaf ``switch``; the
  annotation ``accelerator.topology.test/domain`` puts them in an accelerator (NVLink) domain, which
  ``ToGraph`` turns into ``Graph.Domains``: Slurm's topology/block blocks and the
  ``accelerator.topograph.run/domain`` label. A node may be in one entry only, so there is one entry per
  (leaf, NVLink domain) pair: an NVL72 rack straddling two leaves is two entries with the same annotation.
- ``nodes`` entries are in cluset's compact form: a name, or ``prefix[ranges]`` with the bracket last (cluset's
  ``Expand`` reads no other bracket; the width of a range is the width of its lower bound, as in Slurm).

Every switch and domain name is a Topograph label value (``fabric.topograph.run/tier-N``,
``accelerator.topograph.run/domain``) and every node name a Kubernetes node name: each passes through
:mod:`clusterctl.targets.kubernetes.objects`, which refuses what Kubernetes would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clusterctl import hostlist
from clusterctl.plan.kube_names import planned_names
from clusterctl.plan.kube_topology import KubeTopology
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.kubernetes.objects import dns_subdomain, label_value, stream
from clusterctl.yamlout import Flow

MODEL_FILE = "kubernetes/topograph/model.yaml"
TOPOGRAPH_RELEASE = "v1.0.0"
"""the Topograph release whose model format this writes"""
DOMAIN_ANNOTATION = "accelerator.topology.test/domain"
"""pkg/models/model.go ``annotationAcceleratorDomain``: a model node's accelerator domain"""
SWITCH_LEVELS = ("core", "spine", "leaf")

_TERM = re.compile(r"[^,\[\]]+(?:\[[^\]]*\])?")
"""one term of a compressed host list: a name, or a prefix and one trailing bracket"""


def compact_nodes(hosts: Sequence[str]) -> list[str]:
    """``hosts`` as cluset entries: the terms of their Slurm host list. ``hostlist.compress`` brackets only a
    trailing number and pads a range to its lower bound's width, which is what cluset's ``Expand`` reads."""
    return _TERM.findall(hostlist.compress(hosts))


class _Names:
    """The checks every written name passes, located where the blueprint decides the name (the same places rule
    K8S002 reports, from :func:`clusterctl.plan.kube_names.planned_names`)."""

    def __init__(self, plan: ClusterPlan, topo: KubeTopology) -> None:
        self._paths = {(n.value, n.use): n.path for n in planned_names(plan, topo)}

    def switch(self, name: str) -> str:
        return label_value(name, "the Topograph switch ID (a fabric.topograph.run/tier-N label value)",
                           self._paths.get((name, "label value"), ()))

    def domain(self, name: str) -> str:
        return label_value(name, "the NVLink domain (an accelerator.topograph.run/domain label value)",
                           self._paths.get((name, "label value"), ()))

    def node(self, host: str) -> str:
        return dns_subdomain(host, "the host (a Node's name)", self._paths.get((host, "object name"), ()))


def _switches(topo: KubeTopology, names: _Names) -> dict[str, dict]:
    """Every switch domain, top level first, with its child switches."""
    children: dict[str, list[str]] = {}
    order: list[str] = []
    for level in SWITCH_LEVELS:
        for d in topo.of_level(level):
            order.append(d.name)
            if d.parent is not None:
                children.setdefault(d.parent, []).append(d.name)
    out: dict[str, dict] = {}
    for name in order:
        kids = children.get(name)
        out[names.switch(name)] = {"switches": Flow(names.switch(k) for k in kids)} if kids else {}
    return out


def _block(names: _Names, switch: str | None, domain: str | None, hosts: Sequence[str]) -> dict:
    entry: dict = {}
    if switch is not None:
        entry["switch"] = names.switch(switch)
    entry["nodes"] = Flow(compact_nodes([names.node(h) for h in hosts]))
    if domain is not None:
        entry["annotations"] = {DOMAIN_ANNOTATION: names.domain(domain)}
    return entry


def _blocks(topo: KubeTopology, names: _Names) -> list[dict]:
    """One entry per (leaf, NVLink domain) pair, leaves in plan order, the nodes of a leaf without an NVLink
    domain in one entry; then the nodes of NVLink domains under no leaf (none today: every worker node is
    under a leaf), without a switch."""
    domain_of = {h: d.name for d in topo.of_level("accelerator") for h in hostlist.expand(d.hosts)}
    out: list[dict] = []
    for leaf in topo.of_level("leaf"):
        by_domain: dict[str | None, list[str]] = {}
        for h in hostlist.expand(leaf.hosts):
            by_domain.setdefault(domain_of.pop(h, None), []).append(h)
        out.extend(_block(names, leaf.name, domain, hosts) for domain, hosts in by_domain.items())
    unplaced: dict[str, list[str]] = {}
    for h, domain in domain_of.items():
        unplaced.setdefault(domain, []).append(h)
    out.extend(_block(names, None, domain, hosts) for domain, hosts in unplaced.items())
    return out


def model(plan: ClusterPlan, topo: KubeTopology) -> dict:
    """The Topograph model of ``topo`` as data (``switches`` omitted when there are none, as Topograph allows)."""
    names = _Names(plan, topo)
    switches = _switches(topo, names)
    return {**({"switches": switches} if switches else {}), "blocks": _blocks(topo, names)}


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """``kubernetes/topograph/model.yaml``; nothing when there are no worker nodes."""
    if not topo.domains:
        return {}
    comments = [
        f"NVIDIA Topograph model ({TOPOGRAPH_RELEASE}, pkg/models) of the designed topology: every switch with",
        "its child switches; blocks put nodes under their leaf switch and, with the",
        f"{DOMAIN_ANNOTATION} annotation, in their NVLink domain.",
        "Diff it against what Topograph discovers: docs/kubernetes.md, 'Topograph model'.",
    ]
    return {MODEL_FILE: stream([model(plan, topo)], comments, plan)}
