#!/usr/bin/python3
"""PID 1 of a rehearsal node (copied into the node as /usr/local/lib/clusterctl-rehearsal/init).

Why not ``sshd -D`` as PID 1: daemons that roles start through ``service`` (Debian's /etc/init.d scripts,
start-stop-daemon) double-fork and are re-parented to PID 1, which must reap them or they stay zombies;
and a stop must reach every process of the node. So this init starts sshd, reaps every child, and on
SIGTERM (or SIGINT) sends SIGTERM to every process of its PID namespace, waits up to STOP_GRACE_S, sends
SIGKILL to the rest and exits, which makes the kernel tear the namespaces down.

It is named ``init`` so that Ansible's service-manager fact reads ``/proc/1/comm`` as a SysV-style init
and ``ansible.builtin.service`` drives /etc/init.d scripts (there is no systemd in a node).
Standard library only: it runs under the node's /usr/bin/python3.
"""

import os
import signal
import subprocess
import sys
import time

STOP_GRACE_S = 5.0
SSHD = ["/usr/sbin/sshd", "-D", "-e"]


class Stop(Exception):
    """Raised by the signal handler so that a blocking wait() returns (PEP 475 would retry it)."""


def _stop(signum, frame):
    raise Stop()


def _log(text):
    sys.stderr.write(f"init: {text}\n")
    sys.stderr.flush()


def _reap_all(deadline):
    """Reap children until none is left or the deadline passes; True when none is left."""
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            time.sleep(0.05)
    return False


def main():
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    # /run is a fresh tmpfs: make what a Debian boot makes there before any service starts (found by
    # rehearse deploy: /etc/init.d/slurmctld touches /var/lock/slurm, /var/lock -> /run/lock)
    os.makedirs("/run/lock", exist_ok=True)
    os.chmod("/run/lock", 0o1777)
    sshd = subprocess.Popen(SSHD)
    _log(f"sshd started (pid {sshd.pid})")
    try:
        while True:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                time.sleep(1.0)
                continue
            if pid == sshd.pid:
                _log(f"sshd exited ({status}); the node keeps running")
    except Stop:
        _log("stopping every process of the node")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.kill(-1, signal.SIGTERM)  # every process of this PID namespace except init itself
    if not _reap_all(time.monotonic() + STOP_GRACE_S):
        os.kill(-1, signal.SIGKILL)
        _reap_all(time.monotonic() + STOP_GRACE_S)
    _log("stopped")


if __name__ == "__main__":
    main()
