"""clusterctl-power-save (clusterctl/cloud/node/power_save.py) run as the real program, installed as the role
slurm_power_save installs it (the three files in ``usr/local/sbin`` of a temporary root, the symlinks
clusterctl-resume / -suspend / -resume-fail), against the fake provider API (aws/gcloud/az on PATH).

Stand-ins, and why: ``scontrol`` is a wrapper that runs the real scontrol for ``show hostnames`` (a local
operation) and records ``update`` (no slurmctld runs in a unit test; the rehearsal's elastic cycle runs the
real one). What is not tested here: a real cloud API (the argv are checked against the CLIs' documented forms).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from clusterctl.cloud.node import cloud_config as generator
from clusterctl.targets.cloud_node import PROGRAMS
from tests.cloud.nodeprog import NODE, calls, fake_bin
from tests.conftest import require_tool

MUNGE = "bXVuZ2Uta2V5LXZhbHVlLXNlY3JldC0xMjM0NTY3ODkw"

FAKE_SCONTROL = """#!/bin/sh
# show hostnames: the real scontrol (local; a minimal slurm.conf beside this script, so it never looks for this
# machine's configuration or a DNS SRV record); update: recorded (no slurmctld in a unit test)
if [ "$1" = show ]; then SLURM_CONF="$(dirname "$0")/slurm.conf" exec {real} "$@"; fi
printf '%s\\n' "$*" >> "$(dirname "$0")/scontrol.calls"
"""

BOOT = {"version": 1, "provider": "aws", "region": "us-east-2", "config_url": "s3://bkt/clusterctl/config.tar.gz",
        "secrets": {"vault_munge_key": {"aws-ssm": "/clusterctl/c1/munge-key"}}, "timeout_s": 1800}
GROUPS = {
    "aws": {"launch_template_id": "lt-0abc", "hosted_zone_id": "Z0123", "dns_domain": "c1.internal"},
    "gcp": {"project": "p-1", "zone": "us-central1-a", "instance_template": "projects/p-1/global/instanceTemplates/gpu"},
    "azure": {"subscription_id": "sub-1", "resource_group": "rg-c1", "location": "eastus", "vm_size": "Standard_ND96isr_H100_v5",
              "image": "microsoft-dsvm:ubuntu-hpc:2204:latest", "subnet_id": "/subscriptions/sub-1/x/subnets/compute",
              "availability_set_id": "", "proximity_placement_group_id": "/subscriptions/sub-1/x/ppg",
              "identity_id": "/subscriptions/sub-1/x/userAssignedIdentities/compute", "admin_username": "azureuser",
              "ssh_public_key": "ssh-ed25519 AAAAC3Nza test", "os_disk_gb": 256},
}


def stack(provider: str) -> dict:
    return {"version": 1, "cluster": "c1", "provider": provider, "region": "us-east-2", "zone": "us-east-2a",
            "bootstrap": {**BOOT, "provider": provider},
            "elastic": {"gpu": {"hostlist": "gpu[001-004]", "instance_type": "p5.48xlarge", provider: GROUPS[provider]}}}


@pytest.fixture
def controller(tmp_path):
    """(run, root, state, bin_dir): run(action, hostlist, provider) -> CompletedProcess"""
    scontrol = require_tool("scontrol", hint="Debian slurm-client; `bash scripts/test` installs it")
    root, state = tmp_path / "root", tmp_path / "cloud"
    sbin = root / "usr/local/sbin"
    sbin.mkdir(parents=True)
    (root / "etc/clusterctl").mkdir(parents=True)
    state.mkdir()
    for path, module in PROGRAMS.items():
        shutil.copy(NODE / module, sbin / os.path.basename(path))
    for name in ("clusterctl-resume", "clusterctl-suspend", "clusterctl-resume-fail"):
        (sbin / name).symlink_to("clusterctl-power-save")
    bin_dir = fake_bin(tmp_path, hostname=False)
    (bin_dir / "scontrol").write_text(FAKE_SCONTROL.format(real=scontrol))
    (bin_dir / "scontrol").chmod(0o755)
    (bin_dir / "slurm.conf").write_text("ClusterName=c1\nSlurmctldHost=head01\n")
    (state / "secrets.json").write_text(json.dumps({"/clusterctl/c1/munge-key": MUNGE}))
    (state / "addresses.json").write_text(json.dumps({"gpu001": "10.0.1.11", "gpu002": "10.0.1.12"}))
    (root / "etc/clusterctl/bootstrap.json").write_text(json.dumps({**BOOT, "host": "head01",
                                                                   "identity": "cid-head"}))

    def run(action: str, hostlist: str, provider: str = "aws"):
        (root / "etc/clusterctl/stack.json").write_text(json.dumps(stack(provider)))
        env = {"CLUSTERCTL_POWER_SAVE_ROOT": str(root), "CLUSTERCTL_FAKE_CLOUD_DIR": str(state),
               "CLUSTERCTL_POWER_SAVE_PATH": f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        return subprocess.run([str(sbin / f"clusterctl-{action}"), hostlist], capture_output=True, text=True,
                              env=env, timeout=120)
    return run, root, state, bin_dir


def of(state, host: str) -> list[list[str]]:
    """the recorded argv of the calls about ``host`` (in order)"""
    return [c["argv"] for c in calls(state) if host in json.dumps(c["argv"]) or
            any(host in t for t in c["files"].values())]


def log_text(root) -> str:
    return (root / "var/log/slurm/clusterctl-power-save.log").read_text()


def scontrol_calls(bin_dir) -> list[str]:
    p = bin_dir / "scontrol.calls"
    return p.read_text().splitlines() if p.exists() else []


def check_user_data(text: str, provider: str, host: str) -> None:
    assert text.startswith("#cloud-config\n") and len(text.encode()) <= generator.LIMITS[provider]
    cfg = yaml.safe_load(text)  # as cloud-init reads it
    assert cfg["hostname"] == cfg["fqdn"] == host and cfg["runcmd"] == [["/usr/local/sbin/clusterctl-bootstrap"]]
    program, settings = cfg["write_files"]
    assert program["path"] == "/usr/local/sbin/clusterctl-bootstrap" and program["encoding"] == "gz+b64"
    assert json.loads(settings["content"]) == {**BOOT, "provider": provider, "host": host}
    assert MUNGE not in text


def test_aws_resume_creates_the_instance_from_the_launch_template_and_its_dns_record(controller):
    run, root, state, bin_dir = controller
    r = run("resume", "gpu[001-002]")
    assert r.returncode == 0, log_text(root)
    assert scontrol_calls(bin_dir) == []
    for host, ip in (("gpu001", "10.0.1.11"), ("gpu002", "10.0.1.12")):
        got = of(state, host)
        assert got[0] == ["ec2", "describe-instances", "--filters", f"Name=tag:clusterctl:hostname,Values={host}",
                          "Name=tag:clusterctl:cluster,Values=c1", "Name=instance-state-name,Values=pending,running",
                          "--region", "us-east-2", "--output", "json"]
        create = got[1]
        ud = create[create.index("--user-data") + 1]
        assert create == ["ec2", "run-instances", "--launch-template", "LaunchTemplateId=lt-0abc,Version=$Latest",
                          "--count", "1", "--user-data", ud, "--tag-specifications",
                          '[{"ResourceType":"instance","Tags":[{"Key":"Name","Value":"%s"},{"Key":"clusterctl:hostname",'
                          '"Value":"%s"},{"Key":"clusterctl:cluster","Value":"c1"}]}]' % (host, host),
                          "--region", "us-east-2", "--output", "json"]
        assert ud.startswith("file://") and not os.path.exists(ud[7:])  # a temporary file, removed after
        call = next(c for c in calls(state) if c["argv"] == create)
        check_user_data(call["files"][ud[7:]], "aws", host)
        dns = got[2]
        batch_path = dns[dns.index("--change-batch") + 1]
        assert dns == ["route53", "change-resource-record-sets", "--hosted-zone-id", "Z0123", "--change-batch",
                       batch_path, "--output", "json"]
        batch = json.loads(next(c for c in calls(state) if c["argv"] == dns)["files"][batch_path[7:]])
        assert batch["Changes"] == [{"Action": "UPSERT", "ResourceRecordSet": {
            "Name": f"{host}.c1.internal.", "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": ip}]}}]
        assert len(got) == 3
    requests = sorted(p.name for p in (state / "requests").iterdir())
    assert sorted(n[7:] for n in requests) == ["create-gpu001.json", "create-gpu002.json"]
    assert MUNGE not in log_text(root)


def test_aws_resume_replaces_an_instance_that_booted_before_the_request(controller):
    """slurmctld ignores a powering-up node whose boot time precedes the resume request: a running instance of
    the host is terminated and a new one created (a pending one would be reused)."""
    run, root, state, _ = controller
    assert run("resume", "gpu001").returncode == 0
    first = json.loads((state / "instances.json").read_text())
    assert run("resume", "gpu001").returncode == 0  # slurmctld ran it again for a node whose instance runs
    assert [c["argv"][:2] for c in calls(state)] == [
        ["ec2", "describe-instances"], ["ec2", "run-instances"], ["route53", "change-resource-record-sets"],
        ["ec2", "describe-instances"], ["ec2", "terminate-instances"], ["ec2", "run-instances"],
        ["route53", "change-resource-record-sets"]]
    terminated = next(c["argv"] for c in calls(state) if c["argv"][:2] == ["ec2", "terminate-instances"])
    assert terminated[3:4] == list(first)


def test_aws_resume_reuses_an_instance_still_pending(controller):
    run, root, state, _ = controller
    (state / "pending.json").write_text('["gpu001"]')
    assert run("resume", "gpu001").returncode == 0
    assert run("resume", "gpu001").returncode == 0  # slurmctld restarted and ran it again
    assert [a[:2] for a in of(state, "gpu001")] == [
        ["ec2", "describe-instances"], ["ec2", "run-instances"], ["route53", "change-resource-record-sets"],
        ["ec2", "describe-instances"], ["route53", "change-resource-record-sets"]]


def test_aws_suspend_terminates_by_tag_and_deletes_the_record(controller):
    run, root, state, _ = controller
    assert run("resume", "gpu001").returncode == 0
    iid = json.loads((state / "instances.json").read_text()).popitem()[0]
    n = len(calls(state))
    r = run("suspend", "gpu001")
    assert r.returncode == 0, log_text(root)
    got = [c["argv"] for c in calls(state)[n:]]
    assert got[0][:2] == ["ec2", "describe-instances"]
    assert got[1] == ["ec2", "terminate-instances", "--instance-ids", iid, "--region", "us-east-2", "--output", "json"]
    batch = json.loads(calls(state)[n + 2]["files"][got[2][got[2].index("--change-batch") + 1][7:]])
    assert batch["Changes"][0]["Action"] == "DELETE"
    assert batch["Changes"][0]["ResourceRecordSet"]["ResourceRecords"] == [{"Value": "10.0.1.11"}]
    assert sorted(p.name[7:] for p in (state / "requests").iterdir()) == ["create-gpu001.json", "delete-gpu001.json"]
    # nothing left to suspend: a second suspend only looks
    n = len(calls(state))
    assert run("suspend", "gpu001").returncode == 0
    assert [c["argv"][:2] for c in calls(state)[n:]] == [["ec2", "describe-instances"]]


def test_gcp_resume_and_suspend(controller):
    run, root, state, _ = controller
    assert run("resume", "gpu003", "gcp").returncode == 0, log_text(root)
    (create,) = [c for c in calls(state)]
    f = create["argv"][create["argv"].index("--metadata-from-file") + 1]
    assert create["argv"] == ["compute", "instances", "create", "gpu003", "--project", "p-1", "--zone", "us-central1-a",
                              "--source-instance-template", "projects/p-1/global/instanceTemplates/gpu",
                              "--metadata-from-file", f, "--format", "json"]
    assert f.startswith("user-data=")
    check_user_data(create["files"][f[len("user-data="):]], "gcp", "gpu003")
    assert run("suspend", "gpu003", "gcp").returncode == 0
    assert calls(state)[-1]["argv"] == ["compute", "instances", "delete", "gpu003", "--project", "p-1", "--zone",
                                        "us-central1-a", "--quiet"]


def test_gcp_resume_recreates_a_vm_that_booted_before_the_request(controller):
    run, root, state, _ = controller
    assert run("resume", "gpu003", "gcp").returncode == 0, log_text(root)
    assert run("resume", "gpu003", "gcp").returncode == 0, log_text(root)  # the VM exists: deleted, created again
    assert [c["argv"][:3] for c in calls(state)] == [["compute", "instances", "create"]] * 2 + [
        ["compute", "instances", "delete"], ["compute", "instances", "create"]]
    assert "already exists (booted before this resume)" in log_text(root)


def test_azure_resume_and_suspend(controller):
    run, root, state, _ = controller
    assert run("resume", "gpu004", "azure").returncode == 0, log_text(root)
    login, create = calls(state)
    assert login["argv"] == ["login", "--identity", "--output", "none", "--client-id", "cid-head"]
    a = create["argv"]
    key, custom = a[a.index("--ssh-key-values") + 1], a[a.index("--custom-data") + 1]
    assert a == ["vm", "create", "--subscription", "sub-1", "--resource-group", "rg-c1", "--name", "gpu004",
                 "--computer-name", "gpu004", "--location", "eastus", "--size", "Standard_ND96isr_H100_v5",
                 "--image", "microsoft-dsvm:ubuntu-hpc:2204:latest", "--subnet", "/subscriptions/sub-1/x/subnets/compute",
                 "--assign-identity", "/subscriptions/sub-1/x/userAssignedIdentities/compute",
                 "--accelerated-networking", "true", "--public-ip-address", "", "--nsg", "",
                 "--nic-delete-option", "Delete", "--os-disk-delete-option", "Delete", "--os-disk-size-gb", "256",
                 "--admin-username", "azureuser", "--authentication-type", "ssh", "--ssh-key-values", key,
                 "--custom-data", custom, "--tags", "clusterctl:hostname=gpu004", "clusterctl:cluster=c1",
                 "--ppg", "/subscriptions/sub-1/x/ppg", "--output", "json"]
    assert create["files"][key] == "ssh-ed25519 AAAAC3Nza test\n"
    check_user_data(create["files"][custom], "azure", "gpu004")
    assert not os.path.exists(key) and not os.path.exists(custom)
    assert run("suspend", "gpu004", "azure").returncode == 0
    assert calls(state)[-1]["argv"] == ["vm", "delete", "--subscription", "sub-1", "--resource-group", "rg-c1",
                                        "--name", "gpu004", "--yes"]


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_a_failed_create_marks_only_that_node_and_the_others_come_up(controller, provider):
    run, root, state, bin_dir = controller
    (state / "failures.json").write_text(json.dumps({"gpu002": "no capacity in us-east-2a"}))
    r = run("resume", "gpu[001-002]", provider)
    assert r.returncode == 1
    (line,) = scontrol_calls(bin_dir)
    assert line.startswith("update NodeName=gpu002 State=POWER_DOWN_FORCE Reason=clusterctl: resume failed: ")
    assert "no capacity" in line
    assert sorted(p.name[7:] for p in (state / "requests").iterdir()) == ["create-gpu001.json"]
    assert "gpu002: resume failed" in log_text(root) and "gpu001: resume ok" in log_text(root)


def test_hosts_of_no_elastic_group_are_refused(controller):
    run, root, state, bin_dir = controller
    r = run("resume", "head01")
    assert r.returncode == 1 and calls(state) == []
    assert scontrol_calls(bin_dir)[0].startswith("update NodeName=head01 State=POWER_DOWN_FORCE")
    assert "head01: refused: in no elastic group" in log_text(root)


def test_resume_fail_deletes_what_was_created(controller):
    run, root, state, _ = controller
    assert run("resume", "gpu001", "gcp").returncode == 0
    assert run("resume-fail", "gpu001", "gcp").returncode == 0
    assert calls(state)[-1]["argv"][:4] == ["compute", "instances", "delete", "gpu001"]


def test_user_data_over_the_provider_limit_fails_the_host(controller):
    run, root, state, bin_dir = controller
    program = root / "usr/local/sbin/clusterctl-bootstrap"
    program.write_bytes(program.read_bytes() + b"#" + os.urandom(12000).hex().encode())  # does not compress to 16 KB
    assert run("resume", "gpu001", "aws").returncode == 1
    assert [c["argv"][:2] for c in calls(state)] == [["ec2", "describe-instances"]] * 2  # look, clean up: no create
    assert "the limit is 16384" in scontrol_calls(bin_dir)[0]
    assert run("resume", "gpu001", "gcp").returncode == 0  # 256 KiB on GCP


def test_usage_errors():
    r = subprocess.run([str(NODE / "power_save.py"), "gpu001"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


# --- the generator's size limits (clusterctl_cloud_config.py) -----------------------------------------------

@pytest.mark.parametrize("provider,fits,too_big", [("aws", 9500, 11000), ("azure", 40000, 43000),
                                                   ("gcp", 165000, 175000)])
def test_generator_enforces_each_providers_limit(provider, fits, too_big):
    """gzip+base64 of random hex is about 1.54 times the random bytes: the generated sizes straddle each limit"""
    ok = generator.cloud_config(provider, "gpu001", BOOT, "#" + os.urandom(fits).hex())
    assert len(ok.encode()) <= generator.LIMITS[provider]
    with pytest.raises(generator.UserDataTooLarge, match=f"the limit is {generator.LIMITS[provider]}"):
        generator.cloud_config(provider, "gpu001", BOOT, "#" + os.urandom(too_big).hex())


def test_clusterctl_user_data_is_the_generators_text():
    """the Pulumi programs' static instances and the resume program's elastic ones get the same user data"""
    from clusterctl.cloud.stack.userdata import UserDataTooLarge, program_text, user_data

    assert UserDataTooLarge is generator.UserDataTooLarge
    assert user_data("aws", "gpu001", BOOT) == generator.cloud_config("aws", "gpu001", BOOT, program_text())
    assert program_text() == (NODE / "bootstrap.py").read_text()
    with pytest.raises(ValueError, match="start with a letter"):  # the provider's own rule stays in userdata
        user_data("gcp", "1gpu", BOOT)
