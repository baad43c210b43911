"""``clusterctl init --gpus N --gpu MODEL --fabric KIND``: a commented starter blueprint from two answers.

The sizes come from the same code that plans every blueprint: each candidate design is expanded
(:func:`clusterctl.plan.expand`, whose fabric builder is :mod:`clusterctl.plan.fabric`), and the starter
takes the fewest switch tiers whose fat tree reaches every NIC port, and as many network racks as the
planned switches need (space and power). The shape follows the shipped reference blueprints
(blueprints/hgx-h200-roce-1024.yaml, blueprints/gb200-nvl72-8rack.yaml): a rail-optimized compute fabric, a
converged storage/in-band Ethernet fabric, a service network for the head and login nodes, and an
out-of-band management network with one switch per rack.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from clusterctl.blueprint.load import did_you_mean, load_blueprint_text
from clusterctl.catalog import Catalog, load_shipped_catalog
from clusterctl.plan import ClusterPlan, expand
from clusterctl.plan.fabric import down_capacity, leaf_port

GPUS: dict[str, str] = {
    "h100": "hgx-h100-8gpu",
    "h200": "hgx-h200-8gpu",
    "b200": "hgx-b200-8gpu",
    "gb200": "gb200-nvl72-tray",
}
"""``--gpu`` -> the catalog server the starter builds with (``clusterctl catalog`` lists them)"""

FABRICS: dict[str, tuple[str, str, str]] = {
    "roce": ("sn5600", "RoCE", "Spectrum-4 SN5600, 400G RoCEv2 (Spectrum-X)"),
    "infiniband": ("qm9700", "InfiniBand", "Quantum-2 QM9700, NDR 400G InfiniBand"),
}
"""``--fabric`` -> (leaf/spine switch of the compute fabric, its name in prose, what it is)"""

MAX_GPUS = 131_072
_BLACKWELL = ("b200", "gb200")
"""need driver R570 / CUDA 12.8 or newer (rule SW001/SW002)"""
_RACK_U, _RACK_RESERVED_U = 48, 2
_NET_RACK_KW = 34.0
_OOB_SWITCH = "sn2201"
_UFM_APPLIANCES = ("ufm01", "ufm02")
_UFM_HOSTLIST = "ufm[01-02]"
"""the UFM appliances of an InfiniBand starter, an HA pair, each cabled to a compute leaf (extra_endpoints)"""


class StarterError(ValueError):
    """A question the starter cannot answer; ``hint`` says what would work."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def preset_inventories(preset: Path) -> list[str]:
    """The inventory files the shipped blueprint ``preset`` names (``site.inventory``), which ``init`` copies beside
    the blueprint it writes."""
    data = yaml.safe_load(preset.read_text()) or {}
    return list((data.get("site") or {}).get("inventory") or [])


def write_blueprint_file(path: Path, data: bytes, *, force: bool) -> None:
    """Write ``init``'s blueprint to ``path``: a new file, or with ``force`` an existing regular file rewritten in
    place. Never through a symbolic link (dangling or not, with or without ``force``), never into a missing
    directory, never over a directory: each is a StarterError (exit 2) and nothing is created anywhere. The
    open itself refuses a link (O_NOFOLLOW) and a file that appeared since the check (O_EXCL)."""
    link_hint = "clusterctl init writes a file and follows no link: pass the file's own path, or remove the link"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise StarterError(f"{path}: {exc.strerror}", "pass a file name in an existing directory") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise StarterError(f"{path} is a symbolic link (to {os.readlink(path)})", link_hint)
        if stat.S_ISDIR(st.st_mode):
            raise StarterError(f"{path} is a directory", f"pass a file name, e.g. -o {path / 'blueprint.yaml'}")
        if not force:
            raise StarterError(f"{path} exists", "pass --force to overwrite")
        if not stat.S_ISREG(st.st_mode):
            raise StarterError(f"{path} is not a regular file", "pass another file name")
    elif not path.parent.is_dir():
        raise StarterError(f"{path}: the directory {path.parent} does not exist",
                           f"create it first (mkdir -p {path.parent}), or pass another -o")
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_CREAT | os.O_EXCL if st is None else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StarterError(f"{path} is a symbolic link", link_hint) from None
        if exc.errno == errno.EEXIST:
            raise StarterError(f"{path} exists", "pass --force to overwrite") from None
        raise StarterError(f"{path}: cannot write: {exc.strerror}",
                           "pass a file name in a directory you can write") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StarterError(f"{path} is not a regular file", "pass another file name")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


@dataclass(frozen=True)
class _Design:
    gpus: int
    gpu: str
    fabric: str
    server: str
    gpus_per_node: int
    nodes: int
    per_rack: int
    gpu_racks: int
    rack_kw: float
    system: str | None
    compute_switch: str
    su_nodes: int
    rails: int
    nvme: bool
    tiers: tuple[tuple[str, int], ...] = (("compute", 1), ("converged", 1), ("oob", 2))
    net_racks: int = 1
    switches: int = 0
    port_names: bool = False
    """the catalog names the compute ports (a vendor table); else the starter writes example names to replace"""

    def tier(self, fabric: str) -> int:
        return dict(self.tiers)[fabric]

    def with_tier(self, fabric: str, tiers: int) -> "_Design":
        return replace(self, tiers=tuple((f, tiers if f == fabric else t) for f, t in self.tiers))


def _choices(word: str, known: dict) -> str:
    """did-you-mean (when close) and the full list of choices"""
    close = did_you_mean(word, known)
    return (f"{close} " if close else "") + f"one of {', '.join(known)}"


def _kw(x: float) -> str:
    return f"{x:g}"


def _prefix(needed: int) -> int:
    """The longest IPv4 prefix with ``needed`` usable addresses and room to grow (at least /24)."""
    return min(24, 32 - math.ceil(math.log2(needed * 2 + 2)))


def _hl(prefix: str, count: int, width: int) -> str:
    return f"{prefix}{1:0{width}d}" if count == 1 else f"{prefix}[{1:0{width}d}-{count:0{width}d}]"


def _width(count: int) -> int:
    return max(2, len(str(count)))


def _plan(text: str, catalog: Catalog) -> ClusterPlan:
    return expand(load_blueprint_text(text, "starter.yaml"), catalog)


def _fabric(plan: ClusterPlan, name: str):
    return next(f for f in plan.fabrics if f.name == name)


def _fits(fp) -> bool:
    return fp.endpoints <= fp.max_endpoints and not fp.disconnected_leaves


def starter_blueprint(gpus: int, gpu: str, fabric: str, catalog: Catalog | None = None) -> str:
    """The blueprint text for ``gpus`` GPUs of ``gpu`` on a ``fabric`` compute fabric, or StarterError."""
    cat = catalog or load_shipped_catalog()
    gpu, fabric = gpu.lower(), fabric.lower()
    if gpu not in GPUS:
        raise StarterError(f"unknown GPU '{gpu}'", _choices(gpu, GPUS))
    if fabric not in FABRICS:
        raise StarterError(f"unknown fabric '{fabric}'", _choices(fabric, FABRICS))
    server = cat.servers[GPUS[gpu]]
    gpn = server.gpus.count
    system = cat.rack_systems.get(server.rack_system) if server.rack_system else None
    unit = gpn * (system.compute_trays if system else 1)
    if gpus <= 0 or gpus > MAX_GPUS:
        raise StarterError(f"--gpus {gpus} is out of range", f"between {unit} and {MAX_GPUS:,}")
    if gpus % unit:
        down, up = gpus // unit * unit, -(-gpus // unit) * unit
        what = (f"{gpu} comes in {server.rack_system} racks of {unit} GPUs" if system else
                f"each {GPUS[gpu]} server holds {gpn} GPUs")
        raise StarterError(f"--gpus {gpus} is not a multiple of {unit}: {what}",
                           f"try --gpus {up}" + (f" or --gpus {down}" if down else ""))
    nodes = gpus // gpn
    if system:
        per_rack = system.compute_trays
        rack_kw = 132.0  # Supermicro's NVL72 figure, as the shipped GB200 blueprint budgets
    else:
        # as many servers as 48U and a ~60 kW air-cooled rack take, at most four (the common HGX layout)
        per_rack = max(1, min(4, (_RACK_U - _RACK_RESERVED_U - 1) // server.height_u,
                              int(60 // server.power_kw)))
        rack_kw = math.ceil(per_rack * server.power_kw + cat.switches[_OOB_SWITCH].power_w / 1000 + 1)
    gpu_racks = -(-nodes // per_rack)
    sw_name = FABRICS[fabric][0]
    sw = cat.switches[sw_name]
    compute_nics = [n for n in server.nics if n.role == "compute"]
    rails = sum(n.count for n in compute_nics)
    nic_gbps = max(cat.nics[n.model].speed_gbps for n in compute_nics)
    port = leaf_port(sw, nic_gbps)
    su_nodes = down_capacity(port, port.native_gbps, 1.0, shared=True)
    if fabric == "infiniband" and nodes >= su_nodes and nodes % su_nodes == 0:
        # full scalable units of a multi-tier fabric leave no leaf port for the UFM appliances: one node slot fewer
        # per SU gives them room, as the DGX SuperPOD RA gives one DGX's ports to UFM (one switch runs its own SM)
        su_nodes -= 1
    d = _Design(gpus, gpu, fabric, GPUS[gpu], gpn, nodes, per_rack, gpu_racks, rack_kw,
                server.rack_system, sw_name, su_nodes, rails, server.nvme is not None,
                port_names=all(n.ports for n in compute_nics))

    # each fabric gets the fewest tiers whose fat tree reaches every port, as the fabric builder plans them
    for name, first in d.tiers:
        for tiers in range(first, 4):
            d = d.with_tier(name, tiers)
            fp = _fabric(_plan(_yaml(d), cat), name)
            if _fits(fp):
                break
        else:
            ports_per_node = fp.endpoints / max(1, fp.nodes)
            most = int(fp.max_endpoints // ports_per_node) * gpn // unit * unit
            raise StarterError(f"{gpus:,} GPUs need more than three switch tiers on the {name} fabric "
                               f"({fp.endpoints:,} ports; three tiers of {fp.tiers[0].model} reach "
                               f"{fp.max_endpoints:,})",
                               f"at most about --gpus {most}, or split the cluster into several blueprints")
    # network racks: the planned switches outside the GPU racks, spread round-robin, within each rack's
    # units and power (the shipped net profile: 46 usable units, 34 kW); at least two, so that no one rack holds
    # every switch of a fabric (rule BLAST001)
    plan = _plan(_yaml(d), cat)
    units = kw = 0.0
    for fp in plan.fabrics:
        for t in fp.tiers:
            if fp.name != "svc" and not (fp.name == "oob" and t.role == "leaf"):
                units += t.count * t.switch.height_u
                kw += t.count * t.switch.power_w / 1000
    usable = _RACK_U - _RACK_RESERVED_U
    racks = max(2, math.ceil(units / (usable - 4)), math.ceil(kw / (_NET_RACK_KW - 4)))
    switches = sum(t.count for fp in plan.fabrics for t in fp.tiers)
    return _yaml(replace(d, net_racks=racks, switches=switches))


def _yaml(d: _Design) -> str:
    """The commented YAML of design ``d``, section by section.

    Text, not :mod:`clusterctl.yamlout`: the emitter writes data under a header comment, and this is a
    document for a person to edit, with a comment above and inside each section, comments at line ends
    (``traffic_class: 106  # RDMA in DSCP 26 with ECN``) and long flow mappings wrapped where they read best;
    every value is a number or a name the starter chose, never the user's text, so nothing needs quoting.
    tests/test_init.py validates what it writes."""
    sections = (_head(d), _cooling(d), _racks(d), _nodes(d), _fabrics(d), _storage(d), _addressing(d), _slurm(d),
                _software(d))
    return "\n".join(line for section in sections for line in section) + "\n"


def _rack_width(d: _Design) -> int:
    """digits of a GPU rack's number (r01, r001)"""
    return max(2, _width(d.gpu_racks))


def _gpu_rack_list(d: _Design) -> str:
    return _hl("r", d.gpu_racks, _rack_width(d))


def _net_rack_list(d: _Design) -> str:
    return _hl("net", d.net_racks, _width(d.net_racks))


def _nvl(d: _Design) -> bool:
    """GB200 NVL72 racks rather than air-cooled servers"""
    return d.system is not None


_LOOP_RACKS = 8
"""NVL72 racks on one row manifold (liquid loop)"""


def _loops(d: _Design) -> list[tuple[int, int, list[int]]]:
    """the liquid loops: (first rack, last rack, CDU numbers) for each row of up to eight NVL72 racks, each loop
    with one 600 kW CDU per four racks (about 100 kW of liquid heat each) and one more in parallel, so the others
    carry the loop when one stops (N+1: clusterctl whatif --each cdu, rule BLAST001)"""
    out, cdu = [], 1
    for lo in range(1, d.gpu_racks + 1, _LOOP_RACKS):
        hi = min(lo + _LOOP_RACKS - 1, d.gpu_racks)
        n = -(-(hi - lo + 1) // 4) + 1
        out.append((lo, hi, list(range(cdu, cdu + n))))
        cdu += n
    return out


def _head(d: _Design) -> list[str]:
    """the comment that says what wrote the file, name, description and site"""
    _, fabric_name, _ = FABRICS[d.fabric]
    air_kw = 30 if _nvl(d) else d.rack_kw
    site_kw = math.ceil((d.gpu_racks * d.rack_kw + d.net_racks * _NET_RACK_KW + 20) * 1.1 / 10) * 10
    site_air = math.ceil((d.gpu_racks * air_kw + d.net_racks * _NET_RACK_KW + 20) * 1.1 / 10) * 10
    nodes_fmt = f"{d.nodes:,}"
    article = "an" if fabric_name[0] in "AEIOU" else "a"
    return [
        f"# A starter blueprint: {d.gpus:,} {d.gpu.upper()} GPUs ({nodes_fmt} x {d.server}) on {article} "
        f"{fabric_name} fabric.",
        f"# Written by `clusterctl init --gpus {d.gpus} --gpu {d.gpu} --fabric {d.fabric}`; sized by clusterctl's",
        "# fabric builder. Check it with `clusterctl validate FILE`, see the numbers with `clusterctl report FILE`",
        "# and the files it makes with `clusterctl render FILE -o DIR`. Every field is described in docs/blueprint.md;",
        "# the shipped blueprints (blueprints/*.yaml) are fuller worked examples.",
        f"name: starter-{d.gpu}-{d.fabric}-{d.gpus}",
        f"description: {nodes_fmt} x {d.server} ({d.gpus:,} GPUs) on a {d.tier('compute')}-tier {fabric_name} fabric.",
        "",
        "# The data hall: IT power and room-air cooling it can deliver (kW), its PUE and the NTP servers the Slurm",
        "# controllers follow (example names). Replace with your site's.",
        f"site: {{name: dc1, it_power_kw: {site_kw}, air_cooling_kw: {site_air}, pue: 1.3,",
        "       time_servers: [ntp1.example.com, ntp2.example.com]}",
        "",
    ]


def _cooling(d: _Design) -> list[str]:
    """the CDUs of NVL72 racks; nothing for air-cooled servers"""
    if not _nvl(d):
        return []
    return [
        "# Liquid cooling: each row of up to eight NVL72 racks (about 100 kW of liquid heat each) is one loop with a",
        "# coolant distribution unit (CDU) per four racks and one more, in parallel: any one may stop (N+1).",
        "cooling:",
        "  cdus:",
        *(f"    - {{name: cdu{i:02d}, capacity_kw: 600, flow_lpm: 1200, supply_c: 35, delta_t_c: 10, coolant: pg25}}"
          for _, _, cdus in _loops(d) for i in cdus),
        "",
    ]


def _racks(d: _Design) -> list[str]:
    """rack profiles (GPU racks, network racks, the management racks) and the racks"""
    w_rack = _rack_width(d)
    lines = [
        "# Rack profiles: the budget shared by a set of racks. power_kw: what the rack may draw; feeds x feed_kw",
        "# must carry it with one feed lost (N+1) or half of them (2N); units/reserved_u: rack height and units kept",
        "# free; air_kw / liquid_kw: heat the rack can reject to room air / to its liquid loop.",
        "rack_profiles:",
    ]
    if _nvl(d):
        lines += [f"  nvl72-{i + 1:02d}: {{system: {d.system}, power_kw: {_kw(d.rack_kw)}, feeds: 4, feed_kw: 71.9, "
                  f"redundancy: N+1,\n{' ' * 13}units: 48, reserved_u: 19, liquid_kw: 110, air_kw: 30, "
                  f"cdus: [{', '.join(f'cdu{c:02d}' for c in cdus)}]}}" for i, (_, _, cdus) in enumerate(_loops(d))]
    else:
        lines.append(f"  gpu: {{power_kw: {_kw(d.rack_kw)}, feeds: 3, feed_kw: 43.1, redundancy: N+1, units: 48, "
                     f"reserved_u: 2, air_kw: {_kw(d.rack_kw)}}}")
    lines += [
        f"  net: {{power_kw: {_kw(_NET_RACK_KW)}, feeds: 2, feed_kw: 43.1, redundancy: 2N, units: 48, reserved_u: 2, "
        f"air_kw: {_kw(_NET_RACK_KW)}}}",
        "  mgmt: {power_kw: 20, feeds: 2, feed_kw: 22, redundancy: 2N, units: 48, reserved_u: 2, air_kw: 20}",
        "",
        "# Racks by name (host-list syntax: r[01-04] is r01..r04), each with a profile.",
        "racks:",
    ]
    if _nvl(d):
        for i, (lo, hi, _) in enumerate(_loops(d)):
            names = f"r{lo:0{w_rack}d}" if lo == hi else f"r[{lo:0{w_rack}d}-{hi:0{w_rack}d}]"
            lines.append(f"  - {{names: \"{names}\", profile: nvl72-{i + 1:02d}}}")
    else:
        lines.append(f"  - {{names: \"{_gpu_rack_list(d)}\", profile: gpu}}")
    return lines + [f"  - {{names: \"{_net_rack_list(d)}\", profile: net}}", "  - {names: \"mgmt[01-02]\", profile: mgmt}", ""]


def _gpu_node_type(d: _Design) -> list[str]:
    """the GPU node type; for a server without a vendor table of its ports, example compute port names (NET001)"""
    if d.port_names:
        return [f"  {d.gpu}: {{server: {d.server}, features: [{d.gpu}, {d.fabric}]}}"]
    names = [f"{{rdma: mlx5_{k}}}" for k in range(d.rails)]
    return [f"  {d.gpu}:", f"    server: {d.server}", f"    features: [{d.gpu}, {d.fabric}]",
            "    # The compute ports' RDMA devices in rail order, as ibdev2netdev shows them on one node: no vendor",
            "    # table names them for this server (docs/network.md). Example values: replace them with your hosts';",
            "    # the host_network preflight stops a host whose names differ, before anything is written.",
            "    interfaces:",
            *(("      compute: [" if k == 0 else " " * 16) + ", ".join(names[k:k + 4])
              + ("]" if k + 4 >= len(names) else ",") for k in range(0, len(names), 4))]


def _nodes(d: _Design) -> list[str]:
    """node types and node groups: the GPU servers, two head and two login nodes"""
    gpu_hosts = _hl("gpu", d.nodes, max(3, _width(d.nodes)))
    nvl_domain = ", nvlink_domain_gpus: 72" if _nvl(d) else ""
    return [
        "# Node types: a catalog server (`clusterctl catalog` lists them) plus Slurm features.",
        "node_types:",
        *_gpu_node_type(d),
        "  service: {server: cpu-2u}",
        "",
        "# Node groups: how many of each type, their host names, the racks they sit in and how many per rack.",
        "node_groups:",
        f"  - {{name: gpu, type: {d.gpu}, count: {d.nodes}, hostnames: \"{gpu_hosts}\", "
        f"racks: \"{_gpu_rack_list(d)}\",\n     per_rack: {d.per_rack}{nvl_domain}}}",
        "  - {name: head, type: service, role: head, count: 2, hostnames: \"head[01-02]\", racks: \"mgmt[01-02]\"}",
        "  - {name: login, type: service, role: login, count: 2, hostnames: \"login[01-02]\", racks: \"mgmt[01-02]\"}",
        "",
    ]


def _fabrics(d: _Design) -> list[str]:
    """the compute fabric, the converged storage/in-band fabric, the service network and out-of-band"""
    return ["# Fabrics: each network, the NIC roles attached to it, and the switches it is built from.",
            "fabrics:", *_compute_fabric(d), *_service_fabrics(d), ""]


def _compute_fabric(d: _Design) -> list[str]:
    tiers = d.tier("compute")
    lines = [f"  # GPU-to-GPU traffic: {FABRICS[d.fabric][2]}, one NIC per GPU."]
    if tiers == 1:
        lines.append("  # Small enough for one switch: every compute port on one leaf.")
    else:
        lines += [f"  # Rail-optimized: NIC k of every node in a scalable unit of {d.su_nodes} nodes goes to the same leaf;",
                  f"  # {tiers} tiers, non-blocking (1:1)."]
    lines += ["  - name: compute", f"    kind: {d.fabric}", f"    tiers: {tiers}",
              f"    rail_optimized: {'true' if tiers > 1 else 'false'}", "    oversubscription: 1.0",
              f"    switch: {d.compute_switch}"]
    if tiers > 1:
        lines.append(f"    su_nodes: {d.su_nodes}")
    if d.fabric == "roce":
        lines += ["    traffic_class: 106             # RDMA in DSCP 26 with ECN",
                  "    pfc_priority: 3                # lossless priority (PFC)", "    mtu: 9000"]
    elif tiers == 1:
        lines += ["    # One switch: its embedded subnet manager takes no port (MLNX-OS: up to 2,048 nodes, no adaptive",
                  "    # routing or SHARP; a single switch has no path to choose anyway)",
                  "    adaptive_routing: false", "    sharp: false",
                  "    subnet_manager: {kind: opensm, switches: compute-leaf01}"]
    else:
        lines += ["    adaptive_routing: true", "    sharp: true",
                  "    # The subnet manager: an HA pair of UFM appliances (adaptive routing, SHARP AM), one leaf port each",
                  f"    extra_endpoints: {len(_UFM_APPLIANCES)}",
                  f"    subnet_manager: {{kind: ufm, hosts: \"{_UFM_HOSTLIST}\"}}"]
    return lines + [f"    switch_racks: \"{_net_rack_list(d)}\"", "    attach: [{group: gpu, nic_role: compute}]"]


def _service_fabrics(d: _Design) -> list[str]:
    net_racks = _net_rack_list(d)
    return [
        "  # Storage and in-band (SSH, Slurm, images) share one Spectrum-4 Ethernet fabric on the nodes' two",
        "  # BlueField-3 cards (200G per port); 32 ports are left for the parallel file system's servers.",
        "  - name: converged", "    kind: roce", f"    tiers: {d.tier('converged')}", "    switch: sn5600",
        "    link_gbps: 200",
        *(["    su_nodes: 48                   # 96 x 200G node ports per leaf: room for the storage ports"]
          if d.tier("converged") > 1 else []),
        "    extra_endpoints: 32", f"    switch_racks: \"{net_racks}\"",
        "    attach: [{group: gpu, nic_role: storage}, {group: gpu, nic_role: inband}]",
        "  # The head and login nodes' in-band network.",
        "  - name: svc", "    kind: ethernet", "    tiers: 1", "    switch: sn4600c", "    switch_racks: mgmt01",
        "    routes_to: [converged]         # the head/login in-band network reaches the nodes' (border leaf)",
        "    attach: [{group: head, nic_role: inband}, {group: login, nic_role: inband}]",
        "  # Out-of-band management (BMCs): one 1G switch in every rack, aggregated by 100G switches.",
        "  - name: oob", "    kind: ethernet", f"    tiers: {d.tier('oob')}", "    su_by: rack",
        f"    switch: {_OOB_SWITCH}", "    spine_switch: sn4600c", "    leaf_uplinks: 2",
        f"    switch_racks: \"{net_racks}\"", "    attach: [{group: all, nic_role: bmc}]",
    ]


def _storage(d: _Design) -> list[str]:
    """a parallel file system for checkpoints, NFS home, and local NVMe where the server has it"""
    return [
        "# Storage tiers the nodes mount: a parallel file system that takes the checkpoints (replace its servers,",
        "# size and speed with yours), NFS home directories from a file server outside the two head nodes (rule" +
        " HA002: a hard mount hangs with its server)" +
        (", and the nodes' local NVMe." if d.nvme else "."),
        "storage:",
        "  # weka.mode udp until the node type names its ports (node_types.<type>.interfaces): a DPDK client, WEKA's",
        "  # performance mode with dedicated cores, drives its NICs by name (docs/slurm.md, \"WEKA clients in DPDK mode\")",
        "  - {name: pfs, tier: parallel, filesystem: weka, mount: /mnt/pfs, checkpoint: true, "
        f"capacity_tb: {max(100, d.gpus * 2)},",
        f"     read_gb_per_s: {max(20, d.gpus // 4)}, write_gb_per_s: {max(10, d.gpus // 8)}, servers: \"pfs-mgmt.dc1\",",
        "     weka: {mode: udp}}",
        "  - {name: home, tier: nfs, export: \"home-nas.dc1:/export/home\", mount: /home, capacity_tb: 100,",
        "     read_gb_per_s: 10, write_gb_per_s: 5}",
        *(["  - {name: scratch, tier: local, mount: /scratch}"] if d.nvme else []),
        "",
    ]


_STORAGE_PORTS = 2
"""storage ports per GPU node (the two BlueField-3 cards' storage ports); on the routed converged fabric each is
L3 to the host, a /31 of the storage pool (clusterctl/plan/underlay.py): the pool holds two addresses per port"""


def _addressing(d: _Design) -> list[str]:
    """one pool per NIC role, each sized for its ports"""
    hosts = d.nodes + 4
    return [
        "# Address pools, one per NIC role: a pool must hold every port of its role (compute: one per GPU NIC).",
        "addressing:",
        f"  inband: {{cidr: 10.1.0.0/{_prefix(hosts)}, role: inband}}",
        f"  bmc: {{cidr: 10.2.0.0/{_prefix(hosts)}, role: bmc}}",
        f"  mgmt: {{cidr: 10.3.0.0/{_prefix(hosts + max(d.switches, 64))}, role: mgmt}}",
        f"  storage: {{cidr: 10.4.0.0/{_prefix(_STORAGE_PORTS * 2 * hosts)}, role: storage}}",
        f"  rdma: {{cidr: 10.8.0.0/{_prefix(d.nodes * d.rails)}, role: compute}}",
        f"  loopback: {{cidr: 10.0.0.0/{_prefix(max(d.switches, 64))}, role: loopback}}  # switches' router ids",
        "",
    ]


def _slurm(d: _Design) -> list[str]:
    """two controllers, a partition, and the topology plugin (block for NVL72 domains, else tree)"""
    slurm = "24.11.5" if d.gpu in _BLACKWELL else "24.05.4"
    blocks = [18 * 2 ** k for k in range(20) if 18 * 2 ** k <= d.nodes]
    return [
        "# The Slurm scheduler: two controllers (state on shared storage), partitions, and the topology plugin",
        "# that places jobs close together on the fabric" + (" and inside NVLink domains." if _nvl(d) else "."),
        "slurm:",
        f"  version: \"{slurm[:5]}\"",
        "  # packages built from SchedMD's release tarball (quickstart_admin.html, \"Debian Packages\"), copied to every host",
        f"  install: {{kind: debs, path: /srv/slurm-debs, version: \"{slurm}-1\"}}",
        "  controllers: \"head[01-02]\"",
        "  state_save_location: /mnt/pfs/slurm/statesave",
        "  partitions:",
        "    - {name: batch, groups: [gpu], default: true, max_time: \"7-00:00:00\"}",
        *(["  topology: block", f"  block_sizes: [{', '.join(str(b) for b in blocks)}]"] if _nvl(d)
          else ["  topology: tree"]),
        "",
    ]


def _software(d: _Design) -> list[str]:
    """the OS, driver, CUDA, NCCL and DOCA pins (Blackwell needs R570 / CUDA 12.8)"""
    if d.gpu in _BLACKWELL:
        pins = "software: {os: ubuntu-24.04, driver: \"570\", cuda: \"12.8\", nccl: \"2.25.1\", doca: \"2.10.0\", containers: enroot}"
    else:
        pins = "software: {os: ubuntu-22.04, driver: \"550\", cuda: \"12.4\", nccl: \"2.21.5\", doca: \"2.7.0\", containers: enroot}"
    return ["# The software stack every node gets.", pins]
