"""The ``deploy`` scenario: converge the rendered ``site.yml`` over SSH, converge again (changed=0), run the
rendered testinfra suite against every host, and run one multi-node ``srun`` with PMIx ranks.

Everything runs the **rendered** files unchanged; what a rehearsal node cannot have is set by a rehearsal
variables file (``DIR/.rehearsal/deploy-vars.yml``, every value with its reason in :data:`REHEARSAL_VARS`),
the secrets by a per-rehearsal extra-vars file (0600, never on a command line), and the hardware roles
are skipped by tag. Ansible is driven through ansible-runner (imported lazily: validate and render do
not need it); its event stream gives the per-host changed/ok/failed counts and the changed task names.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path

from clusterctl import hostlist, yamlout
from clusterctl.plan.roles import slurm_roles
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.mirror.source import PackageOrigins
from clusterctl.rehearse.node.command import run_command
from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.ssh import control_dir, ssh
from clusterctl.rehearse.scenario.base import Build, Scenario
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.node.state import Proc, State, alive, proc_of, state_dir
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed
from clusterctl.targets.ansible.inventory import InvGroup, inventory_groups

HARDWARE_ROLES = ("doca_ofed", "nvidia_driver", "nvidia_imex", "dcgm", "enroot_pyxis", "roce_network", "gcp_tcpxo",
                  "host_network_preflight", "host_network")
"""GPU/RDMA roles: they install from NVIDIA's and Mellanox's repositories and need the hardware (RDMA NICs for
roce_network, Docker with GPUs and the TCPXO module for gcp_tcpxo; the hosts' real NIC names for
host_network_preflight and host_network: a rehearsal node has lo and eth0 only)"""
NVIDIA_MAJOR = 195
"""character device major of /dev/nvidiaN: the GPU stand-ins gres.conf's File= lines name"""

REHEARSAL_VARS: dict[str, tuple[object, str]] = {
    "ansible_python_interpreter": ("/usr/bin/python3", "Debian's python3 with python3-apt; the pyenv shim on "
                                   "PATH breaks interpreter discovery"),
    "ansible_become": (False, "the rehearsal connects as root (nodes have no sudo): become is not needed, and "
                       "su instead would turn off pipelining"),
    "common_sysctl_apply": (False, "nodes share the machine's kernel: the file is written, not loaded"),
    "common_manage_services": (False, "chronyd: nodes share the machine's clock, and nothing may reach NTP"),
    "munge_manage_services": (True, "munged runs as its systemd unit in every node (systemd is the nodes' PID 1)"),
    "slurm_controller_manage_services": (True, "slurmctld runs as its systemd unit on the controller"),
    "slurm_compute_manage_services": (True, "slurmd runs as its systemd unit (Delegate=yes) on each compute node"),
    "slurmdbd_manage_services": (True, "slurmdbd and the MariaDB the slurmdbd role installs run as systemd units "
                                 "on the accounting host (slurmctld is fatal on a first start without them)"),
    "slurmdbd_database_innodb_buffer_pool_size": ("128M", "every node shares this machine's memory"),
    "slurm_compute_hw_preflight_ports": ([], "a rehearsal node has lo and eth0 only, not the planned NICs (the "
                                         "hardware preflight still compares CPUs, memory and the GPU stand-ins)"),
    "storage_clients_mount_now": (False, "no file server in a rehearsal: fstab lines only"),
    "storage_clients_lustre_install": (False, "the Lustre client comes from a vendor repository"),
    "nfs_server_packages": ([], "this kernel has no NFS server (mount -t nfsd: unknown filesystem type 'nfsd'; no "
                            "/proc/net/rpc): the export directory and /etc/exports line are written, nfs-kernel-server "
                            "is not installed"),
    "nfs_server_manage_services": (False, "no nfsd in this kernel: nfs-kernel-server is not started, exportfs not run"),
    "node_health_drain": (False, "the check's GPUs, RDMA links and mounts are absent: it runs, but does "
                          "not drain a rehearsal node"),
    "local_scratch_devices": ("{{ ansible_local.clusterctl_rehearsal.scratch_devices | default([]) }}",
                              "a rehearsal node has no NVMe (and /sys/block is the machine's): the scratch scenario "
                              "gives one node a loop-device stand-in, named in its local facts "
                              "(/etc/ansible/facts.d/clusterctl_rehearsal.fact); the others assemble nothing"),
    "local_scratch_device_count": ("{{ ansible_local.clusterctl_rehearsal.scratch_devices | default([]) | length }}",
                                   "as local_scratch_devices"),
    "ansible_pull_manage_timer": (False, "the pull scenario runs each round itself, on every node at once (the "
                                  "service's command): a timer firing between rounds would race it; the units "
                                  "are written and tested"),
    "ansible_pull_skip_tags": (list(HARDWARE_ROLES), "a pull skips the hardware roles, as the push does "
                               "(--skip-tags)"),
}
DESELECT_MARKERS = ("hardware", "mounts", "kernel", "containers")
"""testinfra markers for what a rehearsal cannot have: GPUs and RDMA links, shared mounts, loaded sysctls, and
enroot and pyxis (the enroot_pyxis role downloads their packages and source from GitHub, which this machine cannot
reach; the rehearsal skips it with the other hardware roles)"""
DESELECT_TESTS = {
    "chronyd_is_running": "chronyd is not started: nodes share the machine's clock",
}
SHARED_STORAGE = ("none: the blueprint's shared tiers get their fstab lines (tested) but are not mounted, "
                  "and the testinfra 'mounts' marker is deselected (this kernel has no NFS client or server: "
                  "mount.nfs: No such device; mount -t nfsd: unknown filesystem type 'nfsd'); an NFS tier served by "
                  "a node of the blueprint gets its export directory and /etc/exports line, not a running server")
"""what the JSON summary says of shared storage in the deploy scenario"""


@dataclass(frozen=True)
class Cluster:
    """What the deploy steps need to know of the rehearsed plan."""

    groups: dict[str, str]
    """host -> node group (which rendered tests/test_<group>.py applies)"""
    compute: tuple[str, ...]
    gpus: dict[str, int]
    """compute host -> GPUs per node (stand-in devices to create)"""
    controllers: tuple[str, ...]
    login: tuple[str, ...] = ()
    accounting: str | None = None


def cluster_of(plan, hosts: Sequence[str]) -> Cluster:
    """The deploy view of ``plan`` restricted to the rehearsal's ``hosts``."""
    wanted = set(hosts)
    groups, gpus, compute, login = {}, {}, [], []
    for g in plan.groups:
        for h in g.hosts:
            if h in wanted:
                groups[h] = g.name
                if g.role == "compute":
                    compute.append(h)
                    gpus[h] = g.type.gpus
                elif g.role == "login":
                    login.append(h)
    roles = slurm_roles(plan)
    accounting = next((h for h in roles.accounting if h in wanted), None)  # as the inventory has it
    return Cluster(groups, tuple(compute), gpus, roles.controllers, tuple(login), accounting)


# --- files the converge reads ---------------------------------------------------------------------------

def commented_vars(title: str, table: dict[str, tuple[object, str]]) -> str:
    """An Ansible variables file of ``table`` (name -> (value, reason)): the title, then each variable under
    its reason as a comment."""
    return yamlout.comment_lines([title]) + "".join(
        yamlout.comment_lines([why]) + yamlout.body({key: value}, dumper=yamlout.PureDumper)
        for key, (value, why) in table.items())


def rehearsal_vars_text() -> str:
    """:data:`REHEARSAL_VARS` as a YAML variables file, each value with its reason."""
    return commented_vars("clusterctl rehearsal: variables for rehearsal nodes (clusterctl/rehearse/scenario/deploy.py)",
                          REHEARSAL_VARS)


VARS_SUFFIX = "-vars.yml"
"""``<owner>-vars.yml``: the name of a variables file in the state directory (:func:`vars_file`)"""


def vars_file(state: State, owner: str) -> Path:
    """The variables file ``owner`` passes to its runs of the tree (``-e @file``), in the state directory:
    ``deploy`` for the rehearsal's own (:func:`rehearsal_files`), a scenario's name for what its runs add (the
    pull scenario gives a pulling node every such file)."""
    return state_dir(Path(state.dir)) / f"{owner}{VARS_SUFFIX}"


def rehearsal_files(state: State) -> tuple[Path, Path]:
    """Write the rehearsal variables file (with reasons) and a fresh secrets file (0600); return both."""
    sdir = state_dir(Path(state.dir))
    vars_path = vars_file(state, "deploy")
    write_text_atomic(vars_path, rehearsal_vars_text())
    secrets_path = sdir / "secrets.yml"
    if not secrets_path.exists():  # kept across converges of one rehearsal: a new key would restart munged
        write_text_atomic(secrets_path, yamlout.body({
            "vault_munge_key": secrets.token_urlsafe(96),
            "vault_slurmdbd_storage_pass": secrets.token_urlsafe(24),
            "vault_directory_bind_pass": secrets.token_urlsafe(24),
            "vault_slurmdbd_replication_pass": secrets.token_urlsafe(24)}), 0o600)
    return vars_path, secrets_path


# --- converge ---------------------------------------------------------------------------------------------

@dataclass
class RunOutcome:
    """One ansible-runner run: its status, per-host recap counts and the changed/failed tasks per host."""

    status: str
    rc: int
    seconds: float
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    changed: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)

    def on_event(self, event: dict) -> bool:
        """ansible-runner's event handler: the changed and failed tasks per host, and the play recap."""
        data = event.get("event_data") or {}
        host = data.get("host")
        kind = event.get("event")
        if kind == "runner_on_ok" and host and (data.get("res") or {}).get("changed"):
            self.changed.setdefault(host, []).append(_task_name(data))
        elif kind in ("runner_on_failed", "runner_on_unreachable") and host and not data.get("ignore_errors"):
            msg = str((data.get("res") or {}).get("msg", ""))[:300]
            self.failed.setdefault(host, []).append(f"{_task_name(data)}: {msg}")
        elif kind == "playbook_on_stats":
            for key in ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored"):
                for h, n in (data.get(key) or {}).items():
                    self.stats.setdefault(h, {})[key] = n
        return True


def _task_name(data: dict) -> str:
    role = data.get("role")
    task = data.get("task", "?")
    return f"{role} : {task}" if role else str(task)


def run_playbook(state: State, hosts: Sequence[str], tuning: dict[str, str] | None = None,
                 ident: str = "converge", extra_args: Sequence[str] = (), forks: int | None = None,
                 playbook: str = "site.yml", skip_tags: Sequence[str] = HARDWARE_ROLES) -> RunOutcome:
    """Run the rendered ``DIR/ansible/site.yml`` (or another rendered ``playbook``) on ``hosts`` over SSH with
    ansible-runner, without the roles tagged ``skip_tags`` (default: the hardware roles).

    SSH reaches the nodes by name through the rehearsal's ssh_config (``-F``), with per-rehearsal control
    sockets (torn down with the nodes); facts are cached in DIR/.rehearsal/facts; ``tuning`` overrides
    ANSIBLE_* settings (the benchmark compares pipelining, forks and fact caching with it)."""
    try:
        import ansible_runner  # an optional dependency (the rehearse extra): validate and render run without it
    except ImportError:
        raise StepFailed("ansible-runner is not installed: pip install 'clusterctl[rehearse]'") from None
    out = Path(state.dir)
    sdir = state_dir(out)
    vars_path, secrets_path = rehearsal_files(state)
    for d in (sdir / "runner", sdir / "facts"):
        d.mkdir(exist_ok=True)
    env = runner_env(state, tuning)
    result = RunOutcome("failed", -1, 0.0)
    cmdline = ["--limit", ",".join(hosts), *(["--skip-tags", ",".join(skip_tags)] if skip_tags else []),
               "-e", f"@{vars_path}", "-e", f"@{secrets_path}", *extra_args]
    cancel, done = threading.Event(), threading.Event()
    t0 = time.monotonic()
    # in a thread, so that Ctrl-C or SIGTERM (KeyboardInterrupt in this thread) cancels the run: the runner
    # then stops ansible-playbook before the rehearsal tears the nodes down, and no ansible process is left
    thread, r = ansible_runner.run_async(
        private_data_dir=str(sdir / "runner"), project_dir=str(out / "ansible"), playbook=playbook,
        cmdline=shlex.join(cmdline), envvars=env, ident=ident, forks=forks or max(1, len(hosts)),
        event_handler=result.on_event, cancel_callback=cancel.is_set, finished_callback=lambda _runner: done.set(),
        # rotate_artifacts=0: keep the artifacts of every run (a run of every scenario makes five; the summary's
        # readers and the tests read the event streams after the rehearsal)
        quiet=True, rotate_artifacts=0, timeout=1800,
        # one fact cache for every run of the rehearsal (ansible-runner's default is one per run, so the
        # second converge would gather again); absolute, so the runner does not put it under its artifacts
        fact_cache_type=env.get("ANSIBLE_CACHE_PLUGIN", "jsonfile"), fact_cache=str(sdir / "facts"))
    _wait(thread, done, cancel)
    result.seconds = time.monotonic() - t0
    result.status, result.rc = r.status, r.rc
    if not result.stats and r.rc != 0:
        tail = ""
        try:
            tail = r.stdout.read()[-1500:]
        except Exception:
            pass
        raise StepFailed(f"ansible-playbook exited {r.rc} ({r.status}) before any host finished: {tail}")
    return result


def runner_env(state: State, tuning: dict[str, str] | None) -> dict[str, str]:
    """The ANSIBLE_* settings of a run: SSH through the rehearsal's config with per-rehearsal control sockets
    (made here), host keys checked, ``tuning`` last."""
    sdir = state_dir(Path(state.dir))
    cp = control_dir(state.id)
    cp.mkdir(parents=True, exist_ok=True, mode=0o700)
    return {
        "ANSIBLE_SSH_ARGS": f"-F {state.ssh_config} -o ControlMaster=auto -o ControlPersist=120s",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp),
        "ANSIBLE_SSH_CONTROL_PATH": "%(directory)s/%%C",
        # ansible-runner turns host key checking off unless told: the rendered ansible.cfg checks them, and
        # the rehearsal pins every node's key in its known_hosts
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_LOCAL_TEMP": str(sdir / "ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        # the ansible-playbook of this clusterctl's own environment first: run as root from a virtualenv (sudo
        # resets PATH), ansible-runner would otherwise find another Python's ansible-playbook, or none
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]),
        **(tuning or {}),
    }


def _wait(thread: threading.Thread, done: threading.Event, cancel: threading.Event) -> None:
    """Wait for the runner's thread; on an interrupt, kill ansible's whole process tree, cancel, re-raise."""
    try:  # Event.wait, not Thread.join: a join interrupted by KeyboardInterrupt may not wait again
        while not done.wait(0.2) and thread.is_alive():
            pass
    except BaseException:
        # ansible-playbook forks a worker per task and host, each in a session of its own (with its ssh
        # clients): the runner's cancel kills only ansible-playbook's process group, and only on its next
        # poll. So the whole tree is frozen first (no new fork), then killed by PID and start time.
        kill_tree(os.getpid())
        cancel.set()
        done.wait(60)
        raise
    thread.join(5)


def descendants(pid: int) -> list[Proc]:
    """Every process below ``pid`` (children, their children, ...), with start times."""
    out: list[Proc] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                children = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except OSError:
                continue
            for c in map(int, children):
                proc = proc_of(c)
                if proc is not None:
                    out.append(proc)
                    todo.append(c)
    return out


def _signal(proc: Proc, sig: int) -> None:
    if alive(proc):
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass


def kill_tree(root: int) -> None:
    """SIGSTOP every process below ``root`` until no new one appears, then SIGKILL them all."""
    seen: dict[int, Proc] = {}
    for _ in range(20):
        new = [p for p in descendants(root) if p.pid not in seen]
        if not new:
            break
        for p in new:
            seen[p.pid] = p
            _signal(p, signal.SIGSTOP)
    for p in seen.values():
        _signal(p, signal.SIGKILL)


def _recap_outcome(run: RunOutcome, host: str, require_unchanged: bool) -> HostOutcome:
    s = run.stats.get(host, {})
    counts = {"ok": s.get("ok", 0), "changed": s.get("changed", 0), "failed": s.get("failures", 0),
              "unreachable": s.get("dark", 0), "skipped": s.get("skipped", 0)}
    if host not in run.stats:
        return HostOutcome(FAILED, run.seconds, "not in the play recap", counts)
    if counts["failed"] or counts["unreachable"]:
        return HostOutcome(FAILED, run.seconds, "; ".join(run.failed.get(host, []))[:600], counts)
    if require_unchanged and counts["changed"]:
        return HostOutcome(FAILED, run.seconds, "changed: " + "; ".join(run.changed.get(host, [])), counts)
    return HostOutcome(OK, run.seconds, "", counts)


def prepare_nodes(state: State, cluster: Cluster) -> dict[str, str]:
    """What the rehearsal gives each node before the converge, as a real site's image would have it:
    ``/run/lock`` and GPU stand-in devices (``mknod /dev/nvidiaN c 195 N``, in the node's own /dev) on compute
    nodes. (The site mirror's apt source is given to every node by the ``mirror`` step right after the boot:
    :mod:`clusterctl.rehearse.mirror.source`.) Returns per-host errors."""
    def one(host: str) -> str:
        # /run/lock: systemd's tmpfiles make it on a real host; Debian's init scripts (mariadb) need it
        cmds = ["mkdir -p -m 1777 /run/lock"]
        for i in range(cluster.gpus.get(host, 0)):
            cmds.append(f"[ -e /dev/nvidia{i} ] || mknod -m 666 /dev/nvidia{i} c {NVIDIA_MAJOR} {i}")
        r = ssh(state, host, " && ".join(cmds))
        return "" if r.returncode == 0 else f"prepare: exit {r.returncode}: {r.stderr.strip()[-300:]}"

    with ThreadPoolExecutor(max_workers=min(16, len(state.nodes) or 1)) as pool:
        errors = {n.name: err for n, err in zip(state.nodes, pool.map(one, [n.name for n in state.nodes])) if err}
    return errors


def _converge(state: State, record: Record, ident: str, tuning: dict[str, str] | None, forks: int | None, *,
              require_unchanged: bool, hosts: Sequence[str] | None = None, batch: str | None = None) -> RunOutcome:
    """Run site.yml on ``hosts`` (default: every rehearsal host), record each host's recap, fail the step on a
    non-zero exit. ``batch`` overrides the compute play's rolling batch (``100%``: a first bring-up)."""
    hosts = list(hosts) if hosts is not None else [n.name for n in state.nodes]
    extra = ["-e", f"clusterctl_rolling_batch={batch}"] if batch else []
    outcome = run_playbook(state, hosts, tuning, ident=ident, forks=forks, extra_args=extra)
    for h in hosts:
        record(h, _recap_outcome(outcome, h, require_unchanged=require_unchanged))
    if outcome.rc != 0:
        raise StepFailed(f"ansible-playbook exited {outcome.rc}")
    return outcome


@dataclass(kw_only=True)
class ConvergeAgain:
    """The rendered site.yml run again on ``hosts`` (the deploy scenario's: :func:`one_per_group_set`): each must
    report changed=0 (the roles are idempotent on real hosts). The settings below are :class:`Converge`'s too."""

    name: str = "converge-again"
    tuning: dict[str, str] | None = None
    """ANSIBLE_* settings over the rehearsal's (the benchmark compares pipelining, forks and fact caching)"""
    forks: int | None = None
    """default: one fork per host"""
    last: RunOutcome | None = None
    hosts: tuple[str, ...] | None = None
    """the hosts of the rendered inventory (default: every node; the add-node scenario boots its new node early)"""
    batch: str | None = None
    """the compute play's batch for this run (default: the rendered rolling policy)"""

    def _run(self, state: State, record: Record, *, require_unchanged: bool) -> None:
        self.last = _converge(state, record, self.name, self.tuning, self.forks, require_unchanged=require_unchanged,
                              hosts=self.hosts, batch=self.batch)

    def run(self, state: State, record: Record) -> None:
        self._run(state, record, require_unchanged=True)


def one_per_group_set(groups: Sequence[InvGroup], hosts: Sequence[str], compute: Sequence[str]) -> tuple[str, ...]:
    """``hosts`` (in their order) without the compute hosts whose set of inventory ``groups`` (the plan's,
    :func:`inventory_groups`) an earlier compute host has. The inventory holds no host variables (group_vars/ holds
    them all), and the roles treat compute hosts alike (controllers, accounting and DHCP/DNS servers are told apart
    by name: primary and backup): compute hosts of one set of groups run the same tasks with the same variables, the
    blueprint's hundreds of them as the rehearsal's two, so the second converge shows their idempotence on one."""
    direct = {g.name: {h for p in g.hosts for h in hostlist.expand(p.replace(":", "-"))} for g in groups}
    nested = {g.name: g.children for g in groups}

    def members(name: str, seen: frozenset = frozenset()) -> set[str]:
        out = set(direct.get(name, ()))
        for child in nested.get(name, ()):
            if child not in seen:
                out |= members(child, seen | {name})
        return out

    groups_of: dict[str, frozenset[str]] = {h: frozenset() for h in hosts}
    for name in direct:
        for h in members(name) & groups_of.keys():
            groups_of[h] = groups_of[h] | {name}
    seen_sets: set[frozenset[str]] = set()
    chosen = []
    for h in hosts:
        if h not in compute:
            chosen.append(h)
        elif groups_of[h] not in seen_sets:
            seen_sets.add(groups_of[h])
            chosen.append(h)
    return tuple(chosen)


FIRST_BRING_UP_BATCH = "100%"
"""the compute play's batch of a first converge, as the rendered site.yml says to run a first bring-up
(``-e clusterctl_rolling_batch=100%``: no node runs a job yet, so none waits for another's slurmd restart); the
runs after it keep the rendered rolling policy, and the add-node scenario shows its batches"""


@dataclass(kw_only=True)
class Converge(ConvergeAgain):
    """The rendered site.yml, run once over SSH on every rehearsal host (after the node preparation), as a
    first bring-up: every compute node in one batch (FIRST_BRING_UP_BATCH)."""

    cluster: Cluster = field(kw_only=False)
    name: str = "converge"
    batch: str | None = FIRST_BRING_UP_BATCH

    def run(self, state: State, record: Record) -> None:
        errors = prepare_nodes(state, self.cluster)
        for host, err in errors.items():
            record(host, HostOutcome(FAILED, 0.0, err))
        if errors:
            raise StepFailed("node preparation failed")
        self._run(state, record, require_unchanged=False)


# --- testinfra --------------------------------------------------------------------------------------------

def _host_of(name: str, hosts: Sequence[str]) -> str:
    """The host of a testinfra test id (``test_x[ansible://gpu-01-/etc/x]``): the longest host name that
    follows ``://`` and ends at ``]`` or ``-`` (host names may hold '-')."""
    found = [h for h in hosts if f"://{h}]" in name or f"://{h}-" in name]
    return max(found, key=len) if found else "?"


def _junit_counts(path: Path, hosts: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per host (the testinfra ``[ansible://HOST]`` parameter) counts of passed/failed/skipped tests."""
    counts: dict[str, dict[str, int]] = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return counts
    for case in root.iter("testcase"):
        host = _host_of(case.get("name", ""), hosts)
        c = counts.setdefault(host, {"passed": 0, "failed": 0, "skipped": 0})
        if case.find("failure") is not None or case.find("error") is not None:
            c["failed"] += 1
        elif case.find("skipped") is not None:
            c["skipped"] += 1
        else:
            c["passed"] += 1
    return counts


def _failures(path: Path) -> list[str]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for case in root.iter("testcase"):
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            out.append(f"{case.get('name')}: {(bad.get('message') or '')[:200]}")
    return out


@dataclass
class Testinfra:
    """The rendered acceptance tests (DIR/tests/test_<group>.py) against every host over SSH, through the
    rendered inventory; the markers for what a rehearsal cannot have are deselected here, not in the tests."""

    cluster: Cluster
    name: str = "testinfra"
    timeout_s: float = 600.0

    def _group(self, state: State, group: str, hosts: list[str]) -> tuple[dict[str, dict[str, int]], list[str], str]:
        out = Path(state.dir)
        junit = state_dir(out) / f"testinfra-{group}.xml"
        junit.unlink(missing_ok=True)
        deselect = " and ".join(f"not {m}" for m in DESELECT_MARKERS)
        keyword = " and ".join(f"not {t}" for t in DESELECT_TESTS)
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                "--hosts=" + ",".join(f"ansible://{h}" for h in hosts),
                f"--ansible-inventory={out / 'ansible' / 'inventory.yml'}", f"--ssh-config={state.ssh_config}",
                "-m", deselect, "-k", keyword, f"--junitxml={junit}", str(out / "tests" / f"test_{group}.py")]
        # testinfra's ssh backend reads ansible_ssh_common_args from this variable: one SSH connection per host,
        # shared by every command of every test (and with Ansible's runs: the same control sockets, closed
        # with the nodes), not a new handshake per command
        multiplex = f"-o ControlMaster=auto -o ControlPersist=120s -o ControlPath={control_dir(state.id)}/%C"
        env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_SSH_ARGS": f"-F {state.ssh_config}",
               "ANSIBLE_SSH_COMMON_ARGS": multiplex}
        control_dir(state.id).mkdir(parents=True, exist_ok=True, mode=0o700)
        r = run_command(args, cwd=out, timeout=self.timeout_s, env=env)
        return _junit_counts(junit, hosts), _failures(junit), (r.stdout + r.stderr)[-800:] if r.returncode else ""

    def run(self, state: State, record: Record) -> None:
        by_group: dict[str, list[str]] = {}
        for host, group in self.cluster.groups.items():
            by_group.setdefault(group, []).append(host)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(by_group) or 1) as pool:
            futures = {g: pool.submit(self._group, state, g, hs) for g, hs in by_group.items()}
            for g, fut in futures.items():
                counts, failures, tail = fut.result()
                for h in by_group[g]:
                    c = counts.get(h, {"passed": 0, "failed": 0, "skipped": 0})
                    mine = [f for f in failures if _host_of(f.split(": ", 1)[0], by_group[g]) == h]
                    if c["failed"] or not c["passed"]:
                        detail = "; ".join(mine)[:600] or tail or "no test ran"
                        record(h, HostOutcome(FAILED, time.monotonic() - t0, detail, c))
                    else:
                        record(h, HostOutcome(OK, time.monotonic() - t0, f"tests/test_{g}.py; deselected: "
                                              + ", ".join((*DESELECT_MARKERS, *DESELECT_TESTS)), c))


# --- srun -------------------------------------------------------------------------------------------------

@dataclass
class Srun:
    """One job step across the rehearsed compute hosts, from the login host (or the controller): each
    compute host runs a rank, and PMIx numbers the ranks 0..n-1 (``--mpi=pmix``)."""

    cluster: Cluster
    name: str = "srun"
    idle_timeout_s: float = 90.0

    def _from(self) -> str:
        return (self.cluster.login or self.cluster.controllers)[0]

    def _wait_idle(self, state: State, via: str) -> str:
        deadline = time.monotonic() + self.idle_timeout_s
        nodes = ",".join(self.cluster.compute)
        last = ""
        while time.monotonic() < deadline:
            r = ssh(state, via, f"sinfo -h -N -n {nodes} -o '%N %t %E'")
            last = (r.stdout + r.stderr).strip()
            states = dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)
            if r.returncode == 0 and len(states) == len(self.cluster.compute) and \
                    all(s == "idle" for s in states.values()):
                return ""
            time.sleep(1.0)
        return f"compute nodes not idle after {self.idle_timeout_s:.0f} s: {last[-400:]}"

    def run(self, state: State, record: Record) -> None:
        if not self.cluster.compute or not self.cluster.controllers:
            raise StepFailed("no compute hosts or no Slurm controller in the rehearsal")
        via = self._from()
        t0 = time.monotonic()
        problem = self._wait_idle(state, via)
        if problem:
            raise StepFailed(problem)
        n = len(self.cluster.compute)
        cmd = (f"srun -N {n} -n {n} --ntasks-per-node=1 --mpi=pmix -t 2 "
               "sh -c 'echo \"$PMIX_RANK $SLURM_PROCID $(hostname)\"'")
        r = ssh(state, via, cmd, timeout=120)
        seconds = time.monotonic() - t0
        if r.returncode != 0:
            raise StepFailed(f"{cmd} on {via}: exit {r.returncode}: {r.stderr.strip()[-600:]}")
        ranks: dict[str, tuple[str, str]] = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                ranks[parts[2]] = (parts[0], parts[1])
        expected = {str(i) for i in range(n)}
        seen = {pmix for pmix, _ in ranks.values()}
        for h in self.cluster.compute:
            if h not in ranks:
                record(h, HostOutcome(FAILED, seconds, f"ran no rank: {r.stdout.strip()[-300:]}"))
            else:
                pmix, proc = ranks[h]
                ok = pmix == proc and pmix in expected
                record(h, HostOutcome(OK if ok else FAILED, seconds, f"PMIx rank {pmix}, SLURM_PROCID {proc}",
                                      {"rank": int(pmix) if pmix.isdigit() else -1}))
        if seen != expected:
            raise StepFailed(f"PMIx ranks {sorted(seen)}, expected 0..{n - 1}")


def deploy_steps(cluster: Cluster, prepare: Cluster | None = None, debs_dir: str | None = None,
                 again: bool = True, again_hosts: Sequence[str] | None = None) -> list:
    """The deploy scenario's steps, in order (no srun for a blueprint without Slurm or compute hosts).
    ``prepare``: the cluster whose nodes are prepared, when more nodes are booted than ``cluster`` has;
    ``debs_dir``: ``slurm.install.path`` of a ``debs`` install, the one source of packages besides the mirror;
    ``again``: the second converge (changed=0), which the install scenario leaves out, on ``again_hosts`` (default:
    every host)."""
    hosts = tuple(cluster.groups)
    origins = PackageOrigins(hosts=hosts, allowed_local=(f"file:{debs_dir}",) if debs_dir else ())
    steps: list = [Converge(prepare or cluster, hosts=hosts), origins,
                   *([ConvergeAgain(hosts=tuple(again_hosts) if again_hosts is not None else hosts)] if again else []),
                   Testinfra(cluster)]
    if cluster.controllers and cluster.compute:
        steps.append(Srun(cluster))
    return steps


def again_hosts(build: Build) -> tuple[str, ...]:
    """The hosts a second application of the rendered tree runs on: :func:`one_per_group_set` of the cluster."""
    return one_per_group_set(inventory_groups(build.base), tuple(build.cluster.groups), build.cluster.compute)


class DeployScenario(Scenario):
    name = "deploy"
    proves = ("the rendered site.yml converges every host, changes nothing the second time, the rendered testinfra "
              "suite passes, and srun starts one PMIx rank per compute host")
    needs = (STATIC_COMPUTE,)
    converges_again: ClassVar[bool] = True
    """whether the second converge (changed=0; :func:`again_hosts`) is one of its steps, unless a scenario that
    runs with it ``applies_again`` (the pull's round: the same hosts, the same tree, changed=0 but for its change)"""

    def steps(self, build: Build) -> list:
        build.info["shared_storage"] = SHARED_STORAGE
        install = build.base.slurm.install if build.base.slurm is not None else None
        second = next((s.name for s in build.scenarios if s.applies_again), "")
        hosts = again_hosts(build)
        if self.converges_again and second:
            build.info["second_application"] = {"scenario": second, "hosts": list(hosts)}
        steps = deploy_steps(build.cluster, prepare=build.everyone,
                             debs_dir=install.path if install is not None and install.kind == "debs" else None,
                             again=self.converges_again and not second, again_hosts=hosts)
        build.info["installed_packages"] = next(s.found for s in steps if isinstance(s, PackageOrigins))
        return [build.label(s, self.name) for s in steps]


class InstallScenario(DeployScenario):
    """deploy without its second converge, run alone: for a claim about installing (a new image, another Slurm
    release), where the roles' idempotence is what a deploy rehearsal shows and need not be shown again"""

    name = "install"
    proves = ("the rendered site.yml converges every host, the rendered testinfra suite passes, and srun starts one "
              "PMIx rank per compute host (deploy without the second converge)")
    runs_alone = "it is deploy without its second converge: name deploy to run it with other scenarios"
    needs_checked_when_named = True
    converges_again = False
