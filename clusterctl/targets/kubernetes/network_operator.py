"""NVIDIA Network Operator: the RDMA NICs of every rail in pods, from the plan's ports and addresses.

Written for ``kubernetes.network_operator`` (a release of clusterctl/catalog/kubernetes_operators.yaml; fields
from Mellanox/network-operator at that tag, api/v1alpha1/nicclusterpolicy_types.go and
example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-nvidia-ipam.yaml at v26.4.1):

- ``kubernetes/network-operator/nicclusterpolicy.yaml``: the one ``NicClusterPolicy`` (``mellanox.com/v1alpha1``,
  named ``nic-cluster-policy``, the only name the operator reconciles). ``ofedDriver`` is the release's
  doca-driver container of ``software.doca`` (:func:`clusterctl.plan.kube_operators.doca_driver`); without one the
  host's DOCA-OFED serves (where the roles install ``software.doca``).
  With ``rdma: shared`` the RDMA shared device plugin advertises one resource per rail, ``rdma/rail<k>``
  (k = the rail, the compute port index of :mod:`clusterctl.plan.interfaces`), selecting the rail's netdev
  (``selectors.ifNames``, Mellanox/k8s-rdma-shared-dev-plugin README; ``rdmaHcaMax`` 63 as the operator's
  example); multus, the CNI plugins and nv-ipam are deployed for the pods' rail interfaces.
- ``kubernetes/network-operator/ippools.yaml``: an nv-ipam ``IPPool`` (``nv-ipam.nvidia.com/v1alpha1``,
  Mellanox/nvidia-k8s-ipam v0.4.0) per worker group on a compute address pool of the plan: the pool's subnet,
  the hosts' own planned addresses excluded, ``perNodeBlockSize`` one address per rail (one training pod per
  node, an interface on every rail), selecting the group's nodes. A point-to-point pool (RoCE, L3 to the host:
  a /31 per port) has no subnet to share with pods: no IPPool (the pods use the hosts' rail addresses).
- ``kubernetes/network-operator/sriov.yaml`` with ``rdma: sriov``: a ``SriovNetworkNodePolicy``
  (``sriovnetwork.openshift.io/v1``, k8snetworkplumbingwg/sriov-network-operator v1.6.0, as the Network Operator
  example/sriov-network/sriov-network-node-policy-legacy.yaml) per worker group and rail: the rail's PF
  (``nicSelector.pfNames``), ``numVfs`` the node's GPUs (a VF per GPU on every rail), ``isRdma``, resource
  ``nvidia.com/rail<k>``; the SR-IOV Network Operator (a sub-chart of the Network Operator) runs its own device
  plugin, so the NicClusterPolicy carries no RDMA device plugin then.
"""

from __future__ import annotations

import ipaddress
import json

from clusterctl.plan.allocations import group_block
from clusterctl.plan.interfaces import compute_ports
from clusterctl.plan.kube_names import group_object_name
from clusterctl.plan.kube_operators import doca_driver, network_operator_release
from clusterctl.plan.kube_topology import KubeTopology, worker_groups
from clusterctl.plan.model import AddressPool, ClusterPlan, GroupPlan
from clusterctl.targets.kubernetes.nodes import NODE_GROUP_LABEL
from clusterctl.targets.kubernetes.objects import dns_subdomain, label_value, stream
from clusterctl.targets.kubernetes.releases import refuse_unknown

NAMESPACE = "nvidia-network-operator"
"""the Network Operator's namespace (its Helm chart's and examples'): nv-ipam pools and SR-IOV policies live there"""

POLICY = "kubernetes/network-operator/nicclusterpolicy.yaml"
IPPOOLS = "kubernetes/network-operator/ippools.yaml"
SRIOV = "kubernetes/network-operator/sriov.yaml"

SHARED_PREFIX = "rdma"
"""the RDMA shared device plugin's default resource prefix"""
SRIOV_PREFIX = "nvidia.com"
"""the resource prefix the Network Operator configures its SR-IOV Network Operator with"""
MELLANOX_VENDOR = "15b3"
FALLBACK_RESOURCE = "rdma_shared_device_a"
"""the one resource when no rail is named (the operator's example name)"""


def rail_resource(k: int) -> str:
    return f"rail{k}"


def rail_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """The worker groups with RDMA NICs on a compute fabric (the pods' rails)."""
    return [g for g in worker_groups(plan) if g.type.nic_count("compute") and plan.compute_fabric(g) is not None]


def pod_rdma_resources(plan: ClusterPlan, g: GroupPlan) -> dict[str, int]:
    """What a pod that uses every rail of a node of ``g`` requests: one of each of its rails' resources ({} without
    a Network Operator or rails)."""
    k = plan.kubernetes
    if k is None or k.network_operator is None or g not in rail_groups(plan):
        return {}
    if k.rdma == "sriov":
        return {f"{SRIOV_PREFIX}/{rail_resource(p.index)}": 1 for p in compute_ports(plan, g.type) if p.netdev}
    netdevs = {p.netdev for p in compute_ports(plan, g.type)}
    return {f"{SHARED_PREFIX}/{entry['resourceName']}": 1 for entry in shared_resources(plan)
            if "vendors" in entry["selectors"] or netdevs & set(entry["selectors"]["ifNames"])}


def rail_netdevs(plan: ClusterPlan) -> dict[int, list[str]]:
    """rail -> the netdev names of that rail's port on every worker group (from plan/interfaces.py), in order;
    a rail whose port no source names is left out."""
    out: dict[int, list[str]] = {}
    for g in rail_groups(plan):
        for p in compute_ports(plan, g.type):
            if p.netdev is not None and p.netdev not in out.setdefault(p.index, []):
                out[p.index].append(p.netdev)
    return {k: v for k, v in sorted(out.items()) if v}


def _image(release, image: str) -> dict:
    return {"image": image, "repository": release.repository, "version": release.component_version}


def shared_resources(plan: ClusterPlan) -> list[dict]:
    """The RDMA shared device plugin's resources: one per rail, selecting the rail's netdevs; when no source
    names them (NET001), one resource over every NVIDIA NIC."""
    entries = [{"resourceName": rail_resource(k), "rdmaHcaMax": 63, "selectors": {"ifNames": names}}
               for k, names in rail_netdevs(plan).items()]
    return entries or [{"resourceName": FALLBACK_RESOURCE, "rdmaHcaMax": 63,
                        "selectors": {"vendors": [MELLANOX_VENDOR]}}]


def shared_plugin_config(plan: ClusterPlan) -> str:
    """The RDMA shared device plugin's configuration (JSON, as the plugin reads it)."""
    return json.dumps({"configList": shared_resources(plan)}, indent=2) + "\n"


def nic_cluster_policy(plan: ClusterPlan) -> dict:
    release = network_operator_release(plan)
    spec: dict = {}
    tag = doca_driver(plan)
    if tag is not None:
        spec["ofedDriver"] = {"image": "doca-driver", "repository": release.repository, "version": tag,
                              "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1,
                                                "drain": {"enable": True, "force": True, "deleteEmptyDir": True,
                                                          "timeoutSeconds": 300}}}
    if plan.kubernetes.rdma == "shared":
        spec["rdmaSharedDevicePlugin"] = {**_image(release, "k8s-rdma-shared-dev-plugin"),
                                          "config": shared_plugin_config(plan)}
    spec["nvIpam"] = {**_image(release, "nvidia-k8s-ipam"), "enableWebhook": False}
    spec["secondaryNetwork"] = {"cniPlugins": _image(release, "plugins"), "multus": _image(release, "multus-cni")}
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"}, "spec": spec}


def _group_selector(g: GroupPlan) -> dict:
    return {NODE_GROUP_LABEL: label_value(g.name, f"node group {g.name} (label {NODE_GROUP_LABEL})",
                                          g.path + ("name",))}


def _address(pool: AddressPool, slot: int) -> str:
    return str(ipaddress.ip_network(pool.cidr).network_address + pool.first_host_offset + slot)


def ip_pool(plan: ClusterPlan, g: GroupPlan) -> tuple[dict | None, str]:
    """The group's IPPool, or None and why: no compute pool, a point-to-point one, or too few addresses left in
    the pool after the hosts' own for a block of one per rail on every node."""
    found = group_block(plan, "compute", g)
    if found is None:
        return None, f"node group {g.name} takes no address from a compute pool"
    pool, first, per_host = found
    if pool.point_to_point:
        return None, (f"node group {g.name}: compute pool {pool.cidr} is a /31 per port (L3 to the host), no subnet "
                      "to share with pods; pods use the hosts' rail addresses (hostNetwork)")
    rails = g.type.nic_count("compute")
    free, wanted = pool.capacity - pool.needed, g.count * rails
    if free < wanted:
        return None, (f"node group {g.name}: compute pool {pool.cidr} has {free} addresses left after the hosts', "
                      f"fewer than {wanted} (one per rail on each of {g.count} nodes); pods use the hosts' network "
                      "(hostNetwork) unless the pool grows")
    net = ipaddress.ip_network(pool.cidr)
    exclusions = []
    if pool.first_host_offset > 1:  # addresses the plan reserves at the start of the pool
        exclusions.append({"startIP": str(net.network_address + 1), "endIP": _address(pool, -1)})
    exclusions.append({"startIP": _address(pool, first), "endIP": _address(pool, first + g.count * per_host - 1)})
    name = dns_subdomain(f"{group_object_name(g.name)}-compute", f"the IPPool of node group {g.name}",
                         g.path + ("name",))
    selector = [{"key": key, "operator": "In", "values": [value]} for key, value in _group_selector(g).items()]
    return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"subnet": pool.cidr, "perNodeBlockSize": rails, "exclusions": exclusions,
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": selector}]}}}, ""


def sriov_policies(plan: ClusterPlan) -> list[dict]:
    """A SriovNetworkNodePolicy per worker group and rail whose port has a netdev name."""
    docs = []
    for g in rail_groups(plan):
        link = "ib" if plan.compute_fabric(g).kind == "infiniband" else "eth"
        for p in compute_ports(plan, g.type):
            if p.netdev is None:
                continue
            name = dns_subdomain(f"{group_object_name(g.name)}-{rail_resource(p.index)}",
                                 f"the SR-IOV policy of node group {g.name}", g.path + ("name",))
            docs.append({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
                         "metadata": {"name": name, "namespace": NAMESPACE},
                         "spec": {"resourceName": rail_resource(p.index), "nodeSelector": _group_selector(g),
                                  "numVfs": max(1, g.type.gpus),
                                  "nicSelector": {"vendor": MELLANOX_VENDOR, "pfNames": [p.netdev]},
                                  "deviceType": "netdevice", "isRdma": True, "linkType": link}})
    return docs


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """The Network Operator's objects; ``{}`` unless ``kubernetes.network_operator`` names a release."""
    refuse_unknown(plan, "network_operator")
    release = network_operator_release(plan)
    if release is None:
        return {}
    k = plan.kubernetes
    doca = doca_driver(plan)
    driver = (f"DOCA-OFED from the doca-driver container {doca}" if doca is not None else
              "DOCA-OFED from the host (software.doca is no container of this release, or not set)")
    pools, without = [], []
    for g in rail_groups(plan):
        pool, why = ip_pool(plan, g)
        pools.extend([pool] if pool is not None else [])
        without.extend([f"No IPPool: {why}."] if pool is None else [])
    files = {POLICY: stream([nic_cluster_policy(plan)], [
        f"NVIDIA Network Operator {k.network_operator}: {driver}; RDMA to pods: {k.rdma}.",
        "Apply after the operator's Helm chart (docs/kubernetes.md, GPU and Network Operators).", *without], plan)}
    if pools:
        files[IPPOOLS] = stream(pools, ["nv-ipam IPPools: a compute pool of the plan per node group, the hosts' "
                                        "own addresses excluded."], plan)
    if k.rdma == "sriov":
        routed = [g.name for g in rail_groups(plan)
                  if (found := group_block(plan, "compute", g)) is not None and found[0].point_to_point]
        files[SRIOV] = stream(sriov_policies(plan), [
            "SR-IOV: a VF per GPU on every rail (install the Network Operator with sriovNetworkOperator.enabled).",
            *([f"Node groups {', '.join(routed)}: the rails are L3 to the host (a /31 per port); the leaves route "
               "only the PFs' addresses, so the VFs need addresses the fabric routes, which the plan does not "
               "give (or use rdma: shared with hostNetwork pods)."] if routed else [])], plan)
    return files
