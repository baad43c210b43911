"""The elastic scenario through the real CLI (docs/rehearse.md, "elastic"), as CI runs it: ``clusterctl rehearse``
of a copy of ``blueprints/lab-cloud.yaml`` whose VPC range is moved to 10.52.0.0/24 and whose compute hosts are
elgpu01-02 (so it shares no bridge network with another rehearsal and no ``slurm_<node>`` cgroup with another
rehearsal's slurmd: it runs beside the lab rehearsal, tests/conftest.py XDIST_GROUPS). The head node is converged; an elastic node comes up only when a job needs
it: slurmctld runs the rendered ResumeProgram, which calls the fake provider CLI; the stand-in control plane
applies the recorded user data to that node as cloud-init would, the bootstrap program converges it, its slurmd
registers and the job runs; after SuspendTime idle, SuspendProgram terminates it and it is powered down again.
Checked from the recorded provider calls, the user data they carry and Slurm's node states."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.test_scenarios import assert_nothing_left, blueprint_copy

pytestmark = pytest.mark.e2e

CIDR = "10.52.0.0/24"
STEPS = ["boot", "ssh-check", "mirror", "elastic: setup", "elastic: converge", "elastic: powered-down", "elastic: cycle"]


@pytest.fixture(scope="module")
def cloud_lab(tmp_path_factory):
    require_rehearsal()
    require_deploy()
    tmp = tmp_path_factory.mktemp("lab-cloud")
    out = tmp / "r"
    r, summary = rehearse(blueprint_copy(tmp, "lab-cloud.yaml", CIDR, "el"), out)
    return r, summary, out


def cycle_files(out):
    sdir = out / ".rehearsal"
    calls = [json.loads(line) for line in (sdir / "elastic-calls.jsonl").read_text().splitlines()]
    return calls, json.loads((sdir / "elastic-cycle.json").read_text())


def test_lab_cloud_runs_the_elastic_scenario_alone(cloud_lab):
    r, summary, _ = cloud_lab
    assert r.returncode == 0, r.stderr[-6000:]
    assert "Traceback" not in r.stderr
    assert summary["status"] == "ok"
    assert [s["name"] for s in summary["steps"]] == STEPS
    assert summary["scenarios"]["elastic"] == "run"
    assert {k for k, v in summary["scenarios"].items() if v == "run"} == {"elastic"}
    # the head node only is converged over SSH; the elastic nodes come up by their user data
    assert sorted(steps(summary)["elastic: converge"]["hosts"]) == ["head01"]
    assert all(a["address"].startswith("10.52.0.") for a in summary["nodes"])


def test_rehearsed_as_lists_the_shortened_suspend_time_and_the_instance_hardware(cloud_lab):
    from clusterctl.rehearse.scenario.elastic import SUSPEND_TIME_S

    _, summary, out = cloud_lab
    changes = summary["rehearsed_as"]
    assert changes["slurm.power_save.suspend_time_s"] == {"blueprint": 600, "rehearsed": SUSPEND_TIME_S}
    assert summary["slurm_version"] == {"blueprint": "24.11", "rehearsed": "22.05"}  # elastic.ELASTIC_SLURM_WHY
    p5 = changes["node_types.p5"]
    assert p5["blueprint"]["instance"] == p5["rehearsed"]["instance"] == "p5.48xlarge"
    conf = (out / "slurm" / "slurm.conf").read_text()
    assert f"SuspendTime={SUSPEND_TIME_S}\n" in conf
    assert "State=CLOUD" in conf


def test_elastic_nodes_start_powered_down_with_no_daemon(cloud_lab):
    _, summary, _ = cloud_lab
    hosts = steps(summary)["elastic: powered-down"]["hosts"]
    assert sorted(hosts) == ["elgpu01", "elgpu02"]
    for h, o in hosts.items():
        assert o["status"] == "ok", (h, o)
        assert "CLOUD" in o["detail"] and "POWERED_DOWN" in o["detail"] and "no slurmd" in o["detail"], (h, o)


def test_a_job_resumes_one_node_by_its_user_data_and_idle_suspends_it(cloud_lab):
    from clusterctl.rehearse.scenario.elastic import SUSPEND_TIME_S

    _, summary, out = cloud_lab
    hosts = steps(summary)["elastic: cycle"]["hosts"]
    _, cycle = cycle_files(out)
    ran = cycle["ran_on"]
    assert ran in ("elgpu01", "elgpu02") and cycle["job_state"] == "COMPLETED"
    o = hosts[ran]
    assert o["status"] == "ok", o
    assert 0 <= o["create_request_seconds"] < o["job_end_seconds"]
    assert o["bootstrap_seconds"] > 0
    # idle for SuspendTime after the job, then terminated; powered down after that
    assert o["delete_request_seconds"] >= o["job_end_seconds"] + SUSPEND_TIME_S - 5, o
    assert o["powered_down_seconds"] >= o["delete_request_seconds"]
    other = "elgpu02" if ran == "elgpu01" else "elgpu01"
    assert hosts[other]["status"] == "ok" and "not needed" in hosts[other]["detail"], hosts[other]
    # the control plane: one create (the bootstrap ran and converged), one delete (no daemon left)
    done = {(e["op"], e["host"]) for e in cycle["control_plane"]}
    assert done == {("create", ran), ("delete", ran)}
    create = next(e for e in cycle["control_plane"] if e["op"] == "create")
    assert create["bootstrap"]["result"] == "ok" and create["cloud_init"]["runcmd_exit"] == 0
    assert create["cloud_init"]["runcmd"] == ["/usr/local/sbin/clusterctl-bootstrap"]
    assert {f["path"] for f in create["cloud_init"]["files"]} == {"/usr/local/sbin/clusterctl-bootstrap",
                                                                   "/etc/clusterctl/bootstrap.json"}
    delete = next(e for e in cycle["control_plane"] if e["op"] == "delete")
    assert delete["left_running"] == ""


def test_the_provider_calls_create_with_the_launch_template_and_the_exact_user_data(cloud_lab):
    from clusterctl.cloud.stack.userdata import user_data

    _, _, out = cloud_lab
    calls, cycle = cycle_files(out)
    ran = cycle["ran_on"]
    stack = json.loads((out / "cloud" / "stack.json").read_text())
    assert stack["bootstrap"]["config_url"] == "file:///srv/clusterctl-bucket/clusterctl/config.tar.gz"
    assert stack["bootstrap"]["secrets"] == {
        "vault_munge_key": {"file": "/etc/clusterctl/rehearsal-secrets/vault_munge_key"}}
    runs = [c for c in calls if c["cli"] == "aws" and c["argv"][:2] == ["ec2", "run-instances"]]
    assert len(runs) == 1
    argv = runs[0]["argv"]
    lt = stack["elastic"]["gpu"]["aws"]["launch_template_id"]
    tags = [{"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": ran}, {"Key": "clusterctl:hostname",
                                                                                  "Value": ran},
                                                   {"Key": "clusterctl:cluster", "Value": "lab-cloud"}]}]
    # the exact argv but the user data's temporary file (0600, removed after the call)
    user_data_file = argv[7]
    assert user_data_file.startswith("file://")
    assert argv == ["ec2", "run-instances", "--launch-template", f"LaunchTemplateId={lt},Version=$Latest",
                    "--count", "1", "--user-data", user_data_file,
                    "--tag-specifications", json.dumps(tags, separators=(",", ":")),
                    "--region", "us-east-2", "--output", "json"]
    # the user data of the created instance: the exact text clusterctl.cloud.stack.userdata renders for that host
    text = runs[0]["files"][user_data_file.removeprefix("file://")]
    assert text == user_data("aws", ran, stack["bootstrap"])
    assert yaml.safe_load(text)["hostname"] == ran
    # the terminate names the instance the run-instances answer gave that host
    (iid,) = [i for i, inst in cycle["instances"].items()
              if {"Key": "clusterctl:hostname", "Value": ran} in inst["Tags"]]
    terminates = [c for c in calls if c["cli"] == "aws" and c["argv"][:2] == ["ec2", "terminate-instances"]]
    assert [c["argv"] for c in terminates] == [["ec2", "terminate-instances", "--instance-ids", iid,
                                                "--region", "us-east-2", "--output", "json"]]
    assert cycle["instances"][iid]["State"]["Name"] == "shutting-down"


def test_no_secret_in_the_calls_the_user_data_the_object_or_the_render(cloud_lab):
    import tarfile

    _, _, out = cloud_lab
    secrets = yaml.safe_load((out / ".rehearsal" / "secrets.yml").read_text())
    values = [v for v in secrets.values() if v]
    calls, cycle = cycle_files(out)
    texts = [json.dumps(calls), json.dumps(cycle)]
    with tarfile.open(out / ".rehearsal" / "bucket" / "clusterctl" / "config.tar.gz") as tar:
        texts += [tar.extractfile(m).read().decode(errors="replace") for m in tar if m.isfile()]
    for p in out.rglob("*"):
        if p.is_file() and ".rehearsal" not in p.parts:
            texts.append(p.read_bytes().decode(errors="replace"))
    assert texts and not [t[:80] for t in texts for v in values if v in t]


def test_elastic_rehearsal_leaves_nothing(cloud_lab):
    assert_nothing_left(cloud_lab[2])
