"""lab-ha through the real CLI (docs/rehearse.md, "Scenarios"), as CI runs it: what only lab-ha can prove, on
one boot: the deploy of its HA hosts (two controllers, slurmdbd and its backup, a login node) and the failover
on the controllers' shared state (StateSaveLocation on a shared tier), with Debian's own Slurm (22.05 on the
debian-12 image, ``slurm.install: {kind: distro}``): the install kind the lab rehearsal (SchedMD's packages) does not
take. The copy's in-band network is
10.33.0.0/24 and its compute hosts are hagpu01-02, so it shares no bridge network with the lab's and no
``slurm_<node>`` cgroup with another rehearsal's slurmd: it may run beside the lab rehearsal on another pytest
worker (tests/conftest.py, XDIST_GROUPS)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.events import roles_run
from tests.e2e.test_scenarios import assert_nothing_left, blueprint_copy

pytestmark = pytest.mark.e2e
HOSTS = ("hagpu01", "head01", "head02", "login01")


@pytest.fixture(scope="module")
def lab_ha(tmp_path_factory):
    """lab-ha runs what only it proves: the deploy of two controllers, a backup slurmdbd and a login node
    (converge, changed=0 again, testinfra, srun) and the failover on their shared state, with one compute
    node (the failover's job needs one; the lab rehearsal proves what needs two)."""
    require_rehearsal()
    require_deploy()
    tmp = tmp_path_factory.mktemp("lab-ha")
    out = tmp / "r"
    path = blueprint_copy(tmp, "lab-ha.yaml", "10.33.0.0/24", "ha")
    # Debian's own Slurm here (22.05 on the debian-12 image): the install kind the lab rehearsal does not take
    text = path.read_text()
    assert 'install: {kind: debs, path: /srv/slurm-debs, version: "24.05.4-1"}' in text
    path.write_text(text.replace('install: {kind: debs, path: /srv/slurm-debs, version: "24.05.4-1"}',
                                 "install: {kind: distro}"))
    r, summary = rehearse(path, out, "--scenario", "deploy", "--scenario", "failover", "--nodes-per-group", "1")
    return r, summary, out


def test_lab_ha_deploys_the_ha_hosts_and_fails_over(lab_ha):
    r, summary, _ = lab_ha
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr
    assert summary["scenarios"] == {"deploy": "run", "failover": "run"}
    assert [s["name"] for s in summary["steps"]] == [
        "boot", "ssh-check", "mirror", "failover: failover-timeout", "deploy: converge", "deploy: packages", "deploy: converge-again",
        "deploy: testinfra", "deploy: srun", "failover: failover"]
    assert sorted(n["name"] for n in summary["nodes"]) == sorted(HOSTS)
    assert summary["slurm_version"] == {"blueprint": "24.05", "rehearsed": "22.05"}  # debian-12's slurm-wlm
    assert summary["slurm_install"] == {"kind": "distro"}
    installed = summary["installed_packages"]
    assert installed["hagpu01"]["slurmd"]["version"].startswith("22.05.8-")
    assert installed["head01"]["libpmix-dev"]["origin"] == "http://10.33.0.254:8080"  # 22.05 dlopens libpmix.so
    bad = {s["name"]: s.get("error") or s["hosts"] for s in summary["steps"] if s["status"] != "ok"}
    assert not bad


def test_lab_ha_second_converge_changes_nothing_and_testinfra_passes_on_every_ha_host(lab_ha):
    """The backup controller and backup slurmdbd (head02) and the login node (login01) are hosts only lab-ha
    has: their roles (slurm_login among them) converge idempotently and their rendered tests pass."""
    _, summary, out = lab_ha
    again = steps(summary)["deploy: converge-again"]["hosts"]
    assert {h: o["changed"] for h, o in again.items()} == {h: 0 for h in HOSTS}
    tests = steps(summary)["deploy: testinfra"]["hosts"]
    assert "slurm_login" in roles_run(out / ".rehearsal" / "runner" / "artifacts" / "converge" / "job_events")
    for h in ("head02", "login01"):
        assert tests[h]["passed"] > 0 and tests[h]["failed"] == 0 and tests[h]["skipped"] == 0, (h, tests[h])


def test_failover_backup_takes_over_and_knows_the_job(lab_ha):
    _, summary, _ = lab_ha
    backup = steps(summary)["failover: failover"]["hosts"]["head02"]
    assert backup["status"] == "ok" and "RUNNING" in backup["detail"], backup
    assert backup["takeover_seconds"] > 0


def test_failover_primary_returns_and_accounting_survives_a_slurmdbd_restart(lab_ha):
    _, summary, out = lab_ha
    hosts = steps(summary)["failover: failover"]["hosts"]
    assert hosts["head01"]["status"] == "ok" and "still RUNNING" in hosts["head01"]["detail"], hosts["head01"]
    # head01 is both the primary controller and the accounting host: its detail holds both findings
    assert "sacct lists job" in hosts["head01"]["detail"] and "before (True) and after (True)" in hosts["head01"]["detail"]
    assert list((out / ".rehearsal" / "shared" / "shared" / "slurm" / "statesave").glob("job_state*")), \
        "no job state on the shared tier"


def test_lab_ha_rehearsal_leaves_nothing(lab_ha):
    assert_nothing_left(lab_ha[2])
