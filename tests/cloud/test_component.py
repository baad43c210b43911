"""The components' shared shape (clusterctl.cloud.pulumi.component): every component takes ``(name, args, opts)`` with a
typed args class built by keyword, the same idea has the same field on every provider, and the stack
configuration is read once, in clusterctl.cloud.pulumi.program, never in a component."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re

import pulumi
import pytest

from clusterctl.cloud.pulumi import component, program
from clusterctl.cloud.stack.spec import cloud_spec
from tests.helpers import plan_of, shipped

PROVIDERS = ("aws", "gcp", "azure")
SHARED = {"NetworkArgs": "NetworkArgs", "NodeGroupArgs": "GpuNodeGroupArgs", "HeadNodesArgs": "HeadNodesArgs",
          "StorageArgs": "StorageArgs", "ConfigStoreArgs": "ConfigStoreArgs", "ClusterArgs": "ClusterArgs"}
"""component base args -> the provider module's args class of the same idea"""


def _components(module) -> list[type]:
    return [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, pulumi.ComponentResource)
            and c.__module__ == module.__name__]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_component_takes_name_typed_args_opts(provider):
    module = importlib.import_module(f"clusterctl.cloud.pulumi.{provider}")
    components = _components(module)
    assert len(components) >= 7
    for cls in components:
        params = inspect.signature(cls.__init__).parameters
        assert list(params) == ["self", "name", "args", "opts"], cls.__name__
        args_cls = getattr(module, params["args"].annotation)
        assert issubclass(args_cls, component.ComponentArgs), cls.__name__
        fields = {f.name: f for f in dataclasses.fields(args_cls)}
        assert all(f.kw_only for f in fields.values()), f"{args_cls.__name__}: every field by keyword"
        assert fields["settings"].type is module.Settings, f"{args_cls.__name__}: settings is the provider's Settings"
        with pytest.raises(TypeError):
            args_cls(*[None] * len(fields))  # positional arguments are refused


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_same_idea_has_the_same_args_on_every_provider(provider):
    module = importlib.import_module(f"clusterctl.cloud.pulumi.{provider}")
    for base, name in SHARED.items():
        args_cls = getattr(module, name)
        assert issubclass(args_cls, getattr(component, base)), f"{provider}.{name}"
        names = {f.name for f in dataclasses.fields(args_cls)}
        assert names >= {f.name for f in dataclasses.fields(getattr(component, base))}


def test_only_the_program_reads_the_stack_config():
    for name in (*PROVIDERS, "component"):
        source = inspect.getsource(importlib.import_module(f"clusterctl.cloud.pulumi.{name}"))
        assert not re.search(r"\bConfig\(|require_secret|get_secret", source), name
    source = inspect.getsource(program)
    assert source.count('pulumi.Config("clusterctl")') == 1


@pytest.mark.parametrize("provider,blueprint,config,expected", [
    ("aws", "aws-p5", {"clusterctl:keyName": "", "clusterctl:adminCidr": "198.51.100.0/24"},
     {"key_name": None, "admin_cidr": "198.51.100.0/24", "root_volume_gb": 512, "capacity_block": True}),
    ("gcp", "gcp-a3-mega", {"gcp:project": "p1", "clusterctl:sshUser": ""},
     {"project": "p1", "ssh_user": "clusterctl", "kms_key": None}),
    ("azure", "azure-nd-h100-v5", {"clusterctl:sshPublicKey": "ssh-ed25519 AAAA k", "clusterctl:vnetCidr": ""},
     {"ssh_public_key": "ssh-ed25519 AAAA k", "vnet_cidr": "10.20.0.0/16", "admin_username": "azureuser"}),
])
def test_read_config_gives_the_provider_settings_with_defaults(provider, blueprint, config, expected):
    spec = cloud_spec(plan_of(shipped(blueprint)))
    pulumi.runtime.set_all_config({**config, "clusterctl:mungeKey": "bXVuZ2U=", "clusterctl:slurmdbdPassword": "pw"},
                                  ["clusterctl:mungeKey", "clusterctl:slurmdbdPassword"])
    try:
        settings, secrets = program.read_config(spec)
    finally:
        pulumi.runtime.set_all_config({}, [])
    module = importlib.import_module(f"clusterctl.cloud.pulumi.{provider}")
    assert type(settings) is module.Settings
    assert {k: getattr(settings, k) for k in expected} == expected
    assert isinstance(secrets, component.StackSecrets) and secrets.slurmdbd_password is not None


def test_the_slurmdbd_password_is_required_with_accounting_hosts_and_on_azure_only_with_a_render(tmp_path):
    specs = {p: cloud_spec(plan_of(shipped(b))) for p, b in (("aws", "aws-p5"), ("azure", "azure-nd-h100-v5"))}
    assert all(s.accounting for s in specs.values())
    pulumi.runtime.set_all_config({"clusterctl:sshPublicKey": "ssh-ed25519 AAAA k", "clusterctl:mungeKey": "bXVuZ2U="},
                                  ["clusterctl:mungeKey"])
    try:
        with pytest.raises(pulumi.ConfigMissingError, match="slurmdbdPassword"):
            program.read_config(specs["aws"])
        with pytest.raises(pulumi.ConfigMissingError, match="slurmdbdPassword"):
            program.read_config(specs["azure"], render_dir=tmp_path)
        assert program.read_config(specs["azure"])[1].slurmdbd_password is None
    finally:
        pulumi.runtime.set_all_config({}, [])
