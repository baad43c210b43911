"""site.yml: one play per role group, in the order a cluster is brought up (the Slurm release preflight
first), hardware roles per GPU node group, rolling batches where Slurm daemons or the driver restart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusterctl.cloud.stack.gpudirect import RXDM_ROLE, needs_rxdm
from clusterctl.plan.cloud import elastic_groups
from clusterctl.plan.dhcp import serves_dhcp
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.monitoring import firewall_enabled, monitoring_plan
from clusterctl.plan.nvlink import imex_configured
from clusterctl.plan.scratch import scratch_devices
from clusterctl.plan.site_records import name_servers
from clusterctl.plan.subnet_manager import opensm_hosts
from clusterctl.targets import roce
from clusterctl.targets.ansible import host_network
from clusterctl.targets.ansible.document import head_line
from clusterctl.targets.ansible.hardware import enroot_login, nccl_groups
from clusterctl.targets.ansible.pull import pull_settings
from clusterctl.targets.ansible.storage import nfs_exports, state_mount_tiers, storage_mounts
from clusterctl.yamlout import Flow, PureDumper, Unsafe, body, comment_lines

@dataclass
class Play:
    name: str
    hosts: str
    roles: list[str]
    comment: str = ""
    missing: list[str] = field(default_factory=list)
    named_by_blueprint: bool = False
    """name and hosts hold a node group's name: written !unsafe"""
    guard: bool = False
    """a preflight play: no fact gathering, any failure stops the whole playbook, runs whatever --tags say"""
    serial: str | int | None = None
    """batches of the play (Ansible ``serial``): the rolling policy of plays that restart Slurm daemons"""
    max_fail_percentage: int | None = None

    @classmethod
    def of(cls, name: str, hosts: str, wanted: Sequence[str], available: Sequence[str], **kw) -> "Play":
        """A play of the roles ``wanted``: those this checkout ships (``available``) run, the others are named
        in site.yml's head as missing."""
        return cls(name, hosts, [r for r in wanted if r in available],
                   missing=[r for r in wanted if r not in available], **kw)


ROLLING_BATCH_TEMPLATE = "{{{{ clusterctl_rolling_batch | default('{percent}%') }}}}"
"""the compute play's serial: the blueprint's slurm.rollout.batch_percent (an int), which one run may override
with -e clusterctl_rolling_batch=...; a template on purpose (no blueprint string in it)"""


def guard_plays(plan: ClusterPlan) -> list[Play]:
    """The preflight plays, before any play changes a host: the Slurm release, then the interface names."""
    out: list[Play] = []
    if plan.slurm is not None:  # first: a host with another Slurm release stops the playbook before anything is touched
        out.append(Play("Slurm release preflight, before any package or daemon is touched", "slurm_cluster",
                        ["slurm_preflight"], comment="stops every host when one runs (or would install) another "
                        "Slurm release than slurm.conf was rendered for", guard=True))
    if any(host_network.group_vars(plan, g) is not None for g in plan.groups):
        out.append(Play("Interface names preflight, before anything is written", "all", ["host_network_preflight"],
                        comment="stops every host when one has other network interface or RDMA device names than "
                        "the plan (node_types.<type>.interfaces, the catalog's vendor tables)", guard=True))
    return out


def operations_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """Right after the base configuration (whose /etc/hosts block names every host): the host firewall, then the
    exporters every node runs for the monitoring server (docs/monitoring.md)."""
    out = []
    if firewall_enabled(plan) and "host_firewall" in available:
        out.append(Play("Host firewall (nftables) on every node", "all", ["host_firewall"],
                        comment="input dropped unless the host's roles need it: firewall/ (docs/monitoring.md, "
                                "\"Host firewall\")"))
    if monitoring_plan(plan) is not None and "monitoring_exporters" in available:
        out.append(Play("Monitoring exporters on every node", "all", ["monitoring_exporters"],
                        comment="the node exporter on the in-band address, the Slurm metrics on the controllers, "
                                "dcgm-exporter's counters on the GPU nodes"))
    return out


def monitoring_server_plays(plan: ClusterPlan) -> list[Play]:
    """Last: Prometheus on the monitoring server, once every exporter is in place (docs/monitoring.md)."""
    m = monitoring_plan(plan)
    if m is None:
        return []
    return [Play("Monitoring server (Prometheus)", m.server, ["monitoring_server"],
                 comment="the scrape configuration and alert rules of monitoring/ (docs/monitoring.md)",
                 named_by_blueprint=True)]


def dns_plays(plan: ClusterPlan) -> list[Play]:
    """The name servers (the zones every node resolves through), then every node's resolver (docs/network.md,
    "DNS"); none when nothing serves the zones (no Slurm controllers with an in-band address)."""
    servers = name_servers(plan)
    if not servers:
        return []
    return [Play("Name servers of the cluster's zones (unbound)", ",".join(s.name for s in servers), ["dns_server"],
                 comment="the forward and reverse zones of every planned address: dns/", named_by_blueprint=True),
            Play("Every node resolves through the cluster's name servers", "all", ["dns_client"],
                 comment="the /etc/hosts block of the common role stays the fallback")]


def day0_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """The services the controllers give every other host from day 0, right after the base configuration."""
    if serves_dhcp(plan) and "dhcp_server" in available:
        return [Play("DHCP servers (Kea) on the Slurm controllers", "slurm_controllers", ["dhcp_server"],
                     comment="reservations by MAC from the inventory; an HA pair with two controllers "
                             "(dhcp/kea-dhcp4.conf; docs/network.md, \"DHCP\")")]
    return []


def scratch_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """The compute nodes' data NVMe assembled and mounted at the node-local tier, before the plays that put enroot's
    and slurmd's data there (clusterctl/plan/scratch.py)."""
    if not any(scratch_devices(plan, g) for g in plan.groups):
        return []
    return [Play.of("Node-local scratch on the data NVMe", "compute", ["local_scratch"], available,
                    comment="before enroot and slurmd, which keep their data on it; a group without data NVMe keeps the "
                            "tier as a directory (docs/ansible.md, \"Node-local scratch\")")]


def directory_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """SSSD on every Slurm host before any Slurm daemon starts: slurmctld, slurmd and sshd resolve the directory's
    users from the first job on (users.directory)."""
    if plan.slurm is None or plan.users is None or plan.users.directory is None:
        return []
    return [Play.of("Users and groups of the site's directory (SSSD) on every Slurm node", "slurm_cluster",
                    ["directory_client"], available,
                    comment="NSS and PAM through SSSD, TLS checked against the site's CA (docs/ansible.md, \"Users\")")]


def association_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """The Slurm accounts and user associations on the primary controller, once slurmctld and slurmdbd run
    (users.accounts): AccountingStorageEnforce=associations refuses jobs of users without one."""
    if plan.slurm is None or plan.users is None or not plan.users.accounts:
        return []
    return [Play.of("Slurm accounts and user associations", "slurm_controllers[0]", ["slurm_associations"], available,
                    comment="sacctmgr on the primary controller: adds and modifies what differs from users.accounts, "
                            "directory groups expanded with getent group")]


def _stack_title(g, wanted: list[str]) -> str:
    """A node group's own play: its accelerator and fabric stack, or only its host network (a GPU-less group
    whose one role is host_network: the in-band DHCP client of lab-ha's head and login nodes)."""
    return "Accelerator and fabric stack" if g.type.gpus or wanted != ["host_network"] else "Host network"


def plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """site.yml: one play per role group; hardware roles per GPU node group (only those shipped in roles/)."""
    slurm = plan.slurm is not None
    out = guard_plays(plan)
    out += [Play("Base configuration of every node", "all", ["common"]), *operations_plays(plan, available)]
    out += dns_plays(plan)
    out += day0_plays(plan, available) + scratch_plays(plan, available)
    if nfs_exports(plan):
        out.append(Play("NFS server on the cluster's own nodes", "nfs_servers", ["nfs_server"],
                        comment="before every play that mounts an NFS tier (storage_clients)"))
    if slurm:
        out.append(Play("Slurm and MUNGE accounts and MUNGE authentication on every Slurm node", "slurm_cluster",
                        ["slurm_accounts", "munge"], comment="the slurm and munge accounts with the blueprint's ids "
                        "before any Slurm or MUNGE package (SchedMD's packages create no user)"))
    out += directory_plays(plan, available)
    if sm_hosts := opensm_hosts(plan):  # before the nodes' own roles: an InfiniBand port is INIT until a subnet manager has swept it
        out.append(Play("InfiniBand subnet managers (OpenSM)", ",".join(sm_hosts), ["subnet_manager"],
                        comment="the fabric and priority of each host: subnet_manager/hosts.yml", named_by_blueprint=True))
    nccl = nccl_groups(plan)
    sw = plan.software
    for g in plan.groups:
        wanted = []
        if g.type.gpus > 0:
            if any("infiniband" in n.protocols for n in g.type.nics):
                wanted.append("doca_ofed")
            wanted += ["nvidia_driver"] + (["nvidia_imex"] if imex_configured(plan, g) else []) + ["dcgm"]
            if sw is not None and sw.containers == "enroot":
                wanted.append("enroot_pyxis")
        if host_network.group_vars(plan, g) is not None:
            wanted.append("host_network")
        if roce.group_vars(plan, g) is not None:
            wanted.append("roce_network")
        if g.name in nccl:
            wanted.append("nccl")
        if needs_rxdm(g):  # GCP A3 Mega: the RxDM prolog/epilog pieces (clusterctl/cloud/stack/gpudirect.py)
            wanted.append(RXDM_ROLE)
        if wanted:
            what = f"{g.type.gpus} x {g.type.gpu_model} per node" if g.type.gpus else "no GPUs"
            rollout = plan.slurm.rollout if slurm and "nvidia_driver" in wanted else None
            out.append(Play.of(f"{_stack_title(g, wanted)} of node group {g.name}", g.name, wanted, available,
                               comment=f"{g.count} x {g.type.name}, {what}"
                               + (f"; rolling: {rollout.batch_percent} % at a time, a driver, DOCA-OFED, firmware or "
                                  "IMEX peer change drains the node and waits for its jobs first (docs/ansible.md, "
                                  "\"Rolling changes\")"
                                  if rollout else ""),
                               named_by_blueprint=True,
                               serial=ROLLING_BATCH_TEMPLATE.format(percent=rollout.batch_percent) if rollout else None,
                               max_fail_percentage=rollout.max_fail_percent if rollout else None))
    if slurm:
        out.append(Play("Slurm accounting daemon", "slurm_accounting", ["slurmdbd"]))
        shared_state = any(storage_mounts(plan, g)[0] for g in plan.groups if state_mount_tiers(plan, g))
        power_save = ["slurm_power_save"] if elastic_groups(plan) and "slurm_power_save" in available else []
        out.append(Play("Slurm controllers", "slurm_controllers",
                        (["storage_clients"] if shared_state else []) + power_save + ["slurm_controller"],
                        comment="one controller at a time: a backup keeps answering while the primary restarts"
                                + ("; the power-save programs before slurmctld, which disables power saving when "
                                   "ResumeProgram or SuspendProgram is missing" if power_save else "")
                                + ("; StateSaveLocation is on shared storage: mounted before slurmctld's state "
                                   "directory is created" if shared_state else ""),
                        serial=1, max_fail_percentage=0))
    out += association_plays(plan, available)
    roles_present = {g.role for g in plan.groups}
    if "compute" in roles_present:
        rollout = plan.slurm.rollout if slurm else None
        out.append(Play("Compute nodes", "compute",
                        ["storage_clients", "node_health"] + (["slurm_compute"] if slurm else []),
                        comment=(f"rolling: {rollout.batch_percent} % of the compute nodes at a time; slurmd restarts "
                                 "under running jobs, no drain, and the batch waits until slurmctld hears from it "
                                 "(docs/ansible.md, \"Rolling changes\"; -e clusterctl_rolling_batch=100% for a "
                                 "first bring-up)") if rollout else "",
                        serial=ROLLING_BATCH_TEMPLATE.format(percent=rollout.batch_percent) if rollout else None,
                        max_fail_percentage=rollout.max_fail_percent if rollout else None))
    if "login" in roles_present:
        pyxis = ["enroot_pyxis"] if slurm and enroot_login(plan) and "enroot_pyxis" in available else []
        out.append(Play("Login nodes", "login", ["storage_clients"] + pyxis + (["slurm_login"] if slurm else []),
                        comment="pyxis's SPANK plugin on the login nodes too: srun --container-image parses its "
                                "options where srun runs" if pyxis else ""))
    return out + monitoring_server_plays(plan) + pull_plays(plan, available)


def pull_plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """The last play: every node can apply its released version of this tree itself (pull mode)."""
    if pull_settings(plan) is None:
        return []
    return [Play.of("Pull mode on every node", "all", ["ansible_pull"], available,
                    comment="the clusterctl-pull script, service and timer: every node can apply its released "
                            "version of this tree itself (docs/ansible.md, \"Pull mode\")")]


def site_file(plan: ClusterPlan, site_plays: Sequence[Play]) -> str:
    """site.yml: one play per role group. Play names and host patterns that hold blueprint names are
    ``!unsafe`` (Ansible templates both)."""
    missing = sorted({r for p in site_plays for r in p.missing})
    comments = [f"Configure cluster {plan.name}: cd ansible && ansible-playbook site.yml -e @<vault file> "
                "--ask-vault-pass",
                "Every role installs files clusterctl rendered under clusterctl_render_dir and reads no fact of "
                "another host,",
                "so --limit (one rack: --limit rack_r07, one scalable unit: --limit su_ib_2, new nodes) works."]
    if missing:
        comments.append(f"roles the plan calls for but roles/ did not ship when this was rendered (not applied): "
                        f"{', '.join(missing)}")
    parts = [comment_lines([head_line(plan), *comments]), "---\n"]
    for k, play in enumerate(p for p in site_plays if p.roles):
        notes = [n for n in (play.comment, f"not shipped in roles/ when this was rendered, so not applied: "
                                           f"{', '.join(play.missing)}" if play.missing else "") if n]
        text = Unsafe if play.named_by_blueprint else str
        entry: dict[str, object] = {"name": text(play.name), "hosts": text(play.hosts), "become": True}
        if play.guard:  # 'always': the guard runs under --tags slurm_compute too (rolling changes)
            entry.update({"gather_facts": False, "any_errors_fatal": True})
        if play.serial is not None:
            entry["serial"] = play.serial
        if play.max_fail_percentage is not None:
            entry["max_fail_percentage"] = play.max_fail_percentage
        tags = (lambda r: Flow([r, "always"])) if play.guard else (lambda r: Flow([r]))
        entry["roles"] = [{"role": r, "tags": tags(r)} for r in play.roles]
        data = [entry]
        parts += ["\n" if k else "", comment_lines(notes), body(data, dumper=PureDumper)]
    return "".join(parts)
