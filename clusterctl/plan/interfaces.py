"""Every host port of a bare-metal node type, decided once: its role, its index within the role (compute: the
rail), its OS network interface (netdev) and RDMA device names, and where those names come from.

The NCCL files (NCCL_IB_HCA, NCCL_SOCKET_IFNAME), LNet's interface-qualified networks, the host_network role
(in-band bond, IPoIB, storage NICs), the roce_network role's rails and the preflight that compares the names
with a host all ask this module (docs/network.md, "Interface names"; docs/nccl.md, "HCA names").

Where the names come from, first match per role:

1. the node type's ``interfaces.<role>`` list (the blueprint's declaration, whole);
2. the older per-field overrides: ``nccl.ib_hca`` (compute RDMA devices), ``storage_interfaces`` (storage
   netdevs);
3. the server's catalog entry: ``nics[].ports`` copied from the vendor's table (a ``sources`` line ``nics.ports``
   says which; DGX H100/H200 User Guide "Network Modules", GB200 compute tray table).

Nothing is guessed: a name no source gives stays ``None`` and the consumers say so (NET001 warns about
compute RDMA devices nobody names). An InfiniBand netdev name (``ibp...``) from a vendor table is the port's
default InfiniBand mode; on an Ethernet or RoCE compute fabric the port is an Ethernet netdev with another
name, so it is dropped there.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.catalog.models import PortName
from clusterctl.plan.model import ClusterPlan, NodeTypePlan

HOST_ROLES = ("compute", "storage", "inband")
"""the port roles whose names the hosts' configuration needs (BMC ports are configured by their controller)"""

RDMA_FABRICS = ("infiniband", "roce")


@dataclass(frozen=True, slots=True)
class HostPort:
    """One port of a node type: role, index within the role, OS names (None where no source gives them)."""

    role: str
    index: int
    netdev: str | None
    rdma: str | None
    source: str
    """where the names come from, one phrase (empty when no source gives any name)"""


def port_count(plan: ClusterPlan, nt: NodeTypePlan, role: str) -> int:
    """The ports of a role (the plan counts ports: a dual-port card is two; a compute port is one rail)."""
    return nt.nic_count(role)


def catalog_names(nt: NodeTypePlan, role: str) -> tuple[list[PortName], str]:
    """The names the server's catalog entry gives a role's ports, in slot order, and their source line."""
    server = nt.server
    if server is None:
        return [], ""
    names = [p for slot in server.nics if slot.role == role for p in slot.ports]
    where = server.sources.get("nics.ports", "")  # "[P] <document, section> (<columns>): <what>": the document
    where = where.split("] ", 1)[-1].split(" (")[0].split(":")[0]
    label = f"catalog server {nt.server_name}" if nt.server_name else "the node type's spec"
    return names, f"{label} ({where})" if where else label


def declared_names(plan: ClusterPlan, nt: NodeTypePlan, role: str) -> tuple[list[PortName], str]:
    """The names the blueprint declares for a role: ``interfaces.<role>``, else the older field overrides."""
    spec = plan.blueprint.node_types.get(nt.name)
    if spec is None:
        return [], ""
    declared = getattr(spec.interfaces, role, None) if spec.interfaces is not None else None
    if declared:
        return list(declared), f"node_types.{nt.name}.interfaces.{role}"
    if role == "compute" and spec.nccl is not None and isinstance(spec.nccl.ib_hca, list) and spec.nccl.ib_hca:
        return ([PortName(rdma=h.split(":")[0]) for h in spec.nccl.ib_hca], f"node_types.{nt.name}.nccl.ib_hca")
    if role == "storage" and spec.storage_interfaces:
        return ([PortName(netdev=n) for n in spec.storage_interfaces],
                f"node_types.{nt.name}.storage_interfaces")
    return [], ""


def fabric_kinds(plan: ClusterPlan, nt: NodeTypePlan, role: str) -> set[str]:
    """The kinds of the fabrics a node type's ports of ``role`` are attached to."""
    groups = [g for g in plan.groups if g.type.name == nt.name]
    return {f.kind for f in plan.fabrics_on(role, *groups)} if groups else set()


def role_ports(plan: ClusterPlan, nt: NodeTypePlan, role: str) -> tuple[HostPort, ...]:
    """The ports of one role in port order (compute: rail order), each with the names its first source gives.
    A source whose list does not cover every port of the role is not used (NET001 reports a declared one)."""
    count = port_count(plan, nt, role)
    if nt.instance is not None or count == 0:
        return ()
    names: list[PortName] = []
    source = ""
    for found, where in (declared_names(plan, nt, role), catalog_names(nt, role)):
        if len(found) == count:
            names, source = found, where
            break
    if source.startswith("catalog") and role == "compute" and not fabric_kinds(plan, nt, role) <= {"infiniband"}:
        names = [PortName(rdma=p.rdma, description=p.description) if (p.netdev or "").startswith("ib") else p
                 for p in names]
    if not names:
        return tuple(HostPort(role, k, None, None, "") for k in range(count))
    return tuple(HostPort(role, k, p.netdev, p.rdma, source) for k, p in enumerate(names))


def compute_ports(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[HostPort, ...]:
    """The compute ports of a node type in rail order (rail 0 first): what NCCL_IB_HCA lists, what the RoCE
    rails and the switch files' host ports carry. Empty for cloud instances and node types without compute
    NICs."""
    return role_ports(plan, nt, "compute")


def host_ports(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[HostPort, ...]:
    """Every compute, storage and in-band port of a node type, in that order."""
    return tuple(p for role in HOST_ROLES for p in role_ports(plan, nt, role))


def netdevs(ports: tuple[HostPort, ...]) -> tuple[str, ...] | None:
    """The netdev names of ``ports``, None unless every port has one."""
    names = tuple(p.netdev for p in ports)
    return None if any(n is None for n in names) else names  # type: ignore[return-value]


def rdma_devices(ports: tuple[HostPort, ...]) -> tuple[str, ...] | None:
    """The RDMA device names of ``ports``, None unless every port has one."""
    names = tuple(p.rdma for p in ports)
    return None if any(n is None for n in names) else names  # type: ignore[return-value]


def compute_hcas(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[tuple[str, ...] | str | None, tuple[str, ...]]:
    """NCCL_IB_HCA's devices and how they were found: the node type's full ``nccl.ib_hca`` value (a string), or
    the compute ports' RDMA devices (with ``:port`` when the override gave one); None when no source names
    every compute port's RDMA device."""
    spec = plan.blueprint.node_types.get(nt.name)
    override = spec.nccl.ib_hca if spec is not None and spec.nccl is not None else None
    if isinstance(override, str):
        return override, ("Value from the node type's override.",)
    if override and len(override) != nt.nic_count("compute"):  # a subset of the compute ports, as written
        return tuple(str(x) for x in override), (f"Device names from node_types.{nt.name}.nccl.ib_hca.",)
    ports = compute_ports(plan, nt)
    devices = rdma_devices(ports)
    if not ports or devices is None:
        return None, ()
    if override:  # keeps an explicit :port the override wrote
        devices = tuple(str(x) for x in override)
    return devices, (f"Device names from {ports[0].source}.",)


def compute_rdma_unnamed(plan: ClusterPlan, nt: NodeTypePlan) -> bool:
    """True for a bare-metal node type whose compute NICs are NVIDIA RDMA parts on an InfiniBand or RoCE fabric
    and whose compute RDMA device names no source gives (NET001): NCCL_IB_HCA cannot be written."""
    if nt.instance is not None or not fabric_kinds(plan, nt, "compute") & set(RDMA_FABRICS):
        return False
    nics = nt.nics_of("compute")
    if not nics or any(plan.catalog.nics.get(n.model) is None
                       or plan.catalog.nics[n.model].vendor.upper() != "NVIDIA" for n in nics):
        return False
    return compute_hcas(plan, nt)[0] is None


def declared_mismatch(plan: ClusterPlan, nt: NodeTypePlan) -> list[tuple[str, int, int]]:
    """(role, names declared, ports of the role) for every ``interfaces.<role>`` list of a node type that does
    not name each port of its role exactly once (NET002)."""
    spec = plan.blueprint.node_types.get(nt.name)
    if spec is None or spec.interfaces is None:
        return []
    out = []
    for role in HOST_ROLES:
        declared = getattr(spec.interfaces, role)
        if declared is not None and len(declared) != port_count(plan, nt, role):
            out.append((role, len(declared), port_count(plan, nt, role)))
    return out
