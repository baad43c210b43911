"""The per-host inventory CSV (docs/inventory.md; issue 28's "hostile inventory" acceptance): every hostile or
malformed value is a located error (FILE.csv:LINE:COL) with exit 2 through the real CLI, for validate and render,
and render writes nothing; the accepted MAC spellings become one canonical form; ``inventory template`` keeps the
rows a site filled in. The CLI runs in-process (typer's runner on the real app): a subprocess per case would cost
a second each."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterctl.blueprint.inventory_csv import canonical_mac, parse_inventory_text, read_inventories
from clusterctl.cli import app
from clusterctl.errors import BlueprintError
from clusterctl.blueprint.load import load_blueprint
from clusterctl.location import SourceMap
from clusterctl.plan import expand
from clusterctl.plan.host_identity import device_macs, host_identities
from tests.helpers import BLUEPRINTS

HEADER = "host,serial,inband_mac,bmc_mac,bmc_secret\n"
GOOD = ("gpu01,SN01,02:00:00:00:00:01,02:00:00:00:01:01,vault_bmc_lab\n"
        "gpu02,SN02,02:00:00:00:00:02,02:00:00:00:01:02,vault_bmc_lab\n")


def lab_ha(tmp_path: Path, csv: str | bytes) -> Path:
    """lab-ha in ``tmp_path`` with ``csv`` as its inventory file."""
    shutil.copy(BLUEPRINTS / "lab-ha.yaml", tmp_path / "lab-ha.yaml")
    target = tmp_path / "lab-ha-inventory.csv"
    target.write_bytes(csv) if isinstance(csv, bytes) else target.write_text(csv)
    return tmp_path / "lab-ha.yaml"


def refused(tmp_path: Path, csv: str | bytes) -> str:
    """The stderr of ``validate`` (exit 2) after checking ``render`` refuses the same inventory the same way and
    writes nothing."""
    blueprint = lab_ha(tmp_path, csv)
    checked = CliRunner().invoke(app, ["validate", str(blueprint)])
    assert checked.exit_code == 2, checked.output
    out = tmp_path / "out"
    rendered = CliRunner().invoke(app, ["render", str(blueprint), "-o", str(out)])
    assert rendered.exit_code == 2, rendered.output
    assert not out.exists()
    assert "Traceback" not in checked.output + rendered.output
    assert rendered.stderr == checked.stderr
    return checked.stderr


def test_hostile_cells_are_each_located_in_one_run(tmp_path):
    csv = HEADER + ('gpu01,SN"1,02:00:00:00:00:01,,admin:secret\n'  # quote in a serial, credentials as a secret
                    "gpu02,SN 2,01:00:5e:00:00:01,ff:ff:ff:ff:ff:ff,\n"  # space, multicast, broadcast
                    "head01,,00:00:00:00:00:00,02:00:00:00:00:0g,vault_\n"  # all zero, not hex, empty variable name
                    "head02,SN-" + "x" * 70 + ",02:00:00:00:00:04:05,02:00:00:00:00:06,vault_bmc_lab\n")
    err = refused(tmp_path, csv)
    where = f"{tmp_path}/lab-ha-inventory.csv"
    expected = [
        (f"{where}:2:7", "serial 'SN\"1' may not contain a double quote (\")"),
        (f"{where}:2:31", "bmc_secret looks like user:password (the value is not shown: it may be a credential)"),
        (f"{where}:3:7", "serial 'SN 2' may not contain a space"),
        (f"{where}:3:12", "inband_mac '01:00:5e:00:00:01' is a multicast address (the first octet is odd)"),
        (f"{where}:3:30", "bmc_mac 'ff:ff:ff:ff:ff:ff' is the broadcast address"),
        (f"{where}:4:9", "inband_mac '00:00:00:00:00:00' is all zero"),
        (f"{where}:4:27", "bmc_mac '02:00:00:00:00:0g' may not contain 'g'"),
        (f"{where}:4:45", "bmc_secret is not the name of an ansible-vault variable"),
        (f"{where}:5:8", "serial 'SN-xxxxxxxxxx"),
        (f"{where}:5:82", "inband_mac '02:00:00:00:00:04:05' is not a MAC address"),
    ]
    for at, message in expected:
        assert f"--> {at}\n" in err and message in err, (at, message, err)
    assert "admin:secret" not in err and "secret" not in err.split("bmc_secret")[0]
    assert "********" in err  # the line is shown with the refused secret masked
    assert 'docs/ansible.md, "Secrets"' in err
    assert err.count("error[BP009]") == 10


@pytest.mark.parametrize("host,shown", [("gpu\x1b01", "U+001B ESCAPE"), ("gpu\u202e10", "U+202E RIGHT-TO-LEFT OVERRIDE")])
def test_a_host_with_a_hidden_character_is_refused_where_it_is(tmp_path, host, shown):
    err = refused(tmp_path, HEADER + GOOD + f"{host},,,,\n")
    assert f"--> {tmp_path}/lab-ha-inventory.csv:4:4\n" in err and shown in err and "error[BP008]" in err
    assert "\x1b" not in err and "\u202e" not in err


def test_credentials_are_never_printed_whatever_else_is_wrong_on_their_line(tmp_path):
    """A password in bmc_secret on a line refused for a hidden character or a long line is masked too."""
    err = refused(tmp_path, HEADER + GOOD + "head01,\x1b,,,root:hunter2\n")
    assert "error[BP008]" in err and "head01,\\x1b,,,********" in err and "hunter2" not in err
    err = refused(tmp_path, HEADER + GOOD + "head01," + "x" * 600 + ",,,root:hunter2\n")
    assert "error[BP007]" in err and "hunter2" not in err


def test_duplicates_name_both_lines(tmp_path):
    csv = HEADER + GOOD + ("head01,,02:00:00:00:00:01,,\n"  # gpu01's in-band MAC again
                           "head02,,02:00:00:00:00:09,02:00:00:00:00:09,\n"  # one MAC for both ports
                           "gpu02,,,,\n")  # a second row for gpu02
    err = refused(tmp_path, csv)
    where = f"{tmp_path}/lab-ha-inventory.csv"
    assert f"--> {where}:4:9\n" in err and f"inband_mac 02:00:00:00:00:01 is also at {where}:2 (inband_mac)" in err
    assert f"--> {where}:5:27\n" in err and f"bmc_mac 02:00:00:00:00:09 is also at {where}:5 (inband_mac)" in err
    assert f"--> {where}:6:1\n" in err and f"host gpu02 has a second row; the first is at {where}:3" in err


def test_a_host_that_is_not_planned_gets_a_suggestion(tmp_path):
    err = refused(tmp_path, HEADER + GOOD + "gpu03,,,,\nhaed01,,,,\n")
    where = f"{tmp_path}/lab-ha-inventory.csv"
    assert f"--> {where}:4:1\n" in err and "host gpu03 is neither a planned host nor a management device" in err
    assert f"--> {where}:5:1\n" in err and "did you mean 'head01'?" in err and "error[BP004]" in err


HEADER6 = "host,serial,inband_mac,bmc_mac,bmc_secret,mgmt_mac\n"


def test_management_devices_rows_give_their_mgmt_mac(tmp_path):
    """A switch, a PDU by its DNS name: accepted, their MACs in canonical form, kept apart from the hosts'."""
    blueprint = lab_ha(tmp_path, HEADER6 + "gpu01,SN01,02:00:00:00:00:01,,,\n"
                                          "ib-leaf01,SW01,,,,02-00-00-00-0C-01\nlab01-pdu2,,,,,02:00:00:00:0c:02\n")
    plan = expand(load_blueprint(blueprint))
    assert device_macs(plan) == {"ib-leaf01": "02:00:00:00:0c:01", "lab01-pdu2": "02:00:00:00:0c:02"}
    assert list(host_identities(plan)) == ["gpu01"]


def test_a_device_row_with_a_hosts_cell_and_a_host_row_with_mgmt_mac_are_refused_where_they_are(tmp_path):
    err = refused(tmp_path, HEADER6 + "gpu01,,,,,02:00:00:00:0c:09\n"  # a host with a device's MAC
                                      "ib-leaf01,,,02:00:00:00:0b:01,vault_bmc_lab,02:00:00:00:0c:01\n")
    where = f"{tmp_path}/lab-ha-inventory.csv"
    assert f"--> {where}:2:11\n" in err and "mgmt_mac on host gpu01's row: only a management device's row" in err
    assert f"--> {where}:3:13\n" in err and ("bmc_mac on ib-leaf01's row: ib-leaf01 is a management device, whose row "
                                             "gives only its mgmt_mac (and serial)") in err
    assert f"--> {where}:3:31\n" in err and "bmc_secret on ib-leaf01's row" in err
    assert err.count("error[BP009]") == 3


def test_an_unknown_device_gets_a_suggestion_among_the_devices(tmp_path):
    err = refused(tmp_path, HEADER6 + "lab01-pdu3,,,,,02:00:00:00:0c:01\nib-laef01,,,,,02:00:00:00:0c:02\n")
    where = f"{tmp_path}/lab-ha-inventory.csv"
    assert f"--> {where}:2:1\n" in err and "host lab01-pdu3 is neither a planned host nor a management device" in err
    assert "did you mean 'lab01-pdu2'?" in err  # pdu1 is as close: difflib takes the later
    assert f"--> {where}:3:1\n" in err and "did you mean 'ib-leaf01'?" in err and "error[BP004]" in err


def test_a_10_mb_inventory_is_refused_unread(tmp_path):
    row = "gpu01,SN01,02:00:00:00:00:01,02:00:00:00:01:01,vault_bmc_lab\n"
    err = refused(tmp_path, (HEADER + row * (10_000_000 // len(row) + 1)).encode())
    assert f"--> {tmp_path}/lab-ha-inventory.csv:1:1\n" in err
    assert "inventory file is larger than the input limit of 8,388,608 bytes" in err
    assert "list several files in site.inventory" in err


def test_a_long_line_and_an_unknown_column_are_refused(tmp_path):
    err = refused(tmp_path, HEADER + GOOD + "gpu01," + "a" * 600 + ",,,\n")
    assert f"--> {tmp_path}/lab-ha-inventory.csv:4:513\n" in err and "line of 609 characters, more than 512" in err
    err = refused(tmp_path, "host,serial,inband_mac,bmc_mac,bmc_secrt\n")
    assert f"--> {tmp_path}/lab-ha-inventory.csv:1:32\n" in err and "unknown column 'bmc_secrt'" in err
    assert "did you mean 'bmc_secret'?" in err


def test_an_inventory_outside_the_blueprint_directory_is_refused(tmp_path):
    blueprint = lab_ha(tmp_path, HEADER + GOOD)
    (tmp_path / "lab-ha-inventory.csv").unlink()
    (tmp_path / "lab-ha-inventory.csv").symlink_to(BLUEPRINTS / "lab-ha-inventory.csv")
    r = CliRunner().invoke(app, ["validate", str(blueprint)])
    assert r.exit_code == 2 and "site.inventory[0] lab-ha-inventory.csv is a symlink that leads out of" in r.stderr
    (tmp_path / "lab-ha-inventory.csv").unlink()
    (tmp_path / "lab-ha-inventory.csv").write_text(HEADER + GOOD)
    (tmp_path / "again.csv").symlink_to("lab-ha-inventory.csv")
    blueprint.write_text(blueprint.read_text().replace("[lab-ha-inventory.csv]", "[lab-ha-inventory.csv, again.csv]"))
    r = CliRunner().invoke(app, ["validate", str(blueprint)])
    assert r.exit_code == 2 and "site.inventory[1] again.csv is the file lab-ha-inventory.csv again" in r.stderr
    text = blueprint.read_text().replace("[lab-ha-inventory.csv, again.csv]", "[../lab-ha-inventory.csv]")
    blueprint.write_text(text)
    r = CliRunner().invoke(app, ["validate", str(blueprint)])
    assert r.exit_code == 2 and "site.inventory[0] is '../lab-ha-inventory.csv'" in r.stderr


def test_duplicates_across_files_name_the_other_file(tmp_path):
    (tmp_path / "a.csv").write_text(HEADER + "gpu01,,02:00:00:00:00:01,,\n")
    (tmp_path / "b.csv").write_text(HEADER + "gpu02,,,02-00-00-00-00-01,\ngpu01,,,,\n")
    with pytest.raises(BlueprintError) as exc:
        read_inventories(["a.csv", "b.csv"], tmp_path, SourceMap("bp.yaml", []))
    assert exc.value.source.file == f"{tmp_path}/b.csv"
    assert [(p.position.line, p.position.col, p.message) for p in exc.value.problems] == [
        (2, 9, f"bmc_mac 02:00:00:00:00:01 is also at {tmp_path}/a.csv:2 (inband_mac)"),
        (3, 1, f"host gpu01 has a second row; the first is at {tmp_path}/a.csv:2")]


@pytest.mark.parametrize("spelling", ["02:AB:cd:00:00:01", "02-AB-CD-00-00-01", "02ab.cd00.0001"])
def test_the_three_mac_spellings_become_lower_case_colon_form(spelling):
    assert canonical_mac(spelling) == ("02:ab:cd:00:00:01", "")


def test_spreadsheet_details_are_read():
    """A byte order mark, CRLF line ends, comments, blank lines, spaces around cells, columns in any order."""
    inv = parse_inventory_text("\ufeff# from the delivery list\r\nbmc_mac , host\r\n\r\n02-00-00-00-01-01 , gpu01\r\n",
                               "x.csv")
    assert inv.columns == ("bmc_mac", "host")
    (row,) = inv.rows
    assert (row.line, row.host, row.host_col, row.bmc_mac, row.inband_mac) == (4, "gpu01", 21, "02:00:00:00:01:01", None)
    with pytest.raises(BlueprintError) as exc:
        parse_inventory_text("host,serial\ngpu01\n", "x.csv")
    assert [p.message for p in exc.value.problems] == ["1 cells, the header names 2 columns"]


def test_the_template_keeps_filled_rows_and_adds_planned_hosts(tmp_path):
    blueprint = lab_ha(tmp_path, HEADER + "gpu02,SN02,02-00-00-00-00-02,,vault_bmc_lab\n")
    r = CliRunner().invoke(app, ["inventory", "template", str(blueprint)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[4:] == [  # the hosts, then the management devices (switches, PDUs)
        "host,serial,inband_mac,bmc_mac,bmc_secret,mgmt_mac", "gpu01,,,,,", "gpu02,SN02,02:00:00:00:00:02,,vault_bmc_lab,",
        "head01,,,,,", "head02,,,,,", "login01,,,,,", "ib-leaf01,,,,,", "mgmt-leaf01,,,,,", "lab01-pdu1,,,,,",
        "lab01-pdu2,,,,,"]
    own = tmp_path / "lab-ha-inventory.csv"  # the blueprint's own inventory is rewritten in place
    own.write_text(HEADER6 + "head01,SN-H1,,,,\nlab01-pdu1,PDU-1,,,,02:00:00:00:0c:01\n")
    r = CliRunner().invoke(app, ["inventory", "template", str(blueprint)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[7:] == ["head01,SN-H1,,,,", "head02,,,,,", "login01,,,,,", "ib-leaf01,,,,,",
                                         "mgmt-leaf01,,,,,", "lab01-pdu1,PDU-1,,,,02:00:00:00:0c:01", "lab01-pdu2,,,,,"]
    r = CliRunner().invoke(app, ["inventory", "template", str(blueprint), "-o", str(own), "--group", "head"])
    assert r.exit_code == 0, r.output  # limited to node groups: no device rows
    assert own.read_text().splitlines()[4:] == ["host,serial,inband_mac,bmc_mac,bmc_secret,mgmt_mac", "head01,SN-H1,,,,",
                                                "head02,,,,,"]
    other = tmp_path / "other.csv"
    other.write_text("keep me\n")
    r = CliRunner().invoke(app, ["inventory", "template", str(blueprint), "-o", str(other)])
    assert r.exit_code == 2 and f"error: {other} exists" in r.stderr and other.read_text() == "keep me\n"
