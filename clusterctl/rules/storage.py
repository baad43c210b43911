"""Storage: checkpoint write time, capacity and stall share, and well-formed tiers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from clusterctl.path_policy import EXPORT_DIRECTORY, allowed, refusal
from clusterctl.perf.storage_io import checkpoint_bytes, checkpoint_tier
from clusterctl.plan.inventory_groups import unserved_exports
from clusterctl.plan.lustre import nid_networks, storage_interfaces
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.paths import DATA_ROLES, no_path_reason, storage_path
from clusterctl.plan.sources import SourceError, mount_source
from clusterctl.rules.base import Hit, Severity, rule


def checkpoint(plan: ClusterPlan):
    """(workload, tier index, tier, checkpoint bytes, write seconds), or None without a workload or tier."""
    w = plan.blueprint.workload
    found = checkpoint_tier(plan)
    if w is None or found is None:
        return None
    i, tier = found
    size = checkpoint_bytes(w.params_b * 1e9, w.checkpoint_bytes_per_param)
    return w, i, tier, size, size / (tier.write_gb_per_s * 1e9)


@rule("STORAGE001", "storage", Severity.ERROR, "checkpoint write exceeds its time budget")
def checkpoint_time(plan: ClusterPlan) -> Iterator[Hit]:
    """One checkpoint is ``params_b`` × 1e9 × ``checkpoint_bytes_per_param`` bytes (14: bf16 weights, fp32
    master weights, Adam moments); written to the checkpoint tier at its aggregate ``write_gb_per_s`` it
    must finish within ``workload.checkpoint_budget_s``, the stall the job can afford. Write bandwidth
    is the tier's aggregate figure: the best case, with every client writing at once."""
    c = checkpoint(plan)
    if c is None:
        return
    w, i, tier, size, secs = c
    if secs > w.checkpoint_budget_s:
        yield Hit(("storage", i, "write_gb_per_s"),
                  f"a {size / 1e12:.2f} TB checkpoint ({w.params_b:g} B params × {w.checkpoint_bytes_per_param:g} "
                  f"bytes) takes {secs:.0f} s to write at {tier.write_gb_per_s:g} GB/s to {tier.tier} tier "
                  f"{tier.name}; the budget is {w.checkpoint_budget_s:g} s",
                  f"needs {size / 1e9 / w.checkpoint_budget_s:.1f} GB/s: a faster tier, or write to local NVMe "
                  f"first and drain asynchronously (raise checkpoint_budget_s if so)")


@rule("STORAGE002", "storage", Severity.ERROR, "checkpoint tier too small")
def checkpoint_capacity(plan: ClusterPlan) -> Iterator[Hit]:
    """The checkpoints kept (``checkpoints_retained`` × checkpoint size) must fit the checkpoint tier's
    ``capacity_tb``; above 80 % a warning, since the tier also holds data sets and other jobs' output."""
    c = checkpoint(plan)
    if c is None:
        return
    w, i, tier, size, _ = c
    need_tb = w.checkpoints_retained * size / 1e12
    share = need_tb / tier.capacity_tb
    msg = (f"{w.checkpoints_retained} retained checkpoints × {size / 1e12:.2f} TB = {need_tb:.1f} TB, "
           f"{share:.0%} of {tier.tier} tier {tier.name}'s {tier.capacity_tb:g} TB")
    if share > 1.0:
        yield Hit(("storage", i, "capacity_tb"), msg, "raise capacity_tb or keep fewer checkpoints")
    elif share > 0.8:
        yield Hit(("storage", i, "capacity_tb"), msg, "leave room for data sets and other jobs",
                  Severity.WARNING)


@rule("STORAGE003", "storage", Severity.WARNING, "no tier can take checkpoints")
def checkpoint_tier_exists(plan: ClusterPlan) -> Iterator[Hit]:
    """A training workload writes checkpoints to shared storage every node can read after a failure. With
    only node-local or object tiers (and none marked ``checkpoint: true``) the checkpoint checks are skipped
    and a lost node loses its shard."""
    if plan.blueprint.workload is None or checkpoint_tier(plan) is not None:
        return
    kinds = ", ".join(sorted({t.tier for t in plan.blueprint.storage})) or "none"
    yield Hit(("workload",),
              f"a workload is given but no storage tier takes checkpoints (tiers: {kinds})",
              "add a parallel or nfs tier, or mark an object tier checkpoint: true")


@rule("STORAGE004", "storage", Severity.WARNING, "checkpoint stalls take too much training time")
def checkpoint_stall(plan: ClusterPlan) -> Iterator[Hit]:
    """Writing a checkpoint stalls training; writing one every ``checkpoint_every_min`` minutes should cost
    no more than 5 % of the training time."""
    c = checkpoint(plan)
    if c is None:
        return
    w, i, tier, size, secs = c
    share = secs / (w.checkpoint_every_min * 60)
    if share > 0.05:
        yield Hit(("workload", "checkpoint_every_min"),
                  f"writing a checkpoint takes {secs:.0f} s every {w.checkpoint_every_min:g} min: {share:.1%} of "
                  f"training time stalled (limit 5 %)",
                  "checkpoint less often, asynchronously, or to a faster tier")


@rule("STORAGE005", "storage", Severity.ERROR, "duplicate storage tier name or mount", suppressible=False)
def unique_tiers(plan: ClusterPlan) -> Iterator[Hit]:
    """Two storage tiers with the same name or mount point: one would be mounted over the other, and
    rendered mounts would collide."""
    for key in ("name", "mount"):
        seen: dict[str, int] = {}
        for i, t in enumerate(plan.blueprint.storage):
            value = getattr(t, key)
            if value in seen:
                yield Hit(("storage", i, key),
                          f"storage tier {i} has the same {key} '{value}' as tier {seen[value]}",
                          f"give every tier its own {key}")
            else:
                seen[value] = i


@rule("STORAGE006", "storage", Severity.WARNING, "local tier on nodes without NVMe")
def local_tier_nvme(plan: ClusterPlan) -> Iterator[Hit]:
    """A ``local`` tier lives on the nodes' NVMe drives. Compute nodes whose server has no NVMe in the
    catalog (``nvme`` missing or count 0), or whose cloud instance has no local NVMe, have nothing to
    mount there."""
    local = [(i, t) for i, t in enumerate(plan.blueprint.storage) if t.tier == "local"]
    if not local:
        return
    i, tier = local[0]
    seen = set()
    for g in plan.groups:
        nt = g.type
        if g.role != "compute" or nt.name in seen:
            continue
        if nt.server is not None:
            missing = nt.server.nvme is None or nt.server.nvme.count == 0
        else:
            missing = nt.instance.local_nvme_tb == 0
        if missing:
            seen.add(nt.name)
            yield Hit(("storage", i),
                      f"local tier {tier.name} ({tier.mount}) but node type {nt.name} "
                      f"({nt.server_name or nt.instance_name}, group {g.name}) has no NVMe in the catalog",
                      "add nvme to the server's catalog entry, or drop the local tier")


@rule("STORAGE007", "storage", Severity.ERROR, "Lustre over o2ib without an RDMA storage NIC")
def lustre_o2ib_nic(plan: ClusterPlan) -> Iterator[Hit]:
    """A Lustre tier whose MGS NID is on an ``o2ib`` network (``10.0.0.1@o2ib:/fs``) is reached through LNet's
    o2ib driver, which runs over RDMA verbs on the storage HCAs (InfiniBand, or RoCE on a VPI adapter). The
    clients that mount it (compute and login groups) need a storage NIC (``role: storage``) that the catalog lists
    with InfiniBand; without one LNet has no o2ib interface and the mount fails. When the source also names a
    NID on another network (``10.0.0.1@o2ib,10.1.0.1@tcp:/fs``, a multi-homed MGS or an LNet router), clients
    without RDMA use that one and the rule is silent. Fix: add a ``@tcp`` NID, or give the node type a storage
    NIC."""
    seen = set()
    for i, t in enumerate(plan.blueprint.storage):
        if t.tier != "parallel" or t.filesystem != "lustre" or not t.servers:
            continue
        nets = nid_networks(t.servers)
        if not nets or not all(net.startswith("o2ib") for net in nets):  # another NID (tcp) reaches the MGS too
            continue
        for g in plan.groups:
            if g.role not in ("compute", "login") or (i, g.type.name) in seen:
                continue
            if any("infiniband" in n.protocols for n in g.type.nics_of("storage")):
                continue
            seen.add((i, g.type.name))
            nics = ", ".join(f"{n.count} x {n.model} {n.role}" for n in g.type.nics) or "no NICs"
            yield Hit(("storage", i, "servers"),
                      f"Lustre tier {t.name} is reached over o2ib ({t.servers}) but node type {g.type.name} "
                      f"(group {g.name}, role {g.role}) has no InfiniBand-capable storage NIC ({nics})",
                      "give the node type a storage NIC (role: storage) with InfiniBand/RoCE RDMA, or add the MGS's "
                      "@tcp NID to the source (10.0.0.1@o2ib,10.1.0.1@tcp:/fs)")


@rule("STORAGE012", "storage", Severity.WARNING, "LNet o2ib without the storage ports' interface names")
def lnet_unnamed_interfaces(plan: ClusterPlan) -> Iterator[Hit]:
    """A Lustre tier with an ``o2ib`` NID is mounted through LNet's o2ib network on the clients' storage ports:
    ``options lnet networks=o2ib0(ibp154s0,ibp192s0)`` (Lustre manual, "Configuring LNet"; several interfaces
    make LNet multi-rail). Without interface names the option is a bare ``o2ib0``, which LNet binds to ``ib0``,
    a name Ubuntu's predictable interface naming never gives an InfiniBand port, so the mount fails. The names
    come from the catalog's vendor table or the node type's ``interfaces.storage``. Fix: declare them, as
    ``ibdev2netdev`` shows them on one node."""
    seen = set()
    for i, t in enumerate(plan.blueprint.storage):
        if t.tier != "parallel" or t.filesystem != "lustre" or not t.servers:
            continue
        if not any(net.startswith("o2ib") for net in nid_networks(t.servers)):
            continue
        for g in plan.groups:
            if g.role not in ("compute", "login") or g.type.instance is not None or g.type.name in seen:
                continue
            if not any("infiniband" in n.protocols for n in g.type.nics_of("storage")):
                continue  # STORAGE007's case
            if storage_interfaces(plan, g.type):
                continue
            seen.add(g.type.name)
            yield Hit(("node_types", g.type.name),
                      f"Lustre tier {t.name} is reached over o2ib ({t.servers}) but the storage ports of node type "
                      f"{g.type.name} (group {g.name}) have no interface names: LNet's o2ib0 would bind to ib0, "
                      "which Ubuntu's interface naming does not create",
                      f"declare node_types.{g.type.name}.interfaces.storage: [{{netdev: ibp...}}, ...] as "
                      "ibdev2netdev shows them on one node")


def _attach_fix(plan: ClusterPlan, g, tier, loose: list[str]):
    """(fabric, role): the first existing fabric that, with ``g``'s unattached ``role`` NICs added to it, gives
    ``g`` a path to ``tier``; None when no single attach entry does."""
    for role in loose:
        for f in plan.fabrics:
            if not any(r == role for _, r in f.attached):
                continue
            fabrics = tuple(replace(x, attached=x.attached + ((g.index, role),)) if x is f else x
                            for x in plan.fabrics)
            if storage_path(replace(plan, fabrics=fabrics), g, tier) is not None:
                return f, role
    return None


MOUNTING_ROLES = ("compute", "login")
"""node roles that mount the shared tiers (the storage_clients role of the Ansible target)"""
SOURCE_KEY = {"nfs": "export", "parallel": "servers", "object": "endpoint"}


@rule("STORAGE008", "storage", Severity.ERROR, "storage tier unreachable from a group that mounts it")
def tier_reachable(plan: ClusterPlan) -> Iterator[Hit]:
    """Compute and login groups mount every shared tier (NFS and parallel; compute groups also read the object
    tiers). Each tier's servers are placed on the network they are on (a node of the blueprint, an address pool's
    role, else the storage network) and the group must reach them over a fabric one of its data NICs (storage,
    compute, in-band) is attached to, or over the in-band network (see ``clusterctl/plan/paths.py``). Without a
    path the mount hangs at boot and jobs fail on their first read. Typical causes: the group's storage NICs are
    attached to no fabric, or the design has no storage fabric and no in-band path to the servers. The finding
    points at the fabric to attach the group to when its servers are on one the group has unattached NICs for,
    else at the tier's source. Cloud groups reach storage over the instance network; node-local tiers need no
    network."""
    for i, t in enumerate(plan.blueprint.storage):
        if t.tier == "local" or (t.tier == "parallel" and not t.servers):
            continue
        for g in plan.groups:
            if g.role not in MOUNTING_ROLES or (t.tier == "object" and g.role != "compute") or not g.count:
                continue
            if storage_path(plan, g, t) is not None:
                continue
            loose = [r for r in DATA_ROLES
                     if g.type.nic_count(r) and not plan.fabrics_on(r, g)]
            fix = _attach_fix(plan, g, t, loose)
            if fix is not None:
                f, role = fix
                path, hint = (f.path + ("attach",),
                              f"add {{group: {g.name}, nic_role: {role}}} to the attach list of fabric {f.name}")
            else:
                path = ("storage", i, SOURCE_KEY[t.tier])
                hint = (f"attach group {g.name}'s {loose[0]} NICs to a fabric the tier's servers are on (add a "
                        f"storage fabric if there is none), or name servers on a network {g.name} reaches" if loose
                        else f"name servers on a network group {g.name} is attached to")
            yield Hit(path, no_path_reason(plan, g, t) + f" (its {g.role} nodes mount {t.mount})", hint)


@rule("STORAGE009", "storage", Severity.ERROR, "servers the file system client cannot be given")
def mount_source_usable(plan: ClusterPlan) -> Iterator[Hit]:
    """The mount source is built from a tier's ``servers`` with host lists expanded as each client takes them
    (``clusterctl/plan/sources.py``): WEKA ``weka[01-16]/pfs`` becomes ``weka01,...,weka16/pfs``, Lustre
    ``10.0.0.[1-2]@o2ib:/fs`` the failover MGS pair ``10.0.0.1@o2ib:10.0.0.2@o2ib:/fs``. Refused: a host list
    that does not expand or names more than 1,024 servers; a VAST source (mounted over NFS, which takes one
    server) naming several servers; Lustre NIDs of one MGS whose host lists name different numbers of nodes."""
    for i, t in enumerate(plan.blueprint.storage):
        try:
            mount_source(t)
        except SourceError as exc:
            hint = ("name one server: the VIP pool's DNS name" if t.tier == "parallel" and t.filesystem == "vast"
                    else "write a host list clusterctl can expand (name[01-16], comma lists)")
            yield Hit(("storage", i, "servers"), f"{t.filesystem} tier {t.name}: {exc}", hint)


@rule("STORAGE010", "storage", Severity.ERROR, "NFS export of a system directory", suppressible=False)
def exported_directory(plan: ClusterPlan) -> Iterator[Hit]:
    """The directory of an NFS ``export`` must pass the path policy (docs/security.md, "Privilege-bearing
    paths"): a head node exporting ``/etc``, ``/root/.ssh``, ``/usr/local/sbin`` or ``/var/run`` hands every
    node that mounts it (read-write, as root squashed or not) the server's configuration, keys or programs, and
    every client runs what it reads there. ``server:/`` is the NFSv4 pseudo-root of an appliance outside the
    blueprint and is allowed for one; a host of the blueprint never exports its root. Nothing can suppress it."""
    planned = {h for g in plan.groups for h in g.hosts}
    for i, tier in enumerate(plan.blueprint.storage):
        if tier.tier != "nfs":
            continue
        server, _, directory = tier.export.rpartition(":")
        if directory == "/":
            if server in planned:
                yield Hit(("storage", i, "export"),
                          f"storage tier {tier.name} exports / of {server}, a host of the blueprint: every node would "
                          f"mount {server}'s whole system", "export a directory made for it, e.g. /export/" + tier.name)
            continue
        reason = refusal(directory, EXPORT_DIRECTORY)
        if reason:
            yield Hit(("storage", i, "export"), f"storage tier {tier.name} exports {directory} of {server}: {reason}",
                      allowed(EXPORT_DIRECTORY))


@rule("STORAGE011", "storage", Severity.ERROR, "NFS tier served by a node without an in-band network",
      suppressible=False)
def export_needs_inband(plan: ClusterPlan) -> Iterator[Hit]:
    """An NFS tier exported by a host of the blueprint (``export: head01:/export/home``) is served by the
    nfs_server role to the in-band address pools (its export clients, the network the mounts use). A blueprint
    without an ``addressing`` pool of role inband gives it nobody to export to, and the ansible target refuses it
    (:func:`clusterctl.plan.inventory_groups.unserved_exports`, which both ask)."""
    for served in unserved_exports(plan):
        yield Hit(("storage", served.index, "export"),
                  f"storage tier {served.tier.name} is exported by {served.host}, a node of this blueprint, but the "
                  "blueprint has no in-band address pool to export it to",
                  "add an addressing pool with role: inband, or serve the tier from a file server outside the "
                  "blueprint")
