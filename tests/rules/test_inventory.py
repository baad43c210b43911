"""Inventory coverage rules: lab-ha with its shipped inventory is quiet; hosts without rows and rows without MACs
are each one finding with the counts and a host sample; management devices without a MAC are counted in the
latter."""

from __future__ import annotations

import pytest

from tests import helpers
from tests.helpers import hits, shipped

INVENTORY = ("INVENTORY001", "INVENTORY002")
HEADER = "host,serial,inband_mac,bmc_mac,bmc_secret\n"
HEADER6 = "host,serial,inband_mac,bmc_mac,bmc_secret,mgmt_mac\n"


@pytest.fixture
def own_inventory(tmp_path, monkeypatch):
    """lab-ha reading ``inventory.csv`` from a directory of the test's own (write the CSV text to return value)."""
    monkeypatch.setattr(helpers, "INVENTORY_DIR", tmp_path)
    data = shipped("lab-ha")
    data["site"]["inventory"] = ["inventory.csv"]
    return data, tmp_path / "inventory.csv"


def test_lab_ha_with_its_inventory_and_a_blueprint_without_one_are_quiet():
    for code in INVENTORY:
        assert hits(shipped("lab-ha"), code) == [], code
        assert hits(shipped("lab-2node"), code) == [], code


def test_hosts_without_a_row_are_one_warning_with_count_and_sample():
    data = shipped("lab-ha")
    data["node_groups"][0].update(count=12, hostnames="gpu[01-12]")  # gpu03-12 have no row
    (h,) = hits(data, "INVENTORY001")
    assert h.path == ("site", "inventory") and h.severity.name == "WARNING"
    assert h.message == "10 of 15 planned on-prem hosts have no inventory row: gpu[03-10] and 2 more"


def test_rows_without_macs_count_each_port(own_inventory):
    data, csv = own_inventory
    csv.write_text(HEADER + "gpu01,,,02:00:00:00:01:01,\ngpu02,,02:00:00:00:00:02,,\nhead01,,,,\n"
                            "head02,,02:00:00:00:00:04,02:00:00:00:01:04,\nlogin01,,02:00:00:00:00:05,02:00:00:00:01:05,\n")
    (h,) = hits(data, "INVENTORY002")  # a file without mgmt_mac: every device counted too
    assert h.message == ("of 5 inventory rows, 2 without inband_mac: gpu01,head01; 2 without bmc_mac: gpu02,head01; "
                         "4 of 4 management devices without mgmt_mac: ib-leaf01,mgmt-leaf01,lab01-pdu[1-2]")
    assert h.path == ("site", "inventory") and h.severity.name == "WARNING"
    assert hits(data, "INVENTORY001") == []
    csv.write_text(HEADER6 + "gpu01,,02:00:00:00:00:01,02:00:00:00:01:01,,\nib-leaf01,,,,,02:00:00:00:0c:01\n"
                             "lab01-pdu2,SN-P2,,,,\n")  # hosts' rows full; a device with a row but no MAC
    (h,) = hits(data, "INVENTORY002")
    assert h.message == "3 of 4 management devices without mgmt_mac: mgmt-leaf01,lab01-pdu[1-2]"
    csv.write_text(HEADER6 + "gpu01,,02:00:00:00:00:01,02:00:00:00:01:01,,\nib-leaf01,,,,,02:00:00:00:0c:01\n"
                             "mgmt-leaf01,,,,,02:00:00:00:0c:02\nlab01-pdu1,,,,,02:00:00:00:0c:03\n"
                             "lab01-pdu2,,,,,02:00:00:00:0c:04\n")  # every row full: only hosts' rows missing
    assert hits(data, "INVENTORY002") == []
    (h,) = hits(data, "INVENTORY001")
    assert h.message == "4 of 5 planned on-prem hosts have no inventory row: gpu02,head[01-02],login01"
