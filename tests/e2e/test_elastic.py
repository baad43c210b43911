"""The elastic scenario through the real CLI (docs/rehearse.md, "elastic"), as CI runs it: ``clusterctl rehearse``
of a copy of ``blueprints/lab-cloud.yaml`` whose VPC range is moved to 10.52.0.0/24 and whose compute hosts are
elgpu01-02 (so it shares no bridge network with another rehearsal and no ``slurm_<node>`` cgroup with another
rehearsal's slurmd: it runs beside the lab rehearsal, tests/conftest.py XDIST_GROUPS). The head node is converged; an elastic node comes up only when a job needs
it: slurmctld runs the rendered ResumeProgram, which calls the fake provider CLI; the stand-in control plane
applies the recorded user data to that node as cloud-init would, the bootstrap program converges it, its slurmd
registers and the job runs; after SuspendTime idle, SuspendProgram terminates it and it is powered down again.
Checked from the recorded provider calls, the user data they carry and Slurm's node states.

It is also the suite's rehearsal on the debian-13 image (trixie, ``--image debian-13``; docs/rehearse.md, "Images"):
the head node's roles over SSH and the elastic node's through its bootstrap run there, with Slurm 24.11 from the
distribution (the blueprint's release: the scenario rehearses the image's own Slurm) installed from the site
mirror, and ``topology: block`` with ``block_sizes`` (options the release table gates on 23.11 and 24.05, plan/slurm.py
FEATURES) proven on the real 24.11 slurmctld. One rehearsal where a separate debian-13 install took about 7 minutes
of the suite (benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import load
from tests.e2e.conftest import rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.test_scenarios import assert_nothing_left, blueprint_copy

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CIDR = "10.52.0.0/24"
MIRROR = "http://10.52.0.254:8080"
"""the host's address on the rehearsal bridge (the highest of CIDR), port 8080"""
STEPS = ["boot", "ssh-check", "mirror", "elastic: setup", "elastic: converge", "elastic: powered-down", "elastic: cycle"]
# what the kept nodes are asked after the run (--keep), before --down
LOOKS = {"head01": {"daemon": "slurmctld -V", "package": "dpkg-query -W -f='${Version}' slurmctld",
                    "origin": "apt-cache policy slurmctld", "topology": "scontrol show topology",
                    "config": "scontrol show config"},
         "node": {"daemon": "slurmd -V", "package": "dpkg-query -W -f='${Version}' slurmd",
                  "origin": "apt-cache policy slurmd"}}


def cloud_lab_blueprint(tmp: Path) -> Path:
    path = blueprint_copy(tmp, "lab-cloud.yaml", CIDR, "el")
    text = path.read_text()
    assert "  topology: none\n" in text
    path.write_text(text.replace("  topology: none\n", "  topology: block\n  block_sizes: [1, 2]\n"))
    return path


@pytest.fixture(scope="module")
def cloud_lab(tmp_path_factory):
    require_rehearsal()
    require_deploy()
    tmp = tmp_path_factory.mktemp("lab-cloud")
    out = tmp / "r"
    r, summary = rehearse(cloud_lab_blueprint(tmp), out, "--image", "debian-13", "--keep")
    looks: dict[str, dict[str, str]] = {}
    try:  # kept up for this one look: what the head node and the node the job ran on run, as they say it
        if r.returncode == 0:
            ran = cycle_files(out)[1]["ran_on"]
            looks = {host: {k: _run(out, host, c) for k, c in LOOKS["head01" if host == "head01" else "node"].items()}
                     for host in ("head01", ran)}
    finally:
        r_down = subprocess.run([sys.executable, "-m", "clusterctl", "rehearse", "--down", str(out)], cwd=REPO,
                                capture_output=True, text=True, timeout=120)
    assert r_down.returncode == 0, r_down.stderr
    return r, summary, out, looks


def _run(out: Path, host: str, command: str) -> str:
    r = ssh(load(out), host, command)
    return r.stdout if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()}"


def cycle_files(out):
    sdir = out / ".rehearsal"
    calls = [json.loads(line) for line in (sdir / "elastic-calls.jsonl").read_text().splitlines()]
    return calls, json.loads((sdir / "elastic-cycle.json").read_text())


def test_lab_cloud_runs_the_elastic_scenario_alone(cloud_lab):
    r, summary, _, _ = cloud_lab
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

    _, summary, out, _ = cloud_lab
    changes = summary["rehearsed_as"]
    assert changes["slurm.power_save.suspend_time_s"] == {"blueprint": 600, "rehearsed": SUSPEND_TIME_S}
    # the image's own Slurm (elastic.ELASTIC_SLURM_WHY): on debian-13 the blueprint's release
    assert summary["image"] == {"name": "debian-13", "suite": "trixie", "reason": "--image"}
    assert summary["slurm_version"] == {"blueprint": "24.11", "rehearsed": "24.11"}
    assert changes["slurm.install"]["rehearsed"] == {"kind": "distro"}
    p5 = changes["node_types.p5"]
    assert p5["blueprint"]["instance"] == p5["rehearsed"]["instance"] == "p5.48xlarge"
    conf = (out / "slurm" / "slurm.conf").read_text()
    assert f"SuspendTime={SUSPEND_TIME_S}\n" in conf
    assert "State=CLOUD" in conf


def test_elastic_nodes_start_powered_down_with_no_daemon(cloud_lab):
    _, summary, _, _ = cloud_lab
    hosts = steps(summary)["elastic: powered-down"]["hosts"]
    assert sorted(hosts) == ["elgpu01", "elgpu02"]
    for h, o in hosts.items():
        assert o["status"] == "ok", (h, o)
        assert "CLOUD" in o["detail"] and "POWERED_DOWN" in o["detail"] and "no slurmd" in o["detail"], (h, o)


def test_a_job_resumes_one_node_by_its_user_data_and_idle_suspends_it(cloud_lab):
    from clusterctl.rehearse.scenario.elastic import SUSPEND_TIME_S

    _, summary, out, _ = cloud_lab
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
    from clusterctl.cloud.stack.userdata import program_text, user_data

    _, _, out, _ = cloud_lab
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
    # the user data of the created instance: what clusterctl.cloud.stack.userdata renders for that host, the files
    # decoded (the head node's resume program compressed them with debian-13's zlib, whose gzip bytes differ)
    text = runs[0]["files"][user_data_file.removeprefix("file://")]
    assert unpacked(text) == unpacked(user_data("aws", ran, stack["bootstrap"]))
    assert unpacked(text)["write_files"][0]["content"] == program_text()
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

    _, _, out, _ = cloud_lab
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


def unpacked(text: str) -> dict:
    """cloud-config ``text`` with its gz+b64 files decoded, as cloud-init writes them (read here without the
    scenario's code)."""
    import base64
    import gzip

    config = yaml.safe_load(text)
    for f in config.get("write_files", []):
        if f.pop("encoding", None) == "gz+b64":
            f["content"] = gzip.decompress(base64.b64decode(f["content"])).decode()
    return config


def test_debian_13_runs_slurm_24_11_from_the_site_mirror(cloud_lab):
    """The head node (converged over SSH) and the elastic node the job ran on (converged by its bootstrap) run
    Debian's Slurm 24.11, installed from the rehearsal's site mirror, as their own daemons and apt say."""
    r, _, out, looks = cloud_lab
    assert r.returncode == 0, r.stderr[-3000:]
    ran = cycle_files(out)[1]["ran_on"]
    assert sorted(looks) == sorted(["head01", ran])
    for host in looks:
        assert looks[host]["daemon"].strip() == "slurm-wlm 24.11.5", (host, looks[host])  # Debian's name, SchedMD's
        assert looks[host]["package"].startswith("24.11.5-"), (host, looks[host])
        policy = looks[host]["origin"]
        installed = looks[host]["package"]
        # the installed version's only source is the mirror (and dpkg's status file)
        table = policy.split("Version table:", 1)[1]
        assert f"*** {installed} 500" in table and f"500 {MIRROR} ./ Packages" in table, (host, policy)
        assert "deb.debian.org" not in policy, (host, policy)


def test_release_gated_topology_block_runs_on_the_real_24_11_daemons(cloud_lab):
    """topology/block (Slurm >= 23.11) with BlockSizes (>= 24.05, BlockLevels before), rendered for 24.11 and
    accepted by slurmctld 24.11: the block the plan made of the GPU group, at the sizes the blueprint asks."""
    r, _, _, looks = cloud_lab
    assert r.returncode == 0, r.stderr[-3000:]
    found = looks["head01"]
    config = {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in found["config"].splitlines()
                                                 if "=" in line)}
    assert config.get("TopologyPlugin") == "topology/block", found["config"][-2000:]
    topology = found["topology"]
    # slurmctld 24.11 read BlockSizes (a key 23.11 refuses) and made the one block of the GPU group
    assert "BlockName=gpu" in topology and "Nodes=elgpu[01-02]" in topology, topology


def test_elastic_rehearsal_leaves_nothing(cloud_lab):
    assert_nothing_left(cloud_lab[2])
