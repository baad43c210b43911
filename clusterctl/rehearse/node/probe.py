"""Preconditions of a rehearsal, probed before anything is created.

Each check is a callable in :class:`Capabilities` so tests can inject a machine that lacks one (being
root is hard to undo in a test that runs as root). :func:`problems` returns every unmet precondition,
each a sentence with a hint naming the Debian package or the privilege that is missing.
"""

from __future__ import annotations

import os
import shutil
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


def _which(program: str) -> str | None:
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


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


def problems(caps: Capabilities = Capabilities()) -> list[tuple[str, str]]:
    """Every unmet precondition as (message, hint); empty when the machine can host rehearsal nodes."""
    if not caps.is_root():
        return [("clusterctl rehearse must run as root (it creates namespaces, mounts and a bridge)",
                 "run it with sudo, or as root in the CI job")]
    out: list[tuple[str, str]] = []
    missing = sorted({pkg for prog, pkg in PROGRAMS.items() if caps.which(prog) is None})
    if missing:
        progs = ", ".join(p for p, pkg in PROGRAMS.items() if caps.which(p) is None)
        out.append((f"missing program(s): {progs}",
                    f"apt-get install -y {' '.join(missing)}"))
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


def require(caps: Capabilities = Capabilities()) -> None:
    """Raise :class:`RehearsalError` naming every unmet precondition (the CLI exits 2)."""
    found = problems(caps)
    if found:
        raise RehearsalError("; ".join(m for m, _ in found), "; ".join(h for _, h in found))
