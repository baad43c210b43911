"""Rehearsal nodes: isolated hosts on this machine, booted from a clean OS image, without containers or VMs
(docs/rehearse.md).

A node is a process tree in its own network, UTS, mount and PID namespaces:

- **network**: a named netns (``ip netns add``, so it outlives no process of ours by accident and
  ``down`` can find it) with ``lo`` and ``eth0``, one end of a veth pair whose other end is a port of
  the rehearsal's private bridge. The host has an address on the bridge (so it can SSH in); nothing is
  routed or NATed anywhere else.
- **UTS**: hostname = the blueprint host name.
- **mount**: the root is an overlay whose lower layer is the rehearsal's node image (a clean Debian root
  built once into the cache: :mod:`clusterctl.rehearse.image.build`; never this machine's root, so nothing
  installed here is visible in a node) and whose upper layer is
  ``DIR/.rehearsal/nodes/<name>/upper``: every write (/etc, /var, /root, /usr) lands there. The node
  gets a fresh /proc (its own PIDs), a read-only sysfs of its own netns with the host's cgroup
  hierarchies bound under /sys/fs/cgroup (slurmd needs them), a tmpfs /dev holding only the usual
  character devices (so GPU stand-ins created in a node stay in that node), its own devpts, and
  tmpfs /run, /tmp and /dev/shm. Then ``pivot_root`` drops the host's mount tree from the node
  entirely: the node cannot reach the host's files at all, and the image only read-only (copy-up on
  write).
- **PID**: the node's PID 1 is :mod:`clusterctl.rehearse.node.pid1` (reaps, runs sshd, stops all).

The overlay and the node's other mounts exist only in the node's mount namespace, so they vanish with
its last process; the host's mount table never holds them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.build import ensure_image
from clusterctl.rehearse.image.catalog import DEFAULT_IMAGE, IMAGES, Image
from clusterctl.rehearse.node import bmc_net, loop_dev, path as node_path, pid1, probe
from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.links import Link, check_links, link_commands
from clusterctl.rehearse.node.command import CommandResult, run_command, start_detached
from clusterctl.rehearse.node.ssh import control_dir
from clusterctl.rehearse.node import systemd_init
from clusterctl.rehearse.node.state import (
    NodeRecord,
    Proc,
    State,
    alive,
    load,
    proc_of,
    save,
    state_dir,
)

INIT_PATH = "/usr/local/lib/clusterctl-rehearsal/init"
"""where the node's PID 1 program is placed in each node (only in its upper layer)"""
NETNS_DIR = "/run/netns"
BOOT_TIMEOUT_S = 120.0
"""how long a booting node may take until its sshd listens: 1-9 s on an idle machine; ten nodes booting at once on
two cores beside two converges took more than 30 s (a deadline, not a wait)"""
STOP_TIMEOUT_S = 8.0
MAX_NODES = 64
FALLBACK_NET = "10.254.{}.0/24"
"""a rehearsal range for blueprints without an IPv4 in-band pool (the third octet from the rehearsal id)"""

# character devices a node's /dev holds: (name, major, minor, mode)
DEVICES = (("null", 1, 3, 0o666), ("zero", 1, 5, 0o666), ("full", 1, 7, 0o666), ("random", 1, 8, 0o666),
           ("urandom", 1, 9, 0o666), ("tty", 5, 0, 0o666), ("fuse", 10, 229, 0o666))

# Runs as PID 1 of the new PID namespace, inside the node's net/UTS/mount namespaces, still seeing the
# host's mount tree; builds the node's root and replaces itself with the init. Arguments: name, lower (the
# image root), upper, work, merged, cpus, python, the node_path helper, then pairs of (host path, node path) to bind. A bind's
# node path is resolved and created inside the node's root by the helper (clusterctl/rehearse/node/path.py):
# a plain ``mkdir -p "$root$2"`` would follow the node's absolute symlinks (/var/run -> /run) on the host.
STAGE1 = r"""
set -eu
name=$1 lower=$2 upper=$3 work=$4 root=$5 cpus=$6 python=$7 node_path=$8
shift 8
# the namespaces are made; the node runs on every CPU again (slurmd counts the CPUs it may use)
if [ -n "$cpus" ]; then taskset -p -c "$cpus" $$ >/dev/null; fi
hostname "$name"
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
if [ -z "${CLUSTERCTL_CGROUPS-}" ] && [ -d /sys/fs/cgroup ] && [ -d "$root/sys/fs/cgroup" ]; then mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"; fi
mount -t tmpfs -o nosuid,mode=755,size=64m tmpfs "$root/dev"
DEVICES
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"; ln -s /proc/self/fd/1 "$root/dev/stdout"; ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o nosuid,nodev,mode=755 tmpfs "$root/run"
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root/tmp"
while [ $# -ge 2 ]; do
  target=$("$python" -I "$node_path" "$root" "$2")
  mount --bind "$1" "$target"
  shift 2
done
SYSTEMD_SETUP
cd "$root"
pivot_root . .
umount -l .
cd /
exec ${CLUSTERCTL_EXEC:-INIT}
""".replace("SYSTEMD_SETUP", systemd_init.STAGE1_SETUP.strip()).replace("DEVICES", "\n".join(f'mknod -m {mode:o} "$root/dev/{n}" c {ma} {mi}' for n, ma, mi, mode in DEVICES)
            ).replace("INIT", INIT_PATH)

SSHD_CONFIG = """\
# clusterctl rehearsal node {name}: sshd for the rehearsal only (this file exists in the node's overlay only)
ListenAddress {address}:22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile .ssh/authorized_keys
UseDNS no
MaxStartups 100:30:200
MaxSessions 50
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
PidFile /run/sshd.pid
"""


@dataclass(frozen=True)
class NodeSpec:
    """A node to boot: its blueprint host name, its address and what to bind into it."""

    name: str
    address: str
    binds: tuple[tuple[str, str], ...] = ()
    """(host path, node path) pairs bind-mounted into the node, e.g. a directory serving as shared storage"""
    init: systemd_init.NodeInit = "rehearsal"
    """the node's PID 1: the rehearsal init, or the image's systemd (clusterctl/rehearse/node/systemd_init.py)"""
    mac: str | None = None
    """eth0's MAC address (canonical lower case), e.g. the host's in-band MAC from the blueprint's inventory, so a
    DHCP server's reservation by MAC finds the node; None: the kernel's random one"""


def rehearsal_id(out: Path) -> str:
    """A short id from the state directory's absolute path: names of bridge, netns and veths derive from it."""
    return hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:6]


def fallback_specs(names: Sequence[str], rid: str) -> list[NodeSpec]:
    """Addresses from the rehearsal range for a blueprint without an in-band pool."""
    net = ipaddress.ip_network(FALLBACK_NET.format(int(rid, 16) % 200 + 20))
    return [NodeSpec(n, str(net.network_address + i)) for i, n in enumerate(names, 1)]


COMMAND_TIMEOUT_S = 30.0
"""how long one ``ip``, ``ssh-keygen``, ``umount`` or probe command may take"""


def _run(*args: str) -> CommandResult:
    return run_command(args, timeout=COMMAND_TIMEOUT_S)


def _must(*args: str) -> None:
    r = _run(*args)
    if r.returncode != 0:
        raise RehearsalError(f"`{' '.join(args)}` failed: {(r.stderr or r.stdout).strip()}",
                             "see docs/rehearse.md; `clusterctl rehearse --down DIR` removes what was created")


def _network(specs: Sequence[NodeSpec]) -> ipaddress.IPv4Network:
    """The network all nodes share: the smallest of the in-band pool's /24 (or wider) containing every node."""
    addrs = [ipaddress.ip_address(s.address) for s in specs]
    if any(a.version != 4 for a in addrs):
        raise RehearsalError("rehearsal nodes need IPv4 addresses", "give the blueprint an IPv4 in-band pool")
    net = ipaddress.ip_network(f"{addrs[0]}/24", strict=False)
    while not all(a in net for a in addrs):
        net = net.supernet()
    return net


def _host_address(net: ipaddress.IPv4Network, specs: Sequence[NodeSpec]) -> ipaddress.IPv4Address:
    used = {ipaddress.ip_address(s.address) for s in specs}
    for candidate in reversed(list(net.hosts())[-64:]):
        if candidate not in used:
            return candidate
    raise RehearsalError(f"no free address for the host in {net}", "fewer nodes, or a wider in-band pool")


def _routed_elsewhere(net: ipaddress.IPv4Network) -> str | None:
    """An existing host route overlapping the rehearsal network (a real network, or another rehearsal)."""
    r = _run("ip", "-j", "-4", "route", "show")
    try:
        routes = json.loads(r.stdout or "[]")
    except ValueError:
        return None
    for route in routes:
        dst = route.get("dst", "")
        if dst in ("default", ""):
            continue
        try:
            if ipaddress.ip_network(dst, strict=False).overlaps(net):
                return f"{dst} dev {route.get('dev', '?')}"
        except ValueError:
            continue
    return None


def _keygen(path: Path, comment: str) -> str:
    """A fresh ed25519 key pair at ``path`` (0600) and ``path``.pub; returns the public key line."""
    for p in (path, path.with_suffix(".pub")):
        p.unlink(missing_ok=True)
    _must("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    path.chmod(0o600)
    return path.with_suffix(".pub").read_text().strip()


def _prepare_upper(node: NodeRecord, spec: NodeSpec, user_key: str, hosts: str, init_src: str,
                   image_root: Path) -> str:
    """Files the node starts with, written into its upper layer only; returns the node's public host key."""
    up = node.upper
    (up / "root" / ".ssh").mkdir(parents=True, exist_ok=True)
    (up / "root" / ".ssh").chmod(0o700)
    write_text_atomic(up / "root" / ".ssh" / "authorized_keys", user_key + "\n", 0o600)
    (up / "etc" / "ssh").mkdir(parents=True, exist_ok=True)
    host_key = _keygen(up / "etc" / "ssh" / "ssh_host_ed25519_key", f"root@{spec.name}")
    write_text_atomic(up / "etc" / "ssh" / "sshd_config", SSHD_CONFIG.format(name=spec.name, address=spec.address))
    write_text_atomic(up / "etc" / "hostname", spec.name + "\n")
    write_text_atomic(up / "etc" / "hosts", hosts)
    if spec.init == "systemd":  # the image's /sbin/init (systemd) stays; systemd_init writes what it needs
        systemd_init.prepare_upper(up, node.netns)
        return host_key
    write_text_atomic(up / INIT_PATH.lstrip("/"), init_src, 0o755)
    # /sbin/init -> the rehearsal init, not systemd: Ansible's service-manager fact reads this link when
    # PID 1 is named "init" and would pick systemd (whose systemctl cannot work without systemd as PID 1);
    # now it picks sysvinit, so ansible.builtin.service runs the /etc/init.d scripts. Written at the real
    # path (/sbin is a symlink to usr/sbin in a merged-/usr image; a directory "sbin" would hide it)
    sbin = image_root / "sbin"
    sbin_init = up / (os.readlink(sbin).lstrip("/") if sbin.is_symlink() else "sbin") / "init"
    sbin_init.parent.mkdir(parents=True, exist_ok=True)
    sbin_init.unlink(missing_ok=True)
    sbin_init.symlink_to(INIT_PATH)
    return host_key


def _hosts_file(specs: Sequence[NodeSpec]) -> str:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
             "# clusterctl rehearsal nodes"]
    lines += [f"{s.address}\t{s.name}" for s in specs]
    return "\n".join(lines) + "\n"


def _ssh_config(state: State) -> str:
    out = [f"# clusterctl rehearsal {state.id}: ssh -F {state.ssh_config} <node>"]
    for n in state.nodes:
        out += [f"Host {n.name}", f"  HostName {n.address}"]
    out += ["Host *", "  User root", f"  IdentityFile {state.key}", "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {state.known_hosts}", "  StrictHostKeyChecking yes", "  BatchMode yes",
            "  ConnectTimeout 5", "  LogLevel ERROR"]
    return "\n".join(out) + "\n"


# A persistent mount namespace (Slurm's job_container/tmpfs: each job's namespace is held by bind-mounting
# /proc/PID/ns/mnt onto a file) is refused with EINVAL when the caller's mount namespace has an id not below
# the new one's (the kernel's mnt_ns_loop guard against namespace loops). Kernels that hand out namespace ids
# in per-CPU batches (seen on 6.18) make that depend on the CPU: a rehearsal node whose namespace was made on
# the CPU holding the higher batch gets every job started from another CPU's lower batch requeued held
# ("launch failed requeued held"), at random. Found by the elastic and rolling rehearsals, where the job was
# PENDING for good in some CI runs. So each node's namespaces are made on the CPU whose ids are lowest now:
# every namespace made later, on any CPU, has a higher id. The batches move as namespaces are made (by this
# process or anyone else's), so the probe runs again before each node is launched, never cached: a CPU chosen
# an hour earlier by a long-lived process failed a CI run (head01 refused a job namespace made on CPU 1).
NS_HOLD_PROBE = r"""
d=$(mktemp -d) && mount --bind "$d" "$d" && mount --make-private "$d" && touch "$d/ns" || exit 2
rc=0
for c in $CPUS; do
  if taskset -c "$c" unshare --mount="$d/ns" true 2>/dev/null; then umount "$d/ns"; else rc=1; fi
done
rm -f "$d/ns"; umount "$d"; rmdir "$d"
exit $rc
"""

def namespace_cpu() -> int | None:
    """The CPU on which a new mount namespace can hold the namespaces its processes make on any CPU (probed now,
    from a throwaway namespace made on each CPU in turn); None when every CPU can, or none can."""
    cpus = sorted(os.sched_getaffinity(0))
    env = {**os.environ, "CPUS": " ".join(map(str, cpus))}
    results = {c: run_command(["taskset", "-c", str(c), "unshare", "--mount", "--propagation", "private",
                               "/bin/sh", "-c", NS_HOLD_PROBE], env=env, timeout=COMMAND_TIMEOUT_S).returncode
               for c in cpus}
    good = [c for c, rc in results.items() if rc == 0]
    return good[0] if good and len(good) < len(cpus) else None


def _launch(node: NodeRecord, binds: Sequence[tuple[str, str]], image_root: str) -> Proc:
    """Start the node: nsenter (its netns) -> unshare (new mount, UTS, PID ns; on :func:`namespace_cpu`) ->
    stage 1 (back on every CPU) -> init."""
    cpu = namespace_cpu()  # probed for this node, just before its namespaces are made
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    every = ",".join(map(str, sorted(os.sched_getaffinity(0)))) if cpu is not None else ""
    args = ["nsenter", f"--net=/run/netns/{node.netns}", "--", *pin,
            "unshare", "--mount", "--uts", "--pid", "--fork", "--propagation", "private", "--kill-child",
            "/bin/sh", "-c", STAGE1, "stage1", node.name, image_root, str(node.upper), str(node.work), str(node.merged),
            every, sys.executable, node_path.__file__]
    for host_path, path_in_node in binds:
        args += [host_path, path_in_node]
    if node.cgroups:  # a systemd node: stage 1 learns its cgroups and how to start systemd from its environment
        args = ["env", *systemd_init.stage1_env(node.cgroups), *args]
    pid = start_detached(args, log=node.console)
    return proc_of(pid) or Proc(pid, 0)


def _init_of(launcher: Proc, deadline: float) -> Proc | None:
    """The node's PID 1 as seen from the host: unshare's only child."""
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return proc_of(int(children[0]))
        time.sleep(0.005)
    return None


def _listening_ssh(init: Proc) -> bool:
    """True when some process of the node's netns listens on TCP port 22: read from the node's own view of
    /proc/net/tcp, so the probe opens no connection (sshd would log each one as a failed client)."""
    try:
        lines = Path(f"/proc/{init.pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(f[1].endswith(":0016") and f[3] == "0A" for f in (line.split() for line in lines) if len(f) > 3)


def _wait_ssh(state: State, deadline: float) -> None:
    """Wait until every node's sshd listens on port 22; a node whose init died fails at once."""
    waiting = {n.name: n for n in state.nodes}
    while waiting:
        for name, n in list(waiting.items()):
            if not alive(n.init):
                tail = n.console.read_text(errors="replace")[-600:] if n.console.exists() else ""
                raise RehearsalError(f"node {name} stopped while booting; its console:\n{tail}",
                                     f"console log: {n.console}")
            if n.init is not None and _listening_ssh(n.init):
                del waiting[name]
        if waiting and time.monotonic() > deadline:
            raise RehearsalError(f"node(s) {', '.join(waiting)} did not answer on port 22 within "
                                 f"{BOOT_TIMEOUT_S:.0f} s", "see each node's console.log under DIR/.rehearsal/nodes")
        if waiting:
            time.sleep(0.02)


def boot(out: Path, specs: Sequence[NodeSpec], caps: probe.Capabilities = probe.Capabilities(),
         image: Image | None = None, links: Sequence[Link] = ()) -> State:
    """Boot one node per spec under ``out`` from ``image`` (default: :data:`DEFAULT_IMAGE`, built into the cache
    first when absent), cable them with ``links`` (:mod:`.links`) and return once every node's sshd listens.

    On any failure the nodes booted so far are torn down before the error propagates; the state file
    is written before each resource is created, so a crash of this process can be undone by
    :func:`down` too."""
    probe.require(caps)
    if not specs:
        raise RehearsalError("no hosts to rehearse", "the blueprint needs at least one host")
    if len(specs) > MAX_NODES:
        raise RehearsalError(f"{len(specs)} rehearsal nodes is more than {MAX_NODES}",
                             "lower --nodes-per-group")
    if len({s.name for s in specs}) != len(specs) or len({s.address for s in specs}) != len(specs):
        raise RehearsalError("rehearsal host names and addresses must be unique")
    macs = [s.mac for s in specs if s.mac is not None]
    if len(set(macs)) != len(macs) or not all(MAC.match(m) for m in macs):
        raise RehearsalError(f"rehearsal MAC addresses must be unique and aa:bb:cc:dd:ee:ff: {macs}",
                             "fix the blueprint's inventory (clusterctl validate names the row)")
    check_links(links, [s.name for s in specs])
    out = Path(out).resolve()
    previous = load(out)
    if previous is not None and not previous.stopped:
        raise RehearsalError(f"{out} holds a rehearsal that is still up (id {previous.id})",
                             f"clusterctl rehearse --down {out}")
    image = image or IMAGES[DEFAULT_IMAGE]
    image_root = ensure_image(image)
    net = _network(specs)
    clash = _routed_elsewhere(net)
    if clash:
        raise RehearsalError(f"the rehearsal network {net} overlaps a route of this machine ({clash})",
                             "tear the other rehearsal down, or rehearse a blueprint with another in-band pool")
    rid = rehearsal_id(out)
    sdir = state_dir(out)
    if (sdir / "nodes").exists():
        shutil.rmtree(sdir / "nodes")
    sdir.mkdir(parents=True, exist_ok=True)
    host = _host_address(net, specs)
    state = State(id=rid, dir=str(out), bridge=f"rh-{rid}", host_address=f"{host}/{net.prefixlen}",
                  prefix=net.prefixlen, key=str(sdir / "id_ed25519"), known_hosts=str(sdir / "known_hosts"),
                  ssh_config=str(sdir / "ssh_config"), image=image.name, image_root=str(image_root))
    save(state)
    try:
        _boot_all(state, specs, links)
    except BaseException:
        down(out)
        raise
    return state


def _boot_all(state: State, specs: Sequence[NodeSpec], links: Sequence[Link]) -> None:
    _keygen(Path(state.key), f"clusterctl-rehearsal-{state.id}")
    init_src = Path(pid1.__file__).read_text()
    hosts = _hosts_file(specs)
    state.bridge_created = True
    state.netns_mount_created = not _is_mount_point(NETNS_DIR)
    save(state)
    _must("ip", "link", "add", state.bridge, "type", "bridge")
    _must("ip", "addr", "add", state.host_address, "dev", state.bridge)
    _must("ip", "link", "set", state.bridge, "up")
    known = []
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    for i, spec in enumerate(specs):
        node = NodeRecord(name=spec.name, address=spec.address, netns=f"rh-{state.id}-{spec.name}",
                          veth_host=f"rh{state.id}h{i}", veth_node=f"rh{state.id}n{i}",
                          root=str(state_dir(Path(state.dir)) / "nodes" / spec.name),
                          binds=[list(b) for b in spec.binds], init_kind=spec.init, mac=spec.mac,
                          cgroups=systemd_init.node_cgroups(state.id, spec.name) if spec.init == "systemd" else [])
        state.nodes.append(node)
        save(state)
        systemd_init.create_cgroups(node.cgroups)
        for d in (node.upper, node.work, node.merged):
            d.mkdir(parents=True, exist_ok=True)
        host_key = _prepare_upper(node, spec, Path(state.key + ".pub").read_text().strip(), hosts, init_src,
                                  Path(state.image_root))
        known.append(f"{spec.name},{spec.address} {' '.join(host_key.split()[:2])}")
        _must("ip", "netns", "add", node.netns)
        _must("ip", "link", "add", node.veth_host, "type", "veth", "peer", "name", node.veth_node,
              "netns", node.netns)
        _must("ip", "link", "set", node.veth_host, "master", state.bridge, "up")
        _must("ip", "-n", node.netns, "link", "set", node.veth_node, "name", "eth0")
        if spec.mac:  # before the link is up: the first frame the node sends carries it
            _must("ip", "-n", node.netns, "link", "set", "eth0", "address", spec.mac)
        _must("ip", "-n", node.netns, "addr", "add", f"{spec.address}/{state.prefix}", "dev", "eth0")
        _must("ip", "-n", node.netns, "link", "set", "eth0", "up")
        _must("ip", "-n", node.netns, "link", "set", "lo", "up")
        node.launcher = _launch(node, spec.binds, state.image_root)
        save(state)
        node.init = _init_of(node.launcher, deadline)
        save(state)
        if node.init is None:
            raise RehearsalError(f"node {spec.name} did not start", f"console log: {node.console}")
    _cable(state, links)
    write_text_atomic(Path(state.known_hosts), "\n".join(known) + "\n")
    write_text_atomic(Path(state.ssh_config), _ssh_config(state))
    _wait_ssh(state, deadline)


def _cable(state: State, links: Sequence[Link]) -> None:
    """Create every cable between the booted nodes' namespaces (recorded first; deleting the namespaces at
    ``down`` destroys them)."""
    netns_of = {n.name: n.netns for n in state.nodes}
    for link in links:
        state.links.append([link.a, link.a_port, link.b, link.b_port, link.mtu])
        save(state)
        for command in link_commands(link, netns_of):
            _must(*command)


POWER_OFF_TIMEOUT_S = 15.0
"""how long a powered-off node's PID 1 may take to stop its units before it is killed"""
MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def power_off(state: State, name: str, timeout: float = POWER_OFF_TIMEOUT_S) -> float:
    """Power node ``name`` off as its BMC would, keeping its disk and cable: its PID 1 gets its stop signal
    (systemd: SIGRTMIN+4, a clean poweroff of its units) until it exits, SIGKILL after ``timeout``. Its netns
    (with eth0 and its MAC), upper layer and cgroups stay for :func:`power_on`. Returns the seconds it took."""
    node = state.node(name)
    t0 = time.monotonic()
    resend = 0.0
    while time.monotonic() < t0 + timeout and (alive(node.init) or alive(node.launcher)):
        if time.monotonic() >= resend:
            _signal(node.init, systemd_init.STOP_SIGNALS[node.init_kind])
            resend = time.monotonic() + 0.5
        time.sleep(0.05)
    _signal(node.init, signal.SIGKILL)
    _signal(node.launcher, signal.SIGKILL)
    killed_by = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < killed_by and (alive(node.init) or alive(node.launcher)):
        time.sleep(0.05)
    if alive(node.init) or alive(node.launcher):
        raise RehearsalError(f"node {name} did not stop within {timeout + STOP_TIMEOUT_S:.0f} s",
                             f"clusterctl rehearse --down {state.dir}")
    node.init = node.launcher = None
    save(state)
    return time.monotonic() - t0


def power_on(state: State, name: str, *, inband_address: bool) -> float:
    """Start node ``name`` again on its upper layer and netns (as after :func:`power_off`), with eth0 holding its
    rehearsal address (``inband_address``) or no address at all, as a host whose in-band interface waits for DHCP
    (then its sshd may bind the planned address before the address arrives: ``ip_nonlocal_bind`` in its netns).
    Returns once its PID 1 runs (sshd may not listen yet); the seconds it took."""
    node = state.node(name)
    if alive(node.init):
        raise RehearsalError(f"node {name} is running", "power it off first")
    t0 = time.monotonic()
    if inband_address:
        _must("ip", "-n", node.netns, "addr", "replace", f"{node.address}/{state.prefix}", "dev", "eth0")
    else:
        _must("ip", "-n", node.netns, "addr", "flush", "dev", "eth0")
        _must("ip", "netns", "exec", node.netns, "sysctl", "-q", "-w", "net.ipv4.ip_nonlocal_bind=1")
    systemd_init.create_cgroups(node.cgroups)  # the last boot's subtree is removed first
    node.launcher = _launch(node, [(b[0], b[1]) for b in node.binds], state.image_root)
    save(state)
    node.init = _init_of(node.launcher, time.monotonic() + BOOT_TIMEOUT_S)
    save(state)
    if node.init is None:
        raise RehearsalError(f"node {name} did not start again", f"console log: {node.console}")
    return time.monotonic() - t0


def restart(state: State, name: str, *, inband_address: bool) -> float:
    """Power-cycle node ``name`` (:func:`power_off`, :func:`power_on`); the seconds it took."""
    return power_off(state, name) + power_on(state, name, inband_address=inband_address)


def _signal(proc: Proc | None, sig: int) -> None:
    if alive(proc):
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass


def _netns_pids(netns: str) -> list[int]:
    r = _run("ip", "netns", "pids", netns)
    return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []


def _is_mount_point(path: str) -> bool:
    with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
        return any(line.split()[1] == path for line in f)


def _mounted_under(root: str) -> list[str]:
    """Mount points of the host's mount table under a node's directory (none, unless something leaked)."""
    found = []
    with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
        for line in f:
            point = line.split()[1].replace("\\040", " ")
            if point == root or point.startswith(root + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def _close_ssh_masters(cp: Path) -> None:
    """Ask every SSH control master of the rehearsal to exit, so no ssh process outlives the nodes it was
    connected to; then remove the socket directory."""
    if not cp.is_dir():
        return
    for sock in cp.iterdir():
        if sock.is_socket():
            _run("ssh", "-o", f"ControlPath={sock}", "-O", "exit", "rehearsal-node")
        sock.unlink(missing_ok=True)
    shutil.rmtree(cp, ignore_errors=True)


def down(out: Path) -> State:
    """Stop and remove everything the rehearsal in ``out`` recorded; idempotent.

    Each node's init gets SIGTERM (it stops its node's processes), then after STOP_TIMEOUT_S every
    recorded process still alive gets SIGKILL, and so does any process still in a recorded netns (a
    process started in the window between its creation and its record). Then mounts under the node
    directories (none in the normal case), netns, veths and the bridge are deleted and the upper
    layers removed (console logs are kept)."""
    out = Path(out).resolve()
    state = load(out)
    if state is None:
        raise RehearsalError(f"{out} holds no rehearsal (no {state_dir(out).name}/state.json)",
                             "pass the -o DIR a `clusterctl rehearse` used")
    _close_ssh_masters(control_dir(state.id))
    for service in state.services:  # the site mirror's server: nodes stop asking it before they stop
        _signal(service, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    resend = 0.0
    while time.monotonic() < deadline and any(alive(n.init) or alive(n.launcher) for n in state.nodes):
        if time.monotonic() >= resend:  # again every 0.5 s: a PID 1 ignores signals until it has a handler
            for n in state.nodes:       # (the stage-1 shell, or the init while Python starts)
                _signal(n.init, systemd_init.STOP_SIGNALS[n.init_kind])
            resend = time.monotonic() + 0.5
        time.sleep(0.05)
    for n in state.nodes:
        _signal(n.init, signal.SIGKILL)
        _signal(n.launcher, signal.SIGKILL)
        for pid in _netns_pids(n.netns):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    killed_by = time.monotonic() + STOP_TIMEOUT_S  # a killed PID 1 exits once the kernel has reaped its namespace
    while time.monotonic() < killed_by and any(alive(n.init) or alive(n.launcher) for n in state.nodes):
        time.sleep(0.05)
    problems = []
    for n in state.nodes:
        problems += systemd_init.remove_cgroups(n.cgroups)
        for point in _mounted_under(n.root):
            if _run("umount", "-l", point).returncode != 0:
                problems.append(f"cannot unmount {point}")
        if Path(f"/run/netns/{n.netns}").exists():
            if _run("ip", "netns", "del", n.netns).returncode != 0:
                problems.append(f"cannot delete netns {n.netns}")
        if Path(f"/sys/class/net/{n.veth_host}").exists():
            _run("ip", "link", "del", n.veth_host)
    problems += bmc_net.remove(state)
    problems += loop_dev.remove(state)
    if state.bridge_created and Path(f"/sys/class/net/{state.bridge}").exists():
        if _run("ip", "link", "del", state.bridge).returncode != 0:
            problems.append(f"cannot delete bridge {state.bridge}")
    if state.netns_mount_created and _is_mount_point(NETNS_DIR) and not any(Path(NETNS_DIR).iterdir()):
        _run("umount", NETNS_DIR)  # iproute2's self-bind of /run/netns, made by this rehearsal's first netns
    for service in state.services:
        _signal(service, signal.SIGKILL)
    still = [n.name for n in state.nodes if alive(n.init) or alive(n.launcher)]
    still += [f"service pid {p.pid}" for p in state.services if alive(p)]
    if still:
        problems.append(f"node(s) {', '.join(still)} still running")
    if problems:
        raise RehearsalError("teardown incomplete: " + "; ".join(problems), "run `clusterctl rehearse --down DIR` again")
    for n in state.nodes:
        for d in (n.upper, n.work, n.merged):
            if d.exists() and not _mounted_under(str(d)):
                shutil.rmtree(d, ignore_errors=True)
    state.stopped = True
    save(state)
    return state

