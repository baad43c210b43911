"""The accounting database's files (docs/slurm.md, "Accounting database"): slurmdbd.conf's Purge*/Archive* lines,
each MariaDB server's replication settings when the slurmdbd hosts are a replicated pair, and the nightly dump
(a script, its systemd service and timer) every MariaDB server the slurmdbd role installs runs. What the database
is and where comes from :func:`clusterctl.plan.accounting.accounting_database`."""

from __future__ import annotations

import shlex

from clusterctl.plan.accounting import accounting_database
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.common import at, conf_value, header, key_values, render_template

STORAGE_LOC = "slurm_acct_db"
"""slurmdbd.conf StorageLoc: SchedMD's default name of the accounting database"""
DUMP_DIR = "slurm/slurmdbd-dump"
"""the dump's rendered files: slurmdbd-dump (the script), .service, .timer"""
REPLICATION_DIR = "slurm/mariadb"
"""one MariaDB settings file per server of a replicated pair: <host>.cnf"""
BINLOG_DAYS = 7
"""binary logs kept: a server away longer than a week must be re-seeded from a dump (docs/slurm.md)"""
TEMPLATE_CHARACTERS = "{}%$`'\\"
"""refused in a path slurmdbd.conf.j2 (an Ansible template) holds: the path kind never lets them through"""
RECORDS = (("Event", "events_months", "ArchiveEvents"), ("Job", "jobs_months", "ArchiveJobs"),
           ("Resv", "reservations_months", "ArchiveResvs"), ("Step", "steps_months", "ArchiveSteps"),
           ("Suspend", "suspend_months", "ArchiveSuspend"), ("TXN", "txn_months", "ArchiveTXN"),
           ("Usage", "usage_months", "ArchiveUsage"))
"""slurmdbd.conf(5): Purge<kind>After, the blueprint field of its months, and its Archive<kind> flag"""


def keeping_lines(plan: ClusterPlan) -> list[str]:
    """``Purge<kind>After=<n>month`` for every record kind kept a limited time (0 months: never purged, no line),
    and with ``archive`` ``ArchiveDir`` and ``Archive<kind>=yes`` for those: slurmdbd.conf(5), "ArchiveDir: ...
    directory to store the archive files"; a purge without an archive deletes the records for good."""
    records = plan.slurm.accounting_records
    purged = [(kind, getattr(records, field), flag) for kind, field, flag in RECORDS if getattr(records, field)]
    lines = [key_values([(f"Purge{kind}After", f"{months}month")]) for kind, months, _ in purged]
    if records.archive and purged:
        with at(("slurm", "accounting_records", "archive_directory")):  # a line of an Ansible template
            archive_dir = conf_value(records.archive_directory, "ArchiveDir", extra=TEMPLATE_CHARACTERS)
        lines += [key_values([("ArchiveDir", archive_dir)]),
                  *(key_values([(flag, "yes")]) for _, _, flag in purged)]
    return lines


def replication_cnf(plan: ClusterPlan, host: str) -> str:
    """MariaDB settings of ``host``, one of a replicated pair (MariaDB "GTID", "Multi-Master Ring Replication"
    and "auto_increment_offset": distinct server and domain ids, interleaved AUTO_INCREMENT values so rows
    written on either side never collide; IDEMPOTENT apply for the rows both slurmdbd write when control moves)."""
    db = accounting_database(plan)
    ident = db.server_id(host)
    return render_template("slurm/mariadb-replication.cnf.j2", header=header(plan), host=host, peer=db.peer(host),
                           server_id=ident, servers=len(db.servers), binlog_seconds=BINLOG_DAYS * 86400)


def dump_files(plan: ClusterPlan) -> dict[str, str]:
    """The nightly dump: the script (``mariadb-dump --single-transaction`` of the accounting database, gzip, kept
    ``dump_keep_days``), the oneshot service that runs it and the timer that starts it."""
    records = plan.slurm.accounting_records
    common = {"header": header(plan), "database": STORAGE_LOC}
    return {
        f"{DUMP_DIR}/slurmdbd-dump": render_template(
            "slurm/slurmdbd-dump.sh.j2", **common, directory=shlex.quote(records.dump_directory),
            keep_days=records.dump_keep_days),
        f"{DUMP_DIR}/slurmdbd-dump.service": render_template("slurm/slurmdbd-dump.service.j2", **common),
        f"{DUMP_DIR}/slurmdbd-dump.timer": render_template("slurm/slurmdbd-dump.timer.j2", **common),
    }


def render(plan: ClusterPlan) -> dict[str, str]:
    """The files above for the database servers the slurmdbd role installs (none for the site's own server)."""
    db = accounting_database(plan)
    if db is None or not db.servers:
        return {}
    files = dump_files(plan)
    if db.replicated:
        files.update({f"{REPLICATION_DIR}/{h}.cnf": replication_cnf(plan, h) for h in db.servers})
    return files
