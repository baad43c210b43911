"""The slurm_power_save role (controllers of blueprints with elastic node groups).

* site.yml applies it to the controllers' play, before slurm_controller (slurmctld disables power saving when
  ResumeProgram or SuspendProgram is not an executable file when it starts: power_save.c ``_valid_prog``), only when
  a group is elastic; group_vars/slurm_controllers.yml names the provider and the elastic groups as host ranges.
* It converges for real (ansible-playbook, connection local) with every install path moved into a temporary
  directory and placeholder program files in a render's cloud/bin/: the programs at their modes, the three links
  slurm.conf runs, stack.json 0644; a second converge changes nothing. A CLI found only under /snap/bin (GCP's
  Ubuntu images) is linked onto the PATH; a missing aws CLI stops the role with a message saying what to do.
* The Azure CLI's deb822 sources file (Microsoft's repository, Signed-By its key only) is checked as rendered; the
  install itself needs Microsoft's repository, which this machine cannot reach.

ansible-lint's production profile over every role: tests/integration/test_ansible_real.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jinja2
import pytest

from clusterctl.targets import render_targets
from clusterctl import yamlout
from tests.helpers import BLUEPRINTS, REPO, plan_of, shipped
from tests.roles import local_converge

ROLE = "slurm_power_save"
PROGRAMS = {"clusterctl-power-save": 0o755, "clusterctl-bootstrap": 0o755, "clusterctl_cloud_config.py": 0o644}
LINKS = ("clusterctl-resume", "clusterctl-suspend", "clusterctl-resume-fail")


def elastic_p5() -> dict:
    data = shipped("aws-p5")
    data["node_groups"][0]["cloud"] = {"elastic": True}
    return data


def test_site_applies_the_role_on_the_controllers_before_slurmctld():
    files = render_targets(plan_of(elastic_p5()), ["ansible"])
    site = yamlout.load(files["ansible/site.yml"])
    play = next(p for p in site if p["hosts"] == "slurm_controllers")
    assert [r["role"] for r in play["roles"]] == [ROLE, "slurm_controller"]
    assert f"ansible/roles/{ROLE}/tasks/main.yml" in files
    text = files["ansible/group_vars/slurm_controllers.yml"]
    assert 'slurm_power_save_provider: "aws"\nslurm_power_save_elastic_groups:\n  - {name: "gpu", hosts: "gpu[001-016]"}\n' \
        in text
    assert yamlout.load(text)["slurm_power_save_elastic_groups"] == [{"name": "gpu", "hosts": "gpu[001-016]"}]


ELASTIC = {"lab-cloud"}
"""shipped blueprints with an elastic node group"""


@pytest.mark.parametrize("name", sorted(ELASTIC))
def test_shipped_elastic_blueprints_get_the_role(name):
    files = render_targets(plan_of(shipped(name)), ["ansible"])
    assert f"- role: {ROLE}" in files["ansible/site.yml"]
    assert f"ansible/roles/{ROLE}/tasks/main.yml" in files


@pytest.mark.parametrize("name", sorted(p.stem for p in BLUEPRINTS.glob("*.yaml") if p.stem not in ELASTIC))
def test_static_blueprints_do_not_get_the_role(name):
    files = render_targets(plan_of(shipped(name)), ["ansible"])
    assert ROLE not in files["ansible/site.yml"]
    assert not any(p.startswith(f"ansible/roles/{ROLE}/") for p in files)
    assert "slurm_power_save" not in files.get("ansible/group_vars/slurm_controllers.yml", "")


def _render_dir(root: Path) -> Path:
    """A render's cloud/ directory with placeholder programs and a stack description."""
    cloud = root / "render" / "cloud"
    (cloud / "bin").mkdir(parents=True, exist_ok=True)
    for name in PROGRAMS:
        (cloud / "bin" / name).write_text(f"#!/usr/bin/python3\n# placeholder for {name}\n")
    (cloud / "stack.json").write_text(json.dumps({"version": 1, "cluster": "aws-p5", "provider": "aws",
                                                  "elastic": {"gpu": {"hostlist": "gpu[001-016]"}}}) + "\n")
    return cloud


def _converge(root: Path, provider: str = "aws", cli_dir: str = "path", **extra) -> subprocess.CompletedProcess:
    """Converge the role on localhost, every path under ``root``; the provider's CLI is a stand-in script in
    ``root/<cli_dir>`` (``path``: on the programs' PATH; ``snap``: only in the extra directory; None: nowhere)."""
    cloud = _render_dir(root)
    for d in ("path", "snap", "sbin", "etc"):
        (root / d).mkdir(exist_ok=True)
    cli = {"aws": "aws", "gcp": "gcloud", "azure": "az"}[provider]
    if cli_dir is not None:
        tool = root / cli_dir / cli
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    variables = {"clusterctl_render_dir": str(root / "render"), "slurm_power_save_provider": provider,
                 "slurm_power_save_elastic_groups": [{"name": "gpu", "hosts": "gpu[001-016]"}],
                 "slurm_power_save_src_dir": str(cloud), "slurm_power_save_bin_dir": str(root / "sbin"),
                 "slurm_power_save_stack": str(root / "etc" / "clusterctl" / "stack.json"),
                 "slurm_power_save_path": str(root / "path"), "slurm_power_save_cli_extra_dirs": [str(root / "snap")],
                 "slurm_power_save_cli_link_dir": str(root / "path"), "slurm_power_save_install_cli": False, **extra}
    return local_converge.converge(ROLE, root, variables)


@pytest.fixture(scope="module")
def converged(tmp_path_factory):
    root = tmp_path_factory.mktemp("power-save")
    first = _converge(root)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    second = _converge(root)
    return root, first, second


def test_programs_links_and_stack_are_installed(converged):
    root, *_ = converged
    sbin = root / "sbin"
    for name, mode in PROGRAMS.items():
        assert (sbin / name).read_text() == (root / "render" / "cloud" / "bin" / name).read_text()
        assert (sbin / name).stat().st_mode & 0o777 == mode
    for link in LINKS:
        assert os.readlink(sbin / link) == "clusterctl-power-save"
        assert os.access(sbin / link, os.X_OK)
    stack = root / "etc" / "clusterctl" / "stack.json"
    assert stack.read_text() == (root / "render" / "cloud" / "stack.json").read_text()
    assert stack.stat().st_mode & 0o777 == 0o644


def test_second_converge_changes_nothing(converged):
    _, first, second = converged
    assert local_converge.changed(first.stdout) > 0
    assert second.returncode == 0 and local_converge.changed(second.stdout) == 0, second.stdout[-3000:]


def test_a_cli_only_under_snap_is_linked_onto_the_path(tmp_path):
    result = _converge(tmp_path, provider="gcp", cli_dir="snap")
    assert result.returncode == 0, result.stdout[-3000:]
    assert os.readlink(tmp_path / "path" / "gcloud") == str(tmp_path / "snap" / "gcloud")
    again = _converge(tmp_path, provider="gcp", cli_dir="snap")
    assert again.returncode == 0 and local_converge.changed(again.stdout) == 0, again.stdout[-3000:]


def test_a_missing_cli_stops_the_role_with_what_to_do(tmp_path):
    result = _converge(tmp_path, provider="aws", cli_dir=None)
    assert result.returncode != 0
    assert "aws (the aws CLI the power-save program calls) is not on" in result.stdout
    assert "AWS Deep Learning AMI: aws" in result.stdout
    assert not (tmp_path / "sbin" / "clusterctl-power-save").exists()  # nothing installed before the check


def test_a_render_without_stack_json_stops_in_preflight(tmp_path):
    cloud = _render_dir(tmp_path)
    (cloud / "stack.json").unlink()
    result = _converge(tmp_path, slurm_power_save_src_dir=str(tmp_path / "elsewhere"))
    assert result.returncode != 0 and "the Pulumi program writes into the" in result.stdout


def test_azure_cli_sources_file_is_microsofts_signed_repository():
    text = (REPO / "roles" / ROLE / "templates" / "azure-cli.sources.j2").read_text()
    defaults = yamlout.load((REPO / "roles" / ROLE / "defaults" / "main.yml").read_text())
    out = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(
        ansible_managed="managed", ansible_facts={"distribution_release": "jammy", "architecture": "x86_64"},
        **{k: v for k, v in defaults.items() if k.startswith("slurm_power_save_azure_")})
    assert [line for line in out.splitlines() if not line.startswith("#")] == [
        "Types: deb", "URIs: https://packages.microsoft.com/repos/azure-cli/", "Suites: jammy", "Components: main",
        "Architectures: amd64", "Signed-By: /etc/apt/keyrings/microsoft.asc"]
    assert defaults["slurm_power_save_azure_key_url"] == "https://packages.microsoft.com/keys/microsoft.asc"
