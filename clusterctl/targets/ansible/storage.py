"""Shared storage on the nodes: the storage_clients role's mounts (every shared tier on compute and login groups,
the tier holding StateSaveLocation on the controllers), Lustre's LNet networks and client repository, and the
NFS tiers the cluster's own nodes export (nfs_server role)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterctl.plan.inventory_groups import served_nfs_tiers
from clusterctl.plan.lustre import lnet_option
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.ranges import WorldRangeError, served_ranges
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.slurm import state_tier
from clusterctl.plan.sources import MOUNT_OPTIONS, SourceError, mount_source
from clusterctl.plan.weka import WEKA_NIC_HINT, weka_client
from clusterctl.targets import RenderError
from clusterctl.targets.common import at, conf_value

MOUNTED_ROLES = ("compute", "login")
"""node roles that mount the shared storage tiers"""


def weka_options(plan: ClusterPlan, g: GroupPlan, tier) -> str:
    """A wekafs tier's fstab options on group ``g``: the shared ones with the group's client options (DPDK cores,
    NICs, cores and hugepage memory, or UDP: :func:`clusterctl.plan.weka.weka_client`) before ``nosuid,nodev``,
    which stay last."""
    client = weka_client(plan, g)
    if client is None:
        return MOUNT_OPTIONS["wekafs"]
    if client.problem:  # WEKA002 reports it first
        err = RenderError(f"storage tier {tier.name}: {client.problem}")
        err.path, err.hint = ("storage", plan.storage.index(tier), "weka"), WEKA_NIC_HINT
        raise err
    for name in client.netdevs:
        with at(("node_types", g.type.name, "interfaces")):
            conf_value(name, "WEKA client NIC", extra=",")
    head, _, tail = MOUNT_OPTIONS["wekafs"].partition(",nosuid")
    return f"{head},{client.mount_options},nosuid{tail}"


def state_mount_tiers(plan: ClusterPlan, g: GroupPlan) -> set[str]:
    """Names of the tiers a group that mounts no storage for its role must still mount: the shared tier holding
    StateSaveLocation, on groups with a Slurm controller (slurm.conf(5): the directory every controller reads
    and writes)."""
    found = state_tier(plan)
    if found is None or g.role in MOUNTED_ROLES:
        return set()
    return {found[1].name} if set(slurm_roles(plan).controllers) & set(g.hosts) else set()


def checked_served_ranges(plan: ClusterPlan) -> tuple[str, ...]:
    """The NFS export clients and chrony's ``allow``: the in-band pools, never a world range (plan/ranges.py)."""
    try:
        return served_ranges(plan)
    except WorldRangeError as exc:
        error = RenderError(str(exc))
        error.path, error.hint = exc.path, "use a private range sized for the cluster (rule ADDR005)"
        raise error from None


def nfs_exports(plan: ClusterPlan) -> list[dict]:
    """The NFS tiers served by one of the plan's own hosts (``export: head01:/export/home``), for the nfs_server
    role: {host, path, clients}, clients being the in-band network prefix (the network the mounts use).
    Tiers on other servers, and plans without an in-band pool (cloud), export nothing here."""
    inband = next(iter(checked_served_ranges(plan)), None)
    for i, t in enumerate(plan.storage):
        if t.tier == "nfs":
            with at(("storage", i, "export")):  # the server is a host name (NfsExport): refused, not matched, otherwise
                conf_value(t.export.partition(":")[0], f"storage tier {t.name} source (its server)",
                           extra="$`{}%;&|<>'\\")
    out = []
    for served in served_nfs_tiers(plan):  # which tiers the plan's hosts serve: plan/inventory_groups.py
        if inband is None:  # STORAGE011 reports it first
            raise RenderError(f"storage tier {served.tier.name} is exported by {served.host}, a node of this "
                              "blueprint, but the blueprint has no in-band address pool to export it to: add "
                              "addressing with role: inband")
        with at(("storage", served.index, "export")):
            conf_value(served.path, f"storage tier {served.tier.name} source (its path)")
        out.append({"host": served.host, "path": served.path, "clients": inband})
    return out


def lustre_vars(plan: ClusterPlan, g: GroupPlan, mounts: Sequence[dict]) -> dict[str, object]:
    """storage_clients' Lustre variables of a group that mounts Lustre: the LNet networks (plan/lustre.py: o2ib on
    the node type's storage ports, Lustre manual "Configuring LNet") and the tier's signed client repository."""
    names = {m["name"] for m in mounts if m["fstype"] == "lustre"}
    tiers = [t for t in plan.storage if t.name in names]
    if not tiers:
        return {}
    out: dict[str, object] = {}
    networks = lnet_option(plan, g.type, [t.servers for t in tiers])
    if networks:
        out["storage_clients_lnet_networks"] = networks
    repo = next((t for t in tiers if t.client_repo), None)
    if repo is not None:
        out["storage_clients_lustre_repo_url"] = repo.client_repo
        out["storage_clients_lustre_repo_key_url"] = repo.client_repo_key
    return out


def storage_mounts(plan: ClusterPlan, g: GroupPlan) -> tuple[list[dict], list[str], list[str]]:
    """(mounts the storage_clients role manages, shared mount points expected, local directories): every shared
    tier on compute and login groups; on a controller's group only the tier holding StateSaveLocation."""
    only = state_mount_tiers(plan, g)
    if g.role not in MOUNTED_ROLES and not only:
        return [], [], []
    mounts, expected, local = [], [], []
    for t in plan.storage:
        if only and t.name not in only:
            continue
        if t.tier == "local":
            if g.role == "compute":
                local.append(t.mount)
            continue
        if t.tier == "object":
            continue
        expected.append(t.mount)
        try:  # host lists expanded as each client takes them (clusterctl/plan/sources.py)
            found = mount_source(t)
        except SourceError as exc:  # STORAGE009 reports it first
            err = RenderError(f"storage tier {t.name}: {exc}")
            err.path = ("storage", plan.storage.index(t), "servers")
            raise err from None
        if found is not None:
            mounts.append({"name": t.name, "path": t.mount, "src": found[1], "fstype": found[0],
                           "opts": weka_options(plan, g, t) if found[0] == "wekafs" else MOUNT_OPTIONS[found[0]]})
    tiers = {t.name: i for i, t in enumerate(plan.storage)}
    for m in mounts:  # fstab fields: one word each, no '#', no control characters
        with at(("storage", tiers.get(m["name"], 0))):
            for key in ("path", "src"):
                conf_value(m[key], f"storage tier {m['name']} {'mount' if key == 'path' else 'source'}")
    mounts_of = {t.mount: i for i, t in enumerate(plan.storage)}
    for path in expected + local:
        with at(("storage", mounts_of.get(path, 0), "mount")):
            conf_value(path, "storage mount point")
    return mounts, expected, local
