"""users: (docs/ansible.md, "Users"): the blueprint section and its kinds, the variables the roles get, the
sacctmgr commands the slurm_associations module works out from literal sacctmgr output, and the sssd.conf the
directory_client role writes."""

from __future__ import annotations

import importlib.util

import jinja2
import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.kinds import DISTINGUISHED_NAME, LDAP_URI, SLURM_ACCOUNT, UNIX_NAME
from clusterctl.targets import render_targets
from tests.helpers import REPO, lab, plan_of

ROLES = REPO / "roles"
DIRECTORY = {"uris": ["ldaps://ldap01.example.com", "ldaps://ldap02.example.com"], "search_base": "dc=example,dc=com",
             "ca_certificate": "/etc/ssl/certs/example-ca.pem", "bind_dn": "cn=sssd,ou=services,dc=example,dc=com"}
ACCOUNTS = [{"name": "ml", "parent": "research", "fairshare": 40, "max_gpus": 16, "groups": ["ml-team"]},
            {"name": "research", "fairshare": 100, "default_qos": "normal", "users": ["alice", "bob"]}]


def with_users(**users) -> dict:
    data = lab()
    data["users"] = {"directory": dict(DIRECTORY), "admin_groups": ["hpcadmin"], "accounts": ACCOUNTS, **users}
    return data


def load(data: dict):
    return load_blueprint_text(yaml.safe_dump(data), "x.yaml")


def _module():
    spec = importlib.util.spec_from_file_location(
        "slurm_associations", ROLES / "slurm_associations" / "library" / "slurm_associations.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- the kinds ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,good,bad", [
    (UNIX_NAME, ["alice", "_svc", "ml-team", "a1"], ["Alice", "-x", "a b", "a;id", "a$", "1abc", "a" * 33]),
    (SLURM_ACCOUNT, ["research", "ml.v2", "0lab"], ["Research", "-r", "a b", "a,b", "a=b", "a'b"]),
    (LDAP_URI, ["ldaps://ldap01.example.com", "ldap://10.0.0.5:389", "ldaps://[fd00::5]:636"],
     ["ldapi:///", "ldaps://h/dc=x", "ldaps://u@h", "http://h", "ldaps://h ldaps://g", "ldaps://h\nx"]),
    (DISTINGUISHED_NAME, ["dc=example,dc=com", "cn=sssd,ou=services,dc=example,dc=com", "uid=a-b_c.d,dc=x"],
     ["dc=example, dc=com", "ou=HPC Users,dc=x", "dc=x,", "=x", "cn=a\\,b", "dc=x\nbind_dn=y", "cn=a+uid=b"]),
])
def test_users_kinds_take_the_names_their_tools_take_and_nothing_that_would_inject(kind, good, bad):
    assert [kind.explain(v) for v in good] == [None] * len(good)
    assert all(kind.explain(v) is not None for v in bad), [v for v in bad if kind.explain(v) is None]


# --- the model ---------------------------------------------------------------------------------------------

def test_a_lab_blueprint_with_users_loads():
    users = load(with_users()).blueprint.users
    assert users.directory.uris == ["ldaps://ldap01.example.com", "ldaps://ldap02.example.com"]
    assert (users.directory.min_id, users.directory.max_id, users.directory.ldap_schema) == (10_000, 2_000_000_000,
                                                                                           "rfc2307")
    assert [a.parent for a in users.accounts] == ["research", "root"]
    assert (users.adopt.action_no_jobs, users.adopt.action_adopt_failure) == ("deny", "allow")


@pytest.mark.parametrize("change,message", [
    ({"directory": {**DIRECTORY, "uris": ["ldap://ldap01.example.com"]}}, "is unencrypted: set start_tls: true"),
    ({"directory": {**DIRECTORY, "uris": ["ldaps://a", "ldap://b"], "start_tls": True}}, "mixes ldaps:// and ldap://"),
    ({"directory": {**DIRECTORY, "min_id": 5000, "max_id": 4000}}, "min_id 5000 is above max_id 4000"),
    ({"directory": {**DIRECTORY, "min_id": 999}}, "999"),
    ({"directory": {**DIRECTORY, "bind_password": "secret"}}, "bind_password"),
    ({"accounts": [{"name": "a"}, {"name": "a"}]}, "account a listed more than once"),
    ({"accounts": [{"name": "root"}]}, "account 'root' is the top of Slurm's tree"),
    ({"accounts": [{"name": "a", "parent": "b"}]}, "account a: parent b is not listed in users.accounts"),
    ({"accounts": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]}, "its parents loop back to a"),
    ({"accounts": [{"name": "a", "users": ["alice", "alice"]}]}, "alice listed more than once"),
    ({"admin_groups": ["wheel", "wheel"]}, "wheel listed more than once"),
    ({"adopt": {"action_no_jobs": "allow"}}, "action_no_jobs"),
])
def test_users_refused_at_load(change, message):
    with pytest.raises(BlueprintError, match=message.replace("(", r"\(").replace("+", r"\+")):
        load(with_users(**change))


def test_start_tls_makes_ldap_uris_acceptable():
    d = load(with_users(directory={**DIRECTORY, "uris": ["ldap://ldap01.example.com"], "start_tls": True}))
    assert d.blueprint.users.directory.start_tls is True


# --- rendered variables ------------------------------------------------------------------------------------

def test_rendered_vars_and_plays():
    files = render_targets(plan_of(with_users()))
    text = files["ansible/group_vars/all.yml"]
    for line in ('directory_client_uris: ["ldaps://ldap01.example.com", "ldaps://ldap02.example.com"]\n',
                 'directory_client_search_base: "dc=example,dc=com"\n',
                 'directory_client_ca_certificate: "/etc/ssl/certs/example-ca.pem"\n',
                 'directory_client_bind_dn: "cn=sssd,ou=services,dc=example,dc=com"\n',
                 "directory_client_bind_password: '{{ vault_directory_bind_pass | default('''') }}'\n",
                 '  - {name: "research", parent: "root", fairshare: 100, default_qos: "normal", grp_tres: "", '
                 'users: ["alice", "bob"], groups: []}\n'
                 '  - {name: "ml", parent: "research", fairshare: 40, default_qos: "", grp_tres: "gres/gpu=16", '
                 'users: [], groups: ["ml-team"]}\n',
                 "slurm_associations_prune: false\n",
                 'slurm_compute_pam_adopt_admin_groups: ["hpcadmin"]\n',
                 'slurm_compute_pam_adopt_action_no_jobs: "deny"\n'):
        assert line in text, line
    site = yaml.safe_load(files["ansible/site.yml"])
    names = [p["name"] for p in site]
    directory = names.index("Users and groups of the site's directory (SSSD) on every Slurm node")
    associations = names.index("Slurm accounts and user associations")
    assert site[directory]["hosts"] == "slurm_cluster" and site[associations]["hosts"] == "slurm_controllers[0]"
    assert directory < names.index("Slurm controllers") < associations
    assert "ansible/roles/directory_client/templates/sssd.conf.j2" in files
    assert "ansible/roles/slurm_associations/library/slurm_associations.py" in files


def test_anonymous_bind_renders_no_password_reference_and_no_users_section_renders_nothing():
    d = {k: v for k, v in DIRECTORY.items() if k != "bind_dn"}
    text = render_targets(plan_of(with_users(directory=d)))["ansible/group_vars/all.yml"]
    assert 'directory_client_bind_dn: ""\n' in text and "vault_directory_bind_pass" not in text
    files = render_targets(plan_of(lab()))
    assert "directory_client" not in files["ansible/group_vars/all.yml"]
    assert "slurm_associations" not in files["ansible/site.yml"]
    assert not any(p.startswith("ansible/roles/directory_client/") for p in files)


# --- sssd.conf as the role writes it -------------------------------------------------------------------------

SSSD_CONF = """\
# managed
# sssd.conf(5) and sssd-ldap(5): users and groups of the site's directory (users.directory of the blueprint).
[sssd]
config_file_version = 2
services = nss, pam
domains = directory

[nss]
# local system accounts are never looked up in the directory
filter_users = root
filter_groups = root

[pam]

[domain/directory]
id_provider = ldap
auth_provider = ldap
chpass_provider = ldap
ldap_uri = ldaps://ldap01.example.com, ldaps://ldap02.example.com
ldap_search_base = dc=example,dc=com
ldap_schema = rfc2307
ldap_id_use_start_tls = false
ldap_tls_reqcert = demand
ldap_tls_cacert = /etc/ssl/certs/example-ca.pem
ldap_default_bind_dn = cn=sssd,ou=services,dc=example,dc=com
ldap_default_authtok_type = password
ldap_default_authtok = s3cret
min_id = 10000
max_id = 2000000000
enumerate = false
cache_credentials = false
"""


def test_sssd_conf_from_the_rendered_vars():
    text = render_targets(plan_of(with_users()))["ansible/group_vars/all.yml"]
    variables = {**yaml.safe_load((ROLES / "directory_client" / "defaults" / "main.yml").read_text()),
                 **{k: v for k, v in yaml.safe_load(text).items() if k.startswith("directory_client_")},
                 "directory_client_bind_password": "s3cret", "ansible_managed": "managed"}
    env = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True)
    template = env.from_string((ROLES / "directory_client" / "templates" / "sssd.conf.j2").read_text())
    assert template.render(**variables) == SSSD_CONF


# --- the sacctmgr commands -----------------------------------------------------------------------------------

WANTED = [{"name": "research", "parent": "root", "fairshare": 100, "default_qos": "normal", "grp_tres": "",
           "users": ["alice", "bob"], "groups": []},
          {"name": "ml", "parent": "research", "fairshare": 40, "default_qos": "", "grp_tres": "gres/gpu=16",
           "users": [], "groups": ["ml-team"]}]
FRESH_ASSOC = ["root|||1||", "root|root||1||"]
"""``sacctmgr -nP show assoc where cluster=C format=Account,User,ParentName,Fairshare,DefaultQOS,GrpTRES`` of a new
slurmdbd, as Debian's 22.05 answered it in the users rehearsal (a user's row has no ParentName: its account is its
parent)"""
FRESH_USERS = ["root|root"]
CONVERGED_ASSOC = ["root|||1||", "root|root||1||", "research||root|100|normal|",
                   "research|alice||1||", "research|bob||1||", "ml||research|40||gres/gpu=16",
                   "ml|carol||1||", "ml|bob||1||"]
CONVERGED_USERS = ["root|root", "alice|research", "bob|research", "carol|ml"]


def test_group_members_from_getent():
    m = _module()
    assert m.group_members("ml-team:*:20001:carol,bob\n") == ["carol", "bob"]
    assert m.group_members("empty:*:20002:\n") == []


def test_a_fresh_slurmdbd_gets_accounts_parents_first_then_users_with_their_default_account():
    m = _module()
    assert m.commands("lab", WANTED, {"ml-team": ["carol", "bob"]}, FRESH_ASSOC, FRESH_USERS) == [
        ["sacctmgr", "-i", "add", "account", "research", "cluster=lab", "parent=root", "fairshare=100",
         "defaultqos=normal"],
        ["sacctmgr", "-i", "add", "account", "ml", "cluster=lab", "parent=research", "fairshare=40",
         "grptres=gres/gpu=16"],
        ["sacctmgr", "-i", "add", "user", "alice", "account=research", "cluster=lab", "defaultaccount=research"],
        ["sacctmgr", "-i", "add", "user", "bob", "account=research", "cluster=lab", "defaultaccount=research"],
        ["sacctmgr", "-i", "add", "user", "carol", "account=ml", "cluster=lab", "defaultaccount=ml"],
        ["sacctmgr", "-i", "add", "user", "bob", "account=ml", "cluster=lab"]]


def test_what_the_rehearsal_read_after_its_converge_needs_nothing_more():
    # the same commands as the rehearsal ran them, then what its slurmdbd answered (converge-again: changed=0)
    wanted = [{"name": "research", "parent": "root", "fairshare": 10, "default_qos": "", "grp_tres": "",
               "users": [], "groups": ["researchers"]}]
    assoc = ["root|||1||", "root|root||1||", "research||root|10||", "research|ada||1||"]
    m = _module()
    assert m.commands("lab-ha", wanted, {"researchers": ["ada"]}, FRESH_ASSOC, FRESH_USERS) == [
        ["sacctmgr", "-i", "add", "account", "research", "cluster=lab-ha", "parent=root", "fairshare=10"],
        ["sacctmgr", "-i", "add", "user", "ada", "account=research", "cluster=lab-ha", "defaultaccount=research"]]
    assert m.commands("lab-ha", wanted, {"researchers": ["ada"]}, assoc, ["ada|research", "root|root"]) == []


def test_a_converged_slurmdbd_gets_nothing():
    assert _module().commands("lab", WANTED, {"ml-team": ["carol", "bob"]}, CONVERGED_ASSOC, CONVERGED_USERS) == []


def test_only_what_differs_is_modified_and_nothing_unlisted_is_deleted():
    m = _module()
    assoc = [line.replace("ml||research|40||gres/gpu=16", "ml||root|10|normal|gres/gpu=8") for line in CONVERGED_ASSOC]
    assoc += ["physics||root|1|normal|", "physics|dave||1|normal|", "ml|erin||1||"]
    users = [u.replace("bob|research", "bob|ml") for u in CONVERGED_USERS] + ["dave|physics", "erin|ml"]
    assert m.commands("lab", WANTED, {"ml-team": ["carol", "bob"]}, assoc, users) == [
        ["sacctmgr", "-i", "modify", "account", "where", "name=ml", "cluster=lab", "set", "parent=research",
         "fairshare=40", "defaultqos=-1", "grptres=gres/gpu=16"],
        ["sacctmgr", "-i", "modify", "user", "where", "name=bob", "cluster=lab", "set", "defaultaccount=research"]]
    # with prune, erin's association with ml (an account the blueprint lists) goes; dave's with physics stays
    assert m.commands("lab", WANTED, {"ml-team": ["carol", "bob"]}, assoc, users, prune=True)[-1] == [
        "sacctmgr", "-i", "delete", "user", "where", "name=erin", "account=ml", "cluster=lab"]


def test_a_partitions_allowed_accounts_reach_slurm_conf():
    data = with_users()
    data["slurm"]["partitions"][0]["allow_accounts"] = ["research", "ml"]
    conf = render_targets(plan_of(data))["slurm/slurm.conf"]
    (line,) = [x for x in conf.splitlines() if x.startswith("PartitionName=gpu ")]
    assert " AllowAccounts=research,ml State=UP" in line
    assert "AllowAccounts" not in render_targets(plan_of(with_users()))["slurm/slurm.conf"]


def test_the_rendered_acceptance_tests_check_sssd_on_every_slurm_host_with_a_directory():
    files = render_targets(plan_of(with_users()))
    for group in ("gpu", "head"):
        text = files[f"tests/test_{group}.py"]
        assert "def test_sssd_conf_is_root_only(host):" in text and "def test_sssd_is_running(host):" in text
    assert "sssd" not in render_targets(plan_of(lab()))["tests/test_gpu.py"]


def test_homes_are_created_at_the_first_login_only_where_no_shared_tier_holds_home():
    def created(data):
        text = render_targets(plan_of(data))["ansible/group_vars/all.yml"]
        return yaml.safe_load(text)["directory_client_create_home"]
    data = with_users()
    assert [t["mount"] for t in data["storage"] if t["tier"] == "nfs"] == ["/home"]  # lab-2node's home tier
    assert created(data) is False
    data["storage"] = [t for t in data["storage"] if t["mount"] != "/home"]
    assert created(data) is True
    data["users"]["directory"]["create_home"] = False
    assert created(data) is False
