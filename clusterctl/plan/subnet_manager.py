"""Each InfiniBand fabric's subnet manager: where it runs, with which priorities, routing engine and partitions.

An InfiniBand subnet does nothing until a subnet manager (SM) has swept it: it assigns LIDs, programs every
switch's forwarding tables and moves the ports from INIT to ACTIVE. The blueprint says where it runs
(``fabrics[].subnet_manager``); this module decides the rest once, for the rules (rules/infiniband.py) and the
writers (targets/subnet_manager.py, the ``subnet_manager`` Ansible role) alike:

- **placement**: OpenSM on hosts of the plan, NVIDIA UFM on appliances (their ports are extra endpoints on the
  leaves, as the DGX SuperPOD reference architectures cable them: "Compute and UFM" cables, H100 RA Table 4), or
  the embedded SM of managed switches (NVIDIA MLNX-OS User Manual, "Subnet Manager": "up to 2048 nodes", no
  adaptive routing, no SHARP);
- **priorities**: the first SM named gets ``priority`` (OpenSM's ``sm_priority``, 0-15, the highest is master),
  each next one one less, so an HA pair has a defined master and standby;
- **routing engine**: ``ftree`` for a fat tree of two or more tiers (opensm(8): the fat-tree engine ranks the
  switches from the leaves), then ``updn`` if ftree refuses the fabric; ``updn`` alone for one switch tier;
- **partitions**: one P_Key per NIC role attached to the fabric (compute, storage), every channel adapter a
  full member, the first one at P_Key index 0 (``indx0``), which IPoIB's parent interface and NCCL
  (``NCCL_IB_PKEY`` default 0) use.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan, FabricPlan

EMBEDDED_SM_MAX_NODES = 2048
"""NVIDIA MLNX-OS User Manual (v3.11-v3.12), "Subnet Manager": "The embedded SM on the MLNX-OS can be used to manage
fabrics up to 2048 nodes on x86 based systems"; it also "does not support adaptive routing ... and SHARP"."""

PKEYS: dict[str, int] = {"compute": 0x0001, "storage": 0x0002, "inband": 0x0003, "mgmt": 0x0004, "bmc": 0x0005}
"""the P_Key (low 15 bits, opensm(8) "PARTITION CONFIGURATION") of each NIC role's partition"""


@dataclass(frozen=True, slots=True)
class SmInstance:
    name: str
    """a host of the plan, an appliance name or a switch name"""
    priority: int


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    pkey: int
    index0: bool
    """opensm's ``indx0``: this P_Key is put at block 0 index 0 of every member port"""


@dataclass(frozen=True, slots=True)
class SubnetManagerPlan:
    fabric: FabricPlan
    kind: str
    """``opensm`` or ``ufm``; empty when the blueprint names no subnet manager"""
    placement: str
    """``hosts`` (OpenSM on hosts of the plan), ``appliances`` (UFM) or ``switches`` (embedded SM); empty: none"""
    instances: tuple[SmInstance, ...]
    routing_engine: str
    adaptive_routing: bool
    sharp: bool
    partitions: tuple[Partition, ...]

    @property
    def declared(self) -> bool:
        return bool(self.placement)

    @property
    def ib_nodes(self) -> int:
        """channel adapter ports and switches: the "nodes" an SM's size limit counts"""
        return self.fabric.endpoints + self.fabric.switch_count


def routing_engine(fp: FabricPlan) -> str:
    """opensm's ``routing_engine``: ftree (falling back to updn) for a multi-tier fat tree, else updn."""
    return "ftree,updn" if fp.tiers_declared >= 2 and len(fp.tiers) >= 2 else "updn"


def partitions(fp: FabricPlan) -> tuple[Partition, ...]:
    """One partition per NIC role attached to the fabric, in PKEYS order; the first at index 0."""
    roles = {role for _, role in fp.attached}
    ordered = [r for r in PKEYS if r in roles]
    return tuple(Partition(r, PKEYS[r], k == 0) for k, r in enumerate(ordered))


def _names(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    try:
        return tuple(hostlist.expand(text))
    except hostlist.HostlistError:
        return ()


def subnet_manager(plan: ClusterPlan, fp: FabricPlan) -> SubnetManagerPlan:
    """The subnet manager of InfiniBand fabric ``fp`` as declared (no placement when none is)."""
    spec = plan.fabric_spec(fp)
    sm = getattr(spec, "subnet_manager", None)
    kind = placement = ""
    names: tuple[str, ...] = ()
    priority = 15
    if sm is not None:
        kind, priority = sm.kind, sm.priority
        if sm.switches and sm.kind == "opensm":
            placement, names = "switches", _names(sm.switches)
        elif sm.hosts:
            placement, names = ("appliances" if sm.kind == "ufm" else "hosts"), _names(sm.hosts)
    instances = tuple(SmInstance(n, max(0, priority - k)) for k, n in enumerate(names))
    return SubnetManagerPlan(fp, kind, placement if instances else "", instances, routing_engine(fp),
                             bool(getattr(spec, "adaptive_routing", False)), bool(getattr(spec, "sharp", False)),
                             partitions(fp))


def subnet_managers(plan: ClusterPlan) -> tuple[SubnetManagerPlan, ...]:
    """One per InfiniBand fabric, in blueprint order."""
    return tuple(subnet_manager(plan, fp) for fp in plan.fabrics if fp.kind == "infiniband")


def attached_hosts(plan: ClusterPlan, fp: FabricPlan) -> set[str]:
    """Hosts with at least one NIC port cabled to ``fp``."""
    out: set[str] = set()
    for gi, role in fp.attached:
        g = plan.groups[gi]
        if g.type.nic_count(role):
            out.update(g.hosts)
    return out


def fabric_switches(fp: FabricPlan) -> set[str]:
    return {name for t in fp.tiers for name in _names(t.names)}


def misplaced(plan: ClusterPlan, sm: SubnetManagerPlan) -> list[str]:
    """SM instances that cannot run where the blueprint puts them: a host that is no host of the plan or has no
    port on the fabric, a switch that is not one of the fabric's, an appliance name that is a host of the plan."""
    if sm.placement == "hosts":
        ok = attached_hosts(plan, sm.fabric)
    elif sm.placement == "switches":
        ok = fabric_switches(sm.fabric)
    elif sm.placement == "appliances":
        hosts = {h for g in plan.groups for h in g.hosts}
        return [i.name for i in sm.instances if i.name in hosts]
    else:
        return []
    return [i.name for i in sm.instances if i.name not in ok]


def appliance_ports(sm: SubnetManagerPlan) -> int:
    """Leaf ports the SM needs besides the nodes' own: one per UFM appliance."""
    return len(sm.instances) if sm.placement == "appliances" else 0


def opensm_hosts(plan: ClusterPlan) -> dict[str, tuple[tuple[str, int], ...]]:
    """host -> ((fabric, sm_priority), ...) for every host of the plan that runs OpenSM on a fabric it is cabled
    to (what the ``subnet_manager`` role applies); misplaced names are left out (rule IB002 reports them)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for sm in subnet_managers(plan):
        if sm.placement != "hosts":
            continue
        bad = set(misplaced(plan, sm))
        for inst in sm.instances:
            if inst.name not in bad:
                out.setdefault(inst.name, []).append((sm.fabric.name, inst.priority))
    return {h: tuple(v) for h, v in sorted(out.items())}
