#!/usr/bin/python3
"""clusterctl-power-save: Slurm's ResumeProgram, SuspendProgram and ResumeFailProgram for elastic node groups.

Installed on the controllers as /usr/local/sbin/clusterctl-power-save with the symlinks
``clusterctl-resume``, ``clusterctl-suspend`` and ``clusterctl-resume-fail`` (role slurm_power_save); it acts
by the name it was run as. slurmctld runs each with one argument, a Slurm host list (slurm.conf(5),
ResumeProgram / SuspendProgram / ResumeFailProgram), as SlurmUser and with almost no environment.

- ``clusterctl-resume HOSTS``: for each host, create its instance from its elastic group's settings in
  /etc/clusterctl/stack.json, with user data from the one generator (clusterctl_cloud_config.py beside this
  program) carrying the stack's bootstrap settings, this host's name and the bootstrap program
  /usr/local/sbin/clusterctl-bootstrap; the instance boots, converges and its slurmd registers.
  AWS: ``aws ec2 run-instances --launch-template LaunchTemplateId=ID,Version=$Latest`` (the launch template
  carries the AMI, interfaces, placement group, capacity reservation and instance profile) with the tags Name,
  clusterctl:hostname and clusterctl:cluster, then a Route 53 UPSERT of ``HOST.<dns_domain>`` A
  <PrivateIpAddress>; an instance of the host still pending is reused (Slurm may run the resume program twice
  for a node after a slurmctld restart), one already running is terminated and replaced: slurmctld ignores
  the registration of a powering-up node whose boot time precedes the resume request (found by the
  rehearsal's elastic scenario on Slurm 22.05). GCP deletes an existing VM of the host and creates it again
  for the same reason. GCP: ``gcloud compute instances create HOST
  --source-instance-template T --metadata-from-file user-data=F``. Azure: ``az vm create`` with the group's VM
  settings (size, image, subnet, availability set / proximity placement group, user-assigned identity,
  accelerated networking, no public address, NIC and OS disk deleted with the VM), after ``az login
  --identity`` with the controller's own identity.
  When a host cannot be created, whatever was created is deleted and the node is set
  ``State=POWER_DOWN_FORCE`` with a reason (scontrol(1) of Slurm 22.05: "Will cancel all jobs on the node,
  power it down, and reset its state to IDLE"), so its jobs are requeued at once instead of after
  ResumeTimeout, and the node can be tried again.
- ``clusterctl-suspend HOSTS``: delete each host's instance (AWS: found by its tags in state pending or
  running, terminated, its A record deleted; GCP ``gcloud compute instances delete``; Azure ``az vm
  delete``).
- ``clusterctl-resume-fail HOSTS``: the nodes did not register within ResumeTimeout: delete what was
  created, as suspend does (Slurm has marked them DOWN itself).

Every provider call is an argument list (no shell) with PATH set to the system directories; temporary files
(user data, change batches) are 0600 and removed after the call, in a private directory made for the run
(``tempfile.mkdtemp``), which also holds the CLIs' HOME when SlurmUser has no writable one. Hosts are
handled independently (one failure does not stop the others), at most PARALLEL at a time. Every call and
result is logged to /var/log/slurm/clusterctl-power-save.log. A host that is in no elastic group is refused
(logged; nothing is created). Exit status: 0 when every host succeeded, 1 when any failed, 2 for a bad
invocation or stack file.

Tests: CLUSTERCTL_POWER_SAVE_ROOT prefixes every file path above; CLUSTERCTL_POWER_SAVE_PATH replaces PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

STACK = "/etc/clusterctl/stack.json"
BOOTSTRAP = "/usr/local/sbin/clusterctl-bootstrap"
BOOTSTRAP_CONFIG = "/etc/clusterctl/bootstrap.json"
LOG = "/var/log/slurm/clusterctl-power-save.log"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PARALLEL = 16
"""provider calls in flight at once (API rate limits; Slurm's ResumeRate bounds how many hosts arrive)"""
DNS_TTL = 60
ACTIONS = {"clusterctl-resume": "resume", "clusterctl-suspend": "suspend", "clusterctl-resume-fail": "resume-fail"}


def _import_generator():
    here = os.path.dirname(os.path.realpath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        import clusterctl_cloud_config as generator  # installed beside this program
    except ImportError:
        import cloud_config as generator  # this file in the clusterctl package (clusterctl/cloud/node)
    return generator


class HostError(Exception):
    pass


class PowerSave:
    def __init__(self, root: str, log):
        self.root = root
        self.log = log
        self.stack = self.load_json(STACK)
        self.tmp = tempfile.mkdtemp(prefix="clusterctl-power-save-")  # 0700, a name no one can guess
        self.env = {"PATH": os.environ.get("CLUSTERCTL_POWER_SAVE_PATH") or PATH, "LANG": "C.UTF-8",
                    "HOME": self.home()}
        for key in ("CLUSTERCTL_FAKE_CLOUD_DIR", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
                    "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR", "SLURM_CONF"):
            if key in os.environ:
                self.env[key] = os.environ[key]

    def path(self, p: str) -> str:
        return os.path.join(self.root, p.lstrip("/")) if self.root else p

    def load_json(self, p: str) -> dict:
        with open(self.path(p)) as f:
            return json.load(f)

    def home(self) -> str:
        """A writable HOME for the CLIs' caches (SlurmUser's home is often /nonexistent): HOME when it is a
        writable directory, else ``home`` in this run's private temporary directory, removed with it. Never a
        fixed name in /tmp: another local user could make ``/tmp/clusterctl-power-save-<uid>`` first (a file,
        a symlink, a directory of theirs), and the program then refused to start, stopping elastic scaling."""
        home = os.environ.get("HOME")
        if home and os.path.isdir(home) and os.access(home, os.W_OK):
            return home
        d = os.path.join(self.tmp, "home")
        os.mkdir(d, 0o700)
        return d

    # --- running things ---

    def run(self, host: str, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
        t0 = time.monotonic()
        r = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=self.env)
        self.log(f"{host}: {' '.join(args)} -> {r.returncode} ({time.monotonic() - t0:.1f} s)"
                 + (f": {r.stderr.strip()[-400:]}" if r.returncode else ""))
        if check and r.returncode != 0:
            raise HostError(f"{args[0]} {' '.join(args[1:3])} exited {r.returncode}: {r.stderr.strip()[-200:]}")
        return r

    def temp_file(self, text: str) -> str:
        fd, path = tempfile.mkstemp(dir=self.tmp)  # 0600
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def expand(self, hostlist: str) -> list[str]:
        r = subprocess.run(["scontrol", "show", "hostnames", hostlist], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, env=self.env)
        if r.returncode != 0:
            raise HostError(f"scontrol show hostnames {hostlist}: {r.stderr.strip()[-200:]}")
        return r.stdout.split()

    def groups_of(self, hosts: list[str]) -> dict[str, str | None]:
        wanted = set(hosts)
        found: dict[str, str | None] = dict.fromkeys(hosts)
        for name, group in sorted((self.stack.get("elastic") or {}).items()):
            for h in self.expand(group["hostlist"]):
                if h in wanted and found[h] is None:
                    found[h] = name
        return found

    def mark_failed(self, host: str, why: str) -> None:
        reason = ("clusterctl: resume failed: " + " ".join(why.split()))[:200]
        self.run(host, ["scontrol", "update", f"NodeName={host}", "State=POWER_DOWN_FORCE", f"Reason={reason}"],
                 check=False)

    def user_data(self, host: str) -> str:
        generator = _import_generator()
        with open(self.path(BOOTSTRAP)) as f:
            program = f.read()
        return generator.cloud_config(self.stack["provider"], host, self.stack["bootstrap"], program)

    # --- AWS ---

    def aws(self, *args: str) -> list[str]:
        return ["aws", *args, "--region", self.stack["region"], "--output", "json"]

    def aws_instances(self, host: str) -> list[dict]:
        r = self.run(host, self.aws("ec2", "describe-instances", "--filters",
                                    f"Name=tag:clusterctl:hostname,Values={host}",
                                    f"Name=tag:clusterctl:cluster,Values={self.stack['cluster']}",
                                    "Name=instance-state-name,Values=pending,running"))
        return [i for res in json.loads(r.stdout).get("Reservations", []) for i in res.get("Instances", [])]

    def aws_dns(self, host: str, g: dict, action: str, address: str) -> None:
        batch = {"Comment": f"clusterctl power saving: {host}",
                 "Changes": [{"Action": action, "ResourceRecordSet": {
                     "Name": f"{host}.{g['dns_domain']}.", "Type": "A", "TTL": DNS_TTL,
                     "ResourceRecords": [{"Value": address}]}}]}
        f = self.temp_file(json.dumps(batch, indent=1))
        try:
            self.run(host, ["aws", "route53", "change-resource-record-sets", "--hosted-zone-id", g["hosted_zone_id"],
                            "--change-batch", "file://" + f, "--output", "json"])
        finally:
            os.unlink(f)

    def aws_create(self, host: str, g: dict) -> None:
        existing = self.aws_instances(host)
        pending = [i for i in existing if i["State"]["Name"] == "pending"]
        running = [i["InstanceId"] for i in existing if i["State"]["Name"] != "pending"]
        if running:
            # slurmctld ignores the registration of a powering-up node whose boot time precedes the resume
            # request, so an instance that booted before it cannot serve this resume: replace it
            self.run(host, self.aws("ec2", "terminate-instances", "--instance-ids", *running))
            self.log(f"{host}: {' '.join(running)} already running (booted before this resume): terminated")
        if pending:
            inst = pending[0]
            self.log(f"{host}: {inst['InstanceId']} already pending: reused")
        else:
            tags = [{"ResourceType": "instance", "Tags": [
                {"Key": "Name", "Value": host}, {"Key": "clusterctl:hostname", "Value": host},
                {"Key": "clusterctl:cluster", "Value": self.stack["cluster"]}]}]
            f = self.temp_file(self.user_data(host))
            try:
                r = self.run(host, self.aws("ec2", "run-instances", "--launch-template",
                                            f"LaunchTemplateId={g['launch_template_id']},Version=$Latest",
                                            "--count", "1", "--user-data", "file://" + f,
                                            "--tag-specifications", json.dumps(tags, separators=(",", ":"))))
            finally:
                os.unlink(f)
            inst = json.loads(r.stdout)["Instances"][0]
            self.log(f"{host}: created {inst['InstanceId']} at {inst.get('PrivateIpAddress')}")
        if g.get("hosted_zone_id") and g.get("dns_domain"):
            self.aws_dns(host, g, "UPSERT", inst["PrivateIpAddress"])

    def aws_delete(self, host: str, g: dict) -> None:
        instances = self.aws_instances(host)
        if not instances:
            self.log(f"{host}: no pending or running instance")
            return
        self.run(host, self.aws("ec2", "terminate-instances", "--instance-ids", *[i["InstanceId"] for i in instances]))
        if g.get("hosted_zone_id") and g.get("dns_domain"):
            self.aws_dns(host, g, "DELETE", instances[0]["PrivateIpAddress"])

    # --- GCP ---

    def gcp_create(self, host: str, g: dict, retried: bool = False) -> None:
        f = self.temp_file(self.user_data(host))
        try:
            r = self.run(host, ["gcloud", "compute", "instances", "create", host, "--project", g["project"],
                                "--zone", g["zone"], "--source-instance-template", g["instance_template"],
                                "--metadata-from-file", f"user-data={f}", "--format", "json"], check=False)
        finally:
            os.unlink(f)
        if r.returncode != 0:
            if "already exists" in r.stderr and not retried:
                # it booted before this resume request, which slurmctld does not accept: delete it, create anew
                self.log(f"{host}: instance already exists (booted before this resume): deleted and created again")
                self.gcp_delete(host, g)
                return self.gcp_create(host, g, retried=True)
            raise HostError(f"gcloud compute instances create exited {r.returncode}: {r.stderr.strip()[-200:]}")

    def gcp_delete(self, host: str, g: dict) -> None:
        r = self.run(host, ["gcloud", "compute", "instances", "delete", host, "--project", g["project"],
                            "--zone", g["zone"], "--quiet"], check=False)
        if r.returncode != 0 and "was not found" not in r.stderr:
            raise HostError(f"gcloud compute instances delete exited {r.returncode}: {r.stderr.strip()[-200:]}")

    # --- Azure ---

    def az_login(self) -> None:
        """``az login --identity`` with the controller's own user-assigned identity (its bootstrap settings'
        ``identity``), once per run (``--client-id``: Azure CLI 2.69 and later; ``--username`` before)."""
        try:
            client_id = self.load_json(BOOTSTRAP_CONFIG).get("identity")
        except (OSError, ValueError):
            client_id = None
        args = ["az", "login", "--identity", "--output", "none"]
        if client_id:
            r = self.run("-", args + ["--client-id", client_id], check=False)
            if r.returncode != 0 and "unrecognized arguments" in r.stderr:
                r = self.run("-", args + ["--username", client_id], check=False)
        else:
            r = self.run("-", args, check=False)
        if r.returncode != 0:
            raise HostError(f"az login --identity exited {r.returncode}")

    def az_create(self, host: str, g: dict) -> None:
        f = self.temp_file(self.user_data(host))
        key = self.temp_file(g["ssh_public_key"].strip() + "\n")
        args = ["az", "vm", "create", "--subscription", g["subscription_id"], "--resource-group", g["resource_group"],
                "--name", host, "--computer-name", host, "--location", g["location"], "--size", g["vm_size"],
                "--image", g["image"], "--subnet", g["subnet_id"], "--assign-identity", g["identity_id"],
                "--accelerated-networking", "true", "--public-ip-address", "", "--nsg", "",
                "--nic-delete-option", "Delete", "--os-disk-delete-option", "Delete",
                "--os-disk-size-gb", str(g["os_disk_gb"]), "--admin-username", g["admin_username"],
                "--authentication-type", "ssh", "--ssh-key-values", key, "--custom-data", f,
                "--tags", f"clusterctl:hostname={host}", f"clusterctl:cluster={self.stack['cluster']}"]
        if g.get("availability_set_id"):
            args += ["--availability-set", g["availability_set_id"]]
        if g.get("proximity_placement_group_id"):
            args += ["--ppg", g["proximity_placement_group_id"]]
        try:
            self.run(host, args + ["--output", "json"])
        finally:
            os.unlink(f)
            os.unlink(key)

    def az_delete(self, host: str, g: dict) -> None:
        r = self.run(host, ["az", "vm", "delete", "--subscription", g["subscription_id"], "--resource-group",
                            g["resource_group"], "--name", host, "--yes"], check=False)
        if r.returncode != 0 and "ResourceNotFound" not in r.stderr:
            raise HostError(f"az vm delete exited {r.returncode}: {r.stderr.strip()[-200:]}")

    # --- per host ---

    def create(self, host: str, g: dict) -> None:
        p = self.stack["provider"]
        {"aws": self.aws_create, "gcp": self.gcp_create, "azure": self.az_create}[p](host, g[p])

    def delete(self, host: str, g: dict) -> None:
        p = self.stack["provider"]
        {"aws": self.aws_delete, "gcp": self.gcp_delete, "azure": self.az_delete}[p](host, g[p])

    def one(self, action: str, host: str, group: str | None) -> bool:
        if group is None:
            self.log(f"{host}: refused: in no elastic group of {self.path(STACK)}")
            if action == "resume":
                self.mark_failed(host, "in no elastic group of the stack")
            return False
        g = self.stack["elastic"][group]
        try:
            if action == "resume":
                try:
                    self.create(host, g)
                except Exception as exc:  # noqa: BLE001 - every failure of a host is handled the same way
                    self.log(f"{host}: resume failed: {exc}")
                    try:
                        self.delete(host, g)
                    except Exception as exc2:  # noqa: BLE001
                        self.log(f"{host}: cleaning up after the failed resume failed too: {exc2}")
                    self.mark_failed(host, str(exc))
                    return False
            else:
                self.delete(host, g)
            self.log(f"{host}: {action} ok")
            return True
        except Exception as exc:  # noqa: BLE001
            self.log(f"{host}: {action} failed: {exc}")
            return False


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    action = ACTIONS.get(os.path.basename(argv[0]))
    root = os.environ.get("CLUSTERCTL_POWER_SAVE_ROOT", "")
    log_path = os.path.join(root, LOG.lstrip("/")) if root else LOG
    if action is None or len(argv) != 2 or not argv[1] or argv[1].startswith("-"):
        print(f"usage: {' | '.join(sorted(ACTIONS))} HOSTLIST (run as one of those names, not "
              f"{os.path.basename(argv[0])})", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "a") as logf:
        def log(message: str) -> None:
            logf.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} [{os.getpid()}] {action}: {message}\n")
            logf.flush()
        try:
            ps = PowerSave(root, log)
            hosts = ps.expand(argv[1])
            groups = ps.groups_of(hosts)
        except (OSError, ValueError, KeyError, HostError) as exc:
            log(f"{argv[1]}: cannot start: {type(exc).__name__}: {exc}")
            return 2
        log(f"{argv[1]}: {len(hosts)} host(s)")
        try:
            if ps.stack["provider"] == "azure" and any(groups.values()):
                try:
                    ps.az_login()
                except HostError as exc:
                    log(str(exc))
                    if action == "resume":
                        for h in hosts:
                            if groups[h]:
                                ps.mark_failed(h, str(exc))
                    return 1
            with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL, len(hosts)))) as pool:
                results = list(pool.map(lambda h: ps.one(action, h, groups[h]), hosts))
        finally:
            shutil.rmtree(ps.tmp)  # temporary files and the CLIs' caches in the private HOME
        log(f"{argv[1]}: {sum(results)} of {len(hosts)} ok")
        return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
