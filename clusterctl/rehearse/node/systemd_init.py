"""systemd as a rehearsal node's PID 1, as ``systemd-nspawn`` runs it on a cgroup v1 machine (docs/rehearse.md,
"Init and services"; systemd.io/CONTAINER_INTERFACE).

A node booted with ``NodeSpec(init="systemd")`` runs the image's own ``/lib/systemd/systemd`` as PID 1 instead of
the small rehearsal init (:mod:`clusterctl.rehearse.node.pid1`), so the roles' units, handlers, ``systemctl`` and a
unit's ``Delegate=`` run as on an installed host. What systemd needs of its container, and how a node gets it:

- **its own cgroups**: in every cgroup hierarchy of this machine (each v1 controller, the ``name=systemd``
  hierarchy and, on a hybrid machine, the cgroup2 ``unified`` one) a subtree of the node's own,
  ``OWN/clusterctl-rehearsal/<rehearsal id>-<node>`` where OWN is the cgroup the rehearsal process itself is in
  (so a node stays inside the limits this process runs under, and two rehearsals never share one: the id is
  their state directory's). The node's stage 1 moves itself into them, binds each at the node's
  ``/sys/fs/cgroup/<hierarchy>`` (on a read-only tmpfs, as nspawn does) and enters a new cgroup namespace
  whose root is that subtree, so the node's ``/proc/self/cgroup`` says ``/`` where its ``/sys/fs/cgroup`` has
  its root. Every hierarchy is writable inside, the controllers too: slurmd's cgroup plugins create their
  ``slurm`` trees there. ``down`` removes the subtrees (the state records them before they are made).
- ``container=clusterctl-rehearsal`` in PID 1's environment: systemd then skips what a container must not
  do (udev, the machine's clock, a release agent on the machine's hierarchy) and knows SIGRTMIN+4 as poweroff.
- ``/proc/sys`` read-only, except ``/proc/sys/net`` (the node's own network namespace): a unit such as
  systemd-sysctl must not change the shared kernel; and the capabilities to load kernel modules, set the clock
  or read the kernel log dropped from the bounding set (``setpriv``) for the same reason.
- ``/dev/console``: the node's console log (stage 1's standard output) bound there, so systemd's boot status
  lines land in ``DIR/.rehearsal/nodes/<name>/console.log``; the console getty is masked (there is no terminal).
- ``/etc/machine-id``: one per node, written into its upper layer; /run and /tmp tmpfs and a read-only /sys come
  from stage 1 as for every node.
- sshd as the image's ``ssh.service`` with the rehearsal's ``/etc/ssh/sshd_config`` (written for every node).

Standard library only on the node side: the shell lines below run in stage 1 (``lifecycle.STAGE1``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.files import write_text_atomic

NodeInit = Literal["rehearsal", "systemd"]
"""a node's PID 1: the small rehearsal init (sshd, reaper, stop) or the image's systemd"""

CGROUP_MOUNT = Path("/sys/fs/cgroup")
CGROUP_GROUP = "clusterctl-rehearsal"
"""the cgroup, in each hierarchy below this process's own, holding every node cgroup of every rehearsal"""
CONTAINER = "clusterctl-rehearsal"
"""the ``container=`` value systemd (and ``systemd-detect-virt``) sees in a node"""
DROPPED_CAPABILITIES = ("sys_module", "sys_time", "syslog", "sys_rawio")
"""not in a systemd node's bounding set, as the kernel is the machine's, not the node's: loading kernel modules
(systemd-modules-load), setting the clock (timesyncd, chronyd: their units are then skipped by
ConditionCapability=CAP_SYS_TIME), the kernel log, and raw I/O (without it systemd does not mount the machine's
debugfs and tracefs in the node: ConditionCapability=CAP_SYS_RAWIO)"""
SYSTEMD = "/lib/systemd/systemd"
MASKED_UNITS = ("console-getty.service",)
"""units a node cannot run: a getty on /dev/console, which is a log file here (the getty generator adds it in
every container)"""
STOP_SIGNALS = {"rehearsal": signal.SIGTERM, "systemd": signal.SIGRTMIN + 4}
"""what ``down`` sends a node's PID 1 to stop it: the rehearsal init stops on SIGTERM; systemd in a container
powers off on SIGRTMIN+4 (SIGTERM would make it re-execute itself)"""
REMOVE_TIMEOUT_S = 10.0
"""how long ``down`` waits for the processes of a stopped node to leave its cgroups before it gives up"""

# Runs in stage 1 after the node's /proc, /sys and /dev are mounted, before pivot_root (docs at the top).
# CLUSTERCTL_CGROUPS: "hierarchy=host-cgroup-dir ..."; CLUSTERCTL_CGROUP_LINKS: "name=target ..." (symlinks
# such as cpu -> cpu,cpuacct of the machine's /sys/fs/cgroup). It must not contain the words stage 1 replaces.
STAGE1_SETUP = r"""
if [ -n "${CLUSTERCTL_CGROUPS-}" ]; then
  mount -t tmpfs -o nosuid,nodev,noexec,mode=755,size=1m tmpfs "$root/sys/fs/cgroup"
  for pair in $CLUSTERCTL_CGROUPS; do
    mnt="$root/sys/fs/cgroup/${pair%%=*}" dir="${pair#*=}"
    echo 0 > "$dir/cgroup.procs"
    mkdir "$mnt"
    mount --bind "$dir" "$mnt"
  done
  for link in ${CLUSTERCTL_CGROUP_LINKS-}; do ln -s "${link#*=}" "$root/sys/fs/cgroup/${link%%=*}"; done
  mount -o remount,ro,nosuid,nodev,noexec,mode=755,size=1m tmpfs "$root/sys/fs/cgroup"
  mount --bind "$root/proc/sys" "$root/proc/sys"
  mount -o remount,bind,ro "$root/proc/sys"
  mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
  mount -o remount,bind,rw "$root/proc/sys/net"
  : > "$root/dev/console"
  mount --bind /proc/self/fd/1 "$root/dev/console"
fi
"""


@dataclass(frozen=True)
class Hierarchy:
    """One cgroup hierarchy of this machine, as this process sees it."""

    mount: str
    """its directory under /sys/fs/cgroup: ``memory``, ``systemd`` (name=systemd), ``unified`` (cgroup2)"""
    own: str
    """this process's cgroup in it (``/``, ``/process_api/...``)"""


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def hierarchies(mountinfo: str | None = None, cgroups: str | None = None) -> list[Hierarchy]:
    """Every cgroup hierarchy mounted under /sys/fs/cgroup, with this process's cgroup in each (from
    /proc/self/mountinfo and /proc/self/cgroup, or the texts given). Refused on a machine whose /sys/fs/cgroup is
    one cgroup2 hierarchy: systemd nodes were made and tried on cgroup v1 (and hybrid) only."""
    mountinfo = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    cgroups = cgroups if cgroups is not None else Path("/proc/self/cgroup").read_text()
    own_v1: dict[frozenset[str], str] = {}
    own_v2 = None
    for line in cgroups.splitlines():
        number, controllers, path = line.split(":", 2)
        if number == "0" and controllers == "":
            own_v2 = path
        else:
            own_v1[frozenset(controllers.split(","))] = path
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        dash = fields.index("-")
        point, fstype = _unescape(fields[4]), fields[dash + 1]
        if point == str(CGROUP_MOUNT) and fstype == "cgroup2":
            raise RehearsalError("systemd nodes need the cgroup v1 hierarchies (with name=systemd): this machine "
                                 "mounts one cgroup2 hierarchy at /sys/fs/cgroup, where systemd nodes were not tried",
                                 "boot the nodes with the rehearsal init (NodeSpec(init=\"rehearsal\"), the default)")
        parent, _, name = point.rpartition("/")
        if parent != str(CGROUP_MOUNT) or fstype not in ("cgroup", "cgroup2"):
            continue
        if fstype == "cgroup2":
            own = own_v2
        else:
            super_options = set(fields[dash + 3].split(","))
            own = next((p for c, p in own_v1.items() if c <= super_options), None)
        if own is not None:
            found.append(Hierarchy(name, own))
    if not any(h.mount == "systemd" for h in found):
        raise RehearsalError("systemd nodes need the name=systemd cgroup hierarchy at /sys/fs/cgroup/systemd, "
                             "which this machine does not mount",
                             "mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup "
                             "/sys/fs/cgroup/systemd")
    return found


def cgroup_links() -> list[str]:
    """``name=target`` for each symlink in the machine's /sys/fs/cgroup (``cpu -> cpu,cpuacct``)."""
    return sorted(f"{p.name}={os.readlink(p)}" for p in CGROUP_MOUNT.iterdir() if p.is_symlink())


def node_cgroups(rehearsal: str, node: str, found: list[Hierarchy] | None = None) -> list[str]:
    """The cgroup directories of one node, one per hierarchy of this machine (or of ``found``): what the state
    records before they are made."""
    return [str(CGROUP_MOUNT / h.mount / h.own.lstrip("/") / CGROUP_GROUP / f"{rehearsal}-{node}")
            for h in (hierarchies() if found is None else found)]


def _hierarchy_of(directory: Path) -> str:
    return directory.relative_to(CGROUP_MOUNT).parts[0]


def _make(directory: Path) -> None:
    """mkdir, and in the cpuset hierarchy give the new cgroup its parent's CPUs and memory nodes (a cpuset
    cgroup starts empty, and no process may join an empty one)."""
    try:
        directory.mkdir()
    except FileExistsError:
        return
    if "cpuset" in _hierarchy_of(directory).split(","):
        for knob in ("cpuset.cpus", "cpuset.mems"):
            (directory / knob).write_text((directory.parent / knob).read_text())


def create_cgroups(directories: list[str]) -> None:
    """Make each node cgroup (and the shared ``clusterctl-rehearsal`` one above it); a subtree left by an earlier
    node of this name is removed first. Retried when another rehearsal's ``down`` removes the shared cgroup
    between the two mkdirs."""
    for d in map(Path, directories):
        if d.exists():
            _remove_tree(d, time.monotonic() + REMOVE_TIMEOUT_S)
        for _ in range(5):
            try:
                _make(d.parent)
                _make(d)
                break
            except FileNotFoundError:
                continue
        else:
            raise RehearsalError(f"cannot create the cgroup {d}", "run the rehearsal again")


def cgroup_pids(directory: Path) -> list[int]:
    """Every process in a cgroup and its descendants (host PIDs)."""
    pids = []
    for dirpath, _, _ in os.walk(directory):
        try:
            pids += [int(p) for p in (Path(dirpath) / "cgroup.procs").read_text().split()]
        except OSError:
            continue
    return pids


def _remove_tree(directory: Path, deadline: float) -> str | None:
    """rmdir a cgroup and its descendants, deepest first; a process left in one gets SIGKILL (it can only be the
    stopped node's). Returns why it could not, or None."""
    while True:
        for pid in cgroup_pids(directory):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            for dirpath, _, _ in sorted(os.walk(directory), key=lambda w: len(w[0]), reverse=True):
                Path(dirpath).rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return f"cannot remove cgroup {directory}: {exc.strerror}"
            time.sleep(0.05)


def _is_node_cgroup(directory: Path) -> bool:
    """A directory :func:`node_cgroups` names: never act on another cgroup a damaged state file might name."""
    return directory.is_relative_to(CGROUP_MOUNT) and directory.parent.name == CGROUP_GROUP and ".." not in directory.parts


def remove_cgroups(directories: list[str]) -> list[str]:
    """Remove a stopped node's cgroups (and the shared ``clusterctl-rehearsal`` cgroup when no other node has one
    there); idempotent. Returns the problems, if any."""
    directories = [d for d in directories if _is_node_cgroup(Path(d))]
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    problems = [p for p in (_remove_tree(Path(d), deadline) for d in directories if Path(d).exists()) if p]
    for d in map(Path, directories):
        try:
            d.parent.rmdir()
        except OSError:  # another rehearsal's node is there, or it is gone already
            pass
    return problems


def stage1_env(directories: list[str]) -> list[str]:
    """``VAR=value`` words for ``env`` before stage 1: the node's cgroups and how to start systemd."""
    run_systemd = ["setpriv", "--bounding-set", ",".join(f"-{c}" for c in DROPPED_CAPABILITIES),
                   "unshare", "--cgroup", "env", "-i", f"container={CONTAINER}", SYSTEMD]
    pairs = [f"{_hierarchy_of(Path(d))}={d}" for d in directories]
    return [f"CLUSTERCTL_CGROUPS={' '.join(pairs)}", f"CLUSTERCTL_CGROUP_LINKS={' '.join(cgroup_links())}",
            f"CLUSTERCTL_EXEC={' '.join(run_systemd)}"]


def machine_id(node: str) -> str:
    """A node's /etc/machine-id from a name unique to it on this machine (its netns, which holds the rehearsal id):
    32 hex digits, the same for the node across its boots, distinct between nodes."""
    return hashlib.sha256(f"clusterctl-rehearsal {node}".encode()).hexdigest()[:32]


def prepare_upper(upper: Path, node: str) -> None:
    """The files a systemd node starts with, in its upper layer: its machine id, ssh.service enabled (the image's
    unit, with the rehearsal's sshd_config) and the units a node cannot run masked."""
    write_text_atomic(upper / "etc" / "machine-id", machine_id(node) + "\n", 0o444)
    units = upper / "etc" / "systemd" / "system"
    wants = units / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / "ssh.service").unlink(missing_ok=True)
    (wants / "ssh.service").symlink_to("/lib/systemd/system/ssh.service")
    for unit in MASKED_UNITS:
        (units / unit).unlink(missing_ok=True)
        (units / unit).symlink_to("/dev/null")
