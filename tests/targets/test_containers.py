"""Containers on a Slurm cluster (issue 11, item 4): pyxis on the login nodes, enroot's GPU hook from NVIDIA's
signed repository, and enroot's AppArmor profile on Ubuntu 24.04 only. enroot and pyxis are not installed on
this machine (no GPU, no NVIDIA repository): the rendered site.yml and group_vars, the role's parsed tasks and
its templates are checked exactly; tests/roles/test_hardware_roles.py runs the role in check mode."""

from __future__ import annotations

import jinja2
import yaml

from clusterctl.resources import data_dir
from clusterctl.targets import ansible
from clusterctl import yamlout
from tests.helpers import lab, plan_of, shipped

ROLE = data_dir("roles") / "enroot_pyxis"


def _tasks(name: str) -> list[dict]:
    return yaml.safe_load((ROLE / "tasks" / name).read_text())


def _task(name: str, title: str) -> dict:
    return next(t for t in _tasks(name) if t["name"].startswith(title))


def _when(task: dict) -> str:
    when = task.get("when", [])
    return " and ".join(when if isinstance(when, list) else [when])


def _render(template: str, **variables) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string((ROLE / "templates" / template).read_text()).render(ansible_managed="managed", **variables)


def test_login_nodes_get_pyxis_without_enroot():
    """srun --container-image runs pyxis's SPANK plugin where srun runs: the login play applies enroot_pyxis
    (before slurm_login), and the login group installs the plugin only."""
    files = ansible.render(plan_of(shipped("dgx-h100-superpod-4su")))
    site = yamlout.load(files["ansible/site.yml"])
    login = next(p for p in site if p["hosts"] == "login")
    assert [r["role"] for r in login["roles"]] == ["storage_clients", "enroot_pyxis", "slurm_login"]
    assert "ansible/roles/enroot_pyxis/tasks/main.yml" in files
    gv = yamlout.load(files["ansible/group_vars/login.yml"])
    assert gv["enroot_pyxis_install_enroot"] is False
    compute = yamlout.load(files["ansible/group_vars/dgx.yml"])
    assert "enroot_pyxis_install_enroot" not in compute  # the role's default (true) on GPU nodes


def test_login_nodes_get_no_pyxis_without_enroot():
    data = shipped("dgx-h100-superpod-4su")
    data["software"]["containers"] = "none"
    files = ansible.render(plan_of(data))
    login = next(p for p in yamlout.load(files["ansible/site.yml"]) if p["hosts"] == "login")
    assert [r["role"] for r in login["roles"]] == ["storage_clients", "slurm_login"]
    assert "enroot_pyxis_install_enroot" not in yamlout.load(files["ansible/group_vars/login.yml"])


def test_gpu_hook_installs_libnvidia_container_tools_from_the_signed_repository():
    key = _task("install.yml", "Download the libnvidia-container repository signing key")
    assert key["ansible.builtin.get_url"]["url"] == "{{ enroot_pyxis_nvidia_container_key_url }}"
    assert key["ansible.builtin.get_url"]["dest"] == "{{ enroot_pyxis__nvidia_container_keyring }}"
    repo = _task("install.yml", "Add the libnvidia-container repository")
    assert repo["ansible.builtin.template"] == {
        "src": "nvidia-container-toolkit.sources.j2", "dest": "/etc/apt/sources.list.d/nvidia-container-toolkit.sources",
        "owner": "root", "group": "root", "mode": "0644"}
    install = _task("install.yml", "Install enroot's GPU hook dependencies")
    assert install["ansible.builtin.apt"]["name"] == "{{ enroot_pyxis_nvidia_container_packages }}"
    assert "enroot_pyxis_gpu_hook" in _when(install) and "enroot_pyxis_install_enroot" in _when(install)
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    assert defaults["enroot_pyxis_nvidia_container_packages"] == ["libnvidia-container-tools"]
    assert defaults["enroot_pyxis_gpu_hook"] is True
    assert defaults["enroot_pyxis_nvidia_container_key_url"] == "https://nvidia.github.io/libnvidia-container/gpgkey"
    keyring = yaml.safe_load((ROLE / "vars/main.yml").read_text())["enroot_pyxis__nvidia_container_keyring"]
    text = _render("nvidia-container-toolkit.sources.j2",
                   enroot_pyxis__nvidia_container_repo="https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
                   enroot_pyxis__nvidia_container_keyring=keyring)
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "Types: deb",
        "URIs: https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
        "Suites: /",
        "Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc",
    ]
    # the repository, key and package come before pyxis (its build needs nothing of them) and after enroot
    names = [t["name"] for t in _tasks("install.yml")]
    assert names.index("Install enroot packages {{ enroot_pyxis__enroot_debs | join(' ') }}") < names.index(
        key["name"]) < names.index(repo["name"]) < names.index(install["name"])


def test_apparmor_profile_only_on_ubuntu_2404():
    """Ubuntu 24.04: enroot's AppArmor profile (userns for enroot-nsenter), not the sysctl that lifts the
    restriction for every program; other releases get neither."""
    data = lab()
    data["software"]["os"] = "ubuntu-24.04"
    all_vars = yamlout.load(ansible.render(plan_of(data))["ansible/group_vars/all.yml"])
    assert all_vars["enroot_pyxis_apparmor_profile"] is True
    assert "enroot_pyxis_userns_sysctl" not in all_vars
    for os_name in ("ubuntu-22.04", "debian-12"):
        data["software"]["os"] = os_name
        assert "enroot_pyxis_apparmor_profile" not in yamlout.load(
            ansible.render(plan_of(data))["ansible/group_vars/all.yml"])
    data["software"]["os"], data["software"]["containers"] = "ubuntu-24.04", "none"
    assert "enroot_pyxis_apparmor_profile" not in yamlout.load(ansible.render(plan_of(data))["ansible/group_vars/all.yml"])

    task = _task("configure.yml", "Write enroot's AppArmor profile")
    assert task["ansible.builtin.template"]["dest"] == "/etc/apparmor.d/enroot"
    assert _when(task) == "enroot_pyxis_install_enroot | bool and enroot_pyxis_apparmor_profile | bool"
    assert task["notify"] == "Load enroot's AppArmor profile"
    assert yaml.safe_load((ROLE / "defaults/main.yml").read_text())["enroot_pyxis_apparmor_profile"] is False
    handler = next(h for h in yaml.safe_load((ROLE / "handlers/main.yml").read_text())
                   if h["name"] == "Load enroot's AppArmor profile")
    assert handler["ansible.builtin.command"]["argv"] == ["apparmor_parser", "--replace", "--write-cache",
                                                         "/etc/apparmor.d/enroot"]
    profile = [line for line in _render("enroot.apparmor.j2").splitlines() if line and not line.startswith("#")]
    assert profile == ["abi <abi/4.0>,", "include <tunables/global>",
                       "/usr/bin/enroot-nsenter flags=(unconfined) {", "    allow userns create,",
                       "    include if exists <local/enroot>", "}"]
