"""nccl target: ``nccl/<node_type>.conf`` for every node type with GPUs (installed as ``/etc/nccl.conf``),
plus ``nccl/<node_type>.env.sh`` where a cloud vendor ships its own NCCL profile (GCP GPUDirect).

Every line of a ``.conf`` is ``KEY=VALUE`` preceded by comments saying why. The settings depend on the
compute fabric the node type's groups are attached to with ``nic_role: compute`` (bare metal) or on the
instance type's ``network.fabric`` (cloud):

- InfiniBand / RoCE: compute HCAs only, bootstrap interface, rail policy, QPs per connection on multi-tier
  fabrics, a longer IB timeout on very large fabrics; RoCE adds the traffic class and GID handling.
- NVLink: NVLink SHARP on Hopper+ NVSwitch domains, multi-node NVLink on NVL72 (needs IMEX).
- AWS EFA: nothing but the socket interface (the aws-ofi-nccl plugin needs no FI_* on current versions).
- GCP GPUDirect (TCPX/TCPXO/gIB): no constants; a companion shell file sources Google's profile and sets
  interface names only.
- Azure ND v5: the values the Azure HPC image writes to its own /etc/nccl.conf (which this file replaces).

Values and their sources: docs/nccl.md. Facts the plan does not hold yet (RDMA device and interface
names) are documented defaults that a per-node-type override replaces (:func:`overrides`).
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clusterctl.cloud.gpudirect import RXDM_INSTANCE_TYPES
from clusterctl.plan.model import ClusterPlan, FabricPlan, GroupPlan, NodeTypePlan
from clusterctl.rules.nvlink import imex_configured
from clusterctl.rules.software import vendor as accelerator_vendor
from clusterctl.targets.common import at, conf_value, header, path_part, render_template
from clusterctl.targets.roce import fabric_qos
from clusterctl.targets.yamlout import comment

# --- documented defaults (docs/nccl.md explains each) ------------------------------------------------

INBAND_IFNAME = "bond0"
"""bootstrap interface on bare metal: the in-band ports bonded (DGX BasePOD deployment guide)"""
ANY_IFNAME = "^lo,docker"
"""no in-band NIC / AWS: any interface but loopback and docker bridges"""
QPS_IB_ADAPTIVE = 2
"""queue pairs per connection on multi-tier InfiniBand with adaptive routing (the switches spread packets)"""
QPS_ECMP = 4
"""queue pairs per connection where only per-flow hashing (ECMP) spreads traffic: RoCE, IB without AR"""
LARGE_FABRIC_TIERS = 3
LARGE_FABRIC_ENDPOINTS = 2048
"""more ports than a two-tier non-blocking fat tree of 64-port NDR switches connects (64 x 64 / 2)"""
LARGE_FABRIC_IB_TIMEOUT = 22
"""4.096 us x 2^22 = 17.2 s per try, ~2 min with 7 retries (NCCL's default 20: 4.3 s, ~30 s)"""
GID_INDEX_FALLBACK = 3
"""the RoCEv2 IPv4 GID on a port with one IPv4 address, for NCCL < 2.21 (no GID auto-selection)"""
NVLS_GENERATIONS = ("hopper", "blackwell", "rubin")
NVLS_MIN_DOMAIN = 8

KNOWN_HCAS: dict[str, tuple[tuple[str, ...], str]] = {
    "dgx-h100": (("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"),
                 "DGX H100/H200 User Guide, Network Modules table (OSFP ports -> default RDMA devices)"),
    "dgx-h200": (("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"),
                 "DGX H100/H200 User Guide, Network Modules table (same CPU tray as DGX H100)"),
    "gb200-nvl72-tray": (("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"),
                         "NVIDIA Mission Control GB200 north-south network guide, compute tray port table"),
}
"""shipped servers whose compute RDMA device names are documented; others are derived (see docs/nccl.md)"""

ENV_PATH = "/etc/nccl-env.sh"
"""where the nccl role installs nccl/<node_type>.env.sh (its nccl_env_path default)"""

# GCP GPUDirect (GoogleCloudPlatform/cluster-toolkit examples/machine-learning/*/nccl-tests)
TCPXO_LIB = "/var/lib/tcpxo/lib64"
TCPXO_CTRL = "enp0s12"
TCPXO_MEGA_IFNAMES = ("enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0", "enp135s0", "enp141s0", "enp142s0")
TCPXO_HIGH_BDFS = ("0000:06:00.0", "0000:0c:00.0", "0000:86:00.0", "0000:8c:00.0")
TCPXO_HIGH_FALLBACK = ("enp6s0f0", "enp12s0f0", "enp134s0f0", "enp140s0f0")
GIB_DIRS = ("/usr/local/gib", "/var/lib/gib")
GIB_SOCKET_IFNAMES = ("enp0s19", "enp192s20")

# Azure HPC image (Azure/azhpc-images customizations/ndv5.sh, used for ND H100 v5 and ND H200 v5)
AZURE_NDV5 = re.compile(r"standard_nd96is.*_h[12]00_v5", re.IGNORECASE)
AZURE_NDV5_TOPO = "/opt/microsoft/ndv5/topo.xml"


# --- shaped data for the templates -------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """Comment lines saying why, then ``key=value`` (no key: a comment-only note)."""

    why: tuple[str, ...]
    key: str = ""
    value: str = ""


@dataclass(frozen=True)
class ShellStep:
    why: tuple[str, ...]
    code: tuple[str, ...]


@dataclass(frozen=True)
class _Compute:
    """The compute fabric(s) of a node type, merged conservatively when its groups sit on several."""

    fabrics: tuple[FabricPlan, ...]
    kind: str
    rail_optimized: bool
    tiers: int
    endpoints: int
    adaptive_routing: bool
    sharp: bool
    traffic_classes: tuple[int, ...]
    pfc_priority: int | None


def render(plan: ClusterPlan) -> dict[str, str]:
    groups_of: dict[str, list[GroupPlan]] = {}
    for g in plan.groups:
        groups_of.setdefault(g.type.name, []).append(g)
    files: dict[str, str] = {}
    for name, nt in plan.node_types.items():
        groups = groups_of.get(name)
        if not groups or nt.gpus == 0:
            continue
        preamble, settings, steps = _node_type(plan, nt, groups)
        # Older NCCL parsers do not skip '#' lines: a comment holding '=' would become a variable.
        preamble = [_conf_comment(line) for line in preamble]  # user-chosen names
        file = path_part(name, "node type name")
        with at(("node_types", name, "nccl")):
            checked = [Setting(_wrap([_conf_comment(" ".join(s.why))]), s.key, _setting_value(s, name))
                       for s in settings]
        files[f"nccl/{file}.conf"] = render_template(
            "nccl/nccl.conf.j2", header=_conf_comment(header(plan).rstrip("\n")) + "\n", preamble=_wrap(preamble),
            settings=checked)
        if steps:
            files[f"nccl/{file}.env.sh"] = render_template(
                "nccl/env.sh.j2", header=header(plan), preamble=_wrap([comment(p) for p in _env_preamble(nt)]),
                steps=[ShellStep(_wrap([comment(" ".join(s.why))]), s.code) for s in steps])
    return files


def _conf_comment(line: str) -> str:
    """A comment line of nccl.conf: on one line, and without '=' (NCCL before 2.x does not skip comments, so
    ``# a=b`` would set the variable ``# a``)."""
    return comment(line).replace("=", "-")


def _setting_value(s: Setting, node_type: str) -> str:
    """NCCL reads ``KEY=VALUE`` up to the end of the line and takes everything after the first '=': a value
    must not hold a line break, '#', a quote or whitespace (interface and device lists never do); '=' is
    allowed (``NCCL_IB_HCA==mlx5_0:1`` is an exact-match list)."""
    return conf_value(s.value, f"{s.key} of node type {node_type}", equals=True) if s.key else s.value


def _export(name: str, value: str) -> str:
    """``export NAME=value`` with the value quoted for the shell (``shlex.quote``)."""
    return f"export {name}={shlex.quote(value)}"


def group_files(plan: ClusterPlan) -> dict[str, tuple[str, ...]]:
    """Node group -> the files this target renders for it, relative to the output directory:
    ``nccl/<node_type>.conf`` for every group with GPUs (installed as /etc/nccl.conf), and
    ``nccl/<node_type>.env.sh`` where the job must source a vendor profile (GCP GPUDirect)."""
    out: dict[str, tuple[str, ...]] = {}
    for g in plan.groups:
        if g.type.gpus:
            env = (f"nccl/{g.type.name}.env.sh",) if _vendor_profile(g.type) else ()
            out[g.name] = (f"nccl/{g.type.name}.conf", *env)
    return out


def _vendor_profile(nt: NodeTypePlan) -> bool:
    inst = nt.instance
    return inst is not None and inst.provider == "gcp" and inst.network.fabric in _GCP_NAMES


COMMENT_WIDTH = 98
"""comment text per line; with '# ' in front no line is wider than 100 characters"""


def _wrap(paragraphs: Sequence[str]) -> tuple[str, ...]:
    """Each paragraph wrapped to COMMENT_WIDTH on its own."""
    return tuple(part for p in paragraphs
                 for part in textwrap.wrap(p, COMMENT_WIDTH, break_long_words=False, break_on_hyphens=False))


def overrides(plan: ClusterPlan, node_type: str) -> Mapping[str, object]:
    """Per-node-type replacements for the documented defaults, from the blueprint's
    ``node_types.<name>.nccl``: ``ib_hca`` (device names, or a full NCCL_IB_HCA value) and
    ``socket_ifname`` (a full NCCL_SOCKET_IFNAME value)."""
    nt = plan.blueprint.node_types.get(node_type)
    if nt is None or nt.nccl is None:
        return {}
    return {k: v for k, v in nt.nccl.model_dump().items() if v is not None}


def nccl_version(plan: ClusterPlan) -> tuple[int, ...] | None:
    """``software.nccl`` as numbers ("2.21.5" or "2.21.5-1" -> (2, 21, 5)); None when unset or unreadable."""
    sw = plan.blueprint.software
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", sw.nccl) if sw and sw.nccl else None
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


# --- one node type -------------------------------------------------------------------------------------

def _node_type(plan: ClusterPlan, nt: NodeTypePlan,
               groups: Sequence[GroupPlan]) -> tuple[list[str], list[Setting], list[ShellStep]]:
    what = nt.server_name or nt.instance_name or nt.name
    preamble = [
        (f"NCCL settings for node type '{nt.name}' ({what}, {nt.gpus} x {nt.gpu_model}); "
        f"node groups: {', '.join(g.name for g in groups)}."),
        ("Installed as /etc/nccl.conf: NCCL reads the variables below at init; a variable already set in the "
        "job's environment wins over the file. Every value and its source: docs/nccl.md (clusterctl)."),
    ]
    steps: list[ShellStep] = []
    acc = nt.accelerator
    if acc is not None and accelerator_vendor(acc) == "AMD":
        preamble.append("AMD GPUs: RCCL reads the same NCCL_* names but from /etc/rccl.conf (ROCm RCCL docs, "
                        "NCCL_CONF_FILE): install this file there.")
    if nt.instance is not None:
        settings, steps, line = _cloud(plan, nt, groups)
        preamble.append(line)
    else:
        comp = _compute_fabric(plan, nt)
        if comp is not None and comp.kind in ("infiniband", "roce"):
            preamble.append(_fabric_line(comp))
            settings = _rdma(plan, nt, comp) + _nvlink(plan, nt, groups)
        else:
            preamble.append(_fabric_line(comp) if comp else
                            "Compute fabric: none (no fabric attaches this node type's groups with nic_role compute).")
            settings = _sockets_only(plan, nt, comp) + _nvlink(plan, nt, groups)
    settings.append(Setting((
        "NCCL_ALGO and NCCL_PROTO are not set: NCCL lists them under 'Debugging' (not for production).",)))
    return preamble, settings, steps


def _compute_fabric(plan: ClusterPlan, nt: NodeTypePlan) -> _Compute | None:
    of_type = [g for g in plan.groups if g.type.name == nt.name]
    fabrics = plan.compute_fabrics(*of_type) if of_type else ()
    if not fabrics or nt.nic_count("compute") == 0:
        return None
    rdma = tuple(f for f in fabrics if f.kind in ("infiniband", "roce"))
    fabrics = rdma + tuple(f for f in fabrics if f not in rdma)  # RDMA fabrics decide, listed first
    used = rdma or fabrics
    specs = [plan.blueprint.fabrics[f.path[1]] for f in used]
    return _Compute(
        fabrics=fabrics,
        kind=used[0].kind,
        rail_optimized=all(f.rail_optimized for f in used),
        tiers=max(len(f.tiers) or f.tiers_declared for f in used),
        endpoints=max(f.endpoints for f in used),
        adaptive_routing=all(s.adaptive_routing for s in specs if s.kind == "infiniband"),
        sharp=any(s.sharp for s in specs if s.kind == "infiniband"),
        traffic_classes=tuple(dict.fromkeys(s.traffic_class for s in specs if s.kind == "roce")),
        pfc_priority=next((s.pfc_priority for s in specs if s.kind == "roce"), None),
    )


def _fabric_line(comp: _Compute) -> str:
    f = comp.fabrics[0]
    rail = "rail-optimized" if comp.rail_optimized else "not rail-optimized"
    more = f" (+{len(comp.fabrics) - 1} more; the most conservative setting of each is used)" if len(comp.fabrics) > 1 else ""
    return (f"Compute fabric: '{f.name}' ({f.kind}, {comp.tiers} tier{'s' if comp.tiers != 1 else ''}, {rail}, "
            f"{comp.endpoints:,} endpoints){more}.")


# --- InfiniBand and RoCE ------------------------------------------------------------------------------

def _rdma(plan: ClusterPlan, nt: NodeTypePlan, comp: _Compute) -> list[Setting]:
    roce = comp.kind == "roce"
    out: list[Setting] = []
    if len({f.kind for f in comp.fabrics}) > 1:
        out.append(Setting(((f"WARNING: groups of this node type sit on compute fabrics of different kinds "
                            f"({', '.join(sorted({f.kind for f in comp.fabrics}))}); settings follow {comp.kind}."),)))
    out.append(_hca_setting(plan, nt, "NICs" if roce else "HCAs"))
    out.append(_socket_setting(plan, nt))
    ports = nt.nic_count("compute")
    if ports > 1 and comp.rail_optimized:
        out.append(Setting((
            "Rail-optimized fabric: each compute NIC has its own rail leaf; rails meet only at the spines.",
            "0 keeps a ring/tree on the same NIC index on every node, so its traffic stays on one rail",
            "(NCCL's default 2 only prefers that)."), "NCCL_CROSS_NIC", "0"))
    elif ports > 1:
        out.append(Setting((
            "Not rail-optimized: all compute NICs of a node reach the same leaves, so using different NICs on",
            "different nodes avoids no flow collision; 1 lets NCCL pair NICs freely."), "NCCL_CROSS_NIC", "1"))
    if comp.tiers >= 2:
        if roce or not comp.adaptive_routing:
            qps, how = QPS_ECMP, ("only per-flow hashing (ECMP) spreads traffic over the uplinks, and every QP is "
                                  "its own flow" + (" (own RoCEv2 UDP source port)." if roce else "."))
        else:
            qps, how = QPS_IB_ADAPTIVE, "adaptive routing already spreads packets, so a few QPs suffice."
        out.append(Setting((
            f"{comp.tiers}-tier fabric: several queue pairs per connection give the uplinks 'routing entropy'",
            f"(NCCL docs: for multi-level fabrics); {how}"), "NCCL_IB_QPS_PER_CONNECTION", str(qps)))
    else:
        out.append(Setting((
            "Single-tier fabric: no path choice between leaves, so NCCL_IB_QPS_PER_CONNECTION stays at 1.",)))
    if comp.tiers >= LARGE_FABRIC_TIERS or comp.endpoints > LARGE_FABRIC_ENDPOINTS:
        out.append(Setting((
            f"Very large fabric ({comp.tiers} tiers, {comp.endpoints:,} endpoints): rerouting after a link or switch",
            (f"failure takes longer. {LARGE_FABRIC_IB_TIMEOUT} means 4.096 us x 2^{LARGE_FABRIC_IB_TIMEOUT}, 17.2 s per "
            "try, ~2 min with 7 retries"),
            "(NCCL's default 20: ~30 s), before NCCL fails with ibv_poll_cq error 12."),
            "NCCL_IB_TIMEOUT", str(LARGE_FABRIC_IB_TIMEOUT)))
    if roce:
        out += _roce(plan, comp)
    else:
        ar = ("has adaptive routing on" if comp.adaptive_routing
              else "has adaptive routing off, which NCCL's AR-capable transfers do not mind")
        out.append(Setting((
            f"NCCL_IB_ADAPTIVE_ROUTING left at NCCL's default (1 on InfiniBand); the fabric {ar}.",)))
        if comp.sharp:
            out.append(Setting((
                "The fabric has SHARP: NCCL uses it through the CollNet plugin (nccl-rdma-sharp-plugins / HPC-X)",
                "when NCCL_COLLNET_ENABLE is 1. Not set here: enable it per job once the SHARP aggregation manager",
                "works (NCCL's default 0).")))
    return out


def _roce(plan: ClusterPlan, comp: _Compute) -> list[Setting]:
    out: list[Setting] = []
    qos = fabric_qos(plan, comp.fabrics[0])
    assert qos is not None  # comp.kind is roce: its first fabric is a RoCE fabric
    tc = qos.traffic_class
    why = [f"RoCE traffic class: the fabric's traffic_class, the IP ToS byte: DSCP {qos.dscp} (TC >> 2), ECN bits "
           f"{qos.ecn_bits}. It must match the switches' lossless class (PFC priority {qos.pfc_priority}); a mismatch is",
           "silent: RDMA then runs lossy. The same fabric QoS sets the hosts (roce_network role: DSCP trust, PFC, ECN)",
           f"and the switch files (switches/{qos.fabric}-*.nvue.yaml): docs/roce.md."]
    if len(comp.traffic_classes) > 1:
        why.append(f"WARNING: this node type's compute fabrics use different traffic classes "
                   f"({', '.join(map(str, comp.traffic_classes))}); the first is used.")
    out.append(Setting(tuple(why), "NCCL_IB_TC", str(tc)))
    version = nccl_version(plan)
    v6 = any(p.role == "compute" and p.version == 6 for p in plan.addresses)
    if version is not None and version >= (2, 21):
        out.append(Setting((
            f"NCCL_IB_GID_INDEX left unset: NCCL {_v(version)} (2.21 or later) selects the RoCEv2 GID itself",
            "(NCCL_IB_ROCE_VERSION_NUM default 2, NCCL_IB_ADDR_FAMILY default AF_INET).")))
        if v6:
            out.append(Setting((
                "The compute address pool is IPv6: GID auto-selection must look for IPv6 GIDs.",),
                "NCCL_IB_ADDR_FAMILY", "AF_INET6"))
    else:
        known = f"NCCL {_v(version)} predates" if version else "software.nccl is not set, so NCCL may predate"
        v6_note = (" The compute pool is IPv6: find the IPv6 RoCEv2 index with show_gids instead."
                   if v6 else "")
        out.append(Setting((
            f"{known} 2.21 (RoCE GID auto-selection); before it the default index 0 is the RoCEv1 link-local GID.",
            "3 is usually the RoCEv2 IPv4 GID (check with show_gids); drop this line on NCCL 2.21 or later." + v6_note),
            "NCCL_IB_GID_INDEX", str(GID_INDEX_FALLBACK)))
    out.append(Setting((
        "NCCL_IB_ROCE_VERSION_NUM left at its default 2 (RoCEv2); NCCL_IB_ADAPTIVE_ROUTING at its RoCE default 0.",)))
    return out


def compute_hcas(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[tuple[str, ...] | str | None, tuple[str, ...]]:
    """The compute RDMA devices of a bare-metal node type and how they were found: an override, the
    documented names of a shipped server, or mlx5_N derived from the NIC list (compute ports first,
    in catalog order). None when the compute NICs are not NVIDIA (mlx5) parts."""
    override = overrides(plan, nt.name).get("ib_hca")
    if isinstance(override, str):
        return override, ("Value from the node type's override.",)
    if override:
        return tuple(str(x) for x in override), ("Device names from the node type's override.",)
    ports = nt.nic_count("compute")
    spec = plan.blueprint.node_types.get(nt.name)
    shipped = plan.catalog.origin.get(("servers", nt.server_name or ""), "").startswith("shipped")
    known = KNOWN_HCAS.get(nt.server_name or "")
    if known and spec is not None and spec.server and shipped and len(known[0]) == ports:
        return known[0], (f"Device names as documented for the {nt.server_name}: {known[1]}.",)
    if any(plan.catalog.nics.get(n.model) is None or plan.catalog.nics[n.model].vendor.upper() != "NVIDIA"
           for n in nt.nics_of("compute")):
        return None, ()
    names = tuple(f"mlx5_{i}" for i in range(ports))
    return names, (
        "Device names ASSUMED: compute ports are mlx5_0.. in catalog order, before the storage/in-band ports;",
        "the kernel names them in PCI order, which may differ. Check with ibdev2netdev and override if so.")


def _hca_setting(plan: ClusterPlan, nt: NodeTypePlan, what: str) -> Setting:
    hcas, how = compute_hcas(plan, nt)
    if hcas is None:
        return Setting(("NCCL_IB_HCA not set: the compute NICs are not NVIDIA mlx5 parts, so their RDMA device",
                        "names cannot be derived; set the node type's ib_hca override."))
    value = hcas if isinstance(hcas, str) else "=" + ",".join(h if ":" in h else f"{h}:1" for h in hcas)
    return Setting((
        f"Compute {what} only, exact names (the leading equals sign: plain mlx5_1 would also match mlx5_10..19), so NCCL never",
        "puts collectives on the storage or in-band ports.", *how), "NCCL_IB_HCA", value)


def _socket_setting(plan: ClusterPlan, nt: NodeTypePlan) -> Setting:
    override = overrides(plan, nt.name).get("socket_ifname")
    if override:
        return Setting(("Bootstrap and out-of-band TCP: interface from the node type's override.",),
                       "NCCL_SOCKET_IFNAME", str(override))
    ports = nt.nic_count("inband")
    if ports:
        single = " (a single in-band port: make it a one-port bond or override)" if ports == 1 else ""
        return Setting((
            f"Bootstrap and out-of-band TCP on the in-band network, exact name {INBAND_IFNAME}: the in-band ports",
            f"bonded (DGX BasePOD convention){single}. ASSUMED: the plan has no interface names yet."),
            "NCCL_SOCKET_IFNAME", "=" + INBAND_IFNAME)
    return Setting((
        "Bootstrap and out-of-band TCP: this node type has no in-band NIC, so any interface but loopback and",
        "docker bridges (override with the real name)."), "NCCL_SOCKET_IFNAME", ANY_IFNAME)


def _sockets_only(plan: ClusterPlan, nt: NodeTypePlan, comp: _Compute | None) -> list[Setting]:
    if comp is None:
        why = ("No RDMA compute fabric: inter-node NCCL traffic uses TCP sockets. 1 keeps NCCL off the storage",
               "and in-band RDMA ports, which it would otherwise use as IB/RoCE devices.")
        return [Setting(why, "NCCL_IB_DISABLE", "1"), _socket_setting(plan, nt)]
    plain = Setting(("The compute fabric is plain Ethernet (no lossless class for RoCE): NCCL uses TCP sockets.",),
                    "NCCL_IB_DISABLE", "1")
    if overrides(plan, nt.name).get("socket_ifname"):
        return [plain, _socket_setting(plan, nt)]
    return [plain, Setting((("NCCL_SOCKET_IFNAME not set: it should name the compute ports, whose interface names "
                            "the plan does not hold yet (override socket_ifname)."),))]


# --- NVLink --------------------------------------------------------------------------------------------

def _nvlink(plan: ClusterPlan, nt: NodeTypePlan, groups: Sequence[GroupPlan], cloud: bool = False) -> list[Setting]:
    acc = nt.accelerator
    if acc is None or accelerator_vendor(acc) != "NVIDIA":
        return []
    domain = max((g.nvlink_domain_gpus or 0 for g in groups), default=0) or (nt.nvlink_domain_gpus or 0)
    version = nccl_version(plan)
    out: list[Setting] = []
    nvls = acc.generation.lower() in NVLS_GENERATIONS and domain >= NVLS_MIN_DOMAIN
    if cloud:
        out.append(Setting((
            "NCCL_NVLS_ENABLE left at NCCL's default (2): NVLink SHARP is used when the VM exposes it.",)))
    elif not nvls:
        out.append(Setting((
            (f"NCCL_NVLS_ENABLE not set: NVLink SHARP needs Hopper or later GPUs behind NVSwitch "
            f"(an NVLink domain of {NVLS_MIN_DOMAIN} or more GPUs)."),)))
    elif version is not None and version < (2, 17):
        out.append(Setting((f"NCCL_NVLS_ENABLE not set: NCCL {_v(version)} predates NVLink SHARP (2.17).",)))
    else:
        out.append(Setting((
            f"NVSwitch system, {domain}-GPU NVLink domain, {acc.generation} GPUs: NVLink SHARP offloads reductions",
            "into the NVSwitches. Needs NVIDIA Fabric Manager (NVLSM on NVL72). 1 states the intent; the default 2",
            "differed only in NCCL 2.27-2.28 (silent fallback). A job short of GPU memory can set 0."),
            "NCCL_NVLS_ENABLE", "1"))
    if not cloud and nt.gpus and domain > nt.gpus:
        if version is not None and version < (2, 21):
            out.append(Setting(((f"NCCL_MNNVL_ENABLE not set: NCCL {_v(version)} predates multi-node NVLink (2.21); "
                                "upgrade NCCL."),)))
        elif not (mnnvl := [g for g in groups if (g.nvlink_domain_gpus or 0) > nt.gpus]) or not all(
                imex_configured(plan, g) for g in mnnvl):
            out.append(Setting(("NCCL_MNNVL_ENABLE not set: no IMEX domain is configured for these nodes (no in-band "
                                "address pool for nodes_config.cfg, rule NVLINK006); 1 would fail NCCL at init.",)))
        else:
            out.append(Setting((
                (f"Multi-node NVLink domain (NVL{domain}: {domain // nt.gpus} nodes x {nt.gpus} GPUs): NCCL talks "
                "NVLink between the nodes."),
                "Needs a working IMEX domain: the nvidia_imex role runs nvidia-imex on every node of the NVLink domain",
                "(nodes_config.cfg: its in-band addresses); Slurm's switch/nvidia_imex gives each job a channel; cuMem on.",
                "1 makes NCCL fail at init when IMEX is broken instead of silently falling back (default 2)."),
                "NCCL_MNNVL_ENABLE", "1"))
    return out


# --- cloud instance types ------------------------------------------------------------------------------

def _cloud(plan: ClusterPlan, nt: NodeTypePlan,
           groups: Sequence[GroupPlan]) -> tuple[list[Setting], list[ShellStep], str]:
    inst = nt.instance
    assert inst is not None
    fabric, provider = inst.network.fabric, inst.provider
    line = (f"Accelerator network: {provider} {fabric} ({inst.network.gpu_nics} interfaces, "
            f"{inst.network.total_gbps:g} Gb/s) of instance type {nt.instance_name}.")
    if provider == "aws" and fabric == "efa":
        return _aws_efa(plan, nt) + _nvlink(plan, nt, groups, cloud=True), [], line
    if provider == "gcp" and fabric in ("tcpxo", "tcpx", "rdma-roce"):
        return _gcp_conf(nt, fabric), _gcp_steps(nt, fabric), line
    if provider == "azure" and fabric == "infiniband":
        return _azure_ib(nt) + _nvlink(plan, nt, groups, cloud=True), [], line
    return [Setting((f"No NCCL profile known for {provider} {fabric}: inter-node traffic uses TCP sockets.",),
                    "NCCL_IB_DISABLE", "1"),
            Setting(("Bootstrap and socket traffic: any interface but loopback and docker bridges.",),
                    "NCCL_SOCKET_IFNAME", ANY_IFNAME)] + _nvlink(plan, nt, groups, cloud=True), [], line


def _aws_efa(plan: ClusterPlan, nt: NodeTypePlan) -> list[Setting]:
    out = [Setting((
        "EFA is reached through the AWS OFI NCCL plugin (aws-ofi-nccl, shipped by the EFA installer and the DLAMI).",
        "With libfabric 1.18+ and aws-ofi-nccl 1.7+ no FI_* variable is needed; FI_PROVIDER efa and",
        "NCCL_PROTO simple were for plugin 1.5.0 and older only, FI_EFA_USE_DEVICE_RDMA 1 for 1.6.x. Upgrade rather",
        "than add them. NCCL_BUFFSIZE and NCCL_MIN_NCHANNELS stay at their defaults (aws-ofi-nccl EFA cheatsheet)."))]
    version = nccl_version(plan)
    if (nt.instance_name or "").startswith("p5"):
        ok = version is None or version >= (2, 18, 5)
        out.append(Setting((
            "P5 needs nccl 2.18.5+, aws-ofi-nccl 1.7.3+, efa-installer 1.29+ (cheatsheet)"
            + ("." if ok else f"; WARNING: software.nccl is {_v(version)}."),)))
    out.append(Setting((
        "Bootstrap and out-of-band TCP on the ENA interface: every interface but loopback and docker bridges",
        "(EFA devices carry no IP traffic)."), "NCCL_SOCKET_IFNAME", ANY_IFNAME))
    out.append(Setting((
        "FI_EFA_USE_HUGE_PAGE is not set. Setting it to 0 (no huge pages) fixes fork() failing with ENOMEM",
        "(multi-process PyTorch data loaders) at a small cost: do that only when it happens.")))
    return out


def _azure_ib(nt: NodeTypePlan) -> list[Setting]:
    out: list[Setting] = []
    if AZURE_NDV5.fullmatch(nt.instance_name or ""):
        src = "Azure HPC image (azhpc-images customizations/ndv5.sh)"
        out += [
            Setting((
                f"The {src} writes these values to /etc/nccl.conf; this file replaces it,",
                "so it carries them. Relaxed ordering 'can greatly help' IB in VMs (NCCL docs); 1 fails if unavailable."),
                "NCCL_IB_PCI_RELAXED_ORDERING", "1"),
            Setting((
                "The VM's PCI topology is virtual: NCCL needs Azure's file to pair GPUs with their IB HCAs",
                "(a link the image creates to /opt/microsoft/ndv5-topo.xml)."), "NCCL_TOPO_FILE", AZURE_NDV5_TOPO),
            Setting((
                "NCCL uses the GPU's CPU affinity from the topology file instead of the task binding (image value;",
                "NCCL still stays inside the Slurm cgroup's cpuset)."), "NCCL_IGNORE_CPU_AFFINITY", "1"),
        ]
    else:
        out.append(Setting((f"No Azure topology file known for {nt.instance_name}: NCCL_TOPO_FILE not set.",)))
    out += [
        Setting((
            "Keep NCCL off the Accelerated Networking VF (mlx5_an0, Ethernet) and on the mlx5_ib* HCAs. An exclude",
            "list, so a different naming only loses the exclusion (azurehpc-health-checks names the VF mlx5_an0)."),
            "NCCL_IB_HCA", "^=mlx5_an0"),
        Setting(("Bootstrap and out-of-band TCP on the VM's primary interface eth0 (exact match).",),
                "NCCL_SOCKET_IFNAME", "=eth0"),
        Setting((
            "The blueprint does not describe Azure's IB fabric (tiers, rails): NCCL_CROSS_NIC,",
            "NCCL_IB_QPS_PER_CONNECTION and NCCL_IB_TIMEOUT stay at NCCL's defaults.")),
    ]
    return out


_GCP_NAMES = {"tcpxo": "GPUDirect-TCPXO", "tcpx": "GPUDirect-TCPX", "rdma-roce": "GPUDirect-RDMA (gIB)"}


def _gcp_conf(nt: NodeTypePlan, fabric: str) -> list[Setting]:
    return [Setting((
        f"{_GCP_NAMES[fabric]}: NCCL's plugin and tuning come from Google's profile, versioned with the plugin",
        "(and checked by its guest config checker). Hard-coded copies broke when the profile changed",
        "(NVIDIA/aicr PR #422), so this file sets nothing. Source the companion profile",
        f"(nccl/{nt.name}.env.sh, installed as {ENV_PATH} by the nccl role)",
        "in the job's bash before NCCL starts; it sources Google's profile and sets interface names only.",
        "Containers also need the plugin directory mounted.")),
    ]


def _env_preamble(nt: NodeTypePlan) -> list[str]:
    return [(f"NCCL environment for node type '{nt.name}' ({nt.instance_name}), installed as {ENV_PATH}: "
             "source it (bash) in the job before NCCL starts, e.g. at the top of the sbatch script. "
             "Sources: docs/nccl.md (clusterctl).")]


def _gcp_steps(nt: NodeTypePlan, fabric: str) -> list[ShellStep]:
    gpu_nics = nt.instance.network.gpu_nics if nt.instance else 0
    if fabric == "rdma-roce":
        first, second = (f"{d}/scripts/set_nccl_env.sh" for d in GIB_DIRS)
        return [
            ShellStep((
                "Google's gIB profile: plugin and every tuning value; clusterctl copies none of them.",
                f"Images install it under {GIB_DIRS[0]} (cluster-toolkit also used {GIB_DIRS[1]})."), (
                f"if [ -r {first} ]; then _gib={GIB_DIRS[0]}",
                f"elif [ -r {second} ]; then _gib={GIB_DIRS[1]}",
                "else _gib=; echo \"nccl-env: gIB profile set_nccl_env.sh not found\" >&2; fi",
                "if [ -n \"$_gib\" ]; then",
                "  source \"$_gib/scripts/set_nccl_env.sh\"",
                "  export LD_LIBRARY_PATH=\"$_gib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"",
                "fi",
                "unset _gib")),
            ShellStep(("Select the gIB network plugin, as cluster-toolkit's run scripts do after the profile.",),
                      (_export("NCCL_NET", "gIB"),)),
            ShellStep(("Interface names of the VM's two gVNICs for bootstrap traffic (cluster-toolkit Slurm images).",),
                      (_export("NCCL_SOCKET_IFNAME", ",".join(GIB_SOCKET_IFNAMES)),)),
        ]
    profile = f"{TCPXO_LIB}/nccl-env-profile.sh"
    installed_by = ((f"On {nt.instance_name} the 50-rxdm Slurm prolog (gcp_tcpxo role) installs it before every",
                     "multi-node job, with the plugin, and starts RxDM (docs/cloud.md).")
                    if nt.instance_name in RXDM_INSTANCE_TYPES else ())
    steps = [ShellStep((
        "Google's TCPXO profile: plugin and every tuning value (NCCL_BUFFSIZE, NCCL_PROTO, tuner config, ...);",
        "clusterctl copies none of them.", *installed_by), (
        f"if [ -r {profile} ]; then",
        f"  NCCL_LIB_DIR={TCPXO_LIB} source {profile}",
        f"else echo \"nccl-env: {profile} not found (GPUDirect-TCPXO not installed?)\" >&2; fi"))]
    if fabric == "tcpxo":
        names = TCPXO_MEGA_IFNAMES
        why = ["Interface names only: control NIC, the GPU NICs, the LLCM device directory (cluster-toolkit",
               "Slurm images; GKE names them eth0..eth8)."]
        if len(names) != gpu_nics:
            why.append(f"WARNING: the catalog lists {gpu_nics} GPU NICs, the names {len(names)}.")
        ifname = [_export("NCCL_FASTRAK_IFNAME", ",".join(names))]
    else:
        why = ["A3 High: cluster-toolkit now runs GPUDirect over the same TCPXO (FasTrak) stack; the legacy TCPX",
               "plugin had no vendor profile (its scripts hard-coded ~20 values), so it is not rendered.",
               "Interface names only; the 4 GPU NICs are found by PCI address (named enpXs0 or enpXs0f0)."]
        ifname = [
            "_ifs=; _k=0",
            f"for _bdf in {' '.join(TCPXO_HIGH_BDFS)}; do",
            "  for _n in /sys/bus/pci/devices/$_bdf/net/*; do",
            "    if [ -e \"$_n\" ]; then _ifs=\"${_ifs:+$_ifs,}${_n##*/}\"; _k=$((_k + 1)); break; fi",
            "  done",
            "done",
            f"[ \"$_k\" -eq {len(TCPXO_HIGH_BDFS)} ] || _ifs={','.join(TCPXO_HIGH_FALLBACK)}",
            "export NCCL_FASTRAK_IFNAME=\"$_ifs\"",
            "unset _ifs _k _bdf _n",
        ]
    steps.append(ShellStep(tuple(why), (
        _export("NCCL_FASTRAK_CTRL_DEV", TCPXO_CTRL),
        *ifname,
        _export("NCCL_SOCKET_IFNAME", TCPXO_CTRL),
        _export("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"))))
    steps.append(ShellStep((
        "The plugin libraries must be on the loader path (and the directory and /dev/aperture_devices mounted",
        "into containers)."), (f"export LD_LIBRARY_PATH=\"{TCPXO_LIB}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"",)))
    return steps


def _v(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else "unknown"
