"""One test compares them all (issue 29's acceptance): tiers, blocks and rails in the Volcano, Kueue, KAI, Slinky
and Slurm outputs agree with each other and with topology.conf (and with the Node labels and the Topograph model).

The rendered files of the GB200 NVL72, SuperPOD 4 SU and H200 RoCE blueprints are parsed as a reader would parse
them (topology.conf's lines, the YAML objects) and every one is held against the same hand-counted tables:

- GB200 NVL72 8 racks (blueprints/gb200-nvl72-8rack.yaml): 144 trays ``gb[001-144]``, 18 per NVL72 rack, so eight
  NVLink domains ``nvl01``..``nvl08`` of 18 trays (Slurm's topology/block blocks); the compute fabric's scalable
  units hold 32 trays (a QM9700 leaf at 1:1), so the leaves ``ib-su1``..``ib-su5`` hold 32, 32, 32, 32 and 16
  trays and cut racks 2, 4, 6 and 8 in two: the schedulers' levels are spine and NVLink domain (rule K8S001).
- DGX SuperPOD 4 SU (dgx-h100-superpod-4su.yaml): 127 DGX H100 (NVIDIA's 4-SU design: the 128th slot is UFM),
  32 per scalable unit, the last SU 31: leaves ``ib-su1``..``ib-su4`` under one spine ``ib-spine``.
- HGX H200 RoCE 1024 GPUs (hgx-h200-roce-1024.yaml): 128 nodes, 64 per scalable unit: ``roce-su1``, ``roce-su2``
  under ``roce-spine``.
GPUs: 4 per GB200 tray, 8 per DGX H100 and HGX H200 node; CPUs and memory: the servers' data sheets (GB200 tray: 2
Grace of 72 cores, 960 GB; DGX H100: 2 x 56 cores with 2 threads, 2 TB; the catalog's HGX H200: 2 x 52 cores (Xeon
8470) with 2 threads, 2 TB).
"""

from __future__ import annotations

import pytest
import yaml

from clusterctl.hostlist import expand
from clusterctl.targets import render_targets
from tests.helpers import plan_of, shipped
from tests.targets.test_topograph_model import read_model

TOPOGRAPH = "network.topology.nvidia.com/"
HOSTNAME = "kubernetes.io/hostname"
SLINKY = "topology.slinky.slurm.net/spec"


def _hosts(prefix: str, ranges: list[tuple[int, int]]) -> dict[str, set[str]]:
    return {name: {f"{prefix}{n:03d}" for n in range(lo, hi + 1)} for name, (lo, hi) in ranges}


GB200_BLOCKS = _hosts("gb", [(f"nvl0{i}", (18 * i - 17, 18 * i)) for i in range(1, 9)])
GB200_LEAVES = _hosts("gb", [("ib-su1", (1, 32)), ("ib-su2", (33, 64)), ("ib-su3", (65, 96)),
                              ("ib-su4", (97, 128)), ("ib-su5", (129, 144))])
EXPECTED = {
    "gb200-nvl72-8rack": {
        "group": "gb200", "levels": ("spine", "accelerator"), "gpus": 576, "cpus": 144 * 144, "memory": "138240G",
        "spines": _hosts("gb", [("ib-spine", (1, 144))]), "leaves": GB200_LEAVES, "blocks": GB200_BLOCKS,
    },
    "dgx-h100-superpod-4su": {
        "group": "dgx", "levels": ("spine", "leaf"), "gpus": 127 * 8, "cpus": 127 * 224, "memory": "260096G",
        "spines": _hosts("dgx", [("ib-spine", (1, 127))]), "blocks": {},
        "leaves": _hosts("dgx", [("ib-su1", (1, 32)), ("ib-su2", (33, 64)), ("ib-su3", (65, 96)),
                                 ("ib-su4", (97, 127))]),
    },
    "hgx-h200-roce-1024": {
        "group": "gpu", "levels": ("spine", "leaf"), "gpus": 1024, "cpus": 128 * 208, "memory": "262144G",
        "spines": _hosts("gpu", [("roce-spine", (1, 128))]), "blocks": {},
        "leaves": _hosts("gpu", [("roce-su1", (1, 64)), ("roce-su2", (65, 128))]),
    },
}


# --- readers: the files as an operator's tools read them ------------------------------------------------------

def topology_conf(text: str) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """(switch -> its nodes, switch -> its child switches, block -> its nodes) of a topology.conf."""
    nodes, children, blocks = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        kv = dict(item.split("=", 1) for item in line.split())
        if "SwitchName" in kv:
            if "Nodes" in kv:
                nodes[kv["SwitchName"]] = set(expand(kv["Nodes"]))
            if "Switches" in kv:
                children[kv["SwitchName"]] = set(expand(kv["Switches"]))
        elif "BlockName" in kv:
            blocks[kv["BlockName"]] = set(expand(kv["Nodes"]))
    return nodes, children, blocks


def objects(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def by_value(nodes: list[dict], key: str) -> dict[str, set[str]]:
    """label (or annotation unit) value -> the nodes carrying it."""
    out: dict[str, set[str]] = {}
    for n in nodes:
        value = n["metadata"]["labels"].get(key)
        if value is not None:
            out.setdefault(value, set()).add(n["metadata"]["name"])
    return out


def hypernode_nodes(hypernodes: list[dict]) -> dict[str, set[str]]:
    """HyperNode -> every node under it (members of type Node, and those of its HyperNode members)."""
    spec = {h["metadata"]["name"]: h["spec"] for h in hypernodes}

    def under(name: str) -> set[str]:
        out: set[str] = set()
        for m in spec[name]["members"]:
            target = m["selector"]["exactMatch"]["name"]
            out |= {target} if m["type"] == "Node" else under(target)
        return out
    return {name: under(name) for name in spec}


# --- the one test ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=sorted(EXPECTED))
def rendered(request) -> tuple[str, dict[str, str], dict[str, str]]:
    """(blueprint, its slurm and kubernetes files, the slurm files of the same plan with topology: tree)."""
    name = request.param
    files = render_targets(plan_of(shipped(name)), ["slurm", "kubernetes"])
    data = shipped(name)
    data["slurm"]["topology"] = "tree"
    tree = render_targets(plan_of(data), ["slurm"])
    return name, files, tree


def test_tiers_and_blocks_agree_across_slurm_volcano_kueue_kai_slinky(rendered):
    name, files, tree = rendered
    want = EXPECTED[name]
    leaves, spines, blocks = want["leaves"], want["spines"], want["blocks"]
    everyone = set().union(*spines.values())

    # Slurm: topology.conf as shipped (tree or block) and as a tree; BlockName = an NVLink (accelerator) domain
    tree_nodes, tree_children, _ = topology_conf(tree["slurm/topology.conf"])
    assert tree_nodes == leaves
    assert tree_children == {spine: set(leaves) for spine in spines}
    shipped_nodes, _, shipped_blocks = topology_conf(files["slurm/topology.conf"])
    assert shipped_blocks == blocks
    assert shipped_nodes == ({} if blocks else leaves)

    # Node objects: one per worker, a Topograph label per level, the group label, the Slinky annotation
    nodes = [o for o in objects(files["kubernetes/nodes.yaml"]) if o["kind"] == "Node"]
    assert {n["metadata"]["name"] for n in nodes} == everyone
    assert by_value(nodes, TOPOGRAPH + "leaf") == leaves
    assert by_value(nodes, TOPOGRAPH + "spine") == spines
    assert by_value(nodes, TOPOGRAPH + "accelerator") == blocks
    assert by_value(nodes, "clusterctl.dev/node-group") == {want["group"]: everyone}
    slinky: dict[str, dict[str, set[str]]] = {}
    for n in nodes:
        for unit in n["metadata"]["annotations"][SLINKY].split(","):
            topology, _, value = unit.partition(":")
            slinky.setdefault(topology, {}).setdefault(value, set()).add(n["metadata"]["name"])
    assert slinky == ({"fabric": leaves, "nvlink": blocks} if blocks else {"fabric": leaves})

    # Slinky: the topology.yaml its Helm values carry (slurmctld's), tree and NVLink blocks
    slinky_topologies = {t["topology"]: t for t in yaml.safe_load(files["kubernetes/slinky/helm/topology.yaml"])}
    switches = slinky_topologies["fabric"]["tree"]["switches"]
    assert {s["switch"]: set(expand(s["nodes"])) for s in switches if "nodes" in s} == leaves
    assert {s["switch"]: set(expand(s["children"])) for s in switches if "children" in s} == \
        {spine: set(leaves) for spine in spines}
    assert set(slinky_topologies) == ({"fabric", "nvlink"} if blocks else {"fabric"})
    nvlink = slinky_topologies["nvlink"]["block"]["blocks"] if blocks else []
    assert {b["block"]: set(expand(b["nodes"])) for b in nvlink} == blocks

    # Topograph's model (read as Topograph v1.0.0 reads it): the leaves' nodes, the spine over them, the domains
    model = read_model(files["kubernetes/topograph/model.yaml"])
    assert {sw: set(members) for sw, members in model["switch_nodes"].items() if members} == leaves
    assert model["parent"] == {leaf: spine for spine in spines for leaf in leaves}
    assert model["domains"] == blocks

    # Volcano: tier 1 = the lowest scheduling level (the NVLink domain, else the leaf), tier 2 = the spine over it
    hypernodes = objects(files["kubernetes/volcano/hypernodes.yaml"])
    lowest = blocks or leaves
    tiers = {h["metadata"]["name"]: (h["spec"]["tier"], h["spec"]["tierName"]) for h in hypernodes}
    assert tiers == {**{d: (1, want["levels"][-1]) for d in lowest}, **{s: (2, "spine") for s in spines}}
    assert hypernode_nodes(hypernodes) == {**lowest, **spines}
    assert {h["metadata"]["name"]: {m["type"] for m in h["spec"]["members"]} for h in hypernodes} == \
        {**{d: {"Node"} for d in lowest}, **{s: {"HyperNode"} for s in spines}}

    # Kueue and KAI: the same levels, as the labels the Node objects carry, hostname last
    labels = [TOPOGRAPH + lv for lv in want["levels"]] + [HOSTNAME]
    kueue = objects(files["kubernetes/kueue/topology.yaml"])
    kai = objects(files["kubernetes/kai/topology.yaml"])
    for docs in (kueue, kai):
        (topology,) = [o for o in docs if o["kind"] == "Topology"]
        assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == labels
    (flavor,) = [o for o in kueue if o["kind"] == "ResourceFlavor"]
    assert flavor["spec"]["nodeLabels"] == {"clusterctl.dev/node-group": want["group"]}
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]

    # the queues hold every GPU
    (queue,) = [o for o in kueue if o["kind"] == "ClusterQueue"]
    (flavor_quota,) = queue["spec"]["resourceGroups"][0]["flavors"]
    quota = {r["name"]: r["nominalQuota"] for r in flavor_quota["resources"]}
    assert quota["nvidia.com/gpu"] == want["gpus"]
    assert (quota["cpu"], quota["memory"]) == (want["cpus"], want["memory"])
    volcano_queue = [o for o in objects(files["kubernetes/volcano/scheduler.yaml"]) if o["kind"] == "Queue"]
    assert [q["spec"]["capability"]["nvidia.com/gpu"] for q in volcano_queue] == [want["gpus"]]
