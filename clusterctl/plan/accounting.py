"""The accounting database, decided once: the StorageHost every slurmdbd.conf names, the hosts the slurmdbd role
installs MariaDB on, whether they are a replicated pair, and the host whose loss would stop a "backup" slurmdbd
too. The slurm target renders from it, rule HA001 judges it, the db-failover scenario rehearses it
(docs/slurm.md, "Accounting database")."""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles

LOCAL = "localhost"
"""StorageHost of a slurmdbd whose database runs on its own host"""


@dataclass(frozen=True)
class AccountingDatabase:
    storage_host: str
    """slurmdbd.conf StorageHost (one file for every slurmdbd host)"""
    servers: tuple[str, ...]
    """hosts the slurmdbd role installs MariaDB on, primary first; empty: the site's server (database_host)"""
    replicated: bool
    """the two servers replicate each other (GTID primary/primary), each slurmdbd using its own host's"""

    def server_id(self, host: str) -> int:
        """MariaDB server_id, gtid_domain_id and auto_increment_offset of a server of the pair: 1, 2."""
        return self.servers.index(host) + 1

    def peer(self, host: str) -> str:
        """The other server of the replicated pair."""
        return next(h for h in self.servers if h != host)


def accounting_database(plan: ClusterPlan) -> AccountingDatabase | None:
    """Where slurmdbd's database is; None without Slurm or without a slurmdbd host."""
    slurm = plan.slurm
    primary = slurm_roles(plan).primary_accounting if slurm is not None else None
    if slurm is None or primary is None:
        return None
    backup = slurm.accounting_backup_host if slurm.accounting_backup_host != primary else None
    if slurm.database_host:
        return AccountingDatabase(slurm.database_host, (), False)
    if backup is None:
        return AccountingDatabase(LOCAL, (primary,), False)
    if slurm.accounting_database == "primary":
        return AccountingDatabase(primary, (primary,), False)
    return AccountingDatabase(LOCAL, (primary, backup), True)


def shared_fate(plan: ClusterPlan) -> tuple[str, str] | None:
    """(host, key) when a backup slurmdbd is not independent: its database is on a slurmdbd host, so losing that
    host stops both daemons' accounting; ``key`` is the blueprint setting that puts it there. None otherwise."""
    slurm = plan.slurm
    db = accounting_database(plan)
    roles = slurm_roles(plan) if slurm is not None else None
    if db is None or not slurm.accounting_backup_host or slurm.accounting_backup_host == roles.primary_accounting:
        return None
    if slurm.database_host in (roles.primary_accounting, slurm.accounting_backup_host):
        return slurm.database_host, "database_host"
    if not slurm.database_host and not db.replicated:
        return roles.primary_accounting, "accounting_database"
    return None
