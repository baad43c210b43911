"""The slurm_preflight role's install source, run for real: a directory of .deb files becomes a local flat apt
repository with the version pin, and real apt then offers exactly the pinned package from it.

The role's source tasks (roles/slurm_preflight/tasks/source.yml) run through ansible-playbook on this machine with
``kind: debs``; the .deb files are this machine's own Slurm packages (Debian 12's slurm-wlm, from apt's cache or
``apt-get download``). So that nothing of this machine's apt changes, the sources and preferences files go to
temporary directories (the role's ``*_dir`` variables) and apt reads them with ``-o Dir::...`` options; the role's
own ``apt update`` is off for the same reason. A repository source (a network download of the key) is not run
here: its sources file is the same template, tested for the debs case, and its group_vars exactly in
tests/rules/test_slurm_install.py.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require, require_tool
from tests.helpers import REPO

PACKAGES = ("slurmd", "slurm-client", "libslurm38", "slurm-wlm-basic-plugins")


def _installed_version(package: str) -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        require(f"Debian package {package} is not installed")
    return r.stdout


@pytest.fixture(scope="module")
def debs(tmp_path_factory) -> tuple[Path, str]:
    for tool in ("ansible-playbook", "apt-get", "apt-ftparchive"):
        require_tool(tool)
    version = _installed_version("slurmd")
    out = tmp_path_factory.mktemp("slurm-debs")
    for name in PACKAGES:
        cached = sorted(glob.glob(f"/var/cache/apt/archives/{name}_{version.replace(':', '%3a')}_*.deb"))
        if cached:
            shutil.copy(cached[0], out)
        else:
            subprocess.run(["apt-get", "download", f"{name}={version}"], cwd=out, check=True, capture_output=True)
    return out, version


def _converge(tmp: Path, debs_dir: Path, version: str) -> str:
    play = tmp / "play.yml"
    play.write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.import_role:\n        name: slurm_preflight\n        tasks_from: source.yml\n")
    extra = (f'{{"slurm_preflight_install_source": "debs", "slurm_preflight_debs_dir": "{debs_dir}", '
             f'"slurm_preflight_install_version": "{version}", "slurm_preflight_apt_sources_dir": "{tmp / "src"}", '
             f'"slurm_preflight_apt_preferences_dir": "{tmp / "pref"}", "slurm_preflight_apt_update": false, '
             '"ansible_python_interpreter": "/usr/bin/python3"}')
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "roles"), "ANSIBLE_NOCOLOR": "1"}
    r = subprocess.run(["ansible-playbook", "-i", "localhost,", str(play), "-e", extra], capture_output=True,
                       text=True, env=env, timeout=300, cwd=tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return r.stdout


def test_debs_source_becomes_a_pinned_flat_repository(debs, tmp_path):
    debs_dir, version = debs
    for sub in ("src", "pref", "lists/partial", "cache/archives/partial"):
        (tmp_path / sub).mkdir(parents=True)
    first = _converge(tmp_path, debs_dir, version)
    assert "changed=3" in first  # Packages index, sources file, pin
    again = _converge(tmp_path, debs_dir, version)
    assert "changed=0" in again and "failed=0" in again

    assert (tmp_path / "src" / "clusterctl-slurm.sources").read_text().splitlines()[2:] == [
        "Types: deb", f"URIs: file:{debs_dir}", "Suites: ./", "Trusted: yes"]
    assert (tmp_path / "pref" / "clusterctl-slurm.pref").read_text().splitlines()[2:] == [
        "Package: slurm* libslurm* libpmi0* libpmi2-* libpam-slurm* libnss-slurm", f"Pin: version {version}",
        "Pin-Priority: 1001"]
    index = (debs_dir / "Packages").read_text()
    assert sorted(line.split(": ")[1] for line in index.splitlines() if line.startswith("Package: ")) == \
        sorted(PACKAGES)

    apt = ["-o", "Dir::Etc::sourcelist=/dev/null", "-o", f"Dir::Etc::sourceparts={tmp_path / 'src'}",
           "-o", f"Dir::Etc::preferencesparts={tmp_path / 'pref'}", "-o", f"Dir::State::Lists={tmp_path / 'lists'}",
           "-o", f"Dir::Cache={tmp_path / 'cache'}", "-o", "Dir::State::status=/dev/null"]
    subprocess.run(["apt-get", *apt, "update"], check=True, capture_output=True, timeout=120)
    policy = subprocess.run(["apt-cache", *apt, "policy", "slurmd"], check=True, capture_output=True,
                            text=True).stdout
    assert f"Candidate: {version}" in policy
    assert f"     {version} 1001\n        500 file:{debs_dir} ./ Packages" in policy
