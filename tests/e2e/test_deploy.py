"""The deploy scenario through the real CLI (docs/rehearse.md, "The deploy scenario"), as the acceptance
command runs it: ``clusterctl rehearse blueprints/lab-2node.yaml --format json`` (every scenario, deploy's
steps named ``deploy: ...``). The rendered site.yml converges every rehearsal host over SSH, a second converge
changes nothing, the rendered testinfra suite passes on every host, one srun spans the compute hosts with
PMIx ranks 0..n-1, and afterwards nothing of the rehearsal is left on this machine. One rehearsal per
session (conftest.lab_rehearsal) serves these tests and tests/e2e/test_scenarios.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clusterctl.rehearse.node.state import load
from tests.e2e.conftest import require_deploy, require_rehearsal, steps
from tests.e2e.events import roles_run
from tests.e2e.test_nodes import leftovers

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
HOSTS = ["head01", "gpu01", "gpu02"]
COMPUTE = ["gpu01", "gpu02"]
ALL_STEPS = ["boot", "ssh-check", "mirror", "version-guard: render", "version-guard: version-guard",
             "version-guard: render back", "scratch: standin", "node-failure: health-interval", "monitoring: monitoring-intervals", "deploy: converge",
             "deploy: packages", "deploy: testinfra",
             "deploy: srun", "scratch: scratch", "node-failure: health-setup", "node-failure: node-failure", "node-failure: prolog-failure",
             "monitoring: scraped", "monitoring: slurmd-alert", "pull: pull-batch", "add-node: add-node"]


@pytest.fixture(scope="module")
def deployed(lab_rehearsal):
    return lab_rehearsal


def step(summary: dict, name: str) -> dict:
    return steps(summary)[f"deploy: {name}"]


def test_rehearse_exits_0_with_every_scenario_that_applies_ok(deployed):
    r, summary, _ = deployed
    assert r.returncode == 0, r.stderr[-6000:]
    assert "Traceback" not in r.stderr
    assert summary["status"] == "ok"
    assert [s["name"] for s in summary["steps"]] == ALL_STEPS
    bad = {s["name"]: s.get("error") or s["hosts"] for s in summary["steps"] if s["status"] != "ok"}
    assert not bad
    assert summary["scenarios"] == {"version-guard": "run", "deploy": "run", "scratch": "run", "node-failure": "run",
                                    "monitoring": "run", "pull": "run", "add-node": "run",
                                    "users": "not applicable: no login node (a node group with role login)",
                                    "db-failover": "not applicable: the slurmdbd hosts are not a replicated pair (one "
                                                   "slurmdbd, database_host, or accounting_database: primary)",
                                    "failover": "not applicable: one Slurm controller (slurm.controllers names "
                                                "no backup)",
                                    "day0": "not applicable: one Slurm controller (slurm.controllers names no "
                                            "backup)",
                                    "elastic": "not applicable: not a cloud blueprint with Slurm"}


def test_summary_names_the_image_and_the_slurm_version_rehearsed(deployed):
    _, summary, _ = deployed
    assert summary["image"] == {"name": "debian-12", "suite": "bookworm", "reason": "nearest to software.os ubuntu-22.04"}
    # SchedMD's packages as written, built from the one SchedMD tarball Debian's archive carries (24.11.5)
    assert summary["slurm_version"] == {"blueprint": "24.05", "rehearsed": "24.11"}
    assert summary["slurm_install"] == {"kind": "debs", "path": "/srv/slurm-debs", "version": "24.11.5-1",
                                        "packages": "schedmd", "gpu_nvml": False}
    assert "slurm.gres_autodetect" in summary["rehearsed_as"]
    assert summary["shared_storage"].startswith("none")


def test_first_converge_changes_every_host(deployed):
    _, summary, _ = deployed
    hosts = step(summary, "converge")["hosts"]
    assert sorted(hosts) == sorted(HOSTS)
    for h, o in hosts.items():
        assert o["status"] == "ok" and o["failed"] == 0 and o["unreachable"] == 0, (h, o)
        assert o["changed"] > 0 and o["ok"] > 0, (h, o)


def test_the_converge_applies_every_role_of_the_lab_and_no_hardware_role(deployed):
    """The first converge started tasks of every role a GPU compute node and a controller with accounting get
    (slurm_login: lab-ha's rehearsal, test_scenarios.py), the version guard first; the hardware roles are
    skipped by tag (no GPU, RDMA or vendor repository in a rehearsal: tests/roles/test_hardware_roles.py)."""
    _, _, out = deployed
    ran = roles_run(out / ".rehearsal" / "runner" / "artifacts" / "converge" / "job_events")
    assert ran >= {"slurm_preflight", "common", "slurm_accounts", "munge", "nccl", "slurmdbd", "slurm_controller",
                   "storage_clients", "node_health", "slurm_compute"}, ran
    assert not ran & {"doca_ofed", "nvidia_driver", "dcgm", "enroot_pyxis"}, ran


def test_every_package_the_roles_installed_came_from_the_site_mirror(deployed):
    """The image has no Slurm, MUNGE or MariaDB: the converge installed SchedMD's packages from the blueprint's own
    directory (/srv/slurm-debs, where the rehearsal put the slurm-smd packages it built from SchedMD's 24.11.5
    tarball) and everything else from the rehearsal's mirror on the bridge (10.10.0.254, the host's address there),
    from nowhere else (docs/rehearse.md, "Site mirror", "SchedMD packages")."""
    _, summary, _ = deployed
    assert {h: o["status"] for h, o in step(summary, "packages")["hosts"].items()} == {h: "ok" for h in HOSTS}
    installed = summary["installed_packages"]
    assert sorted(installed) == sorted(HOSTS)
    assert {"slurm-smd-slurmctld", "slurm-smd-slurmdbd", "mariadb-server", "munge",
            "slurm-smd-client"} <= set(installed["head01"])
    for h in COMPUTE:
        # libpmix2: SchedMD's 24.11 mpi/pmix plugin dlopens libpmix.so.2 and no slurm-smd package depends on it
        assert {"slurm-smd-slurmd", "munge", "slurm-smd-libpam-slurm-adopt", "libpmix2"} <= set(installed[h])
        assert "slurm-smd-slurmctld" not in installed[h]
        assert installed[h]["slurm-smd-slurmd"] == {"version": "24.11.5-1", "origin": "file:/srv/slurm-debs"}
    origins = {p["origin"] for packages in installed.values() for p in packages.values()}
    assert origins == {"http://10.10.0.254:8080", "file:/srv/slurm-debs"}
    smd = {name for packages in installed.values() for name, p in packages.items()
           if p["origin"] == "file:/srv/slurm-debs"}
    assert all(name.startswith("slurm-smd") for name in smd)


def test_second_application_changes_nothing_on_the_controller_and_one_compute_host_but_the_pull_timer(deployed):
    """The pull scenario's round is the tree's second application (docs/rehearse.md, "converge-again"), on head01 and
    on gpu01 (gpu02 is in gpu01's inventory groups: the same tasks, the same variables; deploy.one_per_group_set):
    gpu01, held on v1, the version it runs, changes nothing; head01 applies v2, whose only difference is the pull
    timer's interval, and every task that changed is the ansible_pull role's (the status callback names them)."""
    _, summary, _ = deployed
    assert "deploy: converge-again" not in steps(summary)
    assert summary["second_application"] == {"scenario": "pull", "hosts": ["gpu01", "head01"]}
    hosts = steps(summary)["pull: pull-batch"]["hosts"]
    assert sorted(hosts) == ["gpu01", "head01"]
    held, released = hosts["gpu01"], hosts["head01"]
    assert (held["changed"], held["changed_tasks"]) == (0, []) and held["ok"] > 50, held
    assert released["changed"] == len(released["changed_tasks"]) > 0 and released["ok"] > 50, released
    assert all(t.startswith("ansible_pull : ") for t in released["changed_tasks"]), released["changed_tasks"]
    assert "ansible_pull : Write the systemd service and timer" in released["changed_tasks"]
    # v1 is the tree the converge installed: the node-failure and monitoring scenarios' shorter intervals in it
    assert held["v1_edited_files"] == ["monitoring/alerts.yml", "monitoring/prometheus.yml", "slurm/slurm.conf"]


def test_rendered_testinfra_suite_passes_on_every_host(deployed):
    _, summary, _ = deployed
    hosts = step(summary, "testinfra")["hosts"]
    assert sorted(hosts) == sorted(HOSTS)
    for h, o in hosts.items():
        assert o["passed"] > 0 and o["failed"] == 0 and o["skipped"] == 0, (h, o)
        assert "deselected: hardware, mounts, kernel" in o["detail"]


def test_srun_runs_one_pmix_rank_on_each_compute_host(deployed):
    _, summary, _ = deployed
    hosts = step(summary, "srun")["hosts"]
    assert sorted(hosts) == sorted(COMPUTE)
    assert sorted(o["rank"] for o in hosts.values()) == list(range(len(COMPUTE)))
    assert all(o["status"] == "ok" for o in hosts.values())


def test_secrets_never_reach_a_command_line_or_the_summary(deployed):
    r, _, out = deployed
    secrets = (out / ".rehearsal" / "secrets.yml")
    assert secrets.stat().st_mode & 0o777 == 0o600
    key = next(line.split(":", 1)[1].strip() for line in secrets.read_text().splitlines()
               if line.startswith("vault_munge_key"))
    assert key not in r.stdout and key not in r.stderr
    for cmd in (out / ".rehearsal" / "runner" / "artifacts").glob("*/command"):
        assert key not in cmd.read_text()


def test_nothing_of_the_rehearsal_remains(deployed):
    _, summary, out = deployed
    state = load(out)
    assert state is not None and state.stopped
    assert leftovers(state) == []
    mine = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True).stdout
    assert mine.strip() == "", f"processes still name the rehearsal directory:\n{mine}"
    from clusterctl.rehearse.node.ssh import control_dir

    assert not control_dir(state.id).exists(), "SSH control sockets are left"


def test_sigterm_during_the_converge_stops_ansible_and_every_node(tmp_path):
    """SIGTERM while ansible-playbook runs: the runner is cancelled (no ansible process is left), then every
    node stops, before the CLI exits 130."""
    import signal
    import time

    require_rehearsal()
    require_deploy()
    from tests.helpers import lab, to_yaml

    data = lab()  # the lab on another in-band network, so it can run beside a lab rehearsal
    data["addressing"]["inband"]["cidr"] = "10.77.0.0/24"
    blueprint = tmp_path / "lab-other-net.yaml"
    blueprint.write_text(to_yaml(data))
    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "clusterctl", "rehearse", str(blueprint),
                          "-o", str(out), "--nodes-per-group", "1", "--scenario", "deploy"], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    started = False
    while time.monotonic() < deadline and p.poll() is None:
        events = out / ".rehearsal" / "runner" / "artifacts" / "converge" / "job_events"
        if events.is_dir() and len(list(events.glob("*.json"))) > 3:  # ansible-playbook is running tasks
            started = True
            break
        time.sleep(0.2)
    assert started, "the converge never started"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=180)
    assert p.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    state = load(out)
    assert state is not None and state.stopped and leftovers(state) == []
    mine = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True).stdout
    assert mine.strip() == "", f"processes still name the rehearsal directory:\n{mine}"
    from clusterctl.rehearse.node.ssh import control_dir

    assert not control_dir(state.id).exists(), "SSH control sockets are left"
