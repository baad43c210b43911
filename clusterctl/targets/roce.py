"""RoCE: the one QoS declaration of a RoCE fabric and the compact per-group RDMA address tables.

Everything that must agree across the host, the NCCL settings and the switches is computed here once:

- :func:`fabric_qos`: DSCP, PFC priority, ECN, CNP DSCP and MTU of a RoCE fabric, from its ``traffic_class``
  (the IP ToS byte NCCL_IB_TC carries: DSCP << 2 | ECN bits), ``pfc_priority``, ``ecn``, ``cnp_dscp`` and
  ``mtu``. The nccl target writes ``NCCL_IB_TC`` from it, the roce_network role's group variables carry it
  to the hosts (mlnx_qos, ECN sysfs), the switches target writes it into every switch file.
- :func:`group_vars`: what the roce_network role needs to give a host its RDMA addresses without one line
  per host: per rail the integer address of the group's first host, the addresses per host (stride), and
  the group's host names as numbered runs (``[prefix, width, first, last, index of first]``), from which
  the role computes the host's position. A 128,000-node group named ``gpu[000001-128000]`` is one run.

Sources (docs/roce.md): Cumulus Linux "RDMA over Converged Ethernet - RoCE" (lossless mode: DSCP 26 to
switch priority 3, PFC on 3, ECN on traffic class 3, CNP on priority 6); DOCA/MLNX_OFED "Quality of Service"
(mlnx_qos --trust dscp, --pfc) and "Explicit Congestion Notification" (/sys/class/net/<if>/ecn/...).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan, FabricPlan, GroupPlan
from clusterctl.plan.allocations import group_block
from clusterctl.plan.interfaces import compute_ports, rdma_devices
from clusterctl.plan import underlay
from clusterctl.plan.underlay import RULE_PRIORITY_BASE, TABLE_BASE
from clusterctl.targets.host_runs import host_runs

SWITCH_MTU = 9216
"""switch port MTU on a RoCE fabric: NVIDIA's jumbo setting on Spectrum (Cumulus Linux default for RoCE
designs), above every host MTU the blueprint allows (at most 9216)"""


@dataclass(frozen=True, slots=True)
class RoceQos:
    fabric: str
    traffic_class: int
    """the IP ToS byte of RDMA packets (NCCL_IB_TC)"""
    pfc_priority: int
    ecn: bool
    cnp_dscp: int
    mtu: int
    switch_mtu: int = SWITCH_MTU

    @property
    def dscp(self) -> int:
        return self.traffic_class >> 2

    @property
    def ecn_bits(self) -> int:
        return self.traffic_class & 3

    @property
    def cnp_priority(self) -> int:
        """the priority CNPs take on the NIC: the default DSCP-to-priority map (DSCP >> 3), 48 -> 6"""
        return self.cnp_dscp >> 3

    @property
    def pfc_vector(self) -> str:
        """mlnx_qos --pfc value: one 0/1 per priority 0..7"""
        return ",".join("1" if p == self.pfc_priority else "0" for p in range(8))


def fabric_qos(plan: ClusterPlan, fp: FabricPlan) -> RoceQos | None:
    """The QoS of a RoCE fabric, None for other kinds."""
    spec = plan.fabric_spec(fp)
    if spec.kind != "roce":
        return None
    return RoceQos(fp.name, spec.traffic_class, spec.pfc_priority, spec.ecn, spec.cnp_dscp, spec.mtu)


def compute_roce_fabrics(plan: ClusterPlan, g: GroupPlan) -> list[FabricPlan]:
    """The RoCE fabrics a group's compute NICs are attached to (normally one; FABRIC011 warns about two)."""
    return [f for f in plan.compute_fabrics(g) if f.kind == "roce"]


def host_index(runs: list[list], name: str) -> int:
    """The position of ``name`` in its group from :func:`host_runs` (what the role computes), -1 if absent."""
    for prefix, width, first, last, index in runs:
        if width < 0:
            if name == prefix:
                return index
            continue
        digits = name[len(prefix):]
        if not name.startswith(prefix) or not digits.isdigit():
            continue
        if (len(digits) == width) if width else digits == str(int(digits)):
            if first <= int(digits) <= last:
                return index + int(digits) - first
    return -1


@dataclass(frozen=True, slots=True)
class Rail:
    index: int
    device: str
    """RDMA device (mlx5_N), the same name NCCL_IB_HCA lists; empty when it cannot be derived"""
    base: int
    """the address of this rail's NIC on the group's first host, as an integer"""
    table: int
    priority: int


def rails(plan: ClusterPlan, g: GroupPlan, devices: tuple[str, ...]) -> tuple[str, list[Rail], int] | None:
    """(pool cidr, the group's rails, addresses per host), None when the group has no RDMA pool."""
    found = group_block(plan, "compute", g)
    if found is None:
        return None
    pool, first, per_host = found
    net = ipaddress.ip_network(pool.cidr)
    base = int(net.network_address) + pool.first_host_offset + first
    n = g.type.nic_count("compute")
    routed = underlay.routed_ports(plan, g, "compute")
    if routed:  # L3 to the host: the numbers of the leaves' files and host_network's storage ports
        return pool.cidr, [Rail(r.index, devices[r.index] if r.index < len(devices) else "", r.base, r.table,
                                r.priority) for r in routed], per_host
    # a point-to-point pool (RoCE, L3 to the host): NIC k of a host takes the /31 at 2k, the host the odd side
    offset = (lambda k: 2 * k + 1) if pool.point_to_point else (lambda k: k)
    return pool.cidr, [Rail(k, devices[k] if k < len(devices) else "", base + offset(k), TABLE_BASE + 1 + k,
                            RULE_PRIORITY_BASE + k) for k in range(n)], per_host


def address(cidr: str, rail: Rail, stride: int, host: int) -> str:
    """What the role writes for ``host`` on ``rail`` (tests compare it with AddressPool.address)."""
    net = ipaddress.ip_network(cidr)
    cls = ipaddress.IPv4Address if net.version == 4 else ipaddress.IPv6Address
    return str(cls(rail.base + host * stride))


def routed_vars(plan: ClusterPlan, fp: FabricPlan, cidr: str) -> dict:
    """L3 to the host (clusterctl/plan/underlay.py): each rail's address is the odd side of a /31 (IPv6 /127) whose
    even side is its leaf, the rail's gateway; the fabric's prefixes are routed via that gateway in the rail's
    table. Empty for a pool that is not point-to-point (every rail in one subnet, the leaves bridging it)."""
    pool = next((p for p in plan.addresses if p.cidr == cidr and p.role == "compute"), None)
    if pool is None or not pool.point_to_point:
        return {}
    return {"roce_network_prefix": 31 if pool.version == 4 else 127, "roce_network_routes": [cidr]}


def rail_devices(plan: ClusterPlan, g: GroupPlan) -> tuple[str, ...]:
    """The compute RDMA device of each rail (clusterctl/plan/interfaces.py, the names NCCL_IB_HCA lists);
    empty when no source names them all (NET001; then the role needs roce_network_interfaces)."""
    return rdma_devices(compute_ports(plan, g.type)) or ()


def group_vars(plan: ClusterPlan, g: GroupPlan) -> dict | None:
    """The roce_network role's variables for a group whose compute NICs are on a RoCE fabric with an RDMA
    pool; None otherwise. Size independent of the group's host count (for consecutive host names)."""
    fabrics = compute_roce_fabrics(plan, g)
    if not fabrics or g.type.instance is not None:
        return None
    qos = fabric_qos(plan, fabrics[0])
    found = rails(plan, g, rail_devices(plan, g))
    if qos is None or found is None:
        return None
    cidr, rail_list, stride = found
    return {
        "roce_network_fabric": qos.fabric,
        "roce_network_cidr": cidr,
        "roce_network_stride": stride,
        **routed_vars(plan, fabrics[0], cidr),
        "roce_network_rails": [{"device": r.device, "base": r.base, "table": r.table, "priority": r.priority}
                               for r in rail_list],
        "roce_network_hosts": host_runs(g.hosts),
        "roce_network_mtu": qos.mtu,
        "roce_network_qos": {"traffic_class": qos.traffic_class, "dscp": qos.dscp, "pfc_priority": qos.pfc_priority,
                             "pfc": qos.pfc_vector, "ecn": qos.ecn, "cnp_dscp": qos.cnp_dscp,
                             "cnp_priority": qos.cnp_priority},
    }
