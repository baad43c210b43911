"""Users rules: each triggered by a small change to the lab blueprint with a users: section, quiet on it."""

from __future__ import annotations

from tests.helpers import hits, lab

DIRECTORY = {"uris": ["ldaps://ldap01.example.com"], "search_base": "dc=example,dc=com",
             "ca_certificate": "/etc/ssl/certs/example-ca.pem"}


def with_users(**users) -> dict:
    data = lab()
    data["users"] = {"directory": dict(DIRECTORY), "accounts": [{"name": "research", "users": ["alice"]}], **users}
    return data


def test_the_users_section_as_written_is_quiet():
    data = with_users()
    for code in ("USERS001", "USERS002", "USERS003"):
        assert hits(data, code) == []


def test_a_default_qos_sacctmgr_lacks_is_an_error():
    data = with_users(accounts=[{"name": "research", "default_qos": "urgnt"}])
    (h,) = hits(data, "USERS001")
    assert h.message == "account research: default QOS urgnt is neither normal nor a QOS of slurm.qos"
    assert h.path == ("users", "accounts", 0, "default_qos")
    data["users"]["accounts"][0]["default_qos"] = "urgent"  # lab-2node's slurm.qos
    assert hits(data, "USERS001") == []
    data["users"]["accounts"][0]["default_qos"] = "normal"
    assert not hits(data, "USERS001")


def test_accounts_without_slurm_are_an_error():
    data = with_users()
    del data["slurm"]
    (h,) = hits(data, "USERS002")
    assert h.message == "1 Slurm account(s) but no slurm: section"


def test_groups_without_a_directory_warn():
    data = with_users(accounts=[{"name": "research", "groups": ["ml-team"]}])
    assert hits(data, "USERS003") == []
    del data["users"]["directory"]
    (h,) = hits(data, "USERS003")
    assert h.path == ("users", "accounts", 0, "groups")


def test_a_partition_allowing_an_account_the_blueprint_does_not_create_is_an_error():
    data = with_users()
    data["slurm"]["partitions"][0]["allow_accounts"] = ["research"]
    assert hits(data, "USERS004") == []
    data["slurm"]["partitions"][0]["allow_accounts"] = ["research", "reserch"]
    (h,) = hits(data, "USERS004")
    assert h.message == "partition gpu allows account reserch, which users.accounts does not create"
    assert h.path == ("slurm", "partitions", 0, "allow_accounts", 1)
