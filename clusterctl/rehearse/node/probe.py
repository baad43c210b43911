"""Preconditions of a rehearsal, probed before anything is rendered, built or booted.

Each check is a callable in :class:`Capabilities` so tests can inject a machine that lacks one (being
root is hard to undo in a test that runs as root). :func:`problems` returns every unmet precondition, each a
sentence with a hint; :func:`require` refuses with all of them and the one install line that fixes every
missing program and Python package at once.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.command import run_command

PROBE_TIMEOUT_S = 30.0
"""how long one probing command (``ip link add``) may take"""
NAMESPACES = ("net", "uts", "mnt", "pid")
"""namespace kinds every node gets (see /proc/self/ns)"""

PROGRAMS = {  # program -> Debian package that ships it
    "ip": "iproute2",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "taskset": "util-linux",
    "pivot_root": "util-linux",
    "mount": "mount",
    "umount": "mount",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    # the node image and the site mirror (clusterctl/rehearse/image/build.py, clusterctl/rehearse/mirror/build.py);
    # the nodes' sshd, python3 and apt are the image's, not this machine's
    "mmdebstrap": "mmdebstrap",
    "apt-ftparchive": "apt-utils",
    "gpg": "gpg",
    "gpg-agent": "gpg-agent",
}

PYTHON_MODULES = {  # module -> what needs it; all in the rehearse extra (pyproject.toml)
    "ansible_runner": "the converge (ansible-runner drives ansible-playbook)",
    "ansible": "the converge (ansible-core)",
    "testinfra": "the rendered acceptance tests (pytest-testinfra)",
    "pytest": "the rendered acceptance tests",
}
"""what a rehearsal that converges imports; ``--scenario nodes`` boots and checks SSH without them"""


def _which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _has_namespace(kind: str) -> bool:
    return os.path.exists(f"/proc/self/ns/{kind}")


def _has_filesystem(name: str) -> bool:
    try:
        with open("/proc/filesystems", encoding="ascii") as f:
            return any(line.split()[-1] == name for line in f if line.strip())
    except OSError:
        return False


def _can_bridge() -> bool:
    """Create and delete a throwaway bridge: the only reliable test that this kernel and privilege allow it."""
    ip = _which("ip")
    if ip is None:
        return False
    name = "rhprobe" + uuid.uuid4().hex[:8]
    made = run_command([ip, "link", "add", name, "type", "bridge"], timeout=PROBE_TIMEOUT_S).returncode == 0
    if made:
        run_command([ip, "link", "del", name], timeout=PROBE_TIMEOUT_S)
    return made


@dataclass(frozen=True)
class Capabilities:
    """How the probe asks the machine; every field replaceable in tests."""

    is_root: Callable[[], bool] = field(default=lambda: os.geteuid() == 0)
    which: Callable[[str], str | None] = field(default=_which)
    has_namespace: Callable[[str], bool] = field(default=_has_namespace)
    has_filesystem: Callable[[str], bool] = field(default=_has_filesystem)
    can_bridge: Callable[[], bool] = field(default=_can_bridge)
    has_module: Callable[[str], bool] = field(default=_has_module)


def root_hint() -> str:
    """How to run this same clusterctl as root: sudo's secure_path does not reach a virtualenv's bin, so the
    program is named by its path."""
    return (f"run it as root: sudo {shlex.quote(sys.argv[0]) if os.path.isabs(sys.argv[0]) else '$(command -v clusterctl)'} "
            "rehearse ... (sudo resets PATH, so name the virtualenv's clusterctl by its path)")


def install_line(packages: list[str], python: bool) -> str:
    """The one command that installs every missing Debian package and the rehearse extra."""
    parts = []
    if packages:
        parts.append(f"apt-get install -y --no-install-recommends {' '.join(packages)}")
    if python:
        parts.append(f"{shlex.quote(sys.executable)} -m pip install 'clusterctl[rehearse]'")
    return " && ".join(parts)


def problems(caps: Capabilities = Capabilities(), converge: bool = True) -> list[tuple[str, str]]:
    """Every unmet precondition as (message, hint); empty when the machine can host rehearsal nodes
    (``converge``: and run Ansible and the rendered tests on them)."""
    if not caps.is_root():
        return [("clusterctl rehearse must run as root (it creates namespaces, mounts and a bridge)", root_hint())]
    out: list[tuple[str, str]] = []
    missing = sorted({pkg for prog, pkg in PROGRAMS.items() if caps.which(prog) is None})
    modules = [m for m in PYTHON_MODULES if converge and not caps.has_module(m)]
    if missing or modules:
        what = [p for p in PROGRAMS if caps.which(p) is None] + [f"Python module {m} ({PYTHON_MODULES[m]})"
                                                                  for m in modules]
        out.append((f"missing: {', '.join(what)}", install_line(missing, bool(modules))))
    absent = [k for k in NAMESPACES if not caps.has_namespace(k)]
    if absent:
        out.append((f"this kernel has no {', '.join(absent)} namespace(s)",
                    "a rehearsal needs network, UTS, mount and PID namespaces (CONFIG_*_NS); use a full VM or host"))
    if not caps.has_filesystem("overlay"):
        out.append(("this kernel has no overlay filesystem (not in /proc/filesystems)",
                    "modprobe overlay, or use a kernel with CONFIG_OVERLAY_FS"))
    if not out and not caps.can_bridge():
        out.append(("cannot create a Linux bridge (ip link add ... type bridge failed)",
                    "modprobe bridge; in a container, run it with CAP_NET_ADMIN in its own network namespace"))
    return out


def require(caps: Capabilities = Capabilities(), converge: bool = True) -> None:
    """Raise :class:`RehearsalError` naming every unmet precondition (the CLI exits 2)."""
    found = problems(caps, converge)
    if found:
        raise RehearsalError("; ".join(m for m, _ in found), "; ".join(h for _, h in found))
