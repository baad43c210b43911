"""The users' variables (the blueprint's ``users:``; docs/ansible.md, "Users"): the directory_client role's SSSD
settings, the slurm_associations role's accounts as sacctmgr shows them, and pam_slurm_adopt's admin groups and
options for slurm_compute. The bind password is a reference to the operator's vault, never a value."""

from __future__ import annotations

from clusterctl.blueprint.users import BIND_PASSWORD_VAULT_VARIABLE, accounts_in_tree_order
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.ansible.document import Section
from clusterctl.yamlout import Flow, FlowMap, unsafe

BIND_PASSWORD_REFERENCE = "{{ " + BIND_PASSWORD_VAULT_VARIABLE + " | default('') }}"
"""directory_client_bind_password: a template on purpose (the vault's value, resolved by Ansible)"""


def directory_vars(plan: ClusterPlan) -> dict[str, object]:
    """directory_client's variables (users.directory), {} without a directory."""
    users = plan.users
    d = users.directory if users is not None else None
    if d is None:
        return {}
    out: dict[str, object] = unsafe({
        "directory_client_uris": Flow(d.uris), "directory_client_start_tls": d.start_tls,
        "directory_client_search_base": d.search_base, "directory_client_ca_certificate": d.ca_certificate,
        "directory_client_bind_dn": d.bind_dn or "", "directory_client_schema": d.ldap_schema,
        "directory_client_min_id": d.min_id, "directory_client_max_id": d.max_id,
        "directory_client_create_home": create_home(plan)})
    if d.bind_dn:
        out["directory_client_bind_password"] = BIND_PASSWORD_REFERENCE
    return out


def create_home(plan: ClusterPlan) -> bool:
    """pam_mkhomedir: as users.directory.create_home says, else where no shared tier is mounted at /home."""
    stated = plan.users.directory.create_home
    if stated is not None:
        return stated
    return not any(t.tier in ("nfs", "parallel") and t.mount == "/home" for t in plan.storage)


def account_vars(plan: ClusterPlan) -> list[dict[str, object]]:
    """users.accounts parents first, values as ``sacctmgr -nP show assoc`` prints them ('' for no limit)."""
    users = plan.users
    if users is None:
        return []
    return [{"name": a.name, "parent": a.parent, "fairshare": a.fairshare, "default_qos": a.default_qos or "",
             "grp_tres": f"gres/gpu={a.max_gpus}" if a.max_gpus else "", "users": Flow(a.users),
             "groups": Flow(a.groups)} for a in accounts_in_tree_order(users.accounts)]


def adopt_vars(plan: ClusterPlan) -> dict[str, object]:
    """slurm_compute's pam_slurm_adopt settings from users.admin_groups and users.adopt, {} without ``users:``."""
    users = plan.users
    if users is None:
        return {}
    return unsafe({"slurm_compute_pam_adopt_admin_groups": Flow(users.admin_groups),
                   "slurm_compute_pam_adopt_action_no_jobs": users.adopt.action_no_jobs,
                   "slurm_compute_pam_adopt_action_adopt_failure": users.adopt.action_adopt_failure})


def users_sections(plan: ClusterPlan) -> list[Section]:
    """The sections group_vars/all.yml gets from ``users:`` (none without it)."""
    if plan.users is None or plan.slurm is None:
        return []
    out: list[Section] = []
    directory = directory_vars(plan)
    if directory:
        out.append((["directory_client: users and groups of the site's directory through SSSD on every Slurm host "
                     "(users.directory; docs/ansible.md, \"Users\")",
                     f"the bind password comes from the vault: add {BIND_PASSWORD_VAULT_VARIABLE} to it"
                     if "directory_client_bind_password" in directory else "anonymous binds (no bind_dn)"],
                    directory))
    accounts = account_vars(plan)
    if accounts:
        out.append((["slurm_associations: the Slurm accounts and their users, kept by sacctmgr on the primary "
                     "controller (users.accounts; values as sacctmgr shows them, '' for none)"],
                    {"slurm_associations_accounts": unsafe([FlowMap(a) for a in accounts]),
                     "slurm_associations_prune": plan.users.prune}))
    out.append((["slurm_compute: who logs in to a compute node without a job (pam_access before pam_slurm_adopt: "
                 "root, the user Ansible connects as, these groups) and pam_slurm_adopt's actions (users.admin_groups, "
                 "users.adopt)"], adopt_vars(plan)))
    return out
