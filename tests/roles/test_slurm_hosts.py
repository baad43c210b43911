"""What a clean node needs before Slurm runs (issue 26, item 3), on the rendered files and the shipped roles:
the slurm and munge accounts with the blueprint's ids before any package, the PMIx library the mpi/pmix plugin
dlopens, state, spool and log paths owned as Slurm and munged expect, and pyxis built against the headers of the
Slurm that runs. The rehearsal tests (tests/e2e) exercise the same roles on clean nodes."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import sys

import pytest
import yaml

from clusterctl import yamlout
from clusterctl.errors import BlueprintError
from clusterctl.targets import render_targets
from tests.helpers import REPO, cli, lab, plan_of, to_yaml
from tests.roles.local_converge import changed, converge, tool

ROLES = REPO / "roles"


def _tasks(role: str, name: str = "main.yml") -> list[dict]:
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text())


def _task(tasks: list[dict], name: str) -> dict:
    found = [t for t in tasks if t.get("name") == name]
    assert len(found) == 1, f"no single task named {name!r}"
    return found[0]


def _all_vars(data: dict) -> dict:
    return yamlout.load(render_targets(plan_of(data))["ansible/group_vars/all.yml"])


def _variant(version: str, os: str, install: dict) -> dict:
    data = lab()
    data["slurm"]["version"] = version
    data["slurm"]["install"] = install
    data["software"]["os"] = os
    return data


# --- the slurm and munge accounts ----------------------------------------------------------------------------

def test_accounts_default_to_parallelcluster_ids_and_precede_munge():
    site = yamlout.load(render_targets(plan_of(lab()))["ansible/site.yml"])
    roles = [[r["role"] for r in p["roles"]] for p in site]
    assert ["slurm_accounts", "munge"] in roles
    first_install = min(i for i, r in enumerate(roles) if {"munge", "enroot_pyxis", "slurmdbd"} & set(r))
    assert roles.index(["slurm_accounts", "munge"]) == first_install  # before every play installing Slurm or MUNGE
    v = _all_vars(lab())
    assert (v["slurm_accounts_slurm_uid"], v["slurm_accounts_slurm_gid"]) == (401, 401)
    assert (v["slurm_accounts_munge_uid"], v["slurm_accounts_munge_gid"]) == (402, 402)


def test_blueprint_ids_reach_the_role_and_the_acceptance_tests():
    data = lab()
    data["slurm"]["user"] = {"uid": 64030, "gid": 64030}
    data["slurm"]["munge_user"] = {"uid": 990, "gid": 991}
    files = render_targets(plan_of(data))
    v = yamlout.load(files["ansible/group_vars/all.yml"])
    assert [v[f"slurm_accounts_{k}"] for k in ("slurm_uid", "slurm_gid", "munge_uid", "munge_gid")] == [
        64030, 64030, 990, 991]
    assert "[('slurm', 64030, 64030), ('munge', 990, 991)]" in files["tests/test_gpu.py"]
    assert "[('slurm', 64030, 64030), ('munge', 990, 991)]" in files["tests/test_head.py"]


@pytest.mark.parametrize("accounts,message", [
    ({"user": {"uid": 0, "gid": 401}}, "greater than or equal to 1"),
    ({"munge_user": {"uid": 402, "gid": 0}}, "greater than or equal to 1"),
    ({"user": {"uid": 65534, "gid": 401}}, "less than or equal to 65533"),
    ({"user": {"uid": 500, "gid": 501}, "munge_user": {"uid": 500, "gid": 502}}, "has the uid of slurm.user"),
    ({"user": {"uid": 500, "gid": 501}, "munge_user": {"uid": 502, "gid": 501}}, "has the gid of slurm.user"),
    ({"user": {"name": "root", "uid": 500, "gid": 500}}, "name"),
])
def test_account_ids_are_refused_when_loaded(accounts, message):
    data = lab()
    data["slurm"].update(accounts)
    with pytest.raises(BlueprintError) as err:
        plan_of(data)
    assert message in str(err.value)


def test_refused_ids_exit_2_through_the_cli(tmp_path):
    data = lab()
    data["slurm"]["munge_user"] = {"uid": 401, "gid": 402}
    (tmp_path / "b.yaml").write_text(to_yaml(data))
    r = cli("validate", str(tmp_path / "b.yaml"))
    assert r.returncode == 2 and "slurm.munge_user has the uid of slurm.user (401)" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


def test_role_creates_groups_then_users_with_the_ids_and_never_renumbers():
    tasks = _tasks("slurm_accounts")
    names = [t["name"] for t in tasks]
    assert names.index("Assert an existing slurm or munge account has the blueprint's ids") < names.index(
        "Create the group of each account") < names.index("Create each system user")
    user = _task(tasks, "Create each system user")["ansible.builtin.user"]
    assert user["uid"] == "{{ slurm_accounts__item.uid }}" and user["system"] is True
    assert user["create_home"] is False
    accounts = yaml.safe_load((ROLES / "slurm_accounts" / "vars" / "main.yml").read_text())["slurm_accounts__accounts"]
    assert [(a["name"], a["uid"], a["gid"]) for a in accounts] == [
        ("{{ slurm_accounts_slurm_name }}", "{{ slurm_accounts_slurm_uid }}", "{{ slurm_accounts_slurm_gid }}"),
        ("{{ slurm_accounts_munge_name }}", "{{ slurm_accounts_munge_uid }}", "{{ slurm_accounts_munge_gid }}")]


def test_an_existing_account_with_other_ids_stops_the_role_before_anything_changes(tmp_path):
    """Converged for real on this machine: 'daemon' (uid 1) stands in for a slurm account the packages made
    with other ids; the role stops at its assert, before any group or user task."""
    r = converge("slurm_accounts", tmp_path, {"slurm_accounts_slurm_name": "daemon", "slurm_accounts_slurm_uid": 401,
                                               "slurm_accounts_slurm_gid": 401, "slurm_accounts_munge_name": "bin",
                                               "slurm_accounts_munge_uid": 2, "slurm_accounts_munge_gid": 2})
    assert r.returncode != 0
    assert "daemon exists on this host as uid 1, gid 1; the blueprint (slurm.user) wants uid 401, gid 401" in r.stdout
    assert "this role never renumbers an account" in r.stdout
    assert "Create the group of each account" not in r.stdout


def test_an_account_with_the_blueprint_ids_is_kept_as_it_is(tmp_path):
    """Converged in check mode on this machine: 'daemon' (Debian's base-passwd, uid and gid 1, home /usr/sbin)
    stands in for both accounts, already there with the blueprint's ids (a second converge, or a Debian package's
    account made to them): the role passes its assert and would change nothing."""
    daemon = pwd.getpwnam("daemon")
    ids = {"uid": daemon.pw_uid, "gid": grp.getgrnam("daemon").gr_gid}
    r = converge("slurm_accounts", tmp_path, {
        **{f"slurm_accounts_{a}_{k}": v for a in ("slurm", "munge") for k, v in ids.items()},
        "slurm_accounts_slurm_name": "daemon", "slurm_accounts_munge_name": "daemon",
        "slurm_accounts_home": daemon.pw_dir, "slurm_accounts_shell": daemon.pw_shell}, check=True)
    assert r.returncode == 0, r.stdout[-2000:]
    assert changed(r.stdout) == 0


# --- PMIx -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version,os,install,want", [
    ("24.05", "ubuntu-22.04", {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.05.4-1"}, ["libpmix-dev"]),
    ("22.05", "debian-12", {"kind": "distro"}, ["libpmix-dev"]),  # mpi_pmix_v4.so dlopens the unversioned name
    ("24.11", "debian-13", {"kind": "distro"}, ["libpmix2t64"]),  # mpi_pmix_v5.so dlopens libpmix.so.2
    ("24.11", "debian-12", {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1"}, ["libpmix2"]),
    ("24.11", "ubuntu-24.04", {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1"}, ["libpmix2t64"]),
    ("24.11", "rocky-9", {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1"}, ["libpmix-dev"]),
])
def test_pmix_package_is_the_one_the_release_s_plugin_dlopens(version, os, install, want):
    assert _all_vars(_variant(version, os, install))["slurm_pmix_packages"] == want


@pytest.mark.parametrize("role", ["slurm_compute", "slurm_login", "slurm_controller"])
def test_slurm_roles_install_the_rendered_pmix_package(role):
    install = _task(_tasks(role, "install.yml"), "Install the PMIx library Slurm's mpi/pmix plugin loads")
    assert install["ansible.builtin.apt"]["name"] == f"{{{{ {role}_pmix_packages }}}}"
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    assert defaults[f"{role}_pmix_packages"] == "{{ slurm_pmix_packages | default(['libpmix-dev']) }}"


def test_acceptance_tests_check_pmix_where_job_steps_or_srun_run():
    files = render_targets(plan_of(lab()))
    for group in ("gpu", "head"):  # compute nodes; head01 is the controller (srun runs there)
        assert "@pytest.mark.parametrize(\"package\", ['libpmix-dev'])" in files[f"tests/test_{group}.py"], group


def test_the_slurm_pin_leaves_pmix_alone():
    pin = yaml.safe_load((ROLES / "slurm_preflight" / "defaults" / "main.yml").read_text())
    assert not [g for g in pin["slurm_preflight_pin_packages"] if "libpmix-dev".startswith(g.rstrip("*"))]


# --- directories and logs -------------------------------------------------------------------------------------

def test_controller_owns_state_and_log_for_slurm_user():
    tasks = _tasks("slurm_controller", "configure.yml")
    state = _task(tasks, "Create StateSaveLocation")["ansible.builtin.file"]
    assert (state["owner"], state["mode"]) == ("{{ slurm_controller_user }}", "0750")
    log = _task(tasks, "Create slurmctld's log file for SlurmUser")["ansible.builtin.file"]
    assert (log["owner"], log["mode"], log["state"]) == ("{{ slurm_controller_user }}", "0640", "touch")
    assert log["modification_time"] == "preserve"  # idempotent: touch without changing the times


def test_compute_spool_is_root_s_and_dbd_log_is_slurm_user_s():
    spool = _task(_tasks("slurm_compute", "configure.yml"), "Create slurmd's spool directory (root's)")
    assert (spool["ansible.builtin.file"]["owner"], spool["ansible.builtin.file"]["mode"]) == ("root", "0755")
    dbd = _task(_tasks("slurmdbd", "configure.yml"), "Create the slurmdbd log file for SlurmUser")["ansible.builtin.file"]
    assert (dbd["owner"], dbd["mode"]) == ("{{ slurmdbd_user }}", "0640")
    dirs = [_task(_tasks("slurmdbd", "configure.yml"), "Create the slurmdbd log directory"),
            _task(_tasks("slurm_controller", "configure.yml"), "Create slurmctld's log directory"),
            _task(_tasks("slurm_compute", "configure.yml"), "Create slurmd's log directory")]
    assert {d["ansible.builtin.file"]["mode"] for d in dirs} == {"0755"}  # one directory where a host runs all three


def test_munge_owns_its_log_before_munged_starts():
    """Owned before the package (Debian's postinst starts munged and fails the install when munged refuses its
    log) where the account exists, and again before the role starts munged."""
    log = _tasks("munge", "log.yml")
    d = _task(log, "Create munged's log directory")["ansible.builtin.file"]
    f = _task(log, "Own munged's log file")["ansible.builtin.file"]
    assert (d["owner"], d["mode"], f["owner"], f["mode"]) == ("{{ munge_user }}", "0700", "{{ munge_user }}", "0640")
    install = [t["name"] for t in _tasks("munge", "install.yml")]
    assert install.index("Own munged's log before the package starts munged") < install.index("Install MUNGE packages")
    configure = _tasks("munge", "configure.yml")
    names = [t["name"] for t in configure]
    assert _task(configure, "Own munged's log")["ansible.builtin.import_tasks"] == "log.yml"
    assert names.index("Own munged's log") < names.index("Start and enable munged")
    defaults = yaml.safe_load((ROLES / "munge" / "defaults" / "main.yml").read_text())
    assert defaults["munge_log_file"] == "/var/log/munge/munged.log"


def test_acceptance_tests_assert_ownership():
    files = render_targets(plan_of(lab()))
    head, gpu = files["tests/test_head.py"], files["tests/test_gpu.py"]
    assert "def test_state_and_log_belong_to_slurm_user(" in head
    assert "def test_slurmdbd_log_belongs_to_slurm_user(" in head
    assert "def test_slurmd_spool_is_root_s(" in gpu and "def test_slurmd_spool_is_root_s(" not in head
    assert "def test_munge_owns_its_log(host):" in gpu and "def test_munge_owns_its_log(host):" in head


# --- pyxis against the Slurm that runs --------------------------------------------------------------------------

@pytest.mark.parametrize("install,want", [
    ({"kind": "debs", "path": "/srv/slurm-debs", "version": "24.05.4-1"}, "slurm-smd-dev"),
    ({"kind": "debs", "path": "/srv/slurm-debs", "version": "24.05.4-1", "packages": "debian"}, "libslurm-dev"),
    ({"kind": "distro"}, "libslurm-dev"),
])
def test_pyxis_headers_come_from_the_installed_slurm(install, want):
    assert _all_vars(_variant("24.05", "ubuntu-22.04", install))["slurm_dev_package"] == want
    defaults = yaml.safe_load((ROLES / "enroot_pyxis" / "defaults" / "main.yml").read_text())
    assert defaults["enroot_pyxis_pyxis_build_packages"] == (
        "{{ ['gcc', 'make', slurm_dev_package | default('libslurm-dev')] }}")


def test_pyxis_header_release_is_checked_before_compiling():
    build = _task(_tasks("enroot_pyxis", "install.yml"), "Build pyxis from source")["block"]
    names = [t["name"] for t in build]
    check = names.index("Assert pyxis is built against the headers of the Slurm that runs")
    assert names.index("Install pyxis build dependencies {{ enroot_pyxis_pyxis_build_packages | join(' ') }}") < check
    assert check < names.index("Compile spank_pyxis.so")
    assert build[check]["ansible.builtin.assert"]["that"] == [
        "enroot_pyxis__header_release == (enroot_pyxis_slurm_version | string)"]


def test_acceptance_tests_ask_srun_for_container_image_on_gpu_and_login_nodes():
    data = lab()
    data["node_groups"].append({"name": "login", "type": "head", "role": "login", "count": 1,
                                "hostnames": "login01", "racks": "lab01"})
    files = render_targets(plan_of(data))
    test = '@pytest.mark.containers\ndef test_srun_offers_container_image(host):'
    assert test in files["tests/test_gpu.py"] and test in files["tests/test_login.py"]
    assert test not in files["tests/test_head.py"]
    assert '"containers": "needs enroot and pyxis' in files["tests/conftest.py"]


@pytest.mark.parametrize("number,running,ok", [("0x160508", "24.11", False),  # Debian 12's libslurm-dev, 24.11 runs
                                               ("0x180b05", "24.11", True)])   # slurm-smd-dev 24.11.5
def test_pyxis_header_check_runs_on_a_real_header_layout(tmp_path, number, running, ok):
    """The role's two tasks, taken from its install.yml as they are, run by ansible-playbook on a
    slurm_version.h laid out as Slurm installs it (22.05.8's header holds ``#define SLURM_VERSION_NUMBER
    0x160508``)."""
    header = tmp_path / "slurm_version.h"
    header.write_text(f"#ifndef _SLURM_VERSION_H_\n#define _SLURM_VERSION_H_\n\n#define SLURM_VERSION_NUMBER {number}\n"
                      "#define SLURM_VERSION_NUM(a,b,c) (((a) << 16) + ((b) << 8) + (c))\n#endif\n")
    build = _task(_tasks("enroot_pyxis", "install.yml"), "Build pyxis from source")["block"]
    tasks = [_task(build, "Read the Slurm release of the installed headers"),
             _task(build, "Assert pyxis is built against the headers of the Slurm that runs")]
    (tmp_path / "play.yml").write_text(yamlout.dump([{
        "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks,
        "vars": {"enroot_pyxis_slurm_version": running, "enroot_pyxis_slurm_version_header": str(header),
                 "enroot_pyxis_pyxis_build_packages": ["gcc", "make", "libslurm-dev"]}}]))
    r = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "-e",
                        f"ansible_python_interpreter={sys.executable}", "play.yml"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
    if ok:
        assert r.returncode == 0, r.stdout[-2000:]
        assert "pyxis is built against Slurm 24.11 headers, the release that runs" in r.stdout
    else:
        assert r.returncode != 0
        assert "headers in " in r.stdout and "are release 22.05, from libslurm-dev, but Slurm 24.11 runs" in r.stdout
