"""slurm target: slurm.conf, gres.conf, topology.conf (or topology.yaml), cgroup.conf, slurmdbd.conf.j2.

Everything is shaped here, as ``Key=Value`` lines (:func:`clusterctl.targets.common.key_values`); the
templates under ``templates/slurm/`` only loop over the lines and print them. What is rendered and why is
in docs/slurm.md.

Design points (each one a complaint about existing tools, see docs/slurm.md):

- Nodes are host *ranges*: one ``NodeName`` line per node group and one ``gres.conf`` line per group and
  socket, never one line per host; a 200,000-GPU cluster's slurm.conf is a few dozen lines.
- gres.conf ``Cores=`` are *logical core indices* derived from the server's declared sockets (GPUs split
  evenly over the sockets, every core of a socket listed together), never OS CPU ids.
- topology.conf comes from the planned fabric (:mod:`clusterctl.plan.topology` plans the switches and
  blocks; this module writes them): a rail-optimized scalable unit (SU) is *one* switch, because its nodes
  share every rail leaf; a tree whose leaves are rails would tell Slurm that nodes of one SU are far apart.
  NVLink domains (NVL72 racks) become topology/block blocks.
- Every option is checked against the blueprint's ``slurm.version`` by the release table
  (:data:`clusterctl.plan.slurm.FEATURES`, which the rules judge by too); an option the release does not have
  is left out (with a comment saying so), never emitted for slurmctld to reject.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.blueprint.software import Partition
from clusterctl.catalog.models import accelerator_vendor
from clusterctl.plan.monitoring import SRUN_PORT_RANGE, firewall_enabled
from clusterctl.plan.cloud import elastic_groups as cloud_elastic_groups
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.scratch import job_tmp_base
from clusterctl.plan.nvlink import IMEX_CHANNEL_COUNT, multi_node
from clusterctl.plan.slurm import (AUTODETECT_NVIDIA, BLOCK_PLUGIN, BLOCK_SIZES, CGROUP_PLUGIN, CLOUD_REG_ADDRS,
                                   GRES_ENV_FLAGS, JOB_CONTAINER_DIRS, KEEP_POWER_SAVE_SETTINGS, NO_ADDR_CACHE,
                                   PRIVATE_DATA_CLOUD, PROLOG_GLOB, SWITCH_NVIDIA_IMEX, TOPOLOGY_YAML,
                                   TREE_WIDTH_NODE_COUNT, Refusal, Release, cloud_tree_width, memory_refusal,
                                   memory_reserve_gb, node_groups, partition_groups, provides_nvml, real_memory_mib,
                                   release_refusal, slurm_release, supports, tree_width)
from clusterctl.plan.scheduler import scheduler_plan
from clusterctl.plan.weka import specialized
from clusterctl.plan.topology import BLOCK_TOPOLOGY, TREE_TOPOLOGY, Block, Switch, nvlink_blocks, tree_switches
from clusterctl.plan.accounting import accounting_database
from clusterctl.targets import RenderError, slurm_accounting
from clusterctl.targets.slurm_accounting import STORAGE_LOC, keeping_lines
from clusterctl.targets.common import at, conf_value, header, jinja_literal, key_values, render_template

SWITCH_NAME_MAX = 64
"""topology.conf(5): SwitchName "cannot be longer than 64 characters" """
CLUSTER_NAME_MAX = 40
"""slurm.conf(5) ClusterName: "must be 40 characters or less" (MySQL table-name limit)"""

DEV_DIR = "/dev"
"""where the GPU device nodes are: /dev/nvidiaN, /dev/dri/renderD(128+N)"""
AMD_RENDER_MINOR = 128
"""the first DRM render node (/dev/dri/renderD128) is the first AMD GPU"""


WEKA_SPEC_COMMENT = ("; CoreSpecCount and MemSpecLimit keep the WEKA client's dedicated frontend cores (the "
                     "highest core of each socket, core_spec.html) and its hugepage memory from jobs (slurm.conf(5); "
                     "docs/slurm.md \"WEKA clients in DPDK mode\")")


class SlurmRenderError(RenderError):
    """The plan cannot be written as valid Slurm configuration (the rules report these first)."""


def refuse(refusal: Refusal | None) -> None:
    """Raise a plan function's refusal (the rule that reports it at validate time decides it the same way)."""
    if refusal is not None:
        error = SlurmRenderError(refusal.message)
        error.path, error.hint = refusal.path, refusal.hint
        raise error


# --- small helpers (exact-string tested) -------------------------------------------------------------

def gres_type(model: str) -> str:
    """The GRES type for an accelerator model: the part before the first ``-``, lower-case, with
    characters other than letters, digits and ``_`` dropped (``h100-sxm`` -> ``h100``, ``mi300x`` ->
    ``mi300x``). gres.conf(5) Type: with AutoDetect the type "should match or be a substring of the value
    that is detected" (NVML's "NVIDIA H100 80GB HBM3" -> ``nvidia_h100_80gb_hbm3``), which ``h100``
    is and ``h100-sxm`` is not."""
    head = model.strip().lower().split("-", 1)[0]
    return "".join(ch for ch in head if ch.isalnum() or ch == "_") or "gpu"


def index_range(first: int, last: int) -> str:
    """``0-51``, or ``7`` for a single index."""
    return str(first) if first == last else f"{first}-{last}"


def device_files(prefix: str, first: int, last: int) -> str:
    """``/dev/nvidia[0-3]`` (a Slurm host-list style range), or ``/dev/nvidia0`` for one device."""
    return f"{prefix}{first}" if first == last else f"{prefix}[{first}-{last}]"


def gpus_by_socket(gpus: int, sockets: int) -> list[tuple[int, int, int]]:
    """(socket, first GPU, last GPU): GPUs split evenly over the sockets in order (8 GPUs on 2 sockets:
    0-3 on socket 0, 4-7 on socket 1), the layout of HGX/DGX/OAM baseboards and GB200 trays."""
    out: list[tuple[int, int, int]] = []
    sockets = max(1, sockets)
    for gpu in range(gpus):
        s = gpu * sockets // gpus
        if out and out[-1][0] == s:
            out[-1] = (s, out[-1][1], gpu)
        else:
            out.append((s, gpu, gpu))
    return out


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


# --- what the plan says, shaped for Slurm ------------------------------------------------------------

def slurm_version(plan: ClusterPlan) -> Release:
    """The release to render for, or the refusal SLURM003 reports first
    (:func:`clusterctl.plan.slurm.release_refusal`)."""
    refuse(release_refusal(plan))
    return slurm_release(plan)


def _is_amd(g: GroupPlan) -> bool:
    return g.type.accelerator is not None and accelerator_vendor(g.type.accelerator) == "AMD"


def node_line(g: GroupPlan, reserve_gb: float, elastic: bool = False, spec: tuple[int, int] = (0, 0)) -> str:
    t = g.type
    with at(("node_types", t.name, "features")):
        for feature in t.features:
            conf_value(feature, f"node type {t.name} feature", extra=",")
    with at(g.path):
        return _node_line(g, reserve_gb, elastic, spec)


def _node_line(g: GroupPlan, reserve_gb: float, elastic: bool = False, spec: tuple[int, int] = (0, 0)) -> str:
    """``spec``: (CoreSpecCount, MemSpecLimit) kept from jobs for the WEKA client (:func:`clusterctl.plan.weka.
    specialized`); nothing written when (0, 0)."""
    t = g.type
    return key_values([
        ("NodeName", g.hostlist),
        ("Sockets", t.sockets),
        ("CoresPerSocket", t.cores_per_socket),
        ("ThreadsPerCore", t.threads_per_core),
        ("RealMemory", real_memory_mib(t.memory_gb, reserve_gb)),
        ("Gres", f"gpu:{gres_type(t.gpu_model)}:{t.gpus}" if t.gpus and t.gpu_model else None),
        ("CoreSpecCount", spec[0] or None),
        ("MemSpecLimit", spec[1] or None),
        ("Features", _dedupe([g.name, t.gpu_model or "", *t.features])),
        # an elastic group's nodes exist only while ResumeProgram's instance runs (slurm.conf(5) State=CLOUD)
        ("State", "CLOUD" if elastic else "UNKNOWN"),
    ], f"node group {g.name}")


def partition_lines(plan: ClusterPlan) -> list[str]:
    lines, default_done = [], False
    exclusive = scheduler_plan(plan).exclusive
    for i, part in enumerate(plan.slurm.partitions):
        groups = partition_groups(plan, part)
        if not groups:  # SLURM001 reports each name that is no node group
            refuse(Refusal(("slurm", "partitions", i, "groups"), f"partition {part.name} has no nodes (slurmctld "
                           "refuses empty partitions)", "name node groups of the blueprint (rule SLURM001)"))
        nodes = groups[0].hostlist if len(groups) == 1 else hostlist.compress(h for g in groups for h in g.hosts)
        default = part.default and not default_done
        default_done = default_done or default
        with at(("slurm", "partitions", i)):
            lines.append(_partition_line(part, nodes, default, gpu_defaults(plan.slurm, groups, plan),
                                         part.name in exclusive))
    return lines


def gpu_defaults(slurm, groups: Sequence[GroupPlan], plan: ClusterPlan | None = None
                 ) -> tuple[int | None, int | None]:
    """(DefCpuPerGPU, DefMemPerGPU in MiB) of a partition: each GPU's share of the CPUs and RealMemory of its
    smallest GPU node, so that a job asking only for GPUs gets a fair slice instead of the whole node's
    memory (CR_Core_Memory with no default takes all of it) and packs with others. None without GPUs. The cores and
    memory kept for a WEKA client (CoreSpecCount, MemSpecLimit) are no job's: shared out without them, so a job of
    all the node's GPUs still fits."""
    shares = []
    for g in groups:
        if g.type.gpus <= 0:
            continue
        cores, mem = specialized(plan, g) if plan is not None else (0, 0)
        t = g.type
        shares.append(((t.sockets * t.cores_per_socket - cores) * t.threads_per_core // t.gpus,
                       (real_memory_mib(t.memory_gb, memory_reserve_gb(slurm, t.memory_gb)) - mem) // t.gpus))
    if not shares:
        return None, None
    cpus = min(c for c, _ in shares)  # 0 when a node has fewer CPUs than GPUs: no CPU default then
    return cpus or None, max(1, min(m for _, m in shares))


def _partition_line(part: Partition, nodes: str, default: bool, per_gpu: tuple[int | None, int | None] = (None, None),
                    exclusive: bool = False) -> str:
    return key_values([
        ("PartitionName", part.name),
        ("Nodes", nodes),
        ("Default", "YES" if default else None),
        ("MaxTime", part.max_time),
        ("DefCpuPerGPU", per_gpu[0]),
        ("DefMemPerGPU", per_gpu[1]),
        ("AllowAccounts", ",".join(part.allow_accounts) or None),
        ("OverSubscribe", "EXCLUSIVE" if exclusive else None),
        ("State", "UP"),
    ], f"partition {part.name}")


def gres_lines(groups: Sequence[GroupPlan], version: Release, dev_dir: str = DEV_DIR) -> list[str]:
    """One line per node group and socket: the GPUs of that socket with all the socket's cores.

    Cores are logical indices (gres.conf(5) Cores: "a logical core index must be specified instead of the
    physical core index ... Core 0 will be the first core on the first socket"): socket s has cores
    s*C .. (s+1)*C-1 for C cores per socket, whatever the OS numbers its CPUs. Cloud instance types
    declare no socket layout of their own (the plan assumes one), so their lines carry no Cores=."""
    lines = []
    dev = dev_dir.rstrip("/") or ""
    for g in groups:
        t = g.type
        if not t.gpus or not t.gpu_model:
            continue
        amd = _is_amd(g)
        if amd:
            prefix, base = f"{dev}/dri/renderD", AMD_RENDER_MINOR
        else:
            prefix, base = f"{dev}/nvidia", 0
        c = t.cores_per_socket
        for socket, first, last in gpus_by_socket(t.gpus, t.sockets):
            lines.append(key_values([
                ("NodeName", g.hostlist),
                ("Name", "gpu"),
                ("Type", gres_type(t.gpu_model)),
                ("File", device_files(prefix, base + first, base + last)),
                ("Cores", index_range(socket * c, socket * c + c - 1) if t.server is not None else None),
                ("Flags", "amd_gpu_env" if amd and supports(version, GRES_ENV_FLAGS) else None),
            ], f"gres.conf line of node group {g.name}"))
    return lines


# --- topology (planned by clusterctl.plan.topology, written here) ---------------------------------------

def switch_line(sw: Switch) -> str:
    """A topology.conf ``SwitchName=`` line."""
    return key_values([("SwitchName", sw.name), ("Switches", sw.switches), ("Nodes", sw.nodes)], "topology switch")


def block_line(b: Block) -> str:
    """A topology.conf ``BlockName=`` line."""
    return key_values([("BlockName", b.name), ("Nodes", b.nodes)], "topology block")


def checked_switches(switches: list[Switch]) -> list[Switch]:
    """``switches``, refused when a name is longer than topology.conf(5) allows."""
    for sw in switches:
        if len(sw.name) > SWITCH_NAME_MAX:
            raise SlurmRenderError(f"switch name {sw.name} is longer than {SWITCH_NAME_MAX} characters "
                                   "(topology.conf(5))")
    return switches


# --- the files ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Section:
    comment: str
    lines: tuple[str, ...]


def _kv(key: str, value: object) -> str:
    return key_values([(key, value)])


def _optional(key: str, value: object | None) -> tuple[str, ...]:
    """``(Key=Value,)`` when the blueprint sets the value, else nothing (the option keeps Slurm's default)."""
    return (_kv(key, value),) if value is not None else ()


def _topology_plugin(topology: str, version: Release) -> tuple[str | None, str]:
    """(TopologyPlugin value or None, comment)."""
    if topology == "tree":
        return "topology/tree", "topology.conf: one switch per scalable unit of the compute fabric"
    if topology == "block":
        if not supports(version, BLOCK_PLUGIN):
            return None, f"topology/block needs Slurm {BLOCK_PLUGIN.first}; not configured for {version}"
        return "topology/block", "topology.conf: one block per NVLink domain"
    if topology == "yaml":
        if not supports(version, TOPOLOGY_YAML):
            return None, f"topology.yaml needs Slurm {TOPOLOGY_YAML.first}; not configured for {version}"
        return None, "topology.yaml (read instead of TopologyPlugin and topology.conf)"
    return None, "no topology (topology: none)"


def srun_port_sections(plan: ClusterPlan) -> list[Section]:
    """With a host firewall, srun's listening ports come from a range the firewall admits (slurm.conf(5)
    SrunPortRange; without it they are ephemeral)."""
    if not firewall_enabled(plan):
        return []
    return [Section("srun listens on these ports for its steps' I/O; the host firewall admits them (slurm.conf(5) "
                    "SrunPortRange; docs/monitoring.md, \"Host firewall\")",
                    (_kv("SrunPortRange", "-".join(map(str, SRUN_PORT_RANGE))),))]


def slurm_conf(plan: ClusterPlan, version: Release, groups: Sequence[GroupPlan]) -> str:
    # size: slurm.conf's lines in the file's order, each one checked value; the sections are helpers already
    slurm = plan.slurm
    name = (slurm.cluster_name or plan.name).lower()
    with at(("slurm", "cluster_name") if slurm.cluster_name else ("name",)):
        conf_value(name, "ClusterName")
    if len(name) > CLUSTER_NAME_MAX:  # the name kinds refuse it when the blueprint loads; a guard for other plans
        refuse(Refusal(("slurm", "cluster_name") if slurm.cluster_name else ("name",),
                       f"ClusterName {name} is longer than {CLUSTER_NAME_MAX} characters (slurm.conf(5))",
                       f"set slurm.cluster_name to at most {CLUSTER_NAME_MAX} characters"))
    roles = slurm_roles(plan)
    controllers = roles.controllers
    if not controllers:
        refuse(Refusal(("slurm", "controllers"), f"slurm.controllers '{slurm.controllers}' is not a host list",
                       "write names like head[01-02] or head01,head02 (rule SLURM002)"))
    plugin, topo_comment = _topology_plugin(slurm.topology, version)
    control = [_kv("ClusterName", name), *(_kv("SlurmctldHost", c) for c in controllers),
               _kv("SlurmUser", "slurm"), _kv("AuthType", "auth/munge"),
               _kv("SlurmdSpoolDir", "/var/spool/slurmd"),
               # log files, rotated by the rendered slurm/logrotate/<daemon> (log_rotation)
               _kv("SlurmctldLogFile", LOG_FILES["slurmctld"]), _kv("SlurmdLogFile", LOG_FILES["slurmd"])]
    with at(("slurm", "state_save_location")):
        control.insert(-3, _kv("StateSaveLocation", conf_value(slurm.state_save_location, "StateSaveLocation")))
    # no SlurmctldParameters=enable_configless: the Ansible roles install the rendered files on every node
    # (one source of truth, reviewed in git); a slurmd with local files logs an error under configless
    elastic = {g.name for g in elastic_groups(plan, groups)}
    sections = [
        Section(f"control: {len(controllers)} slurmctld host(s), the first is the primary", tuple(control)),
        Section("accounting through slurmdbd; GPUs are a tracked resource", (
            _kv("AccountingStorageType", "accounting_storage/slurmdbd"),
            _kv("AccountingStorageHost", roles.primary_accounting),
            *_optional("AccountingStorageBackupHost", slurm.accounting_backup_host),
            _kv("AccountingStorageTRES", "gres/gpu"),
            _kv("JobAcctGatherType", "jobacct_gather/cgroup"),
        )),
        Section("scheduling: cores and memory are consumable, GPUs are GRES", (
            _kv("SelectType", "select/cons_tres"),
            _kv("SelectTypeParameters", "CR_Core_Memory"),
            _kv("GresTypes", "gpu"),
        )),
        scheduler_section(plan),
        Section(topo_comment, (_kv("TopologyPlugin", plugin),) if plugin else ()),
        *imex_switch_sections(plan, version),
        Section("jobs run in cgroups (cgroup.conf), tasks bound to cores", (
            _kv("ProctrackType", "proctrack/cgroup"),
            _kv("TaskPlugin", "task/cgroup,task/affinity"),
            _kv("PrologFlags", "Alloc,Contain"),
            _kv("MpiDefault", "pmix"),
        )),
        Section("node health (NHC) and reboots", (
            _kv("HealthCheckProgram", "/usr/local/sbin/node-health-check"),
            _kv("HealthCheckInterval", 300),
            _kv("HealthCheckNodeState", "ANY"),
            _kv("RebootProgram", "/usr/sbin/reboot"),
            *(() if elastic else (_kv("ResumeTimeout", REBOOT_RESUME_TIMEOUT_S),)),
        )),
        Section("prolog and epilog: every piece of prolog.d/epilog.d, in reverse alphabetical order (prolog_epilog.html; node_health installs "
                "the GPU health prolog and the cleanup epilog); a failing prolog drains the node and requeues the job "
                "held (slurm.conf(5) Prolog)", tuple(prolog_epilog_lines(version))),
        *srun_port_sections(plan),
        Section("per-job private /tmp and /dev/shm on node-local storage (job_container.conf; slurm.conf(5) "
                "JobContainerType: needs PrologFlags=Contain)", (_kv("JobContainerType", "job_container/tmpfs"),)),
        Section(f"scale ({plan.nodes} nodes; SchedMD's Large Cluster Administration Guide, big_sys.html, and "
                "slurm.conf(5))", tuple(_scale_lines(plan.nodes, cloud_tree_width(plan, version) if elastic else None))),
        Section("scheduling priority and limits: fair share per account, QOS, limits enforced from slurmdbd "
                "(jobs of users without an association are refused: sacctmgr add account/user first)", (
            _kv("PriorityType", "priority/multifactor"),
            _kv("PriorityDecayHalfLife", "7-0"),
            _kv("PriorityMaxAge", "7-0"),
            _kv("PriorityWeightFairshare", 10000),
            _kv("PriorityWeightAge", 1000),
            _kv("PriorityWeightQOS", 10000),
            _kv("PriorityWeightPartition", 1000),
            _kv("AccountingStorageEnforce", "associations,limits,qos"),
        )),
        *power_save_sections(plan, version, groups),
        Section("nodes: one line per node group" + WEKA_SPEC_COMMENT * any(specialized(plan, g)[0] for g in groups),
                tuple(node_line(g, memory_reserve_gb(slurm, g.type.memory_gb), g.name in elastic,
                                specialized(plan, g)) for g in groups)),
        Section("partitions", tuple(partition_lines(plan))),
    ]
    return render_template("slurm/slurm.conf.j2", header=header(plan), version=str(version), sections=sections)


def scheduler_section(plan: ClusterPlan) -> Section:
    """Backfill and job-count limits sized from the plan (:func:`clusterctl.plan.scheduler.scheduler_plan`)."""
    sched = scheduler_plan(plan)
    longest = "UNLIMITED" if sched.longest_min is None else f"{sched.longest_min} min"
    return Section(
        f"backfill looks bf_window={sched.bf_window_min} min ahead, at least the longest MaxTime ({longest}) up to "
        "its 30-day maximum, with bf_resolution keeping the default's 1,440 slots; bf_continue resumes after lock "
        "releases; max_rpc_cnt defers scheduling at half of the 256 RPC threads; MaxJobCount 10 per node (default "
        "10,000), MaxArraySize a tenth of it (slurm.conf(5) SchedulerParameters, MaxJobCount, MaxArraySize; "
        "sched_config.html; docs/slurm.md \"Scheduler parameters\"; slurm.scheduler overrides)", (
            _kv("SchedulerType", "sched/backfill"),
            "SchedulerParameters=" + ",".join(sched.parameters),  # names and whole numbers only: nothing to escape
            _kv("MaxJobCount", sched.max_job_count),
            _kv("MaxArraySize", sched.max_array_size),
        ))


def imex_switch_sections(plan: ClusterPlan, version: Release) -> list[Section]:
    """SwitchType=switch/nvidia_imex where a group's NVLink domain spans nodes (GB200/GB300 NVL72): each job gets
    its own IMEX channel; nothing on other clusters, and nothing before 24.05 (rule NVLINK005)."""
    groups = multi_node(plan)
    if not groups:
        return []
    domains = ", ".join(f"{g.name} NVL{g.nvlink_domain_gpus}" for g in groups)
    if not supports(version, SWITCH_NVIDIA_IMEX):
        return [Section(f"multi-node NVLink ({domains}): switch/nvidia_imex needs Slurm {SWITCH_NVIDIA_IMEX.first}; "
                        f"not configured for {version}, so jobs get no IMEX channel (rule NVLINK005)", ())]
    return [Section(
        f"multi-node NVLink ({domains}): IMEX channels are not created by default and CUDA's multi-node memory "
        f"calls fail without one (NVIDIA IMEX guide, IMEX Channels); switch/nvidia_imex gives each job its own "
        f"channel (slurm.conf(5) SwitchType, Slurm {SWITCH_NVIDIA_IMEX.first}); imex_channel_count is the plugin's "
        "and the "
        f"driver's default (NVreg_ImexChannelCount), channel 0 reserved", (
            _kv("SwitchType", "switch/nvidia_imex"),
            f"SwitchParameters=imex_channel_count={IMEX_CHANNEL_COUNT}",  # constants only: key=value inside
        ))]


# --- power saving of elastic cloud node groups (docs/slurm.md, "Power saving") ------------------------------

REBOOT_RESUME_TIMEOUT_S = 900
"""ResumeTimeout without power saving: `scontrol reboot` of a DGX/HGX server (slow firmware POST; DeepOps' 900)"""
POWER_SAVE_PROGRAMS = (("SuspendProgram", "/usr/local/sbin/clusterctl-suspend", "deletes the idle nodes' instances"),
                       ("ResumeProgram", "/usr/local/sbin/clusterctl-resume", "creates the instances of nodes a job was "
                        "given"),
                       ("ResumeFailProgram", "/usr/local/sbin/clusterctl-resume-fail", "deletes the instances of "
                        "nodes that did not register within ResumeTimeout"))
"""symbolic links to clusterctl-power-save, which dispatches on its name (installed by roles/slurm_power_save)"""
def elastic_groups(plan: ClusterPlan, groups: Sequence[GroupPlan]) -> list[GroupPlan]:
    """Those of the Slurm node groups ``groups`` that Slurm's power saving creates and deletes
    (:func:`clusterctl.plan.cloud.elastic_groups`)."""
    elastic = {g.index for g in cloud_elastic_groups(plan)}
    return [g for g in groups if g.index in elastic]


def power_save_sections(plan: ClusterPlan, version: Release, groups: Sequence[GroupPlan]) -> list[Section]:
    """Slurm power saving when a node group is elastic (power_save.html, elastic_computing.html, slurm.conf(5));
    nothing for static clusters. Every option is one the blueprint's release has."""
    elastic = elastic_groups(plan, groups)
    if not elastic:
        return []
    ps = plan.slurm.power_save
    static = [g.hostlist for g in groups if g not in elastic]
    names = ", ".join(f"{g.name} ({g.count})" for g in elastic)
    lines = []

    def add(line: str, why: str) -> None:
        lines.extend([f"# {why}", line])

    for key, program, what in POWER_SAVE_PROGRAMS:
        add(_kv(key, program), f"{what} through the provider's CLI; run by slurmctld as SlurmUser with the host list "
            "as argument (power_save.html; installed by roles/slurm_power_save)")
    add(_kv("SuspendTime", ps.suspend_time_s), "seconds idle before SuspendProgram deletes the instance "
        "(slurm.power_save.suspend_time_s; slurm.conf(5) SuspendTime)")
    add(_kv("SuspendTimeout", ps.suspend_timeout_s), "the deletion must be done by then; only afterwards may the "
        "node be resumed again (slurm.conf(5) SuspendTimeout)")
    add(_kv("ResumeTimeout", ps.resume_timeout_s), "create, boot, bootstrap (Ansible) and register: a node not "
        "registered by then is marked DOWN and its job requeued (slurm.conf(5) ResumeTimeout); also `scontrol "
        "reboot`'s limit for static nodes")
    add(_kv("ResumeRate", ps.resume_rate_per_min), "nodes created per minute at most, 0 = no limit (slurm.conf(5) "
        "ResumeRate, default 300)")
    add(_kv("SuspendRate", ps.suspend_rate_per_min), "nodes deleted per minute at most, 0 = no limit (slurm.conf(5) "
        "SuspendRate, default 60)")
    if static:
        add(key_values([("SuspendExcNodes", static)], "SuspendExcNodes"), "the static nodes: never suspended "
            "(power_save.html: by default no node is excluded)")
    params = ["idle_on_node_suspend"]
    why = "idle_on_node_suspend: a node suspended while DOWN or DRAINED comes back IDLE and can be resumed again"
    if supports(version, CLOUD_REG_ADDRS):
        params.append("cloud_reg_addrs")
        why += ("; cloud_reg_addrs: NodeAddr and NodeHostName from the registering slurmd, so slurmctld needs no DNS "
                f"for the node (the default from {CLOUD_REG_ADDRS.removed}, which removed the option)")
    add(key_values([("SlurmctldParameters", params)], "SlurmctldParameters"), why + " (slurm.conf(5) "
        "SlurmctldParameters)")
    if supports(version, NO_ADDR_CACHE):
        add(_kv("CommunicationParameters", "NoAddrCache"), "an instance created again has another address: no "
            f"cached node addresses (slurm.conf(5) CommunicationParameters; removed in {NO_ADDR_CACHE.removed})")
    flags = ["KeepPartState"] + (["KeepPowerSaveSettings"] if supports(version, KEEP_POWER_SAVE_SETTINGS) else [])
    add(key_values([("ReconfigFlags", flags)], "ReconfigFlags"), "scontrol reconfigure (the roles' handler) keeps "
        "a partition state an operator set" + (" and SuspendExcNodes changed with scontrol" if len(flags) > 1 else
                                               f"; KeepPowerSaveSettings needs {KEEP_POWER_SAVE_SETTINGS.first}")
        + " (slurm.conf(5) ReconfigFlags)")
    if supports(version, PRIVATE_DATA_CLOUD):
        add(_kv("PrivateData", "cloud"), "powered-down cloud nodes are listed by sinfo (idle~), hidden otherwise "
            f"before {PRIVATE_DATA_CLOUD.removed} (slurm.conf(5) PrivateData)")
    width = cloud_tree_width(plan, version)
    fanout = (f"TreeWidth {width} (scale section): before {TREE_WIDTH_NODE_COUNT.removed} slurmd daemons do not fan "
              "messages out to cloud nodes (elastic_computing.html)" if width else "")
    return [Section(
        f"power saving: elastic node groups {names} are created by ResumeProgram when a job needs them and deleted "
        f"by SuspendProgram after SuspendTime idle (power_save.html, elastic_computing.html, slurm.conf(5) of "
        f"{version}); every other node is in SuspendExcNodes" + (f"; {fanout}" if fanout else ""),
        tuple(lines))]


PROLOG_DIR = "/etc/slurm/prolog.d"
EPILOG_DIR = "/etc/slurm/epilog.d"
PROLOG_RUNNER = {"Prolog": "/usr/local/sbin/slurm-prolog", "Epilog": "/usr/local/sbin/slurm-epilog"}
"""before :data:`PROLOG_GLOB`: one program each, installed by node_health, running the directory's pieces"""
PROLOG_EPILOG_TIMEOUT_S = 240
"""PrologEpilogTimeout: the prolog's budget is the health check (under 60 s) plus ``dcgmi diag -r 1`` (bounded
at 120 s by the prolog piece); without a timeout slurmd waits for a hung prolog forever (slurm.conf(5): "The
default behavior is to wait indefinitely"); a prolog past it drains the node and requeues the job"""


def prolog_epilog_lines(version: Release) -> list[str]:
    """Prolog/Epilog as globs over the piece directories (22.05+), else the runner scripts, and their timeout."""
    if supports(version, PROLOG_GLOB):
        lines = [_kv("Prolog", f"{PROLOG_DIR}/*"), _kv("Epilog", f"{EPILOG_DIR}/*")]
    else:
        lines = [_kv(k, v) for k, v in PROLOG_RUNNER.items()]
    return [*lines, _kv("PrologEpilogTimeout", PROLOG_EPILOG_TIMEOUT_S)]


def job_container_conf(plan: ClusterPlan, version: Release) -> str:
    base = job_tmp_base(plan)
    with at(("storage",)):
        conf_value(base, "storage mount point of the local tier (job_container.conf BasePath)")
    lines = [_kv("AutoBasePath", "true"), _kv("BasePath", base)]
    if supports(version, JOB_CONTAINER_DIRS):
        lines.append(_kv("Dirs", "/tmp,/dev/shm"))
    return render_template("slurm/job_container.conf.j2", header=header(plan), lines=lines,
                           dirs=supports(version, JOB_CONTAINER_DIRS))


def _scale_lines(nodes: int, width: int | None = None) -> list[str]:
    """Timeouts and intervals that keep slurmctld responsive as the node count grows, each with its reason
    in docs/slurm.md ("Scale"): the fan-out, slower messages at scale, and no node declared DOWN or a step
    unkillable while a large job's nodes tear down. ``width``: TreeWidth when power saving needs another
    (:func:`clusterctl.plan.slurm.cloud_tree_width`)."""
    large = nodes > 1000
    return [
        _kv("TreeWidth", width or tree_width(nodes)),
        _kv("MessageTimeout", 30 if large else 10),
        _kv("SlurmdTimeout", 300),
        _kv("UnkillableStepTimeout", 180),
        _kv("EpilogMsgTime", 2000),
        _kv("JobAcctGatherFrequency", 60 if large else 30),  # a plain number is the task interval
        _kv("ReturnToService", 1),
    ]


def _autodetect(mode: str, version: Release) -> tuple[str | None, str]:
    if mode == "nvidia" and not supports(version, AUTODETECT_NVIDIA):
        return None, (f"AutoDetect=nvidia needs Slurm {AUTODETECT_NVIDIA.first}; not emitted for {version}: "
                      "the lines below are the only source")
    if mode == "off":
        return "off", "no autodetection: the lines below are the only source"
    return mode, "autodetected GPUs are checked against the lines below"


def _without_nvml(install) -> str:
    """Why AutoDetect=nvml is not rendered for this install source (SLURM022 says the same)."""
    what = ("the distribution's slurm-wlm is built without NVML (slurm-wlm-nvml-plugin not installed: "
            "slurm.install.gpu_nvml false)" if install.kind == "distro" else
            f"the {install.kind} Slurm packages have no gpu/nvml plugin (slurm.install.gpu_nvml false)")
    return (f"AutoDetect=nvml not emitted: {what}, and slurmd is fatal on AutoDetect=nvml without it "
            "(gres.conf(5) AutoDetect); the lines below are the only source")


def gres_conf(plan: ClusterPlan, version: Release, groups: Sequence[GroupPlan], dev_dir: str) -> str:
    mode, comment = _autodetect(plan.slurm.gres_autodetect, version)
    if mode == "nvml" and not provides_nvml(plan.slurm.install):
        mode, comment = "off", _without_nvml(plan.slurm.install)
    return render_template("slurm/gres.conf.j2", header=header(plan), comment=comment,
                           autodetect=_kv("AutoDetect", mode) if mode else None,
                           lines=gres_lines(groups, version, dev_dir))


def topology_conf(plan: ClusterPlan, version: Release, groups: Sequence[GroupPlan]) -> str:
    slurm = plan.slurm
    if slurm.topology == "tree":
        lines = [switch_line(s) for s in checked_switches(tree_switches(plan, groups))]
    else:
        lines = [block_line(b) for b in nvlink_blocks(plan, groups)]
        if slurm.block_sizes and supports(version, BLOCK_SIZES):
            lines.append(_kv("BlockSizes", slurm.block_sizes))
        elif slurm.block_sizes:
            lines.append(f"# BlockSizes needs Slurm {BLOCK_SIZES.first}; not emitted for {version}")
    return render_template("slurm/topology.conf.j2", header=header(plan), lines=lines)


def topology_yaml(plan: ClusterPlan, groups: Sequence[GroupPlan]) -> str:
    """topology.yaml(5): the compute-fabric tree, plus the NVLink blocks when there are multi-node
    domains (then the block topology is the cluster default, as NVLINK004 asks)."""
    slurm = plan.slurm
    switches = checked_switches(tree_switches(plan, groups))
    for sw in switches:  # the same values as topology.conf: Slurm parses them as names and host lists
        switch_line(sw)
    has_domains = bool(multi_node(plan))
    topologies = [{"name": TREE_TOPOLOGY, "default": not has_domains, "kind": "tree", "switches": switches}]
    if has_domains:
        topologies.append({"name": BLOCK_TOPOLOGY, "default": True, "kind": "block",
                           "block_sizes": list(slurm.block_sizes), "blocks": nvlink_blocks(plan, groups)})
    for b in topologies[-1].get("blocks", ()):
        block_line(b)
    return render_template("slurm/topology.yaml.j2", header=header(plan), topologies=topologies)


def cgroup_conf(plan: ClusterPlan, version: Release) -> str:
    lines = []
    if supports(version, CGROUP_PLUGIN):
        lines.append(_kv("CgroupPlugin", "autodetect"))
    lines += [_kv("ConstrainCores", "yes"), _kv("ConstrainDevices", "yes"), _kv("ConstrainRAMSpace", "yes")]
    return render_template("slurm/cgroup.conf.j2", header=header(plan), lines=lines)


LOG_FILES = {"slurmctld": "/var/log/slurm/slurmctld.log", "slurmd": "/var/log/slurm/slurmd.log",
             "slurmdbd": "/var/log/slurm/slurmdbd.log"}
"""SlurmctldLogFile, SlurmdLogFile (slurm.conf) and LogFile (slurmdbd.conf): /var/log/slurm, which Debian's
slurmctld, slurmd and slurmdbd packages create for SlurmUser"""
LOG_ROTATION = {"rotate": 14, "size": "100M"}
"""two weeks of daily logs at most, or 14 files of 100 MB for a slurmctld at debug level on a large cluster"""


def log_rotation(plan: ClusterPlan, daemon: str) -> str:
    """``/etc/logrotate.d/<daemon>``: the file Debian's package ships under the same name (so no log is listed
    twice, which logrotate refuses), but reopening the log with SIGUSR2 as slurmctld(8), slurmd(8) and
    slurmdbd(8) document for logrotate, instead of the package's ``invoke-rc.d <daemon> reconfig``: for
    slurmctld that is a full reconfiguration of the cluster every rotation."""
    return render_template("slurm/logrotate.j2", header=header(plan), log=LOG_FILES[daemon], daemon=daemon,
                           **LOG_ROTATION)


def _database_tls(ca: str | None) -> tuple[str, ...]:
    """``StorageParameters=SSL_CA=<ca>`` for the site's own database server (SLURM010 requires ``database_ca`` with
    ``database_host``): slurmdbd hands it to mysql_ssl_set and connects over TLS checked against that CA. The value
    is one of StorageParameters' comma-separated key=value pairs, so the path may hold neither ',' nor '='."""
    if ca is None:
        return ()
    with at(("slurm", "database_ca")):
        return ("StorageParameters=SSL_CA=" + conf_value(ca, "slurm.database_ca", extra=","),)


def slurmdbd_conf(plan: ClusterPlan) -> str:
    slurm = plan.slurm
    dbd_host = slurm_roles(plan).primary_accounting
    backup = slurm.accounting_backup_host
    # StorageHost: localhost (each slurmdbd of a replicated pair uses its own host's database), the primary's
    # host (accounting_database: primary) or the site's server (plan/accounting.py)
    lines = [_kv("AuthType", "auth/munge"), _kv("DbdHost", dbd_host),
             *_optional("DbdBackupHost", backup), _kv("SlurmUser", "slurm"),
             _kv("LogFile", LOG_FILES["slurmdbd"]),
             _kv("StorageType", "accounting_storage/mysql"),
             _kv("StorageHost", accounting_database(plan).storage_host),
             *_database_tls(slurm.database_ca),
             _kv("StorageUser", "slurm"), _kv("StorageLoc", STORAGE_LOC),
             # purge old records (slurmdbd.conf(5)): job and step tables of a busy cluster grow by millions of rows
             # a month and slow every sacct and the slurmdbd upgrade; usage is kept longer for fair share and
             # reports; what is purged is archived first
             *keeping_lines(plan)]
    # an Ansible template: no text from the blueprint may open a Jinja delimiter
    return render_template("slurm/slurmdbd.conf.j2.j2", header=jinja_literal(header(plan)),
                           lines=[jinja_literal(line) for line in lines], password_variable="slurmdbd_storage_pass")


def render(plan: ClusterPlan, *, dev_dir: str = DEV_DIR) -> dict[str, str]:
    """The slurm/ files of docs/render-layout.md; nothing when the blueprint has no ``slurm:`` section.

    ``dev_dir`` is where gres.conf's ``File=`` device nodes live (``/dev`` on real nodes); the real-Slurm
    integration test points it at stand-in device nodes it creates."""
    slurm = plan.slurm
    if slurm is None:
        return {}
    version = slurm_version(plan)
    groups = node_groups(plan)
    for g in groups:  # SLURM011 reports these first
        refuse(memory_refusal(plan, g))
    files = {
        "slurm/slurm.conf": slurm_conf(plan, version, groups),
        "slurm/gres.conf": gres_conf(plan, version, groups, dev_dir),
        "slurm/cgroup.conf": cgroup_conf(plan, version),
        "slurm/job_container.conf": job_container_conf(plan, version),
        "slurm/slurmdbd.conf.j2": slurmdbd_conf(plan),
        **{f"slurm/logrotate/{daemon}": log_rotation(plan, daemon) for daemon in LOG_FILES},
        **slurm_accounting.render(plan),
    }
    if slurm.topology in ("tree", "block") and _topology_plugin(slurm.topology, version)[0]:
        files["slurm/topology.conf"] = topology_conf(plan, version, groups)
    elif slurm.topology == "yaml" and supports(version, TOPOLOGY_YAML):
        files["slurm/topology.yaml"] = topology_yaml(plan, groups)
    return files
