"""Privilege-bearing paths in the roles (issue 24; docs/security.md, "Privilege-bearing paths"): the tasks that
create a node-local directory, StateSaveLocation or job_container's BasePath give only that directory its owner
and mode (missing parents root:root 0755) and refuse a symlink or a directory someone else made; the .deb
directory apt trusts must be root's alone; a pinned repository key fingerprint is checked; every shared mount
is nosuid,nodev. The tasks are the roles' own, taken by name from their task files and run for real with
``ansible-playbook -c local`` against temporary directories."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl import yamlout
from tests.conftest import require_tool
from tests.helpers import REPO

ROLES = REPO / "roles"
NOBODY = 65534
"""uid of nobody: "a user" who made a directory first"""
DAEMON = "daemon"
"""a user with a group of its name on Debian and Ubuntu (uid 1), standing in for the slurm user"""


def _tasks(role: str, file: str, names: list[str]) -> list[dict]:
    tasks = yaml.safe_load((ROLES / role / "tasks" / file).read_text())
    by_name = {t["name"]: t for t in tasks}
    missing = [n for n in names if n not in by_name]
    assert not missing, f"roles/{role}/tasks/{file} has no task named {missing}"
    return [by_name[n] for n in names]


def _run(root: Path, tasks: list[dict], variables: dict) -> subprocess.CompletedProcess:
    """ansible-playbook of ``tasks`` with ``variables`` on localhost (connection local)."""
    playbook = root / "play.yml"
    playbook.write_text(yamlout.dump([{"name": "tasks under test", "hosts": "localhost", "connection": "local",
                                       "gather_facts": False, "vars": variables, "tasks": tasks}]))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "False",
           "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False", "ANSIBLE_RETRY_FILES_ENABLED": "False"}
    return subprocess.run([require_tool("ansible-playbook"), "-i", "localhost,", "-e",
                           f"ansible_python_interpreter={sys.executable}", str(playbook)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def _role_vars(role: str) -> dict:
    return yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())


def _mode(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_uid, stat.S_IMODE(st.st_mode)


@pytest.fixture
def root(tmp_path):
    """A scratch root the tasks work in, itself root:root 0755 as / is."""
    tmp_path.chmod(0o755)
    return tmp_path


# --- node-local directories (storage_clients) ----------------------------------------------------------------

LOCAL = ["Check the parents of node-local directories", "Create the missing parents of node-local directories",
         "Check node-local directories", "Create missing node-local directories"]


def test_a_local_tier_makes_only_its_own_directory_world_writable(root):
    """The issue: a local tier created its directory and every missing parent with mode 1777 (e.g. a
    slurmd.service.d). Only the tier's directory is 1777; missing parents are root:root 0755; an existing parent
    keeps its mode."""
    (root / "existing").mkdir(mode=0o700)
    leaf = root / "existing" / "systemd" / "slurmd.service.d" / "scratch"
    variables = {**_role_vars("storage_clients"), "storage_clients_mounts": [],
                 "storage_clients_local_dirs": [str(leaf)], "storage_clients_local_dir_mode": "1777"}
    result = _run(root, _tasks("storage_clients", "configure.yml", LOCAL), variables)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _mode(leaf) == (0, 0o1777)
    assert _mode(leaf.parent) == (0, 0o755) and _mode(leaf.parent.parent) == (0, 0o755)
    assert _mode(root / "existing") == (0, 0o700)


# --- StateSaveLocation (slurm_controller) ----------------------------------------------------------------------

STATE = ["Check StateSaveLocation and its parents", "Assert StateSaveLocation is a directory, not a symlink",
         "Create the missing parents of StateSaveLocation", "Create StateSaveLocation"]


def test_only_state_save_location_itself_becomes_the_slurm_users(root):
    state = root / "lustre" / "slurm" / "statesave"
    result = _run(root, _tasks("slurm_controller", "configure.yml", STATE),
                  {"slurm_controller_state_dir": str(state), "slurm_controller_user": DAEMON})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _mode(state) == (1, 0o750)
    assert _mode(state.parent) == (0, 0o755) and _mode(state.parent.parent) == (0, 0o755)


def test_a_state_save_location_that_is_a_symlink_is_not_followed(root):
    target = root / "etc"
    target.mkdir(mode=0o755)
    (root / "state").symlink_to(target)
    result = _run(root, _tasks("slurm_controller", "configure.yml", STATE),
                  {"slurm_controller_state_dir": str(root / "state"), "slurm_controller_user": DAEMON})
    assert result.returncode != 0 and "is not a directory (or is a symlink)" in result.stdout
    assert _mode(target) == (0, 0o755)


# --- job_container's BasePath (slurm_compute) ------------------------------------------------------------------

BASE = ["Check job_container's BasePath and its parents",
        "Assert job_container's BasePath is a root-owned directory only root may write",
        "Create the missing parents of job_container's BasePath", "Create job_container's BasePath"]


def test_job_container_base_path_is_created_root_owned_before_slurmd_starts(root):
    """The rendered BasePath is <first local tier>/slurm-job-tmp, inside a 1777 directory (shown by the golden
    job_container.conf); the role creates it root:root 0755 before slurmd could, and before the tasks that
    start or restart slurmd."""
    assert "BasePath=/raid/slurm-job-tmp" in (REPO / "tests/golden/lab-2node/slurm/job_container.conf").read_text()
    names = [t["name"] for t in yaml.safe_load((ROLES / "slurm_compute/tasks/configure.yml").read_text())]
    assert names.index("Create job_container's BasePath") < names.index(
        "Restart slurmd where the files it reads at start changed (one batch at a time, no drain)")
    scratch = root / "raid"
    scratch.mkdir()
    scratch.chmod(0o1777)
    result = _run(root, _tasks("slurm_compute", "configure.yml", BASE),
                  {"slurm_compute_job_tmp_dir": str(scratch / "slurm-job-tmp")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _mode(scratch / "slurm-job-tmp") == (0, 0o755)


@pytest.mark.parametrize("made_by", ["a user's directory", "a symlink"])
def test_a_base_path_someone_made_first_stops_the_role(root, made_by):
    scratch = root / "raid"
    scratch.mkdir()
    scratch.chmod(0o1777)
    base = scratch / "slurm-job-tmp"
    if made_by == "a symlink":
        (root / "elsewhere").mkdir()
        base.symlink_to(root / "elsewhere")
    else:
        base.mkdir()
        os.chown(base, NOBODY, NOBODY)
    result = _run(root, _tasks("slurm_compute", "configure.yml", BASE), {"slurm_compute_job_tmp_dir": str(base)})
    assert result.returncode != 0 and "is not a directory owned by root that only" in result.stdout
    assert base.is_symlink() or _mode(base)[0] == NOBODY


def test_the_base_path_is_read_from_the_rendered_job_container_conf():
    defaults = (ROLES / "slurm_compute/defaults/main.yml").read_text()
    assert "slurm_compute_src_dir ~ '/job_container.conf'" in defaults and "^BasePath=" in defaults


# --- the trusted .deb directory (slurm_preflight) ------------------------------------------------------------

DEBS = ["Check the local .deb directory",
        "Find files in the local .deb directory that are not root's alone (apt-ftparchive reads subdirectories too)",
        "Assert the local .deb directory is root's alone before apt trusts it"]


def _debs(root: Path, mode: int, file_mode: int = 0o644) -> subprocess.CompletedProcess:
    debs = root / "debs"
    debs.mkdir()
    (debs / "slurm-smd_24.05.4-1_amd64.deb").write_bytes(b"!<arch>\n")
    (debs / "slurm-smd_24.05.4-1_amd64.deb").chmod(file_mode)
    debs.chmod(mode)
    return _run(root, _tasks("slurm_preflight", "source.yml", DEBS),
                {"slurm_preflight_install_source": "debs", "slurm_preflight_debs_dir": str(debs)})


def test_a_world_writable_deb_directory_is_not_trusted(root):
    """The issue: debs.path /tmp became a Trusted apt source any local user can drop packages into."""
    result = _debs(root, 0o1777)
    assert result.returncode != 0 and "becomes a Trusted apt source" in result.stdout


def test_a_group_writable_package_in_the_deb_directory_is_not_trusted(root):
    result = _debs(root, 0o755, file_mode=0o664)
    assert result.returncode != 0 and "files not owned and written by root alone" in result.stdout


def test_a_root_owned_deb_directory_is_trusted(root):
    result = _debs(root, 0o755)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_deb_directory_is_checked_before_the_sources_file_is_written():
    names = [t["name"] for t in yaml.safe_load((ROLES / "slurm_preflight/tasks/source.yml").read_text())]
    assert names.index(DEBS[-1]) < names.index("Write the Slurm sources file (deb822)")


# --- the repository key (slurm_preflight) ----------------------------------------------------------------------

KEY = ["Assert the Slurm repository key comes over https or from a file with a pinned fingerprint",
       "Read the primary key fingerprints of the repository key",
       "Assert the repository key is the pinned one, and only it"]


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    """An ASCII-armoured public key made here and its fingerprint."""
    gpg = require_tool("gpg")
    home = tmp_path_factory.mktemp("gnupg")
    home.chmod(0o700)
    env = {**os.environ, "GNUPGHOME": str(home)}
    subprocess.run([gpg, "--batch", "--passphrase", "", "--quick-gen-key", "Slurm Repo <repo@example.com>",
                    "ed25519", "sign", "never"], env=env, check=True, capture_output=True, timeout=60)
    out = subprocess.run([gpg, "--batch", "--with-colons", "--list-keys"], env=env, check=True, capture_output=True,
                         text=True).stdout
    fpr = next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))
    path = home / "key.asc"
    path.write_text(subprocess.run([gpg, "--batch", "--armor", "--export"], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    return path, fpr


def test_a_key_file_holding_the_pinned_key_passes(root, key_file):
    path, fpr = key_file
    result = _run(root, _tasks("slurm_preflight", "source.yml", KEY),
                  {"slurm_preflight_install_source": "repo", "slurm_preflight_repo_key": str(path),
                   "slurm_preflight_repo_key_fingerprint": fpr.lower(),
                   "slurm_preflight_keyring": str(root / "keyrings" / "slurm.asc")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_key_file_holding_another_key_is_refused(root, key_file):
    path, _ = key_file
    result = _run(root, _tasks("slurm_preflight", "source.yml", KEY),
                  {"slurm_preflight_install_source": "repo", "slurm_preflight_repo_key": str(path),
                   "slurm_preflight_repo_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
                   "slurm_preflight_keyring": str(root / "keyrings" / "slurm.asc")})
    assert result.returncode != 0 and "not exactly the pinned" in result.stdout


def test_a_key_over_plain_http_is_refused_by_the_role(root):
    result = _run(root, _tasks("slurm_preflight", "source.yml", KEY[:1]),
                  {"slurm_preflight_install_source": "repo",
                   "slurm_preflight_repo_key": "http://repo.example.com/k.asc", "slurm_preflight_repo_key_fingerprint": ""})
    assert result.returncode != 0 and "must be an https:// URL" in result.stdout


def test_a_downloaded_key_replaces_the_keyring_only_after_the_check():
    names = [t["name"] for t in yaml.safe_load((ROLES / "slurm_preflight/tasks/source.yml").read_text())]
    download = next(t for t in _tasks("slurm_preflight", "source.yml", ["Download the Slurm repository's signing key"]))
    assert download["ansible.builtin.get_url"]["dest"] == "{{ slurm_preflight_keyring }}.download"
    assert names.index(KEY[-1]) < names.index("Install the Slurm repository's signing key") < names.index(
        "Write the Slurm sources file (deb822)")


# --- shared mounts nosuid,nodev (storage_clients) ---------------------------------------------------------------

NOSUID = ["Assert every shared mount is nosuid and nodev"]


def test_the_role_refuses_a_shared_mount_without_nosuid_nodev(root):
    defaults = yaml.safe_load((ROLES / "storage_clients/defaults/main.yml").read_text())
    mount = {"name": "home", "path": "/home", "src": "head01:/export/home", "fstype": "nfs"}
    ok = _run(root, _tasks("storage_clients", "preflight.yml", NOSUID),
              {"storage_clients_mount_options": defaults["storage_clients_mount_options"],
               "storage_clients_mounts": [mount]})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _run(root, _tasks("storage_clients", "preflight.yml", NOSUID),
               {"storage_clients_mount_options": defaults["storage_clients_mount_options"],
                "storage_clients_mounts": [{**mount, "opts": "defaults,_netdev,nosuid,nodev,suid"}]})
    assert bad.returncode != 0 and "must end with nosuid,nodev" in bad.stdout
