"""Address sanity (issue 24, docs/security.md "Addresses"): an address a blueprint names is never one the plan
gives to a host; IPv6 pools get the private-range check IPv4 pools get, and no pool may be the whole internet;
the admin CIDR that opens SSH is narrow, in validate and in the Pulumi programs alike; slurmdbd never sends the
database password to the site's server without TLS.

Each case goes through the real command line: validate exits 1 (error findings, docs/cli.md "Exit codes") with
the finding at the blueprint line, and render writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterctl.cloud.pulumi import aws as cloud_aws
from clusterctl.cloud.pulumi import azure as cloud_azure
from clusterctl.cloud.pulumi import gcp as cloud_gcp
from clusterctl.targets import RenderError, ansible
from tests.cloud.mocks import run_program
from tests.cloud.test_aws import SECRETS as AWS_SECRETS
from tests.cloud.test_aws import spec_of as aws_spec
from tests.helpers import cli, lab, plan_of, shipped, to_yaml

# lab-2node: inband 10.10.0.0/24 with 16 reserved addresses, so the first host address is 10.10.0.17: gpu01,
# then gpu02 (10.10.0.18), head01 (10.10.0.19); bmc 10.11.0.0/24 the same way
GPU01_INBAND = "10.10.0.17"


def write(tmp_path: Path, data: dict, name: str = "bp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(to_yaml(data))
    return path


def line_with(path: Path, text: str) -> int:
    """The line of the written blueprint that holds ``text`` (where a finding must point)."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def suppression_refused(tmp_path: Path, data: dict, code: str) -> None:
    """A blueprint entry suppressing the unsuppressible ``code`` is itself an exit-2 error at the entry."""
    data = {**data, "validation": {"suppress": [{"rule": code, "reason": "we know"}]}}
    tmp_path.mkdir()
    path = write(tmp_path, data)
    out = cli("validate", str(path))
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert f"{path}:{line_with(path, f'rule: {code}')}:" in text and "cannot be suppressed" in text


def refused(tmp_path: Path, data: dict, code: str, written: str, *extra: str):
    """validate exits 1 with ``code`` at the line that holds ``written``; render writes nothing."""
    path = write(tmp_path, data)
    out = cli("validate", str(path))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert f"error[{code}]" in text
    assert f"{path}:{line_with(path, written)}:" in text
    for part in extra:
        assert part in text
    rendered = cli("render", str(path), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 1, rendered.stdout + rendered.stderr
    assert not (tmp_path / "out").exists()
    return text


# --- 1. named addresses against the plan's allocations ------------------------------------------------------------


def test_an_nfs_server_at_a_compute_nodes_address_is_refused_naming_the_node(tmp_path):
    data = lab()
    data["storage"][0]["export"] = f"{GPU01_INBAND}:/export/home"
    out = refused(tmp_path, data, "ADDR006", f"{GPU01_INBAND}:/export/home", "host gpu01 (node group gpu",
                  "addressing.inband (10.10.0.0/24)")
    assert "storage tier home's NFS server 10.10.0.17 is host gpu01" in out


@pytest.mark.parametrize("where,value,written,holder", [
    ("lustre", "10.10.0.18@tcp:/lustre", "10.10.0.18@tcp", "host gpu02"),
    ("object", "http://10.11.0.19:9000", "10.11.0.19:9000", "host head01 (node group head, BMC NIC)"),
    ("database", "10.10.0.19", "database_host: 10.10.0.19", "host head01"),
    ("time", "10.10.0.17", "- 10.10.0.17", "host gpu01"),
    ("nfs-broadcast", "10.10.0.255:/export/home", "10.10.0.255:/export/home", "the broadcast address"),
    ("nfs-network", "10.11.0.0:/export/home", "10.11.0.0:/export/home", "the network address"),
])
def test_every_address_field_is_checked_against_the_allocations(tmp_path, where, value, written, holder):
    data = lab()
    data["slurm"]["database_ca"] = "/etc/ssl/certs/site-db-ca.pem"
    if where == "lustre":
        data["storage"].append({"name": "lustre", "tier": "parallel", "filesystem": "lustre", "mount": "/lustre",
                                "capacity_tb": 100, "read_gb_per_s": 10, "write_gb_per_s": 10, "servers": value})
    elif where == "object":
        data["storage"].append({"name": "objects", "tier": "object", "endpoint": value, "mount": "/objects",
                                "capacity_tb": 100,
                                "read_gb_per_s": 10, "write_gb_per_s": 10})
    elif where == "database":
        data["slurm"]["database_host"] = value
    elif where == "time":
        data["site"]["time_servers"] = [value]
    else:
        data["storage"][0]["export"] = value
    refused(tmp_path, data, "ADDR006", written, holder)


def test_a_server_named_by_host_name_or_outside_the_allocations_is_accepted(tmp_path):
    data = lab()
    data["storage"][0]["export"] = "head01:/export/home"  # the plan's own host, by name: the nfs_server role serves it
    data["storage"].append({"name": "lustre", "tier": "parallel", "filesystem": "lustre", "mount": "/lustre",
                            "capacity_tb": 100, "read_gb_per_s": 10, "write_gb_per_s": 10,
                            "servers": "10.10.0.5@tcp,10.10.0.200@tcp:/lustre"})  # reserved block; after the hosts
    data["site"]["time_servers"] = ["192.0.2.10"]  # outside every pool
    path = write(tmp_path, data)
    out = cli("validate", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ADDR006" not in out.stdout + out.stderr


# --- 2. IPv6 as IPv4: private expected, the world refused -----------------------------------------------------------


@pytest.mark.parametrize("cidr", ["::/0", "2000::/3", "0.0.0.0/1"])
def test_a_world_pool_is_refused_and_cannot_be_suppressed(tmp_path, cidr):
    data = lab()
    data["addressing"] = {"inband": {"cidr": cidr, "role": "inband"}}
    suppression_refused(tmp_path / "entry", data, "ADDR005")
    refused(tmp_path, data, "ADDR005", f"cidr: {cidr}", f"addressing.inband is {cidr}")
    path = tmp_path / "bp.yaml"
    out = cli("render", str(path), "-o", str(tmp_path / "out2"), "--suppress", "ADDR005")
    assert out.returncode in (1, 2), out.stdout + out.stderr
    assert not (tmp_path / "out2").exists()  # no `/export/home ::/0(rw,...)`, no `allow ::/0`


def test_a_public_ipv6_pool_is_refused_as_an_ipv4_one_is(tmp_path):
    data = lab()
    data["addressing"]["inband"]["cidr"] = "2001:4860::/64"
    path = write(tmp_path, data)
    out = cli("validate", str(path))
    text = out.stdout + out.stderr
    assert "error[ADDR004]" in text and "a public (not private) IPv6 range" in text
    assert f"{path}:{line_with(path, '2001:4860::/64')}:" in text


def test_an_ipv6_ula_pool_renders_its_own_prefix_as_the_export_and_chrony_clients(tmp_path):
    data = lab()
    data["addressing"]["inband"]["cidr"] = "fd00:10::/64"
    path = write(tmp_path, data)
    out = cli("render", str(path), "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    head = yaml.safe_load((tmp_path / "out/ansible/group_vars/nfs_servers.yml").read_text())
    assert [e["clients"] for e in head["nfs_server_exports"]] == ["fd00:10::/64"]
    controllers = yaml.safe_load((tmp_path / "out/ansible/group_vars/slurm_controllers.yml").read_text())
    assert controllers["common_chrony_allow"] == ["fd00:10::/64", "10.11.0.0/24", "10.12.0.0/24"]  # + BMC, mgmt


# --- 3. the admin CIDR: narrow in validate and in the Pulumi programs ----------------------------------------------


@pytest.mark.parametrize("cidr", ["0.0.0.0/1", "128.0.0.0/1", "0.0.0.0/0", "::/0", "198.0.0.0/15", "2001:db8::/32"])
def test_a_wide_admin_cidr_is_refused_by_validate(tmp_path, cidr):
    data = shipped("aws-p5")
    data["cloud"]["admin_cidr"] = cidr
    suppression_refused(tmp_path / "entry", data, "CLOUD005")
    refused(tmp_path, data, "CLOUD005", f"admin_cidr: {cidr}", "reach SSH")


@pytest.mark.parametrize("cidr", ["203.0.113.0/24", "198.51.0.0/16", "10.0.0.0/8", "2001:db8:1::/48", "0.0.0.0/32"])
def test_a_narrow_or_private_admin_cidr_is_accepted(tmp_path, cidr):
    data = shipped("aws-p5")
    data["cloud"]["admin_cidr"] = cidr
    out = cli("validate", str(write(tmp_path, data)))
    assert out.returncode == 0 and "CLOUD005" not in out.stdout + out.stderr, out.stdout + out.stderr


@pytest.mark.parametrize("cidr", ["0.0.0.0/1", "198.0.0.0/15", "2001:db8::/32"])
def test_every_pulumi_program_refuses_a_wide_admin_cidr(cidr):
    with pytest.raises(ValueError, match="opens SSH to the internet"):
        cloud_aws.Settings(admin_cidr=cidr)
    with pytest.raises(ValueError, match="opens SSH to the internet"):
        cloud_gcp.Settings(admin_cidr=cidr)
    with pytest.raises(ValueError, match="opens SSH to the internet"):
        cloud_azure.Settings(admin_cidr=cidr, ssh_public_key="ssh-ed25519 AAAA ops", storage_account="acct",
                             config_account="cfg", key_vault="kv")
    assert cloud_aws.Settings(admin_cidr="198.51.0.0/16").admin_cidr == "198.51.0.0/16"


def test_the_stack_configuration_cannot_widen_the_admin_cidr():
    with pytest.raises(Exception, match="0.0.0.0/1 opens SSH to the internet"):
        run_program(aws_spec(), config={"clusterctl:keyName": "ops", "clusterctl:adminCidr": "0.0.0.0/1"},
                    secrets=AWS_SECRETS)


# --- 4. the site's accounting database: never without TLS ----------------------------------------------------------


def test_an_external_database_host_without_tls_is_refused(tmp_path):
    data = lab()
    data["slurm"]["database_host"] = "db.example.org"
    refused(tmp_path, data, "SLURM010", "database_host: db.example.org", "without TLS")


def test_an_external_database_host_with_its_ca_renders_tls_settings(tmp_path):
    data = lab()
    data["slurm"]["database_host"] = "db.example.org"
    data["slurm"]["database_ca"] = "/etc/ssl/certs/site-db-ca.pem"
    out = cli("render", str(write(tmp_path, data)), "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = (tmp_path / "out/slurm/slurmdbd.conf.j2").read_text().splitlines()
    assert "StorageHost=db.example.org" in lines
    assert "StorageParameters=SSL_CA=/etc/ssl/certs/site-db-ca.pem" in lines


def test_every_pulumi_program_refuses_a_world_cluster_network():
    # the programs admit all traffic from the cluster's own ranges: from the stack configuration too, never the world
    with pytest.raises(ValueError, match="clusterctl:vpcCidr 0.0.0.0/1 is the whole internet"):
        cloud_aws.Settings(admin_cidr="203.0.113.0/24", vpc_cidr="0.0.0.0/1")
    with pytest.raises(ValueError, match="clusterctl:primaryCidr ::/0 is the whole internet"):
        cloud_gcp.Settings(admin_cidr="203.0.113.0/24", primary_cidr="::/0")
    with pytest.raises(ValueError, match="clusterctl:vnetCidr 0.0.0.0/0 is the whole internet"):
        cloud_azure.Settings(admin_cidr="203.0.113.0/24", ssh_public_key="ssh-ed25519 AAAA ops", storage_account="acct",
                             config_account="cfg", key_vault="kv", vnet_cidr="0.0.0.0/0")


@pytest.mark.parametrize("cidr", ["::/0", "0.0.0.0/1"])
def test_the_ansible_target_never_writes_a_world_range_even_unjudged(cidr):
    # behind the rules' back: the NFS export clients and chrony's allow come only from checked in-band pools
    data = lab()
    data["addressing"] = {"inband": {"cidr": cidr, "role": "inband"}}
    with pytest.raises(RenderError, match=f"addressing.inband {cidr} is the whole internet") as caught:
        ansible.render(plan_of(data))
    assert caught.value.path == ("addressing", "inband", "cidr")
