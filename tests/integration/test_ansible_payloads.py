"""No blueprint string runs as a template or a command in a real ``ansible-playbook`` run.

The lab blueprint gets a payload in every string the ansible target writes as data: the blueprint and
cluster names, the software pins, the Slurm version, a storage tier's name, export and mount, the local
scratch directory. The payloads are Jinja (``{{ lookup('pipe', 'touch MARKER') }}``), command substitution
and backticks, put into the loaded blueprint behind the model's back (tests/targets/inject.py) so that the
emitter is tested whatever the model accepts. The ansible target is rendered, and a play on this machine
(``connection: local``, the rendered inventory and group_vars) evaluates every group variable of two hosts
(``lookup('vars', name)``: the templating every role does when it reads one) and writes what it got to JSON.

Version strings that look like numbers ("550", "12.10") are kept: they must arrive as the same strings (an
``!unsafe`` tag would make ansible-core 2.19 read "12.10" as the float 12.1, see yamlout.unsafe_tag).

Asserts: the marker file never appears, every variable from the blueprint arrives as the literal payload,
and the render directory template (clusterctl_render_dir) is still evaluated. A control run shows the
same payload in a vars file *without* ``!unsafe`` does create the marker, so the test can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.targets import ansible
from clusterctl import yamlout
from tests.conftest import require_tool
from tests.helpers import BLUEPRINTS
from tests.targets.inject import inject

JINJA = "{{lookup('pipe','touch${IFS}${CLUSTERCTL_PWNED}')}}"
SUBST = "$(touch${IFS}${CLUSTERCTL_PWNED})"
TICKS = "`touch${IFS}${CLUSTERCTL_PWNED}`"
INJECTED = {
    ("name",): JINJA,
    ("slurm", "cluster_name"): JINJA,
    ("slurm", "version"): JINJA,
    ("software", "os"): SUBST,
    ("software", "driver"): "550",  # strings that look like numbers must arrive as the same strings:
    ("software", "cuda"): "12.10",  # ansible-core 2.19 reads !unsafe "12.10" as the float 12.1
    ("software", "nccl"): TICKS,
    ("software", "doca"): SUBST,
    ("storage", 0, "name"): JINJA,
    ("storage", 0, "export"): "head01:/export/" + JINJA,
    ("storage", 0, "mount"): "/home" + JINJA,
    ("storage", 1, "mount"): "/raid" + SUBST,
}
HOSTS = ("gpu01", "head01")
TEMPLATES = {"clusterctl_render_dir", "munge_key", "slurmdbd_storage_pass", "dcgm_exporter_listen_address",
             "slurmdbd_replication_pass", "directory_client_bind_password"}
"""variables that are templates on purpose (our text, not the blueprint's)"""


def _playbook() -> str:
    return require_tool("ansible-playbook")


def _plan():
    loaded = load_blueprint(BLUEPRINTS / "lab-2node.yaml")
    for path, value in INJECTED.items():
        loaded = inject(loaded, path, value)
    return expand(loaded)


def _run(args: list[str], cwd: Path, marker: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLUSTERCTL_PWNED": str(marker), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def templated(tmp_path_factory):
    playbook = _playbook()
    base = tmp_path_factory.mktemp("payloads")
    marker = base / "pwned"
    files = ansible.render(_plan())
    out = base / "out"
    for path, text in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    adir = out / "ansible"
    (adir / "host_vars").mkdir()
    expected: dict[str, dict] = {}
    for host, group in (("gpu01", "gpu"), ("head01", "head")):
        controllers = files.get("ansible/group_vars/slurm_controllers.yml") if host in slurm_controllers(files) else None
        expected[host] = {**yamlout.load(files["ansible/group_vars/all.yml"]),
                          **(yamlout.load(controllers) if controllers else {}),
                          **yamlout.load(files[f"ansible/group_vars/{group}.yml"])}
        (adir / "host_vars" / f"{host}.yml").write_text(yamlout.dump({
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "clusterctl_var_names": sorted(expected[host]), "result_dir": str(base)}))
    (adir / "evaluate.yml").write_text(yamlout.dump([{
        "name": "Evaluate every group variable", "hosts": ",".join(HOSTS), "gather_facts": False,
        "tasks": [
            {"name": "Template each variable", "ansible.builtin.set_fact": {
                "evaluated": "{{ evaluated | default({}) | combine({item: lookup('vars', item)}) }}"},
             "loop": "{{ clusterctl_var_names }}"},
            {"name": "Show them", "ansible.builtin.debug": {"var": "evaluated"}},
            {"name": "Write them", "ansible.builtin.copy": {
                "content": "{{ evaluated | to_json }}", "dest": "{{ result_dir }}/{{ inventory_hostname }}.json",
                "mode": "0644"}},
        ]}]))
    result = _run([playbook, "-i", "inventory.yml", "evaluate.yml"], adir, marker)
    return base, marker, expected, result


def test_the_play_runs(templated):
    _, _, _, result = templated
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_no_payload_ran(templated):
    _, marker, _, result = templated
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert not marker.exists(), "a blueprint string was evaluated by Ansible or a shell"


def slurm_controllers(files: dict) -> list[str]:
    """The hosts of the rendered inventory's slurm_controllers group (group_vars/slurm_controllers.yml)."""
    def find(node):
        if isinstance(node, dict):
            if isinstance(node.get("slurm_controllers"), dict):
                return list(node["slurm_controllers"].get("hosts") or {})
            for v in node.values():
                got = find(v)
                if got is not None:
                    return got
        return None
    return find(yamlout.load(files["ansible/inventory.yml"])) or []


@pytest.mark.parametrize("host", HOSTS)
def test_every_blueprint_value_arrives_literally(templated, host):
    base, _, expected, result = templated
    assert result.returncode == 0, result.stdout[-4000:]
    got = json.loads((base / f"{host}.json").read_text())
    for name, value in expected[host].items():
        if name in TEMPLATES:
            continue
        assert got[name] == value, name
    payloads = json.dumps(got)
    for payload in (JINJA, SUBST, TICKS):
        assert json.dumps(payload)[1:-1] in payloads, payload  # each payload arrived somewhere, untouched
    assert got["clusterctl_render_dir"].endswith("/ansible/..")  # our own template was evaluated
    assert JINJA in result.stdout  # the debug output shows the literal payload


def test_control_the_same_payload_without_unsafe_runs(tmp_path):
    """Without the !unsafe tag Ansible evaluates the payload: proof that the marker check can fail."""
    playbook = _playbook()
    marker = tmp_path / "pwned-control"
    (tmp_path / "vars.yml").write_text(yamlout.dump({"plain": JINJA}))
    (tmp_path / "play.yml").write_text(yamlout.dump([{
        "name": "control", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "show", "ansible.builtin.debug": {"var": "plain"}}]}]))
    result = _run([playbook, "-i", "localhost,", "-c", "local", "-e", f"@{tmp_path / 'vars.yml'}",
                   "-e", f"ansible_python_interpreter={sys.executable}", "play.yml"], tmp_path, marker)
    assert result.returncode == 0, result.stdout + result.stderr
    assert marker.exists()
