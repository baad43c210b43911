"""The bmc target (clusterctl/targets/bmc.py, docs/bmc.md): each host's BMC name and planned address, its MAC and
the NAME of the vault variable holding its credentials, as bmc/inventory.csv and ansible/vars/bmc.yml, and the
Redfish play ansible/bmc.yml. The play itself runs against emulated BMCs in tests/integration/test_bmc_play.py."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan.expand import expand
from clusterctl.targets import bmc
from tests.helpers import BLUEPRINTS, plan_of, shipped


@pytest.fixture(scope="module")
def lab_ha() -> dict[str, str]:
    return bmc.render(expand(load_blueprint(BLUEPRINTS / "lab-ha.yaml")))


def test_lab_ha_inventory_csv_names_each_bmc_with_its_mac_and_secret_reference(lab_ha):
    assert lab_ha["bmc/inventory.csv"] == (
        "host,bmc_name,bmc_address,bmc_mac,secret_ref\n"
        "gpu01,gpu01-bmc,10.11.0.17,02:00:0a:0b:00:01,vault_bmc_lab\n"
        "gpu02,gpu02-bmc,10.11.0.18,02:00:0a:0b:00:02,vault_bmc_lab\n"
        "head01,head01-bmc,10.11.0.19,02:00:0a:0b:00:03,vault_bmc_lab\n"
        "head02,head02-bmc,10.11.0.20,02:00:0a:0b:00:04,vault_bmc_lab\n"
        "login01,login01-bmc,10.11.0.21,02:00:0a:0b:00:05,vault_bmc_lab\n")


def test_lab_ha_vars_are_the_same_endpoints_for_the_play(lab_ha):
    data = json.loads(lab_ha["ansible/vars/bmc.json"])
    assert data == {"clusterctl_bmcs": {
        "gpu01": {"name": "gpu01-bmc", "address": "10.11.0.17", "mac": "02:00:0a:0b:00:01", "secret": "vault_bmc_lab"},
        "gpu02": {"name": "gpu02-bmc", "address": "10.11.0.18", "mac": "02:00:0a:0b:00:02", "secret": "vault_bmc_lab"},
        "head01": {"name": "head01-bmc", "address": "10.11.0.19", "mac": "02:00:0a:0b:00:03",
                   "secret": "vault_bmc_lab"},
        "head02": {"name": "head02-bmc", "address": "10.11.0.20", "mac": "02:00:0a:0b:00:04",
                   "secret": "vault_bmc_lab"},
        "login01": {"name": "login01-bmc", "address": "10.11.0.21", "mac": "02:00:0a:0b:00:05",
                    "secret": "vault_bmc_lab"}}}
    assert lab_ha["ansible/vars/bmc.json"].splitlines()[:2] == [
        '{"clusterctl_bmcs": {',
        '    "gpu01": {"name": "gpu01-bmc", "address": "10.11.0.17", "mac": "02:00:0a:0b:00:01", "secret": '
        '"vault_bmc_lab"},']


def test_without_an_inventory_every_host_uses_the_default_reference_and_no_mac():
    files = bmc.render(plan_of(shipped("lab-2node")))
    assert files["bmc/inventory.csv"] == (
        "host,bmc_name,bmc_address,bmc_mac,secret_ref\n"
        "gpu01,gpu01-bmc,10.11.0.17,,vault_bmc_default\n"
        "gpu02,gpu02-bmc,10.11.0.18,,vault_bmc_default\n"
        "head01,head01-bmc,10.11.0.19,,vault_bmc_default\n")


@pytest.mark.parametrize("name", ["gcp-a3-mega", "lab-cloud"])
def test_a_plan_without_bmc_addresses_renders_no_bmc_file(name):
    assert bmc.render(plan_of(shipped(name))) == {}


def test_the_play_runs_on_the_control_host_with_uri_only_and_hides_every_request(lab_ha):
    plays = yaml.safe_load(lab_ha["ansible/bmc.yml"])
    assert len(plays) == 1
    play = plays[0]
    assert (play["hosts"], play["connection"], play["gather_facts"], play["vars_files"]) == (
        "all", "local", False, ["vars/bmc.json"])
    modules = [next(k for k in t if k.startswith("ansible.builtin.")) for t in play["tasks"]]
    assert modules == ["ansible.builtin.assert", "ansible.builtin.meta", "ansible.builtin.assert",
                       "ansible.builtin.uri", "ansible.builtin.assert", "ansible.builtin.uri",
                       "ansible.builtin.uri", "ansible.builtin.assert", "ansible.builtin.uri", "ansible.builtin.assert",
                       "ansible.builtin.uri", "ansible.builtin.debug"]
    defaults = play["module_defaults"]["ansible.builtin.uri"]
    assert (defaults["url_password"], defaults["force_basic_auth"]) == ("{{ bmc_credentials.password }}", True)
    for task in play["tasks"]:  # every request carries the password (module_defaults), so every one hides its result
        if "ansible.builtin.uri" in task:
            assert task["no_log"] is True, task["name"]
        else:  # the credentials check asks only whether the password is defined: it never renders it
            assert re.search(r"bmc_credentials\.password(?! is defined)", yaml.safe_dump(task)) is None, task["name"]
