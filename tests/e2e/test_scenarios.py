"""The scenarios through the real CLI (docs/rehearse.md, "Scenarios"), as CI runs them: every scenario that
applies, on the lab blueprint (the acceptance command's session rehearsal, conftest.lab_rehearsal; lab-ha's
deploy and failover: test_lab_ha.py). Each scenario proves its claim from the real daemons (scontrol, pgrep, ps in the nodes) and from ansible-runner's event stream, and
nothing of a rehearsal is left behind."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from clusterctl.rehearse.node.state import load
from tests.e2e.conftest import steps
from tests.e2e.test_nodes import leftovers

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def blueprint_copy(tmp: Path, name: str, cidr: str, compute_prefix: str = "") -> Path:
    """``blueprints/NAME`` with its in-band network at ``cidr`` (10.10.0.0/24 is the lab rehearsal's) and, with
    ``compute_prefix``, its compute hosts gpu01-02 renamed PREFIXgpu01-02 (a rehearsal beside the lab's must not
    share its slurm_<node> cgroups: tests/conftest.py, XDIST_GROUPS). The inventory files its ``site.inventory``
    names are copied beside it, their gpu rows renamed the same way."""
    text = (REPO / "blueprints" / name).read_text()
    assert "10.10.0.0/24" in text
    text = text.replace("10.10.0.0/24", cidr)
    if compute_prefix:
        assert 'hostnames: "gpu[01-02]"' in text
        text = text.replace('hostnames: "gpu[01-02]"', f'hostnames: "{compute_prefix}gpu[01-02]"')
    path = tmp / name
    path.write_text(text)
    for inventory in (yaml.safe_load(text).get("site") or {}).get("inventory", []):
        rows = (REPO / "blueprints" / inventory).read_text()  # docs/inventory.md: the hosts renamed alike
        (tmp / inventory).write_text(re.sub(r"^gpu", f"{compute_prefix}gpu", rows, flags=re.MULTILINE))
    return path


def assert_nothing_left(out: Path) -> None:
    state = load(out)
    assert state is not None and state.stopped
    assert leftovers(state) == []
    mine = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True, check=False).stdout
    assert mine.strip() == "", f"processes still name the rehearsal directory:\n{mine}"


def installed() -> str:
    """The Slurm the lab's nodes run: SchedMD's packages as the lab installs them, built from the one SchedMD
    tarball Debian's archive carries (24.11.5) for its default image (debian-12, nearest to ubuntu-22.04)."""
    return "24.11"


@pytest.fixture(scope="module")
def lab(lab_rehearsal):
    return lab_rehearsal


# --- version-guard (lab) ----------------------------------------------------------------------------------

def test_version_guard_renders_for_another_release_than_the_installed_one(lab):
    _, summary, _ = lab
    change = summary["version_guard"]
    assert change["installed"] == installed() and change["rehearsed"] != installed()
    assert change["rehearsed"] == "24.05"  # the blueprint's own release


def test_version_guard_every_host_failed_in_the_preflight_naming_both_releases(lab):
    _, summary, _ = lab
    change = summary["version_guard"]
    hosts = steps(summary)["version-guard: version-guard"]["hosts"]
    assert sorted(hosts) == ["gpu01", "gpu02", "head01"]
    for h, o in hosts.items():
        assert o["status"] == "ok" and o["preflight_failures"] == 1, (h, o)
        assert change["rehearsed"] in o["detail"] and change["installed"] in o["detail"], (h, o)


def test_version_guard_no_later_task_no_daemon_no_file(lab):
    _, summary, out = lab
    for h, o in steps(summary)["version-guard: version-guard"]["hosts"].items():
        assert (o["later_tasks"], o["daemons"], o["files_written"]) == (0, 0, 0), (h, o)
    # the event stream itself: one play started, and it is the preflight
    events = [json.loads(p.read_text()) for p in
              (out / ".rehearsal" / "runner" / "artifacts" / "version-guard" / "job_events").glob("*.json")]
    plays = [e["event_data"]["play"] for e in sorted(events, key=lambda e: e["counter"])
             if e["event"] == "playbook_on_play_start"]
    assert len(plays) == 1 and "preflight" in plays[0].lower()
    assert not [e for e in events if e["event"].startswith("runner_on_") and e["event_data"].get("play") != plays[0]]


# --- scratch (lab) -----------------------------------------------------------------------------------------

def test_scratch_standin_xfs_mounted_before_slurmd_with_job_tmp_and_enroot_on_it(lab):
    """Issue 30, item 5: the first compute node's data drive (one loop device: this kernel has no NVMe and no md) is
    the XFS at /raid, by UUID with nofail in fstab, active before slurmd started and required by it; a job's /tmp
    and enroot's data and cache, evaluated as a user, are on it (clusterctl/rehearse/scenario/scratch.py)."""
    _, summary, _ = lab
    standin = steps(summary)["scratch: standin"]["hosts"]["gpu01"]
    assert standin["status"] == "ok" and standin["loop_device"].startswith("/dev/loop"), standin
    got = steps(summary)["scratch: scratch"]["hosts"]["gpu01"]
    assert got["status"] == "ok", got
    assert got["mount_source"] == "xfs /dev/rehearsal-nvme0"
    assert re.fullmatch(r"UUID=[0-9a-f-]{36} /raid xfs defaults,noatime,nofail,x-systemd.device-timeout=30s,"
                        r"x-systemd.before=slurmd.service 0 0", got["fstab"]), got["fstab"]
    assert 0 < got["mounted_us"] < got["slurmd_started_us"]
    assert got["job_tmp"].split()[:2] == ["probe", "xfs"] and got["job_tmp"].split()[2].startswith("/dev/rehearsal-nvme0[")
    assert got["enroot_data_path"] == "/raid xfs /raid/enroot/data/user-65534"
    assert got["enroot_cache_path"] == "/raid xfs /raid/enroot/cache/group-65534"


def test_scratch_full_drains_the_node_and_freed_returns_it(lab):
    """Filled to 5 % free (the lab tier's min_free_percent is 10), the rendered health check drains the node with
    the scratch named; freed, it returns the node to service."""
    _, summary, _ = lab
    got = steps(summary)["scratch: scratch"]["hosts"]["gpu01"]
    assert re.fullmatch(r"node-health: scratch /raid has [0-9] % free, less than 10 %", got["drain_reason"]), got
    assert got["resume_seconds"] >= 0


# --- node-failure (lab) -----------------------------------------------------------------------------------

def test_node_failure_health_check_drains_the_node_and_resumes_it(lab):
    """The drain and the resume are seen in Slurm's node state (how long they took is a benchmark figure:
    benchmarks/README.md, "The suite")."""
    _, summary, _ = lab
    victim = steps(summary)["node-failure: node-failure"]["hosts"]["gpu01"]
    assert victim["status"] == "ok", victim
    assert "node-health: nvidia-smi lists 7 GPUs, expected 8" in victim["detail"]
    assert victim["drain_seconds"] > 0 and victim["resume_seconds"] > 0


def test_node_failure_other_compute_node_stays_in_service(lab):
    _, summary, _ = lab
    other = steps(summary)["node-failure: node-failure"]["hosts"]["gpu02"]
    assert other["status"] == "ok" and other["detail"].lower().startswith("idle"), other


def test_prolog_failure_drains_the_node_holds_the_job_and_the_check_resumes_it(lab):
    """The node_health prolog piece (slurm.conf Prolog=/etc/slurm/prolog.d/*) runs the health check before the
    job: the node that lost a GPU stand-in is drained with a reason naming the job, Slurm requeues the job
    held, and after the repair the periodic health check returns the node (its own reason) to service."""
    _, summary, _ = lab
    victim = steps(summary)["node-failure: prolog-failure"]["hosts"]["gpu01"]
    assert victim["status"] == "ok", victim
    assert "node-health: prolog of job " in victim["detail"]
    assert "nvidia-smi lists 7 GPUs, expected 8" in victim["detail"]
    assert victim["job_held"] == 1 and "held" in victim["detail"].lower()
    assert victim["resume_seconds"] > 0


# --- monitoring (lab) ---------------------------------------------------------------------------------------

def test_monitoring_prometheus_scrapes_every_node_exporter_and_the_slurm_metrics(lab):
    """Prometheus on head01 (its HTTP API): every node's node exporter up on its in-band address, the Slurm
    metrics naming both compute nodes; the firewall refuses head01's exporter to a compute node."""
    _, summary, _ = lab
    hosts = steps(summary)["monitoring: scraped"]["hosts"]
    assert sorted(hosts) == ["gpu01", "gpu02", "head01"]
    assert all(o["status"] == "ok" and "node exporter up=1" in o["detail"] for o in hosts.values()), hosts
    assert "Slurm metrics for gpu01, gpu02" in hosts["head01"]["detail"]
    assert "head01's node exporter from here: closed" in hosts["gpu01"]["detail"]


def test_monitoring_stopping_slurmd_fires_the_rendered_alert_and_starting_it_clears_it(lab):
    _, summary, _ = lab
    victim = steps(summary)["monitoring: slurmd-alert"]["hosts"]["gpu01"]
    assert victim["status"] == "ok", victim
    assert victim["fire_seconds"] > 0 and victim["clear_seconds"] > 0
    assert victim["detail"].lower().endswith("slurm state idle"), victim


# --- add-node (lab) -----------------------------------------------------------------------------------------

def test_add_node_joins_idle_the_job_runs_on_and_no_node_is_drained(lab):
    """Issue 30: one compute node added while a long job runs; after the rendered change the node is idle in
    sinfo, the job was RUNNING through the run and completes when released, and no node was drained (slurmctld's
    log and the states polled during the run). slurmd restarted on every existing node (their node lines changed),
    on gpu01 under the job."""
    _, summary, out = lab
    change = summary["add_node_change"]
    assert change["new_node"] == {"group": "gpu_added", "host": "gpu03"}
    assert change["slurm_option"]["MaxTime"]["after"] == "2-00:00:00"
    step = steps(summary)["add-node: add-node"]
    hosts = step["hosts"]
    assert step["status"] == "ok", hosts
    for h in ("gpu01", "gpu02", "gpu03"):
        assert hosts[h]["status"] == "ok" and hosts[h]["slurmd_restarted"] == 1 and hosts[h]["drained"] == 0, (h, hosts[h])
        assert "never drained" in hosts[h]["detail"], (h, hosts[h])
    assert "under job" in hosts["gpu01"]["detail"] and "new node, idle in sinfo" in hosts["gpu03"]["detail"]
    (via,) = [o for o in hosts.values() if "COMPLETED" in o.get("detail", "")]
    assert "RUNNING through the run" in via["detail"] and "no drain" in via["detail"] and via["polls"] > 0
    assert "partition rehearsal added" in via["detail"]
    # the re-render is in the directory: the grown slurm.conf
    conf = (out / "slurm" / "slurm.conf").read_text()
    assert "PartitionName=rehearsal " in conf and "gpu03" in conf


# --- pull (lab) ---------------------------------------------------------------------------------------------

def test_pull_releases_v2_batch_by_batch_and_a_held_batch_stays_on_v1(lab):
    """One round on one node of each group set: v2 released to batch 0 (head01) only, gpu01 (batch 1) held on v1.
    Releasing to all is the same rollout.yml key; the tip without rollout.yml and a first boot are the script's own
    behaviours (tests/test_rehearse_pull.py runs it alone with Debian's ansible-playbook). What changed on each node:
    tests/e2e/test_deploy.py, the second application."""
    _, summary, out = lab
    assert summary["rehearsed_as"]["slurm.rollout.pull.source"]["rehearsed"] == "ssh://root@head01/srv/clusterctl/pull.git"
    st = steps(summary)["pull: pull-batch"]
    assert st["status"] == "ok", st
    batch = st["hosts"]
    assert {h: o["batch"] for h, o in batch.items()} == {"head01": 0, "gpu01": 1}
    assert batch["head01"]["detail"].startswith("v2,") and batch["head01"]["changed"] > 0
    assert batch["gpu01"]["detail"].startswith("v1,") and batch["gpu01"]["changed"] == 0
    # the rendered collector's summary: each node on the version released to its batch, none failed
    collected = json.loads((out / ".rehearsal" / "pull-batch.json").read_text())
    assert sorted(sorted(hs) for hs in collected["versions"].values()) == [["gpu01"], ["head01"]]
    assert collected["failed"] == {}


def test_rehearsal_leaves_nothing(lab):
    assert_nothing_left(lab[2])
