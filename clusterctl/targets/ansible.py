"""ansible target: inventory with host ranges, group_vars from the plan, site.yml, ansible.cfg, a static
/etc/hosts block, and copies of the shipped roles (docs/ansible.md, docs/render-layout.md).

Everything a role needs is rendered here from the plan, so no role reads facts of another host and
``--limit`` / adding nodes work. Hosts are written as Ansible ranges (``gpu[0001:0128]``), never one line
per host, so a 13,000-node inventory stays a few hundred lines.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterctl import hostlist
from clusterctl.catalog.models import accelerator_vendor
from clusterctl.names import ansible_group_name
from clusterctl.cloud.stack.gpudirect import RXDM_ROLE, needs_rxdm
from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.nvlink import IMEX_SWITCH, imex_configured
from clusterctl.plan.ranges import WorldRangeError, served_ranges
from clusterctl.plan.slurm import parse_version, state_tier
from clusterctl.plan.sources import MOUNT_OPTIONS, SourceError, mount_source
from clusterctl.resources import data_dir
from clusterctl.targets import RenderError, roce
from clusterctl.targets.common import at, conf_value, environment, header, path_part
from clusterctl.yamlout import (Flow, FlowMap, PureDumper, Unsafe, body, comment, comment_lines, dump,
                                        unsafe)

ROLE_GROUPS = ("compute", "head", "login", "storage", "service")
"""inventory groups by node role, in this order"""
CONTRACT_ROLES = ("slurm_preflight", "common", "munge", "slurm_controller", "slurm_compute", "slurm_login",
                  "slurmdbd", "nccl", "storage_clients", "node_health", "nvidia_driver", "doca_ofed", "dcgm",
                  "enroot_pyxis", "nvidia_imex", "node_drain", "internal_common", "roce_network", "nfs_server",
                  "gcp_tcpxo", "ansible_pull", "slurm_power_save")
"""every role docs/render-layout.md names"""
HARDWARE_ROLES = ("doca_ofed", "nvidia_driver", "nvidia_imex", "dcgm", "enroot_pyxis")
"""GPU node roles, in the order they are applied (DOCA-OFED before the driver: nvidia-peermem needs both)"""
MOUNTED_ROLES = ("compute", "login")
"""node roles that mount the shared storage tiers"""
RDMA_PROTOCOLS = ("infiniband", "ethernet", "efa")
"""NIC protocols whose ports appear under /sys/class/infiniband (ConnectX/BlueField IB or RoCE, EFA)"""
SLURM_CONFIG_DIR = "/etc/slurm"
NODE_HEALTH_SCRIPT = "/usr/local/sbin/node-health-check"
NODE_HEALTH_CONFIG = "/etc/clusterctl/node-health.conf"
SYSCTL_FILE = "/etc/sysctl.d/90-clusterctl.conf"
LIMITS_FILE = "/etc/security/limits.d/90-clusterctl.conf"
HOSTS_MARKER = "clusterctl hosts"


class InventoryError(RenderError):
    """The plan's names cannot form an unambiguous Ansible inventory."""


def group_name(text: str) -> str:
    """An Ansible group name: letters, digits and underscores only (``ib-core`` -> ``ib_core``); the mapping
    lives in clusterctl/names.py, where rule NAME006 asks it which rack names would become one group."""
    return ansible_group_name(text)


_DIGITS = "0123456789"


def ansible_ranges(names: Iterable[str]) -> list[str]:
    """Host names as Ansible host patterns: consecutive numbered names become one ``[lo:hi]`` range.

    ``gpu0001..gpu0128`` -> ``gpu[0001:0128]``. Zero padding is kept: Ansible pads to the width of the
    lower bound when it starts with 0 and then requires both bounds to have that width, so a run only
    continues while the number keeps its width (``gpu09, gpu10`` is one range, ``n9, n10`` too).
    """
    runs: list[list] = []  # [prefix, width (0: unpadded), first, last]
    last: list | None = None
    for name in names:
        prefix = name.rstrip(_DIGITS)  # str.rstrip, not a regex: this runs once per host per group
        digits = name[len(prefix):]
        if not digits or not digits.isascii():
            last = None
            runs.append([name, -1, 0, 0])
            continue
        padded = digits[0] == "0" and len(digits) > 1
        num = int(digits)
        if (last is not None and last[0] == prefix and last[1] >= 0 and num == last[3] + 1
                and (len(digits) == last[1] if last[1] else digits[0] != "0")):
            last[3] = num
            continue
        last = [prefix, len(digits) if padded else 0, num, num]
        runs.append(last)
    out = []
    for prefix, width, lo, hi in runs:
        if width < 0:
            out.append(prefix)
            continue
        fmt = (lambda n: str(n).zfill(width)) if width else str
        out.append(f"{prefix}{fmt(lo)}" if lo == hi else f"{prefix}[{fmt(lo)}:{fmt(hi)}]")
    return out


def _split_terms(expr: str) -> list[str]:
    return ansible_ranges(hostlist.expand(expr))


@dataclass
class InvGroup:
    name: str
    comment: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _rack_hosts(plan: ClusterPlan) -> list[tuple[str, list[str]]]:
    per_rack: dict[int, list[str]] = {}
    for g in plan.groups:
        for host, r in zip(g.hosts, g.rack_index):
            if r >= 0:
                per_rack.setdefault(r, []).append(host)
    return [(plan.racks[r].name, per_rack[r]) for r in sorted(per_rack)]


def gpu_groups(plan: ClusterPlan) -> list[GroupPlan]:
    return [g for g in plan.groups if g.type.gpus > 0]


def nvlink_domains(plan: ClusterPlan) -> list[tuple[str, GroupPlan, list[str]]]:
    """Multi-node NVLink domains (GB200/GB300 NVL72: 18 trays of 4 GPUs): (inventory group, node group, hosts).
    Consecutive hosts of the group fill one domain after another, as the plan places them rack by rack."""
    out = []
    for g in plan.groups:
        per = (g.nvlink_domain_gpus or 0) // g.type.gpus if g.type.gpus else 0
        if per > 1:
            for n, start in enumerate(range(0, g.count, per), 1):
                out.append((f"nvlink_{g.name}_{n}", g, list(g.hosts[start:start + per])))
    return out


def _ipv4(n: int) -> str:
    return f"{n >> 24}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def group_addresses(plan: ClusterPlan, g: GroupPlan) -> list[str] | None:
    """The in-band address of every host of the group, in host order; None for cloud groups and groups
    without an in-band pool. One network computation per group, not per host (87,500 nodes: 0.1 s)."""
    if g.type.instance is not None:
        return None
    for pool in plan.addresses:
        if pool.role != "inband":
            continue
        for gi, first, per_host in pool.group_offsets:
            if gi != g.index:
                continue
            if g.count and first + (g.count - 1) * per_host >= pool.capacity:
                raise RenderError(f"address pool {pool.name} ({pool.cidr}) has no in-band address for every "
                                  f"node of group {g.name}")
            net = ipaddress.ip_network(pool.cidr)
            base = int(net.network_address) + pool.first_host_offset + first
            fmt = _ipv4 if net.version == 4 else (lambda n: str(ipaddress.IPv6Address(n)))
            return [fmt(base + i * per_host) for i in range(g.count)]
    return None


def inband_address(plan: ClusterPlan, g: GroupPlan, i: int) -> str | None:
    addresses = group_addresses(plan, g)
    return addresses[i] if addresses is not None else None


def inventory_groups(plan: ClusterPlan) -> list[InvGroup]:
    """The inventory's groups in output order: node groups, roles, Slurm, GPU nodes, racks, scalable units."""
    groups: dict[str, InvGroup] = {}

    def add(group: InvGroup) -> None:
        if group.name in groups:
            first = groups[group.name].comment or "a rack or scalable unit"
            raise InventoryError(f"Ansible group '{group.name}' would be defined twice ({first} and "
                                 f"{group.comment or 'a rack or scalable unit'}); rename the node group")
        groups[group.name] = group

    for g in plan.groups:
        add(InvGroup(g.name, f"node group {g.name}: {g.count} x {g.type.name}, role {g.role}",
                     hosts=ansible_ranges(g.hosts)))
    for role in ROLE_GROUPS:
        members = [g.name for g in plan.groups if g.role == role]
        if not members:
            continue
        if role in groups:  # a node group named after its own role (lab: group 'head', role head)
            own = plan.group(role)
            if own is None or own.role != role:
                raise InventoryError(f"node group '{role}' has role {own.role if own else '?'} but Ansible group "
                                     f"'{role}' holds the {role} nodes; rename the node group")
            groups[role].children = [m for m in members if m != role]
            groups[role].comment += f"; also the {role} role group"
        else:
            add(InvGroup(role, f"every node with role {role}", children=members))
    roles = slurm_roles(plan)
    controllers, accounting = roles.controllers, roles.accounting
    if controllers:
        add(InvGroup("slurm_controllers", "slurmctld hosts, primary first", hosts=_split_terms(",".join(controllers))))
        add(InvGroup("slurm_accounting", "slurmdbd host", hosts=_split_terms(",".join(accounting))))
        members = [r for r in ("compute", "head", "login") if r in groups] + ["slurm_controllers", "slurm_accounting"]
        add(InvGroup("slurm_cluster", "every node that runs a Slurm daemon or command (gets MUNGE)",
                     children=members))
    servers = sorted({e["host"] for e in nfs_exports(plan)})
    if servers:
        add(InvGroup("nfs_servers", "nodes that serve an NFS tier of the blueprint (storage: tier nfs)",
                     hosts=servers))
    gpus = [g.name for g in gpu_groups(plan)]
    if gpus:
        add(InvGroup("gpu_nodes", "node groups with GPUs (driver, DCGM, containers)", children=gpus))
    for k, (rack, hosts) in enumerate(_rack_hosts(plan)):  # one comment for all racks: O(racks) lines
        add(InvGroup(f"rack_{group_name(rack)}", "" if k else "racks: rack_<name> holds the nodes in that rack",
                     hosts=ansible_ranges(hosts)))
    for f in plan.compute_fabrics():
        for su in f.sus:
            add(InvGroup(f"su_{group_name(f.name)}_{su.index + 1}",
                         "" if su.index else f"scalable units of compute fabric {f.name}: su_{group_name(f.name)}_<n>",
                         hosts=_split_terms(su.hostlist)))
    for k, (name, g, hosts) in enumerate(nvlink_domains(plan)):
        add(InvGroup(name, "" if k else f"multi-node NVLink (IMEX) domains: nvlink_<group>_<n>, "
                                         f"{g.nvlink_domain_gpus} GPUs each", hosts=ansible_ranges(hosts)))
    return list(groups.values())


def hosts_file(plan: ClusterPlan) -> str:
    """``address name`` lines: in-band addresses of the nodes, management addresses of the switches.
    /etc/hosts has no quoting: a name that is not one word without '#' is refused (:func:`conf_value`)."""
    lines = [header(plan).rstrip("\n"), "# static name resolution for the cluster, installed into /etc/hosts by the "
             "common role (between its '" + HOSTS_MARKER + "' markers)"]
    inband = [p for p in plan.addresses if p.role == "inband"]
    cloud = [g.name for g in plan.groups if g.type.instance is not None]
    if cloud:
        lines.append(f"# cloud node groups ({comment(', '.join(cloud))}) resolve through the provider's DNS: not listed")
    for g in plan.groups:
        if g.type.instance is not None:
            continue
        pool = next((p for p in inband if any(gi == g.index for gi, _, _ in p.group_offsets)), None)
        if pool is None:
            lines.append(f"# node group {comment(g.name)}: no in-band address pool")
            continue
        lines.append(f"# node group {comment(g.name)}: in-band addresses from pool {comment(pool.name)} "
                     f"({comment(pool.cidr)})")
        what = f"host name in node group {g.name}"
        with at((*g.path, "hostnames")):
            lines.extend(f"{address} {conf_value(host, what)}"
                         for address, host in zip(group_addresses(plan, g) or (), g.hosts))
    mgmt = next((p for p in plan.addresses if p.role == "mgmt" and p.switch_offset >= 0), None)
    if mgmt is not None:
        lines.append(f"# switches: management addresses from pool {comment(mgmt.name)} ({comment(mgmt.cidr)})")
        net = ipaddress.ip_network(mgmt.cidr)
        base = int(net.network_address) + mgmt.first_host_offset
        fmt = _ipv4 if net.version == 4 else (lambda n: str(ipaddress.IPv6Address(n)))
        slot = mgmt.switch_offset
        for f in plan.fabrics:
            what = f"switch name in fabric {f.name}"
            for tier in f.tiers:
                for name in hostlist.expand(tier.names):
                    if slot < mgmt.capacity:
                        lines.append(f"{fmt(base + slot)} {conf_value(name, what)}")
                    slot += 1
    return "\n".join(lines) + "\n"


def _rdma_nics(g: GroupPlan) -> tuple[int, int]:
    """(ports, Gb/s) of the compute NICs that show up under /sys/class/infiniband; rate 0 = not checked."""
    nics = [n for n in g.type.nics_of("compute") if set(n.protocols) & set(RDMA_PROTOCOLS)]
    if not nics:
        return 0, 0
    rate = 0 if any("efa" in n.protocols for n in nics) else int(min(n.speed_gbps for n in nics))
    return sum(n.count for n in nics), rate


def nccl_groups(plan: ClusterPlan) -> dict[str, dict]:
    """node group -> nccl role variables, for the groups the nccl target renders files for (GPU node types):
    ``nccl_conf_file`` (and ``nccl_env_file`` where jobs source a vendor profile), ``nccl_conf_path``."""
    from clusterctl.targets.nccl import group_files

    out = {}
    for name, paths in group_files(plan).items():
        g = plan.group(name)
        names = [p.rsplit("/", 1)[-1] for p in paths]
        v = {"nccl_conf_file": next(n for n in names if n.endswith(".conf"))}
        env = [n for n in names if n.endswith(".env.sh")]
        if env:
            v["nccl_env_file"] = env[0]
        if g is not None and g.type.accelerator is not None and accelerator_vendor(g.type.accelerator) == "AMD":
            v["nccl_conf_path"] = "/etc/rccl.conf"
        out[name] = v
    return out


def state_mount_tiers(plan: ClusterPlan, g: GroupPlan) -> set[str]:
    """Names of the tiers a group that mounts no storage for its role must still mount: the shared tier holding
    StateSaveLocation, on groups with a Slurm controller (slurm.conf(5): the directory every controller reads
    and writes)."""
    found = state_tier(plan)
    if found is None or g.role in MOUNTED_ROLES:
        return set()
    return {found[1].name} if set(slurm_roles(plan).controllers) & set(g.hosts) else set()


def _served_ranges(plan: ClusterPlan) -> tuple[str, ...]:
    """The NFS export clients and chrony's ``allow``: the in-band pools, never a world range (plan/ranges.py)."""
    try:
        return served_ranges(plan)
    except WorldRangeError as exc:
        error = RenderError(str(exc))
        error.path, error.hint = exc.path, "use a private range sized for the cluster (rule ADDR005)"
        raise error from None


def nfs_exports(plan: ClusterPlan) -> list[dict]:
    """The NFS tiers served by one of the plan's own hosts (``export: head01:/export/home``), for the nfs_server
    role: {host, path, clients}, clients being the in-band network prefix (the network the mounts use).
    Tiers on other servers, and plans without an in-band pool (cloud), export nothing here."""
    inband = next(iter(_served_ranges(plan)), None)
    out = []
    for i, t in enumerate(plan.blueprint.storage):
        if t.tier != "nfs":
            continue
        host, _, path = t.export.partition(":")
        with at(("storage", i, "export")):  # the server is a host name (NfsExport): refused, not matched, otherwise
            conf_value(host, f"storage tier {t.name} source (its server)", extra="$`{}%;&|<>'\\")
        if any(host in g.hosts for g in plan.groups if g.type.instance is None):
            if inband is None:
                raise RenderError(f"storage tier {t.name} is exported by {host}, a node of this blueprint, but the "
                                  "blueprint has no in-band address pool to export it to: add addressing with "
                                  "role: inband")
            with at(("storage", i, "export")):
                conf_value(path, f"storage tier {t.name} source (its path)")
            out.append({"host": host, "path": path, "clients": inband})
    return out


def lnet_networks(servers: str) -> list[str]:
    """The o2ib LNet networks a Lustre source's NIDs are on, normalized (``o2ib`` is ``o2ib0``), in order."""
    nids = servers.split(":/")[0].replace(":", ",").split(",")
    nets = [nid.rsplit("@", 1)[1] for nid in nids if "@" in nid]
    out: list[str] = []
    for net in nets:
        name = net if net[-1].isdigit() else f"{net}0"
        if name.startswith("o2ib") and name not in out:
            out.append(name)
    return out


def lustre_vars(plan: ClusterPlan, g: GroupPlan, mounts: Sequence[dict]) -> dict[str, object]:
    """storage_clients' Lustre variables of a group that mounts Lustre: the LNet networks (o2ib on the node
    type's storage interfaces, Lustre manual "Configuring LNet") and the tier's signed client repository."""
    names = {m["name"] for m in mounts if m["fstype"] == "lustre"}
    tiers = [t for t in plan.blueprint.storage if t.name in names]
    if not tiers:
        return {}
    nt = plan.blueprint.node_types.get(g.type.name)
    interfaces = (nt.storage_interfaces or []) if nt is not None else []
    rdma = any("infiniband" in n.protocols for n in g.type.nics_of("storage"))
    nets = [n for t in tiers for n in lnet_networks(t.servers)] if rdma else []  # without: LNet's tcp0
    out: dict[str, object] = {}
    if nets:
        suffix = f"({','.join(interfaces)})" if interfaces else ""
        out["storage_clients_lnet_networks"] = ",".join(f"{n}{suffix}" for n in dict.fromkeys(nets))
    repo = next((t for t in tiers if t.client_repo), None)
    if repo is not None:
        out["storage_clients_lustre_repo_url"] = repo.client_repo
        out["storage_clients_lustre_repo_key_url"] = repo.client_repo_key
    return out


def storage_mounts(plan: ClusterPlan, g: GroupPlan) -> tuple[list[dict], list[str], list[str]]:
    """(mounts the storage_clients role manages, shared mount points expected, local directories): every shared
    tier on compute and login groups; on a controller's group only the tier holding StateSaveLocation."""
    only = state_mount_tiers(plan, g)
    if g.role not in MOUNTED_ROLES and not only:
        return [], [], []
    mounts, expected, local = [], [], []
    for t in plan.blueprint.storage:
        if only and t.name not in only:
            continue
        if t.tier == "local":
            if g.role == "compute":
                local.append(t.mount)
            continue
        if t.tier == "object":
            continue
        expected.append(t.mount)
        try:  # host lists expanded as each client takes them (clusterctl/plan/sources.py)
            found = mount_source(t)
        except SourceError as exc:  # STORAGE009 reports it first
            err = RenderError(f"storage tier {t.name}: {exc}")
            err.path = ("storage", plan.blueprint.storage.index(t), "servers")
            raise err from None
        if found is not None:
            mounts.append({"name": t.name, "path": t.mount, "src": found[1], "fstype": found[0],
                           "opts": MOUNT_OPTIONS[found[0]]})
    tiers = {t.name: i for i, t in enumerate(plan.blueprint.storage)}
    for m in mounts:  # fstab fields: one word each, no '#', no control characters
        with at(("storage", tiers.get(m["name"], 0))):
            for key in ("path", "src"):
                conf_value(m[key], f"storage tier {m['name']} {'mount' if key == 'path' else 'source'}")
    mounts_of = {t.mount: i for i, t in enumerate(plan.blueprint.storage)}
    for path in expected + local:
        with at(("storage", mounts_of.get(path, 0), "mount")):
            conf_value(path, "storage mount point")
    return mounts, expected, local


def _neigh_thresholds(plan: ClusterPlan) -> tuple[int, int, int]:
    """ARP/ND table sizes: room for every node and switch several times over (IPoIB, in-band, storage)."""
    entries = 4 * (plan.nodes + sum(f.switch_count for f in plan.fabrics))
    t3 = 16384
    while t3 < entries:
        t3 *= 2
    return t3 // 4, t3 // 2, t3


def _existing_roles() -> list[str]:
    root = data_dir("roles")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "tasks" / "main.yml").is_file())


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


ROLLING_BATCH_TEMPLATE = "{{{{ clusterctl_rolling_batch | default('{percent}%') }}}}"
"""the compute play's serial: the blueprint's slurm.rollout.batch_percent (an int), which one run may override
with -e clusterctl_rolling_batch=...; a template on purpose (no blueprint string in it)"""


def plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """site.yml: one play per role group; hardware roles per GPU node group (only those shipped in roles/)."""
    slurm = plan.blueprint.slurm is not None
    out = []
    if slurm:  # first: a host with another Slurm release stops the playbook before anything is touched
        out.append(Play("Slurm release preflight, before any package or daemon is touched", "slurm_cluster",
                        ["slurm_preflight"], comment="stops every host when one runs (or would install) another "
                        "Slurm release than slurm.conf was rendered for", guard=True))
    out.append(Play("Base configuration of every node", "all", ["common"]))
    if nfs_exports(plan):
        out.append(Play("NFS server on the cluster's own nodes", "nfs_servers", ["nfs_server"],
                        comment="before every play that mounts an NFS tier (storage_clients)"))
    if slurm:
        out.append(Play("MUNGE authentication on every Slurm node", "slurm_cluster", ["munge"]))
    nccl = nccl_groups(plan)
    sw = plan.blueprint.software
    for g in plan.groups:
        wanted = []
        if g.type.gpus > 0:
            if any("infiniband" in n.protocols for n in g.type.nics):
                wanted.append("doca_ofed")
            wanted += ["nvidia_driver"] + (["nvidia_imex"] if imex_configured(plan, g) else []) + ["dcgm"]
            if sw is not None and sw.containers == "enroot":
                wanted.append("enroot_pyxis")
        if roce.group_vars(plan, g) is not None:
            wanted.append("roce_network")
        if g.name in nccl:
            wanted.append("nccl")
        if needs_rxdm(g):  # GCP A3 Mega: the RxDM prolog/epilog pieces (clusterctl/cloud/stack/gpudirect.py)
            wanted.append(RXDM_ROLE)
        if wanted:
            what = f"{g.type.gpus} x {g.type.gpu_model} per node" if g.type.gpus else "no GPUs"
            rollout = plan.blueprint.slurm.rollout if slurm and "nvidia_driver" in wanted else None
            out.append(Play(f"Accelerator and fabric stack of node group {g.name}", g.name,
                            [r for r in wanted if r in available], comment=f"{g.count} x {g.type.name}, {what}"
                            + (f"; rolling: {rollout.batch_percent} % at a time, a driver change drains the node "
                               "and waits for its jobs first (docs/ansible.md, \"Rolling changes\")" if rollout else ""),
                            missing=[r for r in wanted if r not in available], named_by_blueprint=True,
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
    roles_present = {g.role for g in plan.groups}
    if "compute" in roles_present:
        rollout = plan.blueprint.slurm.rollout if slurm else None
        out.append(Play("Compute nodes", "compute",
                        ["storage_clients", "node_health"] + (["slurm_compute"] if slurm else []),
                        comment=(f"rolling: {rollout.batch_percent} % of the compute nodes at a time; slurmd restarts "
                                 "only on a drained node that runs no job (docs/ansible.md, \"Rolling changes\"; "
                                 "-e clusterctl_rolling_batch=100% for a first bring-up)") if rollout else "",
                        serial=ROLLING_BATCH_TEMPLATE.format(percent=rollout.batch_percent) if rollout else None,
                        max_fail_percentage=rollout.max_fail_percent if rollout else None))
    if "login" in roles_present:
        pyxis = ["enroot_pyxis"] if slurm and enroot_login(plan) and "enroot_pyxis" in available else []
        out.append(Play("Login nodes", "login", ["storage_clients"] + pyxis + (["slurm_login"] if slurm else []),
                        comment="pyxis's SPANK plugin on the login nodes too: srun --container-image parses its "
                                "options where srun runs" if pyxis else ""))
    if pull_settings(plan) is not None:
        out.append(Play("Pull mode on every node", "all", [r for r in ["ansible_pull"] if r in available],
                        comment="the clusterctl-pull script, service and timer: every node can apply its released "
                                "version of this tree itself (docs/ansible.md, \"Pull mode\")",
                        missing=[r for r in ["ansible_pull"] if r not in available]))
    return out


SHARED_ROLES = {"node_drain": ("slurm_compute", "nvidia_driver"),
                "internal_common": ("doca_ofed", "nvidia_driver", "dcgm", "enroot_pyxis")}
"""roles no play applies, included (include_role tasks_from) by the roles listed: copied with them"""


def shared_roles(used: set[str]) -> set[str]:
    return {r for r, users in SHARED_ROLES.items() if used & set(users)}


ROLE_TESTS_DIR = "molecule"
"""a role's Molecule scenarios (roles/<role>/molecule/): tests, never rendered into a cluster's roles"""


def role_files(roles: Iterable[str]) -> dict[str, str]:
    """``ansible/roles/<role>/...``: text copies of the shipped roles, in path order.

    Not copied: dot-files and dot-dirs, ``__pycache__``, and each role's ``molecule/`` directory (its
    Molecule scenarios test the role on a rehearsal node in this repository; a cluster never runs them)."""
    root = data_dir("roles")
    files: dict[str, str] = {}
    for role in sorted(set(roles)):
        for path in sorted((root / role).rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            if len(rel.parts) > 1 and rel.parts[1] == ROLE_TESTS_DIR:
                continue
            try:
                files[f"ansible/roles/{rel.as_posix()}"] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # roles ship text only; a stray binary is not copied
                continue
    return files


def software_vars(plan: ClusterPlan) -> dict[str, object]:
    """Variables of the hardware roles that the blueprint's software: section pins (only well-formed ones)."""
    sw = plan.blueprint.software
    out: dict[str, object] = {}
    if sw is None:
        return out
    m = re.match(r"^(\d{3})(\.|$)", sw.driver)
    if m:
        out["nvidia_driver_branch"] = m.group(1)
        if any(imex_configured(plan, g) for g in plan.groups):
            out["nvidia_imex_branch"] = m.group(1)
    out.update(image_stack_vars(plan))
    if sw.doca and re.match(r"^\d+\.\d+\.\d+$", sw.doca):
        out["doca_ofed_version"] = sw.doca
    major = sw.cuda.split(".")[0]
    if major in ("11", "12", "13"):
        out["dcgm_cuda_major"] = int(major)
    return out


def image_stack_vars(plan: ClusterPlan) -> dict[str, str]:
    """What the driver and DOCA-OFED roles do with a stack the image ships: software.image_stack, else keep on
    cloud blueprints (DLAMI, Azure HPC images carry a tested stack) and replace elsewhere."""
    sw = plan.blueprint.software
    policy = (sw.image_stack if sw is not None else None) or ("keep" if plan.blueprint.cloud is not None else "replace")
    return {"nvidia_driver_image_stack": policy, "doca_ofed_image_stack": policy}


def enroot_login(plan: ClusterPlan) -> bool:
    """Whether login nodes get pyxis: containers are enroot (spank(8): SPANK plugins are loaded in srun's local
    context too, so --container-image needs pyxis's plugstack entry on the login nodes)."""
    sw = plan.blueprint.software
    return sw is not None and sw.containers == "enroot"


APPARMOR_USERNS_OS = ("ubuntu-24.04",)
"""software.os values whose kernel sets kernel.apparmor_restrict_unprivileged_userns=1 by default (Ubuntu 24.04
release notes): enroot gets its AppArmor profile there"""


def container_vars(plan: ClusterPlan) -> dict[str, object]:
    """enroot_pyxis switches from software:. On Ubuntu 24.04 enroot's AppArmor profile (userns for enroot-nsenter)
    instead of lifting the restriction for every program with the sysctl."""
    sw = plan.blueprint.software
    if sw is None or sw.containers != "enroot" or sw.os not in APPARMOR_USERNS_OS:
        return {}
    return {"enroot_pyxis_apparmor_profile": True}


SLURM_PACKAGES = {
    "debian": {"slurm_controller_packages": ["slurmctld", "slurm-client"],
               "slurm_compute_packages": ["slurmd", "slurm-client"], "slurm_login_packages": ["slurm-client"],
               "slurmdbd_packages": ["slurmdbd"], "slurm_preflight_package": "slurmd",
               "slurm_compute_pam_adopt_packages": ["libpam-slurm-adopt"]},
    "schedmd": {"slurm_controller_packages": ["slurm-smd-slurmctld", "slurm-smd-client"],
                "slurm_compute_packages": ["slurm-smd-slurmd", "slurm-smd-client"],
                "slurm_login_packages": ["slurm-smd-client"], "slurmdbd_packages": ["slurm-smd-slurmdbd"],
                "slurm_preflight_package": "slurm-smd-slurmd",
                "slurm_compute_pam_adopt_packages": ["slurm-smd-libpam-slurm-adopt"]},
}
"""the Slurm roles' packages by naming: Debian's slurm-wlm, or SchedMD's debian/ directory (slurm-smd-*)"""
NVML_PLUGIN_PACKAGE = "slurm-wlm-nvml-plugin"
"""Debian contrib / Ubuntu multiverse: gpu/nvml for the distribution's slurm-wlm (rules.slurm.DISTRO_NVML_PLUGIN)"""


def sacctmgr_minutes(text: str) -> str:
    """A Slurm time as sacctmgr shows a limit in minutes (MaxWall): ``D-HH:MM:00`` or ``HH:MM:00``; ``""`` for
    UNLIMITED. Seconds round up, as Slurm's time_str2mins does."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return ""
    if not re.fullmatch(r"(\d{1,5}-)?\d{1,7}(:\d{1,2}){0,2}", text):  # the SlurmTime kind's forms, checked at load
        raise RenderError(f"slurm.qos max_wall {text!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, "
                          "D-HH:MM, D-HH:MM:SS)")
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, m, sec = (parts + [0, 0])[:3]
    elif len(parts) == 1:  # minutes
        h, m, sec = 0, parts[0], 0
    elif len(parts) == 2:  # MM:SS
        h, m, sec = 0, parts[0], parts[1]
    else:
        h, m, sec = parts
    minutes = (int(days or 0) * 24 + h) * 60 + m + (1 if sec else 0)
    d, rem = divmod(minutes, 24 * 60)
    hh, mm = divmod(rem, 60)
    return f"{d}-{hh:02d}:{mm:02d}:00" if d else f"{hh:02d}:{mm:02d}:00"


def qos_vars(qos) -> list[dict[str, object]]:
    """slurm.qos as the slurm_controller role compares it with ``sacctmgr show qos format=Name,Priority,MaxWall,
    MaxTRESPU``: exact strings, empty for no limit."""
    return [{"name": q.name, "priority": q.priority,
             "max_wall": sacctmgr_minutes(q.max_wall) if q.max_wall else "",
             "max_tres_per_user": f"gres/gpu={q.max_gpus_per_user}" if q.max_gpus_per_user else ""} for q in qos]


def slurm_install_vars(plan: ClusterPlan) -> dict[str, object]:
    """The slurm_preflight role's install source (slurm.install) and the Slurm roles' packages, each pinned to
    the declared version with ``name=version`` (the apt module installs exactly that version)."""
    install = plan.blueprint.slurm.install
    out: dict[str, object] = {"slurm_preflight_install_source": install.kind,
                              "slurm_preflight_install_version": install.version or ""}
    if install.kind == "repo":
        out.update(slurm_preflight_repo_url=install.url, slurm_preflight_repo_key=install.key,
                   slurm_preflight_repo_key_fingerprint=install.key_fingerprint or "",
                   slurm_preflight_repo_suite=install.suite,
                   slurm_preflight_repo_components=Flow(list(install.components)))
    elif install.kind == "debs":
        out["slurm_preflight_debs_dir"] = install.path
    pin = f"={install.version}" if install.version else ""
    naming = getattr(install, "packages", "debian")
    if naming not in SLURM_PACKAGES:  # the model allows only these; a value set behind its back is refused
        raise RenderError(f"slurm.install.packages is '{naming}', not one of {', '.join(SLURM_PACKAGES)}")
    for var, names in SLURM_PACKAGES[naming].items():
        if isinstance(names, str):
            out[var] = names
            continue
        if var == "slurm_compute_packages" and install.kind == "distro" and install.gpu_nvml:
            names = [*names, NVML_PLUGIN_PACKAGE]
        out[var] = Flow([n + pin for n in names])
    return out


def gpu_vars(g: GroupPlan) -> dict[str, object]:
    """nvidia_driver switches by node type: Fabric Manager on NVSwitch baseboards (8+ GPUs in one node's
    NVLink domain), IMEX where the NVLink domain spans nodes (peers in group_vars/nvlink_<group>_<n>.yml)."""
    if not g.type.gpus:
        return {}
    domain = g.nvlink_domain_gpus or 0
    return {"nvidia_driver_fabric_manager": domain == g.type.gpus and g.type.gpus >= 8}


def imex_vars(plan: ClusterPlan, g: GroupPlan) -> dict[str, object]:
    """nvidia_imex: channel 0 for everyone only where Slurm's switch/nvidia_imex does not give each job its own."""
    if not imex_configured(plan, g):
        return {}
    v = parse_version(plan.blueprint.slurm.version) if plan.blueprint.slurm else None
    return {"nvidia_imex_channel0": v is None or v < IMEX_SWITCH}


# --- YAML files: data built here, written by the emitter (clusterctl.yamlout) -----------------

RENDER_DIR_TEMPLATE = "{{ playbook_dir }}/.."
"""group_vars/all.yml clusterctl_render_dir: a template on purpose (plain str, evaluated by Ansible)"""
VAULT_REFERENCES = {"munge_key": "{{ vault_munge_key | default('') }}",
                    "slurmdbd_storage_pass": "{{ vault_slurmdbd_storage_pass | default('') }}"}
"""secrets: references to the operator's vault, templates on purpose"""

Section = tuple[Sequence[str], dict]
"""(comment lines, top-level keys) of one part of a YAML file"""


def yaml_file(plan: ClusterPlan, comments: Sequence[str], sections: Iterable[Section]) -> str:
    """Header and comments, ``---``, then each section's comment lines and keys. Every section is a complete
    top-level block mapping written by the emitter, so joining them is one mapping with the comments kept
    where an operator reads them; no value is ever pasted into text."""
    parts = [comment_lines([_head(plan), *comments]), "---\n"]
    for notes, data in sections:
        if data:
            parts += [comment_lines(notes), body(data, dumper=PureDumper)]
    return "".join(parts)


def _head(plan: ClusterPlan) -> str:
    return header(plan).removeprefix("# ").rstrip("\n")


INVENTORY_COMMENTS = (
    "Ansible YAML inventory. Hosts are ranges: gpu[0001:0128] is gpu0001 to gpu0128 (width of the lower bound).",
    "Groups: one per node group, per node role, Slurm controllers/accounting, GPU nodes, per rack (rack_<name>)",
    "and per scalable unit of the compute fabric (su_<fabric>_<n>). No host variables: group_vars/ holds them.",
)
_GROUP_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_HOST_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+(\[[0-9]+:[0-9]+\])?$")


def _inventory_name(name: str, what: str) -> str:
    """A group or host key of the inventory: Ansible reads ``[`` as a range, ``:`` ``,`` and spaces as pattern
    separators, so only names the plan can produce pass (the model refuses others first)."""
    pattern = _HOST_PATTERN if what == "host" else _GROUP_NAME
    if not pattern.match(name):
        raise InventoryError(f"{what} name {name!r} cannot be written into the Ansible inventory; "
                             "use letters, digits, '-', '_' and '.'")
    return name


def inventory_data(plan: ClusterPlan, groups: Sequence[InvGroup] | None = None) -> dict:
    """``{"all": {"children": {group: {"hosts": {pattern: None}, "children": {name: None}}}}}``."""
    children: dict[str, dict] = {}
    for group in inventory_groups(plan) if groups is None else groups:
        entry: dict[str, dict] = {}
        if group.hosts:
            entry["hosts"] = {_inventory_name(h, "host"): None for h in group.hosts}
        if group.children:
            entry["children"] = {_inventory_name(c, "group"): None for c in group.children}
        children[_inventory_name(group.name, "group")] = entry or None
    return {"all": {"children": children}}


def inventory_file(plan: ClusterPlan) -> str:
    groups = inventory_groups(plan)
    listing = [f"  {g.name}: {g.comment}" for g in groups if g.comment]
    return dump(inventory_data(plan, groups), [_head(plan), *INVENTORY_COMMENTS, "", "groups:", *listing])


ALL_COMMENTS = (
    "Secrets are vault references, never values. Create the vault once, OUTSIDE the render directory (clusterctl",
    "replaces it on every render), for example beside the blueprint:",
    "  ansible-vault create secrets/vault.yml",
    "holding",
    "  vault_munge_key: \"<output of: openssl rand -base64 1024 | tr -d '\\n'>\"",
    "  vault_slurmdbd_storage_pass: \"<a long random password>\"",
    "and pass it to every run:",
    "  cd ansible && ansible-playbook site.yml -e @../../secrets/vault.yml --ask-vault-pass",
    "Values from the blueprint are tagged !unsafe: Ansible uses them as written and never evaluates them as",
    "templates (docs/security.md).",
)


CHRONY_CONF = "/etc/chrony/chrony.conf"
"""the common role's common_chrony_conf_path (Debian/Ubuntu)"""
PUBLIC_TIME_POOL = "pool.ntp.org"
"""the controllers' upstream when the blueprint names no site.time_servers"""
ORPHAN_STRATUM = 10
"""chrony ``local stratum 10 orphan`` on the time servers: chrony's recipe for an isolated network"""


CLOUD_TIME_SERVERS = {"aws": ["169.254.169.123"], "gcp": ["metadata.google.internal"]}
"""the provider's time service, reachable from every instance without internet access (Amazon Time Sync
Service; the GCE metadata server); Azure's is a PTP clock device, not NTP: the public pool there"""


def site_time_servers(plan: ClusterPlan) -> list[str]:
    """Where the controllers take their time from: site.time_servers, else the cloud provider's time service;
    empty: the public pool."""
    bp = plan.blueprint
    if bp.site is not None and bp.site.time_servers:
        return list(bp.site.time_servers)
    return list(CLOUD_TIME_SERVERS.get(bp.cloud.provider, [])) if bp.cloud is not None else []


def time_vars(plan: ClusterPlan, controllers: Sequence[str]) -> tuple[dict, dict]:
    """chrony variables: (every host: follow the Slurm controllers; the controllers: follow site.time_servers or
    the public pool, serve the in-band networks, orphan mode). Empty dicts without Slurm controllers (the
    role's defaults: the public pool)."""
    if not controllers:
        return {}, {}
    upstream = site_time_servers(plan)
    inband = list(_served_ranges(plan))
    return ({"common_chrony_servers": unsafe(Flow(list(controllers))), "common_chrony_pools": Flow([])},
            {"common_chrony_servers": unsafe(Flow(upstream)),
             "common_chrony_pools": Flow([] if upstream else [PUBLIC_TIME_POOL]),
             "common_chrony_allow": unsafe(Flow(inband)), "common_chrony_local_stratum": ORPHAN_STRATUM})


def controllers_vars_file(plan: ClusterPlan, controllers: Sequence[str]) -> str:
    """group_vars/slurm_controllers.yml: the controllers are the cluster's time servers."""
    _, served = time_vars(plan, controllers)
    return yaml_file(plan, ["The Slurm controllers: the time servers every other node follows (group_vars/all.yml)."],
                     [(["chrony: follow site.time_servers (else the cloud provider's time service, else the public pool), serve the in-band networks, and keep "
                       "serving one time in orphan mode when no upstream answers (air-gapped sites)"], served),
                      *power_save_vars(plan)])


def elastic_groups(plan: ClusterPlan) -> list[GroupPlan]:
    """Node groups Slurm's power saving creates and deletes (``cloud.elastic``), in a blueprint with Slurm and cloud."""
    if plan.blueprint.slurm is None or plan.blueprint.cloud is None:
        return []
    return [g for g in plan.groups if g.type.instance is not None and is_elastic(plan, g.index)]


def power_save_vars(plan: ClusterPlan) -> list[Section]:
    """slurm_power_save's variables: the provider and the elastic groups as host ranges (none without them)."""
    groups = elastic_groups(plan)
    if not groups:
        return []
    return [(["slurm_power_save: the elastic node groups whose instances slurm.conf's ResumeProgram and SuspendProgram "
              "create and delete (docs/ansible.md, \"Power saving\")"],
             unsafe({"slurm_power_save_provider": plan.blueprint.cloud.provider,
                     "slurm_power_save_elastic_groups": [FlowMap({"name": g.name, "hosts": g.hostlist})
                                                         for g in groups]}))]


def all_vars_file(plan: ClusterPlan, controllers: Sequence[str], accounting: Sequence[str]) -> str:
    """group_vars/all.yml: render directory, software pins, Slurm hosts, neighbour tables, vault references."""
    bp = plan.blueprint
    sections: list[Section] = [
        (["the render directory (this file is <dir>/ansible/group_vars/all.yml): roles install files from it"],
         {"clusterctl_render_dir": RENDER_DIR_TEMPLATE, "clusterctl_blueprint": Unsafe(bp.name)}),
    ]
    sw = bp.software
    if sw:
        sections.append((["software the blueprint pins"], unsafe({
            "clusterctl_os": sw.os, "clusterctl_driver_version": sw.driver, "clusterctl_cuda_version": sw.cuda,
            "clusterctl_nccl_version": sw.nccl, "clusterctl_doca_version": sw.doca,
            "clusterctl_containers": sw.containers})))
    sections.append((["hardware roles: what software: pins (driver branch, DOCA-Host release, CUDA major for DCGM)"],
                     unsafe(software_vars(plan))))
    if container_vars(plan):
        sections.append((["enroot_pyxis: Ubuntu 24.04 restricts unprivileged user namespaces to AppArmor profiles with "
                          "a userns rule; enroot's profile grants it to enroot-nsenter alone (roles/enroot_pyxis/README.md)"],
                         container_vars(plan)))
    if bp.slurm:
        sections.append((["Slurm: the configuration files are rendered in <dir>/slurm/ and copied as they are;",
                          "slurm_version is the release they are for (the slurm_preflight play checks every host)"],
                         {"slurm_version": _release(bp.slurm.version), **unsafe({
                                 "clusterctl_slurm_version": bp.slurm.version,
                                 "clusterctl_slurm_cluster_name": bp.slurm.cluster_name or bp.name,
                                 "clusterctl_slurm_controllers": Flow(controllers),
                                 "clusterctl_slurm_accounting_host": accounting[0]})}))
    if bp.slurm:
        sections.append((["Slurm install source (slurm.install): the slurm_preflight play configures it and the pin, then "
                          "checks the release", "apt would install; the Slurm roles install these packages "
                          "(docs/ansible.md, \"Slurm install source\")"], unsafe(slurm_install_vars(plan))))
    if bp.slurm:
        sections.append((["slurm_compute: how long a drained node may take to finish its jobs before slurmd restarts "
                          "(slurm.rollout.drain_timeout_minutes)"],
                         {"slurm_compute_drain_timeout_s": bp.slurm.rollout.drain_timeout_minutes * 60}))
    if bp.slurm and gpu_groups(plan):
        sections.append((["nvidia_driver: a driver change drains the node first and waits this long for its jobs "
                          "(slurm.rollout.drain_timeout_minutes)"],
                         {"nvidia_driver_drain_timeout_s": bp.slurm.rollout.drain_timeout_minutes * 60}))
    if bp.slurm and bp.slurm.qos:
        sections.append((["slurm_controller: the QOS of slurm.qos, created and kept with sacctmgr by the primary controller "
                          "(docs/slurm.md, \"QOS\"); values as sacctmgr shows them"],
                         unsafe({"slurm_controller_qos": [FlowMap(q) for q in qos_vars(bp.slurm.qos)]})))
    if bp.slurm and bp.slurm.database_host:
        sections.append(([f"slurmdbd: the accounting database is the site's server {bp.slurm.database_host} "
                          "(slurm.database_host): not installed here"], {"slurmdbd_database_manage": False}))
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
                     {"common_sysctl_neigh_gc_thresh": Flow(_neigh_thresholds(plan))}))
    if bp.slurm:
        sections.append((["secrets: references to the vault described above (an empty value fails the role's "
                          "preflight with a hint)"], dict(VAULT_REFERENCES)))
    return yaml_file(plan, [f"Variables for every host of cluster {bp.name}. Role variables are documented in "
                            "each role's", "defaults/main.yml and meta/argument_specs.yml.", "", *ALL_COMMENTS],
                     sections)


def _release(version: str) -> str:
    """major.minor of a Slurm version ("24.05.3" -> "24.05"): what slurm.conf was rendered for, and what the
    slurm_preflight role compares with the installed release. A plain string (digits and a dot, nothing to
    template): ansible-core 2.19 reads ``!unsafe "24.05"`` as the float 24.05; anything else stays !unsafe."""
    v = parse_version(version)
    return f"{v[0]:02d}.{v[1]:02d}" if v else Unsafe(version)


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
    gv = gpu_vars(g)
    if gv:
        sections.append((["nvidia_driver: Fabric Manager on NVSwitch baseboards (8+ GPUs in one node's NVLink domain)"], gv))
    iv = imex_vars(plan, g)
    if iv:
        sections.append(([f"nvidia_imex: the NVLink domain ({g.nvlink_domain_gpus} GPUs) spans nodes; IMEX channels "
                          + ("come from Slurm's switch/nvidia_imex, one per job (slurm.conf SwitchType)"
                             if not iv["nvidia_imex_channel0"] else
                             "are not created by default (NVIDIA IMEX guide): channel 0 at driver load, no Slurm "
                             "switch plugin")], iv))
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
        ports, rate = _rdma_nics(g)
        sections.append(([f"node_health: GPUs per node ({t.gpu_model or 'none'})"], {"node_health_gpu_count": t.gpus}))
        sections.append((["node_health: compute NIC ports that must be ACTIVE under /sys/class/infiniband, at least "
                          "this rate (0: not checked)" if ports else
                          "node_health: no compute NIC with RDMA ports under /sys/class/infiniband on this node type"],
                         {"node_health_rdma_port_count": ports, "node_health_rdma_rate_gbps": rate}))
        sections.append((["node_health: shared file systems that must be mounted"],
                         {"node_health_mounts": unsafe(Flow(expected))}))
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
            sections.append((["storage_clients: Lustre's LNet networks (the MGS NIDs' o2ib networks on this node type's "
                              "storage interfaces, or LNet's default ib0; /etc/modprobe.d/lustre.conf) and the client "
                              "packages' signed repository"], unsafe(lv)))
        sections.append((["storage_clients: node-local directories (NVMe scratch) that must exist"],
                         {"storage_clients_local_dirs": unsafe(Flow(local))}))
    if g.role == "login" and plan.blueprint.slurm is not None and enroot_login(plan):
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


def site_file(plan: ClusterPlan, site_plays: Sequence[Play]) -> str:
    """site.yml: one play per role group. Play names and host patterns that hold blueprint names are
    ``!unsafe`` (Ansible templates both)."""
    missing = sorted({r for p in site_plays for r in p.missing})
    comments = [f"Configure cluster {plan.blueprint.name}: cd ansible && ansible-playbook site.yml -e @<vault file> "
                "--ask-vault-pass",
                "Every role installs files clusterctl rendered under clusterctl_render_dir and reads no fact of "
                "another host,",
                "so --limit (one rack: --limit rack_r07, one scalable unit: --limit su_ib_2, new nodes) works."]
    if missing:
        comments.append(f"roles the plan calls for but roles/ did not ship when this was rendered (not applied): "
                        f"{', '.join(missing)}")
    parts = [comment_lines([_head(plan), *comments]), "---\n"]
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


def render(plan: ClusterPlan) -> dict[str, str]:
    env = environment()
    bp = plan.blueprint
    available = _existing_roles()
    site_plays = plays(plan, available)
    roles = slurm_roles(plan)
    controllers, accounting = roles.controllers, roles.accounting
    nccl = nccl_groups(plan)
    with at(("name",)):
        facts_dir = conf_value(path_part(bp.name, "blueprint name"), "blueprint name", extra="%;")
    files = {
        "hosts/hosts": hosts_file(plan),
        "ansible/ansible.cfg": env.get_template("ansible/ansible.cfg.j2").render(
            header=header(plan).rstrip("\n"), facts_dir=facts_dir),
        "ansible/inventory.yml": inventory_file(plan),
        "ansible/group_vars/all.yml": all_vars_file(plan, controllers, accounting),
        **({"ansible/group_vars/slurm_controllers.yml": controllers_vars_file(plan, controllers)} if controllers
           else {}),
        "ansible/site.yml": site_file(plan, site_plays),
    }
    for g in plan.groups:
        files[f"ansible/group_vars/{path_part(g.name, 'node group name')}.yml"] = group_vars_file(plan, g, nccl)
    addresses: dict[str, dict[str, str] | None] = {}
    for name, g, hosts in nvlink_domains(plan):
        if not imex_configured(plan, g):
            continue
        if g.name not in addresses:
            listed = group_addresses(plan, g)
            addresses[g.name] = dict(zip(g.hosts, listed)) if listed is not None else None
        files[f"ansible/group_vars/{path_part(name, 'NVLink domain group')}.yml"] = nvlink_vars_file(
            plan, name, g, hosts, addresses[g.name])
    exports = nfs_exports(plan)
    if exports:
        files["ansible/group_vars/nfs_servers.yml"] = yaml_file(plan, [
            "NFS tiers served by the cluster's own nodes: each host applies the items that name it (nfs_server role).",
            "Options: nfs_server_export_options (rw,sync,no_subtree_check,root_squash; roles/nfs_server/defaults)."],
            [([], {"nfs_server_exports": unsafe([FlowMap(e) for e in exports])})])
    if pull_settings(plan) is not None:
        files.update(pull_files(plan))
    used = {r for p in site_plays for r in p.roles}
    files.update(role_files(used | shared_roles(used)))
    return dict(sorted(files.items()))


# --- pull mode (docs/ansible.md, "Pull mode") ---------------------------------------------------------------

PULL_BATCHES = "ansible/pull/batches.yml"
PULL_STATUS_PLAYBOOK = "ansible/pull-status.yml"
PULL_STATUS_FILE = "/var/lib/clusterctl/pull-status.json"
"""where clusterctl-pull (roles/ansible_pull/files) writes each node's result"""


def pull_settings(plan: ClusterPlan):
    """The blueprint's slurm.rollout.pull, or None."""
    s = plan.blueprint.slurm
    return s.rollout.pull if s is not None else None


def pull_vars(pull) -> dict:
    return {**unsafe({"ansible_pull_source": pull.source, "ansible_pull_ref": pull.ref}),
            "ansible_pull_interval_minutes": pull.interval_minutes, "ansible_pull_splay_minutes": pull.splay_minutes}


def pull_batches(plan: ClusterPlan) -> tuple[list[str], list[list[str]]]:
    """(control hosts, compute batches) as inventory host patterns: the batches the push's compute play makes
    with ``serial: batch_percent%`` (Ansible: int(N * percent / 100), at least 1 host, in inventory order), so a
    node finds its batch by matching its name. Every other host is in batch 0, released first (as the push
    changes the controllers before the compute nodes). O(hosts), written as ranges."""
    percent = plan.blueprint.slurm.rollout.batch_percent
    compute = [h for g in plan.groups if g.role == "compute" for h in g.hosts]
    size = int(percent / 100.0 * len(compute)) or 1
    control = [h for g in plan.groups if g.role != "compute" for h in g.hosts]
    return (ansible_ranges(control),
            [ansible_ranges(compute[i:i + size]) for i in range(0, len(compute), size)])


PULL_STATUS_YML = """\
# Collect every node's pull-status.json ({status}) and write a summary: which node applied which
# version, which failed and in which task. Run where site.yml runs (it reads the files over SSH; --limit works):
#   cd ansible && ansible-playbook pull-status.yml [-e clusterctl_pull_summary=/path/summary.json]
# A node without a status file has never pulled; one that cannot be reached is listed as unreachable.
---
- name: Collect the pull status of every node
  hosts: all
  gather_facts: false
  become: true
  tasks:
    - name: Read the pull status file
      ansible.builtin.slurp:
        src: {status}
      register: clusterctl_pull_status
      failed_when: false

    - name: Write the summary on the control host
      ansible.builtin.copy:
        dest: "{{{{ clusterctl_pull_summary | default(playbook_dir + '/../pull-summary.json') }}}}"
        mode: "0644"
        content: |
          {{%- set nodes = {{}} %}}{{% set versions = {{}} %}}{{% set failed = {{}} %}}
          {{%- for h in ansible_play_hosts_all | sort %}}
          {{%- set r = hostvars[h].clusterctl_pull_status | default({{}}) %}}
          {{%- set st = (r.content | b64decode | from_json) if r.content is defined
              else {{'result': 'never pulled' if r else 'unreachable'}} %}}
          {{%- set _ = nodes.update({{h: st}}) %}}
          {{%- set v = st.last_ok_version | default(none) or 'none' %}}
          {{%- set _ = versions.update({{v: versions.get(v, []) + [h]}}) %}}
          {{%- if st.result != 'ok' %}}
          {{%- set _ = failed.update({{h: {{'result': st.result, 'failed_task': st.failed_task | default(none),
              'message': st.message | default('')}}}}) %}}
          {{%- endif %}}
          {{%- endfor %}}
          {{{{ {{'nodes': nodes, 'versions': versions, 'failed': failed}} | to_nice_json }}}}
      delegate_to: localhost
      run_once: true
      become: false
"""


def pull_files(plan: ClusterPlan) -> dict[str, str]:
    """ansible/pull/batches.yml (which batch each host is in) and ansible/pull-status.yml (the collector)."""
    pull = pull_settings(plan)
    control, batches = pull_batches(plan)
    batches_yml = yaml_file(plan, [
        f"Pull mode batches: {plan.blueprint.slurm.rollout.batch_percent} % of the compute nodes each "
        "(slurm.rollout.batch_percent), in inventory order, as site.yml's compute play batches them.",
        "clusterctl-pull finds its host's batch here at the tip of the pull ref (0: 'control', every node that is "
        "not a compute node; 1..n: 'batches'),",
        f"then applies the version that rollout.yml at the root of the tip of {comment(pull.ref)} releases to that "
        "batch:",
        "  versions: {0: <commit or tag>, 1: <commit or tag>, '*': <commit or tag>}",
        "without rollout.yml (or an entry for the batch, or '*'): the tip itself (docs/ansible.md, \"Pull mode\")."],
        [([], {"batch_percent": plan.blueprint.slurm.rollout.batch_percent,
               "control": Flow(control), "batches": [Flow(b) for b in batches]})])
    return {PULL_BATCHES: batches_yml,
            PULL_STATUS_PLAYBOOK: comment_lines([_head(plan)]) + PULL_STATUS_YML.format(status=PULL_STATUS_FILE)}
