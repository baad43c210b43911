"""What the plan means for Slurm: release facts, where controller state lives, slurmd's message fan-out.

Facts both the rules (``clusterctl.rules.slurm``, which judge the blueprint's Slurm before anything is
rendered) and the slurm and ansible targets (which render for one release) need: one place, so a finding and
a rendered file never disagree. The release facts come from the Slurm CHANGELOG and man pages as summarised in
the project's reference notes (slurm-nccl.md section 6) and from SchedMD/slurm ``src/common/read_config.c``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from clusterctl.path_policy import under
from clusterctl.plan.model import ClusterPlan, GroupPlan


class Release(NamedTuple):
    """A Slurm major release: 24.05 is Release(24, 5); compares like the (year, month) tuple it is."""

    year: int
    month: int

    def __str__(self) -> str:
        return f"{self.year:02d}.{self.month:02d}"


_VERSION = re.compile(r"(\d{2})\.(\d{2})(?:\.(\d+))?")
RELEASE_MONTHS = ("02", "05", "08", "11")
"""months of Slurm major releases (08 was used by 18.08 and 21.08)"""
RELEASES = tuple(Release(y, m) for y, m in ((17, 2), (17, 11), (18, 8), (19, 5), (20, 2), (20, 11), (21, 8), (22, 5),
                                            (23, 2), (23, 11), (24, 5), (24, 11), (25, 5), (25, 11)))
"""Slurm's major releases so far, in order: the release after a feature's last one is the one that removed it"""


def parse_version(text: str) -> Release | None:
    """``"24.05"`` or ``"24.05.3"`` -> Release(24, 5); None for anything that is not a Slurm release."""
    m = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if not m or m.group(2) not in RELEASE_MONTHS:
        return None
    return Release(int(m.group(1)), int(m.group(2)))


def install_release(install) -> Release | None:
    """major.minor of the pinned package version ("24.05.4-1" -> Release(24, 5)), or None when none is pinned."""
    m = re.match(r"(\d{2})\.(\d{2})", install.version or "")
    return Release(int(m.group(1)), int(m.group(2))) if m else None


DISTRO_SLURM: dict[str, Release] = {
    "ubuntu-20.04": Release(19, 5), "ubuntu-22.04": Release(21, 8), "ubuntu-24.04": Release(23, 11),
    "debian-11": Release(20, 11), "debian-12": Release(22, 5), "debian-13": Release(24, 11),
}
"""software.os -> the Slurm release its own archive ships as slurm-wlm (packages.ubuntu.com focal 19.05.5, jammy
21.08.5, noble 23.11.4; packages.debian.org bullseye 20.11.7, bookworm 22.05.8, trixie 24.11.5)"""


def slurm_release(plan: ClusterPlan) -> Release | None:
    """The release the plan's Slurm files are rendered for: ``slurm.version`` parsed, once. None without a
    ``slurm:`` section and when the version is no Slurm release (:func:`release_refusal` says which)."""
    return parse_version(plan.slurm.version) if plan.slurm is not None else None


# --- the release table --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Feature:
    """An option or behaviour that depends on the Slurm release: the first release that has it (None: every release
    rendered), the last one (None: still there), and where that is written."""

    what: str
    first: Release | None
    last: Release | None
    source: str

    @property
    def removed(self) -> Release | None:
        """the first release without it: the one after :attr:`last` (None while it is still there)"""
        return None if self.last is None else RELEASES[RELEASES.index(self.last) + 1]

    def in_release(self, release: Release) -> bool:
        return (self.first is None or release >= self.first) and (self.removed is None or release < self.removed)


OLDEST_RENDERED = Release(20, 2)
"""oldest release rendered: select/cons_tres is 19.05 (NEWS, its 19.05 entries), gpu/rsmi and configless are 20.02
(NEWS 20.02.0pre1 "Add gpu/rsmi plugin to support AMD GPUs"; CONFIGLESS); older ones are refused (SLURM003)"""
OLDEST_SUPPORTED = Release(23, 11)
"""older releases are out of SchedMD support (they support the two most recent major releases): SLURM003 warns"""

CONFIGLESS = Feature(
    "`SlurmctldParameters=enable_configless` (not rendered: the roles install the files)", Release(20, 2), None,
    'NEWS 20.02.2 "configless - fix plugstack.conf handling for client commands"; slurm.conf(5) SlurmctldParameters')
GRES_ENV_FLAGS = Feature(
    "gres.conf `Flags=amd_gpu_env`", Release(21, 8), None,
    'NEWS "Changes in Slurm 21.08.0": environment flags in gres.conf; gres.conf(5) of 22.05 Flags')
CGROUP_PLUGIN = Feature(
    "cgroup.conf `CgroupPlugin=autodetect` (and cgroup/v2); 21.08 had cgroup/v1 only", Release(22, 5), None,
    'cgroup.conf(5) of 22.05; RELEASE_NOTES 22.05 "Added support for Cgroup Version 2"')
PROLOG_GLOB = Feature(
    "`Prolog=`/`Epilog=` as a glob (`/etc/slurm/prolog.d/*`); older renders name the runner scripts "
    "`/usr/local/sbin/slurm-prolog` and `slurm-epilog`, which run the same directories' pieces", Release(22, 5), None,
    'slurm.conf(5) of 22.05.8 (Debian bookworm): "A glob pattern (See glob (7)) may also be used to run more than one '
    'prolog script"; the first release with it is not verified here')
JOB_CONTAINER_DIRS = Feature(
    "job_container.conf `Dirs=`", Release(23, 2), None,
    "absent from 22.05.8 (its job_container_tmpfs.so knows AutoBasePath, BasePath, InitScript and NodeName only, "
    "and always makes /tmp and /dev/shm private); job_container.conf(5) has it from 23.02")
BLOCK_PLUGIN = Feature(
    "`TopologyPlugin=topology/block`", Release(23, 11), None, "topology/block added 2023-08 (tag slurm-23-11-0-0rc1)")
BLOCK_SIZES = Feature(
    "topology.conf `BlockSizes` (23.11 had BlockLevels)", Release(24, 5), None,
    "BlockLevels replaced by BlockSizes in 24.05 (CHANGELOG/slurm-24.05.md)")
SWITCH_NVIDIA_IMEX = Feature(
    "`SwitchType=switch/nvidia_imex` (multi-node NVLink only; older: rule NVLINK005)", Release(24, 5), None,
    'NEWS/CHANGELOG 24.05: "switch/nvidia_imex - New plugin to manage NVIDIA IMEX channels"; slurm.conf(5) '
    "SwitchType")
AUTODETECT_NVIDIA = Feature(
    "gres.conf `AutoDetect=nvidia` (no NVML library needed)", Release(24, 11), None,
    "gres.conf(5); reference notes slurm-nccl.md sec. 6")
TOPOLOGY_YAML = Feature(
    "`topology.yaml`", Release(25, 5), None,
    'CHANGELOG/slurm-25.05.md: "Add ability to configure multiple topology plugins via the new topology.yaml"; '
    'topology.yaml(5): "Slurm will first check for topology.yaml. If this file exists, topology.conf will be ignored"')
CLOUD_REG_ADDRS = Feature(
    "`SlurmctldParameters=cloud_reg_addrs` (power saving only; the default from 23.11)", Release(20, 11),
    Release(23, 2), 'NEWS 20.11.0rc1; NEWS 23.11.0rc1 "Remove cloud_reg_addrs and make it default behavior"')
NO_ADDR_CACHE = Feature(
    "`CommunicationParameters=NoAddrCache` (power saving only)", Release(18, 8), Release(23, 2),
    'NEWS 18.08.6; NEWS 23.11.0rc1 "Remove NoAddrCache CommunicationParameter": slurmctld always takes a cloud '
    "node's address from its registration")
PRIVATE_DATA_CLOUD = Feature(
    "`PrivateData=cloud` needed to list powered-down cloud nodes (power saving only)", None, Release(22, 5),
    'slurm.conf(5) of 22.05 PrivateData "cloud"; NEWS 23.02.0rc1 "Change cloud nodes to show by default. '
    'PrivateData=cloud is no longer needed"')
KEEP_POWER_SAVE_SETTINGS = Feature(
    "`ReconfigFlags=KeepPowerSaveSettings` (power saving only)", Release(23, 2), None,
    "NEWS 23.02.0rc1; slurm.conf(5) of 23.02 ReconfigFlags")
TREE_WIDTH_NODE_COUNT = Feature(
    "`TreeWidth` at least the node count (power saving only): slurmd does not fan messages out to cloud nodes",
    None, Release(23, 2),
    "SchedMD's Cloud Scheduling Guide (elastic_computing.html of 22.05): \"configure TreeWidth to a number at least as "
    'large as the maximum node count"; NEWS 23.11.0rc1 "Enable fanout for dynamic and unaddresable cloud nodes"')

PMIX_SONAME = Feature(
    "`MpiDefault=pmix`: the mpi/pmix plugin dlopens the versioned `libpmix.so.2` (the PMIx runtime package is enough); "
    "older releases dlopen the unversioned `libpmix.so`, which only `libpmix-dev` ships (the roles install the one "
    "the release needs)", Release(24, 11), None,
    'SchedMD 24.11.5 src/plugins/mpi/pmix/mpi_pmix.c _libpmix_open: "libpmix.so.2"; Debian 12\'s 22.05.8 '
    "mpi_pmix_v4.so holds \"libpmix.so\" (and trixie's 24.11.5 mpi_pmix_v5.so \"libpmix.so.2\"); the first release "
    "with the versioned name is not verified here")

RECONFIGURE_ADDS_NODES = Feature(
    "`scontrol reconfigure` adds and removes nodes (older: slurmctld restarts when the node lines change; the roles "
    "do either)", Release(24, 11), None,
    "SchedMD FAQ, \"How should I add nodes to Slurm?\": \"recommended on Slurm 24.05 and older\": restart slurmctld; "
    "\"sufficient on Slurm 24.11 and newer\": update slurm.conf on all nodes, run scontrol reconfigure")

FEATURES: tuple[Feature, ...] = (
    CONFIGLESS, GRES_ENV_FLAGS, CGROUP_PLUGIN, PROLOG_GLOB, JOB_CONTAINER_DIRS, BLOCK_PLUGIN, BLOCK_SIZES,
    SWITCH_NVIDIA_IMEX, AUTODETECT_NVIDIA, TOPOLOGY_YAML, CLOUD_REG_ADDRS, NO_ADDR_CACHE, PRIVATE_DATA_CLOUD,
    KEEP_POWER_SAVE_SETTINGS, TREE_WIDTH_NODE_COUNT, PMIX_SONAME, RECONFIGURE_ADDS_NODES)
"""every release-gated option or behaviour the rules judge and the targets render by (docs/slurm.md, "Version
table", is generated from it: tests/plan/test_slurm_features.py). Options not listed (ClusterName, SlurmctldHost,
AccountingStorage*, SelectType=select/cons_tres, GresTypes, TaskPlugin, ProctrackType, JobAcctGatherType,
PrologFlags=Alloc,Contain, MpiDefault=pmix, HealthCheck*, ResumeTimeout, RebootProgram, topology/tree, gres.conf
AutoDetect=nvml|rsmi|off, Constrain*) exist in every release from :data:`OLDEST_RENDERED` on: slurm.conf(5),
gres.conf(5) and cgroup.conf(5) of 22.05.8 (Debian bookworm's slurm-wlm, the release the integration test runs)
list all of them."""


def supports(release: Release | None, feature: Feature) -> bool:
    """Whether ``release`` has ``feature``; False without a release (no Slurm, or no parsable version)."""
    return release is not None and feature.in_release(release)


def slurm_supports(plan: ClusterPlan, feature: Feature) -> bool:
    """Whether the plan's Slurm release has ``feature`` (False without Slurm or a parsable version)."""
    return supports(slurm_release(plan), feature)


def version_table() -> str:
    """docs/slurm.md's version table: one Markdown row per :data:`FEATURES` entry."""
    rows = ["| option or behaviour | first release | last release | source |", "|---|---|---|---|"]
    for f in FEATURES:
        rows.append(f"| {f.what} | {f.first or 'every release rendered'} | {f.last or 'still there'} | "
                    f"{f.source} |")
    return "\n".join(rows) + "\n"


# --- what render refuses, decided here so SLURM003 and SLURM011 refuse it first -----------------------------------

@dataclass(frozen=True, slots=True)
class Refusal:
    """A plan the slurm target cannot write: where in the blueprint, why, and what to change."""

    path: tuple
    message: str
    hint: str


def release_refusal(plan: ClusterPlan) -> Refusal | None:
    """Why the plan's ``slurm.version`` cannot be rendered: not a Slurm release, or older than
    :data:`OLDEST_RENDERED`; None when it can (or there is no Slurm)."""
    if plan.slurm is None:
        return None
    release = slurm_release(plan)
    if release is None:
        return Refusal(("slurm", "version"), f"Slurm version '{plan.slurm.version}' is not a Slurm release (YY.MM "
                                             f"with MM one of {', '.join(RELEASE_MONTHS)})",
                       'quote it and write it as Slurm does, e.g. version: "24.11"')
    if release < OLDEST_RENDERED:
        return Refusal(("slurm", "version"), f"Slurm {release} is older than {OLDEST_RENDERED}, the oldest release "
                                             "rendered (select/cons_tres GPU binding, gpu/rsmi, configless)",
                       f"plan a current release (24.11 or newer; {OLDEST_RENDERED} at the very least)")
    return None


def memory_reserve_gb(slurm, memory_gb: float) -> float:
    """Memory kept back from RealMemory: ``slurm.memory_reserve_gb``, else 3 % of the node and at least 16 GB.

    The kernel and firmware take 1-2 % of installed memory before Slurm sees any (a 2 TiB DGX reports
    about 2,015 GiB); a RealMemory above what slurmd measures drains the node with "Low RealMemory"."""
    if slurm.memory_reserve_gb is not None:
        return slurm.memory_reserve_gb
    return max(16.0, round(0.03 * memory_gb))


def real_memory_mib(memory_gb: float, reserve_gb: float) -> int:
    """slurm.conf RealMemory in MiB: the node's memory less what is kept for the OS and daemons (0 or less: none)."""
    return int((memory_gb - reserve_gb) * 1024)


def memory_refusal(plan: ClusterPlan, g: GroupPlan) -> Refusal | None:
    """Why node group ``g`` gets no RealMemory: the reserve leaves nothing of its nodes' memory."""
    memory_gb = g.type.memory_gb
    reserve = memory_reserve_gb(plan.slurm, memory_gb)
    if real_memory_mib(memory_gb, reserve) > 0:
        return None
    path = ("slurm", "memory_reserve_gb") if plan.slurm.memory_reserve_gb is not None else g.path + ("type",)
    return Refusal(path, f"memory_reserve_gb {reserve:g} leaves no memory of a {memory_gb:g} GB node",
                   f"keep memory_reserve_gb well below the smallest Slurm node's memory ({memory_gb:g} GB of node "
                   f"group {g.name})")


SACCTMGR_TIME = re.compile(r"(\d{1,5}-)?\d{1,7}(:\d{1,2}){0,2}")
"""the Slurm times (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) written as sacctmgr's MaxWall: at most
5-digit days, 7-digit minutes and 2-digit further fields (the SlurmTime kind admits longer fields)"""


def time_minutes(text: str) -> int | None:
    """A Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS: the SlurmTime kind) in whole minutes,
    seconds rounded up as Slurm's time_str2mins does; None for UNLIMITED and INFINITE (no limit), and for a text that
    is no Slurm time (load refuses it; a plan built around load, as the escaping tests build one, reaches the
    slurm.conf render, which refuses it naming the field)."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, _, rest = text.rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        int(days or 0)
    except ValueError:
        return None
    if not 1 <= len(parts) <= 3:
        return None
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, m, sec = (parts + [0, 0])[:3]
    elif len(parts) == 1:  # minutes
        h, m, sec = 0, parts[0], 0
    elif len(parts) == 2:  # MM:SS
        h, m, sec = 0, parts[0], parts[1]
    else:
        h, m, sec = parts
    return (int(days or 0) * 24 + h) * 60 + m + (1 if sec else 0)


def sacctmgr_wall(text: str) -> str | None:
    """A Slurm time as sacctmgr shows a limit in minutes (MaxWall): ``D-HH:MM:00`` or ``HH:MM:00``; ``""`` for
    UNLIMITED; None when it is no :data:`SACCTMGR_TIME` (SLURM012). Seconds round up, as Slurm's time_str2mins
    does."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return ""
    if not SACCTMGR_TIME.fullmatch(text):
        return None
    d, rem = divmod(time_minutes(text), 24 * 60)
    hh, mm = divmod(rem, 60)
    return f"{d}-{hh:02d}:{mm:02d}:00" if d else f"{hh:02d}:{mm:02d}:00"


def qos_wall_refusals(plan: ClusterPlan) -> list[Refusal]:
    """The QOS whose max_wall the ansible target cannot write for sacctmgr (:func:`sacctmgr_wall` is None)."""
    if plan.slurm is None:
        return []
    return [Refusal(("slurm", "qos", i, "max_wall"),
                    f"slurm.qos max_wall {q.max_wall!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, "
                    "D-HH:MM, D-HH:MM:SS)",
                    "write at most 5-digit days, 7-digit minutes and 2-digit hours, minutes and seconds fields, "
                    'e.g. "7-00:00:00" or "UNLIMITED"')
            for i, q in enumerate(plan.slurm.qos) if q.max_wall and sacctmgr_wall(q.max_wall) is None]


def node_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """Groups that run slurmd: every group a partition names, and every compute group."""
    named = {n for p in plan.slurm.partitions for n in p.groups}
    return [g for g in plan.groups if g.name in named or g.role == "compute"]


def partition_groups(plan: ClusterPlan, part) -> list[GroupPlan]:
    """The node groups of partition ``part`` that exist, each once, in the partition's order (SLURM001 reports a
    name that is no group; a partition left with none has no nodes, which slurmctld refuses)."""
    by_name = {g.name: g for g in plan.groups}
    return [by_name[n] for n in dict.fromkeys(part.groups) if n in by_name]


PMIX_DEV_PACKAGE = "libpmix-dev"
"""the PMIx development package, one name on every Debian and Ubuntu release: the unversioned ``libpmix.so`` link
(and, through its dependency, the runtime library)"""
PMIX_RUNTIME_PACKAGE: dict[str, str] = {
    "debian-11": "libpmix2", "debian-12": "libpmix2", "debian-13": "libpmix2t64",
    "ubuntu-20.04": "libpmix2", "ubuntu-22.04": "libpmix2", "ubuntu-24.04": "libpmix2t64",
}
"""software.os -> the package holding ``libpmix.so.2`` (packages.debian.org: bookworm libpmix2 4.2.2, trixie
libpmix2t64 5.0.7; packages.ubuntu.com: jammy libpmix2 4.1.2, noble libpmix2t64 5.0.1; the t64 names are the
64-bit time_t transition of 2024)"""


def pmix_packages(plan: ClusterPlan) -> list[str]:
    """The package that gives Slurm's mpi/pmix plugin the PMIx library it dlopens (``MpiDefault=pmix`` is rendered
    for every release): on every host where a job step starts (slurmstepd on compute nodes) or srun loads the
    plugin (login nodes, controllers). No Slurm package depends on it: the plugin dlopens the library (SchedMD's
    ``slurm-smd`` has only its ``${shlibs:Depends}``; Debian's 22.05 plugins package has no PMIx dependency).

    From :data:`PMIX_SONAME` the runtime package of ``software.os`` (libpmix2 or libpmix2t64); before it, and
    for an OS not in :data:`PMIX_RUNTIME_PACKAGE`, ``libpmix-dev``, whose unversioned link older plugins
    open (it depends on the runtime package, so it serves both names)."""
    if plan.slurm is None:
        return []
    runtime = PMIX_RUNTIME_PACKAGE.get(plan.software.os) if plan.software is not None else None
    if runtime is not None and slurm_supports(plan, PMIX_SONAME):
        return [runtime]
    return [PMIX_DEV_PACKAGE]


def slurm_dev_package(install) -> str:
    """The package holding the headers (``slurm/slurm_version.h``, ``slurm/spank.h``) of the Slurm the install
    source installs, which a SPANK plugin (pyxis) must be built against: SchedMD's ``slurm-smd-dev``, or the
    distribution's ``libslurm-dev`` (Debian's naming, and ``kind: distro``). The slurm_preflight pin
    (``slurm*``, ``libslurm*``) holds it at the installed version."""
    return "slurm-smd-dev" if getattr(install, "packages", "debian") == "schedmd" else "libslurm-dev"


def provides_nvml(install) -> bool:
    """The install source gives slurmd the gpu/nvml plugin (AutoDetect=nvml): repo and debs packages as declared
    (``gpu_nvml``), the distribution only with its separate plugin package installed (``gpu_nvml: true``)."""
    return bool(install.gpu_nvml)


# --- controller state -----------------------------------------------------------------------------------------

SHARED_TIERS = ("nfs", "parallel")
"""storage tiers every host that mounts them reads and writes alike (local is per node, object is no file system)"""


def state_tier(plan: ClusterPlan):
    """(index, tier) of the shared storage tier StateSaveLocation is on (the deepest mount holding it), or None."""
    slurm = plan.slurm
    if slurm is None:
        return None
    found = [(len(t.mount), i, t) for i, t in enumerate(plan.storage)
             if t.tier in SHARED_TIERS and under(slurm.state_save_location, t.mount)]
    return max(found, key=lambda x: x[0])[1:] if found else None


# --- slurmd's message fan-out -----------------------------------------------------------------------------------

TREE_WIDTH_MAX = 65533
"""slurm.conf(5) TreeWidth: "The value may not exceed 65533" """


def tree_width(nodes: int) -> int:
    """TreeWidth (slurmd message fan-out): "the square root of the number of nodes in the cluster for systems
    having no more than 2500 nodes or the cube root for larger systems" (big_sys.html); at least 2."""
    root = math.isqrt(max(nodes - 1, 0)) + 1 if nodes <= 2500 else math.ceil(round(nodes ** (1 / 3), 9))
    return max(2, min(root, TREE_WIDTH_MAX))


def cloud_tree_width(plan: ClusterPlan, release: Release) -> int | None:
    """TreeWidth with elastic nodes in a release of :data:`TREE_WIDTH_NODE_COUNT`: at least the node count (no
    fan-out through slurmd daemons that cannot resolve each other), at most 65533; None from 23.11 (the usual
    width)."""
    if not TREE_WIDTH_NODE_COUNT.in_release(release):
        return None
    return min(TREE_WIDTH_MAX, max(plan.nodes, tree_width(plan.nodes)))
