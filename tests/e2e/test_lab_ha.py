"""lab-ha through the real CLI (docs/rehearse.md, "Scenarios"), as CI runs it: what only lab-ha can prove, on
one boot: the deploy of its HA hosts (two controllers, slurmdbd and its backup, a login node), the failover
on the controllers' shared state (StateSaveLocation on a shared tier) and Day 0 (docs/rehearse.md, "The day0
scenario": the BMC play power-cycles hagpu01, which comes back by DHCP from the HA Kea pair with its inventory MAC,
resolves every planned name through both controllers' DNS and follows their time; then, on the kept boot, a
reservation's MAC, a zone record and the controllers' NTP peering broken one at a time fail its checks), with
Debian's own Slurm (22.05 on the
debian-12 image, ``slurm.install: {kind: distro}``): the install kind the lab rehearsal (SchedMD's packages) does not
take. The copy's in-band network is
10.33.0.0/24 and its compute hosts are hagpu01-02, so it shares no bridge network with the lab's and no
``slurm_<node>`` cgroup with another rehearsal's slurmd: it may run beside the lab rehearsal on another pytest
worker (tests/conftest.py, XDIST_GROUPS)."""

from __future__ import annotations

import pytest

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.plan.expand import expand
from clusterctl.rehearse.node import lifecycle
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.rehearse.node.state import load
from clusterctl.rehearse.scenario.day0 import controller_time_problems, day0_hosts
from clusterctl.rehearse.scenario.day0_checks import KEA_CONF, dns_problems, kea_command, wait_addressed
from tests.e2e.conftest import rehearse, require_deploy, require_rehearsal, steps
from tests.e2e.events import roles_run
from tests.e2e.test_scenarios import assert_nothing_left, blueprint_copy

pytestmark = pytest.mark.e2e
HOSTS = ("hagpu01", "hagpu02", "head01", "head02", "login01")
HAGPU01 = ("10.33.0.17", "02:00:0a:0a:00:01")
"""hagpu01's planned in-band address in the copy and its in-band MAC in the copied inventory"""
DAY0_STEPS = ["day0: services", "day0: bmc", "day0: dhcp", "day0: dns", "day0: time"]


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
    # two compute nodes: the users scenario's srun -N2 (failover's and db-failover's jobs need one)
    r, summary = rehearse(path, out, "--scenario", "deploy", "--scenario", "failover", "--scenario", "users",
                          "--scenario", "db-failover",
                          "--scenario", "day0", "--nodes-per-group", "2", "--keep")
    try:
        yield r, summary, out, path
    finally:  # kept for the broken-render tests; the last test tears it down and checks nothing is left
        state = load(out)
        if state is not None and not state.stopped:
            lifecycle.down(out)


def test_lab_ha_deploys_the_ha_hosts_and_fails_over(lab_ha):
    r, summary, _, _ = lab_ha
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr
    assert summary["scenarios"] == {"deploy": "run", "failover": "run", "users": "run", "db-failover": "run", "day0": "run"}
    assert [s["name"] for s in summary["steps"]] == [
        "boot", "ssh-check", "mirror", "failover: failover-timeout", "users: directory", "db-failover: failover-timeout",
        "deploy: converge", "deploy: packages", "deploy: converge-again", "deploy: testinfra", "deploy: srun",
        "failover: failover", "users: users", "db-failover: db-failover", *DAY0_STEPS]
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
    _, summary, out, _ = lab_ha
    again = steps(summary)["deploy: converge-again"]["hosts"]
    # hagpu02 has hagpu01's inventory groups: the second converge runs on the first (deploy.one_per_group_set)
    assert {h: o["changed"] for h, o in again.items()} == {h: 0 for h in HOSTS if h != "hagpu02"}
    tests = steps(summary)["deploy: testinfra"]["hosts"]
    assert "slurm_login" in roles_run(out / ".rehearsal" / "runner" / "artifacts" / "converge" / "job_events")
    for h in ("head02", "login01"):
        assert tests[h]["passed"] > 0 and tests[h]["failed"] == 0 and tests[h]["skipped"] == 0, (h, tests[h])


def test_failover_backup_takes_over_and_knows_the_job(lab_ha):
    _, summary, _, _ = lab_ha
    backup = steps(summary)["failover: failover"]["hosts"]["head02"]
    assert backup["status"] == "ok" and "RUNNING" in backup["detail"], backup
    assert backup["takeover_seconds"] > 0


def test_failover_primary_returns_and_accounting_survives_a_slurmdbd_restart(lab_ha):
    _, summary, out, _ = lab_ha
    hosts = steps(summary)["failover: failover"]["hosts"]
    assert hosts["head01"]["status"] == "ok" and "still RUNNING" in hosts["head01"]["detail"], hosts["head01"]
    # head01 is both the primary controller and the accounting host: its detail holds both findings
    assert "sacct lists job" in hosts["head01"]["detail"] and "before (True) and after (True)" in hosts["head01"]["detail"]
    assert list((out / ".rehearsal" / "shared" / "shared" / "slurm" / "statesave").glob("job_state*")), \
        "no job state on the shared tier"


# --- users ------------------------------------------------------------------------------------------------

def test_users_a_directory_user_logs_in_has_the_association_and_runs_srun_on_both_compute_nodes(lab_ha):
    """docs/rehearse.md, "The users scenario": slapd on head02 (StartTLS, only the bind DN reads), SSSD on every
    Slurm host, the account research given to the directory group researchers."""
    _, summary, _, _ = lab_ha
    directory = steps(summary)["users: directory"]["hosts"]["head02"]
    assert directory["status"] == "ok", directory
    assert directory["detail"].endswith("an anonymous search nothing"), directory
    login = steps(summary)["users: users"]["hosts"]["login01"]
    assert login["status"] == "ok", login
    assert login["detail"] == ("ada:*:20001:20001:Ada Lovelace:/home/ada:/bin/bash; logged in as ada; "
                               "associations research|ada; srun -N2 ran on hagpu01,hagpu02"), login
    assert (login["uid"], login["srun_nodes"]) == (20001, 2)
    assert summary["rehearsed_as"]["users.directory"]["rehearsed"]["uris"] == ["ldap://head02"]


# --- db-failover ------------------------------------------------------------------------------------------

def test_db_failover_backup_slurmdbd_records_jobs_in_its_own_database_while_head01_is_off(lab_ha):
    """head01 (primary controller, primary slurmdbd, one MariaDB of the pair) powered off: two jobs run on the
    backup controller, and their rows are in head02's own MariaDB, the StorageHost its slurmdbd.conf names."""
    _, summary, _, _ = lab_ha
    backup = steps(summary)["db-failover: db-failover"]["hosts"]["head02"]
    assert backup["status"] == "ok", backup
    assert backup["outage_jobs"] == 2 and " ran, their rows in head02's own database (StorageHost=localhost; " \
        "replica of head01)" in backup["detail"], backup


def test_db_failover_head01_catches_up_and_a_dump_restores(lab_ha):
    _, summary, _, _ = lab_ha
    primary = steps(summary)["db-failover: db-failover"]["hosts"]["head01"]
    assert primary["status"] == "ok", primary
    assert "mariadb and slurmdbd active, rows of 2 of 2 outage jobs replicated, sacct lists them" in primary["detail"]
    restored = primary["restored_job_rows"]
    assert restored >= 4  # deploy's srun, failover's job, the two outage jobs
    assert f"restored: {restored} job rows (live database: {restored})" in primary["detail"]
    assert "/var/lib/slurm/slurmdbd-dumps/slurm_acct_db-" in primary["detail"]


# --- day0 -------------------------------------------------------------------------------------------------

def test_day0_bmc_play_power_cycles_hagpu01_which_comes_back_by_dhcp_with_its_inventory_mac(lab_ha):
    _, summary, _, _ = lab_ha
    bmc = steps(summary)["day0: bmc"]["hosts"]
    assert sorted(bmc) == sorted(HOSTS)  # one emulated BMC per node, every one read
    assert all(bmc[h]["status"] == "ok" for h in HOSTS), bmc
    for h in ("head01", "head02", "login01"):  # status only: read, not touched
        assert bmc[h]["detail"].startswith("status: PowerState On, boot override "), bmc[h]
        assert "pxe:" not in bmc[h]["detail"] and "cycle:" not in bmc[h]["detail"]
    status, pxe, cycle = bmc["hagpu01"]["detail"].split("; ")  # hagpu01: status, one-time PXE, power cycle
    assert status.startswith("status: PowerState On, ") and pxe.startswith("pxe: PowerState On, boot override Pxe ")
    assert cycle.startswith("cycle: PowerState On, "), cycle  # read back after its node was restarted
    dhcp = steps(summary)["day0: dhcp"]["hosts"]
    assert dhcp["hagpu01"]["detail"].startswith("10.33.0.17 by DHCP for 02:00:0a:0a:00:01 "), dhcp
    assert dhcp["hagpu01"]["detail"].endswith(" after power-on, leased by head01 and head02")
    for server in ("head01", "head02"):  # the HA pair: each in its mode's state, in touch with the other
        assert dhcp[server]["status"] == "ok" and dhcp[server]["detail"].startswith("hot-standby: "), dhcp[server]


def test_day0_every_planned_name_resolves_through_both_controllers_and_time_follows_them(lab_ha):
    _, summary, _, _ = lab_ha
    dns = steps(summary)["day0: dns"]["hosts"]
    for server in ("head01", "head02"):
        # lab-ha's 16 planned names: 5 hosts, 5 BMCs, 2 switch management ports, 2 loopbacks, 2 PDUs
        assert (dns[server]["status"], dns[server]["names"], dns[server]["wrong"]) == ("ok", 16, 0), dns[server]
    assert dns["hagpu01"]["detail"] == "getent hosts hagpu01-bmc.lab-ha.internal: 10.11.0.17"
    time_ = steps(summary)["day0: time"]["hosts"]
    assert time_["hagpu01"]["status"] == "ok", time_
    # lab-ha names a site time server by name: in chrony.conf, never a source here (nothing resolves or reaches it)
    assert time_["head01"]["detail"] == ("peers head02; site server(s) ntp1.example.com in chrony.conf (unreachable "
                                         "from a rehearsal)")
    assert time_["head02"]["detail"].startswith("peers head01; ")


def _hosts(path):
    plan = expand(load_blueprint_text(path.read_text(), path.name, path.parent))
    return day0_hosts(plan, ("hagpu01",))


def _restart_unaddressed(state) -> None:
    for server in ("head01", "head02"):  # a first boot: no lease of the address on either server
        kea_command(state, server, "lease4-del", {"ip-address": HAGPU01[0]})
    lifecycle.restart(state, "hagpu01", inband_address=False)


def test_day0_a_reservation_with_another_mac_leaves_the_node_unaddressed(lab_ha):
    _, _, out, _ = lab_ha
    state = load(out)
    rendered = {s: ssh(state, s, f"cat {KEA_CONF}").stdout for s in ("head01", "head02")}
    assert all(HAGPU01[1] in text for text in rendered.values())

    def apply(texts):
        for server, text in texts.items():
            write_file(state, server, KEA_CONF, text, mode="0644")  # as the dhcp_server role writes it
            assert ssh(state, server, "systemctl restart kea-dhcp4-server").returncode == 0

    apply({s: t.replace(HAGPU01[1], "02:00:0a:0a:00:99") for s, t in rendered.items()})
    try:
        _restart_unaddressed(state)
        why, _ = wait_addressed(state, "hagpu01", HAGPU01[0], 20)
    finally:
        apply(rendered)
    assert why == "hagpu01 did not answer SSH at 10.33.0.17 within 20 s of its power-on"
    _restart_unaddressed(state)  # the rendered file back: the node gets its address again
    assert wait_addressed(state, "hagpu01", HAGPU01[0], 60)[0] == ""


def test_day0_a_changed_zone_record_fails_the_dns_check(lab_ha):
    """head01's forward zone with hagpu01's BMC record pointing elsewhere: asked of head01, the name is wrong."""
    _, _, out, path = lab_ha
    state = load(out)
    hosts = _hosts(path)
    zone = "/etc/unbound/clusterctl/lab-ha.internal.zone"  # the dns_server role's dns_server_zone_dir
    rendered = ssh(state, "head01", f"cat {zone}").stdout
    assert "\nhagpu01-bmc IN A 10.11.0.17\n" in rendered
    write_file(state, "head01", zone, rendered.replace("\nhagpu01-bmc IN A 10.11.0.17\n",
                                                       "\nhagpu01-bmc IN A 10.11.0.99\n"), mode="0644")
    try:
        assert ssh(state, "head01", "systemctl restart unbound").returncode == 0
        problems = dns_problems(state, "hagpu01", "10.33.0.19", hosts.names)
    finally:
        write_file(state, "head01", zone, rendered, mode="0644")
        assert ssh(state, "head01", "systemctl restart unbound").returncode == 0
    assert problems == ["10.33.0.19: hagpu01-bmc.lab-ha.internal -> ['10.11.0.99'], planned 10.11.0.17"]
    assert dns_problems(state, "hagpu01", "10.33.0.19", hosts.names) == []


def test_day0_a_controller_without_its_peer_line_fails_the_time_check(lab_ha):
    _, _, out, path = lab_ha
    state = load(out)
    hosts = _hosts(path)
    conf = "/etc/chrony/chrony.conf"
    rendered = ssh(state, "head01", f"cat {conf}").stdout
    broken = "".join(line for line in rendered.splitlines(keepends=True) if not line.startswith("peer "))
    assert broken != rendered
    write_file(state, "head01", conf, broken, mode="0644")
    try:
        assert ssh(state, "head01", "systemctl restart chrony").returncode == 0
        problems = controller_time_problems(state, hosts, "head01")
    finally:
        write_file(state, "head01", conf, rendered, mode="0644")
        assert ssh(state, "head01", "systemctl restart chrony").returncode == 0
    assert problems == ["head01: no peer 10.33.0.20 in chronyc sources"]
    assert controller_time_problems(state, hosts, "head01") == []


def test_lab_ha_rehearsal_leaves_nothing(lab_ha):
    lifecycle.down(lab_ha[2])
    assert_nothing_left(lab_ha[2])
