"""The parts of ``clusterctl rehearse`` that need no root: refusals, host selection, step bookkeeping.
The nodes themselves are tested in tests/e2e/test_nodes.py."""

from __future__ import annotations

import json

import sys

import pytest

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node import probe
from clusterctl.rehearse.node.lifecycle import FALLBACK_NET, down, rehearsal_id
from clusterctl.rehearse.select import node_specs, selected_hosts
from clusterctl.rehearse.node.state import NodeRecord, Proc, State, alive, load, save
from clusterctl.rehearse.steps import (
    FAILED,
    OK,
    SKIPPED,
    HostOutcome,
    Silent,
    StepFailed,
    run_steps,
)
from tests.helpers import cli, lab, plan_of, shipped


def caps(**over) -> probe.Capabilities:
    """A machine that has everything, except what ``over`` replaces."""
    base = dict(is_root=lambda: True, which=lambda p: f"/usr/bin/{p}", has_namespace=lambda k: True,
                has_filesystem=lambda f: True, can_bridge=lambda: True, has_module=lambda m: True)
    return probe.Capabilities(**{**base, **over})


def test_probe_passes_on_a_capable_machine():
    assert probe.problems(caps()) == []


def test_probe_refuses_when_not_root():
    found = probe.problems(caps(is_root=lambda: False))
    assert len(found) == 1
    message, hint = found[0]
    assert "must run as root" in message and "sudo" in hint and "by its path" in hint
    with pytest.raises(RehearsalError, match="root"):
        probe.require(caps(is_root=lambda: False))


def test_probe_names_the_debian_package_of_a_missing_program():
    found = probe.problems(caps(which=lambda p: None if p in ("mmdebstrap", "ssh") else f"/usr/bin/{p}"))
    assert len(found) == 1
    message, hint = found[0]
    assert message == "missing: ssh, mmdebstrap"
    assert hint == "apt-get install -y --no-install-recommends mmdebstrap openssh-client"


def test_probe_gives_one_install_line_for_missing_programs_and_the_rehearse_extra():
    found = probe.problems(caps(which=lambda p: None if p in ("mmdebstrap", "gpg") else f"/usr/bin/{p}",
                                has_module=lambda m: m not in ("ansible_runner", "testinfra")))
    assert len(found) == 1
    message, hint = found[0]
    assert message == ("missing: mmdebstrap, gpg, Python module ansible_runner (the converge (ansible-runner drives "
                       "ansible-playbook)), Python module testinfra (the rendered acceptance tests (pytest-testinfra))")
    assert hint == (f"apt-get install -y --no-install-recommends gpg mmdebstrap && {sys.executable} -m pip install "
                    "'clusterctl[rehearse]'")
    # booting nodes and checking SSH (--scenario nodes) needs no Ansible
    assert probe.problems(caps(has_module=lambda m: False), converge=False) == []


def test_probe_refuses_missing_namespaces_overlay_and_bridge():
    found = probe.problems(caps(has_namespace=lambda k: k != "pid", has_filesystem=lambda f: False))
    assert [m for m, _ in found] == ["this kernel has no pid namespace(s)",
                                     "this kernel has no overlay filesystem (not in /proc/filesystems)"]
    found = probe.problems(caps(can_bridge=lambda: False))
    assert "bridge" in found[0][0] and "modprobe bridge" in found[0][1]


def test_cli_down_without_state_is_a_clear_exit_2(tmp_path):
    r = cli("rehearse", "--down", str(tmp_path))
    assert r.returncode == 2
    assert "holds no rehearsal" in r.stderr and "hint:" in r.stderr and "Traceback" not in r.stderr


def test_down_without_state_raises(tmp_path):
    with pytest.raises(RehearsalError, match="holds no rehearsal"):
        down(tmp_path)


def test_cli_rehearse_needs_a_blueprint_or_down():
    r = cli("rehearse")
    assert r.returncode == 2 and "missing BLUEPRINT" in r.stderr


def test_lab_hosts_are_the_controller_and_k_of_each_compute_group():
    plan = plan_of(lab())
    assert selected_hosts(plan, 2) == ["head01", "gpu01", "gpu02"]
    assert selected_hosts(plan, 1) == ["head01", "gpu01"]
    specs = node_specs(plan, 2, "abcdef")
    assert [s.address for s in specs] == ["10.10.0.19", "10.10.0.17", "10.10.0.18"]  # the rendered inventory's


def test_superpod_hosts_include_every_controller_and_login_host():
    plan = plan_of(shipped("dgx-h100-superpod-1su"))
    assert selected_hosts(plan, 2) == ["head01", "head02", "login01", "login02", "dgx001", "dgx002"]


def test_cloud_blueprint_nodes_take_addresses_of_its_vpc_range():
    """A cloud blueprint's hosts have no in-band address before the cloud assigns one: the nodes take addresses
    of its VPC range after the ones the provider keeps (so a copy moved to another range rehearses there)."""
    specs = node_specs(plan_of(shipped("aws-p5")), 1, "abcdef")
    assert [(s.name, s.address) for s in specs] == [("head01", "10.100.0.4"), ("gpu001", "10.100.0.5")]


def test_blueprint_without_any_inband_range_gets_the_rehearsal_range():
    data = shipped("aws-p5")
    data.pop("addressing")
    specs = node_specs(plan_of(data), 1, "abcdef")
    net = FALLBACK_NET.format(int("abcdef", 16) % 200 + 20).rsplit(".", 1)[0]
    assert [s.address.rsplit(".", 1)[0] for s in specs] == [net] * len(specs)
    assert len({s.address for s in specs}) == len(specs)


def test_rehearsal_id_is_short_and_stable(tmp_path):
    rid = rehearsal_id(tmp_path)
    assert rid == rehearsal_id(tmp_path / "." ) and len(f"rh-{rid}") <= 15
    assert rid != rehearsal_id(tmp_path / "other")


def test_state_round_trips_and_a_reused_pid_is_not_alive(tmp_path):
    import os

    from clusterctl.rehearse.node.state import proc_of
    me = proc_of(os.getpid())
    assert me is not None and alive(me)
    assert not alive(Proc(me.pid, me.start + 1))  # same PID, other start time: another process
    st = State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.0.0.254/24", prefix=24,
               key="k", known_hosts="kh", ssh_config="sc",
               nodes=[NodeRecord("n1", "10.0.0.1", "ns", "vh", "vn", str(tmp_path / "n1"), me, None, [["/a", "/b"]])])
    save(st)
    back = load(tmp_path)
    assert back == st
    assert json.loads((tmp_path / ".rehearsal" / "state.json").read_text())["nodes"][0]["launcher"]["pid"] == me.pid


class _Step:
    def __init__(self, name, outcome=OK, raise_=None):
        self.name, self.outcome, self.raise_ = name, outcome, raise_

    def run(self, state, record):
        record("n1", HostOutcome(self.outcome, 0.1, counts={"changed": 0}))
        if self.raise_:
            raise self.raise_


def test_a_failed_host_fails_its_step_and_skips_the_rest():
    st = State("x", "/nonexistent", "b", "a", 24, "k", "kh", "sc")
    results = run_steps([_Step("a"), _Step("b", FAILED), _Step("c")], st, Silent())
    assert [(r.name, r.status) for r in results] == [("a", OK), ("b", FAILED), ("c", SKIPPED)]
    assert results[0].to_json()["hosts"]["n1"] == {"status": "ok", "seconds": 0.1, "changed": 0}


def test_a_raising_step_fails_with_its_message():
    st = State("x", "/nonexistent", "b", "a", 24, "k", "kh", "sc")
    [r] = run_steps([_Step("a", raise_=StepFailed("site.yml failed"))], st, Silent())
    assert r.status == FAILED and r.error == "site.yml failed"
    [r] = run_steps([_Step("a", raise_=ValueError("bad"))], st, Silent())
    assert r.status == FAILED and r.error == "ValueError: bad"


def test_cli_down_with_a_corrupt_state_file_is_exit_2(tmp_path):
    (tmp_path / ".rehearsal").mkdir()
    (tmp_path / ".rehearsal" / "state.json").write_text("{not json")
    r = cli("rehearse", "--down", str(tmp_path))
    assert r.returncode == 2 and "cannot be read" in r.stderr and "internal error" not in r.stderr
    (tmp_path / ".rehearsal" / "state.json").write_text('{"id": 1}')
    r = cli("rehearse", "--down", str(tmp_path))
    assert r.returncode == 2 and "not a rehearsal state file" in r.stderr


def test_the_readme_installs_every_debian_package_the_probe_asks_for():
    """The README's rehearse section is what a new user copies: it must install what probe.require refuses
    without (util-linux and mount are Essential: on every Debian machine)."""
    import re
    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text()
    line = re.search(r"^sudo apt-get install -y --no-install-recommends (.+)$", readme, re.M).group(1).split()
    assert sorted(line) == ["apt-utils", "gpg", "gpg-agent", "iproute2", "mmdebstrap", "openssh-client"]
    assert sorted(set(probe.PROGRAMS.values()) - {"util-linux", "mount"}) == sorted(line)
    assert ".venv/bin/pip install '.[rehearse]'" in readme and "sudo .venv/bin/clusterctl rehearse" in readme
