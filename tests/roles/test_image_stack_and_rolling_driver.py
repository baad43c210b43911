"""The driver and DOCA-OFED roles as parsed YAML: the installed stack is detected before any install task, the
keep path skips every install task, and a driver change drains, waits, installs, reboots, checks and resumes in
that order through the shared node_drain role's one entry point (tasks_from: change). (No GPU, RDMA adapter or systemd here: the order is what can be
asserted; the check-mode runs are in test_hardware_roles.py, ansible-lint in tests/integration/test_ansible_real.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterctl.targets import render_targets
from clusterctl.targets.ansible.shipped_roles import shared_roles
from clusterctl import yamlout
from tests.helpers import plan_of, shipped

ROLES = Path(__file__).resolve().parents[2] / "roles"
INSTALLING = ("ansible.builtin.get_url", "ansible.builtin.template", "ansible.builtin.reboot")


def _tasks(role: str, name: str) -> list[dict]:
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text())


def _names(tasks: list[dict]) -> list[str]:
    return [t["name"] for t in tasks]


def _installs(task: dict) -> bool:
    """A task that changes packages or writes the repository (check-mode apt only resolves)."""
    if "ansible.builtin.apt" in task:
        return not task.get("check_mode", False)
    if "ansible.builtin.command" in task:
        return task.get("changed_when") is True
    return any(k in task for k in INSTALLING)


def _when(task: dict) -> str:
    when = task.get("when", "")
    return " and ".join(when) if isinstance(when, list) else str(when)


def test_driver_detection_runs_before_any_install_task():
    tasks = _tasks("nvidia_driver", "install.yml")
    decide = _names(tasks).index("Decide whether to keep or replace the installed driver")
    assert _names(tasks)[:decide] == ["Read the NVIDIA kernel module version on disk",
                                      "Read the NVIDIA kernel module version in the kernel",
                                      "Ask nvidia-smi for the driver version",
                                      "Look for the NVIDIA .run installer's uninstaller"]
    first_install = next(i for i, t in enumerate(tasks) if _installs(t))
    assert decide < first_install


def test_driver_keep_path_skips_every_install_task():
    for t in _tasks("nvidia_driver", "install.yml") + _tasks("nvidia_driver", "change.yml"):
        if _installs(t) and "ansible.builtin.reboot" not in t:
            assert "not nvidia_driver__keep" in _when(t) or "nvidia_driver__remove" in _when(t), t["name"]


def test_driver_change_drains_waits_installs_reboots_then_checks_and_resumes():
    """Through node_drain's one path (tasks/change.yml: drain, wait, apply, reboot, after, check, resume)."""
    install = _names(_tasks("nvidia_driver", "install.yml"))
    assert install[-1] == "Check whether the driver packages would change"
    (task,) = _tasks("nvidia_driver", "configure.yml")  # after install.yml (tasks/main.yml)
    assert task["ansible.builtin.include_role"] == {"name": "node_drain", "tasks_from": "change"}
    v = task["vars"]
    assert v["node_drain_reason"] == "{{ nvidia_driver_drain_reason }}"
    assert "nvidia_driver__pending is changed" in v["node_drain_needed"]
    assert (v["node_drain_apply_tasks"], v["node_drain_after_tasks"]) == ("change", "services")
    assert v["node_drain_reboot"] == "{{ nvidia_driver_reboot_on_change | bool and nvidia_driver__module_stale | bool }}"
    assert v["node_drain_hold"] == "{{ nvidia_driver__module_stale | bool and not nvidia_driver_reboot_on_change | bool }}"
    assert v["node_drain_check_argv"] == "{{ nvidia_driver_health_check_argv }}"
    applied = _names(_tasks("nvidia_driver", "change.yml"))
    assert (applied.index("Remove the driver installed by NVIDIA's .run installer")
            < applied.index("Install NVIDIA packages {{ nvidia_driver__all_packages | join(' ') }}"))
    assert _names(_tasks("node_drain", "change.yml")) == [
        "Drain the node and wait until it runs no job", "Make the change (the caller's apply tasks)",
        "Reboot to load what the change installed", "Start what runs after the change (the caller's after tasks)",
        "Check the node and resume it", "Hold what the change installed, and the kernel (only this path changes them)"]
    services = _names(_tasks("nvidia_driver", "services.yml"))
    assert services[0] == "Read the NVIDIA kernel module version in the kernel after the change"
    assert services[-1] == "Enable the NVIDIA services"
    defaults = yaml.safe_load((ROLES / "nvidia_driver" / "defaults" / "main.yml").read_text())
    assert defaults["nvidia_driver_drain_reason"] == "clusterctl: driver update"
    assert defaults["nvidia_driver_health_check_argv"] == ["/usr/local/sbin/node-health-check", "--no-drain"]


def test_node_drain_is_the_one_drain_wait_resume_piece():
    assert _names(_tasks("node_drain", "drain.yml")) == [
        "Read this node's state from slurmctld", "Drain the node so that no new job starts on it",
        "Wait until the node runs no job", "Record whether the node runs no job",
        "Report a node left drained with its jobs still running"]
    resume = _tasks("node_drain", "resume.yml")
    assert _names(resume) == ["Read the node's drain reason from slurmctld", "Check the node before it takes jobs again",
                              "Resume the node this role drained"]
    assert "('Reason=' ~ node_drain_reason) in node_drain__state.stdout" in _when(resume[-1])
    assert "('Reason=' ~ node_drain_reason) in node_drain__state.stdout" in _when(resume[1])
    for role in ("slurm_compute", "nvidia_driver", "doca_ofed", "nvidia_imex"):  # nobody else drains by hand
        for path in (ROLES / role / "tasks").glob("*.yml"):
            assert "State=DRAIN" not in path.read_text(), path


def test_doca_detection_runs_before_any_install_task_and_keep_skips_them():
    tasks = _tasks("doca_ofed", "install.yml")
    names = _names(tasks)
    decide = names.index("Record the keep and remove decisions")
    assert names[:2] == ["Ask ofed_info which OFED stack is installed", "Read the installed DOCA profile package version"]
    assert decide < next(i for i, t in enumerate(tasks) if _installs(t))
    applied = _tasks("doca_ofed", "change.yml")
    changed = _names(applied)
    assert (changed.index("Remove MLNX_OFED with its uninstall script")
            < changed.index("Install DOCA-OFED packages {{ doca_ofed__packages | join(' ') }}"))
    uninstall = applied[changed.index("Remove MLNX_OFED with its uninstall script")]
    assert uninstall["ansible.builtin.command"]["argv"] == ["{{ doca_ofed_mlnx_ofed_uninstaller }}", "--force"]
    for t in tasks + applied:  # the firmware flash is asked for on its own (doca_ofed_firmware_update)
        if _installs(t) and "ansible.builtin.reboot" not in t and t["name"] != "Update the adapters' firmware":
            assert "not doca_ofed__keep" in _when(t) or "doca_ofed__remove" in _when(t), t["name"]


def test_image_stack_policy_is_rendered_keep_on_cloud_replace_on_premises():
    def policy(data):
        a = yamlout.load(render_targets(plan_of(data))["ansible/group_vars/all.yml"])
        return a["nvidia_driver_image_stack"], a["doca_ofed_image_stack"]

    assert policy(shipped("aws-p5")) == ("keep", "keep")
    assert policy(shipped("lab-2node")) == ("replace", "replace")
    data = shipped("lab-2node")
    data["software"]["image_stack"] = "keep"
    assert policy(data) == ("keep", "keep")


def test_gpu_plays_roll_in_batches_with_the_drain_timeout():
    files = render_targets(plan_of(shipped("lab-2node")))
    site = yamlout.load(files["ansible/site.yml"])
    (gpu,) = [p for p in site if p["hosts"] == "gpu"]
    (compute,) = [p for p in site if p["hosts"] == "compute" and "serial" in p]  # slurmd's play, not the scratch's
    assert gpu["serial"] == compute["serial"] and gpu["max_fail_percentage"] == compute["max_fail_percentage"]
    all_yml = yamlout.load(files["ansible/group_vars/all.yml"])
    assert all_yml["node_drain_timeout_s"] == 3600  # one drain timeout for every idle-node change
    assert "ansible/roles/node_drain/tasks/change.yml" in files
    assert shared_roles({"nvidia_driver"}) == {"node_drain", "internal_common"}


def _includes(role: str, target: str) -> list[tuple[str, dict]]:
    """(entry point, task) of every include_role of ``target`` in ``role``'s task files."""
    tasks = [t for path in sorted((ROLES / role / "tasks").glob("*.yml")) for t in yaml.safe_load(path.read_text())]
    return [(t["ansible.builtin.include_role"]["tasks_from"], t) for t in tasks
            if t.get("ansible.builtin.include_role", {}).get("name") == target]


def test_the_cuda_repository_is_written_by_one_template():
    sources = sorted(p.relative_to(ROLES).as_posix() for p in ROLES.glob("*/templates/nvidia-cuda.sources*"))
    assert sources == ["internal_common/templates/nvidia-cuda.sources.j2"]
    cuda_repo = _tasks("internal_common", "cuda_repo.yml")
    (written,) = [t for t in cuda_repo if "ansible.builtin.template" in t]
    assert written["ansible.builtin.template"]["dest"] == "/etc/apt/sources.list.d/nvidia-cuda.sources"
    for role, manage in (("nvidia_driver", "{{ nvidia_driver_manage_repo | bool and not nvidia_driver__keep }}"),
                         ("dcgm", "{{ dcgm_manage_cuda_repo | bool }}")):
        (task,) = [t for entry, t in _includes(role, "internal_common") if entry == "cuda_repo"]
        assert task["vars"]["internal_common_cuda_repo_manage"] == manage
        assert task["vars"]["internal_common_cuda_repo_base_url"] == f"{{{{ {role}_repo_base_url }}}}"
        assert task["ansible.builtin.include_role"]["apply"]["tags"] == [role, "install"]
        for path in (ROLES / role / "tasks").glob("*.yml"):
            assert "sources.list.d" not in path.read_text(), path


@pytest.mark.parametrize("role", ["nvidia_driver", "dcgm", "doca_ofed", "enroot_pyxis"])
def test_hardware_roles_share_one_preflight_and_pass_every_variable(role):
    specs = yaml.safe_load((ROLES / "internal_common" / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    preflight = _tasks(role, "preflight.yml")
    (first,) = [t for entry, t in _includes(role, "internal_common") if entry == "preflight"]
    assert first == preflight[0]  # before every check of the role's own
    assert first["tags"] == ["always"] and first["ansible.builtin.include_role"]["apply"]["tags"] == [role, "preflight"]
    assert first["vars"]["internal_common_role"] == role
    assert first["vars"]["internal_common_supported"] == f"{{{{ {role}__supported }}}}"
    for entry, task in _includes(role, "internal_common"):
        options = specs[entry]["options"]
        assert all(o["required"] for o in options.values())  # no default: every including role says each one
        assert sorted(task["vars"]) == sorted(options), f"{role} includes {entry} with other variables than its spec"
    for path in (ROLES / role / "tasks").glob("*.yml"):
        assert "ansible.builtin.setup" not in path.read_text() and "__supported[" not in path.read_text(), path
