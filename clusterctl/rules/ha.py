"""High availability beyond slurmctld: a "backup" that is not independent of what it backs up. With a backup
controller or a backup slurmdbd the blueprint asks to survive the loss of one head node; these rules find what
would still stop with that node (docs/slurm.md, "Accounting database"; docs/storage.md for the tiers)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.accounting import shared_fate
from clusterctl.plan.failure_domains import single_points
from clusterctl.plan.inventory_groups import served_nfs_tiers
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.slurm import state_tier
from clusterctl.rules.base import Hit, Severity, rule

HOME = "/home"
"""the users' home directories: a hard NFS mount every login and job opens"""


@rule("HA001", "ha", Severity.WARNING, "backup slurmdbd on the primary's database")
def backup_dbd_shares_database(plan: ClusterPlan) -> Iterator[Hit]:
    """A backup slurmdbd (``accounting_backup_host``) takes over when the primary's host is lost only if its
    database is elsewhere: slurmdbd.conf(5) StorageHost names one database server for both, so with the database on
    a slurmdbd host (``accounting_database: primary``, or ``database_host`` naming one of them) that host's loss
    stops accounting on both and slurmctld queues records until it returns. The default ``replicated`` gives each
    slurmdbd host its own MariaDB, replicating the other's (docs/slurm.md, "Accounting database")."""
    found = shared_fate(plan)
    if found is None:
        return
    host, key = found
    yield Hit(("slurm", key),
              f"the backup slurmdbd {plan.slurm.accounting_backup_host} uses the accounting database on {host}: "
              f"losing {host} stops both slurmdbd",
              "set slurm.accounting_database: replicated (each slurmdbd host runs MariaDB, replicating the other), "
              "or name a database server on neither slurmdbd host as database_host")


@rule("HA002", "ha", Severity.WARNING, "/home or StateSaveLocation served by a controller")
def served_by_a_controller(plan: ClusterPlan) -> Iterator[Hit]:
    """With a backup controller, the tiers every host needs must not be served by one of the controllers: an NFS
    ``/home`` (hard mounts: every login shell and job touching it hangs while its server is down) or the tier holding
    StateSaveLocation (slurm.conf(5): the backup reads the primary's state from it) exported by a controller stops
    with that controller, and the backup controller takes over a cluster it cannot run. Serve them from a file
    server outside the HA pair, or the parallel file system."""
    roles = slurm_roles(plan)
    if not roles.has_backup_controller:
        return
    heads = set(roles.controllers) | set(roles.accounting)
    state = state_tier(plan)
    for served in served_nfs_tiers(plan):
        what = [w for w, hit in ((f"{HOME} (hard NFS mounts)", served.tier.mount == HOME),
                                 ("StateSaveLocation", state is not None and state[0] == served.index)) if hit]
        if served.host in heads and what:
            yield Hit(("storage", served.index, "export"),
                      f"{' and '.join(what)} on storage tier {served.tier.name} is served by {served.host}, one of "
                      "the HA heads: losing it stops every host that mounts the tier, and the backup cannot help",
                      "export the tier from a file server outside the HA pair (e.g. the one serving the other "
                      "shared tiers), or move it to the parallel file system")


@rule("BLAST001", "ha", Severity.WARNING, "one component's failure takes too much of the cluster")
def single_points_of_failure(plan: ClusterPlan) -> Iterator[Hit]:
    """A rack, a rack feed, a CDU (or one of its pumps) or a leaf whose failure alone takes more than ``validation.max_blast_radius`` of
    the GPUs out of service (default 25 %: lost for power or cooling, or cut off from the compute fabric when every
    leaf of their scalable unit is down), or, where the blueprint has a backup, every Slurm controller or every
    slurmdbd host, or (with a backup controller) the server of the tier holding StateSaveLocation, which the
    controllers share. A rack is judged on what it takes from the other racks (through the switches placed in it)
    and on the Slurm services, not on its own GPUs. A cluster whose hosts are in one rack is not judged on that
    rack, its feeds and CDUs (it is one failure domain by design), nor a compute fabric of one leaf on that leaf.
    ``clusterctl whatif --each KIND`` and ``clusterctl report --whatif`` show the figures; docs/whatif.md."""
    for sp in single_points(plan):
        c = sp.component
        yield Hit(c.path, f"{c.kind} {c.name} takes {sp.what} with it", _hint(c.kind), subject=(c.kind, c.name))


def _hint(kind: str) -> str:
    return {"rack": "spread the switches of a fabric over several racks (the fabric's switch_racks) and the Slurm "
                    "heads too (the head group's racks, per_rack: 1)",
            "feed": "give the rack enough feeds for N+1 or 2N (rack_profiles.<profile>.feeds, feed_kw, redundancy)",
            "cdu": "put CDUs in parallel on the racks' loop, sized so the others carry it when one stops "
                   "(rack_profiles.<profile>.cdus: N+1)",
            "pump": "give the CDU a standby pump (cooling.cdus[].standby_pumps), or put CDUs in parallel on the "
                    "loop (rack_profiles.<profile>.cdus)",
            "leaf": "give each scalable unit more than one leaf (more rails, or leaves per unit)"}[kind] + \
        "; `clusterctl whatif --each " + kind + "` shows what each failure takes"
