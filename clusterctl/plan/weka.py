"""WEKA clients: DPDK mounts with dedicated frontend cores on the compute nodes, and the cores and memory Slurm keeps
from jobs for them.

Decided once here; the ansible target writes the mount options (``storage_clients_mounts``), the slurm target the
NodeName line's ``CoreSpecCount`` and ``MemSpecLimit`` (and the per-GPU defaults net of them), and rules WEKA001 and
WEKA002 judge the same plan. Sources (docs/slurm.md, "WEKA clients in DPDK mode"):

* WEKA documentation, "WEKA networking": performance-optimized networking dedicates CPU cores to WEKA and uses DPDK;
  CPU-optimized networking uses no dedicated cores, in-kernel UDP where DPDK is not used.
* WEKA documentation, "Mount filesystems" (stateless clients; Hitachi Content Software for File 4.2, "Advanced
  mounting options for multiple physical network devices" and "UDP mode", the same client): ``num_cores=N`` frontend
  processes, ``net=<netdev>`` once per NIC, ``core=<id>`` to pick the cores (core 0 is refused), ``memory_mb`` the
  client's hugepage memory; UDP mode is ``-o num_cores=0 -o net=udp`` ("A client in UDP mode cannot be configured
  in HA mode").
* slurm.conf(5) CoreSpecCount ("Number of cores reserved for system use"), MemSpecLimit ("Amount of RealMemory, in
  mebibytes, reserved for system use and not available for user allocations"); core_spec.html, "Core Selection":
  "The first core selected will be the highest numbered core on the highest numbered socket. Subsequent cores
  selected will be the highest numbered core on lower numbered sockets."
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.plan.interfaces import role_ports
from clusterctl.plan.model import ClusterPlan, GroupPlan

MEMORY_MIB_PER_CORE = 1400
"""client hugepage memory per frontend core: WEKA's ``memory_mb`` mount default (1,400 MiB, for its default of one
frontend core), scaled by the cores [D]"""
WEKA_NIC_HINT = ("name the node type's storage (or compute) ports with their netdevs (node_types.<type>.interfaces), "
                 "or set the tier's weka.mode: udp")
NIC_ROLES = ("storage", "compute")
"""the ports a DPDK client may drive, in the order the plan prefers them: a storage fabric's ports keep checkpoint
traffic off the training rails (NVIDIA's DGX SuperPOD storage fabric), else the compute rails"""


@dataclass(frozen=True, slots=True)
class WekaClientPlan:
    """One node group's WEKA client."""

    mode: str
    """dpdk or udp"""
    cores: int
    """frontend cores (0 in UDP mode)"""
    netdevs: tuple[str, ...]
    """the NICs it drives (``net=``), empty in UDP mode"""
    core_ids: tuple[int, ...]
    """the OS CPU ids of the cores Slurm's CoreSpecCount keeps from jobs, in its selection order (``core=``)"""
    memory_mib: int
    """hugepage memory (``memory_mb``), 0 in UDP mode"""
    nic_role: str | None
    problem: str | None = None
    """why DPDK cannot be rendered (no NIC with a name: WEKA002), None otherwise"""

    @property
    def mount_options(self) -> str:
        """The options added to the wekafs fstab line."""
        if self.mode == "udp":
            return "num_cores=0,net=udp"
        return ",".join([f"num_cores={self.cores}", *(f"net={n}" for n in self.netdevs),
                         *(f"core={c}" for c in self.core_ids), f"memory_mb={self.memory_mib}"])


def weka_tier(plan: ClusterPlan):
    """(index, tier) of the first WEKA tier with servers (the one a client container serves), or None."""
    for i, t in enumerate(plan.storage):
        if t.tier == "parallel" and t.filesystem == "weka" and t.servers:
            return i, t
    return None


def spec_core_ids(g: GroupPlan, count: int) -> tuple[int, ...]:
    """The OS CPU ids of the ``count`` cores CoreSpecCount takes (core_spec.html: the highest core of the highest
    socket, then the highest of each lower socket, then the next highest ...), numbered as x86 servers number their
    first hardware threads: socket by socket, core ``c`` of socket ``s`` is CPU ``s x CoresPerSocket + c``."""
    sockets, per = g.type.sockets, g.type.cores_per_socket
    out = []
    for k in range(count):
        socket = sockets - 1 - k % sockets
        core = per - 1 - k // sockets
        out.append(socket * per + core)
    return tuple(out)


def weka_client(plan: ClusterPlan, g: GroupPlan) -> WekaClientPlan | None:
    """The WEKA client of node group ``g``: DPDK on compute groups (unless the tier says udp), UDP elsewhere (service
    hosts dedicate no cores); None without a WEKA tier."""
    found = weka_tier(plan)
    if found is None:
        return None
    spec = found[1].weka
    mode = spec.mode if spec is not None else "dpdk"
    if g.role != "compute" or mode == "udp":
        return WekaClientPlan("udp", 0, (), (), 0, None)
    roles = (spec.nics,) if spec is not None and spec.nics else NIC_ROLES
    ports, role = (), None
    for role in roles:
        ports = tuple(p for p in role_ports(plan, g.type, role) if p.netdev)
        if ports:
            break
    cores = spec.cores if spec is not None and spec.cores else max(1, len(ports) if role == "storage" else 2)
    if role == "compute":  # the rails spread over the sockets: one per frontend core, evenly apart
        ports = tuple(ports[k * len(ports) // cores] for k in range(min(cores, len(ports)))) if ports else ()
    memory = spec.memory_mib if spec is not None and spec.memory_mib else MEMORY_MIB_PER_CORE * cores
    problem = None if ports else (f"node type {g.type.name} has no {' or '.join(roles)} port with a netdev name for "
                                  "the DPDK client's net= option")
    return WekaClientPlan("dpdk", cores, tuple(p.netdev for p in ports), spec_core_ids(g, cores), memory,
                          role if ports else None, problem)


def specialized(plan: ClusterPlan, g: GroupPlan) -> tuple[int, int]:
    """(CoreSpecCount, MemSpecLimit MiB) of node group ``g``: the WEKA client's dedicated cores and hugepage memory,
    (0, 0) without a DPDK client."""
    client = weka_client(plan, g)
    if client is None or client.mode != "dpdk" or client.problem:
        return 0, 0
    return client.cores, client.memory_mib
