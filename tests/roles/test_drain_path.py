"""Issue 30, items 1 and 6: changes without needless drains, and every change that needs an idle node through one
drain path (docs/ansible.md, "Rolling changes").

* node_drain's ``tasks_from: change`` runs for real (ansible-playbook, connection local) against a fake ``scontrol``
  that answers from a state file and logs every call: a pending change drains, waits, applies, checks and resumes;
  with nothing pending nothing is drained; a node whose jobs outlive the timeout is left drained and pending, the
  change not applied, and the host does NOT fail (the rollout goes on).
* ``hold.yml`` in check mode against this machine's own dpkg: the packages the patterns match would be held.
* slurm_compute restarts slurmd without any drain; the driver, DOCA-OFED (and NIC firmware) and IMEX peer changes
  include the one entry point; nvidia-imex has no handler left that restarts it under running jobs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from clusterctl import yamlout
from clusterctl.targets import render_targets
from tests.helpers import REPO, plan_of, shipped
from tests.roles import local_converge

ROLES = REPO / "roles"

FAKE_SCONTROL = """#!/bin/sh
# a stand-in for scontrol: `show node` answers from $FAKE_DIR/state, every call is logged
echo "$*" >> "$FAKE_DIR/calls"
case "$1" in
  show) echo "NodeName=$3 Arch=x86_64 State=$(cat "$FAKE_DIR/state") Reason=$(cat "$FAKE_DIR/reason" 2>/dev/null)" ;;
  update) for a in "$@"; do case "$a" in Reason=*) echo "${a#Reason=}" > "$FAKE_DIR/reason" ;; esac; done ;;
esac
"""


def _run(tmp: Path, variables: dict, initial_state: str, check: bool = False) -> tuple[subprocess.CompletedProcess, list[str]]:
    """node_drain tasks_from change on localhost with the fake scontrol; (the run, scontrol's calls)."""
    bin_dir, fake, roles = tmp / "bin", tmp / "fake", tmp / "roles"
    for d in (bin_dir, fake, roles / "fake_change" / "tasks"):
        d.mkdir(parents=True, exist_ok=True)
    (bin_dir / "scontrol").write_text(FAKE_SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    (fake / "state").write_text(initial_state + "\n")
    (roles / "fake_change" / "tasks" / "apply.yml").write_text(yamlout.dump([
        {"name": "Make the fake change", "ansible.builtin.copy": {"content": "applied\n", "dest": str(fake / "applied"),
                                                                    "mode": "0644"}}]))
    play = tmp / "play.yml"
    play.write_text(yamlout.dump([{"name": "drain path", "hosts": "localhost", "connection": "local",
                                   "gather_facts": False, "tasks": [{
                                       "name": "The one path", "ansible.builtin.include_role": {
                                           "name": "node_drain", "tasks_from": "change"},
                                       "vars": {"node_drain_apply_role": "fake_change", "node_drain_apply_tasks": "apply",
                                                "node_drain_reason": "clusterctl: test change",
                                                "node_drain_check_argv": ["true"], "node_drain_poll_s": 0,
                                                **variables}}]}]))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DIR": str(fake),
           "ANSIBLE_ROLES_PATH": f"{ROLES}:{roles}", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "False",
           "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    run = subprocess.run([local_converge.tool("ansible-playbook"), "-i", "localhost,", "-e",
                          f"ansible_python_interpreter={sys.executable}", *(["--check"] if check else []), str(play)],
                         cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    calls = (fake / "calls").read_text().splitlines() if (fake / "calls").exists() else []
    return run, calls


def test_a_pending_change_drains_waits_applies_checks_and_resumes(tmp_path):
    # the fake node is IDLE: the drain is set, the wait ends at once, the change is made, the node resumed
    run, calls = _run(tmp_path, {"node_drain_needed": True}, "IDLE")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "update NodeName=localhost State=DRAIN Reason=clusterctl: test change" in calls
    assert (tmp_path / "fake" / "applied").read_text() == "applied\n"
    assert calls[-1] == "update NodeName=localhost State=RESUME"


def test_nothing_pending_applies_without_a_drain(tmp_path):
    run, calls = _run(tmp_path, {"node_drain_needed": False}, "MIXED")
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "fake" / "applied").is_file()
    assert not [c for c in calls if c.startswith("update")]  # neither drained nor resumed


def test_jobs_outliving_the_timeout_leave_the_node_drained_and_pending_without_failing_the_host(tmp_path):
    """The 3,600 s wait that then failed the host stopped the whole rollout (max_fail_percentage: 0) under one
    7-day job. Now the node stays drained (no new job starts, its jobs run on), the change waits for the next
    run, and the play goes on: failed=0."""
    run, calls = _run(tmp_path, {"node_drain_needed": True, "node_drain_timeout_s": 1}, "MIXED")
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(r"localhost\s*:.*failed=0", run.stdout), run.stdout[-1500:]
    assert "update NodeName=localhost State=DRAIN Reason=clusterctl: test change" in calls
    assert not (tmp_path / "fake" / "applied").exists()
    assert "State=RESUME" not in " ".join(calls)
    assert "still runs jobs after 1 s: left drained" in run.stdout


def test_hold_would_hold_the_matching_installed_packages_in_check_mode(tmp_path):
    """hold.yml against this machine's own dpkg, in check mode (nothing changes here): coreutils, which every
    Debian has, matches its pattern and would be held; nothing else is named."""
    play = tmp_path / "play.yml"
    play.write_text(yamlout.dump([{"name": "hold", "hosts": "localhost", "connection": "local", "gather_facts": False,
                                   "tasks": [{"name": "Hold", "ansible.builtin.include_role": {
                                       "name": "node_drain", "tasks_from": "hold"},
                                       "vars": {"node_drain_hold_patterns": ["coreutils$"], "node_drain_hold_kernel": False,
                                                "node_drain_hold_name": "test"}}]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    run = subprocess.run([local_converge.tool("ansible-playbook"), "-i", "localhost,", "-e",
                          f"ansible_python_interpreter={sys.executable}", "--check", "-v", str(play)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    held = re.findall(r"\(item=([^)]+)\)", run.stdout.split("TASK [node_drain : Hold the packages")[1].split("TASK [")[0])
    assert held == ["coreutils"]


def test_the_unattended_upgrades_blacklist_lists_every_pattern():
    template = (ROLES / "node_drain" / "templates" / "unattended-upgrades-hold.conf.j2").read_text()
    env = jinja2.Environment(keep_trailing_newline=True, trim_blocks=True)
    env.filters["bool"] = bool
    text = env.from_string(template).render(
        ansible_managed="managed", node_drain_hold_patterns=["nvidia-", "libnvidia-"], node_drain_hold_kernel=True,
        node_drain_kernel_patterns=["linux-image-"])
    assert text == ('// managed\n// Packages only clusterctl\'s drain path changes (docs/ansible.md, "Held packages"): '
                    'never upgraded unattended.\nUnattended-Upgrade::Package-Blacklist {\n    "nvidia-";\n'
                    '    "libnvidia-";\n    "linux-image-";\n};\n')


def _tasks(role: str, name: str) -> list[dict]:
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text())


def test_slurmd_restarts_without_a_drain():
    """Item 1: a change of what slurmd reads at start (node lines: one node added) restarts slurmd at once, under
    its jobs (slurmstepd keeps them), in the compute play's batches; no drain anywhere in slurm_compute."""
    for path in (ROLES / "slurm_compute" / "tasks").glob("*.yml"):
        text = path.read_text()
        assert "include_role" not in text and "State=DRAIN" not in text, path
    (block,) = [t for t in _tasks("slurm_compute", "restart.yml") if "block" in t]
    assert [next(k for k in t if k.startswith("ansible.builtin.")) for t in block["block"]] == [
        "ansible.builtin.service", "ansible.builtin.command"]
    assert block["block"][0]["ansible.builtin.service"]["state"] == "restarted"
    assert "NOT_RESPONDING" in block["block"][1]["until"]
    files = render_targets(plan_of(shipped("lab-2node")))
    assert "include_role" not in files["ansible/roles/slurm_compute/tasks/restart.yml"]
    all_yml = yamlout.load(files["ansible/group_vars/all.yml"])
    assert all_yml["node_drain_timeout_s"] == 3600 and "slurm_compute_drain_timeout_s" not in all_yml


def _change_include(role: str, tasks_file: str) -> dict:
    (task,) = [t for t in _tasks(role, tasks_file)
               if (t.get("ansible.builtin.include_role") or {}) == {"name": "node_drain", "tasks_from": "change"}]
    return task["vars"]


@pytest.mark.parametrize("role, tasks_file, apply, reason", [
    ("nvidia_driver", "configure.yml", "change", "{{ nvidia_driver_drain_reason }}"),
    ("doca_ofed", "install.yml", "change", "{{ doca_ofed_drain_reason }}"),
    ("nvidia_imex", "configure.yml", "peers", "{{ nvidia_imex_drain_reason }}"),
])
def test_every_idle_node_change_takes_the_one_entry_point(role, tasks_file, apply, reason):
    vars_ = _change_include(role, tasks_file)
    assert vars_["node_drain_apply_role"] == role and vars_["node_drain_apply_tasks"] == apply
    assert vars_["node_drain_reason"] == reason
    assert (ROLES / role / "tasks" / f"{apply}.yml").is_file()
    for path in (ROLES / role / "tasks").glob("*.yml"):  # nobody drains, reboots or resumes by hand
        text = path.read_text()
        assert "State=DRAIN" not in text and "State=RESUME" not in text and "ansible.builtin.reboot" not in text, path


def test_imex_peer_change_drains_instead_of_restarting_under_jobs():
    assert yaml.safe_load((ROLES / "nvidia_imex" / "handlers" / "main.yml").read_text()) == []
    vars_ = _change_include("nvidia_imex", "configure.yml")
    assert "nvidia_imex__peers_pending is changed" in vars_["node_drain_needed"]
    assert "nvidia_imex__active.rc == 0" in vars_["node_drain_needed"]
    assert vars_["node_drain_after_tasks"] == "service"
    for t in _tasks("nvidia_imex", "configure.yml"):
        assert "notify" not in t, t["name"]
    (peers,) = [t for t in _tasks("nvidia_imex", "configure.yml") if t["name"] == "Check whether the IMEX peer list would change"]
    assert peers["check_mode"] is True


def test_doca_and_firmware_changes_drain_and_the_packages_are_held():
    vars_ = _change_include("doca_ofed", "install.yml")
    assert "doca_ofed__pending is changed" in vars_["node_drain_needed"]
    assert "doca_ofed__firmware_pending" in vars_["node_drain_needed"]
    assert vars_["node_drain_hold_patterns"] == "{{ doca_ofed_hold_patterns }}"
    (flash,) = [t for t in _tasks("doca_ofed", "change.yml") if t["name"] == "Update the adapters' firmware"]
    assert flash["ansible.builtin.command"]["argv"] == ["mlxfwmanager", "-u", "-y"]
    assert _change_include("nvidia_driver", "configure.yml")["node_drain_hold_patterns"] == "{{ nvidia_driver_hold_patterns }}"
    defaults = yaml.safe_load((ROLES / "node_drain" / "defaults" / "main.yml").read_text())
    assert defaults["node_drain_hold_kernel"] is True
    assert "linux-image-" in defaults["node_drain_kernel_patterns"]
    (hold,) = [t for t in _tasks("node_drain", "hold.yml") if "ansible.builtin.dpkg_selections" in t]
    assert hold["ansible.builtin.dpkg_selections"]["selection"] == "hold"
    for role, file in (("nvidia_driver", "change.yml"), ("doca_ofed", "change.yml")):
        for t in _tasks(role, file):
            if "ansible.builtin.apt" in t:
                assert t["ansible.builtin.apt"]["allow_change_held_packages"] is True, t["name"]
