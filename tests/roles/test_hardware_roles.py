"""The GPU-node roles (nvidia_driver, doca_ofed, dcgm, enroot_pyxis): structure and check-mode runs.

What runs here, on a machine without GPUs, RDMA adapters or network access to NVIDIA:

* Every variable in ``defaults/main.yml`` has an entry in ``meta/argument_specs.yml`` and a line in the README.
* Each role applied to localhost in check mode (``--check --diff``, connection local) with its hardware
  checks skipped and its download URLs pointed at local ``file://`` fixtures: the run completes, the task
  names show the package names it would install, and the files it would write have the expected content.
* In the same playbook, bad inputs inside ``block``/``rescue``: the preflight asserts fail with their
  ``fail_msg`` and role argument validation (meta/argument_specs.yml) rejects wrong types.
* enroot_pyxis's downloads for real (``--tags download``, into temporary directories): a tampered file is
  refused by its checksum. Check mode cannot show that (``get_url`` only sends HEAD there).

The playbooks of all roles run concurrently, once per module (``role_runs``). Nothing outside the
temporary directories is changed: check mode everywhere except the download run. A missing ansible-playbook is a
skip, and a failure in CI (tests/conftest.py). (ansible-lint's production profile over every role:
tests/integration/test_ansible_real.py.)
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_root, require_tool

REPO = Path(__file__).resolve().parents[2]
ROLES_DIR = REPO / "roles"
ROLES = ("nvidia_driver", "nvidia_imex", "doca_ofed", "dcgm", "enroot_pyxis")
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def _has_pci_device(vendor: str, classes: tuple[str, ...] = ()) -> bool:
    """Whether sysfs lists a PCI device of ``vendor`` (e.g. "0x10de"), optionally of one of ``classes``."""
    for device in Path("/sys/bus/pci/devices").glob("*"):
        try:
            if (device / "vendor").read_text().strip() != vendor:
                continue
            if not classes or (device / "class").read_text().strip()[:6] in classes:
                return True
        except OSError:
            continue
    return False


HAS_NVIDIA_GPU = _has_pci_device("0x10de", ("0x0300", "0x0302"))
HAS_MELLANOX = _has_pci_device("0x15b3")


# --------------------------------------------------------------------------------------------------
# Structure: argument specs and READMEs cover every default
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_every_default_has_an_argument_spec_and_is_documented(role):
    role_dir = ROLES_DIR / role
    defaults = yaml.safe_load((role_dir / "defaults/main.yml").read_text()) or {}
    specs = yaml.safe_load((role_dir / "meta/argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    readme = (role_dir / "README.md").read_text()

    assert sorted(defaults) == sorted(options), "defaults/main.yml and meta/argument_specs.yml differ"
    for name, spec in options.items():
        assert name.startswith(role + "_"), f"{name} is not prefixed with the role name"
        assert spec.get("description"), f"{name} has no description"
        if "default" in spec or "{{" not in str(defaults[name]):
            assert spec.get("default") == defaults[name], f"{name}: argument spec default differs from defaults/main.yml"
        else:  # a default templated from facts cannot sit in the spec (the spec is templated before facts exist)
            assert "Default" in " ".join(spec["description"]), f"{name}: describe the templated default"
        assert f"`{name}`" in readme, f"{name} is not documented in {role}/README.md"


@pytest.mark.parametrize("role", ROLES)
def test_galaxy_layout_and_named_tagged_tasks(role):
    role_dir = ROLES_DIR / role
    for part in ("preflight.yml", "install.yml", "configure.yml"):
        assert (role_dir / "tasks" / part).is_file(), part
    main = yaml.safe_load((role_dir / "tasks/main.yml").read_text())
    assert [t["ansible.builtin.import_tasks"] for t in main] == ["preflight.yml", "install.yml", "configure.yml"]
    for task in main:
        assert role in task["tags"], f"{task['name']} is not tagged {role}"
    meta = yaml.safe_load((role_dir / "meta/main.yml").read_text())["galaxy_info"]
    assert meta["min_ansible_version"] and meta["platforms"]

    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))

    for path in sorted((role_dir / "tasks").glob("*.yml")) + [role_dir / "handlers/main.yml"]:
        for task in walk(yaml.safe_load(path.read_text())):
            assert task.get("name"), f"unnamed task in {path.relative_to(REPO)}: {task}"


# --------------------------------------------------------------------------------------------------
# Check-mode runs on localhost
# --------------------------------------------------------------------------------------------------


def _case_block(role: str, case: str, role_vars: dict, tags: str | None = None) -> list[dict]:
    """A block that applies ``role`` with ``role_vars`` and prints OUTCOME <case> OK|FAILED: <msg>.

    With ``tags``, the include carries that tag (a dynamic include must match ``--tags`` itself) and the
    outcome reports are tagged ``always``.
    """
    include = {"name": f"Case {case}", "ansible.builtin.include_role": {"name": role}, "vars": role_vars}
    ok = {"name": f"Outcome {case} ok", "ansible.builtin.debug": {"msg": f"OUTCOME {case} OK"}}
    failed = {
        "name": f"Outcome {case} failed",
        "ansible.builtin.debug": {
            "msg": f"OUTCOME {case} FAILED: {{{{ ansible_failed_result.msg | default('') }}}}"
            # a failed loop reports "One or more items failed": add the failed items' messages
            "{{ ansible_failed_result.results | default([]) | selectattr('failed', 'defined') | selectattr('failed')"
            " | map(attribute='msg') | map('regex_replace', '^', ' | ') | join('') }}"
        },
    }
    if tags:
        include["tags"] = [tags]
        ok["tags"] = failed["tags"] = ["always"]
    return [{"name": f"Block {case}", "block": [include, ok], "rescue": [failed]}]


class RoleRun:
    """One ansible-playbook run of a role with several cases, split into per-case output and outcomes."""

    def __init__(self, output: str, returncode: int):
        self.output = output
        self.returncode = returncode
        self.sections: dict[str, str] = {}
        current = None
        for line in output.splitlines():
            match = re.match(r"^TASK \[Case (\S+)\]", line)
            if match:
                current = match.group(1)
            if current is not None:
                self.sections[current] = self.sections.get(current, "") + line + "\n"
        self.outcomes = {
            m.group(1): (m.group(2), m.group(3) or "")
            for m in re.finditer(r'"msg": "OUTCOME (\S+) (OK|FAILED)(?:: (.*))?"\n', output)
        }

    def ok(self, case: str) -> str:
        assert self.outcomes.get(case, ("missing", ""))[0] == "OK", self._show(case)
        return self.sections[case]

    def failed(self, case: str) -> str:
        """The failure message of ``case`` (JSON-escaped, as the default callback prints it)."""
        status, message = self.outcomes.get(case, ("missing", ""))
        assert status == "FAILED", self._show(case)
        return message

    def _show(self, case: str) -> str:
        return f"case {case}: {self.outcomes.get(case)}\n--- output of the case ---\n{self.sections.get(case, self.output)}"


def _playbook_command(workdir: Path, role: str, cases: dict[str, dict], check: bool, tags: str | None) -> list[str]:
    """Write a playbook applying ``role`` once per case (plus config and inventory) into ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    tasks = [task for case, role_vars in cases.items() for task in _case_block(role, case, role_vars, tags)]
    play = [{"name": f"{role} ({'check mode' if check else 'tags ' + str(tags)})", "hosts": "localhost",
             "connection": "local", "gather_facts": True, "tasks": tasks}]
    playbook = workdir / "playbook.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    (workdir / "ansible.cfg").write_text(
        textwrap.dedent(
            f"""\
            [defaults]
            roles_path = {ROLES_DIR}
            stdout_callback = default
            retry_files_enabled = False
            interpreter_python = auto_silent
            deprecation_warnings = False
            local_tmp = {workdir / "ansible-tmp"}
            """
        )
    )
    # The Python that runs ansible-playbook also runs the modules, as for Ansible's implicit localhost.
    (workdir / "inventory.ini").write_text(
        'localhost ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}"\n'
    )
    options = (["--check", "--diff"] if check else []) + (["--tags", tags] if tags else [])
    return [require_tool("ansible-playbook"), *options, "-i", str(workdir / "inventory.ini"), str(playbook)]


def _run_all(jobs: dict[str, tuple[Path, str, dict, bool, str | None]]) -> dict[str, RoleRun]:
    """Run the playbooks of ``jobs`` (name -> workdir, role, cases, check, tags) concurrently."""
    running = {}
    for name, (workdir, role, cases, check, tags) in jobs.items():
        command = _playbook_command(workdir, role, cases, check, tags)
        env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(workdir / "ansible.cfg"),
            "ANSIBLE_HOME": str(workdir / "ansible-home"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "True",
        }
        out = (workdir / "output.txt").open("w")
        process = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        running[name] = (process, out, workdir)
    runs = {}
    for name, (process, out, workdir) in running.items():
        try:
            process.wait(timeout=600)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        out.close()
        runs[name] = RoleRun((workdir / "output.txt").read_text(), process.returncode)
    return runs


def _offline(role: str, extra: dict | None = None) -> dict:
    """Variables every check-mode case sets: no services (no systemd here), no hardware checks."""
    skip = "enroot_pyxis_skip_host_check" if role == "enroot_pyxis" else f"{role}_skip_hardware_check"
    return {f"{role}_manage_services": False, skip: True, **(extra or {})}


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


ENROOT_DEBS = [f"enroot_3.5.0-1_{DEB_ARCH}.deb", f"enroot+caps_3.5.0-1_{DEB_ARCH}.deb"]
ENROOT_HARDENED = f"enroot-hardened_3.5.0-1_{DEB_ARCH}.deb"
PYXIS_SOURCE = b"pyxis source stand-in"


def _fixtures(root: Path) -> dict:
    """Local stand-ins for what the roles download at install time (keys, release .debs, pyxis source)."""
    fixtures = root / "fixtures"
    fixtures.mkdir(parents=True)
    key = fixtures / "repo-key.asc"
    key.write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\ntest fixture\n-----END PGP PUBLIC KEY BLOCK-----\n")
    for name in [*ENROOT_DEBS, ENROOT_HARDENED]:
        (fixtures / name).write_bytes(name.encode())
    (fixtures / "pyxis-0.20.0.tar.gz").write_bytes(PYXIS_SOURCE)
    return {"root": root, "dir": fixtures, "key_url": key.as_uri(), "source_url": (fixtures / "pyxis-0.20.0.tar.gz").as_uri()}


def _nvidia_driver_cases(fx: dict) -> dict[str, dict]:
    base = _offline("nvidia_driver", {"nvidia_driver_repo_key_url": fx["key_url"]})
    return {
        "fabric_manager": {**base, "nvidia_driver_branch": "550", "nvidia_driver_fabric_manager": True},
        "plain": {**base, "nvidia_driver_branch": "570", "nvidia_driver_flavour": "proprietary"},
        "unversioned_branch": {**base, "nvidia_driver_branch": "595", "nvidia_driver_fabric_manager": True},
        "bad_branch": {**base, "nvidia_driver_branch": "abc"},
        "server_flavour_on_debian": {**base, "nvidia_driver_flavour": "server-open"},
        "bad_image_stack": {**base, "nvidia_driver_image_stack": "wipe"},
        "no_gpu": {**base, "nvidia_driver_skip_hardware_check": False},
        "wrong_type": {**base, "nvidia_driver_fabric_manager": "sometimes"},
        "bad_choice": {**base, "nvidia_driver_flavour": "closed"},
    }


def _nvidia_imex_cases(fx: dict) -> dict[str, dict]:
    base = _offline("nvidia_imex", {"nvidia_imex_peers": ["10.0.0.1", "10.0.0.2"]})
    return {
        "domain": {**base, "nvidia_imex_branch": "570"},
        "channel0": {**base, "nvidia_imex_channel0": True},
        "unversioned_branch": {**base, "nvidia_imex_branch": "595"},
        "bad_peer": {**base, "nvidia_imex_peers": ["gpu01"]},
        "no_peers": {**base, "nvidia_imex_peers": []},
        "not_a_peer": {**base, "nvidia_imex_skip_hardware_check": False, "nvidia_imex_peers": ["192.0.2.1"]},
        "wrong_type": {**base, "nvidia_imex_channel0": "sometimes"},
    }


def _doca_ofed_cases(fx: dict) -> dict[str, dict]:
    base = _offline("doca_ofed", {"doca_ofed_repo_key_url": fx["key_url"]})
    return {
        "default": base,
        "pinned_package": {**base, "doca_ofed_package": "doca-roce", "doca_ofed_package_version": "25.10-1",
                           "doca_ofed_install_kernel_headers": False, "doca_ofed_repo_os": "ubuntu24.04"},
        "latest": {**base, "doca_ofed_version": "latest"},
        "bad_module": {**base, "doca_ofed_kernel_modules": ["ib_umad", "rdma_ucm; reboot"]},
        "no_adapter": {**base, "doca_ofed_skip_hardware_check": False},
        "wrong_type": {**base, "doca_ofed_reboot_timeout": "soon"},
    }


def _dcgm_cases(fx: dict) -> dict[str, dict]:
    base = _offline("dcgm", {"dcgm_repo_key_url": fx["key_url"]})
    return {
        "package_exporter": base,
        "container_exporter_cuda12": {**base, "dcgm_cuda_major": 12, "dcgm_proprietary": False,
                                      "dcgm_exporter_method": "container", "dcgm_exporter_port": 9500},
        "no_exporter": {**base, "dcgm_exporter": False, "dcgm_version": ""},
        "bad_version": {**base, "dcgm_version": "4.4"},
        "bad_port": {**base, "dcgm_exporter_port": 70000},
        "no_gpu": {**base, "dcgm_skip_hardware_check": False},
        "wrong_type": {**base, "dcgm_exporter_port": "metrics"},
        "bad_cuda_major": {**base, "dcgm_cuda_major": 10},
        # the shared preflight (roles/internal_common) with a list of distributions this host is not in
        "unsupported_distribution": {**base, "dcgm__supported": {"Ubuntu": ["20.04", "22.04"], "Debian": ["11"]}},
    }


def _enroot_pyxis_base(fx: dict, download_dir: Path) -> dict:
    return _offline("enroot_pyxis", {
        "enroot_pyxis_enroot_release_url": fx["dir"].as_uri(),
        "enroot_pyxis_nvidia_container_key_url": fx["key_url"],
        "enroot_pyxis_pyxis_source_url": fx["source_url"],
        "enroot_pyxis_download_dir": str(download_dir),
        "enroot_pyxis_slurm_conf_dir": str(fx["root"] / "slurm"),
    })


def _enroot_pyxis_cases(fx: dict) -> dict[str, dict]:
    download_dir = fx["root"] / "downloads"  # exists: check mode then fetches (HEAD) instead of skipping
    download_dir.mkdir()
    base = _enroot_pyxis_base(fx, download_dir)
    verified = {**base, "enroot_pyxis_require_checksums": True, "enroot_pyxis_pyxis_source_checksum": _sha256(PYXIS_SOURCE),
                "enroot_pyxis_enroot_checksums": {name: _sha256(name.encode()) for name in ENROOT_DEBS}}
    return {
        "verified": verified,
        # coreutils stands in for nvslurm-plugin-pyxis, which lives in a site repository, not in Debian's.
        "packaged_pyxis_hardened": {**base, "enroot_pyxis_enroot_flavour": "hardened", "enroot_pyxis_enroot_caps": False,
                                    "enroot_pyxis_pyxis_install_method": "package", "enroot_pyxis_pyxis_package": "coreutils",
                                    "enroot_pyxis_pyxis_container_scope": "job"},
        "apparmor_profile": {**base, "enroot_pyxis_apparmor_profile": True},
        "missing_checksums": {**base, "enroot_pyxis_require_checksums": True},
        "shared_runtime_path": {**base, "enroot_pyxis_runtime_path": "/run/enroot"},
        "wrong_type": {**base, "enroot_pyxis_enroot_caps": "maybe"},
        "bad_choice": {**base, "enroot_pyxis_pyxis_container_scope": "node"},
        "unsupported_distribution": {**base, "enroot_pyxis__supported": {"Ubuntu": ["20.04"]}},  # no note
    }


def _download_cases(fx: dict) -> dict[str, dict]:
    """Real (not check-mode) runs with ``--tags download``: only the fetches run, into temporary directories."""
    good = {name: _sha256(name.encode()) for name in ENROOT_DEBS}

    def case(name: str, checksums: dict) -> dict:
        return {**_enroot_pyxis_base(fx, fx["root"] / name), "enroot_pyxis_enroot_checksums": checksums,
                "enroot_pyxis_pyxis_source_checksum": _sha256(PYXIS_SOURCE), "enroot_pyxis_require_checksums": True}

    return {"good": case("good", good),
            "tampered": case("tampered", {**good, ENROOT_DEBS[1]: _sha256(b"what the release page says")})}


@pytest.fixture(scope="module")
def role_runs(tmp_path_factory) -> dict[str, tuple[RoleRun, dict, dict]]:
    """Every role's playbook, run concurrently once for the module: name -> (run, cases, fixtures)."""
    require_tool("ansible-playbook")
    require_root("the check-mode role runs simulate apt and read root-owned files")
    root = tmp_path_factory.mktemp("roles")
    fx = _fixtures(root)
    plans = {
        "nvidia_driver": ("nvidia_driver", _nvidia_driver_cases(fx), True, None),
        "nvidia_imex": ("nvidia_imex", _nvidia_imex_cases(fx), True, None),
        "doca_ofed": ("doca_ofed", _doca_ofed_cases(fx), True, None),
        "dcgm": ("dcgm", _dcgm_cases(fx), True, None),
        "enroot_pyxis": ("enroot_pyxis", _enroot_pyxis_cases(fx), True, None),
        "enroot_pyxis_download": ("enroot_pyxis", _download_cases(fx), False, "download"),
    }
    runs = _run_all({name: (root / "runs" / name, role, cases, check, tags)
                     for name, (role, cases, check, tags) in plans.items()})
    return {name: (runs[name], plans[name][1], fx) for name in plans}


def _completed(role_runs, name: str) -> RoleRun:
    run, cases, _ = role_runs[name]
    assert run.returncode == 0, run.output
    assert set(run.outcomes) == set(cases), run.output
    return run


def test_nvidia_driver_check_mode(role_runs):
    run = _completed(role_runs, "nvidia_driver")

    out = run.ok("fabric_manager")
    assert re.search(r"TASK \[nvidia_driver : Install NVIDIA packages nvidia-open-550 nvidia-fabricmanager-550 "
                     r"libnvidia-nscq-550\]", out), out
    assert "URIs: https://developer.download.nvidia.com/compute/cuda/repos/" in out
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in out
    assert "TASK [nvidia_driver : Decide whether to keep or replace the installed driver]" in out
    assert "no NVIDIA driver installed" in out  # this machine has none: nothing kept, nothing removed

    out = run.ok("plain")
    assert "Install NVIDIA packages cuda-drivers-570]" in out

    out = run.ok("unversioned_branch")  # from 590 the branch lives in the pinning package only
    assert "Install the branch pinning package nvidia-driver-pinning-595]" in out
    assert "Install NVIDIA packages nvidia-driver-pinning-595 nvidia-open nvidia-fabricmanager libnvidia-nscq]" in out

    assert 'nvidia_driver_branch must be a driver branch of three digits such as \\"580\\"' in run.failed("bad_branch")
    assert 'got \\"abc\\"' in run.failed("bad_branch")
    assert "exist only in the Ubuntu archive" in run.failed("server_flavour_on_debian")
    assert "Validation of arguments failed" in run.failed("bad_image_stack")
    if HAS_NVIDIA_GPU:
        run.ok("no_gpu")
    else:
        assert "no NVIDIA GPU (PCI vendor 10de" in run.failed("no_gpu")
    assert "Validation of arguments failed" in run.failed("wrong_type")
    assert "nvidia_driver_fabric_manager" in run.failed("wrong_type")
    assert "Validation of arguments failed" in run.failed("bad_choice")


def test_nvidia_imex_check_mode(role_runs):
    run = _completed(role_runs, "nvidia_imex")
    out = run.ok("domain")
    assert "TASK [nvidia_imex : Install nvidia-imex-570]" in out
    assert "+10.0.0.1\n+10.0.0.2\n" in out  # nodes_config.cfg from the variable, not from other hosts' facts
    assert "TASK [nvidia_imex : Leave IMEX channels to Slurm's switch/nvidia_imex]" in out
    assert "+options nvidia NVreg_CreateImexChannel0=1" in run.ok("channel0")
    assert "TASK [nvidia_imex : Install nvidia-imex]" in run.ok("unversioned_branch")
    assert "must list the IP address of every node of the IMEX" in run.failed("bad_peer")
    assert "must list the IP address of every node of the IMEX" in run.failed("no_peers")
    assert "is in nvidia_imex_peers" in run.failed("not_a_peer")
    assert "Validation of arguments failed" in run.failed("wrong_type")


def test_doca_ofed_check_mode(role_runs):
    run = _completed(role_runs, "doca_ofed")

    out = run.ok("default")
    assert re.search(r"Install DOCA-OFED packages doca-ofed linux-headers-\S+\]", out), out
    assert "URIs: https://linux.mellanox.com/public/repo/doca/3.2.1/" in out
    assert "+ib_umad\n+rdma_ucm\n" in out
    out = run.ok("pinned_package")
    assert "Install DOCA-OFED packages doca-roce=25.10-1]" in out
    assert "/doca/3.2.1/ubuntu24.04/" in out

    assert 'doca_ofed_version must be a DOCA-Host release such as \\"3.2.1\\"' in run.failed("latest")
    assert "doca_ofed_kernel_modules must be kernel module names" in run.failed("bad_module")
    if HAS_MELLANOX:
        run.ok("no_adapter")
    else:
        assert "no Mellanox/NVIDIA networking device (PCI vendor 15b3" in run.failed("no_adapter")
    assert "Validation of arguments failed" in run.failed("wrong_type")


def test_dcgm_check_mode(role_runs):
    run = _completed(role_runs, "dcgm")

    out = run.ok("package_exporter")
    assert ("Install DCGM packages datacenter-gpu-manager-4-core=1:4.4.1-1 datacenter-gpu-manager-4-cuda13=1:4.4.1-1 "
            "datacenter-gpu-manager-4-proprietary=1:4.4.1-1 datacenter-gpu-manager-4-proprietary-cuda13=1:4.4.1-1 "
            "datacenter-gpu-manager-exporter]") in out
    assert "+ExecStart=/usr/bin/dcgm-exporter -r localhost:5555 -a :9400\n" in out

    out = run.ok("container_exporter_cuda12")
    assert "Install DCGM packages datacenter-gpu-manager-4-core=1:4.4.1-1 datacenter-gpu-manager-4-cuda12=1:4.4.1-1]" in out
    assert re.search(r"\+ExecStart=/usr/bin/docker run .*--gpus all nvcr\.io/nvidia/k8s/dcgm-exporter:\S+ "
                     r"-r localhost:5555 -a :9500\n", out), out

    out = run.ok("no_exporter")
    packages = re.search(r"Install DCGM packages ([^\]]*)\]", out).group(1).split()
    assert packages == ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13",
                        "datacenter-gpu-manager-4-proprietary", "datacenter-gpu-manager-4-proprietary-cuda13"]

    assert "dcgm_version must be the apt version of a DCGM 4 package" in run.failed("bad_version")
    assert "dcgm_exporter_port must be a TCP port number (1-65535); got 70000" in run.failed("bad_port")
    if HAS_NVIDIA_GPU:
        run.ok("no_gpu")
    else:
        assert "no NVIDIA GPU (PCI vendor 10de" in run.failed("no_gpu")
    assert "Validation of arguments failed" in run.failed("wrong_type")
    assert "dcgm_exporter_port" in run.failed("wrong_type")
    assert "Validation of arguments failed" in run.failed("bad_cuda_major")
    assert re.search(r"dcgm supports Ubuntu 20\.04/22\.04 and Debian 11 \(DCGM 4's Debian/Ubuntu targets\); "
                     r"this host is \w+ ", run.failed("unsupported_distribution"))


def test_enroot_pyxis_check_mode(role_runs):
    run = _completed(role_runs, "enroot_pyxis")
    slurm_dir = role_runs["enroot_pyxis"][2]["root"] / "slurm"

    out = run.ok("verified")
    assert f"Install enroot packages {ENROOT_DEBS[0]} {ENROOT_DEBS[1]}]" in out
    assert re.search(rf"changed: \[localhost\] => \(item={re.escape(ENROOT_DEBS[1])}\)", out), out  # fetched
    assert "+ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)\n" in out
    assert "+d /run/enroot 1777 root root -\n" in out  # tmpfiles.d: /run is emptied at every boot
    assert "Create the enroot parent directories (world-writable, sticky)" in out
    assert ("+required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis container_scope=global "
            "sbatch_support=1 execute_entrypoint=0\n") in out
    assert f"include {slurm_dir}/plugstack.conf.d/*.conf" in out
    # enroot's GPU hook: NVIDIA's libnvidia-container repository, signed by its own key only
    assert "+Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc\n" in out
    assert f"+URIs: https://nvidia.github.io/libnvidia-container/stable/deb/{DEB_ARCH}\n" in out
    assert "/etc/apparmor.d/enroot" not in out  # the profile only where asked (Ubuntu 24.04)

    out = run.ok("apparmor_profile")
    assert "Write enroot's AppArmor profile (user namespaces for enroot-nsenter)" in out
    assert "+/usr/bin/enroot-nsenter flags=(unconfined) {\n+    allow userns create,\n" in out

    out = run.ok("packaged_pyxis_hardened")
    assert f"Install enroot packages {ENROOT_HARDENED}]" in out
    assert "Install the pyxis package coreutils]" in out
    assert re.search(r"\+required /usr/lib/\S+-linux-gnu/slurm/spank_pyxis\.so runtime_path=/run/pyxis container_scope=job ",
                     out), out

    message = run.failed("missing_checksums")
    assert "enroot_pyxis_require_checksums is true but these downloads have no" in message
    assert ENROOT_DEBS[0] in message and "pyxis source" in message
    message = run.failed("shared_runtime_path")
    assert "must be absolute paths with a per-user or per-group part" in message
    assert "enroot_pyxis_runtime_path" in message and "enroot_pyxis_cache_path" not in message
    assert "Validation of arguments failed" in run.failed("wrong_type")
    assert "Validation of arguments failed" in run.failed("bad_choice")
    assert re.search(r"enroot_pyxis supports Ubuntu 20\.04; this host is \w+ ", run.failed("unsupported_distribution"))


def test_enroot_pyxis_downloads_are_checksum_verified(role_runs):
    """Check mode cannot verify checksums (get_url only sends HEAD), so the downloads run for real:
    ``--tags download`` runs nothing but the fetches, into temporary directories, from file:// fixtures."""
    run = _completed(role_runs, "enroot_pyxis_download")
    root = role_runs["enroot_pyxis_download"][2]["root"]

    run.ok("good")
    for name in ENROOT_DEBS:
        assert (root / "good" / name).read_bytes() == name.encode()
    assert (root / "good" / "pyxis-0.20.0.tar.gz").read_bytes() == PYXIS_SOURCE
    assert "did not match" in run.failed("tampered")
    assert not (root / "tampered" / ENROOT_DEBS[1]).exists()
    assert "Install enroot packages" not in run.output  # --tags download fetched and installed nothing
