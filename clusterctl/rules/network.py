"""Host networking: the OS names of the ports the rendered files configure (clusterctl/plan/interfaces.py)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.interfaces import compute_rdma_unnamed, declared_mismatch
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule


@rule("NET001", "network", Severity.WARNING, "compute RDMA device names unknown")
def compute_names_unknown(plan: ClusterPlan) -> Iterator[Hit]:
    """A bare-metal node type whose NVIDIA compute NICs sit on an InfiniBand or RoCE fabric needs the RDMA device
    name of every rail: NCCL_IB_HCA lists them (without it NCCL also puts collectives on the storage and in-band
    ports) and the RoCE rails are addressed by them. The names come from the catalog when the vendor documents
    them (DGX H100/H200 User Guide "Network Modules"; the GB200 compute tray table) and from the blueprint
    otherwise: OEM HGX servers have no vendor table, and the kernel names devices in PCI order, which differs
    between chassis. Fix: declare ``node_types.<t>.interfaces.compute`` in rail order, as ``ibdev2netdev``
    shows them on one node."""
    for name, nt in plan.node_types.items():
        if any(g.type.name == name for g in plan.groups) and compute_rdma_unnamed(plan, nt):
            yield Hit(("node_types", name),
                      f"node type {name} ({nt.server_name or 'inline spec'}) has {nt.nic_count('compute')} compute "
                      "RDMA NICs whose device names neither the catalog nor the blueprint gives: NCCL_IB_HCA is not "
                      "written and the RoCE rails cannot be addressed",
                      f"declare node_types.{name}.interfaces.compute: [{{netdev: ..., rdma: mlx5_0}}, ...] in rail "
                      "order, as ibdev2netdev shows them on one node")


@rule("NET002", "network", Severity.ERROR, "declared interface names do not cover the ports")
def declared_names_count(plan: ClusterPlan) -> Iterator[Hit]:
    """``node_types.<t>.interfaces.<role>`` names every port of the role, in port order (compute: one per rail;
    a dual-port storage or in-band card is two ports). A shorter or longer list cannot be matched to the ports,
    so it is not used and the host's configuration would miss ports or name ones it does not have."""
    for name, nt in plan.node_types.items():
        for role, declared, ports in declared_mismatch(plan, nt):
            yield Hit(("node_types", name, "interfaces", role),
                      f"node type {name} declares {declared} {role} port name(s) but has {ports} {role} port(s)",
                      f"list exactly {ports} entries under node_types.{name}.interfaces.{role}, in port order")
