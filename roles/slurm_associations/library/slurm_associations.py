#!/usr/bin/python
"""Keep Slurm's accounts and user associations as the blueprint lists them (sacctmgr(1)).

Reads what slurmdbd has (``sacctmgr show assoc``, ``show user``) and what the directory says of each listed group
(``getent group``), works out the sacctmgr commands that make the two agree, and runs them in order: accounts
parents first, then users, then default accounts, then (only with ``prune``) associations the blueprint no longer
gives. Nothing the blueprint never named is touched. Every command is an argument list; in check mode none runs.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: slurm_associations
short_description: Slurm accounts and user associations kept with sacctmgr
description: Compares the accounts and users given with what slurmdbd has and adds or modifies what differs.
options:
  cluster: {description: the ClusterName the associations belong to, type: str, required: true}
  accounts:
    description: accounts in tree order (name, parent, fairshare, default_qos, grp_tres, users, groups)
    type: list
    elements: dict
    required: true
  prune: {description: remove associations of listed accounts the blueprint no longer gives, type: bool, default: false}
"""

ASSOC_FORMAT = "format=Account,User,ParentName,Fairshare,DefaultQOS,GrpTRES"
USER_FORMAT = "format=User,DefaultAccount"
ACCOUNT_FIELDS = (("parent", "parent"), ("fairshare", "fairshare"), ("default_qos", "defaultqos"),
                  ("grp_tres", "grptres"))
"""(our key, the sacctmgr option that sets it)"""
CLEARED = {"default_qos": "-1", "grp_tres": "gres/gpu=-1"}
"""what sacctmgr's modify takes to clear a limit (sacctmgr(1): "a new value of -1")"""


def parse_assoc(lines: list[str]) -> tuple[dict[str, dict[str, str]], set[tuple[str, str]]]:
    """``sacctmgr -nP show assoc format=Account,User,ParentName,Fairshare,DefaultQOS,GrpTRES``: account -> its
    settings as sacctmgr shows them, and the (user, account) pairs that have an association."""
    accounts: dict[str, dict[str, str]] = {}
    users: set[tuple[str, str]] = set()
    for line in lines:
        parts = line.split("|")
        if len(parts) < 6:
            continue
        account, user, parent, fairshare, qos, tres = parts[:6]
        if user:
            users.add((user, account))
        else:
            accounts[account] = {"parent": parent, "fairshare": fairshare, "default_qos": qos, "grp_tres": tres}
    return accounts, users


def parse_users(lines: list[str]) -> dict[str, str]:
    """``sacctmgr -nP show user format=User,DefaultAccount``: user -> default account."""
    return dict(line.split("|", 1)[:2] for line in lines if "|" in line)


def group_members(line: str) -> list[str]:
    """``getent group NAME``'s line (name:password:gid:members) -> its members, in order."""
    parts = line.strip().split(":")
    return [m for m in parts[3].split(",") if m] if len(parts) >= 4 else []


def wanted_pairs(accounts: list[dict], members: dict[str, list[str]]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every (user, account) the blueprint gives, in its order (listed users, then each group's members), and each
    user's default account: the first account that gives them one."""
    pairs: list[tuple[str, str]] = []
    default: dict[str, str] = {}
    for a in accounts:
        for user in list(a.get("users") or []) + [m for g in a.get("groups") or [] for m in members.get(g, [])]:
            if (user, a["name"]) not in pairs:
                pairs.append((user, a["name"]))
            default.setdefault(user, a["name"])
    return pairs, default


def _account_settings(a: dict) -> dict[str, str]:
    return {"parent": a["parent"], "fairshare": str(a["fairshare"]), "default_qos": a.get("default_qos") or "",
            "grp_tres": a.get("grp_tres") or ""}


def commands(cluster: str, accounts: list[dict], members: dict[str, list[str]], assoc: list[str],
             user_lines: list[str], prune: bool = False) -> list[list[str]]:
    """The sacctmgr commands (argument lists, ``-i``: no prompt) that make slurmdbd hold what ``accounts`` give."""
    have, pairs_now = parse_assoc(assoc)
    defaults_now = parse_users(user_lines)
    out: list[list[str]] = []
    for a in accounts:
        want = _account_settings(a)
        now = have.get(a["name"])
        if now is None:
            out.append(["sacctmgr", "-i", "add", "account", a["name"], f"cluster={cluster}"]
                       + [f"{opt}={want[key]}" for key, opt in ACCOUNT_FIELDS if want[key]])
            continue
        diff = [f"{opt}={want[key] or CLEARED[key]}" for key, opt in ACCOUNT_FIELDS if want[key] != now[key]]
        if diff:
            out.append(["sacctmgr", "-i", "modify", "account", "where", f"name={a['name']}", f"cluster={cluster}",
                        "set", *diff])
    pairs, default = wanted_pairs(accounts, members)
    for user, account in pairs:
        if (user, account) in pairs_now:
            continue
        extra = [] if user in defaults_now else [f"defaultaccount={default[user]}"]
        out.append(["sacctmgr", "-i", "add", "user", user, f"account={account}", f"cluster={cluster}", *extra])
        defaults_now.setdefault(user, default[user])
    for user, account in default.items():
        if defaults_now.get(user) != account:
            out.append(["sacctmgr", "-i", "modify", "user", "where", f"name={user}", f"cluster={cluster}", "set",
                        f"defaultaccount={account}"])
    if prune:
        listed = {a["name"] for a in accounts}
        for user, account in sorted(pairs_now):
            if account in listed and (user, account) not in pairs and user != "root":
                out.append(["sacctmgr", "-i", "delete", "user", "where", f"name={user}", f"account={account}",
                            f"cluster={cluster}"])
    return out


def _read(module: AnsibleModule, argv: list[str]) -> list[str]:
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"{' '.join(argv)} failed ({rc}): {err.strip()}")
    return out.splitlines()


def main() -> None:
    module = AnsibleModule(argument_spec={"cluster": {"type": "str", "required": True},
                                          "accounts": {"type": "list", "elements": "dict", "required": True},
                                          "prune": {"type": "bool", "default": False}},
                           supports_check_mode=True)
    cluster, accounts = module.params["cluster"], module.params["accounts"]
    members: dict[str, list[str]] = {}
    for group in sorted({g for a in accounts for g in a.get("groups") or []}):
        rc, out, _ = module.run_command(["getent", "group", group])
        if rc != 0:
            module.fail_json(msg=f"group {group} (users.accounts[].groups) is not known to this host (getent group: "
                                 f"exit {rc}): check its name, and that SSSD reaches the directory")
        members[group] = group_members(out)
    assoc = _read(module, ["sacctmgr", "-nP", "show", "assoc", "where", f"cluster={cluster}", ASSOC_FORMAT])
    users = _read(module, ["sacctmgr", "-nP", "show", "user", USER_FORMAT])
    todo = commands(cluster, accounts, members, assoc, users, module.params["prune"])
    if not module.check_mode:
        for argv in todo:
            rc, _, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg=f"{' '.join(argv)} failed ({rc}): {err.strip()}", commands=todo)
    module.exit_json(changed=bool(todo), commands=todo, members=members)


if __name__ == "__main__":
    main()
