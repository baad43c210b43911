"""Real Slurm runs the rendered files: munged, slurmctld and two slurmd on this machine.

The acceptance check of the slurm target (docs/slurm.md, "The real-Slurm test"). It renders a lab
blueprint for the installed Slurm (``slurmctld -V``; Debian 12's slurm-wlm is 22.05) with a server whose
CPU and memory are this machine's (``slurmd -C``), copies the rendered slurm.conf, gres.conf,
topology.conf and cgroup.conf to a temporary configuration directory, starts the daemons as root and
checks what Slurm reports against the plan:

- ``sinfo``: both nodes idle with ``gpu:h100:8``;
- ``scontrol show topology``: the planned switches (one per scalable unit, a spine above) and their nodes;
- ``srun -N2 --gres=gpu:8``: one job step across both nodes, each task sees its 8 GPUs;
- ``scontrol show config``: the production options were loaded as rendered;
- no ``error`` line in the daemons' logs beyond the listed first-start ones.

Two slurmd on one host: Debian's slurmd is evidently built with --enable-multiple-slurmd (two
``slurmd -N`` daemons register and run steps here, ``%n`` expands per daemon and each gets its own
``slurm_<node>`` cgroup), so both nodes get ``NodeHostname=localhost NodeAddr=127.0.0.1`` and a port each.
No network namespaces are needed.

Test-only changes to the rendered slurm.conf are made by :class:`Overrides`, one by one, each with the
reason in the file it writes; gres.conf's device paths come from the target's own ``dev_dir`` option
(stand-in character devices 195:N, the NVIDIA major, created here). Every daemon is stopped by the PID
this test started, also when a check fails.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clusterctl.catalog import load_shipped_catalog
from clusterctl.plan.slurm import node_groups
from clusterctl.plan.topology import tree_switches
from clusterctl.rehearse.variant import Hardware, machine_hardware
from clusterctl.rules import Severity
from clusterctl.targets import slurm as target
from tests.conftest import require
from tests.helpers import lab, plan_of, run

pytestmark = pytest.mark.slurm

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "scontrol", "srun")
NODES = ("slit01", "slit02")
"""the compute hosts: names no rehearsal uses, because their slurmd make cgroups named after them (slurm_<node>)
in this machine's hierarchy, which rehearsal nodes share, and the test removes those cgroups (and kills what is
left in them) afterwards - while a rehearsal may run on another pytest worker"""
GPUS = 8
NVIDIA_MAJOR = 195
START_TIMEOUT_S = 60

# error lines that a first start of a private test cluster always logs, and why they are harmless here
EXPECTED_ERRORS = (
    # a fresh StateSaveLocation has no state files yet (first start of a cluster)
    re.compile(r"Could not open [\w ]+ state file "),
    re.compile(r"NOTE: Trying backup state save file"),
    # consequences of the test's AccountingStorageType=accounting_storage/none (no MySQL/slurmdbd here)
    re.compile(r"Job accounting information gathered, but not stored"),
    re.compile(r"Even though we are collecting accounting information you have asked for it not to be stored"),
    # slurmctld times gettimeofday() at start and logs this when the machine is busy (a CI runner with other
    # tests); it says nothing of the rendered configuration
    re.compile(r"High latency for \d+ calls to gettimeofday\(\)"),
)


def installed_slurm() -> str:
    """``slurm-wlm 22.05.8`` -> ``22.05``: the Slurm these tests start on this machine (Debian's, scripts/test)."""
    out = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"(\d{2})\.(\d{2})", out)
    assert m, f"cannot read the Slurm version from `slurmd -V`: {out!r}"
    return f"{m.group(1)}.{m.group(2)}"


# --- prerequisites ---------------------------------------------------------------------------------------

def _require() -> None:
    """Stop when this machine cannot run Slurm daemons (tests/conftest.py: a skip, a failure in CI)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("not running as root (slurmd and munged need root)")
    missing = [b for b in DAEMONS + CLIENTS if shutil.which(b) is None]
    if missing:
        problems.append(f"missing {', '.join(missing)} (Debian slurm-wlm munge libpmix-dev)")
    require(problems)


def cgroup_v1_usable() -> bool:
    """The cgroup/v1 hierarchies Slurm's cgroup plugins use are mounted and writable (hybrid hosts like
    this sandbox). Without them (cgroup v2 only and no systemd to delegate it), the test falls back to
    proctrack/linuxproc + task/affinity; the unit tests still assert the production values.
    CLUSTERCTL_SLURM_TEST_NO_CGROUP=1 forces the fallback (to try it on a host where cgroups work)."""
    if os.environ.get("CLUSTERCTL_SLURM_TEST_NO_CGROUP"):
        return False
    return all(os.access(f"/sys/fs/cgroup/{c}", os.W_OK) for c in ("cpuset", "memory", "devices", "freezer"))


def free_ports(count: int) -> list[int]:
    """``count`` consecutive free TCP ports on the loopback interface (the slurmd Port= range needs them
    consecutive)."""
    for base in range(23000, 29000, 7):
        socks = []
        try:
            for p in range(base, base + count):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return list(range(base, base + count))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


# --- the blueprint, rendered -------------------------------------------------------------------------------

def blueprint(host: str, version: str, hw: Hardware) -> dict:
    """The lab blueprint for this machine: the head node is this host (slurmctld only starts on a host
    named in SlurmctldHost), the GPU server has this machine's CPUs and memory (slurmd drains a node that
    reports less than its slurm.conf line), the compute fabric is rail-optimized with two tiers and one
    node per scalable unit (so the topology has two SU switches under a spine and the job must span them),
    and GRES autodetection is off (Debian builds Slurm without NVML): gres.conf's lines are the only
    source."""
    spec = load_shipped_catalog().servers["hgx-h100-8gpu"].model_dump(exclude_none=True)
    spec.pop("sources", None)
    spec["cpu"] = {"sockets": hw.sockets, "cores_per_socket": hw.cores_per_socket,
                   "threads_per_core": hw.threads_per_core}
    spec["memory_gb"] = hw.memory_mib // 1024
    bp = lab()
    bp["name"] = "slurm-it"
    bp["node_types"]["hgx"] = {"spec": spec}
    bp["node_groups"][1]["hostnames"] = host
    bp["node_groups"][0]["hostnames"] = "slit[01-02]"  # NODES
    fabric = bp["fabrics"][0]
    fabric.update({"tiers": 2, "rail_optimized": True, "su_nodes": 1})
    fabric.pop("switch_racks")  # 16 rail leaves and a spine do not fit the lab rack's power budget
    bp["slurm"].update({"version": version, "controllers": host, "gres_autodetect": "off",
                        "memory_reserve_gb": 1.0,
                        "install": {"kind": "distro"}})  # this machine's Slurm, not the lab's pinned packages
    bp.pop("monitoring", None)  # its server is the lab's head01, not this host: the monitoring scenario's to prove
    return bp


@dataclass
class Overrides:
    """Test-only changes to the rendered slurm.conf: every one is written into the file with its reason."""

    base: Path
    host: str
    ctld_port: int
    slurmd_ports: list[int]
    cgroups: bool
    changed: list[str] = field(default_factory=list)

    def replace(self) -> dict[str, tuple[str | None, str]]:
        """key -> (new value or None to drop the line, reason)."""
        b = self.base
        out: dict[str, tuple[str | None, str]] = {
            "SlurmctldHost": (f"{self.host}(127.0.0.1)",
                              "clients reach slurmctld over loopback, whatever this host's name resolves to"),
            "StateSaveLocation": (f"{b}/state", "a private state directory instead of /var/spool"),
            "SlurmdSpoolDir": (f"{b}/spool/%n", "two slurmd on one host: one spool directory each"),
            "AccountingStorageType": ("accounting_storage/none", "no MySQL/slurmdbd in the test"),
            "AccountingStorageHost": (None, "no slurmdbd in the test"),
            "AccountingStorageTRES": (None, "slurmctld refuses TRES gres/gpu without slurmdbd (fatal)"),
            "AccountingStorageEnforce": (None, "enforcing associations needs slurmdbd's association records"),
            "PriorityWeightAge": (None, "slurmctld ignores it without slurmdbd, with an error line"),
            "PriorityWeightFairshare": (None, "slurmctld ignores it without slurmdbd, with an error line"),
            "HealthCheckProgram": (None, "NHC is not installed on the test machine"),
            "HealthCheckInterval": (None, "no health check program"),
            "HealthCheckNodeState": (None, "no health check program"),
            "Prolog": (f"{b}/prolog.d/*", "the same glob over a private directory (the rendered one is the "
                                          "nodes' /etc/slurm/prolog.d, where node_health installs its pieces)"),
            "Epilog": (f"{b}/epilog.d/*", "the same glob over a private directory"),
            "SlurmctldLogFile": (f"{b}/log/slurmctld.log", "daemons run from a temporary directory"),
            "SlurmdLogFile": (f"{b}/log/slurmd-%n.log", "two slurmd on one host: a log each"),
        }
        if not self.cgroups:
            out["JobContainerType"] = (None, "job_container/tmpfs needs PrologFlags=Contain")
            why = "no writable cgroup v1 hierarchy here (see cgroup_v1_usable)"
            out["ProctrackType"] = ("proctrack/linuxproc", why)
            out["TaskPlugin"] = ("task/affinity", why)
            out["JobAcctGatherType"] = ("jobacct_gather/linux", why)
            out["PrologFlags"] = ("Alloc", "PrologFlags=Contain needs proctrack/cgroup")
        return out

    def additions(self) -> list[tuple[str, str]]:
        b = self.base
        return [
            ("daemons run as root from a temporary directory, not from systemd units",
             "\n".join([f"SlurmctldPidFile={b}/run/slurmctld.pid", f"SlurmdPidFile={b}/run/slurmd-%n.pid",
                        f"SlurmctldPort={self.ctld_port}"])),
            ("a private munged (a system munged, if any, is left alone)",
             f"AuthInfo=socket={b}/munge/munge.socket"),
            ("two slurmd on one host: each needs its own PMIx client directory (TmpFS is expanded per node)",
             f"TmpFS={b}/tmp/%n"),
            ("no mail program on the test machine (slurmctld logs an error for the default /bin/mail)",
             "MailProg=/bin/true"),
        ]

    def apply(self, text: str) -> str:
        replace = self.replace()
        lines = []
        for line in text.splitlines():
            key = line.split("=", 1)[0] if "=" in line and not line.startswith("#") else None
            if key == "NodeName":
                lo, hi = self.slurmd_ports[0], self.slurmd_ports[-1]
                lines.append("# test-only: both slurmd run on this host, each on its own port")
                lines.append(f"{line} NodeHostname=localhost NodeAddr=127.0.0.1 Port=[{lo}-{hi}]")
                self.changed.append("NodeName")
            elif key in replace:
                value, why = replace[key]
                lines.append(f"# test-only ({why}): {line}")
                if value is not None:
                    lines.append(f"{key}={value}")
                self.changed.append(key)
            else:
                lines.append(line)
        lines.append("")
        lines.append("# --- test-only additions (tests/integration/test_slurm_real.py) ---")
        for why, block in self.additions():
            lines.append(f"# {why}")
            lines.extend(block.splitlines())
        return "\n".join(lines) + "\n"


# --- the daemons ------------------------------------------------------------------------------------------

@dataclass
class Cluster:
    base: Path
    env: dict
    plan: object
    files: dict[str, str]
    conf: str
    cgroups: bool
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def start(self, name: str, argv: list[str]) -> None:
        with open(self.base / "log" / f"{name}.out", "wb") as log:  # the daemon keeps its own copy of the fd
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.base,
                                 start_new_session=True)
        self.procs.append((name, p))

    def stop(self) -> None:
        """Let running jobs finish (so slurmd's step daemons exit on their own), then SIGTERM every daemon
        this test started (by PID, last started first) and SIGKILL stragglers."""
        if self.procs and all(p.poll() is None for _, p in self.procs):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                r = subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=self.env, check=False)
                if r.returncode or not r.stdout.strip():
                    break
                time.sleep(0.3)
        for name, p in reversed(self.procs):
            t = time.monotonic()
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
            self.timings[f"stop {name}"] = time.monotonic() - t

    def run(self, *argv: str, timeout: float = 60) -> str:
        # from /var/tmp (JOB_TMP_PARENT): a job's working directory is where srun ran, and under
        # job_container/tmpfs the job has a private /tmp, where a checkout or the test's directory is not
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout, check=False,
                           cwd=JOB_TMP_PARENT)
        assert r.returncode == 0, f"{' '.join(argv)} exited {r.returncode}\n{r.stdout}\n{r.stderr}\n{self.logs()}"
        return r.stdout

    def alive(self) -> None:
        dead = [f"{n} (exit {p.returncode})" for n, p in self.procs if p.poll() is not None]
        assert not dead, f"daemons exited: {', '.join(dead)}\n{self.logs()}"

    def log_files(self) -> list[Path]:
        return sorted((self.base / "log").glob("*"))

    def logs(self, tail: int = 40) -> str:
        out = []
        for p in self.log_files():
            lines = p.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {p.name}\n" + "\n".join(lines))
        return "\n".join(out)


def _make_dirs(base: Path, slurm_uid: int, slurm_gid: int) -> None:
    for d in ("etc", "state", "log", "run", "munge", "dev", *(f"spool/{n}" for n in NODES),
              *(f"tmp/{n}" for n in NODES), *PIECES):
        (base / d).mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    for d in ("state", "log"):  # slurmctld drops to SlurmUser=slurm (the rendered value) after reading them
        os.chown(base / d, slurm_uid, slurm_gid)
    (base / "munge").chmod(0o755)  # the socket must be reachable by SlurmUser


JOB_TMP_PARENT = Path("/var/tmp")
"""job_container BasePath's parent in the test (removed with the test directory)"""
PIECES = {"prolog.d": ("10-first", "20-second"), "epilog.d": ("10-only",)}
"""prolog and epilog pieces the test installs: each appends "<dir> <piece> <node> <job>" to pieces.log under
JOB_TMP_PARENT (not under /tmp: the epilog runs in the job's mount namespace, whose /tmp is the job's own)"""


def _pieces(base: Path) -> None:
    for d, names in PIECES.items():
        for name in names:
            piece = base / d / name
            piece.write_text(f'#!/bin/sh\necho "{d} {name} $SLURMD_NODENAME $SLURM_JOB_ID" >> '
                             f'{JOB_TMP_PARENT / base.name}.pieces.log\n')
            piece.chmod(0o755)


def job_container_conf(text: str, base: Path) -> str:
    """Test-only: BasePath in a directory of the test outside /tmp (the rendered one is the nodes' node-local
    tier; 22.05's slurmd refuses any BasePath under /tmp, where the test's directory is). One
    BasePath serves both slurmd: a slurmd built with --enable-multiple-slurmd appends its node name to it
    (22.05 makes <BasePath>/<node>/<job>)."""
    out = []
    for line in text.splitlines():
        if line.startswith("BasePath="):
            out += [f"# test-only (the rendered node-local tier is not on this machine): {line}",
                    f"BasePath={JOB_TMP_PARENT}/{base.name}"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _stand_in_gpus(dev: Path) -> None:
    """Character devices 195:N like /dev/nvidiaN (slurmd refuses File= entries that are not devices)."""
    for i in range(GPUS):
        os.mknod(dev / f"nvidia{i}", 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, i))


def _cgroup_dirs() -> set[Path]:
    return {p for n in NODES for p in Path("/sys/fs/cgroup").glob(f"*/slurm_{n}")}


def _remove_cgroups(paths: set[Path]) -> None:
    """Remove the cgroups the test's slurmd created, deepest first. A process still in one was started by
    those slurmd (a step daemon of a job that did not end) and is killed by its PID first; the removal waits
    until the cgroups hold no process (up to 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        pids = []
        for top in paths:
            for procs in top.rglob("cgroup.procs"):
                try:
                    pids += procs.read_text().split()
                except OSError:  # removed meanwhile
                    pass
        if not pids or time.monotonic() > deadline:
            break
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        time.sleep(0.05)
    for top in paths:
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [top]:
            try:
                d.rmdir()
            except OSError:
                pass


def _write_config(base: Path, files: dict[str, str], conf: str) -> tuple[Path, dict]:
    """The test's slurm.conf, the other rendered files (job_container.conf's BasePath moved) and a MUNGE key
    under ``base``; returns the key and the environment every command runs with."""
    etc = base / "etc"
    (etc / "slurm.conf").write_text(conf)
    for name in ("gres.conf", "topology.conf", "cgroup.conf"):
        (etc / name).write_text(files[f"slurm/{name}"])  # as rendered
    (etc / "job_container.conf").write_text(job_container_conf(files["slurm/job_container.conf"], base))
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "SLURM_CONF": str(etc / "slurm.conf"),
           "LANG": "C"}
    return key, env


def _start_controller(c: Cluster, key: Path) -> None:
    """A private munged, then slurmctld in the foreground; returns once slurmctld answers."""
    base = c.base
    sock = base / "munge" / "munge.socket"
    c.start("munged", ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                       f"--pid-file={base}/munge/munged.pid", f"--log-file={base}/log/munged.log",
                       f"--seed-file={base}/munge/munged.seed"])
    _wait(lambda: sock.exists(), c, "munged socket")
    c.start("slurmctld", ["slurmctld", "-D"])
    _wait(lambda: subprocess.run(["scontrol", "ping"], env=c.env, capture_output=True, text=True, check=False)
          .stdout.count("UP") >= 1, c, "slurmctld to answer scontrol ping")


@pytest.fixture(scope="module")
def cluster():
    _require()
    t0 = time.monotonic()

    slurm_user = pwd.getpwnam("slurm")
    host = socket.gethostname().split(".")[0]
    version = installed_slurm()
    hw = machine_hardware()
    bp = blueprint(host, version, hw)
    errors = [f"{f.code} {f.message}" for f in run(bp).active() if f.severity >= Severity.ERROR]
    assert errors == [], "the test blueprint must validate (render refuses errors)"
    base = Path(tempfile.mkdtemp(prefix="clusterctl-slurm-it-"))
    _make_dirs(base, slurm_user.pw_uid, slurm_user.pw_gid)
    _stand_in_gpus(base / "dev")
    _pieces(base)
    plan = plan_of(bp)
    files = target.render(plan, dev_dir=str(base / "dev"))
    cgroups = cgroup_v1_usable()
    ports = free_ports(3)
    overrides = Overrides(base, host, ports[0], ports[1:], cgroups)
    conf = overrides.apply(files["slurm/slurm.conf"])
    key, env = _write_config(base, files, conf)
    c = Cluster(base, env, plan, files, conf, cgroups)
    c.timings["render"] = time.monotonic() - t0
    cgroups_before = _cgroup_dirs()
    ok = False
    try:
        _start_controller(c, key)
        # slurmd reads the same files (SLURM_CONF): a configless slurmd (--conf-server) would need munged
        # on the system socket before it has the AuthInfo of the fetched slurm.conf
        for n in NODES:
            c.start(f"slurmd-{n}", ["slurmd", "-D", "-N", n])
        _wait(lambda: _idle(c) == set(NODES), c, "both nodes idle")
        c.timings["start"] = time.monotonic() - t0 - c.timings["render"]
        yield c
        ok = True
    finally:
        c.stop()
        _remove_cgroups(_cgroup_dirs() - cgroups_before)
        if ok and not os.environ.get("CLUSTERCTL_KEEP_SLURM_TEST"):
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(JOB_TMP_PARENT / base.name, ignore_errors=True)
            (JOB_TMP_PARENT / f"{base.name}.pieces.log").unlink(missing_ok=True)
        else:
            print(f"real-Slurm test files kept in {base}")


def _idle(c: Cluster) -> set[str]:
    r = subprocess.run(["sinfo", "-N", "-h", "-o", "%N %t"], capture_output=True, text=True, env=c.env, check=False)
    return {line.split()[0] for line in r.stdout.splitlines() if line.split()[1:] == ["idle"]}


def _wait(cond, c: Cluster, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        c.alive()
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}\n{c.logs()}")


# --- the checks -------------------------------------------------------------------------------------------

def test_the_test_only_changes_are_the_documented_ones(cluster):
    # every rendered line is in the running slurm.conf verbatim, except the documented overrides
    running = set(cluster.conf.splitlines())
    changed = {line.split("=", 1)[0] for line in cluster.files["slurm/slurm.conf"].splitlines()
               if line not in running}
    allowed = {"SlurmctldHost", "StateSaveLocation", "SlurmdSpoolDir", "AccountingStorageType",
               "AccountingStorageHost", "AccountingStorageTRES", "HealthCheckProgram", "HealthCheckInterval",
               "HealthCheckNodeState", "NodeName", "AccountingStorageEnforce", "PriorityWeightAge",
               "PriorityWeightFairshare", "Prolog", "Epilog", "SlurmctldLogFile", "SlurmdLogFile"}
    if not cluster.cgroups:
        allowed |= {"ProctrackType", "TaskPlugin", "JobAcctGatherType", "PrologFlags", "JobContainerType"}
    assert changed <= allowed, changed
    assert {"SlurmctldHost", "NodeName", "AccountingStorageType"} <= changed


def test_both_nodes_idle_with_their_gpus(cluster):
    out = cluster.run("sinfo", "-N", "-h", "-o", "%N %t %G")
    rows = sorted(line.split() for line in out.splitlines())
    assert [r[:2] for r in rows] == [["slit01", "idle"], ["slit02", "idle"]], out
    for r in rows:
        # 22.05 prints the socket binding after the count: gpu:h100:8(S:0)
        assert re.fullmatch(rf"gpu:h100:{GPUS}(\(S:[\d,-]+\))?", r[2]), out


def test_topology_is_the_planned_fabric(cluster):
    groups = node_groups(cluster.plan)
    planned = {s.name: s for s in tree_switches(cluster.plan, groups)}
    assert sorted(planned) == ["ib-spine", "ib-su1", "ib-su2"]
    out = cluster.run("scontrol", "show", "topology")
    seen = {}
    for line in out.splitlines():
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if "SwitchName" in kv:
            seen[kv["SwitchName"]] = kv
    assert sorted(seen) == sorted(planned), out
    for name, sw in planned.items():
        if sw.nodes:
            assert seen[name]["Nodes"] == sw.nodes, out
            assert seen[name]["Level"] == "0", out
        else:
            assert seen[name]["Switches"] == sw.switches, out
            assert seen[name]["Level"] == "1", out
            assert seen[name]["Nodes"] == "slit[01-02]", out  # the spine reaches both SUs


def test_a_job_step_spans_both_nodes_with_all_gpus(cluster):
    # one task per node; each sees the 8 GPUs of gres.conf and its PMIx rank (MpiDefault=pmix as rendered)
    t = time.monotonic()
    out = cluster.run("srun", "-N2", f"--gres=gpu:{GPUS}", "--time=1", "bash", "-c",
                      'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $SLURM_STEP_NUM_NODES ${PMIX_RANK:-none}"',
                      timeout=90)
    cluster.timings["srun"] = time.monotonic() - t
    rows = sorted(out.splitlines())
    visible = ",".join(str(i) for i in range(GPUS))
    assert rows == [f"slit01 {visible} 2 0", f"slit02 {visible} 2 1"], out


def test_prolog_and_epilog_globs_run_every_piece_in_order_and_jobs_get_a_private_tmp(cluster):
    """Slurm 22.05 takes the rendered Prolog=/Epilog= globs (over the test's piece directories) and runs every
    piece on each node of the job, in *reverse* alphabetical order (prolog_epilog.html: "they will run in reverse
    alphabetical order (z-a -> Z-A -> 9-0)"; this test found it); with job_container/tmpfs (as rendered, one BasePath per test
    node) a file the job writes to /tmp is not in the host's /tmp."""
    log = JOB_TMP_PARENT / f"{cluster.base.name}.pieces.log"
    out = cluster.run("srun", "-N2", "--time=1", "bash", "-c",
                      'echo x > /tmp/clusterctl-it-$SLURM_JOB_ID; echo "$SLURM_JOB_ID $(ls -A /tmp | wc -l)"',
                      timeout=90)
    job = out.split()[0]
    assert not Path(f"/tmp/clusterctl-it-{job}").exists(), "the job wrote to the host's /tmp"
    if cluster.cgroups:
        assert sorted(set(out.splitlines())) == [f"{job} 1"], out  # a private, empty /tmp per node
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sum(line.endswith(f" {job}") for line in log.read_text().splitlines()) < 6:
        time.sleep(0.3)  # the epilog runs after the step's output is back
    rows = [line for line in log.read_text().splitlines() if line.endswith(f" {job}")]
    for n in NODES:
        assert [r.rsplit(" ", 2)[0] for r in rows if f" {n} " in r] == [
            "prolog.d 20-second", "prolog.d 10-first", "epilog.d 10-only"], rows


def test_slurmctld_loaded_the_rendered_options(cluster):
    out = cluster.run("scontrol", "show", "config")
    conf = dict(re.findall(r"^(\w+)\s+=\s+(.*?)\s*$", out, re.MULTILINE))
    expected = {
        "ClusterName": "slurm-it", "SelectType": "select/cons_tres", "GresTypes": "gpu",
        "TopologyPlugin": "topology/tree", "MpiDefault": "pmix",
        "ResumeTimeout": "900 sec", "SlurmUser": f"slurm({pwd.getpwnam('slurm').pw_uid})",
    }
    if cluster.cgroups:
        expected |= {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup,task/affinity",
                     "JobAcctGatherType": "jobacct_gather/cgroup"}
    assert {k: conf.get(k) for k in expected} == expected
    assert "CR_CORE_MEMORY" in conf["SelectTypeParameters"].upper()
    assert "enable_configless" not in (conf.get("SlurmctldParameters") or "")  # files are pushed by Ansible
    assert {"Alloc", "Contain"} <= set(conf["PrologFlags"].split(",")) or not cluster.cgroups
    assert conf["PrologEpilogTimeout"] == "240"
    assert conf["JobContainerType"] == "job_container/tmpfs" or not cluster.cgroups


def test_no_error_lines_in_the_daemon_logs(cluster):
    cluster.stop()  # the shutdown is logged too; the fixture's stop() then has nothing left to do
    bad = []
    for p in cluster.log_files():
        if not p.name.endswith(".log") or p.name == "munged.log":
            continue
        for line in p.read_text(errors="replace").splitlines():
            if "error" in line.lower() and not any(r.search(line) for r in EXPECTED_ERRORS):
                bad.append(f"{p.name}: {line}")
    assert bad == [], "\n".join(bad)
    print("\nreal-Slurm timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in cluster.timings.items())
          + f"; cgroups: {'cgroup/v1 (production plugins)' if cluster.cgroups else 'fallback linuxproc'}")


# --- power saving: slurmctld 22.05 takes the rendered power-save slurm.conf of an elastic cloud group ----------

POWER_PROGRAMS = ("SuspendProgram", "ResumeProgram", "ResumeFailProgram")
CLOUD_NODES = ("cloud01", "cloud02")


def power_save_blueprint(host: str, version: str, hw: Hardware) -> dict:
    """The test blueprint plus an elastic AWS group (two c7i.8xlarge, a partition of their own): the slurm target
    renders power saving for it. Only the slurm target is rendered (the other rules and targets would object
    to a lab with a cloud group, which is not what this checks)."""
    bp = blueprint(host, version, hw)
    bp["cloud"] = {"provider": "aws", "region": "us-east-1", "zone": "us-east-1a"}
    bp["node_types"]["ec2"] = {"instance": "c7i.8xlarge"}
    bp["node_groups"].append({"name": "cloud", "type": "ec2", "count": len(CLOUD_NODES),
                              "hostnames": "cloud[01-02]", "cloud": {"elastic": True}})
    bp["slurm"]["partitions"].append({"name": "cloud", "groups": ["cloud"]})
    return bp


@dataclass
class PowerSaveOverrides(Overrides):
    """The documented overrides, plus: the three programs are stand-ins that record their argument (the rendered
    ones create and delete cloud instances), and the CLOUD NodeName line stays as rendered (no address: slurmctld
    learns it from the registration, cloud_reg_addrs)."""

    def replace(self) -> dict[str, tuple[str | None, str]]:
        out = super().replace()
        for key in POWER_PROGRAMS:
            out[key] = (f"{self.base}/bin/{key}", "a stand-in that records its host list")
        return out

    def apply(self, text: str) -> str:
        cloud = [line for line in text.splitlines() if line.startswith("NodeName=") and "State=CLOUD" in line]
        marker = "# power-save test: the CLOUD node line {}"
        for i, line in enumerate(cloud):
            text = text.replace(line, marker.format(i))
        text = super().apply(text)
        for i, line in enumerate(cloud):
            text = text.replace(marker.format(i), line)
        return text


@pytest.fixture(scope="module")
def power_save():
    """munged and slurmctld (no slurmd: the CLOUD nodes have no instance, the static ones are not needed) from the
    rendered power-save slurm.conf; stopped by the PIDs started here."""
    _require()
    slurm_user = pwd.getpwnam("slurm")
    host = socket.gethostname().split(".")[0]
    bp = power_save_blueprint(host, installed_slurm(), machine_hardware())
    base = Path(tempfile.mkdtemp(prefix="clusterctl-slurm-ps-"))
    _make_dirs(base, slurm_user.pw_uid, slurm_user.pw_gid)
    (base / "bin").mkdir(mode=0o755)
    for key in POWER_PROGRAMS:  # run by slurmctld as SlurmUser: not group/world writable (power_save.c _valid_prog)
        prog = base / "bin" / key
        prog.write_text(f'#!/bin/sh\necho "{key} $*" >> {base}/log/power-save.calls\n')
        prog.chmod(0o755)
    _stand_in_gpus(base / "dev")
    plan = plan_of(bp)
    files = target.render(plan, dev_dir=str(base / "dev"))
    ports = free_ports(3)
    conf = PowerSaveOverrides(base, host, ports[0], ports[1:], cgroup_v1_usable()).apply(files["slurm/slurm.conf"])
    key, env = _write_config(base, files, conf)
    c = Cluster(base, env, plan, files, conf, False)
    ok = False
    try:
        _start_controller(c, key)
        yield c
        ok = True
    finally:
        c.stop()
        if ok and not os.environ.get("CLUSTERCTL_KEEP_SLURM_TEST"):
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(JOB_TMP_PARENT / base.name, ignore_errors=True)
        else:
            print(f"real-Slurm power-save test files kept in {base}")


def test_power_save_slurm_conf_is_taken_by_slurmctld(power_save):
    rendered = power_save.files["slurm/slurm.conf"]
    assert "NodeName=cloud[01-02] Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64512 Features=cloud " \
           "State=CLOUD" in rendered.splitlines()
    assert "NodeName=cloud[01-02] Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64512 Features=cloud " \
           "State=CLOUD" in power_save.conf.splitlines()  # as rendered: no address until it registers
    out = power_save.run("scontrol", "show", "config")
    conf = dict(re.findall(r"^(\w+)\s+=\s+(.*?)\s*$", out, re.MULTILINE))
    base = power_save.base
    expected = {"SuspendProgram": f"{base}/bin/SuspendProgram", "ResumeProgram": f"{base}/bin/ResumeProgram",
                "ResumeFailProgram": f"{base}/bin/ResumeFailProgram", "SuspendTime": "600 sec",
                "SuspendTimeout": "300 sec", "ResumeTimeout": "1800 sec", "ResumeRate": "0 nodes/min",
                "SuspendRate": "0 nodes/min", "SuspendExcNodes": "slit[01-02]", "TreeWidth": "5"}
    assert {k: conf.get(k) for k in expected} == expected
    assert set(conf["SlurmctldParameters"].split(",")) >= {"idle_on_node_suspend", "cloud_reg_addrs"}
    assert "NoAddrCache" in conf["CommunicationParameters"] and "KeepPartState" in conf["ReconfigFlags"]
    assert "cloud" in conf["PrivateData"]
    assert "power_save module disabled" not in (base / "log" / "slurmctld.log").read_text()


def test_cloud_nodes_are_listed_powered_down_and_a_job_resumes_one(power_save):
    out = power_save.run("sinfo", "-N", "-h", "-p", "cloud", "-o", "%N %t")
    assert sorted(line.split() for line in out.splitlines()) == [[n, "idle~"] for n in CLOUD_NODES]
    job = power_save.run("sbatch", "--parsable", "-p", "cloud", "-N1", "-o", "/dev/null", "--wrap", "true").strip()
    calls = power_save.base / "log" / "power-save.calls"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and not (calls.exists() and calls.read_text().strip()):
        power_save.alive()
        time.sleep(0.5)
    power_save.run("scancel", job)
    assert calls.read_text().splitlines() == ["ResumeProgram cloud01"], power_save.logs()


def test_machine_hardware_is_what_slurmd_reports_here():
    """The rehearsal reads sysfs and /proc/meminfo (no Slurm on the machine needed); slurmd -C is the authority."""
    _require()
    kv = dict(re.findall(r"(\w+)=(\S+)", subprocess.run(["slurmd", "-C"], capture_output=True, text=True,
                                                         timeout=30).stdout))
    assert machine_hardware() == Hardware(int(kv["SocketsPerBoard"]) * int(kv["Boards"]), int(kv["CoresPerSocket"]),
                                          int(kv["ThreadsPerCore"]), int(kv["RealMemory"]))
