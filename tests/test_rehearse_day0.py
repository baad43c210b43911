"""The day0 scenario's pieces that need no boot (docs/rehearse.md, "The day0 scenario"): its needs and nodes on
lab-ha, the parsers of its checks (chronyc, dig, Kea's status-get), the power log the emulated BMCs drive, the
vault file of the BMC play, and the node machinery's refusals (a bad MAC, a BMC address this machine has)."""

from __future__ import annotations

import json
import stat

import pytest
import yaml

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node import bmc_net, lifecycle
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario import day0_bmc
from clusterctl.rehearse.scenario.day0_bmc import PowerLog, bmc_addresses, write_vault
from clusterctl.rehearse.scenario.day0_checks import (
    Name,
    answer_problems,
    dig_batch,
    ha_problems,
    ha_summary,
    parse_answers,
    parse_sources,
    time_problems,
)
from clusterctl.rehearse import suite
from clusterctl.targets import render_targets
from tests.helpers import BLUEPRINTS, plan_of, shipped

SOURCES = """\
MS Name/IP address         Stratum Poll Reach LastRx Last sample
===============================================================================
^* 10.33.0.19                   10   6   377    23     +1ns[   +2ns] +/-  120us
^? 10.33.0.20                    0   6     0     -     +0ns[   +0ns] +/-    0ns
=+ 10.33.0.21                   10   6    17     5   -12us[  -12us] +/-  300us
"""

STATUS_GET = {"result": 0, "arguments": {"pid": 12, "high-availability": [{
    "ha-mode": "hot-standby",
    "ha-servers": {"local": {"role": "primary", "scopes": ["head01"], "state": "hot-standby"},
                   "remote": {"age": 3, "in-touch": True, "role": "standby", "last-scopes": [],
                              "last-state": "hot-standby", "communication-interrupted": False}}}]}}


def test_chronyc_sources_are_parsed_and_compared_with_the_plan():
    sources = parse_sources(SOURCES)
    assert [(s.mode, s.state, s.address) for s in sources] == [
        ("^", "*", "10.33.0.19"), ("^", "?", "10.33.0.20"), ("=", "+", "10.33.0.21")]
    assert time_problems("n", sources[:2], servers=["10.33.0.19", "10.33.0.20"],
                         selected_from=["10.33.0.19", "10.33.0.20"]) == []
    assert time_problems("n", sources, servers=["10.33.0.19"], peers=["10.33.0.22"]) == [
        "n: no peer 10.33.0.22 in chronyc sources", "n: sources not planned: =10.33.0.21, ^10.33.0.20"]
    assert time_problems("n", sources[1:2], servers=["10.33.0.20"], selected_from=["10.33.0.20"]) == [
        "n: has selected none of 10.33.0.20 (^?10.33.0.20)"]


def test_dig_answers_are_parsed_and_every_name_checked_both_ways():
    names = [Name("gpu01.lab-ha.internal", "10.10.0.17"), Name("gpu01-bmc.lab-ha.internal", "10.11.0.17")]
    assert dig_batch("10.10.0.19", names[:1]) == (
        "@10.10.0.19 +noall +answer +time=1 +tries=2 gpu01.lab-ha.internal. A\n"
        "@10.10.0.19 +noall +answer +time=1 +tries=2 -x 10.10.0.17\n")
    forward, reverse = parse_answers(
        "gpu01.lab-ha.internal.\t3600\tIN\tA\t10.10.0.17\n"
        "17.0.10.10.in-addr.arpa.\t3600\tIN\tPTR\tgpu01.lab-ha.internal.\n"
        "gpu01-bmc.lab-ha.internal.\t3600\tIN\tA\t10.11.0.99\n"
        ";; communications error to 10.10.0.19#53: timed out\n")
    assert forward == {"gpu01.lab-ha.internal": {"10.10.0.17"}, "gpu01-bmc.lab-ha.internal": {"10.11.0.99"}}
    assert reverse == {"10.10.0.17": {"gpu01.lab-ha.internal"}}
    assert answer_problems(names, forward, reverse, "head01") == [
        "head01: gpu01-bmc.lab-ha.internal -> ['10.11.0.99'], planned 10.11.0.17",
        "head01: 10.11.0.17 -> no PTR, planned gpu01-bmc.lab-ha.internal"]


def test_kea_status_get_gives_the_ha_relationship():
    summary = ha_summary(STATUS_GET)
    assert summary == {"mode": "hot-standby", "role": "primary", "state": "hot-standby", "partner_role": "standby",
                       "partner_state": "hot-standby", "in_touch": True}
    assert ha_problems("head01", summary) == []
    waiting = {**summary, "state": "waiting", "in_touch": False}
    assert ha_problems("head01", waiting) == ["head01: hot-standby: state 'waiting', not in touch with its partner"]
    assert ha_problems("head02", ha_summary({"result": 0, "arguments": {}})) == [
        "head02: Kea reports no high-availability relationship"]


def _lab_ha_day0(tmp_path):
    path = BLUEPRINTS / "lab-ha.yaml"
    return suite.build(["deploy", "failover", "day0"], path, plan_of(shipped("lab-ha")), tmp_path / "r", 1,
                       render_targets)


def test_day0_on_lab_ha_boots_each_node_with_its_inventory_mac_and_runs_after_failover(tmp_path):
    reh = _lab_ha_day0(tmp_path)
    assert [(s.name, s.mac) for s in reh.specs] == [
        ("head01", "02:00:0a:0a:00:03"), ("head02", "02:00:0a:0a:00:04"), ("login01", "02:00:0a:0a:00:05"),
        ("gpu01", "02:00:0a:0a:00:01")]
    assert [s.name for s in reh.steps][-6:] == [
        "failover: failover", "day0: services", "day0: bmc", "day0: dhcp", "day0: dns", "day0: time"]
    assert reh.info["scenarios"] == {"deploy": "run", "failover": "run", "day0": "run"}


def test_day0_needs_an_inventory_and_two_controllers():
    with pytest.raises(RehearsalError, match="^the day0 scenario needs a blueprint with a backup controller: one "
                                             r"Slurm controller \(slurm.controllers names no backup\)$"):
        suite.choose("day0", plan_of(shipped("lab-2node")))
    data = shipped("lab-ha")
    del data["site"]["inventory"]
    with pytest.raises(RehearsalError, match="^the day0 scenario needs an inventory with the compute hosts' in-band "
                                             r"MACs: the blueprint names no inventory \(hosts' MACs\)$"):
        suite.choose("day0", plan_of(data))


def test_the_bmcs_are_the_planned_bmc_addresses_of_the_booted_hosts():
    assert bmc_addresses(plan_of(shipped("lab-ha")), ["gpu01", "head01"]) == {
        "gpu01": "10.11.0.17", "head01": "10.11.0.19"}


def test_a_bmc_power_action_powers_the_node_off_and_on_in_its_own_thread(monkeypatch):
    calls = []
    monkeypatch.setattr(day0_bmc.lifecycle, "power_off", lambda state, host: calls.append(("off", host)))
    monkeypatch.setattr(day0_bmc.lifecycle, "power_on",
                        lambda state, host, inband_address: calls.append(("on", host, inband_address)))
    log = PowerLog()
    log.handler(None)("gpu01", "restart")
    assert log.wait("gpu01", 10)
    assert calls == [("off", "gpu01"), ("on", "gpu01", False)]  # back without an address: it waits for DHCP
    assert log.describe() == "gpu01 restart"
    assert not log.wait("head01", 0.1)


def test_a_failed_power_action_is_reported_not_lost(monkeypatch):
    def refuse(state, host):
        raise RehearsalError(f"node {host} did not stop within 23 s")

    monkeypatch.setattr(day0_bmc.lifecycle, "power_off", refuse)
    log = PowerLog()
    log.handler(None)("gpu01", "restart")
    assert not log.wait("gpu01", 10)
    assert log.describe() == "gpu01 restart; gpu01 restart: node gpu01 did not stop within 23 s"


def test_the_bmc_credentials_reach_the_play_only_in_a_vault_file(tmp_path):
    from ansible.parsing.vault import VaultLib, VaultSecret

    creds = tmp_path / "credentials.json"
    creds.write_text(json.dumps({"user": "rehearsal", "password": "s3cret-Pa55word"}))
    creds.chmod(0o600)
    state = State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.33.0.254/24", prefix=24,
                  key="", known_hosts="", ssh_config="")
    vault, password = write_vault(state, plan_of(shipped("lab-ha")), creds)
    for f in (vault, password):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert "s3cret-Pa55word" not in vault.read_text() and vault.read_text().startswith("$ANSIBLE_VAULT;1.1;AES256")
    key = password.read_text().strip().encode()
    opened = yaml.safe_load(VaultLib([("default", VaultSecret(key))]).decrypt(vault.read_text()))
    assert opened == {"vault_bmc_lab": {"user": "rehearsal", "password": "s3cret-Pa55word"}}


def test_a_node_mac_must_be_canonical_and_unique(tmp_path):
    specs = [lifecycle.NodeSpec("a", "10.99.0.1", mac="02:00:00:00:00:01"),
             lifecycle.NodeSpec("b", "10.99.0.2", mac="02:00:00:00:00:01")]
    with pytest.raises(RehearsalError, match="MAC addresses must be unique"):
        lifecycle.boot(tmp_path / "r", specs)
    with pytest.raises(RehearsalError, match="MAC addresses must be unique and aa:bb:cc:dd:ee:ff"):
        lifecycle.boot(tmp_path / "r", [lifecycle.NodeSpec("a", "10.99.0.1", mac="02-00-00-00-00-01")])
    assert not (tmp_path / "r").exists()


def test_a_bmc_address_this_machine_has_is_refused_before_anything_is_made(tmp_path):
    state = State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.33.0.254/24", prefix=24,
                  key="", known_hosts="", ssh_config="")
    with pytest.raises(RehearsalError, match=r"^BMC address\(es\) 127.0.0.1 are already on this machine"):
        bmc_net.add(state, ["127.0.0.1"])
    assert state.bmc_interface == "" and bmc_net.interface_name("abc123") == "rb-abc123"
    assert bmc_net.remove(state) == []
