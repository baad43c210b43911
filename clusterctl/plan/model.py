"""The concrete cluster plan: every host, rack, switch tier, link bundle and address pool.

Immutable dataclasses with slots. Per-host data is kept as parallel tuples rather than one object per
host so that a 200,000-GPU plan stays small and fast to build. Everything a rule or target needs is a
field here; none of them re-derive facts from the blueprint.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterctl.blueprint.inventory_csv import InventoryFile
from clusterctl.catalog.hardware_prices import HardwarePriceList
from clusterctl.blueprint.model import Blueprint
from clusterctl.catalog import Catalog
from clusterctl.catalog.models import Accelerator, CloudInstance, RackSystem, Server, Switch

BPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class NicPlan:
    role: str
    model: str
    count: int
    speed_gbps: float
    protocols: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeTypePlan:
    name: str
    path: BPath
    server: Server | None
    server_name: str | None
    instance: CloudInstance | None
    instance_name: str | None
    gpu_model: str | None
    accelerator: Accelerator | None
    gpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_gb: float
    power_kw: float
    height_u: int
    cooling: str
    liquid_fraction: float
    nics: tuple[NicPlan, ...]
    nvlink_domain_gpus: int | None
    rack_system: str | None
    features: tuple[str, ...]

    def nics_of(self, role: str) -> tuple[NicPlan, ...]:
        return tuple(n for n in self.nics if n.role == role)

    def nic_count(self, role: str) -> int:
        return sum(n.count for n in self.nics if n.role == role)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    index: int
    name: str
    role: str
    path: BPath
    type: NodeTypePlan
    hosts: tuple[str, ...]
    hostlist: str
    rack_index: tuple[int, ...]
    """per host: index into ClusterPlan.racks, -1 when unplaced (cloud or not enough room)"""
    u_bottom: tuple[int, ...]
    """per host: lowest rack unit it occupies, 0 when unplaced"""
    per_rack: int
    racks_requested: tuple[int, ...]
    nvlink_domain_gpus: int | None

    @property
    def count(self) -> int:
        return len(self.hosts)

    @property
    def gpus(self) -> int:
        return len(self.hosts) * self.type.gpus

    @property
    def unplaced(self) -> int:
        return sum(1 for r in self.rack_index if r < 0)


@dataclass(frozen=True, slots=True)
class PowerItem:
    label: str
    count: int
    kw_each: float
    liquid_fraction: float = 0.0

    @property
    def kw(self) -> float:
        return self.count * self.kw_each


@dataclass(frozen=True, slots=True)
class RackPlan:
    index: int
    name: str
    path: BPath
    """blueprint path of the racks[] entry that names it"""
    profile_name: str
    profile_path: BPath
    system: RackSystem | None
    items: tuple[PowerItem, ...]
    """what draws power in the rack, grouped (nodes by type, switches by model, system overhead)"""
    used_u: int
    liquid_only_kw: float
    """heat from hardware that can only be liquid-cooled"""

    @property
    def power_kw(self) -> float:
        return sum(i.kw for i in self.items)

    @property
    def liquid_heat_kw(self) -> float:
        return sum(i.kw * i.liquid_fraction for i in self.items)

    @property
    def air_heat_kw(self) -> float:
        return self.power_kw - self.liquid_heat_kw


@dataclass(frozen=True, slots=True)
class SwitchTier:
    level: int
    """1 leaf, 2 spine, 3 core"""
    role: str
    model: str
    switch: Switch
    count: int
    names: str
    """host list of the tier's switch names"""
    native_ports: int
    native_gbps: float
    down_gbps: float
    """speed of one downlink"""
    down_breakout: int
    """downlinks per native port (2 when an 800G port feeds two 400G NICs)"""
    down_links: int
    """downlinks on the busiest switch of the tier (leaves: ports reserved for a full scalable unit when
    ``su_nodes`` is declared, so a partly filled last SU still gets its full uplinks)"""
    up_gbps: float
    up_links: int
    """uplinks on the busiest switch of the tier"""
    up_dedicated: bool
    """uplinks use dedicated uplink ports (management switches)"""
    ports_needed: float
    """native ports the busiest switch uses (down / breakout + up)"""
    ports_available: int
    busiest: str = ""
    """name of the switch that ``down_links`` / ``up_links`` / ``ports_needed`` describe"""

    @property
    def down_ports(self) -> int:
        """native ports the busiest switch's downlinks take"""
        return -(-self.down_links // max(1, self.down_breakout))

    @property
    def down_capacity_gbps(self) -> float:
        return self.down_links * self.down_gbps

    @property
    def up_capacity_gbps(self) -> float:
        return self.up_links * self.up_gbps


@dataclass(frozen=True, slots=True)
class LinkBundle:
    a: str
    b: str
    count: int
    gbps: float
    breakout: int = 1
    """logical links per physical cable end at the switch (1 = straight cable)"""

    @property
    def cables(self) -> int:
        return -(-self.count // self.breakout)


@dataclass(frozen=True, slots=True)
class ScalableUnit:
    index: int
    nodes: int
    hostlist: str
    leaves: str
    rack: int = -1
    """rack index when the unit is a rack (su_by: rack)"""


@dataclass(frozen=True, slots=True)
class FabricPlan:
    index: int
    name: str
    kind: str
    path: BPath
    tiers_declared: int
    rail_optimized: bool
    oversubscription_declared: float
    attached: tuple[tuple[int, str], ...]
    """(group index, nic role) pairs"""
    endpoints: int
    """node NIC ports plus extra endpoints on the leaves"""
    nodes: int
    rails: int
    """NICs of the attached role per node (max over attached types)"""
    nic_gbps: float
    nic_models: tuple[str, ...]
    sus: tuple[ScalableUnit, ...]
    su_nodes: int
    tiers: tuple[SwitchTier, ...]
    links: tuple[LinkBundle, ...]
    pods: int = 1
    oversubscription_achieved: float = 1.0
    """worst down:up bandwidth ratio over all tiers as planned"""
    oversubscription_where: str = ""
    max_endpoints: int = 0
    """endpoints a fat tree of this many tiers and these radixes can reach at the declared ratio"""
    disconnected_leaves: bool = False
    """tiers: 1 with more than one leaf: leaves have no path to each other"""
    leaves_per_su: int = 0
    """leaves of the largest scalable unit (rails when rail-optimized)"""
    leaves_per_pod: int = 0
    """three tiers: leaves that share one pod's spines"""
    leaf_down_capacity: int = 0
    """most downlinks one leaf takes while keeping the declared ratio (QM9700 at 1:1: 32)"""
    extra_leaves: tuple[int, ...] = ()
    """the leaf (index into the leaf tier) each extra endpoint is cabled to, in cabling order: subnet manager
    appliances take the first ones (plan/subnet_manager.py)"""

    def tier(self, role: str) -> SwitchTier | None:
        for t in self.tiers:
            if t.role == role:
                return t
        return None

    @property
    def switch_count(self) -> int:
        return sum(t.count for t in self.tiers)


@dataclass(frozen=True, slots=True)
class AddressPool:
    name: str
    path: BPath
    cidr: str
    role: str
    version: int
    capacity: int
    """usable addresses (network, broadcast and reserved excluded)"""
    needed: int
    first_host_offset: int
    """offset from the network address of the first assignable address (after the reserved ones)"""
    group_offsets: tuple[tuple[int, int, int], ...] = ()
    """(group index, first slot, addresses per host): groups get consecutive blocks in blueprint order"""
    switch_offset: int = -1
    """first slot of the switches' management addresses (mgmt pools) or loopbacks (loopback pools), -1 when none"""
    point_to_point: bool = False
    """every NIC port takes a /31 (IPv6 /127) link to its leaf: two slots per port, the leaf's (even) then the
    host's (odd); ``first_host_offset`` is even so the pairs align (L3 to the host, clusterctl/plan/underlay.py)"""
    device_offset: int = -1
    """first slot of the PDUs' and CDUs' management addresses (mgmt pools, after the switches; plan/devices.py),
    -1 when none"""

    def address(self, group_index: int, host: int, nic: int = 0) -> str:
        """The address of the ``host``-th node of a group (``nic``-th port for per-port pools; on a point-to-point
        pool the host's side of that port's /31)."""
        import ipaddress

        for gi, first, per_host in self.group_offsets:
            if gi == group_index:
                slot = first + host * per_host + (2 * nic + 1 if self.point_to_point else nic)
                if slot >= self.capacity:
                    raise ValueError(f"{self.name} has no address for slot {slot} (capacity {self.capacity})")
                net = ipaddress.ip_network(self.cidr)
                return str(net.network_address + self.first_host_offset + slot)
        raise KeyError(f"group {group_index} takes no address from {self.name}")


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    blueprint: Blueprint
    catalog: Catalog
    node_types: dict[str, NodeTypePlan]
    groups: tuple[GroupPlan, ...]
    racks: tuple[RackPlan, ...]
    fabrics: tuple[FabricPlan, ...]
    addresses: tuple[AddressPool, ...]
    unplaced_switch_kw: float = 0.0
    """switches with no rack (no switch_racks given): counted in site power only"""
    switch_rack: dict[str, int] = field(default_factory=dict)
    """switch name -> the index of the rack it is placed in (switches in no rack are absent)"""
    inventory: tuple[InventoryFile, ...] = ()
    """the site's inventory files as loaded (``site.inventory``), the management devices' rows sorted apart:
    hosts' serials, MACs and BMC secret names, devices' management MACs; ask
    :func:`clusterctl.plan.host_identity.host_identities` and :func:`~clusterctl.plan.host_identity.device_macs`"""
    price_sheet: HardwarePriceList | None = None
    """the site's price sheet as loaded (``cost.price_sheet``); the prices the report uses are
    :func:`clusterctl.report.ownership.prices_of` (the shipped catalog with the sheet's items in place)"""

    # --- settings the plan carries unchanged ------------------------------------------------------------------
    # What the blueprint states and the plan decides nothing about (a partition's time limit, a tier's mount, a
    # software pin) reaches targets, cloud, report and rehearse through these; every fact *computed* from them
    # (which hosts run slurmctld, the Slurm release and its features, identity classes) is a function in plan/
    # that they ask instead (tests/test_plan_reads.py holds consumers to that).

    @property
    def name(self) -> str:
        """the cluster's name (``name:``)"""
        return self.blueprint.name

    @property
    def description(self) -> str:
        """the blueprint's ``description:``"""
        return self.blueprint.description

    @property
    def slurm(self):
        """the ``slurm:`` settings, None without Slurm; its host roles are :func:`clusterctl.plan.roles.slurm_roles`"""
        return self.blueprint.slurm

    @property
    def cost(self):
        """the ``cost:`` settings (depreciation, facility, utilisation); the defaults when the blueprint has none"""
        from clusterctl.blueprint.cost import Cost

        return self.blueprint.cost or Cost()

    @property
    def max_blast_radius(self) -> float:
        """``validation.max_blast_radius``: the share of the GPUs one component's failure may take out of service"""
        return self.blueprint.validation.max_blast_radius

    @property
    def storage(self):
        """the ``storage:`` tiers, in blueprint order"""
        return self.blueprint.storage

    @property
    def software(self):
        """the ``software:`` pins, None when the blueprint has none"""
        return self.blueprint.software

    @property
    def site(self):
        """the ``site:`` settings (time servers, domain, power feeds), None when the blueprint has none"""
        return self.blueprint.site

    @property
    def cloud(self):
        """the ``cloud:`` settings, None on bare metal; the stack facts are :mod:`clusterctl.cloud.stack.spec`'s"""
        return self.blueprint.cloud

    @property
    def kubernetes(self):
        """the ``kubernetes:`` settings, None when the blueprint asks for no Kubernetes objects; the topology the
        objects describe is :func:`clusterctl.plan.kube_topology.kube_topology`'s"""
        return self.blueprint.kubernetes

    @property
    def workload(self):
        """the ``workload:`` (training job) settings, None when the blueprint describes none"""
        return self.blueprint.workload

    @property
    def users(self):
        """the ``users:`` settings (directory, Slurm accounts, admin groups), None when the blueprint has none"""
        return self.blueprint.users

    @property
    def cooling(self):
        """the ``cooling:`` settings (CDUs, the room's air), always present (empty by default)"""
        return self.blueprint.cooling

    @property
    def acceptance(self):
        """the ``acceptance:`` settings (thresholds of the rendered acceptance jobs), always present"""
        return self.blueprint.acceptance

    # --- figures ---------------------------------------------------------------------------------------------

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def it_power_kw(self) -> float:
        return sum(r.power_kw for r in self.racks) + self.unplaced_switch_kw + sum(
            g.unplaced * g.type.power_kw for g in self.groups if g.type.server is not None)

    def rack_profile(self, rack: RackPlan):
        """The blueprint's profile of ``rack`` (None only for a profile name that did not resolve)."""
        return self.blueprint.rack_profiles.get(rack.profile_name)

    def group_spec(self, group: GroupPlan):
        """The blueprint's ``node_groups`` entry ``group`` was planned from (what it declared, e.g. whether it
        set nvlink_domain_gpus itself)."""
        return self.blueprint.node_groups[group.index]

    def fabric_spec(self, fabric: FabricPlan):
        """The blueprint's ``fabrics`` entry ``fabric`` was planned from (its kind's own settings, e.g.
        InfiniBand ``adaptive_routing``)."""
        return self.blueprint.fabrics[fabric.index]

    def node_type_spec(self, node_type: NodeTypePlan):
        """The blueprint's ``node_types`` entry ``node_type`` was planned from (what it declared beyond the
        catalog, e.g. its NCCL overrides or ``storage_interfaces``)."""
        return self.blueprint.node_types[node_type.name]

    def group(self, name: str) -> GroupPlan | None:
        for g in self.groups:
            if g.name == name:
                return g
        return None

    def fabrics_on(self, role: str, *groups: GroupPlan) -> tuple[FabricPlan, ...]:
        """The fabrics the ``role`` NICs of ``groups`` (default: every group) are attached to, in blueprint
        order."""
        on = {g.index for g in groups or self.groups}
        return tuple(f for f in self.fabrics if any(r == role and gi in on for gi, r in f.attached))

    def compute_fabrics(self, *groups: GroupPlan) -> tuple[FabricPlan, ...]:
        """The fabrics the compute NICs of ``groups`` (default: every group) are attached to, in blueprint
        order: the fabrics their jobs communicate over (one per group normally; FABRIC011 warns about more).
        The one answer for Slurm's topology, the NCCL settings, the Ansible variables and the report."""
        return self.fabrics_on("compute", *groups)

    def compute_fabric(self, group: GroupPlan) -> FabricPlan | None:
        """The first of :meth:`compute_fabrics`, None when the group is on no compute fabric."""
        return next(iter(self.compute_fabrics(group)), None)
