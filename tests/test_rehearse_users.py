"""The users scenario's pieces that need no nodes: the directory's password hash, the blueprint as rehearsed, its
needs and the site mirror's packages (the scenario itself runs in tests/e2e/test_lab_ha.py)."""

from __future__ import annotations

import yaml

from clusterctl.rehearse.scenario.registry import ORDER
from clusterctl.rehearse.scenario.users import (CONFIG_LDIF, DATA_LDIF, UsersScenario, adjust_users, directory_host,
                                                ssha)
from clusterctl.rehearse.variant import Variant
from tests.helpers import REPO, lab, plan_of, shipped


def test_ssha_is_openldaps_salted_sha1():
    # (printf secretsalt1234 | openssl sha1 -binary; printf salt1234) | base64
    assert ssha("secret", b"salt1234") == "{SSHA}Wcm1xEisNjqp921ALcHfuQ7avFdzYWx0MTIzNA=="


def test_the_blueprint_as_rehearsed_points_at_the_rehearsals_directory_and_gives_its_group_an_account():
    variant = Variant(data=shipped("lab-ha"))
    adjust_users(variant, "head02")
    assert variant.data["users"] == {
        "directory": {"uris": ["ldap://head02"], "start_tls": True, "search_base": "dc=rehearsal,dc=clusterctl",
                      "ca_certificate": "/etc/ssl/certs/clusterctl-rehearsal-ldap-ca.pem",
                      "bind_dn": "cn=sssd,ou=services,dc=rehearsal,dc=clusterctl"},
        "accounts": [{"name": "research", "fairshare": 10, "groups": ["researchers"]}]}
    files = plan_of(variant.data)  # loads: every value of the rehearsed section passes its kind
    assert files.users.directory.start_tls is True
    data = lab()
    data["users"] = {"accounts": [{"name": "research", "fairshare": 5, "users": ["alice"]}]}
    variant = Variant(data=data)
    adjust_users(variant, "head01")
    assert variant.data["users"]["accounts"] == [{"name": "research", "fairshare": 5, "users": ["alice"],
                                                   "groups": ["researchers"]}]


def test_the_directory_is_served_by_the_last_controller_and_the_scenario_needs_a_login_node():
    assert directory_host(plan_of(shipped("lab-ha"))) == "head02"
    assert directory_host(plan_of(shipped("lab-2node"))) == "head01"
    assert UsersScenario().unmet(plan_of(shipped("lab-ha"))) is None
    need, why = UsersScenario().unmet(plan_of(shipped("lab-2node")))
    assert (need.what, why) == ("a login node", "no login node (a node group with role login)")
    assert ORDER.index("failover") < ORDER.index("users") < ORDER.index("day0")


def test_the_mirror_gets_slapd_and_what_the_directory_client_role_installs():
    defaults = yaml.safe_load((REPO / "roles" / "directory_client" / "defaults" / "main.yml").read_text())
    assert set(defaults["directory_client_packages"]) <= set(UsersScenario.packages)
    assert {"slapd", "ldap-utils"} <= set(UsersScenario.packages)


def test_the_directory_requires_tls_and_reads_only_to_the_bind_dn():
    assert "olcSecurity: tls=1\n" in CONFIG_LDIF
    assert ("olcAccess: {1}to * by dn.exact=cn=sssd,ou=services,dc=rehearsal,dc=clusterctl read by * none\n"
            in CONFIG_LDIF)
    assert "memberUid: ada\n" in DATA_LDIF and "userPassword: PASSWORD_HASH\n" in DATA_LDIF
