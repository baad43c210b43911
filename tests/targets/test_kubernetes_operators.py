"""The kubernetes target's Slinky, GPU Operator, Network Operator and ComputeDomain files, on the shipped GB200
NVL72 (8 racks x 18 trays, 4 GPUs and 4 InfiniBand rails per tray, IPoIB pool 10.50.0.0/22), DGX H100 SuperPOD
4 SU (127 DGX H100 in this blueprint, 8 InfiniBand rails named ibp24s0 ... ibp220s0 by the DGX H100 User Guide)
and H200 RoCE (128 HGX H200, 8 RoCE rails, a /31 per port) blueprints. Expected values are hand-counted from the
blueprints and the upstream release tables (clusterctl/catalog/kubernetes_operators.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterctl.hostlist import expand
from clusterctl.plan.kube_topology import kube_topology
from clusterctl.targets import RenderError, render_targets
from clusterctl.targets.kubernetes import compute_domains, gpu_operator, network_operator, slinky
from tests.kubernetes_schema import release_crds, validate_object
from tests.helpers import plan_of, shipped


def files_of(data: dict, part) -> dict[str, str]:
    plan = plan_of(data)
    return part.render(plan, kube_topology(plan))


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def gb200(**kubernetes) -> dict:
    data = shipped("gb200-nvl72-8rack")
    data["kubernetes"].update({"gpu_operator": "25.3.4", "network_operator": "25.7.0", "dra_driver": "25.8.0",
                               **kubernetes})
    data["software"].update(driver="570", doca="2.10.0")
    return data


# --- ComputeDomains ---------------------------------------------------------------------------------------------

def test_a_compute_domain_per_nvl72_rack():
    (cds,) = [docs(t) for t in files_of(gb200(), compute_domains).values()]
    assert [d["metadata"]["name"] for d in cds] == [f"nvl0{k}" for k in range(1, 9)]
    assert cds[0] == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                      "metadata": {"name": "nvl01", "namespace": "training"},
                      "spec": {"numNodes": 18, "channel": {"resourceClaimTemplate": {"name": "nvl01-channel"}}}}


def test_compute_domain_nodes_chosen_and_refused_beyond_the_rack():
    (cds,) = [docs(t) for t in files_of(gb200(compute_domain_nodes=9), compute_domains).values()]
    assert {d["spec"]["numNodes"] for d in cds} == {9}
    with pytest.raises(RenderError, match="asks 19 nodes per ComputeDomain but NVLink domain nvl01 has 18") as err:
        files_of(gb200(compute_domain_nodes=19), compute_domains)
    assert err.value.path == ("kubernetes", "compute_domain_nodes")


def test_no_compute_domains_without_multi_node_nvlink_or_a_dra_release():
    superpod = shipped("dgx-h100-superpod-4su")
    superpod["kubernetes"]["dra_driver"] = "0.4.1"
    assert files_of(superpod, compute_domains) == {}
    data = gb200()
    del data["kubernetes"]["dra_driver"]
    assert files_of(data, compute_domains) == {}


def test_unknown_release_is_refused_where_k8s004_points():
    with pytest.raises(RenderError, match="DRA driver 9.9.9, a release clusterctl has no table for") as err:
        files_of(gb200(dra_driver="9.9.9"), compute_domains)
    assert err.value.path == ("kubernetes", "dra_driver")


# --- GPU Operator -----------------------------------------------------------------------------------------------

def test_cluster_policy_deploys_the_matrix_driver_with_gpudirect_rdma():
    (policy,) = docs(files_of(gb200(), gpu_operator)["kubernetes/gpu-operator/clusterpolicy.yaml"])
    assert policy["apiVersion"] == "nvidia.com/v1" and policy["kind"] == "ClusterPolicy"
    spec = policy["spec"]
    # 25.3.4 lists 570.172.08, 570.158.01, 570.148.08; DOCA 2.10.0 is no container of Network Operator 25.7.0,
    # so DOCA-OFED is the host's
    assert spec["driver"] == {"enabled": True, "repository": "nvcr.io/nvidia", "image": "driver",
                              "version": "570.172.08",
                              "manager": {"repository": "nvcr.io/nvidia/cloud-native", "image": "k8s-driver-manager",
                                          "version": "v0.8.1"},
                              "rdma": {"enabled": True, "useHostMofed": True}}
    assert spec["toolkit"]["version"] == "v1.17.8-ubuntu20.04"   # NVIDIA/gpu-operator values.yaml at v25.3.4
    assert spec["devicePlugin"]["version"] == spec["gfd"]["version"] == "v0.17.4"
    assert spec["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                  "effect": "NoSchedule"}]
    assert spec["validator"]["version"] == "v25.3.4"


def test_cluster_policy_leaves_an_unlisted_driver_to_the_host():
    text = files_of(gb200(gpu_operator="26.7.0"), gpu_operator)["kubernetes/gpu-operator/clusterpolicy.yaml"]
    (policy,) = docs(text)
    assert policy["spec"]["driver"] == {"enabled": False}
    assert "the host's driver (software.driver 570 is not in this release's matrix" in text


def test_doca_driver_container_makes_gpudirect_use_it():
    data = gb200(network_operator="26.4.1")
    data["software"]["doca"] = "3.4.1"
    (policy,) = docs(files_of(data, gpu_operator)["kubernetes/gpu-operator/clusterpolicy.yaml"])
    assert policy["spec"]["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}


# --- Network Operator -------------------------------------------------------------------------------------------

def test_a_shared_rdma_resource_per_rail():
    files = files_of(shipped("dgx-h100-superpod-4su"), network_operator)
    (policy,) = docs(files["kubernetes/network-operator/nicclusterpolicy.yaml"])
    assert policy["metadata"] == {"name": "nic-cluster-policy"}
    plugin = policy["spec"]["rdmaSharedDevicePlugin"]
    assert (plugin["image"], plugin["repository"], plugin["version"]) == (
        "k8s-rdma-shared-dev-plugin", "nvcr.io/nvidia/mellanox", "network-operator-v25.7.0")
    config = yaml.safe_load(plugin["config"])["configList"]
    netdevs = ["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"]
    assert config == [{"resourceName": f"rail{k}", "rdmaHcaMax": 63, "selectors": {"ifNames": [n]}}
                      for k, n in enumerate(netdevs)]
    assert "ofedDriver" not in policy["spec"]   # DOCA 2.7.0: no container of 25.7.0, the host's DOCA-OFED


def test_doca_driver_container_when_the_release_ships_it():
    data = shipped("dgx-h100-superpod-4su")
    data["software"]["doca"] = "3.1.0"
    (policy,) = docs(files_of(data, network_operator)["kubernetes/network-operator/nicclusterpolicy.yaml"])
    ofed = policy["spec"]["ofedDriver"]
    assert (ofed["image"], ofed["repository"], ofed["version"]) == (
        "doca-driver", "nvcr.io/nvidia/mellanox", "doca3.1.0-25.07-0.9.7.0-0")


def test_ip_pool_from_the_compute_pool_with_the_hosts_addresses_excluded():
    data = gb200()
    data["addressing"]["ipoib"]["cidr"] = "10.50.0.0/21"
    (pool,) = docs(files_of(data, network_operator)["kubernetes/network-operator/ippools.yaml"])
    # 16 reserved addresses (addressing's default), then 144 trays x 4 rails = 576 host addresses: .17 to 2.80
    assert pool == {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
                    "metadata": {"name": "gb200-compute", "namespace": "nvidia-network-operator"},
                    "spec": {"subnet": "10.50.0.0/21", "perNodeBlockSize": 4,
                             "exclusions": [{"startIP": "10.50.0.1", "endIP": "10.50.0.16"},
                                            {"startIP": "10.50.0.17", "endIP": "10.50.2.80"}],
                             "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": "clusterctl.dev/node-group", "operator": "In", "values": ["gb200"]}]}]}}}
    # the shipped blueprints emit no IPPool (their compute pools have no room for pods): this one is validated here
    assert validate_object(pool) == []
    assert validate_object(pool, releases=(release_crds("network-operator", "25.7.0"),)) == []


def test_no_ip_pool_when_the_compute_pool_has_no_room():
    files = files_of(gb200(), network_operator)   # /22: 1022 - 16 - 576 = 430 left, 576 wanted
    assert "kubernetes/network-operator/ippools.yaml" not in files
    assert ("compute pool 10.50.0.0/22 has 430 addresses left after the hosts', fewer than 576"
            in files["kubernetes/network-operator/nicclusterpolicy.yaml"])


def test_sriov_policy_per_rail_on_roce():
    files = files_of(shipped("hgx-h200-roce-1024"), network_operator)
    policies = docs(files["kubernetes/network-operator/sriov.yaml"])
    assert [p["metadata"]["name"] for p in policies] == [f"gpu-rail{k}" for k in range(8)]
    assert policies[0]["spec"] == {"resourceName": "rail0", "nodeSelector": {"clusterctl.dev/node-group": "gpu"},
                                   "numVfs": 8, "nicSelector": {"vendor": "15b3", "pfNames": ["enp24s0np0"]},
                                   "deviceType": "netdevice", "isRdma": True, "linkType": "eth"}
    (policy,) = docs(files["kubernetes/network-operator/nicclusterpolicy.yaml"])
    assert "rdmaSharedDevicePlugin" not in policy["spec"]
    assert "ippools" not in " ".join(files)   # a /31 per port: no subnet for pods


# --- Slinky -----------------------------------------------------------------------------------------------------

def test_slinky_values_nodesets_and_partitions():
    files = files_of(gb200(), slinky)
    values = yaml.safe_load(files["kubernetes/slinky/helm/values.yaml"])
    assert values["nodesets"] == {"gb200": {
        "replicas": 144,
        # no source names the GB200 trays' IPoIB netdevs: one RDMA resource over every NVIDIA NIC
        "slurmd": {"resources": {"limits": {"nvidia.com/gpu": 4, "rdma/rdma_shared_device_a": 1},
                                 "claims": [{"name": "compute-domain-channel"}]}},
        "extraConfMap": {"Gres": ["gpu:gb200:4"]},
        "podSpec": {"nodeSelector": {"clusterctl.dev/node-group": "gb200"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "resourceClaims": [{"name": "compute-domain-channel",
                                        "resourceClaimTemplateName": "slurm-gb200-channel"}]}}}
    assert values["partitions"] == {"all": {"enabled": False}, "batch": {
        "enabled": True, "nodesets": ["gb200"], "configMap": {"Default": "YES", "MaxTime": "7-00:00:00",
                                                              "State": "UP"}}}
    assert values["loginsets"] == {"login": {"replicas": 2}}
    assert values["controller"] == {"extraConfMap": {"SwitchType": "switch/nvidia_imex"}}
    assert values["configFiles"]["topology.yaml"] == files["kubernetes/slinky/helm/topology.yaml"]


def test_slinky_nodesets_on_nvl72_claim_imex_channels_of_their_compute_domain():
    # Slinky docs/installation.md "With IMEX": every channel to the slurmd pods, numNodes 0
    (cd,) = docs(files_of(gb200(), slinky)["kubernetes/slinky/computedomains.yaml"])
    assert cd == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                  "metadata": {"name": "slurm-gb200", "namespace": "training"},
                  "spec": {"numNodes": 0, "channel": {"allocationMode": "All",
                                                      "resourceClaimTemplate": {"name": "slurm-gb200-channel"}}}}
    data = gb200()
    del data["kubernetes"]["dra_driver"]
    files = files_of(data, slinky)
    assert "kubernetes/slinky/computedomains.yaml" not in files
    assert "claims" not in yaml.safe_load(files["kubernetes/slinky/helm/values.yaml"])["nodesets"]["gb200"]["slurmd"]


def test_slinky_topology_is_the_fabric_tree_and_the_nvl72_blocks():
    topology = yaml.safe_load(files_of(gb200(), slinky)["kubernetes/slinky/helm/topology.yaml"])
    tree, block = topology
    assert (tree["topology"], tree["cluster_default"], block["topology"], block["cluster_default"]) == (
        "fabric", False, "nvlink", True)
    # 32-tray scalable units under one spine; 18-tray NVL72 racks
    assert [s["switch"] for s in tree["tree"]["switches"]] == ["ib-su1", "ib-su2", "ib-su3", "ib-su4", "ib-su5",
                                                               "ib-spine"]
    assert tree["tree"]["switches"][0]["nodes"] == "gb[001-032]"
    assert block["block"]["blocks"][0] == {"block": "nvl01", "nodes": "gb[001-018]"}
    assert len(block["block"]["blocks"]) == 8


def test_slinky_custom_resources_match_the_values():
    data = gb200(rdma="shared")
    data["kubernetes"]["network_operator"] = None
    nodeset, loginset = docs(files_of(data, slinky)["kubernetes/slinky/nodesets.yaml"])
    assert nodeset["apiVersion"] == "slinky.slurm.net/v1beta1" and nodeset["kind"] == "NodeSet"
    assert nodeset["metadata"] == {"name": "slurm-worker-gb200", "namespace": "training"}
    assert nodeset["spec"]["controllerRef"] == {"name": "slurm"}
    assert nodeset["spec"]["replicas"] == 144
    assert nodeset["spec"]["extraConf"] == "Gres=gpu:gb200:4"
    assert nodeset["spec"]["template"]["spec"]["hostname"] == "gb200-"
    assert loginset["kind"] == "LoginSet"
    assert loginset["spec"]["sssdConfRef"] == {"name": "slurm-sssd-conf", "key": "sssd.conf"}


def test_slinky_pods_request_every_rail():
    values = yaml.safe_load(files_of(shipped("dgx-h100-superpod-4su"), slinky)["kubernetes/slinky/helm/values.yaml"])
    (entry,) = values["nodesets"].values()
    assert entry["slurmd"]["resources"]["limits"] == {"nvidia.com/gpu": 8, **{f"rdma/rail{k}": 1 for k in range(8)}}


def test_no_slinky_without_it():
    assert files_of(gb200(slinky=False), slinky) == {}


UPSTREAM_VALUES = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "data" / "kubernetes" / "helm" / "slurm-values-v1.2.1.yaml").read_text())
FREE = {"podSpec", "resources", "extraConfMap", "configMap", "configFiles"}
"""keys whose values are free maps in the chart (a PodSpec, container resources, slurm.conf options, files)"""


def unknown_keys(ours: dict, theirs: dict, where: str = "") -> list[str]:
    out = []
    for key, value in ours.items():
        if key not in theirs:
            out.append(f"{where}{key}")
        elif isinstance(value, dict) and key not in FREE:
            out.extend(unknown_keys(value, theirs[key] or {}, f"{where}{key}."))
    return out


@pytest.mark.parametrize("name", ["gb200-nvl72-8rack", "dgx-h100-superpod-4su", "hgx-h200-roce-1024"])
def test_slinky_values_are_keys_of_the_chart(name):
    values = yaml.safe_load(files_of(shipped(name), slinky)["kubernetes/slinky/helm/values.yaml"])
    assert unknown_keys({k: v for k, v in values.items() if k not in ("nodesets", "loginsets", "partitions")},
                        UPSTREAM_VALUES) == []
    for key, entry in values["nodesets"].items():
        assert unknown_keys(entry, UPSTREAM_VALUES["nodesetDefaults"], f"nodesets.{key}.") == []
    for key, entry in values.get("loginsets", {}).items():
        assert unknown_keys(entry, UPSTREAM_VALUES["loginsetDefaults"], f"loginsets.{key}.") == []
    for key, entry in values["partitions"].items():
        assert unknown_keys(entry, UPSTREAM_VALUES["partitions"]["all"], f"partitions.{key}.") == []


@pytest.mark.parametrize("name", ["gb200-nvl72-8rack", "dgx-h100-superpod-4su", "hgx-h200-roce-1024"])
def test_slinky_topology_the_node_annotations_and_the_compute_domains_agree_with_topology_conf(name):
    """Every host's Slinky annotation names a switch that holds it and a block that holds it in Slinky's
    topology.yaml; that file's switches and blocks are topology.conf's; the ComputeDomains are its blocks."""
    data = shipped(name)
    data["kubernetes"]["dra_driver"] = "25.8.0"
    files = render_targets(plan_of(data), ["slurm", "kubernetes"])
    data["slurm"]["topology"] = "tree"
    conf = render_targets(plan_of(data), ["slurm"])["slurm/topology.conf"]
    switches = {kv["SwitchName"]: set(expand(kv["Nodes"])) for kv in
                (dict(i.split("=", 1) for i in line.split()) for line in conf.splitlines()
                 if line.startswith("SwitchName")) if "Nodes" in kv}
    topology = {t["topology"]: t for t in yaml.safe_load(files["kubernetes/slinky/helm/topology.yaml"])}
    assert {s["switch"]: set(expand(s["nodes"])) for s in topology["fabric"]["tree"]["switches"] if "nodes" in s} \
        == switches
    blocks = {b["block"]: set(expand(b["nodes"])) for b in topology["nvlink"]["block"]["blocks"]} \
        if "nvlink" in topology else {}
    for node in docs(files["kubernetes/nodes.yaml"]):
        units = dict(u.split(":") for u in node["metadata"]["annotations"]["topology.slinky.slurm.net/spec"].split(","))
        assert node["metadata"]["name"] in switches[units["fabric"]]
        assert "nvlink" not in units or node["metadata"]["name"] in blocks[units["nvlink"]]
    domains = docs(files.get("kubernetes/dra/computedomains.yaml", ""))
    assert {d["metadata"]["name"]: d["spec"]["numNodes"] for d in domains} == {b: len(h) for b, h in blocks.items()}
    assert len(blocks) == (8 if name.startswith("gb200") else 0)
