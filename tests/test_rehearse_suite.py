"""The scenario registry and the loop that builds a rehearsal from it (clusterctl/rehearse/suite.py): which
scenarios ``--scenario all`` runs on each shipped lab blueprint and why it skips the others, what a named
choice refuses, and the steps a full run puts on one boot, in order."""

from __future__ import annotations

import ast
import inspect

import pytest

from clusterctl.rehearse import RehearsalError, suite
from clusterctl.rehearse.scenario.registry import ORDER, SCENARIOS
from tests.helpers import REPO, plan_of, shipped

ELASTIC = "not applicable: the compute nodes are elastic (State=CLOUD): they come up through the elastic scenario"


def test_the_registry_holds_every_scenario_in_the_documented_order():
    assert ORDER == ("version-guard", "deploy", "scratch", "node-failure", "monitoring", "failover", "users",
                     "db-failover", "day0", "pull", "elastic", "add-node")


def test_every_scenario_says_what_it_proves_and_declares_its_needs():
    for cls in SCENARIOS:
        assert cls.proves.strip() and cls.name in ORDER, cls
        assert all(need.what for need in cls.needs), cls
    needs = {cls.name: [n.what for n in cls.needs] for cls in SCENARIOS}
    assert needs["failover"] == ["compute nodes that are not elastic", "a blueprint with a backup controller",
                                 "StateSaveLocation on a shared storage tier", "Slurm and compute nodes"]
    assert needs["db-failover"] == ["compute nodes that are not elastic", "Slurm and compute nodes",
                                    "two slurmdbd hosts with their own replicating databases",
                                    "a backup controller with shared state when the accounting host is a controller"]
    assert needs["elastic"] == ["a cloud blueprint with an elastic node group"]
    assert needs["deploy"] == ["compute nodes that are not elastic"]


def _chosen(scenario, name):
    chosen, skipped, one = suite.choose(scenario, plan_of(shipped(name)))
    return [s.name for s in chosen], skipped, one


def test_all_on_lab_2node_skips_failover_and_elastic_with_their_reasons():
    assert _chosen("all", "lab-2node") == (
        ["version-guard", "deploy", "scratch", "node-failure", "monitoring", "pull", "add-node"],
        {"failover": "not applicable: one Slurm controller (slurm.controllers names no backup)",
         "users": "not applicable: no login node (a node group with role login)",
         "db-failover": "not applicable: the slurmdbd hosts are not a replicated pair (one slurmdbd, database_host, "
                        "or accounting_database: primary)",
         "day0": "not applicable: one Slurm controller (slurm.controllers names no backup)",
         "elastic": "not applicable: not a cloud blueprint with Slurm"}, "all")


def test_all_on_lab_ha_runs_failover():
    assert _chosen("all", "lab-ha")[0] == ["version-guard", "deploy", "scratch", "node-failure", "failover", "users",
                                           "db-failover", "day0", "pull", "add-node"]


def test_all_on_lab_cloud_runs_elastic_alone():
    assert _chosen("all", "lab-cloud") == (["elastic"], {n: ELASTIC for n in ORDER if n != "elastic"}, "all")


def test_named_scenarios_run_in_registry_order_without_the_filter():
    assert _chosen(["add-node", "deploy"], "lab-2node") == (["deploy", "add-node"], {}, "")
    assert _chosen("nodes", "lab-2node") == ([], {}, "nodes")


def test_a_named_elastic_scenario_needs_an_elastic_group():
    with pytest.raises(RehearsalError, match="^the elastic scenario needs a cloud blueprint with an elastic node "
                                             "group: not a cloud blueprint with Slurm$") as caught:
        suite.choose("elastic", plan_of(shipped("lab-2node")))
    assert caught.value.hint == "rehearse blueprints/lab-cloud.yaml, or set cloud.elastic: true on a compute group"


def test_build_is_a_loop_over_the_registry():
    """No scenario is named in build (each one's needs and hooks are its own), and nothing is imported inside."""
    source = inspect.getsource(suite.build)
    assert not any(f'"{name}"' in source for name in ORDER if name != "deploy")
    tree = ast.parse(inspect.getsource(suite))
    assert not [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
                if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert len(source.splitlines()) <= 80


def test_all_on_lab_ha_puts_every_scenario_on_one_boot_in_order(tmp_path):
    from clusterctl.targets import render_targets

    path = REPO / "blueprints" / "lab-ha.yaml"
    reh = suite.build("all", path, plan_of(shipped("lab-ha")), tmp_path / "r", 1, render_targets)
    assert [s.name for s in reh.steps] == [
        "ssh-check", "mirror", "version-guard: render", "version-guard: version-guard", "version-guard: render back",
        "scratch: standin", "node-failure: health-interval", "failover: failover-timeout", "users: directory", "db-failover: failover-timeout",
        "deploy: converge", "deploy: packages", "deploy: testinfra", "deploy: srun",  # converge-again: pull's round
        "scratch: scratch", "node-failure: health-setup", "node-failure: node-failure", "node-failure: prolog-failure",
        "failover: failover", "users: users", "db-failover: db-failover", "day0: services", "day0: bmc", "day0: dhcp",
        "day0: dns", "day0: time", "pull: pull-batch", "add-node: add-node"]
    assert [(s.name, [b[1] for b in s.binds]) for s in reh.specs] == [
        ("head01", ["/shared"]), ("head02", ["/shared"]), ("login01", []), ("gpu01", []), ("gpu03", [])]
    assert list(reh.info) == ["image", "slurm_version", "slurm_install", "rehearsed_as", "add_node_change", "version_guard",
                              "shared_storage", "second_application", "installed_packages", "scenarios"]
    assert reh.info["second_application"] == {"scenario": "pull", "hosts": ["gpu01", "head01", "head02", "login01"]}
    assert reh.info["image"] == {"name": "debian-12", "suite": "bookworm", "reason": "nearest to software.os ubuntu-22.04"}
    assert reh.info["scenarios"] == {"version-guard": "run", "deploy": "run", "scratch": "run", "node-failure": "run",
                                     "monitoring": "not applicable: no monitoring section",
                                     "failover": "run", "users": "run", "db-failover": "run", "day0": "run", "pull": "run", "add-node": "run",
                                     "elastic": "not applicable: not a cloud blueprint with Slurm"}


def test_install_is_deploy_without_the_second_converge_and_runs_alone(tmp_path):
    """A rehearsal of installing (a new image, another Slurm release): converge once, testinfra, srun."""
    from clusterctl.targets import render_targets

    path = REPO / "blueprints" / "lab-2node.yaml"
    reh = suite.build("install", path, plan_of(shipped("lab-2node")), tmp_path / "r", 1, render_targets)
    assert [s.name for s in reh.steps] == ["ssh-check", "mirror", "converge", "packages", "testinfra", "srun"]
    with pytest.raises(RehearsalError, match="runs alone"):
        suite.choose(["install", "pull"], plan_of(shipped("lab-2node")))
