"""The failure scenarios through the real CLI (docs/rehearse.md, "Scenarios"): each proves its claim from
the real daemons (scontrol, pgrep in the nodes) and from ansible-runner's event stream, and leaves nothing
of the rehearsal behind. The blueprints are the lab ones with their in-band network moved to a range of
their own, so these rehearsals never share a bridge network with the deploy tests'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.state import load
from tests.e2e.conftest import require_rehearsal
from tests.e2e.test_deploy import _require_deploy
from tests.e2e.test_nodes import leftovers

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def blueprint_copy(tmp: Path, name: str, cidr: str) -> Path:
    """``blueprints/NAME`` with its in-band network at ``cidr`` (10.10.0.0/24 is the deploy tests')."""
    text = (REPO / "blueprints" / name).read_text()
    assert "10.10.0.0/24" in text
    path = tmp / name
    path.write_text(text.replace("10.10.0.0/24", cidr))
    return path


def rehearse(tmp: Path, blueprint: Path, scenario: str, timeout: int = 1200):
    out = tmp / "r"
    r = subprocess.run([sys.executable, "-m", "clusterctl", "rehearse", str(blueprint), "-o", str(out),
                        "--scenario", scenario, "--format", "json"], cwd=REPO, capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    try:
        summary = json.loads(r.stdout)
    except ValueError:
        summary = None
    return r, summary, out


def steps(summary: dict) -> dict[str, dict]:
    return {s["name"]: s for s in summary["steps"]}


def assert_nothing_left(out: Path) -> None:
    state = load(out)
    assert state is not None and state.stopped
    assert leftovers(state) == []
    mine = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True, check=False).stdout
    assert mine.strip() == "", f"processes still name the rehearsal directory:\n{mine}"


# --- version-guard ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def version_guard(tmp_path_factory):
    require_rehearsal()
    _require_deploy()
    tmp = tmp_path_factory.mktemp("version-guard")
    return rehearse(tmp, blueprint_copy(tmp, "lab-2node.yaml", "10.31.0.0/24"), "version-guard", timeout=600)


def installed() -> str:
    out = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, check=False).stdout.split()[-1]
    return ".".join(out.split(".")[:2])


def test_version_guard_passes_when_site_yml_stops_at_the_preflight(version_guard):
    r, summary, _ = version_guard
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr
    assert [s["name"] for s in summary["steps"]] == ["boot", "ssh-check", "version-guard"]
    assert summary["status"] == "ok"
    change = summary["rehearsed_as"]["slurm.version"]
    assert change["installed"] == installed() and change["rehearsed"] != installed()


def test_version_guard_every_host_failed_in_the_preflight_naming_both_releases(version_guard):
    _, summary, _ = version_guard
    change = summary["rehearsed_as"]["slurm.version"]
    hosts = steps(summary)["version-guard"]["hosts"]
    assert sorted(hosts) == ["gpu01", "gpu02", "head01"]
    for h, o in hosts.items():
        assert o["status"] == "ok" and o["preflight_failures"] == 1, (h, o)
        assert change["rehearsed"] in o["detail"] and change["installed"] in o["detail"], (h, o)


def test_version_guard_no_later_task_no_daemon_no_file(version_guard):
    _, summary, out = version_guard
    for h, o in steps(summary)["version-guard"]["hosts"].items():
        assert (o["later_tasks"], o["daemons"], o["files_written"]) == (0, 0, 0), (h, o)
    # the event stream itself: one play started, and it is the preflight
    events = [json.loads(p.read_text()) for p in
              (out / ".rehearsal" / "runner" / "artifacts" / "version-guard" / "job_events").glob("*.json")]
    plays = [e["event_data"]["play"] for e in sorted(events, key=lambda e: e["counter"])
             if e["event"] == "playbook_on_play_start"]
    assert len(plays) == 1 and "preflight" in plays[0].lower()
    assert not [e for e in events if e["event"].startswith("runner_on_") and e["event_data"].get("play") != plays[0]]


def test_version_guard_leaves_nothing(version_guard):
    assert_nothing_left(version_guard[2])


# --- node-failure -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def node_failure(tmp_path_factory):
    require_rehearsal()
    _require_deploy()
    tmp = tmp_path_factory.mktemp("node-failure")
    return rehearse(tmp, blueprint_copy(tmp, "lab-2node.yaml", "10.32.0.0/24"), "node-failure")


def test_node_failure_passes(node_failure):
    r, summary, _ = node_failure
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr
    assert [s["name"] for s in summary["steps"]] == ["boot", "ssh-check", "converge", "health-setup", "node-failure"]
    bad = {s["name"]: s.get("error") or s["hosts"] for s in summary["steps"] if s["status"] != "ok"}
    assert not bad


def test_node_failure_health_check_drains_within_its_interval_and_resumes(node_failure):
    from clusterctl.rehearse.scenarios import HEALTH_INTERVAL_S

    _, summary, out = node_failure
    assert f"HealthCheckInterval={HEALTH_INTERVAL_S}\n" in (out / "slurm" / "slurm.conf").read_text()
    victim = steps(summary)["node-failure"]["hosts"]["gpu01"]
    assert victim["status"] == "ok", victim
    assert "node-health: nvidia-smi lists 7 GPUs, expected 8" in victim["detail"]
    assert victim["drain_seconds"] <= 2 * HEALTH_INTERVAL_S + 5
    assert victim["resume_seconds"] <= 2 * HEALTH_INTERVAL_S + 5


def test_node_failure_other_compute_node_stays_in_service(node_failure):
    _, summary, _ = node_failure
    other = steps(summary)["node-failure"]["hosts"]["gpu02"]
    assert other["status"] == "ok" and other["detail"].lower().startswith("idle"), other


def test_node_failure_leaves_nothing(node_failure):
    assert_nothing_left(node_failure[2])


# --- failover (lab-ha: two controllers, slurmdbd and its backup, StateSaveLocation on a shared tier) -------

@pytest.fixture(scope="module")
def failover(tmp_path_factory):
    require_rehearsal()
    _require_deploy()
    tmp = tmp_path_factory.mktemp("failover")
    return rehearse(tmp, blueprint_copy(tmp, "lab-ha.yaml", "10.33.0.0/24"), "failover")


def test_failover_passes(failover):
    r, summary, _ = failover
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr
    assert [s["name"] for s in summary["steps"]] == ["boot", "ssh-check", "failover-timeout", "network-database",
                                                      "converge", "failover"]
    bad = {s["name"]: s.get("error") or s["hosts"] for s in summary["steps"] if s["status"] != "ok"}
    assert not bad


def test_failover_backup_takes_over_within_the_timeout_and_knows_the_job(failover):
    from clusterctl.rehearse.scenarios import CTLD_TIMEOUT_S

    _, summary, out = failover
    assert f"SlurmctldTimeout={CTLD_TIMEOUT_S}\n" in (out / "slurm" / "slurm.conf").read_text()
    backup = steps(summary)["failover"]["hosts"]["head02"]
    assert backup["status"] == "ok" and "RUNNING" in backup["detail"], backup
    assert backup["takeover_seconds"] <= 2 * CTLD_TIMEOUT_S + 15


def test_failover_primary_returns_and_accounting_survives_a_slurmdbd_restart(failover):
    _, summary, out = failover
    hosts = steps(summary)["failover"]["hosts"]
    assert hosts["head01"]["status"] == "ok" and "still RUNNING" in hosts["head01"]["detail"], hosts["head01"]
    # head01 is both the primary controller and the accounting host: its detail holds both findings
    assert "sacct lists job" in hosts["head01"]["detail"] and "before (True) and after (True)" in hosts["head01"]["detail"]
    assert list((out / ".rehearsal" / "shared" / "shared" / "slurm" / "statesave").glob("job_state*")), \
        "no job state on the shared tier"


def test_failover_leaves_nothing(failover):
    assert_nothing_left(failover[2])
