"""Every object the kubernetes target writes validates against its upstream schema (tests/kubernetes_schema.py): the
CRDs vendored at named releases (tests/data/kubernetes/crds/SOURCES.md) and Kubernetes' own schemas for core kinds.

First the validator itself, on literal objects: upstream's own examples and hand-written objects per kind pass;
objects with a wrong field, a wrong type, a name or a label value over the limits, an unserved version or an
unknown kind fail with the field named. Then the rendered GB200 NVL72, SuperPOD 4 SU and H200 RoCE blueprints:
every object of every ``kubernetes/**/*.yaml`` stream (not the Topograph model, not Helm values) is valid, and a
mutated emitted object is not.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_module
from tests.kubernetes_schema import (CRD_DIR as CRDS, RELEASE_CRD_DIR, StructuralValidator, crd_index,
                                     release_crds, schema_problems, to_jsonschema, validate_object, validate_stream)


@pytest.fixture(autouse=True, scope="module")
def _schema_tools():
    """kubernetes-validate (the core kinds' schemas) and cel-python (the CRDs' CEL rules): the test extra's."""
    for module in ("kubernetes_validate", "celpy"):
        require_module(module, hint="the test extra installs it: pip install '.[test]'")


SAMPLES = Path(__file__).resolve().parent.parent / "data" / "kubernetes" / "samples"

GOOD = [
    {"apiVersion": "v1", "kind": "Node",
     "metadata": {"name": "gb200-r01-t01",
                  "labels": {"kubernetes.io/hostname": "gb200-r01-t01",
                             "network.topology.nvidia.com/accelerator": "nvl72-r01",
                             "network.topology.nvidia.com/leaf": "su1-leaf01",
                             "nvidia.com/gpu.clique": "nvl72-r01"},
                  "annotations": {"topology.slinky.slurm.net/spec": "block1:1"}},
     "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}},
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
     "data": {"volcano-scheduler.conf": "actions: \"enqueue, allocate, backfill\"\n"}},
    # Volcano v1.15.1 config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml
    {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
     "metadata": {"name": "su1-leaf01"},
     "spec": {"tier": 1, "tierName": "leaf", "members": [
         {"type": "Node", "selector": {"exactMatch": {"name": "dgx-001"}}},
         {"type": "Node", "selector": {"regexMatch": {"pattern": "^dgx-00[2-9]$"}}},
         {"type": "Node", "selector": {"labelMatch": {"matchLabels": {
             "network.topology.nvidia.com/leaf": "su1-leaf01"}}}}]}},
    {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
     "metadata": {"name": "su1-spine"},
     "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "su1-leaf01"}}}]}},
    # Kueue v0.19.2 config/components/crd/bases/
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "gb200"},
     "spec": {"levels": [{"nodeLabel": "network.topology.nvidia.com/spine"},
                         {"nodeLabel": "network.topology.nvidia.com/accelerator"},
                         {"nodeLabel": "kubernetes.io/hostname"}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "gb200"},
     "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "gb200"}, "topologyName": "gb200"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "training"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{
         "coveredResources": ["nvidia.com/gpu"],
         "flavors": [{"name": "gb200", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 576}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
     "metadata": {"name": "training", "namespace": "training"}, "spec": {"clusterQueue": "training"}},
    # KAI Scheduler v0.13.0 docs/topology/README.md
    {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": "cluster-topology"},
     "spec": {"levels": [{"nodeLabel": "cloud.provider.com/topology-block"},
                         {"nodeLabel": "cloud.provider.com/topology-rack"},
                         {"nodeLabel": "kubernetes.io/hostname"}]}},
    # Slinky slurm-operator v1.2.1 config/crd/bases/ (required: controllerRef; LoginSet also sssdConfRef)
    {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet",
     "metadata": {"name": "slurm-worker-gb200", "namespace": "slurm"},
     "spec": {"controllerRef": {"name": "slurm"}, "replicas": 72, "partition": {"enabled": True}}},
    {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "LoginSet",
     "metadata": {"name": "slurm-login", "namespace": "slurm"},
     "spec": {"controllerRef": {"name": "slurm"}, "sssdConfRef": {"name": "slurm-sssd", "key": "sssd.conf"},
              "replicas": 1}},
    # NVIDIA k8s-dra-driver-gpu v25.12.0 demo/specs/imex/channel-injection.yaml
    {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
     "metadata": {"name": "imex-channel-injection", "namespace": "training"},
     "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "imex-channel-0"}}}},
    # k8snetworkplumbingwg sriov-network-operator v1.6.0 (required: nicSelector, nodeSelector, numVfs, resourceName)
    {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
     "metadata": {"name": "rail0", "namespace": "nvidia-network-operator"},
     "spec": {"resourceName": "rail0", "numVfs": 8, "isRdma": True, "deviceType": "netdevice",
              "nodeSelector": {"feature.node.kubernetes.io/network-sriov.capable": "true"},
              "nicSelector": {"vendor": "15b3", "pfNames": ["ens1f0np0"]}}},
    # Mellanox nvidia-k8s-ipam v0.4.0 examples/ippool-1.yaml
    {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
     "metadata": {"name": "rail0", "namespace": "nvidia-network-operator"},
     "spec": {"subnet": "10.10.0.0/24", "perNodeBlockSize": 16, "gateway": "10.10.0.1"}},
]


def _kinds(objects: list[dict]) -> list[str]:
    return [f"{o['apiVersion']} {o['kind']}" for o in objects]


@pytest.mark.parametrize("obj", GOOD, ids=_kinds(GOOD))
def test_a_valid_object_of_each_kind_passes(obj):
    assert validate_object(obj) == []


def _without_nulls(node):
    """What the API server validates: it prunes null values of non-nullable fields before validation
    (Kubernetes docs, "Extend the Kubernetes API with CustomResourceDefinitions", Defaulting and Nullable)."""
    if isinstance(node, dict):
        return {k: _without_nulls(v) for k, v in node.items() if v is not None}
    return [_without_nulls(v) for v in node] if isinstance(node, list) else node


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_the_upstream_projects_own_examples_pass(name):
    docs = [_without_nulls(d) for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d]
    assert docs and [p for d in docs for p in validate_object(d)] == []


def test_every_vendored_sample_is_read():
    assert sorted(p.name for p in SAMPLES.glob("*.yaml")) == [
        "gpu-operator-clusterpolicy.yaml", "kueue-cluster-queues.yaml", "kueue-resource-flavor-tolerations.yaml",
        "kueue-resource-flavors.yaml", "network-operator-nicclusterpolicy-full.yaml", "nv-ipam-ippool-1.yaml",
        "volcano-queue.yaml"]


def _changed(index: int, path: tuple, value) -> dict:
    """GOOD[index] with the field at ``path`` set to ``value``."""
    obj = copy.deepcopy(GOOD[index])
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return obj


NODE, CONFIGMAP, HYPERNODE, KUEUE_TOPOLOGY, RESOURCE_FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE = 0, 1, 2, 4, 5, 6, 7
KAI_TOPOLOGY, NODESET, COMPUTE_DOMAIN, SRIOV_POLICY, IPPOOL = 8, 9, 11, 12, 13

BAD = {
    "wrong field": (_changed(HYPERNODE, ("spec", "tiers"), 1),
                    "HyperNode/su1-leaf01: spec: Additional properties are not allowed ('tiers' was unexpected)"),
    "wrong type": (_changed(HYPERNODE, ("spec", "tier"), "leaf"),
                   "HyperNode/su1-leaf01: spec.tier: 'leaf' is not of type 'integer'"),
    "below minimum": (_changed(HYPERNODE, ("spec", "tier"), -1),
                      "HyperNode/su1-leaf01: spec.tier: -1 is less than the minimum of 0"),
    "enum": (_changed(HYPERNODE, ("spec", "members", 0, "type"), "Switch"),
             "HyperNode/su1-leaf01: spec.members[0].type: 'Switch' is not one of ['Node', 'HyperNode']"),
    "missing required": (_changed(NODESET, ("spec",), {"replicas": 1}),
                         "NodeSet/slurm-worker-gb200: spec: 'controllerRef' is a required property"),
    "int32 overflow": (_changed(NODESET, ("spec", "replicas"), 1 << 31),
                       "NodeSet/slurm-worker-gb200: spec.replicas: 2147483648 is not a 'int32'"),
    "wrong field deep": (_changed(CLUSTER_QUEUE, ("spec", "resourceGroups", 0, "flavors", 0, "quota"), 1),
                         "ClusterQueue/training: spec.resourceGroups[0].flavors[0]: Additional properties are not "
                         "allowed ('quota' was unexpected)"),
    "name too long": (_changed(KUEUE_TOPOLOGY, ("metadata", "name"), "t" * 254),
                      f"Topology/{'t' * 77}...: metadata.name: '{'t' * 254}' longer than 253 characters"),
    "name not DNS-1123": (_changed(KUEUE_TOPOLOGY, ("metadata", "name"), "GB200_topo"),
                          "Topology/GB200_topo: metadata.name: 'GB200_topo' not a lowercase RFC 1123 subdomain "
                          "(lower-case alphanumerics, '-' and '.', alphanumeric at both ends)"),
    "label value 64 chars": (_changed(NODE, ("metadata", "labels", "network.topology.nvidia.com/leaf"), "l" * 64),
                             f"Node/gb200-r01-t01: metadata.labels['network.topology.nvidia.com/leaf']: value "
                             f"'{'l' * 64}' longer than 63 characters"),
    "label value characters": (_changed(NODE, ("metadata", "labels", "nvidia.com/gpu.clique"), "rack 1"),
                               "Node/gb200-r01-t01: metadata.labels['nvidia.com/gpu.clique']: value 'rack 1' not "
                               "empty nor alphanumerics, '-', '_' or '.' with alphanumerics at both ends"),
    "label key name part 64 chars": (_changed(NODE, ("metadata", "labels", "example.com/" + "k" * 64), "v"),
                                     f"Node/gb200-r01-t01: metadata.labels['example.com/{'k' * 64}']: key name "
                                     f"part longer than 63 characters"),
    "annotation key prefix": (_changed(NODE, ("metadata", "annotations", "Bad_Prefix/x"), "v"),
                              "Node/gb200-r01-t01: metadata.annotations['Bad_Prefix/x']: key prefix part not a "
                              "lowercase RFC 1123 subdomain (lower-case alphanumerics, '-' and '.', alphanumeric "
                              "at both ends)"),
    "namespace on a cluster-scoped kind": (_changed(HYPERNODE, ("metadata", "namespace"), "training"),
                                           "HyperNode/su1-leaf01: metadata.namespace: not allowed on a "
                                           "cluster-scoped kind"),
    "namespace missing": (_changed(LOCAL_QUEUE, ("metadata",), {"name": "training"}),
                          "LocalQueue/training: metadata.namespace: missing (the kind is namespaced)"),
    "namespace not a label": (_changed(LOCAL_QUEUE, ("metadata", "namespace"), "ml.training"),
                              "LocalQueue/training: metadata.namespace: 'ml.training' not a lowercase RFC 1123 "
                              "label (lower-case alphanumerics and '-', alphanumeric at both ends)"),
    "server's metadata field": (_changed(LOCAL_QUEUE, ("metadata", "uid"), "x"),
                                "LocalQueue/training: metadata.uid: not an ObjectMeta field a manifest sets"),
    "unserved version": (_changed(KUEUE_TOPOLOGY, ("apiVersion",), "kueue.x-k8s.io/v1alpha1"),
                         "Topology/gb200: apiVersion: kueue.x-k8s.io/v1alpha1 is not a served version of Topology "
                         "(crds/kueue/kueue.x-k8s.io_topologies.yaml serves v1beta1, v1beta2)"),
    "KAI's documented-elsewhere v1": (_changed(KAI_TOPOLOGY, ("apiVersion",), "kai.scheduler/v1"),
                                      "Topology/cluster-topology: apiVersion: kai.scheduler/v1 is not a served "
                                      "version of Topology (crds/kai-scheduler/kai.scheduler_topologies.yaml serves "
                                      "v1alpha1)"),
    "unknown kind": (_changed(HYPERNODE, ("kind",), "HyperEdge"),
                     "HyperEdge/su1-leaf01: apiVersion/kind topology.volcano.sh/v1alpha1 HyperEdge: no vendored "
                     "CRD and not a core kind this validator knows: unknown, never a pass"),
    "core field of a wrong type": (_changed(NODE, ("spec", "unschedulable"), "yes"),
                                   "Node/gb200-r01-t01: spec.unschedulable: 'yes' is not of type 'boolean', 'null'"),
    "unknown core field": (_changed(NODE, ("spec", "gpus"), 4),
                           "Node/gb200-r01-t01: spec: Additional properties are not allowed ('gpus' was "
                           "unexpected)"),
    "ConfigMap data not strings": (_changed(CONFIGMAP, ("data", "volcano-scheduler.conf"), 1),
                                   "ConfigMap/volcano-scheduler-configmap: data.volcano-scheduler.conf: 1 is not of "
                                   "type 'string', 'null'"),
}

ADMISSION = {  # x-kubernetes-validations (CEL) of the vendored CRDs, and the static checks of upstream webhooks
    "Kueue hostname not lowest": (
        _changed(KUEUE_TOPOLOGY, ("spec", "levels"), [{"nodeLabel": "kubernetes.io/hostname"},
                                                      {"nodeLabel": "network.topology.nvidia.com/leaf"}]),
        "Topology/gb200: spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of "
        "topology"),
    "KAI levels repeated": (
        _changed(KAI_TOPOLOGY, ("spec", "levels"), [{"nodeLabel": "a/b"}, {"nodeLabel": "a/b"}]),
        "Topology/cluster-topology: spec.levels: must be unique"),
    "HyperNode member two selectors": (
        _changed(HYPERNODE, ("spec", "members", 0, "selector", "regexMatch"), {"pattern": "^dgx"}),
        "HyperNode/su1-leaf01: spec.members[0].selector: Only one of ExactMatch, RegexMatch, or LabelMatch can be "
        "specified"),
    "ClusterQueue flavor without every covered resource": (
        _changed(CLUSTER_QUEUE, ("spec", "resourceGroups", 0, "coveredResources"), ["nvidia.com/gpu", "cpu"]),
        "ClusterQueue/training: spec.resourceGroups[0]: flavors must have the same number of resources as the "
        "coveredResources"),
    "ResourceFlavor topology without node labels": (
        _changed(RESOURCE_FLAVOR, ("spec", "nodeLabels"), {}),
        "ResourceFlavor/gb200: spec: at least one nodeLabel is required when topology is set"),
    "HyperNode regex that does not compile": (
        _changed(HYPERNODE, ("spec", "members", 1, "selector", "regexMatch", "pattern"), "^dgx-(0"),
        "HyperNode/su1-leaf01: spec.members[1].selector.regexMatch.pattern: invalid: missing ), unterminated "
        "subpattern at position 5"),
    "SR-IOV resource name with '-'": (
        _changed(SRIOV_POLICY, ("spec", "resourceName"), "rail-0"),
        "SriovNetworkNodePolicy/rail0: spec.resourceName: 'rail-0' contains invalid characters (^[a-zA-Z0-9_]+$)"),
    "SR-IOV vfio-pci with RDMA": (
        _changed(SRIOV_POLICY, ("spec", "deviceType"), "vfio-pci"),
        "SriovNetworkNodePolicy/rail0: spec.deviceType: 'vfio-pci' conflicts with 'isRdma: true'"),
    "IPPool gateway outside the subnet": (
        _changed(IPPOOL, ("spec", "gateway"), "10.10.1.1"),
        "IPPool/rail0: spec.gateway: '10.10.1.1' is not part of the subnet"),
    "IPPool block larger than the subnet": (
        _changed(IPPOOL, ("spec", "perNodeBlockSize"), 255),
        "IPPool/rail0: spec.perNodeBlockSize: 255 is larger then amount of IPs available in the subnet"),
}
BAD.update(ADMISSION)


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_invalid_object_fails_naming_the_field(case):
    obj, problem = BAD[case]
    assert validate_object(obj) == [problem]


def test_a_duplicate_key_of_a_list_map_fails():
    """``x-kubernetes-list-type: map``: ComputeDomain's status.nodes is keyed by name (DRA driver v25.12.0)."""
    obj = copy.deepcopy(GOOD[COMPUTE_DOMAIN])
    node = {"name": "t01", "ipAddress": "10.0.0.1", "cliqueID": "c.1", "index": 0, "status": "Ready"}
    obj["status"] = {"status": "Ready", "nodes": [node, dict(node, index=1)]}
    problems = validate_object(obj)
    assert problems == ["ComputeDomain/imex-channel-injection: status.nodes: duplicate entry for list-map keys "
                        "['name']: (\"'t01'\",)"]


def test_a_stream_is_every_object_and_an_empty_one_fails():
    text = yaml.safe_dump_all([GOOD[HYPERNODE], BAD["wrong type"][0]])
    assert validate_stream(text) == ["HyperNode/su1-leaf01: spec.tier: 'leaf' is not of type 'integer'"]
    assert validate_stream("# nothing\n") == ["the stream holds no object"]


# --- the rendered blueprints ---------------------------------------------------------------------------------------

SCHEDULERS_AND_OPERATORS = {
    "v1 Node", "scheduling.volcano.sh/v1beta1 Queue", "topology.volcano.sh/v1alpha1 HyperNode", "v1 ConfigMap",
    "kueue.x-k8s.io/v1beta2 Topology", "kueue.x-k8s.io/v1beta2 ResourceFlavor", "kueue.x-k8s.io/v1beta2 ClusterQueue",
    "kueue.x-k8s.io/v1beta2 LocalQueue", "kai.scheduler/v1alpha1 Topology", "slinky.slurm.net/v1beta1 NodeSet",
    "slinky.slurm.net/v1beta1 LoginSet", "nvidia.com/v1 ClusterPolicy", "mellanox.com/v1alpha1 NicClusterPolicy"}
"""what the three blueprints' ``kubernetes:`` sections choose alike: all three schedulers, Slinky, both operators.
No nv-ipam IPPool: the two InfiniBand fabrics give pods RDMA without IP addresses, and the RoCE fabric's rails are
/31 point-to-point links with no subnet to share with pods (clusterctl/targets/kubernetes/network_operator.py);
the IPPool schema is exercised by the literal objects above."""

EXPECTED_KINDS = {
    "gb200-nvl72-8rack": SCHEDULERS_AND_OPERATORS | {"resource.nvidia.com/v1beta1 ComputeDomain"},  # dra_driver
    "dgx-h100-superpod-4su": SCHEDULERS_AND_OPERATORS,  # rdma: shared (the RDMA shared device plugin)
    "hgx-h200-roce-1024": SCHEDULERS_AND_OPERATORS | {"sriovnetwork.openshift.io/v1 SriovNetworkNodePolicy"},
}


def _is_object_stream(path: str) -> bool:
    """A file of Kubernetes objects: a ``kubernetes/**/*.yaml`` outside the Topograph model and Helm values."""
    parts = path.split("/")
    return (parts[0] == "kubernetes" and path.endswith(".yaml") and "topograph" not in parts[1:2]
            and "helm" not in parts)


CHOSEN_RELEASES = {
    "gb200-nvl72-8rack": {"gpu-operator": "25.3.4", "network-operator": "25.7.0", "k8s-dra-driver-gpu": "25.8.0"},
    "dgx-h100-superpod-4su": {"gpu-operator": "25.3.4", "network-operator": "25.7.0"},
    "hgx-h200-roce-1024": {"gpu-operator": "25.3.4", "network-operator": "25.7.0"},
}
"""the operator releases each blueprint's ``kubernetes:`` section names (read off blueprints/*.yaml)"""


@pytest.fixture(scope="module", params=sorted(EXPECTED_KINDS))
def rendered(request) -> tuple[str, dict[str, list[dict]]]:
    """(blueprint, {object stream path: its objects}) of ``render --target kubernetes --target slurm``."""
    from clusterctl.targets import render_targets
    from tests.helpers import plan_of, shipped

    plan = plan_of(shipped(request.param))
    k = plan.kubernetes
    chosen = {"gpu-operator": k.gpu_operator, "network-operator": k.network_operator,
              "k8s-dra-driver-gpu": k.dra_driver}
    assert {p: str(v) for p, v in chosen.items() if v} == CHOSEN_RELEASES[request.param]
    files = render_targets(plan, ["kubernetes", "slurm"])
    streams = {path: [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
               for path, text in sorted(files.items()) if _is_object_stream(path)}
    return request.param, streams


def test_every_emitted_object_validates(rendered):
    """Against the newest CRDs, and against those of the operator releases the blueprint names."""
    name, streams = rendered
    at_release = tuple(release_crds(p, v) for p, v in sorted(CHOSEN_RELEASES[name].items()))
    problems = [f"{path}: {p}" for path, docs in streams.items() for d in docs
                for releases in ((), at_release) for p in validate_object(d, releases)]
    assert problems == []
    assert {f"{d['apiVersion']} {d['kind']}" for docs in streams.values() for d in docs} == EXPECTED_KINDS[name]
    assert all(streams.values()), f"empty streams: {[p for p, d in streams.items() if not d]}"


def test_a_mutated_emitted_object_fails(rendered):
    """The check can fail on what the target writes: a HyperNode with tier "x", a Node label value of 64
    characters, a field no schema has."""
    _, streams = rendered
    hypernode = copy.deepcopy(next(d for d in streams["kubernetes/volcano/hypernodes.yaml"]))
    hypernode["spec"]["tier"] = "x"
    assert validate_object(hypernode) == [
        f"HyperNode/{hypernode['metadata']['name']}: spec.tier: 'x' is not of type 'integer'"]
    node = copy.deepcopy(streams["kubernetes/nodes.yaml"][0])
    key = next(k for k in node["metadata"]["labels"] if k.startswith("network.topology.nvidia.com/"))
    node["metadata"]["labels"][key] = "v" * 64
    node.setdefault("spec", {})["gpus"] = 8
    assert validate_object(node) == [
        f"Node/{node['metadata']['name']}: spec: Additional properties are not allowed ('gpus' was unexpected)",
        f"Node/{node['metadata']['name']}: metadata.labels[{key!r}]: value '{'v' * 64}' longer than 63 characters"]


# --- the validator's reading of the Kubernetes extensions and its data ---------------------------------------------

def test_the_kubernetes_extensions_read_as_the_api_server_reads_them():
    """apiextensions.k8s.io/v1 structural schemas: a closed object, nullable, int-or-string, preserved unknown
    fields, an embedded resource (none of the vendored CRDs has one), a set."""
    schema = {"type": "object", "properties": {
        "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
        "nullable": {"type": "string", "nullable": True},
        "port": {"x-kubernetes-int-or-string": True},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        "set": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}}
    validator = StructuralValidator(to_jsonschema(schema))
    good = {"closed": {"a": "x"}, "nullable": None, "port": "http", "open": {"any": {"thing": 1}},
            "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
            "set": ["a", "b"]}
    assert schema_problems(validator, good) == []
    bad = {"closed": {"a": "x", "b": 1}, "port": 1.5, "embedded": {"status": {}}, "set": ["a", "a"], "extra": 1}
    assert schema_problems(validator, bad) == [
        "(object): Additional properties are not allowed ('extra' was unexpected)",
        "closed: Additional properties are not allowed ('b' was unexpected)",
        "embedded: Additional properties are not allowed ('status' was unexpected)",
        "port: 1.5 is not valid under any of the given schemas",
        "set: ['a', 'a'] has non-unique elements"]


def test_every_vendored_kind_is_exercised_by_a_literal_or_upstream_object():
    examples = GOOD + [d for p in SAMPLES.glob("*.yaml") for d in yaml.safe_load_all(p.read_text()) if d]
    exercised = {(o["apiVersion"].rpartition("/")[0], o["kind"]) for o in examples}
    assert set(crd_index()) - exercised == set()


def test_sources_name_every_vendored_file():
    """SOURCES.md has a row per vendored CRD and sample (repository, path, tag, commit), and no row without one."""
    text = (CRDS / "SOURCES.md").read_text()
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and ".yaml" in line}
    files = ({str(p.relative_to(CRDS)) for p in CRDS.rglob("*.yaml")} | {p.name for p in SAMPLES.glob("*.yaml")}
             | {str(p.relative_to(RELEASE_CRD_DIR)) for p in RELEASE_CRD_DIR.rglob("*.yaml")})
    assert rows == files


def test_an_object_is_held_to_the_release_it_is_written_for():
    """GPU Operator v26.7.0's ClusterPolicy has ``kataSandboxDevicePlugin``, v25.3.4's has not; v25.3.4 requires
    ``operator.defaultRuntime`` but defaults it (docker), so leaving it out is valid: defaults come first."""
    policy = _without_nulls(yaml.safe_load((SAMPLES / "gpu-operator-clusterpolicy.yaml").read_text()))
    v25_3_4 = (release_crds("gpu-operator", "25.3.4"),)
    assert validate_object(policy, v25_3_4) == [  # the v26.7.0 sample's fields that v25.3.4 does not know
        "ClusterPolicy/gpu-cluster-policy: spec.driver.licensingConfig: Additional properties are not allowed "
        "('secretName' was unexpected)",
        "ClusterPolicy/gpu-cluster-policy: spec.vgpuManager: Additional properties are not allowed "
        "('kernelModuleConfig' was unexpected)"]
    del policy["spec"]["driver"]["licensingConfig"]["secretName"], policy["spec"]["vgpuManager"]["kernelModuleConfig"]
    assert "defaultRuntime" not in policy["spec"]["operator"]
    assert validate_object(policy) == validate_object(policy, v25_3_4) == []
    policy["spec"]["kataSandboxDevicePlugin"] = {"enabled": False}
    assert validate_object(policy) == []
    assert validate_object(policy, v25_3_4) == [
        "ClusterPolicy/gpu-cluster-policy: spec: Additional properties are not allowed ('kataSandboxDevicePlugin' "
        "was unexpected)"]
    with pytest.raises(LookupError, match="no CRDs of gpu-operator 24.9.0 vendored"):
        release_crds("gpu-operator", "24.9.0")
