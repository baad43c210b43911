"""The rehearsal's record of what it created: ``DIR/.rehearsal/state.json``.

Written (atomically) *before* each resource is created and again once a process id is known, so that
:func:`clusterctl.rehearse.node.lifecycle.down` can remove exactly what a crashed or interrupted boot left: it
trusts only this file, never a name pattern. A process is identified by its PID *and* its start time
(``/proc/PID/stat`` field 22), so a PID reused by an unrelated process after a reboot is never signalled.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.files import write_text_atomic

STATE_DIR = ".rehearsal"
STATE_FILE = "state.json"
VERSION = 1


@dataclass
class Proc:
    """A process the rehearsal started: its PID in the host's PID namespace and its start time."""

    pid: int
    start: int


def _below_root(name: str, doc: str) -> property:
    return property(lambda record: Path(record.root) / name, doc=f"``root/{name}``: {doc}")


@dataclass
class NodeRecord:
    """One rehearsal node and the resources it owns."""

    name: str
    address: str
    netns: str
    veth_host: str
    veth_node: str
    root: str
    """DIR/.rehearsal/nodes/<name>: holds upper/, work/, merged/, console.log and the host key"""
    launcher: Proc | None = None
    """``unshare``, the node's parent in the host PID namespace (it SIGKILLs the node if it dies)"""
    init: Proc | None = None
    """the node's PID 1 (clusterctl's init, which runs sshd and reaps orphans; or systemd)"""
    binds: list[list[str]] = field(default_factory=list)
    """[host path, node path] pairs bind-mounted into the node (shared storage)"""
    init_kind: str = "rehearsal"
    """the node's PID 1: ``rehearsal`` (clusterctl's init) or ``systemd`` (the image's)"""
    cgroups: list[str] = field(default_factory=list)
    """a systemd node's own cgroup directories, one per hierarchy (recorded before they are made; ``down`` removes
    them)"""
    mac: str | None = None
    """eth0's MAC address when the boot set it (the host's in-band MAC from the inventory), else None"""

    upper = _below_root("upper", "the overlay's upper layer: every write of the node")
    work = _below_root("work", "the overlay's work directory")
    merged = _below_root("merged", "where stage 1 mounts the node's root")
    console = _below_root("console.log", "the node's stage 1 and init output")


@dataclass
class State:
    """Everything one rehearsal created; ``stopped`` once :func:`down` removed it all."""

    id: str
    dir: str
    bridge: str
    host_address: str
    """the host's address on the bridge, with prefix length (10.10.0.254/24)"""
    prefix: int
    key: str
    """the per-rehearsal SSH private key (0600); its .pub is in every node's authorized_keys"""
    known_hosts: str
    ssh_config: str
    nodes: list[NodeRecord] = field(default_factory=list)
    bridge_created: bool = False
    netns_mount_created: bool = False
    """/run/netns was not a mount point before: ``ip netns add`` made it one, ``down`` undoes that when
    no netns is left in it"""
    image: str = ""
    """the node image the nodes booted from (``clusterctl rehearse --image``: debian-12, debian-13)"""
    image_root: str = ""
    """that image's root directory in the cache: every node's overlay lower layer (read-only)"""
    services: list[Proc] = field(default_factory=list)
    """programs the rehearsal runs on this machine for its nodes (the site mirror's HTTP server); ``down``
    stops them"""
    links: list[list] = field(default_factory=list)
    """cables between nodes ([node, port, node, port, mtu]: :mod:`clusterctl.rehearse.node.links`), recorded before
    each is made; their ends live in the nodes' namespaces, so deleting those at ``down`` destroys them"""
    bmc_interface: str = ""
    """the interface (a bridge without ports) of this machine holding the nodes' BMC addresses (the day0 scenario's Redfish emulators
    listen there: :mod:`clusterctl.rehearse.node.bmc_net`), recorded before it is made; ``down`` deletes it"""
    loop_files: list[str] = field(default_factory=list)
    """backing files of loop devices on this machine (the scratch scenario's NVMe stand-ins:
    :mod:`clusterctl.rehearse.node.loop_dev`), recorded before the device is made; ``down`` detaches every loop
    device on them and deletes them"""
    stopped: bool = False
    version: int = VERSION

    def node(self, name: str) -> NodeRecord:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def state_dir(out: Path) -> Path:
    return Path(out) / STATE_DIR


def state_path(out: Path) -> Path:
    return state_dir(out) / STATE_FILE


def save(state: State) -> None:
    """Replace the state file atomically (write, fsync, rename): a crash leaves the old or the new record."""
    write_text_atomic(state_path(Path(state.dir)), json.dumps(asdict(state), indent=2))


def load(out: Path) -> State | None:
    """The recorded state of the rehearsal in ``out``, or None when there is none."""
    path = state_path(out)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RehearsalError(f"{path}: cannot be read: {exc}",
                             "remove the rehearsal's resources by hand (docs/rehearse.md, State and teardown)") from None
    try:
        nodes = []
        for n in data.pop("nodes", []):
            for key in ("launcher", "init"):
                n[key] = Proc(**n[key]) if n.get(key) else None
            nodes.append(NodeRecord(**n))
        services = [Proc(**p) for p in data.pop("services", [])]
        return State(nodes=nodes, services=services, **data)
    except (TypeError, AttributeError) as exc:
        raise RehearsalError(f"{path}: not a rehearsal state file of this clusterctl ({exc})",
                             "was it written by another version? tear that rehearsal down with it") from None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when no such process exists."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: fields after the last ')' are fixed
    return int(stat[stat.rindex(")") + 2:].split()[19])


def proc_of(pid: int) -> Proc | None:
    start = start_time(pid)
    return Proc(pid, start) if start is not None else None


def alive(proc: Proc | None) -> bool:
    """True when the recorded process still runs (same PID and same start time, not a zombie)."""
    if proc is None or start_time(proc.pid) != proc.start:
        return False
    try:
        with open(f"/proc/{proc.pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] != "Z"
    except OSError:
        return False
