"""The acceptance sweep of issue 24: no blueprint renders with a payload in a privilege-bearing position, and
nothing exits 3.

Every string field of the schema (located by tests/test_injection.py's walk, in the lab blueprint with every
optional setting, aws-p5 and lab-ha first) is given every payload of each class of tests/security/payloads.py
(addresses spelled as names, reserved names, another entity's name in another case, privileged paths, world and
public ranges, a planned host's address, a key over plain http, reader-hiding characters, the syntax payloads
of issue 9), plus added entities whose names collide in case and reader-hiding characters written raw into the
YAML text. Each blueprint is read from a file, validated and rendered in-process as `clusterctl render` does
(tests/security/sweep.py); the answer must be a refusal (exit 2, or exit 1 for an error finding) or a render
whose positions (tests/security/positions.py) carry nothing the unmodified blueprint's render does not: no
name that is an address or reserved, no case collision, no privileged path, no world range, no planned address
as a storage or database host, no plain-http key, no raw reader-hiding character. The figures per class are
printed (``-s``) and by ``python3 benchmarks/sweep_meaning.py``.
"""

from __future__ import annotations

import pytest

from tests.security import payloads as P
from tests.security import sweep as S
from tests.security.positions import Positions, bad_name, privileged_path, read_positions, violations, world_range


def test_every_base_renders_clean():
    """The unmodified bases render with no error finding, so a refusal in the sweep is the payload's doing,
    and every string field of the schema has a place in one of them."""
    from tests.test_injection import string_fields

    assert set(S.sites()) == set(string_fields())
    for name in sorted({site.base for site in S.sites().values()}):
        b = S.baseline(name)
        assert b.positions.names["host"], name
    assert S.baseline("lab").compute_address == "10.10.0.17"  # gpu01 in the lab's hosts file


@pytest.mark.parametrize("name,why", [
    ("3405803781", "address 203.0.113.5"), ("2130706433", "address 127.0.0.1"), ("0x7f000001", "address 127.0.0.1"),
    ("0177.0.0.1", "address 127.0.0.1"), ("127.1", "address 127.0.0.1"), ("::1", "address ::1"),
    ("::ffff:127.0.0.1", "address ::ffff:7f00:1"), ("localhost", "reserved"), ("LOCALHOST", "reserved"),
    ("localhost.localdomain", "reserved"), ("ip6-localhost", "reserved"), ("ip6-loopback", "reserved"),
    ("ALL", "reserved"), ("DEFAULT", "reserved"), ("ungrouped", "reserved"), ("gpu01", None), ("head01", None),
    ("ip6", None), ("alloy", None), ("ip6-localhost-leaf01", None), ("localhost-leaf01", None),
    ("gpu01.localhost", "reserved")])
def test_a_name_that_is_an_address_or_reserved_is_seen(name, why):
    assert bad_name(name) == why


@pytest.mark.parametrize("path,bad", [
    ("/", True), ("/etc", True), ("/etc/cron.d", True), ("/usr/local/sbin", True), ("/root/.ssh", True),
    ("/var/spool", True), ("/var/run", True), ("/run/munge", True), ("/lib/systemd/system", True), ("/tmp", True),
    ("/dev/shm", True), ("/proc/sys", True), ("/boot", True), ("/etc/../etc", True), ("/home", False),
    ("/raid", False), ("/var/spool/slurmctld", False), ("/srv/slurm-debs", False), ("/lustre", False)])
def test_a_privileged_path_is_seen(path, bad):
    assert privileged_path(path) is bad


@pytest.mark.parametrize("text,bad", [
    ("0.0.0.0/0", True), ("0.0.0.0/1", True), ("128.0.0.0/1", True), ("::/0", True), ("2000::/3", True),
    ("8.8.8.0/24", True), ("*", True), ("10.10.0.0/24", False), ("fd00::/64", False), ("203.0.113.0/24", False)])
def test_a_world_range_is_seen(text, bad):
    assert world_range(text) is bad


@pytest.mark.parametrize("text,bad", [
    ("0.0.0.0/0", True), ("0.0.0.0/1", True), ("128.0.0.0/1", True), ("::/0", True), ("2000::/3", True),
    ("8.8.8.0/24", False), ("198.51.100.7/32", False), ("2001:db8::/48", False)])
def test_an_admin_cidr_may_be_public_but_not_the_world(text, bad):
    """SSH to the head node comes from an office's public range: only a range wider than a /8 is the world."""
    assert world_range(text, public_ok=True) is bad


LAB_FILES = {
    "hosts/hosts": "10.10.0.17 gpu01\n10.10.0.19 head01\n",
    "ansible/inventory.yml": "all:\n  children:\n    gpu:\n      hosts:\n        gpu[01:02]:\n",
    "ansible/group_vars/gpu.yml": ('storage_clients_mounts:\n'
                                   '  - {name: home, path: /home, src: "head01:/export/home"}\n'
                                   'storage_clients_local_dirs: ["/raid"]\n'
                                   'nfs_server_exports:\n'
                                   '  - {host: head01, path: /export/home, clients: "10.10.0.0/24"}\n'
                                   'slurm_preflight_repo_key: "https://repo.example/key.asc"\n'),
    "slurm/slurm.conf": "SlurmctldHost=head01\nNodeName=gpu[01-02] State=UNKNOWN\nPartitionName=gpu Nodes=gpu[01-02]\n"
                        "StateSaveLocation=/var/spool/slurmctld\n",
    "slurm/slurmdbd.conf.j2": "DbdHost=head01\nStorageHost=localhost\n",
}


@pytest.mark.parametrize("file,old,new,expected", [
    ("hosts/hosts", "head01", "2130706433", "host name '2130706433' is address 127.0.0.1"),
    ("hosts/hosts", "10.10.0.19 head01", "10.10.0.19 head01\n10.10.0.20 HEAD01", "differ only in case"),
    ("ansible/inventory.yml", "gpu:", "ungrouped:", "group name 'ungrouped' is reserved"),
    ("ansible/group_vars/gpu.yml", "path: /home", "path: /etc", "privileged path '/etc'"),
    ("ansible/group_vars/gpu.yml", '"/raid"', '"/tmp"', "privileged path '/tmp'"),
    ("ansible/group_vars/gpu.yml", "head01:/export/home", "10.10.0.17:/export/home", "planned host address"),
    ("ansible/group_vars/gpu.yml", "head01:/export/home", "localhost:/export/home", "is reserved"),
    ("ansible/group_vars/gpu.yml", "10.10.0.0/24", "::/0", "world/public range '::/0'"),
    ("ansible/group_vars/gpu.yml", "https://repo", "http://repo", "repository key over plain http"),
    ("slurm/slurm.conf", "NodeName=gpu[01-02]", "NodeName=ALL", "slurm-node name 'ALL' is reserved"),
    ("slurm/slurm.conf", "=/var/spool/slurmctld", "=/var/spool", "privileged path '/var/spool'"),
    ("slurm/slurmdbd.conf.j2", "StorageHost=localhost", "StorageHost=0x0a0a0011", "planned host address"),
    ("slurm/slurm.conf", "PartitionName=gpu ", "PartitionName=gpu\u2028 ", "raw U+2028"),
])
def test_the_positions_see_a_violation(file, old, new, expected):
    """The readers and checks can fail: each changed render has one violation the unchanged one has not."""
    base = read_positions(LAB_FILES)
    assert violations(base, base) == []
    assert old in LAB_FILES[file]
    changed = read_positions({**LAB_FILES, file: LAB_FILES[file].replace(old, new, 1)})
    found = violations(changed, base)
    assert any(expected in v for v in found), found


def test_a_syntax_payload_in_a_position_is_seen():
    base = read_positions(LAB_FILES)
    files = {**LAB_FILES, "slurm/slurm.conf": LAB_FILES["slurm/slurm.conf"].replace("head01", "head01$(id)")}
    assert any("payload '$(id)'" in v for v in violations(read_positions(files), base, ("$(id)",)))


def test_a_render_is_judged_against_its_own_baseline():
    """A value the unmodified render has in the same position is not a finding (StorageHost=localhost)."""
    base = read_positions(LAB_FILES)
    assert isinstance(base, Positions) and ("slurm/slurmdbd.conf.j2:StorageHost", "localhost") in base.storage_hosts
    assert violations(read_positions(dict(LAB_FILES)), base) == []


@pytest.mark.parametrize("cls", P.CLASSES)
def test_sweep(cls):
    """Every case of one payload class: refused, or rendered with nothing new in a privilege-bearing position;
    never exit 3."""
    result = S.run_class(cls)
    print(f"\n{result.summary()}")
    assert result.cases > 0
    if result.failures:
        shown = "\n  ".join(result.failures[:25])
        pytest.fail(f"{result.summary()}; {len(result.failures)} finding(s), the first "
                    f"{min(25, len(result.failures))}:\n  {shown}", pytrace=False)
