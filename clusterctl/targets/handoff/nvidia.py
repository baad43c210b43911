"""NVIDIA bring-up inputs: every cable as the UFM Cable Validation Tool's point-to-point (P2P) file, and the site
facts NVIDIA Mission Control's network generator reads (``siteinfo.yaml``), each in its documented format only.

Sources (read for this module; docs/handoff.md quotes what each says):

- **P2P file**: NVIDIA UFM Cable Validation Tool (CVT) v1.6.0 user manual, "P2P File": the columns ``A-Node Name``,
  ``A-Type`` (``Host`` or ``Switch``), ``A-Port``, ``Z-Node Name``, ``Z-Type``, ``Z-Port``; "the tool relies on the
  header names to extract the information it needs". Port names as its examples write them: an InfiniBand port is
  "a single number or a split port (e.g., 1/2)", a host's InfiniBand port its HCA port number (1 is mlx5_0 P1);
  an Ethernet switch port ``swp<port>s<split>`` (``swp1s0``, ``swp1s1``), a host's Ethernet port ``rail<port>``.
  The manual calls the file an Excel workbook of one or more sheets; each ``p2p/<fabric>.csv`` here is one such
  sheet, to be saved as a sheet of the workbook (CVT's own CSV import was not confirmed).
- **siteinfo.yaml**: NVIDIA Mission Control North-South Network Deployment Guide 2.0.0 and 2.3.0, Appendix,
  "Section 1.1: siteinfo.yaml". Only keys whose meaning that section states and the plan knows are written:
  ``dgx_type`` (its examples: ``gb200``, ``gb300``), ``time_servers`` ("to be used on the Ethernet switches"),
  ``networking.oob_prefix``, ``networking.data_prefix`` and ``networking.storage_prefix`` ("the prefix for
  storage /31s"). Not written, and said so in the file: ``bms_prefix`` (its meaning is not stated),
  ``bgp_btor_asns``/``bgp_ftor_asns`` (the north-south top-of-rack switches' ASNs, "provided by the customer"; the
  blueprint plans the east-west fabrics only), ``rack_mapping`` (factory rack serial numbers) and the prefix lengths
  of 2.3.0. The same guide's own P2P layout (its "Section 1.2: Standard P2P Column Header": ``BUNDLE_ID``, ``SEQ``,
  ``SRC_RACKROLE`` ...) is for the north-south Ethernet cabling and its value conventions are not stated there, so
  it is not rendered: the CVT file carries the same cables with documented columns.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from clusterctl.plan.cables import Cable, fabric_cables
from clusterctl.plan.interfaces import role_ports
from clusterctl.plan.model import ClusterPlan, FabricPlan
from clusterctl.plan.subnet_manager import subnet_manager
from clusterctl.targets.common import header, path_part
from clusterctl.yamlout import comment, comment_lines, dump

P2P_COLUMNS = ("A-Node Name", "A-Type", "A-Port", "Z-Node Name", "Z-Type", "Z-Port")
"""CVT v1.6.0 user manual, "P2P File": the six columns it lists, in its order"""

DGX_TYPES = ("gb200", "gb300")
"""the ``dgx_type`` values the Mission Control appendix shows (``gb200``, and ``gb300`` "for GB300 deployments")"""


def _switch_port(fp: FabricPlan, port: str) -> str:
    """The plan's panel name (``P3``, ``P3/2``: lane 2 of port 3) as CVT writes it: InfiniBand ``3``, ``3/2``;
    Ethernet (Cumulus Linux) ``swp3``, ``swp3s1`` (split lanes from 0, as CVT's ``swp1s0``/``swp1s1``)."""
    native, _, lane = port[1:].partition("/")
    if fp.kind == "infiniband":
        return f"{native}/{lane}" if lane else native
    return f"swp{native}s{int(lane) - 1}" if lane else f"swp{native}"


def _host_port_names(plan: ClusterPlan, fp: FabricPlan) -> dict[str, tuple[str, ...]]:
    """Per group name: the name of each of a host's ports on ``fp`` in the order plan/cables.py numbers them
    (``U1/P1`` is the first): the HCA port number on InfiniBand, ``rail<n>`` for an Ethernet or RoCE compute port,
    the OS netdev for another role where the plan names it (else ``<role><n>``), ``bmc`` for the BMC port."""
    names: dict[str, list[str]] = {}
    for gi, role in dict.fromkeys(fp.attached):
        g = plan.groups[gi]
        own = names.setdefault(g.name, [])
        count = g.type.nic_count(role)
        if role == "bmc":
            own.extend("bmc" if count == 1 else f"bmc{k + 1}" for k in range(count))
        elif fp.kind == "infiniband":
            first = len(own) + 1
            own.extend(str(first + k) for k in range(count))
        elif role == "compute":
            own.extend(f"rail{k + 1}" for k in range(count))
        else:
            ports = {p.index: p.netdev for p in role_ports(plan, g.type, role)}
            own.extend(ports.get(k) or f"{role}{k + 1}" for k in range(count))
    return {name: tuple(ports) for name, ports in names.items()}


def _rows(plan: ClusterPlan, fp: FabricPlan, cables: list[Cable]) -> Iterator[tuple[str, ...]]:
    """Host and endpoint cables with the host on the A side (as CVT's examples), switch-to-switch cables from the
    lower switch (A) to the upper one (Z)."""
    group_of = {h: g.name for g in plan.groups for h in g.hosts} if any(c.peer_kind == "host" for c in cables) else {}
    names = _host_port_names(plan, fp)
    for c in cables:
        switch_port = _switch_port(fp, c.port)
        if c.peer_kind == "switch":
            yield c.switch, "Switch", switch_port, c.peer, "Switch", _switch_port(fp, c.peer_port)
            continue
        index = int(c.peer_port.split("/")[0][1:]) - 1
        if c.peer_kind == "host":
            ports = names.get(group_of.get(c.peer, ""), ())
            host_port = ports[index] if index < len(ports) else str(index + 1)
        else:  # an extra endpoint (a UFM appliance, a storage controller): its one port
            host_port = "1" if fp.kind == "infiniband" else "rail1"
        yield c.peer, "Host", host_port, c.switch, "Switch", switch_port


def p2p_file(plan: ClusterPlan, fp: FabricPlan, appliances: tuple[str, ...] = ()) -> str:
    """One fabric's cables as a CVT P2P sheet (CSV, the header row first: CVT finds its columns by name)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(P2P_COLUMNS)
    writer.writerows(_rows(plan, fp, fabric_cables(plan, fp, appliances)))
    return out.getvalue()


def _appliances(plan: ClusterPlan, fp: FabricPlan) -> tuple[str, ...]:
    """The subnet manager appliances cabled to an InfiniBand fabric's leaves (named as the ibdiagnet file names them)."""
    if fp.kind != "infiniband":
        return ()
    sm = subnet_manager(plan, fp)
    return tuple(i.name for i in sm.instances) if sm.placement == "appliances" else ()


def p2p_files(plan: ClusterPlan) -> dict[str, str]:
    """``handoff/nvidia/p2p/<fabric>.csv`` for every fabric with switches."""
    return {f"handoff/nvidia/p2p/{path_part(fp.name, 'fabric')}.csv": p2p_file(plan, fp, _appliances(plan, fp))
            for fp in plan.fabrics if fp.tier("leaf") is not None}


def _dgx_type(plan: ClusterPlan) -> str | None:
    models = {g.type.gpu_model for g in plan.groups if g.type.gpus and g.type.instance is None}
    return models.pop() if len(models) == 1 and models <= set(DGX_TYPES) else None


def _pool_cidr(plan: ClusterPlan, role: str, point_to_point: bool | None = None) -> str | None:
    return next((p.cidr for p in plan.addresses
                 if p.role == role and (point_to_point is None or p.point_to_point == point_to_point)), None)


def siteinfo(plan: ClusterPlan) -> str:
    """``handoff/nvidia/siteinfo.yaml``: the documented keys the plan can fill (module docstring)."""
    data: dict = {}
    notes = [header(plan).rstrip("\n")[2:],
             "Site parameters for NVIDIA Mission Control's north-south network generator (netautogen), in the "
             "format of its deployment guide (2.0.0/2.3.0, Appendix, Section 1.1: siteinfo.yaml). Only keys that "
             "section explains and this blueprint plans are set (docs/handoff.md).",
             "netautogen allocates addresses itself from these prefixes: its allocation is not clusterctl's "
             "(the rendered DHCP, DNS and Warewulf files hold clusterctl's).",
             "Left for the site: bgp_btor_asns and bgp_ftor_asns (the north-south top-of-rack switches' ASNs, "
             "provided by the customer), rack_mapping (factory rack serial numbers), bms_prefix."]
    dgx = _dgx_type(plan)
    if dgx is not None:
        data["dgx_type"] = dgx
    else:
        notes.append("dgx_type: not set, the guide documents gb200 and gb300 and this blueprint's GPU nodes are "
                     "neither (or several kinds)")
    time_servers = plan.site.time_servers if plan.site is not None else []
    if time_servers:
        data["time_servers"] = [str(s) for s in time_servers]
    else:
        notes.append("time_servers: not set, the blueprint names no site.time_servers")
    networking = {key: cidr for key, cidr in (("oob_prefix", _pool_cidr(plan, "bmc")),
                                              ("data_prefix", _pool_cidr(plan, "inband")),
                                              ("storage_prefix", _pool_cidr(plan, "storage", True)))
                  if cidr is not None}
    notes += [f"networking.{key}: {what}" for key, what in
              (("oob_prefix", "the BMC pool (the switches', PDUs' and CDUs' management pool is another one, which "
                              "this key cannot also hold)"),
               ("data_prefix", "the in-band pool"), ("storage_prefix", "the point-to-point storage pool"))
              if key in networking]
    if networking:
        data["networking"] = networking
    return dump(data, [comment(n) for n in notes]) if data else comment_lines(notes)
