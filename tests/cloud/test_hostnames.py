"""Every cloud instance comes up with its blueprint host name (slurmd finds its NodeName by it): AWS through
cloud-init user data and the Name tag, GCP through the instance name, Azure through the computer name; host
names a provider cannot take are refused (rule CLOUD009, the spec, the program's cluster.json)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from clusterctl.cloud.stack.hostname import CLOUD_CONFIG_HEADER, aws_user_data
from clusterctl.cloud.stack.spec import CloudSpec, cloud_spec
from clusterctl.targets import RenderError
from clusterctl.targets.pulumi import render as render_pulumi
from tests.cloud import test_aws, test_azure, test_gcp
from tests.cloud.mocks import run_program
from tests.helpers import plan_of, run, shipped

BLUEPRINTS = {"aws": "aws-p5", "gcp": "gcp-a3-mega", "azure": "azure-nd-h100-v5"}
INSTANCE = {"aws": test_aws.INSTANCE, "gcp": test_gcp.INSTANCE, "azure": test_azure.VM}
CONFIG = {"aws": (test_aws.CONFIG, test_aws.SECRETS), "gcp": (test_gcp.CONFIG, test_gcp.SECRETS),
          "azure": (test_azure.CONFIG, test_azure.SECRETS)}


@pytest.fixture(scope="module", params=sorted(BLUEPRINTS))
def deployed(request):
    provider = request.param
    spec = cloud_spec(plan_of(shipped(BLUEPRINTS[provider])))
    config, secrets = CONFIG[provider]
    return provider, spec, run_program(spec, config=config, secrets=secrets)


def _hosts(spec: CloudSpec) -> dict[str, str]:
    """host -> role of every cloud host (GPU, head and login)"""
    return {h: g.role for g in spec.groups for h in g.hostnames}


def test_the_shipped_cloud_blueprints_have_gpu_and_head_hosts(deployed):
    _, spec, _ = deployed
    assert {"compute", "head"} <= set(_hosts(spec).values())  # and login on gcp and azure
    assert spec.provider == "aws" or "login" in _hosts(spec).values()


def test_every_instance_carries_its_exact_blueprint_host_name(deployed):
    provider, spec, rec = deployed
    instances = rec.of_type(INSTANCE[provider])
    named = {}
    for inst in instances:
        if provider == "aws":
            data = inst.inputs["userData"]
            assert data.startswith(CLOUD_CONFIG_HEADER)
            config = yaml.safe_load(data)
            host = config["hostname"]
            assert config == {"hostname": host, "fqdn": host, "prefer_fqdn_over_hostname": False,
                              "preserve_hostname": False, "manage_etc_hosts": "localhost"}
            assert inst.inputs["tags"]["Name"] == host == inst.name
        elif provider == "gcp":
            host = inst.inputs["name"]
            assert "hostname" not in inst.inputs  # a custom hostname must be an FQDN; the name is the host name
        else:
            host = inst.inputs["osProfile"]["computerName"]
            assert inst.inputs["vmName"] == host
        named[host] = inst
    assert sorted(named) == sorted(_hosts(spec)) and len(instances) == len(named)


def test_aws_user_data_is_emitted_json_which_is_yaml():
    text = aws_user_data("gpu0001")
    assert text == (
        "#cloud-config\n"
        "{\n"
        ' "hostname": "gpu0001",\n'
        ' "fqdn": "gpu0001",\n'
        ' "prefer_fqdn_over_hostname": false,\n'
        ' "preserve_hostname": false,\n'
        ' "manage_etc_hosts": "localhost"\n'
        "}\n")
    # cloud-init reads it with yaml.safe_load: every key with its type
    assert yaml.safe_load(text) == {"hostname": "gpu0001", "fqdn": "gpu0001", "prefer_fqdn_over_hostname": False,
                                    "preserve_hostname": False, "manage_etc_hosts": "localhost"}
    # a name YAML would read as another type stays a string
    assert yaml.safe_load(aws_user_data("0123"))["hostname"] == "0123"
    assert yaml.safe_load(aws_user_data("1e10"))["fqdn"] == "1e10"


@pytest.mark.parametrize("host", ["gpu01\nruncmd: [reboot]", "GPU01", "gpu_01", "gpu01.example.com", "-gpu", "",
                                  "g" * 64])
def test_aws_user_data_refuses_names_that_are_not_labels(host):
    with pytest.raises(ValueError, match="RFC 1123"):
        aws_user_data(host)


def _renamed(provider: str, group: str, hostnames: str) -> dict:
    data = shipped(BLUEPRINTS[provider])
    g = next(g for g in data["node_groups"] if g["name"] == group)
    g["hostnames"] = hostnames
    return data


@pytest.mark.parametrize("provider,group,hostnames", [
    ("aws", "gpu", "GPU[001-016]"),            # upper case: only a NAME002 warning on bare metal
    ("gcp", "login", "1login"),               # a Compute Engine name starts with a letter
    ("gcp", "a3mega", "A3mega-[001-032]"),
    ("azure", "login", "Login01"),
])
def test_rule_cloud009_refuses_host_names_an_instance_cannot_take(provider, group, hostnames):
    data = _renamed(provider, group, hostnames)
    result = run(data)
    found = [f for f in result.findings if f.code == "CLOUD009"]
    assert len(found) == 1 and found[0].severity.name == "ERROR"
    assert found[0].path == ("node_groups", next(i for i, g in enumerate(data["node_groups"])
                                                 if g["name"] == group), "hostnames")
    with pytest.raises(RenderError, match="not a lower-case RFC 1123 label|start with a letter"):
        render_pulumi(plan_of(data))


def test_rule_cloud009_quiet_on_the_shipped_blueprints():
    for name in BLUEPRINTS.values():
        assert not [f for f in run(shipped(name)).findings if f.code == "CLOUD009"]
    assert not [f for f in run(shipped("lab-2node")).findings if f.code == "CLOUD009"]  # bare metal


def test_a_program_refuses_an_edited_cluster_json():
    spec = cloud_spec(plan_of(shipped("aws-p5")))
    group = dataclasses.replace(spec.groups[0], hostnames=("gpu01\nruncmd: [reboot]",))
    text = spec.to_json().replace(spec.groups[0].hostnames[0], "gpu01\\nruncmd: [reboot]", 1)
    assert "runcmd" in text
    with pytest.raises(ValueError, match="RFC 1123"):
        CloudSpec.from_json(text)
    with pytest.raises(ValueError, match="RFC 1123"):
        dataclasses.replace(spec, groups=(group, *spec.groups[1:]))
