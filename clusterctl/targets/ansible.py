"""ansible target: inventory with host ranges, group_vars from the plan, site.yml, ansible.cfg, a static
/etc/hosts block, and copies of the shipped roles (docs/ansible.md, docs/render-layout.md).

Everything a role needs is rendered here from the plan, so no role reads facts of another host and
``--limit`` / adding nodes work. Hosts are written as Ansible ranges (``gpu[0001:0128]``), never one line
per host, so a 13,000-node inventory stays a few hundred lines.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import yaml

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.resources import data_dir
from clusterctl.targets.common import environment, header

ROLE_GROUPS = ("compute", "head", "login", "storage", "service")
"""inventory groups by node role, in this order"""
CONTRACT_ROLES = ("common", "munge", "slurm_controller", "slurm_compute", "slurm_login", "slurmdbd", "nccl",
                  "storage_clients", "node_health", "nvidia_driver", "doca_ofed", "dcgm", "enroot_pyxis")
"""every role docs/render-layout.md names"""
HARDWARE_ROLES = ("doca_ofed", "nvidia_driver", "dcgm", "enroot_pyxis")
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


class InventoryError(ValueError):
    """The plan's names cannot form an unambiguous Ansible inventory."""


def group_name(text: str) -> str:
    """An Ansible group name: letters, digits and underscores only (``ib-core`` -> ``ib_core``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if name and not name[0].isdigit() else "_" + name


_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def ansible_ranges(names: Iterable[str]) -> list[str]:
    """Host names as Ansible host patterns: consecutive numbered names become one ``[lo:hi]`` range.

    ``gpu0001..gpu0128`` -> ``gpu[0001:0128]``. Zero padding is kept: Ansible pads to the width of the
    lower bound when it starts with 0 and then requires both bounds to have that width, so a run only
    continues while the number keeps its width (``gpu09, gpu10`` is one range, ``n9, n10`` too).
    """
    runs: list[list] = []  # [prefix, width (0: unpadded), first, last]
    for name in names:
        m = _TRAILING_NUMBER.match(name)
        if m is None:
            runs.append([name, -1, 0, 0])
            continue
        prefix, digits = m.groups()
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        num = int(digits)
        last = runs[-1] if runs else None
        if (last is not None and last[0] == prefix and last[1] >= 0 and num == last[3] + 1
                and (len(digits) == last[1] if last[1] else not digits.startswith("0"))):
            last[3] = num
            continue
        runs.append([prefix, width, num, num])
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


def _slurm_hosts(plan: ClusterPlan) -> tuple[list[str], list[str]]:
    s = plan.blueprint.slurm
    if s is None:
        return [], []
    controllers = hostlist.expand(s.controllers)
    accounting = [s.accounting_host] if s.accounting_host else controllers[:1]
    return controllers, accounting


def compute_fabrics(plan: ClusterPlan):
    return [f for f in plan.fabrics if any(role == "compute" for _, role in f.attached)]


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


def inband_address(plan: ClusterPlan, g: GroupPlan, i: int) -> str | None:
    if g.type.instance is not None:
        return None
    pool = next((p for p in plan.addresses
                 if p.role == "inband" and any(gi == g.index for gi, _, _ in p.group_offsets)), None)
    return pool.address(g.index, i) if pool is not None else None


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
    controllers, accounting = _slurm_hosts(plan)
    if controllers:
        add(InvGroup("slurm_controllers", "slurmctld hosts, primary first", hosts=_split_terms(",".join(controllers))))
        add(InvGroup("slurm_accounting", "slurmdbd host", hosts=_split_terms(",".join(accounting))))
        members = [r for r in ("compute", "head", "login") if r in groups] + ["slurm_controllers", "slurm_accounting"]
        add(InvGroup("slurm_cluster", "every node that runs a Slurm daemon or command (gets MUNGE)",
                     children=members))
    gpus = [g.name for g in gpu_groups(plan)]
    if gpus:
        add(InvGroup("gpu_nodes", "node groups with GPUs (driver, DCGM, containers)", children=gpus))
    for k, (rack, hosts) in enumerate(_rack_hosts(plan)):  # one comment for all racks: O(racks) lines
        add(InvGroup(f"rack_{group_name(rack)}", "" if k else "racks: rack_<name> holds the nodes in that rack",
                     hosts=ansible_ranges(hosts)))
    for f in compute_fabrics(plan):
        for su in f.sus:
            add(InvGroup(f"su_{group_name(f.name)}_{su.index + 1}",
                         "" if su.index else f"scalable units of compute fabric {f.name}: su_{group_name(f.name)}_<n>",
                         hosts=_split_terms(su.hostlist)))
    for k, (name, g, hosts) in enumerate(nvlink_domains(plan)):
        add(InvGroup(name, "" if k else f"multi-node NVLink (IMEX) domains: nvlink_<group>_<n>, "
                                         f"{g.nvlink_domain_gpus} GPUs each", hosts=ansible_ranges(hosts)))
    return list(groups.values())


def hosts_file(plan: ClusterPlan) -> str:
    """``address name`` lines: in-band addresses of the nodes, management addresses of the switches."""
    lines = [header(plan).rstrip("\n"), "# static name resolution for the cluster, installed into /etc/hosts by the "
             "common role (between its '" + HOSTS_MARKER + "' markers)"]
    inband = [p for p in plan.addresses if p.role == "inband"]
    cloud = [g.name for g in plan.groups if g.type.instance is not None]
    if cloud:
        lines.append(f"# cloud node groups ({', '.join(cloud)}) resolve through the provider's DNS: not listed")
    for g in plan.groups:
        if g.type.instance is not None:
            continue
        pool = next((p for p in inband if any(gi == g.index for gi, _, _ in p.group_offsets)), None)
        if pool is None:
            lines.append(f"# node group {g.name}: no in-band address pool")
            continue
        lines.append(f"# node group {g.name}: in-band addresses from pool {pool.name} ({pool.cidr})")
        lines.extend(f"{inband_address(plan, g, i)} {host}" for i, host in enumerate(g.hosts))
    mgmt = next((p for p in plan.addresses if p.role == "mgmt" and p.switch_offset >= 0), None)
    if mgmt is not None:
        lines.append(f"# switches: management addresses from pool {mgmt.name} ({mgmt.cidr})")
        base = ipaddress.ip_network(mgmt.cidr).network_address + mgmt.first_host_offset
        slot = mgmt.switch_offset
        for f in plan.fabrics:
            for tier in f.tiers:
                for name in hostlist.expand(tier.names):
                    if slot < mgmt.capacity:
                        lines.append(f"{base + slot} {name}")
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
    from clusterctl.rules.software import vendor
    from clusterctl.targets.nccl import group_files

    out = {}
    for name, paths in group_files(plan).items():
        g = plan.group(name)
        names = [p.rsplit("/", 1)[-1] for p in paths]
        v = {"nccl_conf_file": next(n for n in names if n.endswith(".conf"))}
        env = [n for n in names if n.endswith(".env.sh")]
        if env:
            v["nccl_env_file"] = env[0]
        if g is not None and g.type.accelerator is not None and vendor(g.type.accelerator) == "AMD":
            v["nccl_conf_path"] = "/etc/rccl.conf"
        out[name] = v
    return out


def storage_mounts(plan: ClusterPlan, g: GroupPlan) -> tuple[list[dict], list[str], list[str]]:
    """(mounts the storage_clients role manages, shared mount points expected, local directories)."""
    if g.role not in MOUNTED_ROLES:
        return [], [], []
    mounts, expected, local = [], [], []
    for t in plan.blueprint.storage:
        if t.tier == "local":
            if g.role == "compute":
                local.append(t.mount)
            continue
        if t.tier == "object":
            continue
        expected.append(t.mount)
        if t.tier == "nfs":
            mounts.append({"name": t.name, "path": t.mount, "src": t.export, "fstype": "nfs"})
        elif t.filesystem == "lustre" and t.servers:
            src = t.servers if ":/" in t.servers else f"{t.servers}:/{t.name}"
            mounts.append({"name": t.name, "path": t.mount, "src": src, "fstype": "lustre"})
        elif t.filesystem == "weka" and t.servers:
            mounts.append({"name": t.name, "path": t.mount, "src": f"{t.servers}/{t.name}", "fstype": "wekafs"})
        elif t.filesystem == "vast" and t.servers:
            mounts.append({"name": t.name, "path": t.mount, "src": f"{t.servers}:/{t.name}", "fstype": "nfs"})
    return mounts, expected, local


def _q(value) -> str:
    """A YAML scalar or flow collection (JSON is valid YAML; keys stay in the given order)."""
    return json.dumps(value)


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


def plays(plan: ClusterPlan, available: Sequence[str]) -> list[Play]:
    """site.yml: one play per role group; hardware roles per GPU node group (only those shipped in roles/)."""
    out = [Play("Base configuration of every node", "all", ["common"])]
    slurm = plan.blueprint.slurm is not None
    if slurm:
        out.append(Play("MUNGE authentication on every Slurm node", "slurm_cluster", ["munge"]))
    nccl = nccl_groups(plan)
    sw = plan.blueprint.software
    for g in plan.groups:
        wanted = []
        if g.type.gpus > 0:
            if any("infiniband" in n.protocols for n in g.type.nics):
                wanted.append("doca_ofed")
            wanted += ["nvidia_driver", "dcgm"]
            if sw is not None and sw.containers == "enroot":
                wanted.append("enroot_pyxis")
        if g.name in nccl:
            wanted.append("nccl")
        if wanted:
            what = f"{g.type.gpus} x {g.type.gpu_model} per node" if g.type.gpus else "no GPUs"
            out.append(Play(f"Accelerator and fabric stack of node group {g.name}", g.name,
                            [r for r in wanted if r in available], comment=f"{g.count} x {g.type.name}, {what}",
                            missing=[r for r in wanted if r not in available]))
    if slurm:
        out.append(Play("Slurm accounting daemon", "slurm_accounting", ["slurmdbd"]))
        out.append(Play("Slurm controllers", "slurm_controllers", ["slurm_controller"]))
    roles_present = {g.role for g in plan.groups}
    if "compute" in roles_present:
        out.append(Play("Compute nodes", "compute",
                        ["storage_clients", "node_health"] + (["slurm_compute"] if slurm else [])))
    if "login" in roles_present:
        out.append(Play("Login nodes", "login", ["storage_clients"] + (["slurm_login"] if slurm else [])))
    return out


def role_files(roles: Iterable[str]) -> dict[str, str]:
    """``ansible/roles/<role>/...``: text copies of the shipped roles, in path order."""
    root = data_dir("roles")
    files: dict[str, str] = {}
    for role in sorted(set(roles)):
        for path in sorted((root / role).rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
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
    if sw.doca and re.match(r"^\d+\.\d+\.\d+$", sw.doca):
        out["doca_ofed_version"] = sw.doca
    major = sw.cuda.split(".")[0]
    if major in ("11", "12", "13"):
        out["dcgm_cuda_major"] = int(major)
    return out


def gpu_vars(g: GroupPlan) -> dict[str, object]:
    """nvidia_driver switches by node type: Fabric Manager on NVSwitch baseboards (8+ GPUs in one node's
    NVLink domain), IMEX where the NVLink domain spans nodes (peers in group_vars/nvlink_<group>_<n>.yml)."""
    if not g.type.gpus:
        return {}
    domain = g.nvlink_domain_gpus or 0
    return {"nvidia_driver_fabric_manager": domain == g.type.gpus and g.type.gpus >= 8,
            "nvidia_driver_imex": domain > g.type.gpus}


def _group_vars(plan: ClusterPlan, g: GroupPlan, nccl: dict[str, dict]) -> dict:
    ports, rate = _rdma_nics(g)
    mounts, expected, local = storage_mounts(plan, g)
    return {"g": g, "nccl": nccl.get(g.name, {}), "gpu_vars": gpu_vars(g), "rdma_ports": ports, "rdma_rate": rate,
            "mounts": mounts, "expected_mounts": expected, "local_dirs": local}


def render(plan: ClusterPlan) -> dict[str, str]:
    env = environment()
    env.filters["q"] = _q
    env.filters["ranges"] = lambda names: ansible_ranges(names)
    bp = plan.blueprint
    available = _existing_roles()
    site_plays = plays(plan, available)
    controllers, accounting = _slurm_hosts(plan)
    nccl = nccl_groups(plan)
    ctx = {"plan": plan, "bp": bp, "software_vars": software_vars(plan), "header": header(plan).rstrip("\n"),
           "controllers": controllers, "accounting": accounting, "neigh": _neigh_thresholds(plan),
           "slurm_config_dir": SLURM_CONFIG_DIR, "hosts_marker": HOSTS_MARKER,
           "node_health_script": NODE_HEALTH_SCRIPT}
    files = {
        "hosts/hosts": hosts_file(plan),
        "ansible/ansible.cfg": env.get_template("ansible/ansible.cfg.j2").render(**ctx),
        "ansible/inventory.yml": env.get_template("ansible/inventory.yml.j2").render(
            groups=inventory_groups(plan), **ctx),
        "ansible/group_vars/all.yml": env.get_template("ansible/group_vars_all.yml.j2").render(**ctx),
        "ansible/site.yml": env.get_template("ansible/site.yml.j2").render(
            plays=[p for p in site_plays if p.roles],
            missing=sorted({r for p in site_plays for r in p.missing}), **ctx),
    }
    tmpl = env.get_template("ansible/group_vars_group.yml.j2")
    for g in plan.groups:
        files[f"ansible/group_vars/{g.name}.yml"] = tmpl.render(**_group_vars(plan, g, nccl), **ctx)
    imex = env.get_template("ansible/group_vars_nvlink.yml.j2")
    for name, g, hosts in nvlink_domains(plan):
        peers = [inband_address(plan, g, g.hosts.index(h)) for h in hosts]
        files[f"ansible/group_vars/{name}.yml"] = imex.render(
            name=name, g=g, hosts=hosts, peers=[p for p in peers if p] if all(peers) else [], **ctx)
    used = {r for p in site_plays for r in p.roles}
    files.update(role_files(used))
    for path, text in files.items():  # every rendered YAML file must parse: a template slip fails the render
        if path.endswith(".yml") and not path.startswith("ansible/roles/"):
            yaml.safe_load(text)
    return dict(sorted(files.items()))
