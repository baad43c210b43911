"""The schedulers' objects (Volcano, Kueue, KAI) from hand-built topologies: tiers where groups have different
levels, the HyperNode tree, one Topology per level list, names Kubernetes refuses, and the Volcano scheduler
configuration against the upstream file it extends.

The shipped blueprints are compared with each other and with Slurm in test_kubernetes_agreement.py; here the
topologies are small enough to write every expected object by hand.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from clusterctl.plan.kube_topology import KubeTopology, TopologyDomain
from clusterctl.targets import RenderError
from clusterctl.targets.kubernetes import kai, kueue, volcano

UPSTREAM_SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""installer/helm/chart/volcano/config/volcano-scheduler.conf, volcano-sh/volcano v1.15.1, copied unchanged"""


def group(name: str, hosts: tuple[str, ...], gpus: int = 8) -> SimpleNamespace:
    node_type = SimpleNamespace(gpus=gpus, sockets=2, cores_per_socket=56, threads_per_core=2, memory_gb=2048)
    return SimpleNamespace(name=name, role="compute", hosts=hosts, path=("node_groups", 0), type=node_type,
                           count=len(hosts), gpus=gpus * len(hosts))


def plan_with(*groups: SimpleNamespace, schedulers=("volcano", "kueue", "kai")) -> SimpleNamespace:
    spec = SimpleNamespace(schedulers=list(schedulers), queue="training", namespace="training")
    return SimpleNamespace(name="hand-built", groups=list(groups), fabrics=[], racks=[], kubernetes=spec)


def domain(level: str, name: str, parent: str | None, hosts: str) -> TopologyDomain:
    return TopologyDomain(level, name, parent, hosts)


A, B = group("gb", ("a1", "a2", "a3", "a4")), group("hgx", ("b1", "b2"))
SPINE, LEAVES = domain("spine", "sp", None, "a[1-4],b[1-2]"), (domain("leaf", "lf1", "sp", "a[1-4]"),
                                                                   domain("leaf", "lf2", "sp", "b[1-2]"))
RACKS = (domain("accelerator", "nv1", "lf1", "a[1-2]"), domain("accelerator", "nv2", "lf1", "a[3-4]"))


def topology(levels_a: tuple[str, ...], skipped_a: tuple[str, ...] = ()) -> KubeTopology:
    return KubeTopology(domains=(SPINE, *LEAVES, *RACKS), groups=("gb", "hgx"),
                        group_levels={"gb": levels_a, "hgx": ("spine", "leaf")},
                        skipped={"gb": skipped_a} if skipped_a else {})


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def members(hypernode: dict) -> tuple[int, str, list[tuple[str, str]]]:
    spec = hypernode["spec"]
    return spec["tier"], spec["tierName"], [(m["type"], m["selector"]["exactMatch"]["name"]) for m in spec["members"]]


def hypernodes(plan, topo) -> dict[str, tuple[int, str, list[tuple[str, str]]]]:
    files = volcano.render(plan, topo)
    return {h["metadata"]["name"]: members(h) for h in docs(files["kubernetes/volcano/hypernodes.yaml"])}


def test_a_level_has_one_tier_across_groups_with_different_levels():
    """The GB200 group has three levels, the HGX group two: accelerator is tier 1 everywhere, leaf 2, spine 3,
    and the HGX nodes are Node members of their tier-2 leaf (Volcano maps each tierName to one tier)."""
    assert hypernodes(plan_with(A, B), topology(("spine", "leaf", "accelerator"))) == {
        "sp": (3, "spine", [("HyperNode", "lf1"), ("HyperNode", "lf2")]),
        "lf1": (2, "leaf", [("HyperNode", "nv1"), ("HyperNode", "nv2")]),
        "lf2": (2, "leaf", [("Node", "b1"), ("Node", "b2")]),
        "nv1": (1, "accelerator", [("Node", "a1"), ("Node", "a2")]),
        "nv2": (1, "accelerator", [("Node", "a3"), ("Node", "a4")]),
    }


def test_a_skipped_level_is_no_hypernode_and_its_domains_hang_from_the_level_above():
    """NVLink domains straddling leaves: the GB200 group's leaf is skipped, so its leaf has no HyperNode and the
    NVLink domains are members of the spine; the HGX group keeps its leaf."""
    assert hypernodes(plan_with(A, B), topology(("spine", "accelerator"), ("leaf",))) == {
        "sp": (3, "spine", [("HyperNode", "nv1"), ("HyperNode", "nv2"), ("HyperNode", "lf2")]),
        "lf2": (2, "leaf", [("Node", "b1"), ("Node", "b2")]),
        "nv1": (1, "accelerator", [("Node", "a1"), ("Node", "a2")]),
        "nv2": (1, "accelerator", [("Node", "a3"), ("Node", "a4")]),
    }


def test_one_topology_per_level_list_and_a_flavor_per_gpu_group():
    plan, topo = plan_with(A, B), topology(("spine", "leaf", "accelerator"))
    kueue_docs = docs(kueue.render(plan, topo)["kubernetes/kueue/topology.yaml"])
    kai_docs = docs(kai.render(plan, topo)["kubernetes/kai/topology.yaml"])
    three = [{"nodeLabel": "network.topology.nvidia.com/spine"}, {"nodeLabel": "network.topology.nvidia.com/leaf"},
             {"nodeLabel": "network.topology.nvidia.com/accelerator"}, {"nodeLabel": "kubernetes.io/hostname"}]
    two = [three[0], three[1], three[3]]
    for api, objects in (("kueue.x-k8s.io/v1beta2", kueue_docs), ("kai.scheduler/v1alpha1", kai_docs)):
        assert [(o["apiVersion"], o["metadata"]["name"], o["spec"]["levels"])
                for o in objects if o["kind"] == "Topology"] == \
            [(api, "spine-leaf-accelerator", three), (api, "spine-leaf", two)]
    flavors = {o["metadata"]["name"]: o["spec"] for o in kueue_docs if o["kind"] == "ResourceFlavor"}
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert flavors == {
        "gb": {"nodeLabels": {"clusterctl.dev/node-group": "gb"}, "topologyName": "spine-leaf-accelerator",
               "tolerations": toleration},
        "hgx": {"nodeLabels": {"clusterctl.dev/node-group": "hgx"}, "topologyName": "spine-leaf",
                "tolerations": toleration},
    }
    (queue,) = [o for o in kueue_docs if o["kind"] == "ClusterQueue"]
    assert queue["spec"]["resourceGroups"] == [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
        {"name": "gb", "resources": [{"name": "cpu", "nominalQuota": 896}, {"name": "memory", "nominalQuota": "8192G"},
                                     {"name": "nvidia.com/gpu", "nominalQuota": 32}]},
        {"name": "hgx", "resources": [{"name": "cpu", "nominalQuota": 448}, {"name": "memory", "nominalQuota": "4096G"},
                                      {"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]
    (local,) = [o for o in kueue_docs if o["kind"] == "LocalQueue"]
    assert local["metadata"] == {"name": "training", "namespace": "training"}
    assert local["spec"] == {"clusterQueue": "training"}


def test_a_group_name_with_underscore_names_its_flavor_with_a_dash():
    gpu_a = group("gpu_a", ("b1", "b2"))
    topo = KubeTopology(domains=(domain("leaf", "lf2", None, "b[1-2]"),), groups=("gpu_a",),
                        group_levels={"gpu_a": ("leaf",)}, skipped={})
    (flavor,) = [o for o in docs(kueue.render(plan_with(gpu_a), topo)["kubernetes/kueue/topology.yaml"])
                 if o["kind"] == "ResourceFlavor"]
    assert flavor["metadata"]["name"] == "gpu-a"
    assert flavor["spec"]["nodeLabels"] == {"clusterctl.dev/node-group": "gpu_a"}


def test_a_host_name_kubernetes_refuses_is_a_render_error_located_at_the_group():
    upper = group("gb", ("GB01", "GB02"))
    topo = KubeTopology(domains=(domain("leaf", "lf1", None, "GB[01-02]"),), groups=("gb",),
                        group_levels={"gb": ("leaf",)}, skipped={})
    with pytest.raises(RenderError, match="GB01") as err:
        volcano.render(plan_with(upper), topo)
    assert err.value.path == ("node_groups", 0, "hostnames")


def test_nothing_for_schedulers_not_chosen_and_kueue_without_gpus():
    topo = topology(("spine", "leaf", "accelerator"))
    for module in (volcano, kueue, kai):
        assert module.render(plan_with(A, B, schedulers=()), topo) == {}
    cpu_only = plan_with(group("gb", A.hosts, gpus=0), group("hgx", B.hosts, gpus=0))
    assert kueue.render(cpu_only, topo) == {}
    (queue,) = [o for o in docs(volcano.render(cpu_only, topo)["kubernetes/volcano/scheduler.yaml"])
                if o["kind"] == "Queue"]
    assert queue["spec"] == {"weight": 1}


def test_the_scheduler_configuration_is_upstreams_default_with_network_topology_aware():
    files = volcano.render(plan_with(A, B), topology(("spine", "leaf", "accelerator")))
    configmap, queue = docs(files["kubernetes/volcano/scheduler.yaml"])
    assert configmap["metadata"] == {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"}
    expected = yaml.safe_load(UPSTREAM_SCHEDULER_CONF)
    expected["tiers"][1]["plugins"].append(
        {"name": "network-topology-aware", "arguments": {"hypernode.binpack.resources": "nvidia.com/gpu"}})
    assert yaml.safe_load(configmap["data"]["volcano-scheduler.conf"]) == expected
    assert "volcano-scheduler.conf: |\n" in files["kubernetes/volcano/scheduler.yaml"]  # a literal block
    (values,) = docs(files["kubernetes/volcano/helm/values.yaml"])
    assert yaml.safe_load(values["custom"]["scheduler_config_override"]) == expected
    assert (queue["kind"], queue["metadata"]["name"], queue["spec"]) == \
        ("Queue", "training", {"weight": 1, "capability": {"nvidia.com/gpu": 48}})


def test_domains_of_two_levels_with_one_name_get_their_level_as_prefix():
    """A rack named like a leaf (racks ``lf1``, ``lf2`` holding the NVLink domains of the same names): both get
    a HyperNode, so both are named with their level; names used once stay as they are."""
    racks = (domain("accelerator", "lf1", "lf1", "a[1-2]"), domain("accelerator", "nv2", "lf1", "a[3-4]"))
    topo = KubeTopology(domains=(SPINE, *LEAVES, *racks), groups=("gb", "hgx"),
                        group_levels={"gb": ("spine", "leaf", "accelerator"), "hgx": ("spine", "leaf")}, skipped={})
    assert hypernodes(plan_with(A, B), topo) == {
        "sp": (3, "spine", [("HyperNode", "leaf.lf1"), ("HyperNode", "lf2")]),
        "leaf.lf1": (2, "leaf", [("HyperNode", "accelerator.lf1"), ("HyperNode", "nv2")]),
        "lf2": (2, "leaf", [("Node", "b1"), ("Node", "b2")]),
        "accelerator.lf1": (1, "accelerator", [("Node", "a1"), ("Node", "a2")]),
        "nv2": (1, "accelerator", [("Node", "a3"), ("Node", "a4")]),
    }
