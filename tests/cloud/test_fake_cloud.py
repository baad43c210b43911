"""The fake provider API (clusterctl/rehearse/fake/cloud.py) as the rehearsal and the node-program tests use it:
one executable acting as aws, gcloud or az by its name, recording every call and answering in the shapes the
real CLIs document."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cloud.nodeprog import calls, env_with, fake_bin


@pytest.fixture
def cli(tmp_path):
    state = tmp_path / "cloud"
    state.mkdir()
    bin_dir = fake_bin(tmp_path, hostname=False)
    (state / "addresses.json").write_text(json.dumps({"gpu001": "10.0.1.11"}))

    def run(name: str, *args: str):
        return subprocess.run([str(bin_dir / name), *args], capture_output=True, text=True,
                              env=env_with(bin_dir, state), timeout=60)
    return run, state, tmp_path


def test_aws_instance_lifecycle_answers_and_records(cli):
    run, state, tmp = cli
    ud = tmp / "ud"
    ud.write_text("#cloud-config\n{}\n")
    tags = '[{"ResourceType":"instance","Tags":[{"Key":"clusterctl:hostname","Value":"gpu001"}]}]'
    r = run("aws", "ec2", "run-instances", "--launch-template", "LaunchTemplateId=lt-1,Version=$Latest", "--count", "1",
            "--user-data", f"file://{ud}", "--tag-specifications", tags, "--region", "us-east-2", "--output", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    inst = out["Instances"][0]
    assert set(out) == {"Groups", "Instances", "OwnerId", "ReservationId"}
    assert inst["PrivateIpAddress"] == "10.0.1.11" and inst["InstanceId"].startswith("i-")
    assert inst["State"] == {"Code": 0, "Name": "pending"}
    assert calls(state) == [{"cli": "aws", "argv": r.args[1:], "files": {str(ud): "#cloud-config\n{}\n"}}]
    (req,) = (state / "requests").iterdir()
    assert req.name == "000001-create-gpu001.json"
    assert json.loads(req.read_text()) == {"op": "create", "host": "gpu001", "cli": "aws", "address": "10.0.1.11",
                                           "seq": 1, "user_data": "#cloud-config\n{}\n"}
    found = json.loads(run("aws", "ec2", "describe-instances", "--filters", "Name=tag:clusterctl:hostname,Values=gpu001",
                           "Name=instance-state-name,Values=pending,running").stdout)
    assert [i["InstanceId"] for res in found["Reservations"] for i in res["Instances"]] == [inst["InstanceId"]]
    term = json.loads(run("aws", "ec2", "terminate-instances", "--instance-ids", inst["InstanceId"]).stdout)
    assert term["TerminatingInstances"][0]["CurrentState"]["Name"] == "shutting-down"
    assert sorted(p.name for p in (state / "requests").iterdir()) == ["000001-create-gpu001.json",
                                                                       "000002-delete-gpu001.json"]
    none = json.loads(run("aws", "ec2", "describe-instances", "--filters", "Name=tag:clusterctl:hostname,Values=gpu001",
                          "Name=instance-state-name,Values=pending,running").stdout)
    assert none == {"Reservations": []}


def test_aws_objects_secrets_and_failures(cli):
    run, state, tmp = cli
    r = run("aws", "s3", "cp", "s3://b/clusterctl/config.tar.gz", str(tmp / "x"))
    assert r.returncode == 1 and "does not exist" in r.stderr
    (state / "objects/b/clusterctl").mkdir(parents=True)
    (state / "objects/b/clusterctl/config.tar.gz").write_bytes(b"tgz")
    assert run("aws", "s3", "cp", "s3://b/clusterctl/config.tar.gz", str(tmp / "x")).returncode == 0
    assert (tmp / "x").read_bytes() == b"tgz"
    (state / "secrets.json").write_text(json.dumps({"/m": "v1"}))
    r = run("aws", "ssm", "get-parameter", "--name", "/m", "--with-decryption", "--query", "Parameter.Value",
            "--output", "text")
    assert r.stdout == "v1\n"
    assert run("aws", "ssm", "get-parameter", "--name", "/none").returncode == 254
    (state / "failures.json").write_text(json.dumps({"gpu001": "no capacity"}))
    r = run("aws", "ec2", "run-instances", "--tag-specifications",
            '[{"ResourceType":"instance","Tags":[{"Key":"clusterctl:hostname","Value":"gpu001"}]}]')
    assert r.returncode == 254 and "InsufficientInstanceCapacity" in r.stderr and "no capacity" in r.stderr
    assert run("aws", "ec2", "create-vpc").returncode == 252


def test_gcloud_and_az(cli):
    run, state, tmp = cli
    ud = tmp / "ud"
    ud.write_text("#cloud-config\n")
    r = run("gcloud", "compute", "instances", "create", "gpu002", "--project", "p", "--zone", "z",
            "--source-instance-template", "t", "--metadata-from-file", f"user-data={ud}", "--format", "json")
    (inst,) = json.loads(r.stdout)
    assert inst["name"] == "gpu002" and inst["networkInterfaces"][0]["networkIP"].startswith("10.255.")
    assert calls(state)[-1]["files"] == {str(ud): "#cloud-config\n"}
    r = run("gcloud", "compute", "instances", "delete", "gpu002", "--project", "p", "--zone", "z", "--quiet")
    assert r.returncode == 0 and r.stdout == "" and "Deleted [" in r.stderr
    assert run("gcloud", "compute", "instances", "delete", "gpu002", "--project", "p", "--zone", "z",
               "--quiet").returncode == 1
    r = run("az", "vm", "create", "--resource-group", "rg", "--name", "gpu001", "--custom-data", str(ud))
    vm = json.loads(r.stdout)
    assert vm["privateIpAddress"] == "10.0.1.11" and vm["powerState"] == "VM running"
    assert set(vm) >= {"id", "location", "macAddress", "powerState", "privateIpAddress", "publicIpAddress",
                       "resourceGroup", "zones"}
    assert run("az", "vm", "delete", "--resource-group", "rg", "--name", "gpu001", "--yes").stdout == ""
    ops = sorted(p.name[7:] for p in (state / "requests").iterdir())
    assert ops == ["create-gpu001.json", "create-gpu002.json", "delete-gpu001.json", "delete-gpu002.json"]
    assert [c["cli"] for c in calls(state)] == ["gcloud"] * 3 + ["az"] * 2


def test_refuses_other_names(tmp_path):
    from clusterctl.rehearse.fake import cloud as fake_cloud

    assert fake_cloud.main(["/usr/bin/kubectl", "get"]) == 2
