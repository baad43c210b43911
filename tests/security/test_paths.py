"""Privilege-bearing paths (issue 24; docs/security.md, "Privilege-bearing paths"): the paths a blueprint names
that the roles mount, create, chown or trust as root are refused, with their location, when they would hand
over a node: a share over /etc or /, a StateSaveLocation at /var/spool, a trusted .deb directory in /tmp, a mount
inside another tier, a repository key over plain http. Each case goes through the real command line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import BLUEPRINTS, cli

LAB = (BLUEPRINTS / "lab-2node.yaml").read_text()
NFS_HOME = 'mount: /home, capacity_tb: 20,'
LOCAL_RAID = "{name: scratch, tier: local, mount: /raid}"
DEBS = "install: {kind: debs, path: /srv/slurm-debs, version: \"24.05.4-1\"}"
CONTROLLERS = "  controllers: head01\n"


def _validate(tmp_path: Path, old: str, new: str) -> tuple[int, str, list[str]]:
    """validate lab-2node with ``old`` replaced by ``new``: (exit code, all output, the blueprint's lines)."""
    assert old in LAB, old
    text = LAB.replace(old, new, 1)
    path = tmp_path / "bp.yaml"
    path.write_text(text)
    result = cli("validate", str(path))
    return result.returncode, result.stdout + result.stderr, text.splitlines()


def _refused_at(tmp_path: Path, old: str, new: str, value: str, *words: str) -> str:
    """The change is refused with exit 2 at the line holding ``value``, naming it and each of ``words``."""
    code, out, lines = _validate(tmp_path, old, new)
    line = next(n for n, text in enumerate(lines, 1) if value in text and text not in LAB.splitlines())
    assert code == 2, out
    assert f"{tmp_path / 'bp.yaml'}:{line}:" in out, out
    assert value in out and "hint:" in out, out
    for word in words:
        assert word in out, out
    assert "Traceback" not in out
    return out


# --- a storage tier's mount point ---------------------------------------------------------------------------

@pytest.mark.parametrize("mount,reason", [
    ("/etc", "system directory"), ("/usr/local/sbin", "system directory"), ("/root/.ssh", "system directory"),
    ("/", "cannot be / (the root of the system)"), ("/var/lib/docker", "system directory"),
    ("/boot", "system directory"), ("/run/munge", "system directory"), ("/var/run", "system directory"),
    ("/lib64", "system directory"), ("/sys/fs", "system directory"), ("/tmp/home", "every user may write"),
    ("/var/tmp", "every user may write"), ("/var/spool", "cannot be /var/spool itself"),
    ("/var", "cannot be /var itself"), ("/var/log", "cannot be /var/log itself"),
])
def test_a_share_mounted_over_a_system_directory_is_refused_at_its_line(tmp_path, mount, reason):
    out = _refused_at(tmp_path, NFS_HOME, f"mount: {mount}, capacity_tb: 20,", f"mount: {mount},",
                      "storage[0].mount", reason, "Privilege-bearing paths")
    assert "error[BP003]" in out


def test_the_issue_reproducers_are_refused_at_their_lines(tmp_path):
    """The issue's cases: any NFS server's share over /etc, /usr/local/sbin, /root/.ssh or / (which replaced the
    root line of fstab)."""
    for mount in ("/etc", "/usr/local/sbin", "/root/.ssh", "/"):
        share = ('  - {name: evil, tier: nfs, export: "nas.attacker.example:/x", mount: ' + mount
                 + ", capacity_tb: 1, read_gb_per_s: 1, write_gb_per_s: 1}\n")
        _refused_at(tmp_path, "addressing:\n", share + "addressing:\n", "nas.attacker.example", "storage[2].mount")


@pytest.mark.parametrize("mount,reason", [
    ("/home", "cannot be /home itself"), ("/etc/systemd/system/slurmd.service.d", "system directory"),
    ("/tmp/nvme", "every user may write"), ("/opt", "cannot be /opt itself"), ("/mnt", "cannot be /mnt itself"),
    ("/raid//x", "'//'"), ("/raid/", "end with '/'"),
])
def test_a_local_tier_in_a_system_directory_or_at_home_is_refused(tmp_path, mount, reason):
    _refused_at(tmp_path, LOCAL_RAID, LOCAL_RAID.replace("/raid", mount), f"mount: {mount}}}",
                "storage[1].mount", reason)


def test_a_tier_mounted_inside_another_tier_is_refused(tmp_path):
    """Nested mounts hide each other; inside a node-local tier (1777) any user can create the mount point."""
    _refused_at(tmp_path, LOCAL_RAID, LOCAL_RAID.replace("/raid", "/home/scratch"), "/home/scratch",
                "storage[1].mount", "inside the mount point '/home' of storage[0] (home)")
    share = ('  - {name: data, tier: nfs, export: "nas01:/data", mount: /raid/data, capacity_tb: 1, '
             "read_gb_per_s: 1, write_gb_per_s: 1}\n")
    _refused_at(tmp_path, "addressing:\n", share + "addressing:\n", "mount: /raid/data", "storage[2].mount",
                "node-local tier (mode 1777)")


def test_a_tier_inside_another_cannot_be_suppressed(tmp_path):
    """Checked when the blueprint loads: no suppression, in the blueprint or on the command line, reaches it."""
    text = LAB.replace(LOCAL_RAID, LOCAL_RAID.replace("/raid", "/home/scratch"), 1)
    data = yaml.safe_load(text)
    data.setdefault("validation", {})["suppress"] = [{"rule": "STORAGE005", "reason": "we know"}]
    path = tmp_path / "bp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = cli("validate", str(path))
    assert result.returncode == 2 and "inside the mount point '/home'" in result.stdout + result.stderr
    result = cli("validate", str(path), "--suppress", "STORAGE005")
    assert result.returncode == 2 and "STORAGE005" in result.stderr and "cannot be suppressed" in result.stderr


def test_two_tiers_on_one_mount_point_is_an_error_no_blueprint_suppresses():
    from clusterctl.rules.registry import all_rules

    rule = next(r for r in all_rules() if r.code == "STORAGE005")
    assert rule.suppressible is False


# --- Slurm's state and the trusted .deb directory ----------------------------------------------------------

@pytest.mark.parametrize("state,reason", [
    ("/", "cannot be / (the root of the system)"), ("/etc", "system directory"),
    ("/var/spool", "cannot be /var/spool itself"), ("/home", "cannot be /home itself"),
    ("/tmp/slurmctld", "every user may write"), ("/root/state", "system directory"),
    ("/var/lib/slurm", "system directory"),
])
def test_state_save_location_outside_its_allowed_places_is_refused(tmp_path, state, reason):
    _refused_at(tmp_path, CONTROLLERS, CONTROLLERS + f"  state_save_location: {state}\n",
                f"state_save_location: {state}", "slurm.state_save_location", reason)


def test_state_save_location_in_a_local_tier_or_at_a_mount_point_is_refused(tmp_path):
    _refused_at(tmp_path, CONTROLLERS, CONTROLLERS + "  state_save_location: /raid/slurmctld\n",
                "state_save_location: /raid/slurmctld", "inside node-local tier scratch")
    _refused_at(tmp_path, CONTROLLERS, CONTROLLERS + "  state_save_location: /home\n",
                "state_save_location: /home", "cannot be /home itself")


@pytest.mark.parametrize("path,reason", [
    ("/tmp", "every user may write"), ("/tmp/debs", "every user may write"), ("/var/tmp/debs", "every user may write"),
    ("/dev/shm/debs", "every user may write"), ("/raid/debs", "inside node-local tier scratch"),
    ("/etc/apt", "system directory"), ("/srv", "cannot be /srv itself"),
])
def test_a_trusted_deb_directory_anyone_can_write_is_refused(tmp_path, path, reason):
    _refused_at(tmp_path, DEBS, DEBS.replace("/srv/slurm-debs", path), f"path: {path},", "slurm.install.path",
                reason)


def test_the_usual_places_stay_valid(tmp_path):
    for old, new in ((CONTROLLERS, CONTROLLERS + "  state_save_location: /var/lib/slurm/slurmctld\n"),
                     (CONTROLLERS, CONTROLLERS + "  state_save_location: /var/spool/slurmctld\n"),
                     (LOCAL_RAID, LOCAL_RAID.replace("/raid", "/opt/dlami/nvme")),
                     (DEBS, DEBS.replace("/srv/slurm-debs", "/var/cache/slurm-debs"))):
        code, out, _ = _validate(tmp_path, old, new)
        assert code == 0, out


# --- the repository key -----------------------------------------------------------------------------------

REPO = ('install: {kind: repo, url: "https://repo.example.com/slurm", suite: jammy, version: "24.05.4-1", '
        'key: KEY}')


def test_a_repository_key_over_plain_http_is_refused(tmp_path):
    _refused_at(tmp_path, DEBS, REPO.replace("KEY", '"http://repo.example.com/key.asc"'), "http://repo.example.com",
                "slurm.install.key", "https://")


def test_a_key_file_without_a_pinned_fingerprint_is_refused(tmp_path):
    _refused_at(tmp_path, DEBS, REPO.replace("KEY", "/etc/apt/keyrings/slurm.gpg"), "/etc/apt/keyrings/slurm.gpg",
                "slurm.install.key_fingerprint", "must pin the one it holds")
    fpr = "0123456789ABCDEF0123456789ABCDEF01234567"
    code, out, _ = _validate(tmp_path, DEBS, REPO.replace("KEY", "/etc/apt/keyrings/slurm.gpg")
                             .replace("}", f", key_fingerprint: {fpr}}}"))
    assert code == 0, out
    short = REPO.replace("KEY", "/etc/apt/keyrings/slurm.gpg").replace("}", ", key_fingerprint: ABCD1234}")
    _refused_at(tmp_path, DEBS, short, "key_fingerprint: ABCD1234", "40 or 64 hexadecimal digits")


def test_the_pinned_fingerprint_reaches_the_role(tmp_path):
    fpr = "0123456789ABCDEF0123456789ABCDEF01234567"
    text = LAB.replace(DEBS, REPO.replace("KEY", "/etc/apt/keyrings/slurm.gpg")
                       .replace("}", f", key_fingerprint: {fpr}}}"), 1)
    (tmp_path / "bp.yaml").write_text(text)
    result = cli("render", str(tmp_path / "bp.yaml"), "-o", str(tmp_path / "out"))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    all_vars = yaml.safe_load((tmp_path / "out" / "ansible" / "group_vars" / "all.yml").read_text())
    assert all_vars["slurm_preflight_repo_key"] == "/etc/apt/keyrings/slurm.gpg"
    assert all_vars["slurm_preflight_repo_key_fingerprint"] == fpr


# --- shared mounts are nosuid,nodev ----------------------------------------------------------------------------

def test_every_shared_mount_is_rendered_nosuid_nodev(tmp_path):
    """A setuid binary or a device file on a file server must not give root on the nodes: the rendered mounts
    carry their options, ending nosuid,nodev, and so do the role's defaults and the acceptance tests."""
    result = cli("render", str(BLUEPRINTS / "dgx-h100-superpod-1su.yaml"), "-o", str(tmp_path / "out"))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    gpu = yaml.safe_load((tmp_path / "out" / "ansible" / "group_vars" / "dgx.yml").read_text())
    opts = {m["path"]: m["opts"] for m in gpu["storage_clients_mounts"]}
    assert opts == {"/lustre": "defaults,_netdev,nofail,flock,nosuid,nodev",
                    "/home": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev"}
    role = yaml.safe_load((tmp_path / "out" / "ansible" / "roles" / "storage_clients" / "defaults" / "main.yml")
                          .read_text())
    assert role["storage_clients_mount_options"] == {"nfs": "defaults,_netdev,nofail,hard,noatime,nosuid,nodev",
                                                     "lustre": "defaults,_netdev,nofail,flock,nosuid,nodev",
                                                     "wekafs": "defaults,_netdev,nofail,nosuid,nodev"}
    acceptance = (tmp_path / "out" / "tests" / "test_dgx.py").read_text()
    assert "'/home', 'nfs', 'defaults,_netdev,nofail,hard,noatime,nosuid,nodev')" in acceptance


# --- the policy itself ---------------------------------------------------------------------------------------

SHARED_MOUNT, LOCAL_DIRECTORY, STATE_DIRECTORY, PACKAGE_DIRECTORY = "shared", "local", "state", "debs"
"""the uses of clusterctl.path_policy (imported in the tests: the module is new with issue 24)"""

@pytest.mark.parametrize("path,use", [
    ("/home", SHARED_MOUNT), ("/lustre", SHARED_MOUNT), ("/mnt/weka", SHARED_MOUNT), ("/raid", LOCAL_DIRECTORY),
    ("/opt/dlami/nvme", LOCAL_DIRECTORY), ("/var/spool/slurmctld", STATE_DIRECTORY),
    ("/var/lib/slurm/slurmctld", STATE_DIRECTORY), ("/lustre/slurm/statesave", STATE_DIRECTORY),
    ("/srv/slurm-debs", PACKAGE_DIRECTORY), ("/home/x", LOCAL_DIRECTORY),
])
def test_the_policy_allows_the_usual_places(path, use):
    from clusterctl.path_policy import refusal

    assert refusal(path, use) is None


@pytest.mark.parametrize("path,use", [
    ("/", SHARED_MOUNT), ("/etc", SHARED_MOUNT), ("/etc/x", LOCAL_DIRECTORY), ("/usr", STATE_DIRECTORY),
    ("/bin", SHARED_MOUNT), ("/sbin/x", SHARED_MOUNT), ("/lib", SHARED_MOUNT), ("/lib32", SHARED_MOUNT),
    ("/libx32/x", SHARED_MOUNT), ("/dev/x", LOCAL_DIRECTORY), ("/proc", SHARED_MOUNT), ("/snap/x", SHARED_MOUNT),
    ("/var/lib", STATE_DIRECTORY), ("/var/lib/slurm", STATE_DIRECTORY), ("/var/lib/dpkg", PACKAGE_DIRECTORY),
    ("/tmp", LOCAL_DIRECTORY), ("/var/tmp", PACKAGE_DIRECTORY), ("/dev/shm/x", PACKAGE_DIRECTORY),
    ("/var", SHARED_MOUNT), ("/var/spool", STATE_DIRECTORY), ("/var/log", SHARED_MOUNT),
    ("/home", LOCAL_DIRECTORY), ("/home", STATE_DIRECTORY), ("/home", PACKAGE_DIRECTORY),
    ("/a/../etc", SHARED_MOUNT), ("/a/./b", SHARED_MOUNT), ("/a//b", SHARED_MOUNT), ("/a/", SHARED_MOUNT),
    ("/var/lib/slurm/../../../etc", STATE_DIRECTORY), ("/a b", SHARED_MOUNT),
])
def test_the_policy_refuses_system_shared_and_world_writable_places(path, use):
    from clusterctl.path_policy import refusal

    assert refusal(path, use) is not None


# --- the repository every node pulls from --------------------------------------------------------------------

@pytest.mark.parametrize("source,reason", [("file:///tmp/render.git", "every user may write"),
                                           ("file:///etc/render.git", "system directory"),
                                           ("file:///", "cannot be / (the root of the system)")])
def test_a_pull_source_in_a_place_anyone_can_write_is_refused(tmp_path, source, reason):
    """Pull mode: every node applies what the repository holds, as root."""
    _refused_at(tmp_path, CONTROLLERS, CONTROLLERS + f'  rollout: {{pull: {{source: "{source}"}}}}\n', source,
                "slurm.rollout.pull.source", reason)
    code, out, _ = _validate(tmp_path, CONTROLLERS,
                             CONTROLLERS + '  rollout: {pull: {source: "file:///srv/clusterctl/render.git"}}\n')
    assert code == 0, out
