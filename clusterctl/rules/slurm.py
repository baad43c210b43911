"""Slurm: partitions, controllers, version-dependent features and GRES, checked before slurm.conf exists.

Every rule is silent when the blueprint has no ``slurm:`` section. The release facts the slurm target renders
by too are one table, :data:`clusterctl.plan.slurm.FEATURES` (first and last release of each option, with its
source), asked through ``supports(slurm_release(plan), FEATURE)``; what the target refuses (a release older than
the oldest rendered, a memory reserve that leaves no memory) is decided by the plan functions it raises from
(``release_refusal``, ``memory_refusal``), so SLURM003 and SLURM011 report it first. Version facts come from the
Slurm CHANGELOG and man pages as summarised in the project's reference notes (slurm-nccl.md section 6) and from
SchedMD/slurm ``src/common/read_config.c``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from clusterctl import hostlist
from clusterctl.blueprint.load import did_you_mean
from clusterctl.blueprint.software import Software
from clusterctl.catalog.models import accelerator_vendor
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.roles import host_groups, slurm_roles
from clusterctl.plan.slurm import (AUTODETECT_NVIDIA, BLOCK_PLUGIN, BLOCK_SIZES, DISTRO_SLURM, OLDEST_SUPPORTED,
                                   SHARED_TIERS, TOPOLOGY_YAML, install_release, memory_refusal, node_groups,
                                   provides_nvml, qos_wall_refusals, release_refusal, slurm_release, state_tier,
                                   supports)
from clusterctl.rules.base import Hit, Severity, rule

SINGLE_CONTROLLER_MAX_NODES = 64

_BAD_PARTITION_CHARS = re.compile(r"[\s,=#\"'\\]")


def _suggest(name: str, plan: ClusterPlan) -> str:
    """did-you-mean over host names, limited to service-type groups on large plans (difflib is O(n))."""
    candidates = [h for g in plan.groups for h in g.hosts] if plan.nodes <= 5000 else \
        [h for g in plan.groups if g.role != "compute" and g.count <= 5000 for h in g.hosts]
    return did_you_mean(name, candidates)


def _partitioned_groups(plan: ClusterPlan) -> set[str]:
    return {name for p in plan.blueprint.slurm.partitions for name in p.groups}


@rule("SLURM001", "slurm", Severity.ERROR, "partition names an unknown node group")
def partition_groups_exist(plan: ClusterPlan) -> Iterator[Hit]:
    """Each partition lists node groups by name; a name that is no group leaves the partition short of
    nodes (or empty, which slurmctld refuses to start with) and the intended nodes idle."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    known = [g.name for g in plan.blueprint.node_groups]
    for i, part in enumerate(slurm.partitions):
        for j, name in enumerate(part.groups):
            if name not in known:
                yield Hit(("slurm", "partitions", i, "groups", j),
                          f"partition {part.name} names node group '{name}', which does not exist",
                          did_you_mean(name, known) or f"node groups: {', '.join(known[:12])}")


@rule("SLURM002", "slurm", Severity.ERROR, "Slurm controllers")
def controllers(plan: ClusterPlan) -> Iterator[Hit]:
    """``controllers`` (first primary, then backups) must be hosts of the blueprint, or nobody builds
    them. A controller that is a GPU node or in a partition is a warning: slurmctld competes with jobs
    for memory and CPU, and a job that wedges the node takes the scheduler down. A single controller is
    a warning above 64 nodes: with no backup, one host failure stops all scheduling."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    path = ("slurm", "controllers")
    try:
        names = hostlist.expand(slurm.controllers)
    except hostlist.HostlistError as exc:
        yield Hit(path, f"controllers '{slurm.controllers}' is not a host list: {exc}",
                  "write names like head[01-02] or head01,head02")
        return
    hosts = host_groups(plan)
    in_partition = _partitioned_groups(plan)
    for name in names:
        g = hosts.get(name)
        if g is None:
            yield Hit(path, f"controller {name} is not a host of any node group",
                      _suggest(name, plan) or "add a head node group, e.g. {name: head, role: head, count: 2, "
                                              "hostnames: head[01-02]}")
            continue
        if g.type.gpus:
            yield Hit(path, f"controller {name} is a GPU node ({g.type.gpus} × {g.type.gpu_model} in group {g.name})",
                      "run slurmctld on head nodes without GPUs", Severity.WARNING)
        elif g.name in in_partition:
            yield Hit(path, f"controller {name} (group {g.name}) is in a partition and will also run jobs",
                      "keep controller hosts out of partitions", Severity.WARNING)
    if len(names) == 1 and plan.nodes > SINGLE_CONTROLLER_MAX_NODES:
        yield Hit(path, f"one controller ({names[0]}) for {plan.nodes:,} nodes, no backup "
                        f"(above {SINGLE_CONTROLLER_MAX_NODES} nodes a backup is expected)",
                  "list a second host as backup controller (SlurmctldHost), e.g. head[01-02]", Severity.WARNING)


@rule("SLURM003", "slurm", Severity.ERROR, "Slurm version and topology plugin")
def version_and_topology(plan: ClusterPlan) -> Iterator[Hit]:
    """``version`` must be a Slurm release, YY.MM with MM one of 02, 05, 08, 11 (optionally .patch).
    The topology chosen must exist in that release: topology/block since 23.11 (tag
    slurm-23-11-0-0rc1), BlockSizes since 24.05 (it replaced BlockLevels), topology.yaml since 25.05
    (CHANGELOG/slurm-25.05.md, not 24.11); an unknown plugin or key stops slurmctld at startup.
    BlockSizes mean nothing to topology/tree or none (a warning; their shape is NVLINK003's). Releases
    older than 23.11 are a warning: they are out of SchedMD support; older than 20.02 an error: the slurm
    target renders none (no select/cons_tres GPU binding, gpu/rsmi or configless). The release facts are
    the table in :mod:`clusterctl.plan.slurm` the slurm target renders by."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    refused = release_refusal(plan)
    if refused is not None:
        yield Hit(refused.path, refused.message, refused.hint)
    else:
        yield from _release_gates(slurm, slurm_release(plan))
    sizes = slurm.block_sizes
    if sizes and slurm.topology in ("tree", "none"):
        yield Hit(("slurm", "block_sizes"), f"block_sizes {sizes} are set but topology is {slurm.topology}",
                  "use topology: block (or yaml), or drop block_sizes", Severity.WARNING)


def _release_gates(slurm, v) -> Iterator[Hit]:
    """SLURM003 for a release the slurm target renders: out of support, and topology options it lacks."""
    if v < OLDEST_SUPPORTED:
        yield Hit(("slurm", "version"), f"Slurm {v} is older than {OLDEST_SUPPORTED} and out of SchedMD support",
                  "plan a current release (24.11 or newer)", Severity.WARNING)
    if slurm.topology == "block" and not supports(v, BLOCK_PLUGIN):
        yield Hit(("slurm", "topology"), f"topology/block needs Slurm {BLOCK_PLUGIN.first} or newer; version is {v}",
                  "upgrade Slurm or use topology: tree")
    if slurm.topology == "yaml" and not supports(v, TOPOLOGY_YAML):
        yield Hit(("slurm", "topology"), f"topology.yaml needs Slurm {TOPOLOGY_YAML.first} or newer; version is {v}",
                  "upgrade Slurm or use topology: tree or block")
    if slurm.block_sizes and not supports(v, BLOCK_SIZES):
        yield Hit(("slurm", "block_sizes"), f"BlockSizes needs Slurm {BLOCK_SIZES.first} or newer; version is "
                                            f"{v} (23.11 had BlockLevels)", "upgrade Slurm or drop block_sizes")


def _is_amd(g: GroupPlan) -> bool:
    return g.type.accelerator is not None and accelerator_vendor(g.type.accelerator) == "AMD"


@rule("SLURM004", "slurm", Severity.ERROR, "GPU GRES")
def gpu_gres(plan: ClusterPlan) -> Iterator[Hit]:
    """GRES must describe the GPUs. A partition mixing GPU counts (or models) per node is a warning:
    ``--gpus-per-node=8`` cannot run on its 4-GPU nodes and the scheduler leaves GPUs stranded.
    ``gres_autodetect`` nvml and nvidia read NVIDIA devices only; on AMD accelerators slurmd finds no
    GPUs (Slurm's AMD autodetection is rsmi), an error. ``AutoDetect=nvidia`` exists since Slurm
    24.11 (gres.conf(5)); older slurmd rejects it."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    by_name = {g.name: g for g in plan.groups}
    for i, part in enumerate(slurm.partitions):
        gpu_groups = [by_name[n] for n in dict.fromkeys(part.groups) if n in by_name and by_name[n].type.gpus]
        counts = {g.type.gpus for g in gpu_groups}
        models = {g.type.gpu_model for g in gpu_groups}
        if len(counts) > 1 or len(models) > 1:
            detail = ", ".join(f"{g.name} ({g.type.gpus} × {g.type.gpu_model})" for g in gpu_groups)
            what = "GPU counts per node" if len(counts) > 1 else "GPU models"
            yield Hit(("slurm", "partitions", i, "groups"),
                      f"partition {part.name} mixes {what}: {detail}",
                      "make one partition per GPU node type so GPU requests fit every node of the partition",
                      Severity.WARNING)
    amd = [g for g in plan.groups if _is_amd(g)]
    nvidia = [g for g in plan.groups if g.type.gpus and not _is_amd(g)]
    if nvidia and slurm.gres_autodetect == "rsmi":
        g = nvidia[0]
        yield Hit(("slurm", "gres_autodetect"),
                  f"gres_autodetect: rsmi finds AMD GPUs only, but group {g.name} has {g.type.gpus} × "
                  f"{g.type.gpu_model}", "use gres_autodetect: nvml (or nvidia on Slurm 24.11+)")
    if amd and slurm.gres_autodetect in ("nvml", "nvidia"):
        g = amd[0]
        yield Hit(("slurm", "gres_autodetect"),
                  f"gres_autodetect: {slurm.gres_autodetect} finds NVIDIA GPUs only, but group {g.name} has "
                  f"{g.type.gpus} × {g.type.gpu_model} ({g.type.accelerator.vendor})"
                  + (f" and {len(amd) - 1} more AMD group(s)" if len(amd) > 1 else ""),
                  "use gres_autodetect: rsmi (Slurm built with ROCm SMI) or off with the GPUs listed in gres.conf")
    v = slurm_release(plan)
    if slurm.gres_autodetect == "nvidia" and v is not None and not supports(v, AUTODETECT_NVIDIA):
        yield Hit(("slurm", "gres_autodetect"),
                  f"AutoDetect=nvidia needs Slurm {AUTODETECT_NVIDIA.first} or newer; version is {v}",
                  "use gres_autodetect: nvml (Slurm built with NVML) or upgrade Slurm")


@rule("SLURM005", "slurm", Severity.ERROR, "default partition")
def default_partition(plan: ClusterPlan) -> Iterator[Hit]:
    """Exactly one partition should be the default. With none, jobs submitted without ``-p`` are
    rejected (a warning: it may be intended); with several, slurmctld keeps the last one read
    (``_parse_part_spec: changing default partition from cpu to gpu`` in its log), so the default
    depends on file order (an error)."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    defaults = [i for i, p in enumerate(slurm.partitions) if p.default]
    if not defaults:
        yield Hit(("slurm", "partitions"), f"none of the {len(slurm.partitions)} partition(s) is the default",
                  f"set default: true on one partition, e.g. {slurm.partitions[0].name}", Severity.WARNING)
    for i in defaults[1:]:
        names = ", ".join(slurm.partitions[k].name for k in defaults)
        yield Hit(("slurm", "partitions", i, "default"),
                  f"{len(defaults)} partitions are marked default ({names})",
                  "keep default: true on one partition only")


@rule("SLURM006", "slurm", Severity.WARNING, "partition membership")
def partition_membership(plan: ClusterPlan) -> Iterator[Hit]:
    """A partition should list each node group once (a repeat is a copy-paste slip that hides which
    group was meant), and every compute node group should be in some partition: otherwise its nodes
    join the cluster but no job can ever be scheduled on them, idle hardware that is easy to miss."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    for i, part in enumerate(slurm.partitions):
        seen: set[str] = set()
        for j, name in enumerate(part.groups):
            if name in seen:
                yield Hit(("slurm", "partitions", i, "groups", j),
                          f"partition {part.name} lists node group {name} twice", "list each group once")
            seen.add(name)
    listed = _partitioned_groups(plan)
    for g in plan.groups:
        if g.role == "compute" and g.name not in listed:
            gpus = f", {g.gpus:,} GPUs" if g.gpus else ""
            yield Hit(g.path + ("name",), f"compute node group {g.name} ({g.count:,} nodes{gpus}) is in no partition",
                      "add it to a partition's groups, or give it another role")


@rule("SLURM007", "slurm", Severity.ERROR, "partition name")
def partition_names(plan: ClusterPlan) -> Iterator[Hit]:
    """Partition names must be unique and usable in slurm.conf and on the command line: no whitespace,
    commas (``-p a,b`` is a list), ``=``, ``#`` (slurm.conf comment) or quotes. ``DEFAULT`` in any case is
    not a partition: slurm.conf's ``PartitionName=DEFAULT`` line only sets defaults for the partitions
    after it (read_config.c compares the name case-insensitively with "DEFAULT"), so a partition called
    "default" never exists and its nodes are in no partition."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    first: dict[str, int] = {}
    for i, part in enumerate(slurm.partitions):
        path = ("slurm", "partitions", i, "name")
        name = part.name
        if name in first:
            yield Hit(path, f"partition name '{name}' is used twice (partitions[{first[name]}] and [{i}])",
                      "give each partition a distinct name, or merge their groups")
        else:
            first[name] = i
        if not name or _BAD_PARTITION_CHARS.search(name):
            yield Hit(path, f"partition name '{name}' has whitespace, a comma, '=', '#' or a quote",
                      "use letters, digits, '-' and '_'")
        elif name.upper() == "DEFAULT":
            yield Hit(path, f"partition name '{name}' is Slurm's PartitionName=DEFAULT record, not a partition",
                      "pick another name, e.g. batch or gpu, and mark it default: true")


@rule("SLURM008", "slurm", Severity.ERROR, "accounting hosts")
def accounting_host(plan: ClusterPlan) -> Iterator[Hit]:
    """``accounting_host`` (slurmdbd) and ``accounting_backup_host``, when given, must be hosts of the
    blueprint, or nobody builds them and AccountingStorageHost / AccountingStorageBackupHost point nowhere. The
    backup must be another host than the primary (the first controller when accounting_host is not set): a
    backup on the same host takes over nothing when that host fails."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    hosts = host_groups(plan)
    for key in ("accounting_host", "accounting_backup_host"):
        name = getattr(slurm, key)
        if name is not None and name not in hosts:
            yield Hit(("slurm", key), f"{key} {name} is not a host of any node group",
                      _suggest(name, plan) or ("name a head or service node, or drop it to use the first controller"
                                               if key == "accounting_host" else "name a second head or service node"))
    backup = slurm.accounting_backup_host
    if backup is None:
        return
    primary = slurm_roles(plan).primary_accounting
    if primary is None:
        return  # SLURM002 reports the controllers
    if backup == primary:
        yield Hit(("slurm", "accounting_backup_host"),
                  f"accounting_backup_host {backup} is the primary slurmdbd host too",
                  "name another host as backup, or drop accounting_backup_host")


@rule("SLURM010", "slurm", Severity.ERROR, "the site's accounting database without TLS")
def database_tls(plan: ClusterPlan) -> Iterator[Hit]:
    """``database_host`` names the site's own MySQL/MariaDB server: slurmdbd sends it the StoragePass over the
    network. Without TLS the server that answers at that name chooses how: Debian's slurmdbd links MariaDB
    Connector/C, whose built-in ``mysql_clear_password`` plugin sends the password as it is when the server asks
    for it, so any machine that answers (or sits on the path) can take the password and read or change the
    accounting database. ``database_ca`` (the CA certificate that signed the server's certificate, a file on the
    slurmdbd hosts) makes slurmdbd connect over TLS checked against it (slurmdbd.conf ``StorageParameters=SSL_CA``,
    which Slurm hands to mysql_ssl_set). ``database_ca`` without ``database_host`` would point slurmdbd's TLS at the
    MariaDB the role installs without TLS, and the connection would fail."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    if slurm.database_host and not slurm.database_ca:
        yield Hit(("slurm", "database_host"),
                  f"database_host {slurm.database_host} is the site's database server, and slurmdbd would send it the "
                  "database password without TLS",
                  "add slurm.database_ca: the path of the CA certificate (PEM) that signed the server's certificate, "
                  "e.g. /etc/ssl/certs/site-db-ca.pem (installed on the slurmdbd hosts)")
    if slurm.database_ca and not slurm.database_host:
        yield Hit(("slurm", "database_ca"),
                  "database_ca is set but database_host is not: the MariaDB the slurmdbd role installs has no TLS",
                  "drop database_ca, or name the site's database server as database_host")


@rule("SLURM011", "slurm", Severity.ERROR, "memory_reserve_gb leaves a node no memory",
      suppressible=False)
def memory_left(plan: ClusterPlan) -> Iterator[Hit]:
    """slurm.conf's RealMemory of a Slurm node is its memory less ``memory_reserve_gb`` (default 3 %, at least
    16 GB). A reserve as large as a node's memory leaves no RealMemory to write (slurmd would register the node
    with none, and no job asking for memory could run there): the slurm target refuses it, and this reports it
    first, once per node group that runs slurmd."""
    if plan.slurm is None:
        return
    for g in node_groups(plan):
        refused = memory_refusal(plan, g)
        if refused is not None:
            yield Hit(refused.path, f"node group {g.name}: {refused.message}", refused.hint)


@rule("SLURM012", "slurm", Severity.ERROR, "QOS max_wall sacctmgr is not given",
      suppressible=False)
def qos_wall(plan: ClusterPlan) -> Iterator[Hit]:
    """The roles create each QOS with ``sacctmgr ... MaxWall=<max_wall>`` and compare it with what sacctmgr shows
    (``D-HH:MM:00``), which the ansible target works out from max_wall. It takes the Slurm time forms with at most
    5-digit days, 7-digit minutes and 2-digit further fields; a longer field (``12345678``, ``10:123``), which the
    blueprint's time kind admits, is refused there, and reported here first
    (:func:`clusterctl.plan.slurm.qos_wall_refusals`, which both ask)."""
    for refused in qos_wall_refusals(plan):
        yield Hit(refused.path, refused.message, refused.hint)


@rule("SLURM009", "slurm", Severity.ERROR, "controller state on shared storage")
def shared_state(plan: ClusterPlan) -> Iterator[Hit]:
    """With backup controllers, StateSaveLocation must be one directory every controller reads and writes
    (slurm.conf(5): "readable and writable by both systems"): a backup that takes over reads the jobs, nodes
    and reservations the primary saved there. On a controller's local disk the backup starts with no state,
    and jobs are lost. It must be under the mount of an ``nfs`` or ``parallel`` storage tier (the roles mount
    that tier on the controllers). An NFS tier exported by one of the controllers is a warning: when that host
    fails, the backup loses the state with it."""
    slurm = plan.blueprint.slurm
    if slurm is None:
        return
    controllers = slurm_roles(plan).controllers
    if len(controllers) < 2:
        return
    found = state_tier(plan)
    if found is not None:
        i, tier = found
        server = tier.export.rsplit(":/", 1)[0] if tier.tier == "nfs" else ""
        if server in controllers:
            yield Hit(("storage", i, "export"),
                      f"StateSaveLocation {slurm.state_save_location} is on NFS tier {tier.name}, exported by "
                      f"controller {server}: when {server} fails the backup controller loses the state too",
                      "serve the tier from a file server that is not a controller, or use a parallel tier",
                      Severity.WARNING)
        return
    shared = [t for t in plan.blueprint.storage if t.tier in SHARED_TIERS]
    if shared:
        hint = (f"set state_save_location to a directory under a shared tier's mount, e.g. "
                f"{shared[0].mount.rstrip('/')}/slurmctld ({', '.join(f'{t.name} at {t.mount}' for t in shared[:4])})")
    else:
        hint = "add an nfs (or parallel) storage tier the controllers mount and put state_save_location under it"
    yield Hit(("slurm", "state_save_location"),
              f"StateSaveLocation {slurm.state_save_location} is on no shared storage tier, but {len(controllers)} "
              f"controllers ({', '.join(controllers[:4])}) must read and write it: a backup would take over without "
              "the primary's job state", hint)


# --- install source (docs/ansible.md, "Slurm install source") ---------------------------------------------------

DISTRO_NVML_PLUGIN = frozenset({"debian-12", "debian-13", "ubuntu-25.10", "ubuntu-26.04"})
"""software.os whose archive has slurm-wlm-nvml-plugin (gpu/nvml), built by the separate source package
slurm-wlm-contrib in Debian contrib (bookworm 22.05.8, trixie 24.11.5) and Ubuntu multiverse (questing, resolute;
none for jammy or noble). The main archive's slurm-wlm is built without NVML (NVML is not free software)."""


DEFAULT_OS = Software.model_fields["os"].default
"""software.os when the blueprint has no software: section"""


@rule("SLURM020", "slurm", Severity.WARNING, "the distribution's Slurm is not slurm.version")
def distro_release(plan: ClusterPlan) -> Iterator[Hit]:
    """With ``slurm.install.kind: distro`` the roles install the distribution's slurm-wlm, whose release is fixed
    by ``software.os`` (Ubuntu 22.04 ships 21.08, 24.04 23.11; Debian 12 22.05, 13 24.11). When that is not
    ``slurm.version`` the slurm_preflight play stops site.yml on every host (the daemons would reject options
    rendered for the other release). Silent for an OS whose release is not known here."""
    slurm, sw = plan.blueprint.slurm, plan.blueprint.software
    if slurm is None or slurm.install.kind != "distro":
        return
    os_name = sw.os if sw is not None else DEFAULT_OS
    shipped, wanted = DISTRO_SLURM.get(os_name), slurm_release(plan)
    if shipped is None or wanted is None or shipped == wanted:
        return
    yield Hit(("slurm", "version"),
              f"slurm.version is {wanted} but {os_name} ships Slurm {shipped} (slurm.install is distro): the "
              f"preflight would stop site.yml on every host",
              f"add slurm.install with kind repo (url, key, suite) or debs (a directory of .deb files on the hosts) "
              f"and a {wanted} package version, or set slurm.version to \"{shipped}\"")


@rule("SLURM021", "slurm", Severity.ERROR, "pinned Slurm package is another release")
def pinned_release(plan: ClusterPlan) -> Iterator[Hit]:
    """``slurm.install.version`` is the package version the roles pin; its major.minor must be ``slurm.version``,
    the release slurm.conf is rendered for, or the preflight stops site.yml after the packages are installed."""
    slurm = plan.blueprint.slurm
    if slurm is None or slurm.install.version is None:
        return
    pinned, wanted = install_release(slurm.install), slurm_release(plan)
    if wanted is None:
        return
    if pinned is None:
        yield Hit(("slurm", "install", "version"),
                  f"package version '{slurm.install.version}' does not start with a Slurm release (NN.NN)",
                  f"write the full package version, e.g. \"{wanted}.4-1\"")
    elif pinned != wanted:
        yield Hit(("slurm", "install", "version"),
                  f"package version {slurm.install.version} is Slurm {pinned}, but slurm.version is {wanted}",
                  f"pin a {wanted} package, or set slurm.version to \"{pinned}\"")


@rule("SLURM022", "slurm", Severity.INFO, "no NVML in the installed Slurm")
def autodetect_without_nvml(plan: ClusterPlan) -> Iterator[Hit]:
    """``gres_autodetect: nvml`` needs slurmd's gpu/nvml plugin, which Slurm builds only where NVML was found;
    Debian's and Ubuntu's slurm-wlm lack it (the separate slurm-wlm-nvml-plugin of Debian contrib / Ubuntu
    multiverse exists for Debian 12 and 13 only among the supported releases), and slurmd is fatal on
    AutoDetect=nvml without it. When the install source has no NVML, gres.conf is rendered with AutoDetect=off and
    the explicit Type/File/Cores lines as the only source; this says so. A distro source asking for the plugin
    on an OS that has none is an error."""
    slurm, sw = plan.blueprint.slurm, plan.blueprint.software
    if slurm is None:
        return
    install = slurm.install
    os_name = sw.os if sw is not None else DEFAULT_OS
    if install.kind == "distro" and install.gpu_nvml and os_name not in DISTRO_NVML_PLUGIN:
        yield Hit(("slurm", "install", "gpu_nvml"),
                  f"{os_name} has no slurm-wlm-nvml-plugin package (Debian 12/13 contrib, Ubuntu 25.10+ multiverse)",
                  "set gpu_nvml: false (gres.conf then lists the GPUs), or install Slurm from a repo or debs "
                  "source built with NVML", Severity.ERROR)
        return
    gpus = [g for g in plan.groups if g.type.gpus and g.type.accelerator is not None
            and accelerator_vendor(g.type.accelerator) == "NVIDIA"]
    if slurm.gres_autodetect != "nvml" or provides_nvml(install) or not gpus:
        return
    yield Hit(("slurm", "install", "gpu_nvml") if install.kind != "distro" else ("slurm", "gres_autodetect"),
              f"gres_autodetect is nvml but the {install.kind} Slurm packages have no gpu/nvml plugin: gres.conf is "
              f"rendered with AutoDetect=off and the explicit GPU lines only (node group {gpus[0].name}: "
              f"{gpus[0].type.gpus} x {gpus[0].type.gpu_model})",
              "set gres_autodetect: off to say so, or install Slurm with NVML (repo/debs built with NVML, or "
              "distro gpu_nvml: true on Debian 12/13)")
