"""The rehearsal's one subprocess runner (clusterctl/rehearse/node/command.py) and its one remote write
(clusterctl/rehearse/node/ssh.py): every program has a timeout its caller gives, and a file reaches a node
whole, with its mode, through standard input."""

from __future__ import annotations

import ast
import inspect
import os
import select
import stat
import subprocess
from pathlib import Path

import pytest

from clusterctl.rehearse.node import command, ssh
from clusterctl.rehearse.node.command import CommandTimeout, run_command
from clusterctl.rehearse.node.state import State

REHEARSE = Path(__file__).resolve().parents[1] / "clusterctl" / "rehearse"
RUNNER = {"node/command.py",
          "node/pid1.py"}  # a node's PID 1: a standard-library program copied into the node, it starts sshd there


def _subprocess_users() -> list[str]:
    found = []
    for path in sorted(REHEARSE.rglob("*.py")):
        rel = path.relative_to(REHEARSE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "subprocess" or n.startswith("subprocess.") for n in names):
                found.append(rel)
    return sorted(set(found))


def test_only_the_runner_imports_subprocess():
    assert _subprocess_users() == sorted(RUNNER)


def test_the_timeout_is_mandatory():
    timeout = inspect.signature(run_command).parameters["timeout"]
    assert timeout.kind is inspect.Parameter.KEYWORD_ONLY
    assert timeout.default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        run_command(["true"])  # type: ignore[call-arg]


def test_a_finished_program_gives_status_output_and_time():
    r = run_command(["sh", "-c", "cat; echo err >&2; exit 3"], timeout=20, input="in\n")
    assert (r.returncode, r.stdout, r.stderr) == (3, "in\n", "err\n")
    assert 0 <= r.elapsed < 20


def test_bytes_in_and_out():
    r = run_command(["cat"], timeout=20, input=b"\x00\xff", text=False)
    assert r.stdout == b"\x00\xff"


def test_a_program_past_its_timeout_is_killed_with_its_process_group():
    with pytest.raises(CommandTimeout) as caught:
        run_command(["sh", "-c", "sleep 60 & echo $!; wait"], timeout=0.5)
    assert caught.value.timeout == 0.5
    child = int(caught.value.stdout.split()[0])
    # the background sleep got the group's SIGKILL: it has exited (a pidfd becomes readable when its process
    # exits; a killed process may still be running its exit path when communicate() returns) or is already
    # gone; an unkilled sleep would keep the pidfd silent for 60 s
    try:
        pidfd = os.pidfd_open(child)
    except ProcessLookupError:
        return
    try:
        assert select.select([pidfd], [], [], 10)[0] == [pidfd], "the background sleep outlived the timeout"
    finally:
        os.close(pidfd)


def _state(tmp_path: Path) -> State:
    return State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.0.0.254/24", prefix=24,
                 key="k", known_hosts="kh", ssh_config="/x/ssh_config")


def test_write_file_sends_the_content_on_stdin_never_on_the_command_line(tmp_path, monkeypatch):
    seen = {}

    def fake_run(argv, *, timeout, input=None, text=True, **kw):
        seen.update(argv=argv, input=input, timeout=timeout)
        return command.CommandResult(0, b"", b"", 0.0)

    monkeypatch.setattr(ssh, "run_command", fake_run)
    ssh.write_file(_state(tmp_path), "gpu01", "/etc/secret.yml", "s3cret-value", mode="0600")
    assert seen["argv"][:4] == ["ssh", "-F", "/x/ssh_config", "gpu01"]
    assert not any("s3cret" in a for a in seen["argv"])
    assert seen["input"] == b"s3cret-value"
    assert seen["timeout"] == 30.0


def test_write_file_fails_with_the_nodes_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ssh, "run_command", lambda argv, **kw: command.CommandResult(1, b"", b"mv: denied\n", 0.0))
    with pytest.raises(ssh.RemoteWriteError, match="^gpu01: writing /etc/x: mv: denied$"):
        ssh.write_file(_state(tmp_path), "gpu01", "/etc/x", "x", mode="0644")


def _script(path: Path, data: bytes, **kw) -> subprocess.CompletedProcess:
    owner = f"{os.getuid()}:{os.getgid()}"
    return subprocess.run(["sh", "-c", ssh.write_file_script(str(path), kw.pop("mode", "0640"), owner, **kw)],
                          input=data, capture_output=True, timeout=20)


def test_the_remote_script_replaces_the_file_whole_with_its_mode(tmp_path):
    target = tmp_path / "new dir" / "f.conf"
    assert _script(target, b"one\n").returncode == 0
    assert target.read_bytes() == b"one\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o755
    before = target.stat().st_ino
    assert _script(target, b"two\n").returncode == 0
    assert target.read_bytes() == b"two\n"
    assert target.stat().st_ino != before  # renamed over, not rewritten in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.conf"]  # no temporary file left


def test_the_remote_script_appends_and_makes_private_directories(tmp_path):
    target = tmp_path / "private" / "log"
    assert _script(target, b"a\n", append=True, dir_mode="0700").returncode == 0
    assert _script(target, b"b\n", append=True, dir_mode="0700").returncode == 0
    assert target.read_bytes() == b"a\nb\n"
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700


def test_the_remote_script_leaves_the_old_file_when_it_fails(tmp_path):
    target = tmp_path / "f"
    target.write_text("old\n")
    r = _script(target, b"new\n", mode="not-a-mode")
    assert r.returncode == 1
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
