"""Users rules: the accounts, their QOS and groups as sacctmgr and SSSD will take them (docs/ansible.md, "Users")."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, rule

BUILTIN_QOS = "normal"
"""the QOS slurmdbd creates at its first start (sacctmgr(1), "QOS"): every association's default"""


@rule("USERS001", "users", Severity.ERROR, "account default QOS sacctmgr does not have", suppressible=False)
def unknown_default_qos(plan: ClusterPlan) -> Iterator[Hit]:
    """An account's ``default_qos`` must be ``normal`` or a QOS of ``slurm.qos``: sacctmgr refuses a DefaultQOS it
    does not know ("Problem getting qos"), so the roles would stop at that account on every converge."""
    users, slurm = plan.users, plan.slurm
    if users is None:
        return
    known = {BUILTIN_QOS} | {q.name for q in (slurm.qos if slurm is not None else [])}
    for i, a in enumerate(users.accounts):
        if a.default_qos is not None and a.default_qos not in known:
            yield Hit(("users", "accounts", i, "default_qos"),
                      f"account {a.name}: default QOS {a.default_qos} is neither normal nor a QOS of slurm.qos",
                      f"add {{name: {a.default_qos}}} to slurm.qos, or name one of {', '.join(sorted(known))}")


@rule("USERS002", "users", Severity.ERROR, "accounts without Slurm")
def accounts_without_slurm(plan: ClusterPlan) -> Iterator[Hit]:
    """``users.accounts`` are created by sacctmgr on the primary controller: without a ``slurm:`` section there is
    no controller, slurmdbd or ClusterName to hold them, and nothing would be created."""
    users = plan.users
    if users is not None and users.accounts and plan.slurm is None:
        yield Hit(("users", "accounts"), f"{len(users.accounts)} Slurm account(s) but no slurm: section",
                  "add the slurm: section, or remove users.accounts")


@rule("USERS003", "users", Severity.WARNING, "account groups without a directory")
def groups_without_directory(plan: ClusterPlan) -> Iterator[Hit]:
    """An account's ``groups`` are expanded with ``getent group`` on the primary controller. Without
    ``users.directory`` only the controller's local groups answer, which a compute node or login node does not
    share: a member logs in nowhere the controller's group says."""
    users = plan.users
    if users is None or users.directory is not None:
        return
    for i, a in enumerate(users.accounts):
        if a.groups:
            yield Hit(("users", "accounts", i, "groups"),
                      f"account {a.name} gives its associations to the members of {', '.join(a.groups)}, but "
                      "users.directory is not set: only the primary controller's local groups would answer",
                      "set users.directory to the site's LDAP directory, or list the users themselves")


@rule("USERS004", "users", Severity.ERROR, "partition allows an account the blueprint does not create")
def unknown_allowed_account(plan: ClusterPlan) -> Iterator[Hit]:
    """A partition's ``allow_accounts`` (slurm.conf AllowAccounts) must name accounts of ``users.accounts`` (or
    ``root``): slurmctld takes any name, so a misspelt account leaves the partition open to nobody, and a job of the
    intended account is refused with "Invalid account or account/partition combination"."""
    slurm = plan.slurm
    if slurm is None:
        return
    known = {"root"} | {a.name for a in (plan.users.accounts if plan.users is not None else [])}
    for i, part in enumerate(slurm.partitions):
        for j, name in enumerate(part.allow_accounts):
            if name not in known:
                yield Hit(("slurm", "partitions", i, "allow_accounts", j),
                          f"partition {part.name} allows account {name}, which users.accounts does not create",
                          f"add {{name: {name}}} to users.accounts, or name one of {', '.join(sorted(known))}")
