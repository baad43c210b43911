"""Who uses the cluster: the site's LDAP directory the nodes resolve users through (SSSD), the Slurm accounts and
their users (associations, which ``AccountingStorageEnforce=associations`` requires before a job starts), and the
groups that may log in to a compute node without a job (pam_slurm_adopt). docs/ansible.md, "Users".
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import Field, field_validator, model_validator

from clusterctl.kinds import AbsolutePath, DistinguishedName, LdapUri, QosName, SlurmAccount, UnixName
from clusterctl.strict import StrictModel, listed_once

ROOT_ACCOUNT = "root"
"""the account every association tree starts from (sacctmgr(1): "root" exists from slurmdbd's first start)"""
DIRECTORY_ID_MIN = 1000
"""lowest id the directory may give a user: below it are the distribution's system ids (Debian policy 9.2.2)"""
DIRECTORY_ID_MAX = 4_294_967_294
"""highest 32-bit id; 4294967295 is (uid_t)-1"""
BIND_PASSWORD_VAULT_VARIABLE = "vault_directory_bind_pass"
"""the vault variable holding the bind DN's password: never in the blueprint or a rendered file"""


class Directory(StrictModel):
    """The site's LDAP directory, read by SSSD on every Slurm host (sssd-ldap(5)). Users and groups come from it;
    nothing here writes to it."""

    uris: list[LdapUri] = Field(min_length=1, max_length=8)
    """ldap_uri: the servers in failover order (SSSD tries the next when one does not answer)"""
    start_tls: bool = False
    """ldap:// URIs upgrade with StartTLS (ldap_id_use_start_tls); required for ldap://, where nothing else
    encrypts the bind password and the users' attributes"""
    search_base: DistinguishedName
    """ldap_search_base: where users and groups are searched"""
    ca_certificate: AbsolutePath
    """ldap_tls_cacert: the CA certificate (PEM) on the hosts that signed the servers' certificates; the site puts
    it there (SSSD checks every server certificate against it: ldap_tls_reqcert = demand)"""
    bind_dn: DistinguishedName | None = None
    """ldap_default_bind_dn: the service account SSSD binds as, its password the vault variable
    ``vault_directory_bind_pass``; absent: anonymous bind"""
    ldap_schema: Literal["rfc2307", "rfc2307bis"] = "rfc2307"
    """ldap_schema: group members as memberUid names (rfc2307, OpenLDAP's nis schema) or member DNs (rfc2307bis)"""
    min_id: int = Field(default=10_000, ge=DIRECTORY_ID_MIN, le=DIRECTORY_ID_MAX)
    """min_id: users and groups below it are ignored (local and system accounts keep their ids)"""
    max_id: int = Field(default=2_000_000_000, ge=DIRECTORY_ID_MIN, le=DIRECTORY_ID_MAX)
    """max_id: users and groups above it are ignored"""
    create_home: bool | None = None
    """pam_mkhomedir creates a missing home at the first login; default: only where no nfs or parallel storage tier
    is mounted at /home (a shared /home is the site's to populate)"""

    @model_validator(mode="after")
    def _encrypted_and_ordered(self) -> "Directory":
        plain = [u for u in self.uris if u.startswith("ldap://")]
        if plain and not self.start_tls:
            raise ValueError(f"{plain[0]} is unencrypted: set start_tls: true (StartTLS, ldap_id_use_start_tls) or "
                             "use ldaps://; the bind password and every user's attributes would cross the network "
                             "in clear")
        if plain and len(plain) != len(self.uris):
            raise ValueError("uris mixes ldaps:// and ldap://: SSSD applies start_tls to all of them; use one scheme")
        if self.min_id > self.max_id:
            raise ValueError(f"min_id {self.min_id} is above max_id {self.max_id}: no id would be accepted")
        return self


class Account(StrictModel):
    """A Slurm account (sacctmgr add account), its place in the fairshare tree and its limits, and who may charge
    jobs to it (sacctmgr add user ... account=)."""

    name: SlurmAccount
    parent: SlurmAccount = ROOT_ACCOUNT
    """the parent account (``root``: the top of the tree)"""
    fairshare: int = Field(default=1, ge=1, le=4_294_967_294)  # sacctmgr: a 32-bit share
    """Fairshare: the account's shares among its siblings (sacctmgr(1); priority/multifactor)"""
    default_qos: QosName | None = None
    """DefaultQOS of the account's associations (a QOS of slurm.qos or ``normal``)"""
    max_gpus: int | None = Field(default=None, ge=1, le=10_000_000)
    """GrpTRES=gres/gpu=N: GPUs all running jobs of the account (and its children) may hold together"""
    users: list[UnixName] = Field(default_factory=list, max_length=100_000)
    """users of the directory (or local) who may charge jobs to the account"""
    groups: list[UnixName] = Field(default_factory=list, max_length=1024)
    """directory groups whose members may charge jobs to the account: expanded with ``getent group`` on the
    primary controller at every converge"""

    @field_validator("users", "groups")
    @classmethod
    def _once(cls, value: list[str]) -> list[str]:
        twice = sorted(n for n, k in Counter(value).items() if k > 1)
        if twice:
            raise ValueError(f"{', '.join(twice)} listed more than once")
        return value


class AdoptPolicy(StrictModel):
    """pam_slurm_adopt's options (slurm.schedmd.com/pam_slurm_adopt.html, "action_*")."""

    action_no_jobs: Literal["deny", "ignore"] = "deny"
    """a user without a job on the node: deny (the module's default) or ignore (let the PAM stack decide)"""
    action_adopt_failure: Literal["allow", "deny"] = "allow"
    """a session that cannot be adopted into a job: allow (the module's default) or deny"""


class Users(StrictModel):
    """Users, accounts and logins (docs/ansible.md, "Users")."""

    directory: Directory | None = None
    """the site's LDAP directory the hosts resolve users and groups through (SSSD); absent: local accounts only"""
    admin_groups: list[UnixName] = Field(default_factory=list, max_length=64)
    """groups whose members may ssh into a compute node without a job there (pam_access before pam_slurm_adopt);
    root always may, and so does the user Ansible connects as"""
    adopt: AdoptPolicy = Field(default_factory=AdoptPolicy)
    accounts: list[Account] = Field(default_factory=list, max_length=10_000)
    """Slurm accounts in tree order or any order (parents are created first), kept by sacctmgr on the primary
    controller"""
    prune: bool = False
    """remove a user's association with an account this blueprint lists when the blueprint no longer gives it;
    accounts and users the blueprint never named are left alone either way"""

    @field_validator("admin_groups")
    @classmethod
    def _admin_once(cls, value: list[str]) -> list[str]:
        listed_once(value)
        return value

    @field_validator("accounts")
    @classmethod
    def _tree(cls, value: list[Account]) -> list[Account]:
        """Unique names, ``root`` never redefined, every parent listed (or root), no cycle."""
        names = [a.name for a in value]
        listed_once(names, "account ")
        if ROOT_ACCOUNT in names:
            raise ValueError("account 'root' is the top of Slurm's tree and exists already: name it as a parent")
        parents = {a.name: a.parent for a in value}
        for a in value:
            if a.parent != ROOT_ACCOUNT and a.parent not in parents:
                raise ValueError(f"account {a.name}: parent {a.parent} is not listed in users.accounts (nor root)")
        for a in value:
            seen, at = {a.name}, a.parent
            while at != ROOT_ACCOUNT:
                if at in seen:
                    raise ValueError(f"account {a.name}: its parents loop back to {at}")
                seen.add(at)
                at = parents[at]
        return value


def accounts_in_tree_order(accounts: list[Account]) -> list[Account]:
    """Parents before children (sacctmgr refuses a child whose parent does not exist), otherwise in written order."""
    placed: dict[str, Account] = {}
    pending = list(accounts)
    while pending:
        rest = [a for a in pending if a.parent != ROOT_ACCOUNT and a.parent not in placed]
        waiting = {a.name for a in rest}
        placed.update((a.name, a) for a in pending if a.name not in waiting)
        if len(rest) == len(pending):  # a loop: the model refuses it, never reached
            raise ValueError(f"accounts {[a.name for a in rest]} loop")
        pending = rest
    return list(placed.values())
