"""The accounting database's keeping: how long slurmdbd keeps records, where it archives them before a purge, and
the nightly dumps of the database (docs/slurm.md, "Accounting database")."""

from __future__ import annotations

from pydantic import Field

from clusterctl.kinds import StateDirectory
from clusterctl.strict import StrictModel

MONTHS_MAX = 1200
"""a century: slurmdbd.conf(5) Purge*After takes a count of months"""


class AccountingRecords(StrictModel):
    """slurmdbd.conf(5) ``Purge*After`` (months each record kind is kept; 0: never purged), ``Archive*`` (records
    written to ``archive_directory`` before they are purged) and the nightly ``mariadb-dump`` of the database."""

    events_months: int = Field(default=12, ge=0, le=MONTHS_MAX)
    """PurgeEventAfter: node state changes"""
    jobs_months: int = Field(default=12, ge=0, le=MONTHS_MAX)
    """PurgeJobAfter: job records (the table sacct reads)"""
    reservations_months: int = Field(default=2, ge=0, le=MONTHS_MAX)
    """PurgeResvAfter"""
    steps_months: int = Field(default=2, ge=0, le=MONTHS_MAX)
    """PurgeStepAfter: job steps, the fastest-growing table"""
    suspend_months: int = Field(default=1, ge=0, le=MONTHS_MAX)
    """PurgeSuspendAfter"""
    txn_months: int = Field(default=12, ge=0, le=MONTHS_MAX)
    """PurgeTXNAfter: the sacctmgr transaction log"""
    usage_months: int = Field(default=24, ge=0, le=MONTHS_MAX)
    """PurgeUsageAfter: the usage rollups fair share and sreport read"""
    archive: bool = True
    """ArchiveEvents/Jobs/Resvs/Steps/Suspend/TXN/Usage=yes: slurmdbd writes what it purges to archive_directory
    (sacctmgr archive load reads it back)"""
    archive_directory: StateDirectory = "/var/lib/slurm/slurmdbd-archive"
    """ArchiveDir, created for SlurmUser on each slurmdbd host (slurmdbd.conf(5)'s default is /tmp)"""
    dump_directory: StateDirectory = "/var/lib/slurm/slurmdbd-dumps"
    """where each database host's nightly dump (a systemd timer) writes, root-only; on a replicated pair both hosts
    dump, so every dump has a copy on the other host's disks too"""
    dump_keep_days: int = Field(default=14, ge=1, le=3650)
    """dumps older than this many days are deleted by the next dump"""
