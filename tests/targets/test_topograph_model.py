"""kubernetes/topograph/model.yaml, read back the way NVIDIA Topograph reads a model, gives the same tiers and
NVLink blocks as the rendered slurm/topology.conf and slurm/topology.yaml (issue 29: "the Topograph model
round-trips to the same tiers as the rendered topology.conf/topology.yaml").

The reader is written here from Topograph's source, not from the writer: NVIDIA/topograph release v1.0.0 (commit
aab33e18e83ee3bc88794d001caa16954850f0b4)

- ``pkg/models/model.go``: ``Model.UnmarshalYAML`` (the ``switches`` map and the ``blocks`` list; a switch entry
  may not be null, "switch %q has empty definition"; a child named by a parent and not listed is created),
  ``completeCapacityBlocks`` (a block's nodes expanded and non-empty, attached to its ``switch``, which must exist;
  "node %q belongs to more than one capacity block"), ``buildSwitchMaps`` ("switch %q has two parent switches",
  "node %q has two switches", an unknown sub-switch refused), ``getNetworkLayers`` (a node's switches from its own
  up to the root: its tiers, closest first), ``Node.AcceleratorDomain`` (the ``accelerator.topology.test/domain``
  annotation) and ``ToGraph`` (accelerator domains become ``Graph.Domains``, host sets per domain name);
- ``internal/cluset/cluset.go`` ``Expand``: an entry is a name or ``prefix[ranges]`` with the bracket last
  (``^(.*?)\\[(.*?)\\]$``), ranges split on ',', a range's width is its lower bound's;
- ``pkg/translate/tree.go`` ``writeVertex``: the tree Topograph's Slurm engine writes, ``SwitchName=<s>
  Switches=<children>`` and ``SwitchName=<s> Nodes=<nodes>``; ``pkg/translate/topology.go`` ``toBlockInfos``: one
  block per accelerator domain with its hosts.

Slurm's side is read with Slurm's host-list syntax (``clusterctl.hostlist``, whose exact strings are
tests/test_hostlist.py's). Literal expectations are hand-counted from the shipped blueprints.
"""

from __future__ import annotations

import re

import pytest
import yaml

from clusterctl import hostlist
from clusterctl.plan.kube_topology import KubeTopology, TopologyDomain, kube_topology
from clusterctl.targets import RenderError
from clusterctl.targets import kubernetes, slurm
from clusterctl.targets.kubernetes import topograph
from tests.helpers import plan_of, shipped

DOMAIN = "accelerator.topology.test/domain"
_EXPAND = re.compile(r"^(.*?)\[(.*?)\]$")


# --- the reader: Topograph v1.0.0's semantics --------------------------------------------------------------

def cluset_expand(entries: list[str]) -> list[str]:
    """internal/cluset/cluset.go ``Expand``."""
    out: list[str] = []
    for entry in entries:
        m = _EXPAND.match(entry)
        if m is None:
            out.append(entry)
            continue
        prefix, ranges = m.groups()
        for part in ranges.split(","):
            if "-" in part:
                lo, hi = part.split("-")[:2]
                out.extend(f"{prefix}{i:0{len(lo)}d}" for i in range(int(lo), int(hi) + 1))
            else:
                out.append(prefix + part)
    return out


class ModelError(ValueError):
    """What Topograph refuses to load."""


def _switch_children(switches: dict) -> dict[str, list[str]]:
    """``UnmarshalYAML``: every switch entry a mapping with known keys; children named by a parent exist."""
    children: dict[str, list[str]] = {}
    for name, sw in switches.items():
        if sw is None:
            raise ModelError(f"switch {name!r} has empty definition")
        if not set(sw) <= {"name", "labels", "annotations", "switches"} or sw.get("name", name) != name:
            raise ModelError(f"switch {name!r}: {sw}")
        children[name] = list(sw.get("switches") or [])
    for kids in list(children.values()):
        for kid in kids:
            children.setdefault(kid, [])
    return children


def read_model(text: str) -> dict:
    """The model as Topograph holds it: ``parent`` (switch -> its parent), ``switch_nodes`` (switch -> the nodes
    blocks attach to it), ``domains`` (accelerator domain -> hosts), ``nodes`` (every declared node)."""
    data = yaml.safe_load(text)
    if not set(data) <= {"switches", "blocks"}:
        raise ModelError(f"unknown sections {sorted(set(data) - {'switches', 'blocks'})}")
    children = _switch_children(data.get("switches") or {})
    switch_nodes: dict[str, list[str]] = {name: [] for name in children}
    domains: dict[str, set[str]] = {}
    nodes: list[str] = []
    for i, block in enumerate(data.get("blocks") or []):
        if not set(block) <= {"switch", "nodes", "labels", "annotations"}:
            raise ModelError(f"block {i}: {block}")
        members = cluset_expand(block["nodes"])
        if not members:
            raise ModelError(f"capacity block at index {i} must declare at least one node")
        if block.get("switch"):
            if block["switch"] not in switch_nodes:
                raise ModelError(f"capacity block at index {i} references unknown switch {block['switch']!r}")
            switch_nodes[block["switch"]] += [n for n in members if n not in switch_nodes[block["switch"]]]
        for n in members:
            if n in nodes:
                raise ModelError(f"node {n!r} belongs to more than one capacity block")
            nodes.append(n)
        domain = (block.get("annotations") or {}).get(DOMAIN)
        if domain:
            domains.setdefault(domain, set()).update(members)
    parent = _owners(children, "switch {!r} has two parent switches {!r} and {!r}")
    _owners(switch_nodes, "node {!r} has two switches {!r} and {!r}")
    return {"parent": parent, "switch_nodes": switch_nodes, "domains": domains, "nodes": nodes}


def _owners(members_of: dict[str, list[str]], refusal: str) -> dict[str, str]:
    """``buildSwitchMaps``: member -> the one switch holding it; a member held twice is refused."""
    owner: dict[str, str] = {}
    for name, members in members_of.items():
        for m in members:
            if m in owner:
                raise ModelError(refusal.format(m, name, owner[m]))
            owner[m] = name
    return owner


def _paths_up(parent: dict[str, str], nodes_of: dict[str, object]) -> dict[str, tuple[str, ...]]:
    """Every node's switches, its own first, then each parent up to the root."""
    out = {}
    for sw, members in nodes_of.items():
        path = [sw]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        out.update({n: tuple(path) for n in members})
    return out


def model_tiers(model: dict) -> dict[str, tuple[str, ...]]:
    """``getNetworkLayers``: every node's switches, its own first, then up to the root."""
    return _paths_up(model["parent"], model["switch_nodes"])


def model_tree(model: dict) -> dict[str, tuple[frozenset, frozenset]]:
    """``writeVertex``: switch -> (child switches, nodes), for every switch Topograph writes a line for."""
    kids: dict[str, set[str]] = {}
    for child, parent in model["parent"].items():
        kids.setdefault(parent, set()).add(child)
    return {sw: (frozenset(kids.get(sw, ())), frozenset(members))
            for sw, members in model["switch_nodes"].items() if members or sw in kids}


# --- Slurm's side ------------------------------------------------------------------------------------------

def conf_settings(text: str) -> list[dict[str, str]]:
    """topology.conf lines as {key: value}."""
    return [dict(item.split("=", 1) for item in line.split())
            for line in text.splitlines() if line and not line.startswith("#")]


def slurm_tree(switches: list[tuple[str, str | None, str | None]]) -> dict[str, tuple[frozenset, frozenset]]:
    """(name, children host list, nodes host list) -> switch -> (child switches, nodes)."""
    return {name: (frozenset(hostlist.expand(kids)) if kids else frozenset(),
                   frozenset(hostlist.expand(nodes)) if nodes else frozenset())
            for name, kids, nodes in switches}


def tree_tiers(tree: dict[str, tuple[frozenset, frozenset]]) -> dict[str, tuple[str, ...]]:
    """Every node's switches in a Slurm tree, its own first."""
    parent = {kid: sw for sw, (kids, _) in tree.items() for kid in kids}
    return _paths_up(parent, {sw: nodes for sw, (_, nodes) in tree.items()})


def slurm_topology(plan) -> tuple[dict | None, dict[str, set[str]] | None]:
    """The tree and the blocks the slurm target rendered (topology.conf or topology.yaml)."""
    files = slurm.render(plan)
    if "slurm/topology.conf" in files:
        lines = conf_settings(files["slurm/topology.conf"])
        switches = [(s["SwitchName"], s.get("Switches"), s.get("Nodes")) for s in lines if "SwitchName" in s]
        blocks = {s["BlockName"]: set(hostlist.expand(s["Nodes"])) for s in lines if "BlockName" in s}
        return slurm_tree(switches) if switches else None, blocks if blocks else None
    doc = yaml.safe_load(files["slurm/topology.yaml"])
    tree = next(t["tree"]["switches"] for t in doc if "tree" in t)
    blocks = next((t["block"]["blocks"] for t in doc if "block" in t), None)
    return (slurm_tree([(s["switch"], s.get("children"), s.get("nodes")) for s in tree]),
            None if blocks is None else {b["block"]: set(hostlist.expand(b["nodes"])) for b in blocks})


def rendered_model(data: dict) -> str:
    return kubernetes.render(plan_of(data))[topograph.MODEL_FILE]


# --- the reader against Topograph's own examples -----------------------------------------------------------

def test_the_reader_reads_topographs_documented_example():
    """docs/modeling.md (v1.0.0), "Blocks With Switches": n1 and n2 in nvl1, n3 in nvl2, "All three nodes have
    network layers [leaf, core]"."""
    model = read_model("""
switches:
  core:
    switches: [leaf]
blocks:
- switch: leaf
  nodes: ["n[1-2]"]
  annotations:
    accelerator.topology.test/domain: nvl1
- switch: leaf
  nodes: [n3]
  annotations:
    accelerator.topology.test/domain: nvl2
""")
    assert model_tiers(model) == {"n1": ("leaf", "core"), "n2": ("leaf", "core"), "n3": ("leaf", "core")}
    assert model["domains"] == {"nvl1": {"n1", "n2"}, "nvl2": {"n3"}}


def test_cluset_expand_as_topograph_documents_it():
    """docs/modeling.md, "Compact Ranges"; tests/models/medium.yaml's bare "[1101-1102]"."""
    assert cluset_expand(["n[1-4]", "gpu[001-004]", "node9"]) == [
        "n1", "n2", "n3", "n4", "gpu001", "gpu002", "gpu003", "gpu004", "node9"]
    assert cluset_expand(["[1101-1102]", "I[21-22,25]", "x[8-10]"]) == [
        "1101", "1102", "I21", "I22", "I25", "x8", "x9", "x10"]


@pytest.mark.parametrize("text, message", [
    ("switches: {s1: }\nblocks: [{nodes: [n1]}]", "empty definition"),
    ("blocks: [{switch: s9, nodes: [n1]}]", "unknown switch"),
    ("blocks: [{nodes: [n1]}, {nodes: ['n[1-2]']}]", "more than one capacity block"),
    ("switches: {a: {switches: [c]}, b: {switches: [c]}}\nblocks: [{switch: c, nodes: [n1]}]", "two parent"),
    ("blocks: [{nodes: []}]", "at least one node"),
])
def test_the_reader_refuses_what_topograph_refuses(text, message):
    with pytest.raises(ModelError, match=message):
        read_model(text)


# --- the round trip: model vs topology.conf / topology.yaml ------------------------------------------------

CASES = [  # (blueprint, slurm.topology, slurm.version or None for the blueprint's own)
    ("gb200-nvl72-8rack", "block", None),
    ("gb200-nvl72-8rack", "tree", None),
    ("gb200-nvl72-8rack", "yaml", "25.05"),
    ("dgx-h100-superpod-4su", "tree", None),
    ("dgx-h100-superpod-4su", "yaml", "25.05"),
    ("hgx-h200-roce-1024", "tree", None),
    ("hgx-h200-roce-1024", "yaml", "25.05"),
]


@pytest.mark.parametrize("name, setting, version", CASES)
def test_the_model_round_trips_to_slurms_tiers_and_blocks(name, setting, version):
    data = shipped(name)
    data["slurm"]["topology"] = setting
    if version:
        data["slurm"]["version"] = version
    plan = plan_of(data)
    model = read_model(kubernetes.render(plan)[topograph.MODEL_FILE])
    tree, blocks = slurm_topology(plan)
    assert tree is not None or blocks is not None
    if tree is not None:
        assert model_tree(model) == tree
        assert model_tiers(model) == tree_tiers(tree)
    if blocks is not None:
        assert model["domains"] == blocks
    assert sorted(model["nodes"]) == sorted(h for g in plan.groups if g.role == "compute" for h in g.hosts)


def test_superpod_4su_is_four_sus_under_one_spine_and_no_accelerator_domain():
    model = read_model(rendered_model(shipped("dgx-h100-superpod-4su")))
    assert model["parent"] == {"ib-su1": "ib-spine", "ib-su2": "ib-spine", "ib-su3": "ib-spine",
                               "ib-su4": "ib-spine"}
    assert {sw: len(n) for sw, n in model["switch_nodes"].items()} == {
        "ib-spine": 0, "ib-su1": 32, "ib-su2": 32, "ib-su3": 32, "ib-su4": 31}
    tiers = model_tiers(model)
    assert (tiers["dgx001"], tiers["dgx033"], tiers["dgx127"]) == (
        ("ib-su1", "ib-spine"), ("ib-su2", "ib-spine"), ("ib-su4", "ib-spine"))
    assert model["domains"] == {}  # an H100 node is an NVLink domain of its own: no multi-node domain


def test_roce_1024_is_two_sus_of_64():
    model = read_model(rendered_model(shipped("hgx-h200-roce-1024")))
    assert model["parent"] == {"roce-su1": "roce-spine", "roce-su2": "roce-spine"}
    assert model["switch_nodes"]["roce-su1"] == hostlist.expand("gpu[001-064]")
    assert model["switch_nodes"]["roce-su2"] == hostlist.expand("gpu[065-128]")
    assert model["domains"] == {}


def test_gb200_racks_straddle_the_32_node_sus_as_blocks_per_leaf_and_rack():
    """144 trays: SUs of 32 (the fifth holds 16), NVL72 racks of 18: a rack across two SUs is two entries."""
    doc = yaml.safe_load(rendered_model(shipped("gb200-nvl72-8rack")))
    assert doc["switches"] == {"ib-spine": {"switches": ["ib-su1", "ib-su2", "ib-su3", "ib-su4", "ib-su5"]},
                               "ib-su1": {}, "ib-su2": {}, "ib-su3": {}, "ib-su4": {}, "ib-su5": {}}
    assert [(b["switch"], b["nodes"], b["annotations"][DOMAIN]) for b in doc["blocks"]] == [
        ("ib-su1", ["gb[001-018]"], "nvl01"), ("ib-su1", ["gb[019-032]"], "nvl02"),
        ("ib-su2", ["gb[033-036]"], "nvl02"), ("ib-su2", ["gb[037-054]"], "nvl03"),
        ("ib-su2", ["gb[055-064]"], "nvl04"),
        ("ib-su3", ["gb[065-072]"], "nvl04"), ("ib-su3", ["gb[073-090]"], "nvl05"),
        ("ib-su3", ["gb[091-096]"], "nvl06"),
        ("ib-su4", ["gb[097-108]"], "nvl06"), ("ib-su4", ["gb[109-126]"], "nvl07"),
        ("ib-su4", ["gb[127-128]"], "nvl08"),
        ("ib-su5", ["gb[129-144]"], "nvl08"),
    ]
    model = read_model(rendered_model(shipped("gb200-nvl72-8rack")))
    assert {d: len(h) for d, h in model["domains"].items()} == {f"nvl0{i}": 18 for i in range(1, 9)}


def test_three_tiers_are_core_pods_and_sus():
    """frontier-3tier-100k cut to 1,280 nodes (its racks of 4 cut to match): SUs of 64, four SUs per pod, so 20
    SUs in 5 pods under one core."""
    data = shipped("frontier-3tier-100k") | {"kubernetes": {}}
    data["racks"][0]["names"] = "c[0001-0320]"
    data["node_groups"][0].update(count=1280, hostnames="gpu[00001-01280]", racks="c[0001-0320]")
    data["slurm"]["topology"] = "tree"
    plan = plan_of(data)
    model = read_model(kubernetes.render(plan)[topograph.MODEL_FILE])
    tiers = model_tiers(model)
    assert len(tiers) == 1280
    assert tiers["gpu00001"] == ("roce-su01", "roce-pod01", "roce-core")
    assert tiers["gpu00257"] == ("roce-su05", "roce-pod02", "roce-core")
    assert tiers["gpu01280"] == ("roce-su20", "roce-pod05", "roce-core")
    assert sorted(k for k, p in model["parent"].items() if p == "roce-core") == [f"roce-pod0{i}" for i in range(1, 6)]
    assert {len(n) for sw, n in model["switch_nodes"].items() if "-su" in sw} == {64}
    tree, _ = slurm_topology(plan)
    assert model_tree(model) == tree and model_tiers(model) == tree_tiers(tree)


def test_the_comparison_sees_a_node_on_another_leaf():
    """The round trip is no tautology: the model with one node moved to the other SU differs from Slurm's tree."""
    plan = plan_of(shipped("hgx-h200-roce-1024"))
    text = kubernetes.render(plan)[topograph.MODEL_FILE]
    moved = text.replace("gpu[001-064]", "gpu[001-063]").replace("gpu[065-128]", "gpu[064-128]")
    assert moved != text
    tree, _ = slurm_topology(plan)
    assert model_tree(read_model(text)) == tree
    assert model_tree(read_model(moved)) != tree
    assert model_tiers(read_model(moved))["gpu064"] == ("roce-su2", "roce-spine") != tree_tiers(tree)["gpu064"]


def test_groups_without_nvlink_domains_are_slurm_blocks_but_no_topograph_domain():
    """Slurm's topology/block wants every node in a block, so a group without multi-node NVLink domains is one
    block (plan/topology.nvlink_blocks); Topograph gives such nodes no accelerator domain (its providers set one
    from an NVLink clique only), so the model has none."""
    data = shipped("dgx-h100-superpod-4su")
    data["slurm"]["topology"] = "block"
    plan = plan_of(data)
    _, blocks = slurm_topology(plan)
    assert blocks == {"dgx": set(hostlist.expand("dgx[001-127]"))}
    assert read_model(kubernetes.render(plan)[topograph.MODEL_FILE])["domains"] == {}


# --- the file itself ---------------------------------------------------------------------------------------

def test_every_node_entry_is_in_clusets_form_and_leaves_are_empty_mappings():
    text = rendered_model(shipped("gb200-nvl72-8rack"))
    assert text.startswith("# generated by clusterctl from blueprint 'gb200-nvl72-8rack'; do not edit\n")
    doc = yaml.safe_load(text)
    entries = [e for b in doc["blocks"] for e in b["nodes"]]
    assert all(re.fullmatch(r"[a-z0-9.-]+(\[[0-9,-]+\])?", e) for e in entries), entries
    assert "  ib-su1: {}" in text.splitlines()  # "ib-su1:" alone would be null: "switch has empty definition"


def test_compact_nodes_keeps_widths_topograph_reads_back():
    hosts = ["n9", "n10", "n11", "a098", "a099", "a100", "x", "r1.b2", "r1.b3"]
    assert topograph.compact_nodes(hosts) == ["n[9-11]", "a[098-100]", "x", "r1.b[2-3]"]
    assert cluset_expand(topograph.compact_nodes(hosts)) == hosts


def test_a_hand_built_topology_is_written_exactly():
    topo = KubeTopology(
        domains=(TopologyDomain("spine", "sp", None, "n[1-4]"),
                 TopologyDomain("leaf", "l1", "sp", "n[1-2]"), TopologyDomain("leaf", "l2", "sp", "n[3-4]"),
                 TopologyDomain("accelerator", "rack1", "sp", "n[2-3]")),
        group_levels={"g": ("spine", "accelerator")}, skipped={"g": ("leaf",)}, groups=("g",))
    data = topograph.model(plan_of(shipped("lab-2node")), topo)
    assert data == {
        "switches": {"sp": {"switches": ["l1", "l2"]}, "l1": {}, "l2": {}},
        "blocks": [{"switch": "l1", "nodes": ["n1"]},
                   {"switch": "l1", "nodes": ["n2"], "annotations": {DOMAIN: "rack1"}},
                   {"switch": "l2", "nodes": ["n3"], "annotations": {DOMAIN: "rack1"}},
                   {"switch": "l2", "nodes": ["n4"]}],
    }


def test_a_name_kubernetes_refuses_is_a_render_error_located_in_the_blueprint():
    data = shipped("dgx-h100-superpod-4su")
    data["node_groups"][0]["hostnames"] = "DGX[001-127]"
    plan = plan_of(data)
    with pytest.raises(RenderError, match="'DGX001' cannot be a Kubernetes object name") as err:
        topograph.render(plan, kube_topology(plan))
    assert err.value.path == ("node_groups", 0, "hostnames")
    topo = KubeTopology(domains=(TopologyDomain("leaf", "x" * 64, None, "n1"),), group_levels={"g": ("leaf",)},
                        skipped={}, groups=("g",))
    with pytest.raises(RenderError, match="switch ID"):
        topograph.model(plan, topo)


def test_render_is_byte_identical_and_nothing_without_workers():
    data = shipped("gb200-nvl72-8rack")
    assert rendered_model(data) == rendered_model(data)
    empty = KubeTopology(domains=(), group_levels={}, skipped={}, groups=())
    assert topograph.render(plan_of(data), empty) == {}
