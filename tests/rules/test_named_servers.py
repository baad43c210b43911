"""ADDR007 (a named server that is this machine, no machine, or an address in disguise) and STORAGE010 (an NFS
export of a system directory): triggering cases and near misses. The issue-24 sweep (tests/security/test_sweep.py)
finds the same blueprints from the other side, by reading the rendered files."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab


@pytest.mark.parametrize("server, shown", [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("169.254.169.254", "169.254.169.254"),
    ("224.0.0.1", "224.0.0.1"), ("[::1]", "::1"), ("167772161", "10.0.0.1")])
def test_an_nfs_server_that_is_an_address_in_disguise_or_no_server_is_refused(server, shown):
    data = lab()
    data["storage"][0]["export"] = f"{server}:/export/home"
    (h,) = hits(data, "ADDR007")
    assert str(h.severity) == "error" and h.path == ("storage", 0, "export")
    assert f"'{server.strip('[]')}' is" in h.message and shown in h.message


@pytest.mark.parametrize("name", ["localhost", "LOCALHOST", "localhost.localdomain", "ip6-localhost", "ALL",
                                  "default", "ungrouped"])
def test_a_reserved_name_as_a_server_is_refused(name):
    data = lab()
    data["storage"][0]["export"] = f"{name}:/export/home"
    (h,) = hits(data, "ADDR007")
    assert h.path == ("storage", 0, "export") and f"'{name}'" in h.message


def test_the_database_host_is_checked_too():
    data = lab()
    data["slurm"]["database_host"] = "127.1"
    found = [h for h in hits(data, "ADDR007") if h.path == ("slurm", "database_host")]
    assert len(found) == 1 and "127.0.0.1" in found[0].message


@pytest.mark.parametrize("server", ["head01", "nas01", "10.10.0.250", "fs-0123.fsx.us-east-2.amazonaws.com",
                                    "[fd00::10]", "nas-localhost"])
def test_a_host_name_or_a_plain_address_is_a_server(server):
    data = lab()
    data["storage"][0]["export"] = f"{server}:/export/home"
    assert hits(data, "ADDR007") == []


@pytest.mark.parametrize("directory", ["/etc", "/etc/cron.d", "/root/.ssh", "/usr/local/sbin", "/var/run",
                                       "/run/munge", "/tmp", "/var/spool", "/proc/sys", "/boot"])
def test_an_export_of_a_system_directory_is_refused(directory):
    data = lab()
    data["storage"][0]["export"] = f"head01:{directory}"
    (h,) = hits(data, "STORAGE010")
    assert str(h.severity) == "error" and h.path == ("storage", 0, "export")
    assert f"exports {directory} of head01" in h.message


def test_a_planned_host_never_exports_its_root():
    data = lab()
    data["storage"][0]["export"] = "head01:/"
    (h,) = hits(data, "STORAGE010")
    assert "a host of the blueprint" in h.message


@pytest.mark.parametrize("export", ["head01:/export/home", "nas01:/", "10.2.1.4:/home", "nas01:/srv/nfs/home"])
def test_an_export_directory_made_for_it_or_an_appliances_root_is_fine(export):
    data = lab()
    data["storage"][0]["export"] = export
    assert hits(data, "STORAGE010") == []


def test_the_two_rules_cannot_be_suppressed():
    from clusterctl.rules.registry import all_rules

    assert {r.code: r.suppressible for r in all_rules() if r.code in ("ADDR007", "STORAGE010")} == {
        "ADDR007": False, "STORAGE010": False}
