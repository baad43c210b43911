"""One test compares them all (issue 29's acceptance): tiers, blocks and rails in the Volcano, Kueue, KAI, Slinky
and Slurm outputs agree with each other and with topology.conf (and with the Node labels, the Topograph model, NCCL's
HCAs and the Network Operator's RDMA resources).

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
Rails (one compute NIC per GPU): GB200 4 (the catalog names their RDMA devices, not their netdevs), DGX H100 8 (DGX
H100/H200 User Guide, Network Modules, Table 6: ibp24s0/mlx5_0 ... ibp220s0/mlx5_11), the HGX H200 blueprint's 8
(its node type's interfaces). GPUs: 4 per GB200 tray, 8 per DGX H100 and HGX H200 node; CPUs and memory: the
servers' data sheets (GB200 tray: 2 Grace of 72 cores, 960 GB; DGX H100: 2 x 56 cores with 2 threads, 2 TB; the
catalog's HGX H200: 2 x 52 cores (Xeon 8470) with 2 threads, 2 TB).
"""

from __future__ import annotations

import json

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
        "node_type": "tray", "rdma": "shared",
        "rails": [("", "mlx5_0"), ("", "mlx5_1"), ("", "mlx5_4"), ("", "mlx5_5")],
    },
    "dgx-h100-superpod-4su": {
        "group": "dgx", "levels": ("spine", "leaf"), "gpus": 127 * 8, "cpus": 127 * 224, "memory": "260096G",
        "spines": _hosts("dgx", [("ib-spine", (1, 127))]), "blocks": {},
        "leaves": _hosts("dgx", [("ib-su1", (1, 32)), ("ib-su2", (33, 64)), ("ib-su3", (65, 96)),
                                 ("ib-su4", (97, 127))]),
        "node_type": "dgx", "rdma": "shared",
        "rails": [("ibp24s0", "mlx5_0"), ("ibp64s0", "mlx5_3"), ("ibp79s0", "mlx5_4"), ("ibp94s0", "mlx5_5"),
                  ("ibp154s0", "mlx5_6"), ("ibp192s0", "mlx5_9"), ("ibp206s0", "mlx5_10"), ("ibp220s0", "mlx5_11")],
    },
    "hgx-h200-roce-1024": {
        "group": "gpu", "levels": ("spine", "leaf"), "gpus": 1024, "cpus": 128 * 208, "memory": "262144G",
        "spines": _hosts("gpu", [("roce-spine", (1, 128))]), "blocks": {},
        "leaves": _hosts("gpu", [("roce-su1", (1, 64)), ("roce-su2", (65, 128))]),
        "node_type": "hgx", "rdma": "sriov",
        "rails": [(f"enp{bus}s0np0", f"mlx5_{k}") for k, bus in enumerate((24, 64, 79, 94, 154, 192, 206, 220))],
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


# --- what each output says, held against the tables -------------------------------------------------------------

def check_slurm(want: dict, files: dict[str, str], tree: dict[str, str]) -> None:
    """topology.conf as shipped (tree or block) and as a tree: SwitchName = a leaf or spine, BlockName = an NVLink
    (accelerator) domain."""
    leaves, spines, blocks = want["leaves"], want["spines"], want["blocks"]
    tree_nodes, tree_children, _ = topology_conf(tree["slurm/topology.conf"])
    assert tree_nodes == leaves
    assert tree_children == {spine: set(leaves) for spine in spines}
    shipped_nodes, _, shipped_blocks = topology_conf(files["slurm/topology.conf"])
    assert shipped_blocks == blocks
    assert shipped_nodes == ({} if blocks else leaves)


def check_nodes(want: dict, nodes: list[dict]) -> None:
    """One Node per worker, a Topograph label per level, the group label, Slinky's topology annotation."""
    leaves, spines, blocks = want["leaves"], want["spines"], want["blocks"]
    everyone = set().union(*spines.values())
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


def check_slinky_and_topograph(want: dict, files: dict[str, str]) -> None:
    """Slinky's topology.yaml (slurmctld's, in its Helm values) and Topograph's model (read as Topograph v1.0.0
    reads it): the leaves' nodes, the spine over them, the NVLink domains."""
    leaves, spines, blocks = want["leaves"], want["spines"], want["blocks"]
    slinky = {t["topology"]: t for t in yaml.safe_load(files["kubernetes/slinky/helm/topology.yaml"])}
    switches = slinky["fabric"]["tree"]["switches"]
    assert {s["switch"]: set(expand(s["nodes"])) for s in switches if "nodes" in s} == leaves
    assert {s["switch"]: set(expand(s["children"])) for s in switches if "children" in s} == \
        {spine: set(leaves) for spine in spines}
    assert set(slinky) == ({"fabric", "nvlink"} if blocks else {"fabric"})
    nvlink = slinky["nvlink"]["block"]["blocks"] if blocks else []
    assert {b["block"]: set(expand(b["nodes"])) for b in nvlink} == blocks
    model = read_model(files["kubernetes/topograph/model.yaml"])
    assert {sw: set(members) for sw, members in model["switch_nodes"].items() if members} == leaves
    assert model["parent"] == {leaf: spine for spine in spines for leaf in leaves}
    assert model["domains"] == blocks


def check_schedulers(want: dict, files: dict[str, str]) -> None:
    """Volcano: tier 1 = the lowest scheduling level (the NVLink domain, else the leaf), tier 2 = the spine over
    it; Kueue and KAI: the same levels as the labels the Nodes carry, hostname last; the queues hold every GPU."""
    spines, lowest = want["spines"], want["blocks"] or want["leaves"]
    hypernodes = objects(files["kubernetes/volcano/hypernodes.yaml"])
    tiers = {h["metadata"]["name"]: (h["spec"]["tier"], h["spec"]["tierName"]) for h in hypernodes}
    assert tiers == {**{d: (1, want["levels"][-1]) for d in lowest}, **{s: (2, "spine") for s in spines}}
    assert hypernode_nodes(hypernodes) == {**lowest, **spines}
    assert {h["metadata"]["name"]: {m["type"] for m in h["spec"]["members"]} for h in hypernodes} == \
        {**{d: {"Node"} for d in lowest}, **{s: {"HyperNode"} for s in spines}}
    labels = [TOPOGRAPH + lv for lv in want["levels"]] + [HOSTNAME]
    kueue = objects(files["kubernetes/kueue/topology.yaml"])
    for docs in (kueue, objects(files["kubernetes/kai/topology.yaml"])):
        (topology,) = [o for o in docs if o["kind"] == "Topology"]
        assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == labels
    (flavor,) = [o for o in kueue if o["kind"] == "ResourceFlavor"]
    assert flavor["spec"]["nodeLabels"] == {"clusterctl.dev/node-group": want["group"]}
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]
    (queue,) = [o for o in kueue if o["kind"] == "ClusterQueue"]
    (flavor_quota,) = queue["spec"]["resourceGroups"][0]["flavors"]
    quota = {r["name"]: r["nominalQuota"] for r in flavor_quota["resources"]}
    assert (quota["nvidia.com/gpu"], quota["cpu"], quota["memory"]) == (want["gpus"], want["cpus"], want["memory"])
    volcano_queue = [o for o in objects(files["kubernetes/volcano/scheduler.yaml"]) if o["kind"] == "Queue"]
    assert [q["spec"]["capability"]["nvidia.com/gpu"] for q in volcano_queue] == [want["gpus"]]


def check_rails(want: dict, files: dict[str, str]) -> None:
    """The rails: NCCL's compute HCAs in rail order; the Network Operator's RDMA resource per rail on the rail's
    netdev (the RDMA shared device plugin's configList, or a SriovNetworkNodePolicy per rail); the Slinky NodeSet
    asks for every rail's resource. GB200's compute ports have no netdev names in the catalog: one shared resource
    over the Mellanox NICs instead."""
    rails = want["rails"]
    (hca,) = [line for line in files[f"nccl/{want['node_type']}.conf"].splitlines() if line.startswith("NCCL_IB_HCA")]
    assert hca == "NCCL_IB_HCA==" + ",".join(f"{rdma}:1" for _, rdma in rails)
    (policy,) = objects(files["kubernetes/network-operator/nicclusterpolicy.yaml"])
    if want["rdma"] == "sriov":
        assert "rdmaSharedDevicePlugin" not in policy["spec"]
        sriov = objects(files["kubernetes/network-operator/sriov.yaml"])
        assert [(p["spec"]["resourceName"], p["spec"]["nicSelector"]["pfNames"]) for p in sriov] == \
            [(f"rail{k}", [netdev]) for k, (netdev, _) in enumerate(rails)]
        resources = {f"nvidia.com/rail{k}" for k in range(len(rails))}
    else:
        config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
        named = [(c["resourceName"], c["selectors"]) for c in config]
        if rails[0][0]:
            assert named == [(f"rail{k}", {"ifNames": [netdev]}) for k, (netdev, _) in enumerate(rails)]
        else:
            assert named == [("rdma_shared_device_a", {"vendors": ["15b3"]})]
        resources = {f"rdma/{name}" for name, _ in named}
    values = yaml.safe_load(files["kubernetes/slinky/helm/values.yaml"])
    (nodeset,) = values["nodesets"].values()
    limits = nodeset["slurmd"]["resources"]["limits"]
    assert {r: n for r, n in limits.items() if r != "nvidia.com/gpu"} == dict.fromkeys(resources, 1)
    assert limits["nvidia.com/gpu"] == want["gpus"] // nodeset["replicas"]


# --- the one test ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=sorted(EXPECTED))
def rendered(request) -> tuple[str, dict[str, str], dict[str, str]]:
    """(blueprint, its slurm, nccl and kubernetes files, the slurm files of the same plan with topology: tree)."""
    name = request.param
    files = render_targets(plan_of(shipped(name)), ["slurm", "nccl", "kubernetes"])
    data = shipped(name)
    data["slurm"]["topology"] = "tree"
    tree = render_targets(plan_of(data), ["slurm"])
    return name, files, tree


def test_tiers_blocks_and_rails_agree_across_slurm_volcano_kueue_kai_slinky(rendered):
    name, files, tree = rendered
    want = EXPECTED[name]
    check_slurm(want, files, tree)
    check_nodes(want, [o for o in objects(files["kubernetes/nodes.yaml"]) if o["kind"] == "Node"])
    check_slinky_and_topograph(want, files)
    check_schedulers(want, files)
    check_rails(want, files)
