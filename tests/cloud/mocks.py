"""Run a cloud program under ``pulumi.runtime.set_mocks`` and record what it registers (any provider).

    rec = run_program(spec)                      # spec: clusterctl.cloud.stack.spec.CloudSpec
    rec.of_type("aws:ec2/instance:Instance")     # [Resource(type, name, inputs, parent, urn, ...)]
    rec.outputs["nodes"]                         # the cluster component's registered outputs, resolved

Inputs are as the engine sees them: the providers' wire names (camelCase, e.g. ``instanceType``,
``networkInterfaces``); a secret input stays wrapped (:func:`is_secret`, :func:`reveal`). Registered
component outputs are resolved with secrets unwrapped. ``new_resource`` answers with the inputs
plus a few plausible computed outputs (ids, ARNs/self links, private IPs); ``call`` answers the lookups
programs use (AMI/image, zones) and ``{}`` for everything else.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc

ACCOUNT = "123456789012"
TENANT = "72f988bf-0000-0000-0000-000000000000"


@dataclass
class Resource:
    type: str
    name: str
    inputs: dict
    parent: str
    """URN of the parent (the stack's URN for top-level resources)"""
    urn: str
    custom: bool
    outputs: dict = field(default_factory=dict)
    """the state new_resource answered (inputs + computed outputs)"""
    ignore_changes: tuple[str, ...] = ()
    """the properties the resource's options ignore after creation (``ResourceOptions.ignore_changes``)"""

    @property
    def parent_name(self) -> str:
        return self.parent.split("::")[-1] if self.parent else ""

    @property
    def parent_type(self) -> str:
        return self.parent.split("::")[-2].split("$")[-1] if self.parent else ""


@dataclass
class Recorded:
    resources: list[Resource]
    outputs: dict[str, Any]
    """the registered outputs of the component ``build(spec)`` returned, resolved"""
    component_outputs: dict[str, dict[str, Any]]
    """registered outputs of every component resource, by URN"""
    calls: list[tuple[str, dict]]
    """(token, args) of every invoke"""
    root: Resource | None = None
    """the component ``build(spec)`` returned"""

    def of_type(self, token: str) -> list[Resource]:
        return [r for r in self.resources if r.type == token]

    def named(self, name: str) -> Resource:
        found = [r for r in self.resources if r.name == name]
        assert len(found) == 1, f"{len(found)} resources named {name!r}"
        return found[0]

    def children(self, parent: Resource) -> list[Resource]:
        return [r for r in self.resources if r.parent == parent.urn]

    def types(self) -> set[str]:
        return {r.type for r in self.resources}


class RecordingMocks(pulumi.runtime.Mocks):
    """Answers resource registrations and invokes with plausible values and keeps a log of both."""

    def __init__(self) -> None:
        self.created: list[tuple[str, str, dict, dict]] = []
        self.calls: list[tuple[str, dict]] = []
        self._ip = itertools.count(10)
        self._public_ip = itertools.count(10)

    def _private_ip(self) -> str:
        n = next(self._ip)
        return f"10.0.{n // 250}.{n % 250 + 4}"

    def new_resource(self, args: pmocks.MockResourceArgs):
        inputs = dict(args.inputs)
        rid = f"{args.name}_id"
        state: dict[str, Any] = {**inputs, "id": rid}
        typ = args.typ
        provider = typ.split(":")[0]
        if provider == "aws":
            service = typ.split(":")[1].split("/")[0]
            state.setdefault("arn", f"arn:aws:{service}:us-east-1:{ACCOUNT}:{args.name}")
            if not inputs.get("name") and not inputs.get("namePrefix"):
                state["name"] = args.name  # what auto-naming would give, without the random suffix
            if typ == "aws:ec2/instance:Instance":
                state["privateIp"] = inputs.get("privateIp") or self._private_ip()
                state["privateDns"] = f"ip-{state['privateIp'].replace('.', '-')}.ec2.internal"
                if inputs.get("associatePublicIpAddress"):
                    state["publicIp"] = f"198.51.100.{next(self._public_ip)}"
            elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
                state["dnsName"] = f"{rid}.fsx.us-east-1.amazonaws.com"
                state["mountName"] = "abcdefgh"
            elif typ == "aws:s3/bucket:Bucket" or typ == "aws:s3/bucketV2:BucketV2":
                state.setdefault("bucket", (inputs.get("bucketPrefix") or f"{args.name}-") + "0123456789")
            elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
                state["latestVersion"] = 1
            elif typ == "aws:ec2/eip:Eip":
                state["publicIp"] = f"198.51.100.{next(self._public_ip)}"
        elif provider == "gcp":
            state.setdefault("selfLink", f"https://www.googleapis.com/compute/v1/projects/p/{args.name}")
            if typ == "gcp:compute/instance:Instance":
                nics = [dict(n) for n in inputs.get("networkInterfaces", [])] or [{}]
                for nic in nics:
                    nic.setdefault("networkIp", self._private_ip())
                state["networkInterfaces"] = nics
            elif typ == "gcp:storage/bucket:Bucket":
                state.setdefault("name", f"{args.name}-0123456789")  # auto-naming (random suffix)
            elif typ == "gcp:serviceaccount/account:Account":
                email = f"{inputs['accountId']}@{inputs.get('project') or 'p'}.iam.gserviceaccount.com"
                state.update(email=email, member=f"serviceAccount:{email}",
                             name=f"projects/{inputs.get('project') or 'p'}/serviceAccounts/{email}")
            elif typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
                state["name"] = f"projects/{inputs.get('project') or 'p'}/roles/{inputs['roleId']}"
            if typ in ("gcp:secretmanager/secret:Secret", "gcp:projects/iAMCustomRole:IAMCustomRole",
                       "gcp:compute/instanceTemplate:InstanceTemplate"):
                state.setdefault("project", "p")  # the provider's default project
        elif provider == "azure-native":
            named = {"azure-native:keyvault:Vault": "vaultName", "azure-native:keyvault:Secret": "secretName"}
            state.setdefault("name", inputs.get(named.get(typ, "name"), args.name))
            if typ == "azure-native:network:NetworkInterface":
                configs = [dict(c) for c in inputs.get("ipConfigurations", [])] or [{}]
                for c in configs:
                    c.setdefault("privateIPAddress", self._private_ip())
                state["ipConfigurations"] = configs
            elif typ == "azure-native:compute:VirtualMachine" and inputs.get("identity"):
                # the input lists identity ids; the state maps each to its principal and client ids
                ident = dict(inputs["identity"])
                ident["userAssignedIdentities"] = {i: {} for i in ident.get("userAssignedIdentities", [])}
                state["identity"] = ident
            elif typ == "azure-native:managedidentity:UserAssignedIdentity":
                state["clientId"] = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"client.{args.name}"))
                state["principalId"] = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"principal.{args.name}"))
        self.created.append((typ, args.name, inputs, state))
        return rid, state

    def call(self, args: pmocks.MockCallArgs):
        self.calls.append((args.token, dict(args.args)))
        token = args.token
        if token == "aws:ec2/getAmi:getAmi":
            return {"id": "ami-0123456789abcdef0", "imageId": "ami-0123456789abcdef0",
                    "name": "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20240101",
                    "architecture": "x86_64", "rootDeviceName": "/dev/sda1"}, []
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return {"id": "us-east-1", "names": ["us-east-1a", "us-east-1b", "us-east-1c"],
                    "zoneIds": ["use1-az1", "use1-az2", "use1-az4"]}, []
        if token in ("aws:index/getCallerIdentity:getCallerIdentity",):
            return {"accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:root", "id": ACCOUNT,
                    "userId": ACCOUNT}, []
        if token == "aws:index/getRegion:getRegion":
            return {"name": "us-east-1", "id": "us-east-1", "region": "us-east-1"}, []
        if token == "gcp:compute/getImage:getImage":
            return {"selfLink": "https://www.googleapis.com/compute/v1/projects/p/global/images/img",
                    "name": "img", "id": "img"}, []
        if token == "azure-native:authorization:getClientConfig":
            return {"tenantId": TENANT, "subscriptionId": "00000000-0000-0000-0000-000000000001",
                    "clientId": "00000000-0000-0000-0000-000000000002",
                    "objectId": "00000000-0000-0000-0000-000000000003"}, []
        if token == "gcp:compute/getZones:getZones":
            return {"names": ["us-central1-a", "us-central1-b"]}, []
        return {}, []


class RecordingMonitor(pmocks.MockMonitor):
    """The mock engine, also keeping every registration's parent URN and every component's outputs."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.registrations: list[tuple[str, str, str, str, bool]] = []
        """(urn, type, name, parent urn, custom)"""
        self.ignored: dict[str, tuple[str, ...]] = {}
        """urn -> the properties its options ignore after creation"""
        self.registered_outputs: dict[str, dict] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append((response.urn, request.type, request.name, request.parent,
                                       bool(request.custom)))
            self.ignored[response.urn] = tuple(request.ignoreChanges)
        return response

    def RegisterResourceOutputs(self, request):
        outputs, _ = rpc.deserialize_properties_unwrap_secrets(request.outputs)
        self.registered_outputs[request.urn] = _plain(outputs)
        return super().RegisterResourceOutputs(request)


def is_secret(value) -> bool:
    """Whether a recorded input value is a Pulumi secret (as ``config.require_secret`` gives)."""
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def reveal(value):
    """The plain value of a recorded secret input (other values unchanged)."""
    return value["value"] if is_secret(value) else value


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def run_program(spec, config: dict[str, str] | None = None, secrets: dict[str, str] | None = None,
                project: str = "clusterctl", render_dir=None) -> Recorded:
    """Install the mocks, run ``clusterctl.cloud.pulumi.program.build(spec)`` to completion and return what it
    registered. ``config``/``secrets`` are stack configuration (``{"clusterctl:keyName": "ops"}``);
    secrets are marked secret, as ``pulumi config set --secret`` would. ``render_dir``: the render the
    project belongs to (the configuration object and the bootstrap user data are built from it)."""
    from clusterctl.cloud.pulumi import program

    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=spec.cluster, preview=False, monitor=monitor)
    all_config = {**(config or {}), **(secrets or {})}
    pulumi.runtime.set_all_config(all_config, list(secrets or {}))
    built: dict[str, Any] = {}

    @pulumi.runtime.test
    def _program():
        component = program.build(spec, render_dir=render_dir)
        built["component"] = component
        return component.urn.apply(lambda urn: built.__setitem__("urn", urn))

    try:
        _program()
    finally:
        pulumi.runtime.set_all_config({}, [])

    states = {}
    for typ, name, _inputs, state in mocks.created:
        states.setdefault((typ, name), state)
    inputs = {(typ, name): inp for typ, name, inp, _ in mocks.created}
    resources = [
        Resource(type=typ, name=name, inputs=_plain(inputs.get((typ, name), {})), parent=parent, urn=urn,
                 custom=custom, outputs=_plain(states.get((typ, name), {})),
                 ignore_changes=monitor.ignored.get(urn, ()))
        for urn, typ, name, parent, custom in monitor.registrations
    ]
    root_urn = built.get("urn")
    root = next((r for r in resources if r.urn == root_urn), None)
    return Recorded(resources=resources, outputs=monitor.registered_outputs.get(root_urn, {}),
                    component_outputs=dict(monitor.registered_outputs), calls=list(mocks.calls), root=root)
