"""group_vars/: all.yml (render directory, software pins, Slurm hosts and install, time, vault references),
slurm_controllers.yml (the time servers, power saving), one file per node group (what its roles and node_health
expect) and one per multi-node NVLink domain (the IMEX peers)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.dhcp import listen_addresses, serves_dhcp
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.monitoring import monitoring_plan
from clusterctl.plan.roles import gpu_groups
from clusterctl.plan.slurm import RECONFIGURE_ADDS_NODES, slurm_supports
from clusterctl.targets import roce
from clusterctl.targets.ansible.chrony import time_vars
from clusterctl.targets.ansible import host_network
from clusterctl.targets.ansible.document import Section, yaml_file
from clusterctl.targets.ansible.hardware import (container_vars, enroot_login, gpu_vars, imex_vars, rdma_nics,
                                                 software_vars)
from clusterctl.targets.ansible.node_files import neigh_thresholds
from clusterctl.targets.ansible.scratch import scratch_sections
from clusterctl.targets.ansible.pull import pull_settings, pull_vars
from clusterctl.targets.ansible.slurm_vars import (power_save_vars, qos_vars, slurm_host_vars, slurm_install_vars,
                                                  slurm_version_var)
from clusterctl.targets.ansible.storage import MOUNTED_ROLES, lustre_vars, storage_mounts
from clusterctl.targets.ansible.users_vars import users_sections
from clusterctl.yamlout import Flow, FlowMap, Unsafe, unsafe

RENDER_DIR_TEMPLATE = "{{ playbook_dir }}/.."
"""group_vars/all.yml clusterctl_render_dir: a template on purpose (plain str, evaluated by Ansible)"""
VAULT_REFERENCES = {"munge_key": "{{ vault_munge_key | default('') }}",
                    "slurmdbd_storage_pass": "{{ vault_slurmdbd_storage_pass | default('') }}",
                    "slurmdbd_replication_pass": "{{ vault_slurmdbd_replication_pass | default('') }}"}
"""secrets: references to the operator's vault, templates on purpose"""
ALL_COMMENTS = (
    "Secrets are vault references, never values. Create the vault once, OUTSIDE the render directory (clusterctl",
    "replaces it on every render), for example beside the blueprint:",
    "  ansible-vault create secrets/vault.yml",
    "holding",
    "  vault_munge_key: \"<output of: openssl rand -base64 1024 | tr -d '\\n'>\"",
    "  vault_slurmdbd_storage_pass: \"<a long random password>\"",
    "  vault_slurmdbd_replication_pass: \"<another long random password>\"  (a replicated pair of slurmdbd hosts)",
    "and pass it to every run:",
    "  cd ansible && ansible-playbook site.yml -e @../../secrets/vault.yml --ask-vault-pass",
    "Values from the blueprint are tagged !unsafe: Ansible uses them as written and never evaluates them as",
    "templates (docs/security.md).",
)


def all_vars_file(plan: ClusterPlan, controllers: Sequence[str], accounting: Sequence[str]) -> str:
    """group_vars/all.yml: render directory, software pins, Slurm hosts, neighbour tables, vault references."""
    # size: one commented section per concern of all.yml, in the file's order; each is a line or two of table
    sections: list[Section] = [
        (["the render directory (this file is <dir>/ansible/group_vars/all.yml): roles install files from it"],
         {"clusterctl_render_dir": RENDER_DIR_TEMPLATE, "clusterctl_blueprint": Unsafe(plan.name)}),
    ]
    sw = plan.software
    if sw:
        sections.append((["software the blueprint pins"], unsafe({
            "clusterctl_os": sw.os, "clusterctl_driver_version": sw.driver, "clusterctl_cuda_version": sw.cuda,
            "clusterctl_nccl_version": sw.nccl, "clusterctl_doca_version": sw.doca,
            "clusterctl_containers": sw.containers})))
    sections.append((["hardware roles: what software: pins (driver branch, DOCA-Host release, CUDA major for DCGM)"],
                     unsafe(software_vars(plan))))
    if container_vars(plan):
        sections.append((["enroot_pyxis: Ubuntu 24.04 restricts unprivileged user namespaces to AppArmor profiles with "
                          "a userns rule; enroot's profile grants it to enroot-nsenter alone "
                          "(roles/enroot_pyxis/README.md)"],
                         container_vars(plan)))
    if plan.slurm:
        sections.append((["Slurm: the configuration files are rendered in <dir>/slurm/ and copied as they are;",
                          "slurm_version is the release they are for (the slurm_preflight play checks every host)"],
                         {"slurm_version": slurm_version_var(plan), **unsafe({
                                 "clusterctl_slurm_version": plan.slurm.version,
                                 "clusterctl_slurm_cluster_name": plan.slurm.cluster_name or plan.name,
                                 "clusterctl_slurm_controllers": Flow(controllers),
                                 "clusterctl_slurm_accounting_host": accounting[0]})}))
    if plan.slurm:
        sections.append((["Slurm install source (slurm.install): the slurm_preflight play configures it and the "
                          "pin, then checks the release", "apt would install; the Slurm roles install these packages "
                          "(docs/ansible.md, \"Slurm install source\")"], unsafe(slurm_install_vars(plan))))
        sections.append((["Slurm hosts: the slurm and munge accounts' ids (slurm.user, slurm.munge_user; created before any "
                          "package), the PMIx", "package the mpi/pmix plugin loads and the Slurm headers pyxis is built "
                          "against (docs/ansible.md, \"Slurm and MUNGE accounts\")"], slurm_host_vars(plan)))
    if plan.slurm:
        sections.append((["slurm_controller: a change of the node lines restarts slurmctld before Slurm 24.11; from 24.11 "
                          "`scontrol reconfigure` adds and removes nodes", "(SchedMD FAQ, \"How should I add nodes to "
                          "Slurm?\"; docs/ansible.md, \"Rolling changes\")"],
                         {"slurm_controller_restart_on_node_change":
                          not slurm_supports(plan, RECONFIGURE_ADDS_NODES)}))
    if plan.slurm:
        sections.append((["slurm_compute: a node whose hardware differs from its NodeName and gres.conf lines stops "
                          "or is drained before slurmd starts (slurm.hardware_preflight)"],
                         {"slurm_compute_hw_preflight_action": plan.slurm.hardware_preflight}))
    if plan.slurm and gpu_groups(plan):
        sections.append((["node_drain: a change that needs an idle node (driver, DOCA-OFED, NIC firmware, IMEX peers) "
                          "drains it and waits this long for its jobs,", "then leaves it drained and pending for the "
                          "next run (slurm.rollout.drain_timeout_minutes; docs/ansible.md, \"Rolling changes\")"],
                         {"node_drain_timeout_s": plan.slurm.rollout.drain_timeout_minutes * 60}))
    if plan.slurm and plan.slurm.qos:
        sections.append((["slurm_controller: the QOS of slurm.qos, created and kept with sacctmgr by the primary "
                          "controller (docs/slurm.md, \"QOS\"); values as sacctmgr shows them"],
                         unsafe({"slurm_controller_qos": [FlowMap(q) for q in qos_vars(plan.slurm.qos)]})))
    sections += users_sections(plan)
    if plan.slurm and plan.slurm.database_host:
        sections.append(([f"slurmdbd: the accounting database is the site's server {plan.slurm.database_host} "
                          "(slurm.database_host): not installed here"], {"slurmdbd_database_manage": False}))
    m = monitoring_plan(plan)
    if m is not None:
        sections.append((["monitoring: Prometheus's retention (monitoring.retention_days); dcgm-exporter binds the "
                          "in-band address the monitoring_exporters role found and serves the counters the alert "
                          "rules read (docs/monitoring.md)"],
                         {"monitoring_server_retention_days": m.retention_days,
                          "dcgm_exporter_listen_address": "{{ monitoring_exporters_address | default('') }}",
                          "dcgm_exporter_collectors": "/etc/dcgm-exporter/clusterctl-counters.csv"}))
    pull = pull_settings(plan)
    if pull is not None:
        sections.append((["ansible_pull: where every node fetches this tree from, and how often "
                          "(slurm.rollout.pull; docs/ansible.md, \"Pull mode\")"], pull_vars(pull)))
    follow, _ = time_vars(plan, controllers)
    if follow:
        sections.append((["chrony: every node follows the Slurm controllers (MUNGE credentials and Slurm fail on clock "
                          "skew; an air-gapped site has no public pool); the controllers' own sources are in "
                          "group_vars/slurm_controllers.yml"], follow))
    sections.append(([f"common role: neighbour (ARP/ND) tables sized for {plan.nodes} nodes and their switches"],
                     {"common_sysctl_neigh_gc_thresh": Flow(neigh_thresholds(plan))}))
    if plan.slurm:
        sections.append((["secrets: references to the vault described above (an empty value fails the role's "
                          "preflight with a hint)"], dict(VAULT_REFERENCES)))
    return yaml_file(plan, [f"Variables for every host of cluster {plan.name}. Role variables are documented in "
                            "each role's", "defaults/main.yml and meta/argument_specs.yml.", "", *ALL_COMMENTS],
                     sections)


def controllers_vars_file(plan: ClusterPlan, controllers: Sequence[str]) -> str:
    """group_vars/slurm_controllers.yml: the controllers are the cluster's time and DHCP servers."""
    _, served = time_vars(plan, controllers)
    return yaml_file(plan, ["The Slurm controllers: the time servers every other node follows (group_vars/all.yml) and the DHCP servers."],
                     [(["chrony: follow site.time_servers (else the cloud provider's time service; no public pool "
                        "unless written there), peer each other, serve the cluster's networks, and keep serving one "
                        "time in orphan mode when no upstream answers (air-gapped sites)"], served),
                      *dhcp_sections(plan),
                      *power_save_vars(plan)])


def dhcp_sections(plan: ClusterPlan) -> list[Section]:
    """dhcp_server's variables: each controller's planned addresses, whose interfaces Kea binds."""
    if not serves_dhcp(plan):
        return []
    listen = {host: Flow(addresses) for host, addresses in listen_addresses(plan).items()}  # plan-made, not blueprint text
    return [(["dhcp_server: the planned addresses of each DHCP server; Kea binds the interfaces that carry them "
              "(dhcp/kea-dhcp4.conf; docs/network.md, \"DHCP\")"], {"dhcp_server_listen": listen})]


def host_network_section(plan: ClusterPlan, g: GroupPlan) -> list[Section]:
    """host_network's variables of a group (clusterctl/targets/ansible/host_network.py), laid out for the file."""
    hv = host_network.group_vars(plan, g)
    if hv is None:
        return []
    hv["host_network_ports"] = [FlowMap(p) for p in hv["host_network_ports"]]
    if "host_network_interfaces" in hv:
        # one block mapping per interface: a routed storage port's dozen keys would not fit ansible-lint's line
        hv["host_network_interfaces"] = [{k: Flow(v) if isinstance(v, list) else v for k, v in i.items()}
                                         for i in hv["host_network_interfaces"]]
        hv["host_network_hosts"] = [Flow(r) for r in hv["host_network_hosts"]]
    if "host_network_rdma_cm_tos" in hv:
        hv["host_network_rdma_cm_tos"] = [FlowMap(t) for t in hv["host_network_rdma_cm_tos"]]
    return [(["host_network: the OS names of this node type's ports (clusterctl/plan/interfaces.py), which "
              "host_network_preflight compares with every host before anything is written, and the in-band bond, "
              "IPoIB and storage interfaces with their addresses (port k of host i: base + i x stride + k; the "
              "host's index i from its name and the runs) (docs/network.md)"],
             unsafe(hv))]


def group_vars_file(plan: ClusterPlan, g: GroupPlan, nccl: dict[str, dict]) -> str:
    """group_vars/<group>.yml: what the roles and node_health expect of this node group."""
    t = g.type
    sections: list[Section] = [([], unsafe({"clusterctl_node_group": g.name, "clusterctl_node_role": g.role,
                                            "clusterctl_node_type": t.name}))]
    n = nccl.get(g.name, {})
    if n:
        sections.append(([f"NCCL settings rendered by the nccl target (docs/nccl.md); the nccl role installs "
                          f"<dir>/nccl/{n['nccl_conf_file']}"], unsafe({"nccl_conf_file": n["nccl_conf_file"]})))
        if "nccl_conf_path" in n:
            sections.append((["AMD GPUs: RCCL reads the same settings from /etc/rccl.conf"],
                             unsafe({"nccl_conf_path": n["nccl_conf_path"]})))
        if "nccl_env_file" in n:
            sections.append((["vendor NCCL profile that jobs source (installed as nccl_env_path)"],
                             unsafe({"nccl_env_file": n["nccl_env_file"]})))
        if "nccl_enroot_env_file" in n:
            sections.append((["the same NCCL settings for enroot/pyxis containers (installed as "
                              "nccl_enroot_env_path, /etc/enroot/environ.d/50-nccl.env)"],
                             unsafe({"nccl_enroot_env_file": n["nccl_enroot_env_file"]})))
    gv = gpu_vars(g)
    if gv:
        why = ["nvidia_driver: Fabric Manager on NVSwitch baseboards (8+ GPUs in one node's NVLink domain)"]
        if "nvidia_driver_fabric_manager_nvlsm" in gv:
            why.append("with the NVLink Subnet Manager (nvlsm): fourth-generation NVSwitch (Blackwell HGX)")
        if "node_health_nvlink_fabric" in gv:
            why.append("node_health: each GPU's NVLink fabric registration (nvidia-smi -q Fabric)"
                       + (" and one clique per NVLink partition" if "node_health_nvlink_clique" in gv else "")
                       + " (docs/nvlink.md)")
        sections.append((why, gv))
    iv = imex_vars(plan, g)
    if iv:
        sections.append(([f"nvidia_imex: the NVLink domain ({g.nvlink_domain_gpus} GPUs) spans nodes; IMEX channels "
                          + ("come from Slurm's switch/nvidia_imex, one per job (slurm.conf SwitchType)"
                             if not iv["nvidia_imex_channel0"] else
                             "are not created by default (NVIDIA IMEX guide): channel 0 at driver load, no Slurm "
                             "switch plugin")], iv))
    sections += host_network_section(plan, g)
    rv = roce.group_vars(plan, g)
    if rv is not None:
        rv["roce_network_rails"] = [FlowMap(r) for r in rv["roce_network_rails"]]
        rv["roce_network_hosts"] = [Flow(r) for r in rv["roce_network_hosts"]]
        rv["roce_network_qos"] = FlowMap(rv["roce_network_qos"])
        sections.append((["roce_network: RDMA addresses of the compute NICs on RoCE fabric "
                          f"{rv['roce_network_fabric']} (rail k of host i: base_k + i x stride; the host's index i "
                          "from its name and the runs [prefix, width, first, last, index]), their routing tables "
                          "and the fabric's QoS, the numbers NCCL_IB_TC and the switch files use (docs/roce.md)"],
                         unsafe(rv)))
    mounts, expected, local = storage_mounts(plan, g)
    if g.role == "compute":
        ports, rate = rdma_nics(g)
        sections.append(([f"node_health: GPUs per node ({t.gpu_model or 'none'})"], {"node_health_gpu_count": t.gpus}))
        sections.append((["node_health: compute NIC ports that must be ACTIVE under /sys/class/infiniband, at least "
                          "this rate (0: not checked)" if ports else
                          "node_health: no compute NIC with RDMA ports under /sys/class/infiniband on this node type"],
                         {"node_health_rdma_port_count": ports, "node_health_rdma_rate_gbps": rate}))
        sections.append((["node_health: shared file systems that must be mounted"],
                         {"node_health_mounts": unsafe(Flow(expected))}))
        sections += scratch_sections(plan, g)
    if g.role in MOUNTED_ROLES or mounts:
        what = ("shared storage tiers mounted on this group" if g.role in MOUNTED_ROLES else
                "the tier holding StateSaveLocation, on the controllers")
        sections.append(([f"storage_clients: {what} (fstab entries, mounted at once)"],
                         {"storage_clients_mounts": unsafe([FlowMap(m) for m in mounts])}))
        lustre = any(m["fstype"] == "lustre" for m in mounts)
        sections.append((["storage_clients: a Lustre tier is mounted here; set false where the image already has "
                          "the client"] if lustre else [], {"storage_clients_lustre_install": lustre}))
        lv = lustre_vars(plan, g, mounts)
        if lv:
            sections.append((["storage_clients: Lustre's LNet networks (the MGS NIDs' o2ib networks on this "
                              "node type's storage interfaces, or LNet's default ib0; /etc/modprobe.d/lustre.conf) "
                              "and the client packages' signed repository"], unsafe(lv)))
        sections.append((["storage_clients: node-local directories (NVMe scratch) that must exist"],
                         {"storage_clients_local_dirs": unsafe(Flow(local))}))
    if g.role == "login" and plan.slurm is not None and enroot_login(plan):
        sections.append((["enroot_pyxis: pyxis's SPANK plugin only (srun parses --container-* here); containers run on "
                          "the compute nodes"], {"enroot_pyxis_install_enroot": False}))
    what = t.server_name or t.instance_name
    return yaml_file(plan, [f"Node group {g.name}: {g.count} x {t.name} ({what}), role {g.role}.",
                            "Expectations from the plan, used by the roles and by node_health (Slurm's "
                            "HealthCheckProgram)."], sections)


def nvlink_vars_file(plan: ClusterPlan, name: str, g: GroupPlan, hosts: Sequence[str],
                     addresses: dict[str, str] | None) -> str:
    peers = [addresses.get(h) for h in hosts] if addresses else [None]
    return yaml_file(plan, [
        f"Multi-node NVLink domain {name}: {len(hosts)} x {g.type.name} of node group {g.name} "
        f"({g.nvlink_domain_gpus} GPUs).",
        "IMEX peers are the domain's in-band addresses (nodes_config.cfg, NVIDIA IMEX guide), rendered here and never",
        "gathered from other hosts.",
    ], [([], {"nvidia_imex_peers": unsafe([p for p in peers if p] if all(peers) else [])})])
