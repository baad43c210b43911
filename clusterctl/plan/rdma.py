"""The compute RDMA devices of a bare-metal node type: the names NCCL_IB_HCA lists (the nccl target) and the
roce_network role's rails carry (the RoCE group variables), worked out once here (docs/nccl.md, "HCA names").
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, NodeTypePlan

KNOWN_HCAS: dict[str, tuple[tuple[str, ...], str]] = {
    "dgx-h100": (("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"),
                 "DGX H100/H200 User Guide, Network Modules table (OSFP ports -> default RDMA devices)"),
    "dgx-h200": (("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"),
                 "DGX H100/H200 User Guide, Network Modules table (same CPU tray as DGX H100)"),
    "gb200-nvl72-tray": (("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"),
                         "NVIDIA Mission Control GB200 north-south network guide, compute tray port table"),
}
"""shipped servers whose compute RDMA device names are documented; others are derived (see docs/nccl.md)"""


def compute_hcas(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[tuple[str, ...] | str | None, tuple[str, ...]]:
    """The compute RDMA devices of a bare-metal node type and how they were found: the node type's
    ``nccl.ib_hca`` override, the documented names of a shipped server, or mlx5_N derived from the NIC list
    (compute ports first, in catalog order). None when the compute NICs are not NVIDIA (mlx5) parts."""
    spec = plan.blueprint.node_types.get(nt.name)
    override = spec.nccl.ib_hca if spec is not None and spec.nccl is not None else None
    if isinstance(override, str):
        return override, ("Value from the node type's override.",)
    if override:
        return tuple(str(x) for x in override), ("Device names from the node type's override.",)
    ports = nt.nic_count("compute")
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
