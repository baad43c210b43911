"""Real Ansible tools on the shipped roles and the rendered playbooks (docs/ansible.md, "What the Ansible tests
cover"). Nothing here changes this machine: its root is the lower layer of every rehearsal node, and the rendered
site.yml is converged for real only on those nodes (tests/e2e/test_deploy.py, test_scenarios.py).

1. ``ansible-lint --profile production --offline``, once, over a project holding the shipped ``roles/`` (every role,
   Molecule scenarios included) and the rendered ``ansible/`` trees of LINTED (site.yml, inventory, group_vars and
   the pull-mode playbooks; their ``roles/`` are byte copies of the shipped ones, checked here, so they are not
   linted twice). LINTED holds every playbook file and every play shape any shipped blueprint renders (checked).
2. ``ansible-inventory`` expands every shipped blueprint's host ranges to exactly the plan's host names, and
   ``ansible-playbook --syntax-check`` passes on every rendered ``site.yml``.
3. site.yml in check mode on this machine as ``gpu01`` (``ansible_connection: local``), with the secrets in an
   ansible-vault file (``-e @vault.yml --vault-password-file``): its first play (slurm_preflight: the blueprint is
   rendered for this machine's Slurm release), the GPU hardware roles (nvidia_driver, doca_ofed, dcgm,
   enroot_pyxis) with every ``*_url`` variable pointed at a local file and hardware checks and services off, and
   munge, whose preflight and key task read the key from the vault. The roles skip their package installs in
   check mode (no repository). Ansible's temporary files and fact cache are in the test's directory, and the
   directories these roles write are compared before and after: nothing changed.

Tools missing: skipped locally, failed when ``CI`` is set.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl import hostlist
from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.plan.interfaces import host_ports
from tests.conftest import require, require_root, require_tool
from tests.helpers import BLUEPRINTS, REPO, lab, to_yaml

SHIPPED = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))
LINTED = ("lab-2node", "gcp-a3-mega", "frontier-3tier-100k", "lab-ha")
"""rendered trees linted with the roles: the lab, a cloud blueprint, the one with pull mode (its play and the
pull-status.yml playbook) and login nodes, and lab-ha (its inventory: the host network play of GPU-less groups for
their in-band DHCP client, the DHCP HA pair); test_linted_blueprints_cover_every_playbook_shape keeps this enough"""
HARDWARE_ROLES = "doca_ofed,nvidia_driver,dcgm,enroot_pyxis"
WRITTEN = ("/etc/apt", "/etc/apparmor.d", "/etc/enroot", "/etc/modules-load.d", "/etc/munge", "/etc/slurm",
           "/etc/sysctl.d", "/etc/systemd/system", "/etc/tmpfiles.d", "/run/enroot", "/usr/local/lib/slurm",
           "/var/cache/clusterctl", "/var/lib/enroot")
"""where the check-mode run's roles (slurm_preflight, the hardware roles, munge) write when they run for real: the
tasks that report changed=1 in check mode write under these"""


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


@pytest.fixture(scope="module")
def rendered_shipped(tmp_path_factory):
    base = tmp_path_factory.mktemp("shipped")
    return {name: render(BLUEPRINTS / f"{name}.yaml", base / name) for name in SHIPPED}


# --- 1. ansible-lint, once

def playbooks(ansible_dir: Path) -> list[str]:
    """The playbooks of a rendered ansible/ directory (YAML lists of plays), relative to it."""
    out = []
    for path in sorted(ansible_dir.rglob("*.yml")):
        rel = path.relative_to(ansible_dir)
        if rel.parts[0] in ("roles", "group_vars", "host_vars") or rel.name == "inventory.yml":
            continue
        data = yaml.safe_load(path.read_text())
        if isinstance(data, list) and data and all(isinstance(p, dict) and "hosts" in p for p in data):
            out.append(str(rel))
    return out


def shapes(ansible_dir: Path) -> set[tuple]:
    """What a linter sees of the rendered playbooks, with node group names left out: per playbook file and play,
    its name, its keys and the keys of its role entries (every role itself is linted under roles/)."""
    out = set()
    found = playbooks(ansible_dir)
    for rel in sorted(p.relative_to(ansible_dir) for p in ansible_dir.rglob("*.yml")):
        if rel.parts[0] in ("roles", "group_vars", "host_vars") or rel.name == "inventory.yml":
            continue
        if str(rel) not in found:
            out.add((str(rel), "not a playbook"))  # a vars file, such as pull/batches.yml
            continue
        for play in yaml.safe_load((ansible_dir / rel).read_text()):
            name = re.sub(r"node group \S+", "node group G", str(play.get("name")))
            entries = frozenset(tuple(sorted(r)) if isinstance(r, dict) else ("role",) for r in play.get("roles", []))
            out.add((str(rel), name, tuple(sorted(play)), entries))
    return out


def test_linted_blueprints_cover_every_playbook_shape(rendered_shipped):
    linted = set().union(*(shapes(rendered_shipped[n] / "ansible") for n in LINTED))
    for name in SHIPPED:
        missing = shapes(rendered_shipped[name] / "ansible") - linted
        assert not missing, f"{name} renders what no blueprint of LINTED does (add it to LINTED): {missing}"


def lint_project(rendered: dict[str, Path], base: Path) -> Path:
    """The shipped roles/ and, under rendered/NAME/, the rendered ansible/ trees of LINTED without their roles/,
    which must be byte copies of shipped roles (site.yml finds them through ANSIBLE_ROLES_PATH instead)."""
    project = base / "project"
    shutil.copytree(REPO / "roles", project / "roles")
    (project / ".ansible-lint").write_text("profile: production\noffline: true\n")  # also marks the project root
    for name in LINTED:
        ansible_dir = rendered[name] / "ansible"
        for path in (ansible_dir / "roles").rglob("*"):
            if path.is_file():
                shipped = REPO / "roles" / path.relative_to(ansible_dir / "roles")
                assert filecmp.cmp(path, shipped, shallow=False), f"{name}: {path} differs from {shipped}"
        shutil.copytree(ansible_dir, project / "rendered" / name,
                        ignore=lambda d, _, top=str(ansible_dir): ["roles"] if d == top else [])
    return project


def ansible_lint(project: Path, base: Path) -> subprocess.CompletedProcess:
    env = {"ANSIBLE_ROLES_PATH": str(project / "roles"), "ANSIBLE_HOME": str(base / "ansible-home"),
           "ANSIBLE_LOCAL_TEMP": str(base / "ansible-tmp"), "NO_COLOR": "1"}
    return run([tool("ansible-lint"), "-v", "--nocolor", "--profile", "production", "--offline"], cwd=project,
               timeout=1200, env=env)


def test_ansible_lint_production_on_every_role_and_the_rendered_playbooks(rendered_shipped, tmp_path):
    project = lint_project(rendered_shipped, tmp_path)
    result = ansible_lint(project, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    assert "Profile 'production' was required, and it passed" in output, output[-3000:]
    for name in LINTED:  # the rendered playbooks were linted, their roles found
        for playbook in playbooks(project / "rendered" / name):
            assert f"Executing syntax check on playbook rendered/{name}/{playbook} " in output, (name, playbook)
    for role in sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()):
        assert f"Executing syntax check on role roles/{role} " in output, role


# --- 2. every shipped blueprint: inventory ranges and playbook syntax

def graph_members(graph: str) -> dict[str, set[str]]:
    """``ansible-inventory --graph`` (``@group:`` lines, hosts and child groups indented under them by ``|--``) as
    group -> every host under it, child groups' included."""
    members: dict[str, set[str]] = {}
    stack: list[str] = []
    for line in graph.splitlines():
        depth = line.find("--") // 3 if "--" in line else 0
        name = line[line.find("--") + 2:] if depth else line
        del stack[depth:]
        if name.startswith("@"):
            group = name[1:].rstrip(":")
            members.setdefault(group, set())
            stack.append(group)
        else:
            for group in stack:
                members[group].add(name)
    return members


@pytest.mark.parametrize("name", SHIPPED)
def test_inventory_ranges_expand_to_the_plan(name, rendered_shipped):
    """``--graph``, not ``--list``: the group tree is the claim, and ``--list`` dumps every host's variables
    (167 MB and 37 s of CPU for frontier-3tier-100k's 13,323 hosts, against 1.6 MB and 3 s)."""
    inventory = tool("ansible-inventory")
    out = rendered_shipped[name]
    result = run([inventory, "-i", "inventory.yml", "--graph"], cwd=out / "ansible")
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    groups = graph_members(result.stdout)
    plan = expand(load_blueprint(BLUEPRINTS / f"{name}.yaml"))

    def members(group: str) -> set[str]:
        return groups.get(group, set())

    assert members("all") == {h for g in plan.groups for h in g.hosts}
    for g in plan.groups:
        assert members(g.name) == set(g.hosts), g.name
    controllers = set(hostlist.expand(plan.blueprint.slurm.controllers)) if plan.blueprint.slurm else set()
    assert members("slurm_controllers") == controllers


def test_graph_members_reads_nested_groups():
    graph = "@all:\n  |--@ungrouped:\n  |--@gpu:\n  |  |--gpu01\n  |--@slurm:\n  |  |--@heads:\n  |  |  |--head01\n" \
            "  |  |--login01\n"
    assert graph_members(graph) == {"all": {"gpu01", "head01", "login01"}, "ungrouped": set(), "gpu": {"gpu01"},
                                    "slurm": {"head01", "login01"}, "heads": {"head01"}}


@pytest.mark.parametrize("name", SHIPPED)
def test_site_yml_syntax(name, rendered_shipped):
    playbook = tool("ansible-playbook")
    result = run([playbook, "--syntax-check", "site.yml"], cwd=rendered_shipped[name] / "ansible")
    assert result.returncode == 0, result.stdout + result.stderr


# --- 3. site.yml in check mode on this machine: hardware roles and the vault

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


def check_blueprint() -> dict:
    """The lab, rendered for this machine's Slurm release (site.yml's preflight refuses another one)."""
    data = lab()
    data["name"] = "ci-check"
    data["slurm"]["version"] = installed_slurm_release()
    data["slurm"]["install"] = {"kind": "distro"}  # this machine's slurm-wlm (the lab names a .deb directory)
    return data


def hardware_check_vars(base: Path) -> dict:
    """Overrides that let the GPU hardware roles run in check mode here without any vendor server: every
    ``*_url`` points at a local file, hardware checks and services are off, downloads have no directory yet
    (the roles skip them in check mode then)."""
    dummy = base / "vendor-file"
    dummy.write_text("stand-in for a vendor download; check mode only reads that it exists\n")
    out = {"munge_manage_services": False}
    # site.yml's interface names guard (tagged always) reads a sysfs tree holding the lab GPU type's named ports
    plan = expand(load_blueprint(BLUEPRINTS / "lab-2node.yaml"))
    for port in (p for p in host_ports(plan, plan.node_types["hgx"]) if p.netdev and p.rdma):
        (base / "sys" / "class" / "infiniband" / port.rdma / "device" / "net" / port.netdev).mkdir(parents=True)
        (base / "sys" / "class" / "net" / port.netdev).mkdir(parents=True)
    out["host_network_preflight_sysfs_root"] = str(base / "sys")
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


def snapshot(roots: tuple[str, ...]) -> dict[str, tuple]:
    """Every path under ``roots`` with its type and mode, size and modification time (an absent root: ())."""
    out: dict[str, tuple] = {}
    for root in roots:
        if not os.path.lexists(root):
            out[root] = ()
            continue
        for directory, dirs, files in os.walk(root):
            for name in [".", *dirs, *files]:
                path = os.path.normpath(os.path.join(directory, name))
                st = os.lstat(path)
                out[path] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    playbook = tool("ansible-playbook")
    vault = tool("ansible-vault")
    require_root("the check-mode run needs root (apt simulation and reads of root-owned files)")
    if not Path("/usr/bin/python3").is_file():
        pytest.fail("the check-mode run runs modules with /usr/bin/python3 (Debian's python3 with python3-apt)")
    base = tmp_path_factory.mktemp("check")
    (base / "ci-check.yaml").write_text(to_yaml(check_blueprint()))
    ansible_dir = render(base / "ci-check.yaml", base / "out") / "ansible"
    (ansible_dir / "host_vars").mkdir()  # test-only: gpu01 is this machine
    (ansible_dir / "host_vars" / "gpu01.yml").write_text("ansible_connection: local\n"
                                                         "ansible_python_interpreter: /usr/bin/python3\n")
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
    overrides = base / "check-vars.yml"
    overrides.write_text(yaml.safe_dump(hardware_check_vars(base)))
    tmp = base / "tmp"
    tmp.mkdir()
    env = {"ANSIBLE_HOME": str(base / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp / "local"),
           "ANSIBLE_REMOTE_TEMP": str(tmp / "remote"), "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(base / "facts"),
           "TMPDIR": str(tmp)}
    before = snapshot(WRITTEN)
    result = run([playbook, "site.yml", "--check", "--limit", "gpu01", "--tags", f"{HARDWARE_ROLES},munge",
                  "-e", f"@{overrides}", "-e", f"@{secrets_file}", "--vault-password-file", str(password)],
                 cwd=ansible_dir, timeout=600, env=env)
    return result, before, snapshot(WRITTEN)


def test_hardware_roles_pass_in_check_mode(checked):
    """The GPU node's hardware roles (written elsewhere) in check mode: preflight, repository and
    configuration tasks run; package installs are skipped by the roles because the repository is not there."""
    result, *_ = checked
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert recap(result.stdout)["gpu01"]["failed"] == 0
    assert "is the release slurm.conf was rendered for" in result.stdout  # site.yml's preflight ran and passed
    for role in HARDWARE_ROLES.split(","):
        assert f"TASK [{role} : " in result.stdout, role


def test_site_yml_reads_the_vault_encrypted_secrets(checked):
    """munge's preflight accepts the key (set, at least 32 characters) and its key task runs: the key came out of
    the encrypted file (group_vars/all.yml: munge_key is vault_munge_key)."""
    result, *_ = checked
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "TASK [munge : Assert the MUNGE key is long enough]" in result.stdout
    assert re.search(r"^TASK \[munge : Install the MUNGE key from the vault\].*\n(ok|changed): \[gpu01\]",
                     result.stdout, re.M), result.stdout[-4000:]


def test_check_mode_changes_nothing_here(checked):
    result, before, after = checked
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, changed
