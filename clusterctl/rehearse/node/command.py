"""The one way the rehearsal runs a program on this machine: :func:`run_command`, with a timeout the caller
must give, and :func:`start_detached` for a node's launcher, which outlives the call by design.

Every other module of ``clusterctl/rehearse`` goes through here (``tests/test_rehearse_command.py`` holds it
with ``ast``), so each program the rehearsal waits for has a bound on how long, and one that runs past it is
killed with every process it started (its own session and process group), not only the first. Secrets never
go on a command line: callers pass them as ``input`` (standard input) or in a file named by an argument.
Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CommandResult:
    """A finished program: its exit status, what it printed (text, or bytes with ``text=False``) and how long
    it took in seconds."""

    returncode: int
    stdout: str | bytes
    stderr: str | bytes
    elapsed: float


class CommandTimeout(Exception):
    """The program ran past its timeout and was killed with its process group."""

    def __init__(self, argv: Sequence[str], timeout: float, stdout: str | bytes, stderr: str | bytes):
        super().__init__(f"`{argv[0]}` killed after {timeout:g} s")
        self.argv, self.timeout, self.stdout, self.stderr = list(argv), timeout, stdout, stderr


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(argv: Sequence[str], *, timeout: float, input: str | bytes | None = None,
                cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
                text: bool = True) -> CommandResult:
    """Run ``argv`` (no shell) with standard input from ``input`` (or nothing), capture its output, and wait at
    most ``timeout`` seconds: then kill its process group and raise :class:`CommandTimeout`. An interrupt
    (Ctrl-C, or SIGTERM turned into one) kills the group too before it propagates."""
    t0 = time.monotonic()
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=dict(env) if env is not None else None, text=text, start_new_session=True)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise CommandTimeout(argv, timeout, out, err) from None
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    return CommandResult(proc.returncode, out, err, time.monotonic() - t0)


def start_detached(argv: Sequence[str], *, log: Path) -> int:
    """Start ``argv`` in a session of its own, output appended to ``log``, and return its PID without waiting:
    a node's launcher, which runs until the node is torn down (``lifecycle.down`` stops it by its recorded PID
    and start time), so it has no timeout here."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    return proc.pid
