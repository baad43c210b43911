"""NVLink: multi-node NVLink domains (NVL72) placed whole, sized within the hardware, scheduled as blocks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.nvlink import has_inband, imex_groups, multi_node
from clusterctl.plan.slurm import SWITCH_NVIDIA_IMEX, slurm_release, supports
from clusterctl.rules.base import Hit, Severity, rule


def _unit(g: GroupPlan) -> str:
    return "trays" if g.type.rack_system else "nodes"


@rule("NVLINK001", "nvlink", Severity.ERROR, "NVLink domains split")
def whole_domains(plan: ClusterPlan) -> Iterator[Hit]:
    """A multi-node NVLink domain is wired inside one rack (NVL72: 18 compute trays and 9 NVLink switch
    trays), so every rack of such a group must hold whole domains, the domain must be a whole number of
    nodes, and the group a whole number of domains. A partial domain is GPUs that cannot join the NVLink
    fabric their jobs expect."""
    for g in multi_node(plan):
        dom = g.nvlink_domain_gpus
        if dom % g.type.gpus:
            yield Hit(g.path + ("nvlink_domain_gpus",),
                      f"group {g.name}: a {dom}-GPU NVLink domain is not a whole number of "
                      f"{g.type.gpus}-GPU {g.type.server_name or g.type.instance_name} {_unit(g)}",
                      "set nvlink_domain_gpus to a multiple of the GPUs per node")
            continue
        if g.gpus % dom:
            yield Hit(g.path + ("count",),
                      f"group {g.name} has {g.count} {_unit(g)} = {g.gpus} GPUs, not a whole number of "
                      f"NVL{dom} domains ({g.gpus / dom:.2f})",
                      f"make count a multiple of {dom // g.type.gpus}")
        for r, n in sorted(Counter(r for r in g.rack_index if r >= 0).items()):
            if (n * g.type.gpus) % dom:
                yield Hit(g.path + ("per_rack",),
                          f"rack {plan.racks[r].name} holds {n} {_unit(g)} = {n * g.type.gpus} GPUs; "
                          f"NVL{dom} domains need {dom}",
                          f"set per_rack to {dom // g.type.gpus} (or a multiple) and count to fill the racks")


@rule("NVLINK002", "nvlink", Severity.ERROR, "NVLink domain larger than the hardware allows")
def domain_within_hardware(plan: ClusterPlan) -> Iterator[Hit]:
    """A group's NVLink domain cannot exceed what the accelerator's scale-up fabric connects
    (``scaleup_domain_max``: 8 on an HGX H100 baseboard, 72 on GB200 NVL72). Declaring more makes the
    scheduler and NCCL expect NVLink bandwidth between GPUs that only share the scale-out network."""
    for g in plan.groups:
        acc = g.type.accelerator
        if acc is None or not g.nvlink_domain_gpus or g.nvlink_domain_gpus <= acc.scaleup_domain_max:
            continue
        yield Hit(g.path + ("nvlink_domain_gpus",),
                  f"group {g.name} declares {g.nvlink_domain_gpus}-GPU NVLink domains but {g.type.gpu_model} "
                  f"connects at most {acc.scaleup_domain_max}",
                  f"remove nvlink_domain_gpus or set it to {acc.scaleup_domain_max} or less")


@rule("NVLINK003", "nvlink", Severity.ERROR, "Slurm block sizes do not match the NVLink domains")
def block_sizes(plan: ClusterPlan) -> Iterator[Hit]:
    """With ``slurm.topology: block`` the base block is one NVLink domain, in nodes (NVL72: 72 / 4 = 18).
    Slurm's ``BlockSizes`` (topology.conf(5)) lists the planning base block size first; each block must have
    at least that many nodes, and every later size must be the previous times a power of two. A base larger
    than a domain makes every block unusable (error); a smaller one is legal (it tolerates failed trays) but
    lets jobs take partial domains (warning). The largest size must not exceed the largest NVLink group.
    Block topology on a cluster without multi-node NVLink domains is warned about: it is usually a
    mistake for ``tree``."""
    slurm = plan.blueprint.slurm
    if slurm is None or slurm.topology != "block":
        return
    groups = multi_node(plan)
    if not groups:
        yield Hit(("slurm", "topology"),
                  "slurm.topology is block but no node group has a multi-node NVLink domain",
                  "use topology: tree for a cluster of 8-GPU servers", Severity.WARNING)
        return
    sizes = slurm.block_sizes
    if not sizes:
        return
    for g in groups:
        base = g.nvlink_domain_gpus // g.type.gpus
        if sizes[0] != base:
            yield Hit(("slurm", "block_sizes", 0),
                      f"block_sizes starts with {sizes[0]} nodes but group {g.name}'s NVL{g.nvlink_domain_gpus} "
                      f"domain is {base} nodes ({g.nvlink_domain_gpus} GPUs / {g.type.gpus} per node)",
                      f"start block_sizes with {base}",
                      None if sizes[0] > base else Severity.WARNING)
    for k in range(1, len(sizes)):
        ratio, rest = divmod(sizes[k], sizes[k - 1])
        if rest or ratio < 2 or ratio & (ratio - 1):
            yield Hit(("slurm", "block_sizes", k),
                      f"block size {sizes[k]} is not a power-of-two multiple of the previous size {sizes[k - 1]}",
                      f"use {sizes[k - 1] * 2}, {sizes[k - 1] * 4}, ...")
    largest = max(groups, key=lambda g: g.count)
    if max(sizes) > largest.count:
        yield Hit(("slurm", "block_sizes", sizes.index(max(sizes))),
                  f"block size {max(sizes)} exceeds the {largest.count} nodes of the largest NVLink group "
                  f"{largest.name}",
                  f"drop sizes above {largest.count}")


@rule("NVLINK004", "nvlink", Severity.WARNING, "multi-node NVLink domains without block topology")
def topology_for_domains(plan: ClusterPlan) -> Iterator[Hit]:
    """Multi-node NVLink domains (NVL72) need IMEX on their nodes and a Slurm topology that knows the domains
    (``block``, or ``yaml`` on Slurm 25.05+); with ``tree`` or ``none`` Slurm places a job across domains
    and its GPUs fall back to the scale-out network between them."""
    slurm = plan.blueprint.slurm
    if slurm is None or slurm.topology not in ("tree", "none"):
        return
    for g in multi_node(plan):
        yield Hit(("slurm", "topology"),
                  f"group {g.name} has NVL{g.nvlink_domain_gpus} domains but slurm.topology is {slurm.topology}: "
                  f"jobs will straddle domains",
                  f"set slurm.topology: block with block_sizes starting at "
                  f"{g.nvlink_domain_gpus // g.type.gpus}, and run IMEX on the {_unit(g)}")


@rule("NVLINK005", "nvlink", Severity.ERROR, "multi-node NVLink domains need Slurm's IMEX switch plugin")
def imex_needs_switch_plugin(plan: ClusterPlan) -> Iterator[Hit]:
    """A job on a multi-node NVLink domain needs an IMEX channel on every node it runs on (NVIDIA IMEX guide,
    "IMEX Channels"); Slurm creates one per job with ``SwitchType=switch/nvidia_imex``, which arrived in 24.05.
    With an older Slurm, clusterctl renders no switch plugin and CUDA's multi-node memory calls fail in jobs."""
    version = slurm_release(plan)
    groups = multi_node(plan)
    if version is None or not groups or supports(version, SWITCH_NVIDIA_IMEX):
        return
    yield Hit(("slurm", "version"),
              f"group {groups[0].name} has NVL{groups[0].nvlink_domain_gpus} domains but Slurm "
              f"{plan.blueprint.slurm.version} predates switch/nvidia_imex ({SWITCH_NVIDIA_IMEX.first}): "
              f"jobs get no IMEX channel",
              f"set slurm.version to {SWITCH_NVIDIA_IMEX.first} or later")


@rule("NVLINK006", "nvlink", Severity.WARNING, "multi-node NVLink domains without an IMEX peer list")
def imex_needs_addresses(plan: ClusterPlan) -> Iterator[Hit]:
    """IMEX's nodes_config.cfg lists the IP address of every node of the NVLink domain. Without an in-band
    address pool for the group clusterctl cannot write it, so no IMEX domain is configured and the nccl target
    does not force ``NCCL_MNNVL_ENABLE=1`` (NCCL would fail at init without IMEX)."""
    for g in imex_groups(plan):
        if not has_inband(plan, g):
            yield Hit(g.path,
                      f"group {g.name} has NVL{g.nvlink_domain_gpus} domains but no in-band address pool: "
                      f"no IMEX peer list (nodes_config.cfg) can be rendered",
                      "add an addresses: pool with role inband covering the group")
