"""Pull mode as rendered (blueprint slurm.rollout.pull, the ansible_pull play and variables, the batches file, the
collector) and the clusterctl-pull script run for real against a git remote in a temporary directory (git and
Debian's /usr/bin/ansible-playbook, local connection; no root needed). The whole mode runs on rehearsal nodes in
tests/e2e (``pull``)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.rehearse.scenario.pull import host_batches
from clusterctl.source import load_yaml_file
from clusterctl.targets import render_targets
from clusterctl.targets.ansible.pull import pull_batches
from tests.conftest import require, require_tool

REPO = Path(__file__).resolve().parents[1]
ROLE = REPO / "roles" / "ansible_pull"
SOURCE = "https://git.example.com/cluster/lab.git"


def _data(pull: dict | None = None, count: int = 2) -> dict:
    data = load_yaml_file(REPO / "blueprints" / "lab-2node.yaml")[0]
    data["node_groups"][0].update(count=count, hostnames=f"gpu[001-{count:03d}]")
    if pull is not None:
        data["slurm"]["rollout"] = {"pull": pull}
    return data


def _plan(data: dict):
    return expand(load_blueprint_text(yaml.safe_dump(data, sort_keys=False), "test.yaml"))


@pytest.mark.parametrize("source", [
    "https://user:secret@git.example.com/x.git",  # credentials
    "http://git.example.com/x.git",  # not https
    "-oProxyCommand=touch /tmp/x",  # option injection
    "https://git.example.com/x.git;touch /tmp/x",
    "ssh://git.example.com/x y",
    "https://git.example.com/x\nExecStart=/bin/sh",  # a line into the unit or config
    "file:///srv/../etc",
])
def test_a_pull_source_that_is_not_a_plain_git_url_is_refused_at_load(source):
    with pytest.raises(BlueprintError):
        _plan(_data({"source": source}))


@pytest.mark.parametrize("ref", ["-x", "a..b", "main.lock", "a b", "main;id"])
def test_a_bad_ref_is_refused(ref):
    with pytest.raises(BlueprintError):
        _plan(_data({"source": SOURCE, "ref": ref}))


def test_without_pull_nothing_of_it_is_rendered():
    files = render_targets(_plan(_data()))
    assert not [p for p in files if "pull" in p]
    assert "ansible_pull" not in files["ansible/site.yml"]


def test_pull_renders_a_last_play_on_every_node_its_variables_batches_and_collector():
    files = render_targets(_plan(_data({"source": SOURCE, "ref": "release/2026.12", "interval_minutes": 20,
                                        "splay_minutes": 5})))
    plays = yaml.safe_load(files["ansible/site.yml"])
    assert plays[-1] == {"name": "Pull mode on every node", "hosts": "all", "become": True,
                         "roles": [{"role": "ansible_pull", "tags": ["ansible_pull"]}]}
    all_vars = yaml.safe_load(files["ansible/group_vars/all.yml"].replace("!unsafe", ""))
    assert {k: v for k, v in all_vars.items() if k.startswith("ansible_pull")} == {
        "ansible_pull_source": SOURCE, "ansible_pull_ref": "release/2026.12", "ansible_pull_interval_minutes": 20,
        "ansible_pull_splay_minutes": 5}
    assert yaml.safe_load(files["ansible/pull/batches.yml"]) == {
        "batch_percent": 10, "control": ["head01"], "batches": [["gpu001"], ["gpu002"]]}
    assert "ansible/roles/ansible_pull/files/clusterctl-pull" in files
    collector = yaml.safe_load(files["ansible/pull-status.yml"])
    assert collector[0]["tasks"][0]["ansible.builtin.slurp"] == {"src": "/var/lib/clusterctl/pull-status.json"}


def test_batches_are_the_push_serial_batches_as_host_ranges():
    plan = _plan(_data({"source": SOURCE}, count=105))  # 10 %: int(10.5) = 10 hosts a batch, 11 batches
    control, batches = pull_batches(plan)
    assert control == ["head01"]
    assert batches[0] == ["gpu[001:010]"] and batches[9] == ["gpu[091:100]"] and batches[10] == ["gpu[101:105]"]
    assert len(batches) == 11
    files = render_targets(plan)
    got = host_batches(files)
    assert got["head01"] == 0 and got["gpu001"] == 1 and got["gpu010"] == 1 and got["gpu011"] == 2
    assert got["gpu105"] == 11


def test_timer_unit_has_the_interval_and_splay_as_rendered():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"), undefined=jinja2.StrictUndefined)
    text = env.get_template("clusterctl-pull.timer.j2").render(
        ansible_managed="managed", ansible_pull_interval_minutes=20, ansible_pull_splay_minutes=5)
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert lines == ["[Unit]", "Description=clusterctl pull every 20 min", "[Timer]", "OnBootSec=2min",
                     "OnUnitActiveSec=20min", "RandomizedDelaySec=5min", "[Install]", "WantedBy=timers.target"]
    service = env.get_template("clusterctl-pull.service.j2").render(
        ansible_managed="managed", ansible_pull_script="/usr/local/sbin/clusterctl-pull",
        ansible_pull_state_dir="/var/lib/clusterctl")
    assert "ExecStart=/usr/local/sbin/clusterctl-pull" in service.splitlines()
    assert "Type=oneshot" in service.splitlines()


# --- the script, for real ---------------------------------------------------------------------------------

def _script():
    loader = importlib.machinery.SourceFileLoader("clusterctl_pull", str(ROLE / "files" / "clusterctl-pull"))
    spec = importlib.util.spec_from_loader("clusterctl_pull", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_host_patterns_match_as_ansible_reads_them():
    s = _script()
    assert s.matches("gpu007", "gpu[001:010]") and not s.matches("gpu011", "gpu[001:010]")
    assert not s.matches("gpu7", "gpu[001:010]")  # padded ranges: same width
    assert s.matches("n9", "n[9:10]") and s.matches("n10", "n[9:10]") and not s.matches("n09", "n[9:10]")
    assert s.matches("head01", "head01") and not s.matches("head011", "head01")
    batches = {"control": ["head01"], "batches": [["gpu[001:002]"], ["gpu[003:004]"]]}
    assert [s.batch_of(h, batches) for h in ("head01", "gpu002", "gpu003", "other")] == [0, 1, 2, None]
    rollout = {"versions": {0: "v2", "1": "v2", "*": "v1"}}
    assert [s.released(rollout, b) for b in (0, 1, 2)] == ["v2", "v2", "v1"]
    assert s.released(None, 1) is None and s.released({"versions": {1: "v2"}}, 2) is None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


PLAYBOOK = """\
- name: Test play
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the marker
      ansible.builtin.copy:
        content: "{{ marker }}\\n"
        dest: "{{ out }}"
        mode: "0644"
    - name: Fail when told
      ansible.builtin.fail:
        msg: told to fail
      when: fail_now | default(false) | bool
"""


def test_the_script_fetches_applies_the_released_version_only_and_writes_its_status(tmp_path):
    require("" if Path("/usr/bin/ansible-playbook").exists() else "Debian's ansible-core is not installed")
    require_tool("git")
    s = _script()
    work, bare, state, out = tmp_path / "work", tmp_path / "remote.git", tmp_path / "state", tmp_path / "marker"
    subprocess.run(["git", "init", "--bare", "-q", "-b", "main", str(bare)], check=True)
    (work / "ansible" / "pull").mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    (work / "ansible" / "inventory.yml").write_text("all:\n  hosts:\n    n1:\n    n2:\n")
    (work / "ansible" / "ansible.cfg").write_text("[defaults]\ninventory = inventory.yml\n")
    (work / "ansible" / "pull" / "batches.yml").write_text("control: []\nbatches: [[n1], [n2]]\n")

    def publish(marker: str, rollout: dict | None, tag: str = "") -> str:
        (work / "ansible" / "site.yml").write_text(PLAYBOOK.replace("{{ marker }}", marker))
        if rollout is not None:
            (work / "rollout.yml").write_text(yaml.safe_dump({"versions": rollout}))
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", marker)
        if tag:
            _git(work, "tag", tag)
        _git(work, "push", "-q", "--tags", str(bare), "main")
        return _git(work, "rev-parse", "HEAD")

    vars_dir = tmp_path / "vars"
    vars_dir.mkdir()
    (vars_dir / "10-site.yml").write_text(yaml.safe_dump({"out": str(out), "ansible_python_interpreter":
                                                          "/usr/bin/python3"}))
    cfg = {**s.DEFAULTS, "source": f"file://{bare}", "ref": "main", "state_dir": str(state),
           "vars_dir": str(vars_dir), "callback_dir": str(ROLE / "files")}
    v1 = publish("one", None, "v1")
    first = s.pull(cfg, "n2")
    assert (first["result"], first["version"], first["batch"], first["changed"]) == ("ok", v1, 2, 1), first
    assert first["changed_tasks"] == ["Write the marker"]  # the callback names what changed
    assert out.read_text() == "one\n"
    again = s.pull(cfg, "n2")
    assert (again["changed"], again["changed_tasks"]) == (0, [])  # the same version again: nothing changes
    publish("two", None, "v2")
    tip = publish("two", {1: "v2", "*": "v1"})  # v2 released to batch 1 only: n2 (batch 2) stays on v1
    held = s.pull(cfg, "n2")
    assert (held["result"], held["version"], held["tip"], held["changed"]) == ("ok", v1, tip, 0), held
    assert out.read_text() == "one\n"
    publish("two", {"*": "v2"})
    moved = s.pull(cfg, "n2")
    assert (moved["result"], moved["released_as"], moved["changed"]) == ("ok", "v2", 1), moved
    assert out.read_text() == "two\n"
    (vars_dir / "20-fail.yml").write_text("fail_now: true\n")
    failed = s.pull(cfg, "n2")
    assert failed["result"] == "failed" and failed["failed_task"].startswith("Fail when told: failed: told to fail")
    assert failed["last_ok_version"] == moved["version"]  # what the node still runs
    assert json.loads((state / "pull-status.json").read_text()) == failed
    assert s.pull({**cfg, "ref": "nosuchbranch"}, "n2")["message"].startswith("version 'nosuchbranch'")
    (vars_dir / "20-fail.yml").unlink()
    boot = tmp_path / "empty"  # a first boot from cloud-init: the script alone, no status callback installed yet
    boot.mkdir()
    first_boot = s.pull({**cfg, "callback_dir": str(boot), "state_dir": str(tmp_path / "fresh")}, "n2")
    assert (first_boot["result"], first_boot["changed"], first_boot["changed_tasks"], first_boot["released_as"]) == (
        "ok", None, None, "v2"), first_boot


def test_the_pull_rehearsal_points_the_blueprint_at_the_controller_and_rolls_v2_batch_by_batch(tmp_path):
    from clusterctl.rehearse.scenario.pull import PullRound
    from clusterctl.rehearse.suite import build
    path = REPO / "blueprints" / "lab-2node.yaml"
    reh = build("pull", path, expand(load_blueprint_text(path.read_text(), str(path))), tmp_path / "r", 2,
                render_targets)
    assert [s.name for s in reh.steps] == ["ssh-check", "mirror", "converge", "pull-batch"]
    all_vars = yaml.safe_load(reh.files["ansible/group_vars/all.yml"].replace("!unsafe", ""))
    assert all_vars["ansible_pull_source"] == "ssh://root@head01/srv/clusterctl/pull.git"
    rounds = [s for s in reh.steps if isinstance(s, PullRound)]
    v1, v2 = rounds[0].repo.v1, rounds[0].repo.v2
    assert sorted(p for p in v1 if v1[p] != v2.get(p)) == ["ansible/group_vars/all.yml"]  # only the interval
    assert rounds[0].intervals == {"v1": 30, "v2": 15}
    (batch,) = rounds  # releasing to all is the same rollout.yml key; the same version twice: the script's test above
    assert batch.publish == ("v1", "v2") and batch.release == {0: "v2", "*": "v1"}
    # one node of each group set: gpu02 runs gpu01's tasks with gpu01's variables (deploy.one_per_group_set)
    assert batch.hosts == ("gpu01", "head01")
    assert batch.expect == {"head01": "v2", "gpu01": "v1"}
    assert (batch.changed, batch.unchanged, batch.changes_only) == (("head01",), ("gpu01",), "ansible_pull")


def test_v1_is_the_tree_as_the_rehearsal_directory_holds_it_and_v2_only_adds_its_own_change(tmp_path):
    """The scenarios rewrite rendered files before the converge (a shorter HealthCheckInterval): a node applying v1
    must find what the converge installed, so v1 is read back from the directory; v2 is v1 with the files the v2
    render changes; a file both edited and changed by v2 is refused (v2 would undo the edit)."""
    from clusterctl.rehearse.scenario.pull import PullRepo
    from clusterctl.rehearse.steps import StepFailed
    v1 = {"slurm/slurm.conf": "HealthCheckInterval=300\n", "ansible/group_vars/all.yml": "interval: 30\n"}
    v2 = {**v1, "ansible/group_vars/all.yml": "interval: 15\n"}
    (tmp_path / "slurm").mkdir()
    (tmp_path / "ansible" / "group_vars").mkdir(parents=True)
    (tmp_path / "slurm" / "slurm.conf").write_text("HealthCheckInterval=10\n")
    (tmp_path / "ansible" / "group_vars" / "all.yml").write_text("interval: 30\n")
    repo = PullRepo("head01", dict(v1), dict(v2))
    repo.as_rehearsed(tmp_path)
    assert repo.edited == ["slurm/slurm.conf"]
    assert repo.v1 == {"slurm/slurm.conf": "HealthCheckInterval=10\n", "ansible/group_vars/all.yml": "interval: 30\n"}
    assert repo.v2 == {"slurm/slurm.conf": "HealthCheckInterval=10\n", "ansible/group_vars/all.yml": "interval: 15\n"}
    (tmp_path / "ansible" / "group_vars" / "all.yml").write_text("interval: 5\n")
    with pytest.raises(StepFailed, match=r"v2 changes files the rehearsal edited: \['ansible/group_vars/all.yml'\]"):
        PullRepo("head01", dict(v1), dict(v2)).as_rehearsed(tmp_path)
