#!/usr/bin/python3
"""A fake provider API for the rehearsal and the unit tests: one program acting as ``aws``, ``gcloud`` or
``az`` by the basename of argv[0] (install it as symlinks of those names on a PATH).

Every call is appended as one JSON line ``{"cli": ..., "argv": [...], "files": {path: text}}`` to
``calls.jsonl`` in the state directory (/var/lib/clusterctl-fake-cloud, or $CLUSTERCTL_FAKE_CLOUD_DIR), where
``files`` holds the text of every file an argument names (``file://F``, ``@F``, ``--custom-data F``,
``--metadata-from-file key=F``, ``--ssh-key-values F``). It answers with the JSON the real CLI prints for
that call (the documented output shape, only the keys a caller reads plus their neighbours):

- ``aws ec2 run-instances`` -> ``{"Instances": [{"InstanceId", "PrivateIpAddress", "State", "Tags", ...}],
  "ReservationId", "OwnerId"}``; ``describe-instances`` -> ``{"Reservations": [{"Instances": [...]}]}``
  (filters ``tag:K``, ``instance-state-name``); ``terminate-instances`` -> ``{"TerminatingInstances": [...]}``;
  ``aws route53 change-resource-record-sets`` -> ``{"ChangeInfo": {"Id", "Status", "SubmittedAt"}}``;
  ``aws s3 cp s3://B/K FILE`` copies ``objects/B/K``; ``aws ssm get-parameter`` prints the value of
  ``secrets.json`` {name: value} (``--query Parameter.Value --output text``) or ``{"Parameter": {...}}``.
- ``gcloud compute instances create NAME ... --format=json`` -> ``[{"name", "id", "status",
  "networkInterfaces": [{"networkIP"}], ...}]``; ``delete`` prints ``Deleted [URL].`` on stderr;
  ``gcloud storage cp gs://B/K FILE``; ``gcloud secrets versions access latest --secret=S --project=P``.
- ``az login --identity`` -> the subscriptions list (nothing with ``--output none``);
  ``az vm create`` -> ``{"id", "location", "macAddress", "powerState", "privateIpAddress",
  "publicIpAddress", "resourceGroup", "zones"}``; ``az vm delete`` prints nothing.

Instance addresses come from ``addresses.json`` ({host: ip}; a host not listed gets 10.255.x.y from its
name). ``failures.json`` ({host: message}) makes a create of that host fail as the real CLI does (exit 254
for aws, 1 for gcloud and az, the message on stderr). Every create and delete also writes
``requests/NNNNNN-create-HOST.json`` / ``NNNNNN-delete-HOST.json`` ({"op", "host", "cli", "address",
"user_data", "seq"}) for the rehearsal's stand-in control plane to act on (create: run the user data's
bootstrap on that node; delete: stop its daemons). State (instances.json) is kept under a lock, so parallel
calls are safe. An instance is ``pending`` in the run-instances answer and ``running`` from the next
describe-instances on, unless its host is listed in ``pending.json`` ([host, ...]), which keeps it pending.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import sys

DEFAULT_DIR = "/var/lib/clusterctl-fake-cloud"
OWNER = "123456789012"


def state_dir() -> str:
    return os.environ.get("CLUSTERCTL_FAKE_CLOUD_DIR") or DEFAULT_DIR


def read_json(path: str, default):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_json(path: str, data) -> None:
    tmp = path + ".new"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def referenced_files(argv: list[str]) -> dict[str, str]:
    """path -> text of every file an argument names."""
    paths = []
    for i, arg in enumerate(argv):
        prev = argv[i - 1] if i else ""
        if arg.startswith("file://"):
            paths.append(arg[len("file://"):])
        elif arg.startswith("@") and len(arg) > 1:
            paths.append(arg[1:])
        elif prev in ("--custom-data", "--ssh-key-values", "--user-data"):
            paths.append(arg)
        elif prev == "--metadata-from-file":
            paths += [kv.split("=", 1)[1] for kv in arg.split(",") if "=" in kv]
        elif arg.startswith("--metadata-from-file="):
            paths += [kv.split("=", 1)[1] for kv in arg.split("=", 1)[1].split(",") if "=" in kv]
    files = {}
    for p in paths:
        try:
            with open(p, errors="replace") as f:
                files[p] = f.read()
        except OSError:
            pass
    return files


def option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def options(argv: list[str], name: str) -> list[str]:
    """Every value after ``name`` up to the next option (aws takes lists as separate words)."""
    out = []
    for i, arg in enumerate(argv):
        if arg == name:
            for v in argv[i + 1:]:
                if v.startswith("--"):
                    break
                out.append(v)
    return out


class Fail(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


class Cloud:
    def __init__(self, base: str, cli: str, argv: list[str], files: dict[str, str]):
        self.base, self.cli, self.argv, self.files = base, cli, argv, files
        self.instances = read_json(os.path.join(base, "instances.json"), {})

    def save(self) -> None:
        write_json(os.path.join(self.base, "instances.json"), self.instances)

    def address(self, host: str) -> str:
        known = read_json(os.path.join(self.base, "addresses.json"), {})
        if host in known:
            return known[host]
        h = hashlib.sha256(host.encode()).digest()
        return f"10.255.{h[0]}.{max(h[1], 1)}"

    def failure(self, host: str) -> str | None:
        return read_json(os.path.join(self.base, "failures.json"), {}).get(host)

    def request(self, op: str, host: str, user_data: str | None = None) -> None:
        d = os.path.join(self.base, "requests")
        os.makedirs(d, exist_ok=True)
        seq = 1 + sum(1 for n in os.listdir(d) if re.match(r"\d{6}-", n))
        body = {"op": op, "host": host, "cli": self.cli, "address": self.address(host), "seq": seq,
                "user_data": user_data}
        write_json(os.path.join(d, f"{seq:06d}-{op}-{host}.json"), body)

    def file_arg(self, value: str | None) -> str | None:
        if value is None:
            return None
        path = value[len("file://"):] if value.startswith("file://") else value.lstrip("@")
        return self.files.get(path)

    def copy_object(self, url: str, dest: str, scheme: str, missing: str) -> None:
        m = re.fullmatch(scheme + r"://([^/]+)/(.+)", url)
        src = os.path.join(self.base, "objects", m.group(1), m.group(2)) if m else ""
        if not m or not os.path.isfile(src):
            raise Fail(missing, 1)
        shutil.copyfile(src, dest)

    def secret(self, name: str, kind: str) -> str:
        values = read_json(os.path.join(self.base, "secrets.json"), {})
        if name not in values:
            raise Fail(kind, 254 if self.cli == "aws" else 1)
        return values[name]

    # --- aws ---

    def aws(self, a: list[str]):
        region = option(a, "--region") or "us-east-1"
        if a[:2] == ["ec2", "run-instances"]:
            specs = json.loads(option(a, "--tag-specifications") or "[]")
            tags = [t for s in specs if s.get("ResourceType") == "instance" for t in s.get("Tags", [])]
            host = next((t["Value"] for t in tags if t["Key"] == "clusterctl:hostname"), None)
            if host is None:
                raise Fail("fake: run-instances without a clusterctl:hostname tag", 252)
            why = self.failure(host)
            if why:
                raise Fail(f"An error occurred (InsufficientInstanceCapacity) when calling the RunInstances "
                           f"operation: {why}", 254)
            iid = "i-" + hashlib.sha256(f"{host}/{len(self.instances)}".encode()).hexdigest()[:17]
            lt = option(a, "--launch-template") or ""
            inst = {"InstanceId": iid, "PrivateIpAddress": self.address(host), "State": {"Code": 0, "Name": "pending"},
                    "Tags": tags, "Placement": {"AvailabilityZone": region + "a"},
                    "LaunchTemplate": dict(kv.split("=", 1) for kv in lt.split(",") if "=" in kv)}
            self.instances[iid] = inst
            self.save()
            self.request("create", host, self.file_arg(option(a, "--user-data")))
            return {"Groups": [], "Instances": [inst], "OwnerId": OWNER,
                    "ReservationId": "r-" + iid[2:]}
        if a[:2] == ["ec2", "describe-instances"]:
            held = read_json(os.path.join(self.base, "pending.json"), [])
            for inst in self.instances.values():  # launched by the time anyone asks again (unless held pending)
                host = next((t["Value"] for t in inst["Tags"] if t["Key"] == "clusterctl:hostname"), None)
                if inst["State"]["Name"] == "pending" and host not in held:
                    inst["State"] = {"Code": 16, "Name": "running"}
            self.save()
            found = list(self.instances.values())
            for f in options(a, "--filters"):
                m = re.fullmatch(r"Name=([^,]+),Values=(.+)", f)
                if not m:
                    raise Fail(f"fake: filter {f!r} not in Name=N,Values=V form", 252)
                name, values = m.group(1), m.group(2).split(",")
                if name.startswith("tag:"):
                    found = [i for i in found if any(t["Key"] == name[4:] and t["Value"] in values for t in i["Tags"])]
                elif name == "instance-state-name":
                    found = [i for i in found if i["State"]["Name"] in values]
                else:
                    raise Fail(f"fake: filter {name} not supported", 252)
            return {"Reservations": [{"Instances": found, "OwnerId": OWNER, "ReservationId": "r-" + i["InstanceId"][2:]}
                                     for i in found]}
        if a[:2] == ["ec2", "terminate-instances"]:
            out = []
            for iid in options(a, "--instance-ids"):
                inst = self.instances.get(iid)
                if inst is None:
                    raise Fail(f"An error occurred (InvalidInstanceID.NotFound) when calling the TerminateInstances "
                               f"operation: The instance ID '{iid}' does not exist", 254)
                before = dict(inst["State"])
                inst["State"] = {"Code": 32, "Name": "shutting-down"}
                out.append({"InstanceId": iid, "CurrentState": inst["State"], "PreviousState": before})
                host = next(t["Value"] for t in inst["Tags"] if t["Key"] == "clusterctl:hostname")
                self.request("delete", host)
            self.save()
            return {"TerminatingInstances": out}
        if a[:2] == ["route53", "change-resource-record-sets"]:
            batch = json.loads(self.file_arg(option(a, "--change-batch")) or option(a, "--change-batch") or "{}")
            if not batch.get("Changes"):
                raise Fail("An error occurred (InvalidInput): no Changes", 254)
            return {"ChangeInfo": {"Id": "/change/C" + hashlib.sha256(json.dumps(batch).encode()).hexdigest()[:12].upper(),
                                   "Status": "PENDING", "SubmittedAt": "2026-01-01T00:00:00.000Z"}}
        if a[:2] == ["s3", "cp"]:
            self.copy_object(a[2], a[3], "s3", f"fatal error: An error occurred (404) when calling the HeadObject "
                                               f"operation: Key \"{a[2]}\" does not exist")
            return None
        if a[:2] == ["ssm", "get-parameter"]:
            name = option(a, "--name")
            value = self.secret(name, f"An error occurred (ParameterNotFound) when calling the GetParameter "
                                      f"operation: Parameter {name} not found.")
            if option(a, "--query") == "Parameter.Value" and option(a, "--output") == "text":
                return value + "\n"
            return {"Parameter": {"Name": name, "Type": "SecureString", "Value": value, "Version": 1}}
        raise Fail(f"fake aws: {' '.join(a[:2])} is not implemented", 252)

    # --- gcloud ---

    def gcloud(self, a: list[str]):
        if a[:3] == ["compute", "instances", "create"]:
            host, zone, project = a[3], option(a, "--zone"), option(a, "--project")
            why = self.failure(host)
            if why:
                raise Fail(f"ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n - {why}", 1)
            if host in self.instances:
                raise Fail(f"ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n - The resource "
                           f"'projects/{project}/zones/{zone}/instances/{host}' already exists", 1)
            meta = option(a, "--metadata-from-file") or ""
            path = next((kv.split("=", 1)[1] for kv in meta.split(",") if kv.startswith("user-data=")), None)
            inst = {"name": host, "id": str(int(hashlib.sha256(host.encode()).hexdigest()[:15], 16)),
                    "status": "RUNNING", "zone": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}",
                    "networkInterfaces": [{"name": "nic0", "networkIP": self.address(host)}],
                    "selfLink": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{host}"}
            self.instances[host] = inst
            self.save()
            self.request("create", host, self.files.get(path) if path else None)
            return [inst]
        if a[:3] == ["compute", "instances", "delete"]:
            hosts = [x for x in a[3:] if not x.startswith("-") and a[a.index(x) - 1] not in ("--zone", "--project")]
            for host in hosts:
                if self.instances.pop(host, None) is None:
                    raise Fail(f"ERROR: (gcloud.compute.instances.delete) Could not fetch resource:\n - The resource "
                               f"'projects/{option(a, '--project')}/zones/{option(a, '--zone')}/instances/{host}' "
                               "was not found", 1)
                self.request("delete", host)
                sys.stderr.write(f"Deleted [https://www.googleapis.com/compute/v1/projects/{option(a, '--project')}"
                                 f"/zones/{option(a, '--zone')}/instances/{host}].\n")
            self.save()
            return None
        if a[:2] == ["storage", "cp"]:
            self.copy_object(a[2], a[3], "gs", f"ERROR: (gcloud.storage.cp) The following URLs matched no objects or "
                                               f"files:\n{a[2]}")
            return None
        if a[:3] == ["secrets", "versions", "access"]:
            name = f"projects/{option(a, '--project')}/secrets/{option(a, '--secret')}"
            return self.secret(name, f"ERROR: (gcloud.secrets.versions.access) NOT_FOUND: Secret [{name}] not found")
        raise Fail(f"fake gcloud: {' '.join(a[:3])} is not implemented", 2)

    # --- az ---

    def az(self, a: list[str]):
        if a[:2] == ["login", "--identity"]:
            client = option(a, "--client-id") or option(a, "--username")
            if option(a, "--output") == "none":
                return None
            return [{"environmentName": "AzureCloud", "id": "00000000-0000-0000-0000-000000000000", "isDefault": True,
                     "name": "subscription", "state": "Enabled", "tenantId": "00000000-0000-0000-0000-000000000001",
                     "user": {"assignedIdentityInfo": f"MSIClient-{client}" if client else "MSI",
                              "name": "userAssignedIdentity" if client else "systemAssignedIdentity",
                              "type": "servicePrincipal"}}]
        if a[:2] == ["vm", "create"]:
            host, rg = option(a, "--name"), option(a, "--resource-group")
            why = self.failure(host)
            if why:
                raise Fail(f"(SkuNotAvailable) {why}", 1)
            sub = option(a, "--subscription") or "00000000-0000-0000-0000-000000000000"
            inst = {"fqdns": "", "id": f"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/"
                                       f"virtualMachines/{host}",
                    "identity": {"type": "UserAssigned"}, "location": option(a, "--location") or "",
                    "macAddress": "00-0D-3A-00-00-01", "powerState": "VM running",
                    "privateIpAddress": self.address(host), "publicIpAddress": "", "resourceGroup": rg, "zones": ""}
            self.instances[host] = inst
            self.save()
            self.request("create", host, self.file_arg(option(a, "--custom-data")))
            return inst
        if a[:2] == ["vm", "delete"]:
            host = option(a, "--name")
            if self.instances.pop(host, None) is None:
                raise Fail(f"(ResourceNotFound) The Resource 'Microsoft.Compute/virtualMachines/{host}' under "
                           f"resource group '{option(a, '--resource-group')}' was not found.", 3)
            self.save()
            self.request("delete", host)
            return None
        raise Fail(f"fake az: {' '.join(a[:2])} is not implemented", 2)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    cli = os.path.basename(argv[0])
    if cli not in ("aws", "gcloud", "az"):
        print(f"fake_cloud: run me as aws, gcloud or az (not {cli})", file=sys.stderr)
        return 2
    args = argv[1:]
    base = state_dir()
    os.makedirs(base, exist_ok=True)
    files = referenced_files(args)
    with open(os.path.join(base, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(os.path.join(base, "calls.jsonl"), "a") as calls:
            calls.write(json.dumps({"cli": cli, "argv": args, "files": files}) + "\n")
        try:
            out = getattr(Cloud(base, cli, args, files), cli)(args)
        except Fail as exc:
            print(str(exc), file=sys.stderr)
            return exc.code
    if isinstance(out, str):
        sys.stdout.write(out)
    elif out is not None:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
