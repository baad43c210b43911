"""Slinky (SchedMD's slurm-operator): Slurm inside Kubernetes, scheduled with the plan's topology.

Written for the newest Slinky release of clusterctl/catalog/kubernetes_operators.yaml (v1.2.1, API
``slinky.slurm.net/v1beta1``; SlinkyProject/slurm-operator at tag v1.2.1, commit 87313dac), three files:

- ``kubernetes/slinky/helm/values.yaml``: values for the ``slurm`` Helm chart (``helm install slurm
  oci://ghcr.io/slinkyproject/charts/slurm -n <namespace> -f values.yaml``; keys from helm/slurm/values.yaml at
  v1.2.1): ``nodesets`` (one per compute node group: ``replicas`` its host count, ``podSpec.nodeSelector`` the
  node group label of nodes.yaml, ``slurmd.resources.limits`` its GPUs and RDMA devices, ``extraConfMap.Gres`` its
  GPUs as Slinky's docs/installation.md "With GPUs" writes them), ``partitions`` (the blueprint's Slurm partitions
  over those NodeSets, ``configMap`` with Default/MaxTime/State as slurm.conf's), ``loginsets`` (one LoginSet when
  the blueprint has login nodes), ``configFiles`` (topology.yaml, gres.conf ``AutoDetect=nvidia``) and, with
  ComputeDomains, ``controller.extraConfMap.SwitchType: switch/nvidia_imex`` (docs/installation.md "With IMEX").
- ``kubernetes/slinky/helm/topology.yaml``: Slurm's topology.yaml, written by the slurm target's own
  :func:`clusterctl.targets.slurm.topology_yaml` for the worker groups (tree ``fabric`` and, with NVL72, block
  ``nvlink``): the same switches and blocks as topology.conf. The Nodes' annotation
  ``topology.slinky.slurm.net/spec`` (nodes.yaml, from :func:`clusterctl.plan.topology.node_topology_units`)
  names a switch and a block of this file for every host; the operator copies it to the Slurm node of the NodeSet
  pod on that host (docs/usage/topology.md). The node lists name the hosts (the Kubernetes Node names), as
  Slinky's own example does: a NodeSet pod's Slurm node is named after the pod, and its place in the topology
  comes from the annotation.
- ``kubernetes/slinky/nodesets.yaml``: the same NodeSets (and LoginSet) as custom resources, for a cluster whose
  chart is installed without ``nodesets`` (GitOps): named as the chart names them (``slurm-worker-<key>``,
  ``slurm-login-<key>``), ``controllerRef`` the chart's Controller ``slurm``. Apply one of the two, not both.

The Slurm inside the pods is the chart's image release (26.05), not ``slurm.version``: Slinky ships its own.
"""

from __future__ import annotations

from clusterctl.plan.kube_names import group_object_name
from clusterctl.plan.kube_operators import compute_domains_chosen, dra_driver_release, slinky_release
from clusterctl.plan.kube_topology import KubeTopology, worker_groups
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.slurm import partition_groups
from clusterctl.targets.common import header
from clusterctl.targets.kubernetes.network_operator import pod_rdma_resources
from clusterctl.targets.kubernetes.nodes import GPU_TAINT, NODE_GROUP_LABEL
from clusterctl.targets.kubernetes.objects import dns_label, dns_subdomain, label_value, stream
from clusterctl.targets.slurm import gres_type, topology_yaml
from clusterctl.yamlout import body, comment_lines

NODESETS = "kubernetes/slinky/nodesets.yaml"
VALUES = "kubernetes/slinky/helm/values.yaml"
TOPOLOGY = "kubernetes/slinky/helm/topology.yaml"

RELEASE = "slurm"
"""the Helm release name docs/kubernetes.md installs the chart as: the chart's fullname, so its Controller is
``slurm``, its NodeSets ``slurm-worker-<key>``, its LoginSets ``slurm-login-<key>``, its sssd.conf Secret
``slurm-sssd-conf`` (helm/slurm/templates/_helpers.tpl, nodeset/_helpers.tpl, cluster/_helpers.tpl at v1.2.1)"""

LOGIN_KEY = "login"

CHANNEL_CLAIM = "compute-domain-channel"
"""the pod resource claim of a NodeSet's IMEX channels (Slinky docs/installation.md, "With IMEX")"""

COMPUTE_DOMAINS = "kubernetes/slinky/computedomains.yaml"


def _key(g: GroupPlan) -> str:
    """The NodeSet's key in the values (and its pods' host name prefix): the group's object name."""
    return dns_label(group_object_name(g.name), f"node group {g.name} (a NodeSet's key and pod host name)",
                     g.path + ("name",))


def imex_groups(plan: ClusterPlan, topo: KubeTopology) -> set[str]:
    """The worker groups whose NodeSet pods claim IMEX channels: with ComputeDomains, those of NVLink domains."""
    if not compute_domains_chosen(plan, topo):
        return set()
    return {g for g, levels in topo.group_levels.items() if "accelerator" in levels}


def channel_template(key: str) -> str:
    return f"{RELEASE}-{key}-channel"


def _slurmd(plan: ClusterPlan, g: GroupPlan, imex: bool) -> dict:
    """The slurmd container's resources: every GPU of the node and its RDMA devices (one pod per node), and the
    IMEX channel claim."""
    limits: dict[str, int] = {}
    if g.type.gpus:
        limits["nvidia.com/gpu"] = g.type.gpus
    limits.update(pod_rdma_resources(plan, g))
    resources: dict = {"limits": limits} if limits else {}
    if imex:
        resources["claims"] = [{"name": CHANNEL_CLAIM}]
    return {"resources": resources} if resources else {}


def _pod_spec(g: GroupPlan, key: str, imex: bool) -> dict:
    group = label_value(g.name, f"node group {g.name} (label {NODE_GROUP_LABEL})", g.path + ("name",))
    spec: dict = {"nodeSelector": {NODE_GROUP_LABEL: group}}
    if g.type.gpus:
        spec["tolerations"] = [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}]
    if imex:
        spec["resourceClaims"] = [{"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template(key)}]
    return spec


def _gres(g: GroupPlan) -> list[str]:
    return [f"gpu:{gres_type(g.type.gpu_model)}:{g.type.gpus}"] if g.type.gpus and g.type.gpu_model else []


def nodeset_values(plan: ClusterPlan, g: GroupPlan, key: str, imex: bool) -> dict:
    """One entry of the chart's ``nodesets``."""
    entry: dict = {"replicas": g.count}
    slurmd = _slurmd(plan, g, imex)
    if slurmd:
        entry["slurmd"] = slurmd
    if _gres(g):
        entry["extraConfMap"] = {"Gres": _gres(g)}
    entry["podSpec"] = _pod_spec(g, key, imex)
    return entry


def partitions(plan: ClusterPlan, keys: dict[str, str]) -> dict:
    """The chart's ``partitions``: each Slurm partition over the NodeSets of its compute groups (a partition of
    no compute group has no NodeSet: left out); the chart's example partition ``all`` stays disabled."""
    out: dict = {}
    default_done = False
    for part in plan.slurm.partitions:
        nodesets = [keys[g.name] for g in partition_groups(plan, part) if g.name in keys]
        if not nodesets:
            continue
        config: dict = {}
        if part.default and not default_done:
            config["Default"] = "YES"
            default_done = True
        config["MaxTime"] = part.max_time
        config["State"] = "UP"
        out[part.name] = {"enabled": True, "nodesets": nodesets, "configMap": config}
    return out


def login_count(plan: ClusterPlan) -> int:
    return sum(g.count for g in plan.groups if g.role == "login")


def values(plan: ClusterPlan, topo: KubeTopology, topology: str) -> dict:
    """The Helm values of the ``slurm`` chart."""
    groups = [g for g in worker_groups(plan) if g.name in topo.groups]
    keys = {g.name: _key(g) for g in groups}
    config_files = {"topology.yaml": topology}
    if any(g.type.gpus for g in groups):
        config_files["gres.conf"] = "AutoDetect=nvidia\n"
    out: dict = {"configFiles": config_files}
    if compute_domains_chosen(plan, topo):
        out["controller"] = {"extraConfMap": {"SwitchType": "switch/nvidia_imex"}}
    if login_count(plan):
        out["loginsets"] = {LOGIN_KEY: {"replicas": login_count(plan)}}
    imex = imex_groups(plan, topo)
    out["nodesets"] = {keys[g.name]: nodeset_values(plan, g, keys[g.name], g.name in imex) for g in groups}
    out["partitions"] = {"all": {"enabled": False}, **partitions(plan, keys)}
    return out


def custom_resources(plan: ClusterPlan, values_: dict) -> list[dict]:
    """The chart's NodeSets and LoginSet as the custom resources it would create from ``values_``."""
    _, release = slinky_release()
    namespace = plan.kubernetes.namespace
    controller = {"name": RELEASE}
    docs: list[dict] = []
    for key, entry in values_["nodesets"].items():
        spec: dict = {"controllerRef": controller, "replicas": entry["replicas"],
                      "slurmd": {"image": release.slurmd_image, **entry.get("slurmd", {})}}
        if "extraConfMap" in entry:
            spec["extraConf"] = " ".join(f"{k}={','.join(v)}" for k, v in entry["extraConfMap"].items())
        spec["template"] = {"spec": {"hostname": f"{key}-", **entry["podSpec"]}}
        docs.append({"apiVersion": release.api, "kind": "NodeSet",
                     "metadata": {"name": dns_subdomain(f"{RELEASE}-worker-{key}", f"the NodeSet of {key}"),
                                  "namespace": namespace},
                     "spec": spec})
    for key, entry in values_.get("loginsets", {}).items():
        docs.append({"apiVersion": release.api, "kind": "LoginSet",
                     "metadata": {"name": f"{RELEASE}-login-{key}", "namespace": namespace},
                     "spec": {"controllerRef": controller, "replicas": entry["replicas"],
                              "sssdConfRef": {"name": f"{RELEASE}-sssd-conf", "key": "sssd.conf"},
                              "login": {"image": release.login_image}}})
    return docs


def imex_compute_domains(plan: ClusterPlan, topo: KubeTopology, values_: dict) -> list[dict]:
    """A ComputeDomain per NodeSet of NVLink trays, as Slinky's docs/installation.md "With IMEX" writes it: every
    IMEX channel to the slurmd pods (``allocationMode: All``; Slurm's switch/nvidia_imex hands them to jobs),
    ``numNodes: 0`` (the driver's recommendation with its default IMEXDaemonsWithDNSNames gate: the domain follows
    the pods, one IMEX domain per NVL72 rack)."""
    imex_keys = [key for key, entry in values_["nodesets"].items() if "resourceClaims" in entry["podSpec"]]
    if not imex_keys:
        return []
    api = dra_driver_release(plan).compute_domain_api
    return [{"apiVersion": api, "kind": "ComputeDomain",
             "metadata": {"name": dns_subdomain(f"{RELEASE}-{key}", f"the ComputeDomain of NodeSet {key}"),
                          "namespace": plan.kubernetes.namespace},
             "spec": {"numNodes": 0, "channel": {"allocationMode": "All",
                                                 "resourceClaimTemplate": {"name": channel_template(key)}}}}
            for key in imex_keys]


def render(plan: ClusterPlan, topo: KubeTopology) -> dict[str, str]:
    """The three Slinky files; ``{}`` unless ``kubernetes.slinky`` (and a ``slurm:`` section to write from)."""
    if not plan.kubernetes.slinky or plan.slurm is None:
        return {}
    name, release = slinky_release()
    topology = topology_yaml(plan, worker_groups(plan))
    values_ = values(plan, topo, topology)
    about = [f"Slinky slurm-operator {name} ({release.api}); chart {release.chart} {name}, Slurm {release.slurm}.",
             f"helm install {RELEASE} {release.chart} --version {name} -n {plan.kubernetes.namespace} "
             f"-f values.yaml (docs/kubernetes.md, Slinky)."]
    files = {
        VALUES: header(plan) + comment_lines(about) + "---\n" + body(values_),
        TOPOLOGY: topology,
        NODESETS: stream(custom_resources(plan, values_), [
            f"Slinky {name} NodeSets and LoginSet, as the {RELEASE} chart creates them from helm/values.yaml:",
            "apply these only to a chart installed without nodesets and loginsets (not both)."], plan),
    }
    domains = imex_compute_domains(plan, topo, values_)
    if domains:
        files[COMPUTE_DOMAINS] = stream(domains, [
            "The IMEX channels of the NodeSets on NVLink trays: apply before the chart (its pods claim them)."], plan)
    return files
