"""The site mirror's parts that need no root and no network: its package list cannot drift from the roles, the
source a node gets, and where ``apt-cache policy`` says an installed package came from. The mirror built and
served for real: tests/e2e (every deploy rehearsal installs from it)."""

from __future__ import annotations

import re

import yaml

from clusterctl.rehearse.image.build import BASE_PACKAGES
from clusterctl.rehearse.image.catalog import IMAGES
from clusterctl.rehearse.mirror.packages import NOT_REHEARSED, mirror_packages
from clusterctl.rehearse.mirror.source import origins, sources_text
from clusterctl.rehearse.scenario.deploy import HARDWARE_ROLES
from clusterctl.rehearse.variant import Hardware, rehearsal_variant
from clusterctl.targets import render_targets
from tests.helpers import plan_of, shipped

HW = Hardware(sockets=1, cores_per_socket=2, threads_per_core=1, memory_mib=24105)
INSTALL_MODULES = ("ansible.builtin.apt", "ansible.builtin.package", "apt", "package")
VARIABLE = re.compile(r"^\{\{\s*(\w+)\s*(?:\|\s*default\(.*\)\s*)?\}\}$")
SHARED_HARDWARE_TASKS = ("ansible/roles/internal_common/tasks/cuda_repo.yml",)
"""shared tasks only hardware roles include (dcgm, nvidia_driver: the CUDA repository)"""


def _tasks(node):
    """Every task mapping of a task file, blocks included."""
    for task in node or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _variables(files: dict[str, str], role: str) -> dict:
    out = dict(yaml.safe_load(files.get(f"ansible/roles/{role}/defaults/main.yml", "")) or {})
    for path, text in files.items():
        if path.startswith("ansible/group_vars/"):
            out.update(yaml.safe_load(text) or {})
    return out


def _other_kind(when, kind: str) -> bool:
    """A task only for another Slurm install source (``when: slurm_preflight_install_source == 'repo'``)."""
    text = " ".join(when) if isinstance(when, list) else str(when or "")
    named = re.findall(r"slurm_preflight_install_source == '(\w+)'", text)
    return bool(named) and kind not in named


def installed_by_roles(files: dict[str, str]) -> tuple[str, set[str]]:
    """(the render's Slurm install kind, every package an apt/package task of a rehearsed role names for it)."""
    kind = yaml.safe_load(files["ansible/group_vars/all.yml"])["slurm_preflight_install_source"]
    found: set[str] = set()
    for path, text in files.items():
        m = re.match(r"ansible/roles/(\w+)/tasks/.+\.yml$", path)
        if not m or m.group(1) in HARDWARE_ROLES or path in SHARED_HARDWARE_TASKS:
            continue
        for task in _tasks(yaml.safe_load(text)):
            module = next((task[k] for k in INSTALL_MODULES if isinstance(task.get(k), dict)), None)
            if module is None or "name" not in module or _other_kind(task.get("when"), kind):
                continue
            names = module["name"]
            names = [names] if isinstance(names, str) else names
            for _ in range(3):  # a variable (with a default filter or not) -> its value, through role defaults
                expanded = []
                for n in names:
                    v = VARIABLE.match(n) if isinstance(n, str) else None
                    value = _variables(files, m.group(1)).get(v.group(1), n) if v else n
                    expanded += [value] if isinstance(value, str) else value
                names = expanded
            assert all(isinstance(n, str) and "{{" not in n for n in names), f"{path}: cannot read {names!r}"
            found |= {n.split("=")[0] for n in names}
    return kind, found


def rehearsed_render(name: str, install: dict | None = None) -> dict[str, str]:
    data = shipped(name)
    if install is not None:
        data["slurm"]["install"] = install
    v = rehearsal_variant(data, plan_of(data), IMAGES["debian-12"], HW)
    return render_targets(plan_of(v.data))


def test_the_mirror_holds_every_package_the_rehearsed_roles_install():
    for files in [render_targets(plan_of(shipped(n))) for n in ("lab-2node", "lab-ha", "lab-cloud")] + \
                 [rehearsed_render(n) for n in ("lab-2node", "lab-ha", "lab-cloud")] + \
                 [rehearsed_render(n, {"kind": "distro"}) for n in ("lab-2node", "lab-ha")]:
        kind, found = installed_by_roles(files)
        pmix = yaml.safe_load(files["ansible/group_vars/all.yml"]).get("slurm_pmix_packages", [])
        missing = found - set(mirror_packages(kind, pmix)) - set(NOT_REHEARSED) - set(BASE_PACKAGES)
        assert missing == set(), f"{kind}: roles install {sorted(missing)}, not in the site mirror's list"


def test_the_drift_check_reads_the_roles_packages():
    kind, found = installed_by_roles(rehearsed_render("lab-2node", {"kind": "distro"}))
    assert kind == "distro"
    assert {"slurmd", "slurmctld", "slurm-client", "slurmdbd", "munge", "chrony", "logrotate", "mariadb-server",
            "nfs-common", "libpam-slurm-adopt"} <= found
    kind, found = installed_by_roles(render_targets(plan_of(shipped("lab-2node"))))
    assert kind == "debs"
    assert {"slurm-smd-slurmd", "slurm-smd-slurmctld", "slurm-smd-client", "apt-utils"} <= found


def test_a_package_the_roles_add_but_the_mirror_lacks_is_found():
    files = rehearsed_render("lab-2node", {"kind": "distro"})
    files["ansible/roles/common/defaults/main.yml"] = files["ansible/roles/common/defaults/main.yml"].replace(
        "common_base_packages: [logrotate]", "common_base_packages: [logrotate, libpmix2]")
    _, found = installed_by_roles(files)
    assert "libpmix2" in found and "libpmix2" not in mirror_packages("distro", ["libpmix-dev"])


def test_a_node_source_is_the_mirror_alone_signed_by_its_key():
    assert sources_text("http://10.10.0.254:8080") == (
        "# the site mirror of this clusterctl rehearsal (docs/rehearse.md, Site mirror)\n"
        "Types: deb\nURIs: http://10.10.0.254:8080/\nSuites: ./\n"
        "Signed-By: /etc/apt/keyrings/clusterctl-site-mirror.gpg\n")


POLICY = """\
munge:
  Installed: 0.5.15-2
  Candidate: 0.5.15-2
  Version table:
 *** 0.5.15-2 500
        500 http://10.10.0.254:8080 ./ Packages
        100 /var/lib/dpkg/status
slurmd:
  Installed: 22.05.8-4+deb12u3
  Candidate: 22.05.8-4+deb12u3
  Version table:
 *** 22.05.8-4+deb12u3 100
        100 /var/lib/dpkg/status
     22.05.8-4 500
        500 http://10.10.0.254:8080 ./ Packages
"""


def test_origins_are_the_sources_of_the_installed_version():
    assert origins(POLICY) == {"munge": ["http://10.10.0.254:8080"], "slurmd": []}
