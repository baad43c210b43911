"""The ``elastic`` scenario: a cloud cluster's bootstrap and Slurm's power-saving cycle on rehearsal nodes.

A blueprint with elastic node groups (``node_groups[].cloud.elastic``) is rehearsed as the cloud would run it:
the head node (controller) is up; the elastic nodes are booted as rehearsal nodes but nothing runs on them yet
(a fresh instance: no host configuration, no Slurm, no MUNGE key), and slurmctld knows them as ``State=CLOUD``,
powered down. Then:

1. ``setup``: the rehearsal's stand-ins for the cloud, on the head node and in the rehearsal directory:

   - the fake provider API (``clusterctl/rehearse/fake/cloud.py``) installed as the provider's CLI (``aws``,
     ``gcloud``, ``az``) in ``/usr/local/bin`` of the head node, with ``addresses.json`` ({host: rehearsal
     address}) in its state directory, owned by SlurmUser (slurmctld runs ResumeProgram as SlurmUser);
   - the stack (``cloud/stack.json``: what the Pulumi program writes; here :func:`rehearsal_stack`, with the
     bootstrap settings of :func:`bootstrap_settings`: ``config_url`` ``file://`` to the bucket directory and
     ``file`` secret references), the configuration object built by
     :func:`clusterctl.cloud.stack.bundle.config_bundle` from the render, in ``DIR/.rehearsal/bucket/`` which is
     bind-mounted at :data:`BUCKET` in every elastic node (the "bucket");

2. ``converge``: the rendered ``site.yml`` on the head node only, over SSH (it installs the power-saving programs,
   role ``slurm_power_save``, and starts slurmctld);
3. ``powered-down``: every elastic node is ``CLOUD`` and ``POWERED_DOWN`` in slurmctld, and runs no slurmd;
4. ``cycle``: a job on the elastic partition; slurmctld runs ResumeProgram, which calls the fake provider CLI;
   the stand-in control plane (:class:`ControlPlane`, in this process, reading the head node's request files
   over SSH) acts on each request: *create* = the node's secrets are put where the ``file`` references point (the
   provider's secret store, read with the instance's identity) and the user data of the request is applied as
   cloud-init would (:func:`apply_cloud_config`); the bootstrap program it installs converges the node and
   slurmd registers; the job runs; after SuspendTime idle slurmctld runs SuspendProgram, the fake terminate
   writes a *delete* request and the control plane stops the node's daemons; slurmctld marks it powered down.

There is no cloud-init here: :func:`apply_cloud_config` applies the keys the rendered user data uses
(host name keys, ``write_files`` with their encodings and permissions, ``runcmd``) and refuses any other key.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from clusterctl import hostlist
from clusterctl.cloud.pulumi.aws import stack_json
from clusterctl.cloud.stack.bundle import OBJECT_KEY, config_bundle
from clusterctl.cloud.stack.spec import cloud_spec
from clusterctl.cloud.stack.userdata import bootstrap_config, user_data
from clusterctl.rehearse.fake import cloud as fake_cloud
from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.command import CommandTimeout
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.scenario.base import Build, Scenario
from clusterctl.rehearse.scenario.deploy import HARDWARE_ROLES, Cluster, Converge, rehearsal_files, rehearsal_vars_text
from clusterctl.rehearse.scenario.needs import ELASTIC_GROUP, elastic_hosts
from clusterctl.rehearse.scenario.observe import launch_failure, wait_for
from clusterctl.rehearse.select import node_specs
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

BUCKET = "/srv/clusterctl-bucket"
"""where the rehearsal's bucket directory (``DIR/.rehearsal/bucket``) is bind-mounted in each elastic node"""
SECRETS_DIR = "/etc/clusterctl/rehearsal-secrets"
"""on an elastic node: the files the ``file`` secret references name (the provider's secret store)"""
FAKE_DIR = "/var/lib/clusterctl-fake-cloud"
CLI = {"aws": "aws", "gcp": "gcloud", "azure": "az"}
SUSPEND_TIME_S = 60
"""slurm.power_save.suspend_time_s as rehearsed (the blueprint's default is 600: a rehearsal cannot wait 10
minutes; 60 is the model's minimum)"""
SUSPEND_TIMEOUT_S = 30
"""slurm.power_save.suspend_timeout_s as rehearsed (the model's minimum; the rehearsal's terminate is instant)"""
RUNCMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLOUD_CONFIG_KEYS = {"hostname", "fqdn", "prefer_fqdn_over_hostname", "preserve_hostname", "manage_etc_hosts",
                     "write_files", "runcmd"}
"""the cloud-config keys the stand-in applies (the ones clusterctl.cloud.stack.userdata renders); any other is refused"""
CALLS_FILE = "elastic-calls.jsonl"
"""in DIR/.rehearsal: the fake provider API's calls.jsonl of the head node after the cycle"""
CONTROL_FILE = "elastic-cycle.json"
"""in DIR/.rehearsal: the job, where it ran and what the control plane did for each request"""
JOB = "hostname; test -c /dev/nvidia0 && echo gpu-stand-in; sleep 5"


# --- what the blueprint as rehearsed needs ---------------------------------------------------------------

ELASTIC_SLURM_WHY = (
    "the elastic cycle's stand-in for a fresh boot runs the user data's runcmd, and the daemons it starts, in a new "
    "time namespace whose boot time is the create (slurmctld ignores a registration whose boot time precedes the "
    "resume request). Under systemd the daemons are children of PID 1, not of runcmd, and a container may not set a "
    "time namespace's offsets, so the elastic scenario's nodes run the rehearsal init, and the image's own "
    "slurm-wlm, whose init scripts that init runs (SchedMD's packages ship systemd units only)")
"""why the elastic scenario alone rehearses the image's Slurm on the rehearsal init (docs/rehearse.md, "elastic")"""


def adjust_elastic(variant) -> None:
    """SuspendTime and SuspendTimeout as rehearsed, and the image's own Slurm (:data:`ELASTIC_SLURM_WHY`); each
    listed in ``rehearsed_as``."""
    slurm = variant.data.get("slurm")
    if not isinstance(slurm, dict):
        return
    ps = dict(slurm.get("power_save") or {})
    for key, value, default in (("suspend_time_s", SUSPEND_TIME_S, 600), ("suspend_timeout_s", SUSPEND_TIMEOUT_S, 300)):
        before = ps.get(key, default)
        if before != value:
            variant.changes[f"slurm.power_save.{key}"] = {"blueprint": before, "rehearsed": value}
        ps[key] = value
    slurm["power_save"] = ps
    distro = {"kind": "distro"}
    if slurm.get("install") != distro or str(slurm.get("version")) != variant.image.slurm:
        variant.changes["slurm.install"] = {"blueprint": variant.changes.get("slurm.install", {}).get(
            "blueprint", slurm.get("install")), "rehearsed": distro, "why": ELASTIC_SLURM_WHY}
        variant.changes["slurm.version"] = {"blueprint": variant.changes.get("slurm.version", {}).get(
            "blueprint", slurm.get("version")), "rehearsed": variant.image.slurm, "why": ELASTIC_SLURM_WHY}
        slurm["install"], slurm["version"] = distro, variant.image.slurm


def bootstrap_settings(plan) -> dict:
    """The bootstrap settings of a compute node as the rehearsal's stack holds them: the configuration object
    from the bucket directory (``file://``), the MUNGE key from a file on the node."""
    cloud = plan.cloud
    return bootstrap_config(cloud.provider, region=cloud.region, config_url=f"file://{BUCKET}/{OBJECT_KEY}",
                            secrets={"vault_munge_key": {"file": f"{SECRETS_DIR}/vault_munge_key"}})


def rehearsal_stack(plan) -> dict:
    """``cloud/stack.json`` as the rehearsal's stand-in for the Pulumi program writes it: on AWS the program's own
    :func:`clusterctl.cloud.pulumi.aws.stack_json` with rehearsal identifiers where the cloud would assign them (launch
    template, hosted zone); elsewhere the same shape (the issue 12 design)."""
    name, cloud = plan.name, plan.cloud
    spec = cloud_spec(plan)
    groups = [g for g in spec.groups if g.elastic]
    if cloud.provider == "aws":
        return stack_json(spec, bootstrap_settings(plan), {g.name: f"lt-{i + 1:017x}" for i, g in enumerate(groups)},
                          "Z0REHEARSAL0000000000", f"{name}.internal")
    extra = {"gcp": lambda g: {"project": "rehearsal", "zone": cloud.zone or f"{cloud.region}-a",
                               "instance_template": f"projects/rehearsal/global/instanceTemplates/{name}-{g.name}"},
             "azure": lambda g: {"subscription_id": "00000000-0000-0000-0000-000000000000", "resource_group": name,
                                 "location": cloud.region, "vm_size": g.instance_type,
                                 "image": "microsoft-dsvm:ubuntu-hpc:2204:latest", "subnet_id": "rehearsal",
                                 "availability_set_id": "", "proximity_placement_group_id": "",
                                 "identity_id": "rehearsal", "admin_username": "clusterctl", "ssh_public_key": "",
                                 "os_disk_gb": 256}}[cloud.provider]
    return {"version": 1, "cluster": name, "provider": cloud.provider, "region": cloud.region, "zone": cloud.zone,
            "bootstrap": bootstrap_settings(plan),
            "elastic": {g.name: {"hostlist": hostlist.compress(g.hostnames), "instance_type": g.instance_type,
                                 cloud.provider: extra(g)} for g in groups}}


def host_vars(hosts) -> dict[str, str]:
    """``ansible/host_vars/HOST.yml`` for each elastic host: the rehearsal variables of the deploy scenario (the
    bootstrap runs site.yml on the node itself: no ``-e`` file reaches it, host variables in the object do)."""
    text = rehearsal_vars_text()
    return {f"ansible/host_vars/{h}.yml": text for h in hosts}


def bucket_dir(out: Path) -> Path:
    return state_dir(Path(out)) / "bucket"


# --- the stand-in for cloud-init --------------------------------------------------------------------------

def _decode(entry: dict) -> bytes:
    content = entry.get("content", "")
    enc = str(entry.get("encoding", "text/plain")).lower()
    if enc in ("b64", "base64"):
        return base64.b64decode(content)
    if enc in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
        return gzip.decompress(base64.b64decode(content))
    if enc in ("gz", "gzip"):
        return gzip.decompress(content if isinstance(content, bytes) else content.encode("latin-1"))
    if enc in ("text/plain", ""):
        return str(content).encode()
    raise StepFailed(f"write_files {entry.get('path')}: encoding {enc!r} not supported by the stand-in")


def decoded_cloud_config(text: str) -> dict | None:
    """The cloud-config ``text`` with every write_files entry's content decoded (its encoding dropped), or None when
    it is not a cloud-config mapping. Two renders of the same user data compare equal here even when their gzip
    bytes differ: ``gzip.compress`` of the same text gives other bytes under another zlib (the head node's Python
    on debian-13 links zlib 1.3, this machine's 1.2), and cloud-init writes the decoded files."""
    try:
        config = yaml.safe_load(text) if text.startswith("#cloud-config") else None
    except yaml.YAMLError:
        return None
    if not isinstance(config, dict):
        return None
    files = []
    for entry in config.get("write_files") or []:
        try:
            content = _decode(entry)
        except (StepFailed, ValueError, OSError, EOFError, zlib.error):  # zlib.error: a corrupt deflate stream
            return None
        files.append({**{k: v for k, v in entry.items() if k not in ("content", "encoding")}, "content": content})
    return {**config, "write_files": files} if "write_files" in config else config


def parse_cloud_config(text: str) -> dict:
    if not text.startswith("#cloud-config"):
        raise StepFailed("user data is not cloud-config (no '#cloud-config' first line)")
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        raise StepFailed("user data: cloud-config is not a mapping")
    unknown = sorted(set(config) - CLOUD_CONFIG_KEYS)
    if unknown:
        raise StepFailed(f"user data: cloud-config key(s) {', '.join(unknown)} not applied by the rehearsal's stand-in")
    return config


def apply_cloud_config(state: State, host: str, text: str, timeout_s: float) -> dict:
    """Apply cloud-config ``text`` to node ``host`` in cloud-init's order: the host name (init stage), write_files
    (init stage: content decoded, permissions, owner), /etc/hosts for ``manage_etc_hosts: localhost``, then runcmd
    (final stage: one shell script, ``sh``, with PATH set as on a booted system, in a time namespace whose boot time
    is now, as a fresh instance's). Returns what was done."""
    config = parse_cloud_config(text)
    name = config.get("hostname")
    done: dict = {"hostname": name, "files": [], "runcmd": []}
    if name and not config.get("preserve_hostname", False):
        r = ssh(state, host, f"hostname {shlex.quote(name)} && echo {shlex.quote(name)} > /etc/hostname")
        if r.returncode != 0:
            raise StepFailed(f"{host}: setting the host name {name}: {r.stderr.strip()[-300:]}")
    if config.get("manage_etc_hosts") == "localhost" and name:
        # cloud-init's update_etc_hosts for "localhost": the host name on 127.0.1.1
        line = f"127.0.1.1 {name}"
        r = ssh(state, host, f"grep -qxF {shlex.quote(line)} /etc/hosts || "
                             f"{{ sed -i '/^127\\.0\\.1\\.1[[:space:]]/d' /etc/hosts; echo {shlex.quote(line)} >> /etc/hosts; }}")
        if r.returncode != 0:
            raise StepFailed(f"{host}: /etc/hosts: {r.stderr.strip()[-300:]}")
    for entry in config.get("write_files") or []:
        if entry.get("defer"):
            raise StepFailed(f"write_files {entry.get('path')}: defer is not supported by the stand-in")
        data = _decode(entry)
        write_file(state, host, entry["path"], data, mode=str(entry.get("permissions", "0644")),
                   owner=str(entry.get("owner", "root:root")), append=bool(entry.get("append")), timeout=60)
        done["files"].append({"path": entry["path"], "bytes": len(data), "permissions": entry.get("permissions")})
    commands = []
    for c in config.get("runcmd") or []:
        commands.append(shlex.join(str(a) for a in c) if isinstance(c, list) else str(c))
    done["runcmd"] = commands
    if commands:
        script = "#!/bin/sh\n" + "".join(c + "\n" for c in commands)
        write_file(state, host, "/var/lib/cloud/instance/scripts/runcmd", script, mode="0700", timeout=60)
        # the environment of cloud-init's final stage (a system service): PATH, no terminal; the hardware roles are
        # skipped by tag as in deploy (the bootstrap passes its environment to ansible-playbook)
        env = (f"env -i PATH={RUNCMD_PATH} HOME=/root LANG=C.UTF-8 "
               f"ANSIBLE_SKIP_TAGS={','.join(HARDWARE_ROLES)}")
        # a fresh instance boots after the create: slurmctld ignores the registration of a powering-up node whose
        # boot time precedes the resume request (Slurm 22.05 node_mgr.c: "Still waiting for boot of node"), and a
        # rehearsal node shares the machine's uptime. So runcmd (and the daemons it starts) runs in a new time
        # namespace whose boot time is now (CLOCK_BOOTTIME offset by minus the uptime: /proc/uptime, sysinfo)
        fresh = 'u=$(cut -d. -f1 /proc/uptime); exec unshare --time --boottime "-$((u - 1))"'
        t0 = time.monotonic()
        try:
            r = ssh(state, host, f"{fresh} {env} sh /var/lib/cloud/instance/scripts/runcmd "
                                 ">> /var/log/cloud-init-output.log 2>&1", timeout=timeout_s)
            rc = r.returncode
        except CommandTimeout:
            rc = -1
        done["runcmd_seconds"] = round(time.monotonic() - t0, 1)
        done["runcmd_exit"] = rc
    return done


# --- the stand-in control plane ---------------------------------------------------------------------------

@dataclass
class ControlPlane:
    """Acts on the fake provider API's request files on the head node: create = put the node's secrets where its
    ``file`` references point and apply the request's user data (:func:`apply_cloud_config`); delete = stop the
    node's daemons (the instance is gone)."""

    head: str
    secrets: dict[str, str]
    """variable -> value the secret store holds (the rehearsal's secrets.yml)"""
    timeout_s: float = 1800.0
    seen: set[str] = field(default_factory=set)
    log: list[dict] = field(default_factory=list)

    def pending(self, state: State) -> list[dict]:
        r = ssh(state, self.head, f"cd {FAKE_DIR}/requests 2>/dev/null && for f in $(ls | sort); do "
                                  "echo \"$f $(base64 -w0 < $f)\"; done")
        out = []
        for line in r.stdout.splitlines():
            name, _, body = line.partition(" ")
            if name in self.seen or not name.endswith(".json"):
                continue
            self.seen.add(name)
            req = json.loads(base64.b64decode(body))
            req["file"] = name
            out.append(req)
        return out

    def act(self, state: State, req: dict) -> dict:
        t0 = time.monotonic()
        host = req["host"]
        entry = {"op": req["op"], "host": host, "request": req["file"]}
        if req["op"] == "create":
            for var, value in self.secrets.items():
                write_file(state, host, f"{SECRETS_DIR}/{var}", value, mode="0600", dir_mode="0700")
            entry["cloud_init"] = apply_cloud_config(state, host, req.get("user_data") or "", self.timeout_s)
            st = ssh(state, host, "cat /var/lib/clusterctl/bootstrap-status.json").stdout
            entry["bootstrap"] = json.loads(st) if st.strip().startswith("{") else None
        elif req["op"] == "delete":
            r = ssh(state, host, "/etc/init.d/slurmd stop >/dev/null 2>&1; /etc/init.d/munge stop >/dev/null 2>&1; "
                                 "sleep 1; pidof slurmd munged || true")
            entry["left_running"] = r.stdout.strip()
        entry["seconds"] = round(time.monotonic() - t0, 1)
        self.log.append(entry)
        return entry


# --- steps ------------------------------------------------------------------------------------------------

def node_info(state: State, via: str, host: str) -> dict[str, str]:
    """``scontrol show node HOST`` as {key: value}."""
    r = ssh(state, via, f"scontrol show node {shlex.quote(host)}")
    return dict(re.findall(r"(\w+)=(\S*)", r.stdout))


def _conf_value(state: State, key: str, default: int) -> int:
    text = (Path(state.dir) / "slurm" / "slurm.conf").read_text()
    m = re.search(rf"(?m)^{key}=(\d+)", text)
    return int(m.group(1)) if m else default


def powered_down(st: str) -> bool:
    flags = st.upper().split("+")
    return "CLOUD" in flags and "POWERED_DOWN" in flags


@dataclass
class ElasticSetup:
    """The cloud's stand-ins: the fake provider CLI on the head node, the stack and the configuration object in
    the bucket directory (module docstring, step 1)."""

    plan: object
    head: str
    addresses: dict[str, str]
    name: str = "setup"

    def run(self, state: State, record: Record) -> None:
        out = Path(state.dir)
        stack = json.loads((out / "cloud" / "stack.json").read_text())
        obj = bucket_dir(out) / OBJECT_KEY
        obj.parent.mkdir(parents=True, exist_ok=True)
        data = config_bundle(out, stack)
        obj.write_bytes(data)
        obj.chmod(0o644)
        cli = CLI[self.plan.cloud.provider]
        fake = Path(fake_cloud.__file__).read_text()
        write_file(state, self.head, f"/usr/local/bin/{cli}", fake, mode="0755", dir_mode="0700")
        write_file(state, self.head, f"{FAKE_DIR}/addresses.json",
                   json.dumps(self.addresses, indent=1, sort_keys=True) + "\n", mode="0644", dir_mode="0700")
        r = ssh(state, self.head, f"chmod 0755 {FAKE_DIR}")  # SlurmUser gets it after the converge made it
        if r.returncode != 0:
            raise StepFailed(f"{self.head}: {FAKE_DIR}: {r.stderr.strip()[-300:]}")
        record(self.head, HostOutcome(OK, 0.0, f"{cli} = fake provider API; configuration object {len(data)} bytes "
                                               f"at file://{BUCKET}/{OBJECT_KEY}", {"bundle_bytes": len(data)}))


@dataclass
class PoweredDown:
    """Every elastic node: CLOUD and POWERED_DOWN in slurmctld, no slurmd running on it."""

    head: str
    elastic: tuple[str, ...]
    name: str = "powered-down"

    def run(self, state: State, record: Record) -> None:
        for h in self.elastic:
            got, took = wait_for(lambda: powered_down(node_info(state, self.head, h).get("State", "")) or None, 60,
                                 every_s=2.0)
            st = node_info(state, self.head, h).get("State", "?")
            daemons = ssh(state, h, "pidof slurmd munged || true").stdout.strip()
            record(h, HostOutcome(OK if got and not daemons else FAILED, took,
                                  f"State={st}" + (f"; running: {daemons}" if daemons else "; no slurmd, no munged")))


@dataclass
class CycleRecord:
    """What one cycle's control plane did, and when (seconds after the sbatch): ``HOST.create_request``,
    ``HOST.bootstrapped``, ``HOST.delete_request``, ``job_end``, ``powered_down``."""

    cp: ControlPlane
    t0: float
    created: dict[str, dict] = field(default_factory=dict)
    deleted: dict[str, dict] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def act(self, state: State) -> None:
        """Act on every pending create and delete request of the fake provider API."""
        for req in self.cp.pending(state):
            host, op = req["host"], req["op"]
            self.times.setdefault(f"{host}.{op}_request", self.elapsed())
            (self.created if op == "create" else self.deleted)[host] = self.cp.act(state, req)
            if op == "create":
                self.times[f"{host}.bootstrapped"] = self.elapsed()


ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL")


@dataclass
class ElasticCycle:
    """A job on the elastic partition: resume (create, bootstrap, registration), the job, suspend (terminate,
    powered down); checked from the recorded provider calls and Slurm's node states (module docstring, step 4)."""

    plan: object
    head: str
    elastic: tuple[str, ...]
    partition: str
    name: str = "cycle"
    summary: dict = field(default_factory=dict)

    def _job_state(self, state: State, job: str) -> str:
        return ssh(state, self.head, f"scontrol show job {job} | grep -o 'JobState=[A-Z_]*'").stdout.strip() \
            .removeprefix("JobState=")

    def _submit(self, state: State) -> str:
        r = ssh(state, self.head, f"sbatch --parsable -N1 -p {shlex.quote(self.partition)} -t 10 -J rehearse-elastic "
                                  f"-o /tmp/elastic-%j.out --wrap {shlex.quote(JOB)}")
        if r.returncode != 0:
            raise StepFailed(f"sbatch on {self.head}: {r.stderr.strip()[-300:]}")
        return r.stdout.strip().split(";")[0]

    def _resume(self, state: State, rec: CycleRecord, job: str, resume_timeout: int) -> str:
        """Act on the create requests until the job has ended; its final state."""
        while True:
            rec.act(state)
            js = self._job_state(state, job)
            if js in ENDED:
                rec.times["job_end"] = rec.elapsed()
                return js
            reason = ssh(state, self.head, f"squeue -h -j {job} -o %r").stdout.strip()
            if "held" in reason.lower():  # Slurm requeued it held after a failed launch: it never runs by itself
                raise StepFailed(f"job {job} is {js} ({reason}) {rec.elapsed():.0f} s after sbatch; created: "
                                 f"{sorted(rec.created)}{launch_failure(state, self.head, job)}")
            if rec.elapsed() > resume_timeout + 120:
                raise StepFailed(f"job {job} is {js} {resume_timeout + 120} s after sbatch; created: "
                                 f"{sorted(rec.created)}")
            time.sleep(2)

    def _suspend(self, state: State, rec: CycleRecord, limit: float) -> bool:
        """The idle nodes pass SuspendTime: act on the delete requests; True once every node is powered down."""
        def all_down():
            rec.act(state)
            states = {h: node_info(state, self.head, h).get("State", "") for h in self.elastic}
            return (all(powered_down(s) for s in states.values()) and set(rec.deleted) >= set(rec.created)) or None

        down, _ = wait_for(all_down, limit, every_s=3)
        rec.times["powered_down"] = rec.elapsed()
        return bool(down)

    def _record_calls(self, state: State, rec: CycleRecord, job: str, ran_on: str) -> list[dict]:
        """The provider calls as recorded, kept with what the control plane did in DIR/.rehearsal (for the reader
        and the tests)."""
        calls = [json.loads(line) for line in
                 ssh(state, self.head, f"cat {FAKE_DIR}/calls.jsonl").stdout.splitlines() if line.strip()]
        out = ssh(state, ran_on, f"cat /tmp/elastic-{job}.out 2>/dev/null || true").stdout \
            if ran_on in self.elastic else ""  # written on the node the job ran on
        instances = ssh(state, self.head, f"cat {FAKE_DIR}/instances.json 2>/dev/null || echo '{{}}'").stdout
        self.summary.update(job=job, job_state=self._job_state(state, job), ran_on=ran_on, calls=calls,
                            control_plane=rec.cp.log, job_output=out, instances=json.loads(instances or "{}"))
        sdir = state_dir(Path(state.dir))
        write_text_atomic(sdir / CALLS_FILE, "".join(json.dumps(c, sort_keys=True) + "\n" for c in calls))
        write_text_atomic(sdir / CONTROL_FILE, json.dumps({k: v for k, v in self.summary.items() if k != "calls"},
                                                          indent=1, sort_keys=True) + "\n")
        return calls

    def run(self, state: State, record: Record) -> None:
        # the fake provider API runs as SlurmUser (ResumeProgram) and records its calls in FAKE_DIR; a node of the
        # clean image has no slurm user before the converge (found when nodes stopped sharing this machine's root)
        r = ssh(state, self.head, f"chown -R slurm:slurm {FAKE_DIR}")
        if r.returncode != 0:
            raise StepFailed(f"{self.head}: {FAKE_DIR}: {r.stderr.strip()[-300:]}")
        _, secrets_path = rehearsal_files(state)
        secrets = yaml.safe_load(secrets_path.read_text())
        stack = json.loads((Path(state.dir) / "cloud" / "stack.json").read_text())
        resume_timeout = _conf_value(state, "ResumeTimeout", 1800)
        suspend_time = _conf_value(state, "SuspendTime", SUSPEND_TIME_S)
        limit = suspend_time + _conf_value(state, "SuspendTimeout", SUSPEND_TIMEOUT_S) + 90
        rec = CycleRecord(ControlPlane(self.head, {"vault_munge_key": secrets["vault_munge_key"]},
                                       timeout_s=resume_timeout), time.monotonic())
        job = self._submit(state)
        js = self._resume(state, rec, job, resume_timeout)
        ran_on = ssh(state, self.head, f"scontrol show job {job} | grep -o ' NodeList=[^ ]*'").stdout.strip() \
            .removeprefix("NodeList=")
        after_job = {h: node_info(state, self.head, h) for h in self.elastic}
        down = self._suspend(state, rec, limit)
        final = {h: node_info(state, self.head, h) for h in self.elastic}
        calls = self._record_calls(state, rec, job, ran_on)
        secret_values = [v for v in secrets.values() if isinstance(v, str) and v]
        for h in self.elastic:
            problems = check_host(h, stack["provider"], stack, rec.created.get(h), rec.deleted.get(h), calls,
                                  secret_values, user_data, ran_on == h)
            if h == ran_on:
                counts, detail = self._ran_job(h, rec, job, js, after_job[h], final[h], down, limit, suspend_time,
                                               problems)
            else:
                st = final[h].get("State", "")
                if not powered_down(st):
                    problems.append(f"State={st} (expected CLOUD+POWERED_DOWN: no job needed it)")
                counts, detail = {}, f"not needed by job {job}: no create, State={st}"
            record(h, HostOutcome(FAILED if problems else OK, rec.times["powered_down"],
                                  "; ".join(problems) if problems else detail, counts))

    def _ran_job(self, h: str, rec: CycleRecord, job: str, js: str, after: dict, final: dict, down: bool,
                 limit: float, suspend_time: int, problems: list[str]) -> tuple[dict, str]:
        """The checks and figures of the node the job ran on (``problems`` extended in place)."""
        out = self.summary.get("job_output", "")
        if js != "COMPLETED":
            problems.append(f"job {job} {js}")
        if out.split() != [h, "gpu-stand-in"]:
            problems.append(f"job output {out.strip()[-200:]!r}, expected its host name and gpu-stand-in")
        st = after.get("State", "")
        if "CLOUD" not in st.upper().split("+") or "POWER" in st.upper():
            problems.append(f"after the job: State={st} (expected up, CLOUD, not powered down)")
        if not down:
            problems.append(f"not powered down {limit} s after the job: State={final.get('State')}")
        bs = (rec.created.get(h) or {}).get("bootstrap") or {}
        counts = {"create_request_seconds": round(rec.times.get(f"{h}.create_request", -1), 1),
                  "bootstrap_seconds": float(bs.get("seconds") or -1),
                  "job_end_seconds": round(rec.times["job_end"], 1),
                  "delete_request_seconds": round(rec.times.get(f"{h}.delete_request", -1), 1),
                  "powered_down_seconds": round(rec.times["powered_down"], 1),
                  "suspend_time_s": suspend_time}
        detail = (f"job {job} {js} on {h}: created {counts['create_request_seconds']} s after sbatch, "
                  f"bootstrap {bs.get('result')} in {bs.get('seconds')} s, registered (State={st} after the "
                  f"job, {after.get('LastBusyTime', '?')}); terminated {counts['delete_request_seconds']} s after "
                  f"sbatch (SuspendTime={suspend_time}); State={final.get('State')}")
        return counts, detail


def check_host(host: str, provider: str, stack: dict, created: dict | None, deleted: dict | None, calls: list[dict],
               secret_values: list[str], user_data, needed: bool) -> list[str]:
    """What the recorded calls and the control plane's log must show for ``host``."""
    problems: list[str] = []
    cli = CLI[provider]
    creates = [c for c in calls if c["cli"] == cli and call_host(c, "create") == host]
    deletes = [c for c in calls if c["cli"] == cli and call_host(c, "delete") in (host, "?")]
    if not needed:
        if creates or created:
            problems.append(f"{host} was created though no job needed it")
        return problems
    if len(creates) != 1:
        problems.append(f"{len(creates)} create calls for {host}, expected 1")
        return problems
    call = creates[0]
    expect = create_prefix(host, stack)
    if expect and call["argv"][:len(expect)] != expect:
        problems.append(f"create argv {call['argv']} does not start with {expect}")
    texts = list(call["files"].values())
    want = user_data(provider, host, stack["bootstrap"])
    if decoded_cloud_config(want) not in [decoded_cloud_config(t) for t in texts]:
        problems.append(f"the user data of the create call is not user_data({provider!r}, {host!r}, the stack's "
                        "bootstrap settings), its files decoded")
    elif yaml.safe_load(want).get("hostname") != host:
        problems.append(f"the user data names another host than {host}")
    if [c for c in calls for v in secret_values if v in json.dumps(c)]:
        problems.append("a secret value is in a recorded provider call")
    if created is None:
        problems.append("no create request reached the control plane")
    else:
        ci = created.get("cloud_init") or {}
        bs = created.get("bootstrap") or {}
        if ci.get("runcmd_exit") != 0 or bs.get("result") != "ok":
            problems.append(f"bootstrap: runcmd exit {ci.get('runcmd_exit')}, status {bs}")
    if len(deletes) != 1:
        problems.append(f"{len(deletes)} delete calls for {host}, expected 1")
    if deleted is None:
        problems.append("no delete request reached the control plane")
    elif deleted.get("left_running"):
        problems.append(f"still running after the terminate: {deleted['left_running']}")
    return problems


def call_host(call: dict, op: str) -> str | None:
    """The host a recorded create or delete call is for (``?``: an AWS terminate names instance ids only; one host
    is created in the cycle); None for any other call."""
    a = call["argv"]
    if op == "create" and a[:2] == ["ec2", "run-instances"]:
        specs = json.loads(a[a.index("--tag-specifications") + 1]) if "--tag-specifications" in a else []
        return next((t["Value"] for s in specs for t in s.get("Tags", []) if t["Key"] == "clusterctl:hostname"), "?")
    if op == "delete" and a[:2] == ["ec2", "terminate-instances"]:
        return "?"
    if a[:3] == ["compute", "instances", op] and len(a) > 3:
        return a[3]
    if a[:2] == ["vm", op] and "--name" in a:
        return a[a.index("--name") + 1]
    return None


def create_prefix(host: str, stack: dict) -> list[str]:
    """The start of the create call's argv the power-saving program must make for ``host``: the provider CLI's
    create with the stack's launch template / instance template."""
    group = next(iter(stack["elastic"].values()))
    if stack["provider"] == "aws":
        return ["ec2", "run-instances", "--launch-template",
                f"LaunchTemplateId={group['aws']['launch_template_id']},Version=$Latest"]
    if stack["provider"] == "gcp":
        return ["compute", "instances", "create", host, "--project", group["gcp"]["project"], "--zone",
                group["gcp"]["zone"], "--source-instance-template", group["gcp"]["instance_template"]]
    return ["vm", "create"]


def elastic_steps(plan, cluster: Cluster, addresses: dict[str, str]) -> list:
    """The scenario's steps after the shared converge step is added by the caller (suite.build)."""
    elastic = tuple(h for h in elastic_hosts(plan) if h in cluster.groups)
    head = cluster.controllers[0]
    partition = next(p.name for p in plan.slurm.partitions
                     if any(elastic_hosts(plan).get(h) in p.groups for h in elastic))
    return [ElasticSetup(plan, head, {h: addresses[h] for h in elastic})], \
        [PoweredDown(head, elastic), ElasticCycle(plan, head, elastic, partition)]


class ElasticScenario(Scenario):
    """Runs alone: the compute nodes of such a blueprint come up only through it."""

    name = "elastic"
    proves = ("an elastic node boots from its user data alone, joins Slurm when a job needs it and is deleted by "
              "power saving once idle, through the provider API the programs call")
    needs = (ELASTIC_GROUP,)
    runs_alone = "its compute nodes come up only through it"
    needs_checked_when_named = True
    converged_first = False

    def adjust(self, variant, build: Build, v2: bool) -> None:
        adjust_elastic(variant)

    def _hosts(self, build: Build) -> dict[str, str]:
        booted = {s.name for s in node_specs(build.base, build.per_group, build.rid)}
        return {h: g for h, g in elastic_hosts(build.base).items() if h in booted}

    def files(self, build: Build) -> dict[str, str]:
        """The stack the Pulumi program would write, and the elastic nodes' rehearsal variables."""
        return {"cloud/stack.json": json.dumps(rehearsal_stack(build.base), indent=1, sort_keys=True) + "\n",
                **host_vars(self._hosts(build))}

    def nodes(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """Every node on the rehearsal init (:data:`ELASTIC_SLURM_WHY`)."""
        return [replace(s, init="rehearsal") for s in specs]

    def binds(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """The "bucket", bind-mounted in every elastic node."""
        bucket = bucket_dir(build.output)
        bucket.mkdir(parents=True, exist_ok=True)
        hosts = self._hosts(build)
        return [replace(s, binds=tuple(s.binds) + ((str(bucket), BUCKET),)) if s.name in hosts else s for s in specs]

    def steps(self, build: Build) -> list:
        hosts = self._hosts(build)
        setup, after = elastic_steps(build.base, build.cluster, {s.name: s.address for s in build.specs})
        static = tuple(h for h in build.cluster.groups if h not in hosts)
        build.info["elastic"] = {"hosts": dict(hosts), "static": list(static), "provider": build.base.cloud.provider,
                                 "no_cloud_init": "the rehearsal applies the user data's keys itself (no cloud-init)"}
        return [build.label(s, self.name) for s in (*setup, Converge(build.cluster, hosts=static), *after)]
