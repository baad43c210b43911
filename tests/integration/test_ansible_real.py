"""Real Ansible runs the rendered playbook (docs/ansible.md, "What the converge test covers").

1. ``ansible-lint --profile production`` on the shipped ``roles/`` and on a rendered ``ansible/`` directory.
2. ``ansible-inventory`` expands every shipped blueprint's host ranges to exactly the plan's host names, and
   ``ansible-playbook --syntax-check`` passes on every rendered ``site.yml``.
3. A real converge on this machine, twice (the second run must report ``changed=0``): a lab blueprint with a
   login group is rendered; this host plays ``gpu01`` (GPU compute node), ``head01`` (controller and
   accounting) and ``login01`` through ``ansible_connection: local``, one host at a time, with the secrets
   in an ansible-vault file. The GPU hardware roles are skipped (``--skip-tags``): they install from
   NVIDIA's and Mellanox's repositories, which this machine must not contact (step 4 runs them in check
   mode with local stand-ins). There is no systemd here (PID 1 is not systemd), so service management is
   off (the roles' ``*_manage_services: false``); kernel parameters are written but not loaded
   (``common_sysctl_apply: false``); shared file systems get their fstab lines but are not mounted
   (``storage_clients_mount_now: false``: no file server, and nothing may leave this machine).
4. The hardware roles (nvidia_driver, doca_ofed, dcgm, enroot_pyxis) run in check mode on ``gpu01`` with every
   ``*_url`` variable pointed at a local file, hardware checks and services off: their preflight, repository
   and configuration tasks run; their package installs are skipped by the roles (no repository in check mode).
   Before anything else, site.yml's first play (role slurm_preflight) checks the installed Slurm release, so
   the blueprint is rendered for it (``slurmd -V``; Debian 12: 22.05).
3b. The version guard: the same blueprint rendered for another Slurm release stops site.yml at that first
   play on every host, naming both releases, with no task of any later play run.
5. The rendered testinfra tests run against the three converged hosts with the ``hardware``, ``services``,
   ``mounts`` and ``kernel`` markers deselected; then munged is started here (by its PID, stopped after)
   and the ``services`` test of MUNGE (a credential round trip with the key from the vault) runs too.

``/etc/hosts`` and ``/etc/fstab`` are restored afterwards. Tools missing: skipped locally, failed when
``CI`` is set.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from clusterctl import hostlist
from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from tests.conftest import require, require_tool
from tests.helpers import BLUEPRINTS, REPO, lab, to_yaml

SHIPPED = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))
HARDWARE_ROLES = "doca_ofed,nvidia_driver,dcgm,enroot_pyxis"
LOCAL_HOSTS = {"gpu01": "gpu", "head01": "head", "login01": "login"}
"""inventory host -> node group; all three are this machine"""
CONVERGE_VARS = {
    "common_manage_services": False,   # no systemd: nothing can be started or enabled
    "common_sysctl_apply": False,      # do not change this machine's running kernel
    "munge_manage_services": False,    # munged is started by this test instead
    "slurm_controller_manage_services": False,
    "slurm_compute_manage_services": False,
    "slurmdbd_manage_services": False,
    "storage_clients_mount_now": False,  # no file servers; fstab lines only
    "storage_clients_lustre_install": False,  # the Lustre client comes from a vendor repository
    "nfs_server_packages": [],  # this kernel has no nfsd: the export directory and /etc/exports line only
    "nfs_server_manage_services": False,
}
DESELECT = "not hardware and not services and not mounts and not kernel"


def tool(name: str) -> str:
    return require_tool(name)


def run(args: list[str], cwd: Path, timeout: int = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", **(env or {})})


def render(blueprint: Path, out: Path) -> Path:
    result = run([sys.executable, "-m", "clusterctl", "render", str(blueprint), "-o", str(out)], cwd=REPO)
    assert result.returncode == 0, result.stderr
    return out


def recap(output: str) -> dict[str, dict[str, int]]:
    hosts = {}
    for m in re.finditer(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", output, re.M):
        hosts[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return hosts


def changed_tasks(output: str) -> list[str]:
    task, out = "", []
    for line in output.splitlines():
        if line.startswith("TASK ["):
            task = line.rstrip("* ")
        elif line.startswith("changed:"):
            out.append(f"{task}: {line}")
    return out


# --- 1. lint

def test_ansible_lint_production_on_shipped_roles():
    lint = tool("ansible-lint")
    result = run([lint, "--profile", "production", "--offline", "roles/"], cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ansible_lint_production_on_rendered_output(tmp_path):
    lint = tool("ansible-lint")
    out = render(BLUEPRINTS / "dgx-h100-superpod-4su.yaml", tmp_path / "out")
    result = run([lint, "--profile", "production", "--offline", "."], cwd=out / "ansible")
    assert result.returncode == 0, result.stdout + result.stderr


# --- 2. every shipped blueprint: inventory ranges and playbook syntax

@pytest.fixture(scope="module")
def rendered_shipped(tmp_path_factory):
    base = tmp_path_factory.mktemp("shipped")
    return {name: render(BLUEPRINTS / f"{name}.yaml", base / name) for name in SHIPPED}


@pytest.mark.parametrize("name", SHIPPED)
def test_inventory_ranges_expand_to_the_plan(name, rendered_shipped):
    inventory = tool("ansible-inventory")
    out = rendered_shipped[name]
    result = run([inventory, "-i", "inventory.yml", "--list"], cwd=out / "ansible")
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    data = json.loads(result.stdout)
    plan = expand(load_blueprint(BLUEPRINTS / f"{name}.yaml"))

    def members(group: str) -> set[str]:
        entry = data.get(group, {})
        names = set(entry.get("hosts", []))
        for child in entry.get("children", []):
            names |= members(child)
        return names

    assert members("all") == {h for g in plan.groups for h in g.hosts}
    for g in plan.groups:
        assert members(g.name) == set(g.hosts), g.name
    controllers = set(hostlist.expand(plan.blueprint.slurm.controllers)) if plan.blueprint.slurm else set()
    assert members("slurm_controllers") == controllers


@pytest.mark.parametrize("name", SHIPPED)
def test_site_yml_syntax(name, rendered_shipped):
    playbook = tool("ansible-playbook")
    result = run([playbook, "--syntax-check", "site.yml"], cwd=rendered_shipped[name] / "ansible")
    assert result.returncode == 0, result.stdout + result.stderr


# --- 3. real converge on this machine, twice

def installed_slurm_release() -> str:
    """major.minor of the Slurm on this machine, as the slurm_preflight role reads it: ``slurmd -V`` (Debian:
    "slurm-wlm 22.05.8"), else the release apt would install (``apt-cache policy slurmd``)."""
    if shutil.which("slurmd"):
        text = run(["slurmd", "-V"], cwd=REPO, timeout=30).stdout
    else:
        text = run(["apt-cache", "policy", "slurmd"], cwd=REPO, timeout=60).stdout
        text = " ".join(re.findall(r"Candidate:\s*(?:\d+:)?(\S+)", text))
    m = re.search(r"(\d{2})\.(\d{2})\.\d+", text)
    if m is None:
        message = f"cannot tell which Slurm release this machine has or would install: {text!r}"
        require(message)
    return f"{m.group(1)}.{m.group(2)}"


def ci_blueprint(version: str | None = None) -> dict:
    """The lab plus a login node and a Lustre tier, so every role of this repository's own has a host, rendered
    for this machine's Slurm release (site.yml's preflight refuses another one) unless ``version`` says."""
    data = lab()
    data["name"] = "ci-local"
    data["slurm"]["version"] = version or installed_slurm_release()
    data["slurm"]["install"] = {"kind": "distro"}  # this machine's slurm-wlm (the lab names a .deb directory)
    data["node_groups"].append({"name": "login", "type": "head", "role": "login", "count": 1,
                                "hostnames": "login01", "racks": "lab01"})
    data["storage"].insert(0, {"name": "lustre", "tier": "parallel", "filesystem": "lustre", "mount": "/lustre",
                               "capacity_tb": 100, "read_gb_per_s": 10, "write_gb_per_s": 5,
                               "servers": "mgs01@tcp"})
    return data


@pytest.fixture(scope="module")
def restored_files():
    """Keep copies of the system files the converge edits and put them back afterwards."""
    saved = {p: p.read_bytes() for p in (Path("/etc/hosts"), Path("/etc/fstab"), Path("/etc/exports")) if p.is_file()}
    policy = Path("/usr/sbin/policy-rc.d")
    added_policy = False
    if not policy.exists():  # packages installed by the converge must not start daemons (chronyd would
        policy.write_text("#!/bin/sh\nexit 101\n")  # try to reach NTP servers)
        policy.chmod(0o755)
        added_policy = True
    yield
    for path, data in saved.items():
        path.write_bytes(data)
    if Path("/etc/exports") not in saved:  # written by the nfs_server role for head01 (this machine)
        Path("/etc/exports").unlink(missing_ok=True)
    if added_policy:
        policy.unlink()


@pytest.fixture(scope="module")
def converged(tmp_path_factory, restored_files):
    playbook = tool("ansible-playbook")
    vault = tool("ansible-vault")
    if os.geteuid() != 0:
        message = "the converge installs packages and writes /etc: run as root"
        require(message, hint="")
    if not Path("/usr/bin/python3").is_file():
        pytest.fail("the converge runs modules with /usr/bin/python3 (Debian's python3 with python3-apt)")
    base = tmp_path_factory.mktemp("converge")
    (base / "ci-local.yaml").write_text(to_yaml(ci_blueprint()))
    out = render(base / "ci-local.yaml", base / "out")
    ansible_dir = out / "ansible"
    host_vars = ansible_dir / "host_vars"  # test-only: these inventory hosts are this machine
    host_vars.mkdir()
    for host in LOCAL_HOSTS:
        # these hosts share this machine's /etc, and chrony.conf differs per host (a controller serves time,
        # the others follow it): one file each here; per-host time sources are shown by the deploy rehearsal
        (host_vars / f"{host}.yml").write_text("ansible_connection: local\n"
                                               "ansible_python_interpreter: /usr/bin/python3\n"
                                               f"common_chrony_conf_path: {base / f'chrony-{host}.conf'}\n")
    # secrets the way an operator keeps them: an ansible-vault file outside the render directory
    password = base / "vault-password"
    password.write_text(secrets.token_hex(16))
    password.chmod(0o600)
    secrets_file = base / "vault.yml"
    secrets_file.write_text(yaml.safe_dump({"vault_munge_key": secrets.token_urlsafe(96),
                                            "vault_slurmdbd_storage_pass": secrets.token_urlsafe(24)}))
    enc = run([vault, "encrypt", str(secrets_file), "--vault-password-file", str(password)], cwd=base)
    assert enc.returncode == 0, enc.stderr
    assert secrets_file.read_text().startswith("$ANSIBLE_VAULT;")
    extra = base / "converge-vars.yml"
    extra.write_text(yaml.safe_dump(CONVERGE_VARS))
    common = [playbook, "site.yml", "--forks", "1", "-e", f"@{extra}", "-e", f"@{secrets_file}",
              "--vault-password-file", str(password)]
    args = [*common, "--limit", ",".join(LOCAL_HOSTS), "--skip-tags", HARDWARE_ROLES]
    env = {"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(base / "facts")}
    runs = []
    for _ in range(2):
        started = time.monotonic()
        result = run(args, cwd=ansible_dir, timeout=600, env=env)
        runs.append((result, time.monotonic() - started))
        if result.returncode != 0:
            break
    return out, runs, common, env


def test_converge_succeeds(converged):
    _, runs, *_ = converged
    result, _ = runs[0]
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    hosts = recap(result.stdout)
    assert sorted(hosts) == sorted(LOCAL_HOSTS), result.stdout[-3000:]
    assert all(h["failed"] == 0 and h["unreachable"] == 0 for h in hosts.values())


def test_second_converge_changes_nothing(converged):
    _, runs, *_ = converged
    assert len(runs) == 2, "the first converge failed"
    result, _ = runs[1]
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    hosts = recap(result.stdout)
    assert sorted(hosts) == sorted(LOCAL_HOSTS)
    changed = {h: r["changed"] for h, r in hosts.items() if r["changed"]}
    assert not changed, f"not idempotent: {changed}\n" + "\n".join(changed_tasks(result.stdout))


def test_converge_covers_the_repository_roles(converged):
    _, runs, *_ = converged
    text = runs[0][0].stdout
    assert "is the release slurm.conf was rendered for" in text  # the version guard ran and passed
    for role in ("slurm_preflight", "common", "munge", "nccl", "slurmdbd", "slurm_controller", "storage_clients", "node_health",
                 "slurm_compute", "slurm_login"):
        assert f"TASK [{role} : " in text, role
    for role in HARDWARE_ROLES.split(","):
        assert f"TASK [{role} : " not in text


# --- 3b. the version guard stops site.yml before anything is touched

def other_release(release: str) -> str:
    """A supported Slurm release that is not ``release``."""
    return "24.11" if release != "24.11" else "24.05"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """site.yml of the ci blueprint rendered for a Slurm release this machine does not have, run on the three
    local hosts like the converge. Only the preflight's reads can run: it stops the playbook."""
    playbook = tool("ansible-playbook")
    if os.geteuid() != 0:
        message = "site.yml runs with become: run as root"
        require(message, hint="")
    installed = installed_slurm_release()
    rendered_for = other_release(installed)
    base = tmp_path_factory.mktemp("guard")
    (base / "ci-local.yaml").write_text(to_yaml(ci_blueprint(rendered_for)))
    out = render(base / "ci-local.yaml", base / "out")
    host_vars = out / "ansible" / "host_vars"
    host_vars.mkdir()
    for host in LOCAL_HOSTS:
        (host_vars / f"{host}.yml").write_text("ansible_connection: local\n"
                                               "ansible_python_interpreter: /usr/bin/python3\n")
    extra = base / "converge-vars.yml"
    extra.write_text(yaml.safe_dump(CONVERGE_VARS))
    result = run([playbook, "site.yml", "--forks", "1", "-e", f"@{extra}", "--limit", ",".join(LOCAL_HOSTS)],
                 cwd=out / "ansible", timeout=300, env={"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(base / "facts")})
    return installed, rendered_for, result


def test_version_guard_names_both_releases(guarded):
    installed, rendered_for, result = guarded
    assert result.returncode != 0, result.stdout[-4000:]
    text = " ".join((result.stdout + result.stderr).split())  # Ansible folds long messages
    assert f"slurm.conf was rendered for Slurm {rendered_for}; this host has {installed}." in text, \
        result.stdout[-4000:]
    assert re.search(rf"this host has {re.escape(installed)}\.\d+ \((slurmctld|slurmd|slurmdbd|sinfo) -V\)", text)
    assert f'Hint: set slurm.version to "{installed}"' in text


def test_version_guard_stops_before_any_other_task(guarded):
    _, _, result = guarded
    hosts = recap(result.stdout)
    assert sorted(hosts) == sorted(LOCAL_HOSTS), result.stdout[-3000:]
    assert all(h["failed"] == 1 and h["changed"] == 0 for h in hosts.values()), hosts
    tasks = re.findall(r"^TASK \[([^\]]+)\]", result.stdout, re.M)
    assert tasks and all(name.startswith("slurm_preflight : ") for name in tasks), tasks
    plays = re.findall(r"^PLAY \[([^\]]+)\]", result.stdout, re.M)
    assert plays == ["Slurm release preflight, before any package or daemon is touched"], plays


def hardware_check_vars(base: Path) -> dict:
    """Overrides that let the GPU hardware roles run in check mode here without any vendor server: every
    ``*_url`` points at a local file, hardware checks and services are off, downloads have no directory yet
    (the roles skip them in check mode then)."""
    dummy = base / "vendor-file"
    dummy.write_text("stand-in for a vendor download; check mode only reads that it exists\n")
    out = {}
    for role in HARDWARE_ROLES.split(","):
        defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}
        for key in defaults:
            if key.endswith("_url"):
                out[key] = f"file://{dummy}"
            elif key.endswith(("_skip_hardware_check", "_skip_host_check")):
                out[key] = True
            elif key.endswith("_manage_services"):
                out[key] = False
            elif key.endswith("_download_dir"):
                out[key] = str(base / "downloads-not-created")
    return out


@pytest.fixture(scope="module")
def hardware_checked(converged, tmp_path_factory):
    out, runs, common, env = converged
    assert runs[0][0].returncode == 0, "converge failed"
    base = tmp_path_factory.mktemp("hardware")
    overrides = base / "hardware-check.yml"
    overrides.write_text(yaml.safe_dump(hardware_check_vars(base)))
    return run([*common, "--check", "--limit", "gpu01", "--tags", HARDWARE_ROLES, "-e", f"@{overrides}"],
               cwd=out / "ansible", timeout=600, env=env)


def test_hardware_roles_pass_in_check_mode(hardware_checked):
    """The GPU node's hardware roles (written elsewhere) in check mode: preflight, repository and
    configuration tasks run; package installs are skipped by the roles because the repository is not there."""
    result = hardware_checked
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert recap(result.stdout)["gpu01"]["failed"] == 0
    for role in HARDWARE_ROLES.split(","):
        assert f"TASK [{role} : " in result.stdout, role


# --- 4. the rendered acceptance tests against the converged hosts

def acceptance(out: Path, host: str, group: str, *marker_args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                f"--hosts=ansible://{host}", f"--ansible-inventory={out / 'ansible' / 'inventory.yml'}",
                str(out / "tests" / f"test_{group}.py"), *marker_args], cwd=out, timeout=300)


@pytest.mark.parametrize("host", sorted(LOCAL_HOSTS))
def test_rendered_acceptance_tests_pass(converged, host):
    out, runs, *_ = converged
    assert runs[0][0].returncode == 0, "converge failed"
    # chrony.conf is per host in tests/e2e (separate /etc); here each host's file has its own path (above)
    result = acceptance(out, host, LOCAL_HOSTS[host], "-m", DESELECT, "-k", "not chrony_follows")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary and "skipped" not in summary, summary


@pytest.fixture
def munged(converged):
    """munged started here (no systemd) with the key the converge installed; stopped by its PID."""
    tool("munged")
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    socket = run_dir / "munge.socket.2"
    if socket.exists():
        if subprocess.run(["munge", "-n"], capture_output=True, timeout=10).returncode == 0:
            pytest.fail(f"a munged not started by this test already serves {socket}")
        socket.unlink()  # stale, left by a munged that was killed
    proc = subprocess.Popen(["munged", "--foreground"], user="munge", stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 20
    while not socket.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is not None or not socket.exists():
        proc.kill()
        pytest.fail(f"munged did not start: {proc.communicate(timeout=10)[0]}")
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("host", sorted(LOCAL_HOSTS))
def test_munge_roundtrip_with_the_vault_key(converged, munged, host):
    out, *_ = converged
    result = acceptance(out, host, LOCAL_HOSTS[host], "-m", "services", "-k", "munge")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1].startswith("1 passed"), result.stdout[-2000:]
