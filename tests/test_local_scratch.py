"""Node-local scratch (issue 30, item 5; docs/ansible.md, "Node-local scratch"): which drives the local_scratch role
takes and refuses (its drive-finding program's decision, on hand-written drive tables), the commands its tasks
run on them (the role's own tasks, run for real with ``ansible-playbook -c local`` against stand-in programs that
record their arguments: this machine's kernel has no md, so the RAID0 path is shown as its exact commands), and
what the plan puts on the scratch (job_container's BasePath, enroot's data and cache, the health threshold)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl import yamlout
from clusterctl.targets import render_targets
from tests.conftest import require_tool
from tests.helpers import REPO, lab, plan_of, shipped

ROLE = REPO / "roles" / "local_scratch"
_spec = importlib.util.spec_from_file_location("local_scratch_devices", ROLE / "files" / "local_scratch_devices.py")
devices = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = devices  # dataclasses look their module up there
_spec.loader.exec_module(devices)
Drive, Refused, decide = devices.Drive, devices.Refused, devices.decide

TB384 = 3_840_755_982_336
"""a 3.84 TB drive: 7,501,476,528 sectors of 512 bytes (IDEMA LBA1-03: 97,696,368 + 1,953,504 x (3840 - 50))"""
CATALOG_384 = 3_840_000_000_000
"""the catalog's nvme.size_tb 3.84, in bytes"""
MD = {"TYPE": "linux_raid_member", "LABEL": "gpu01:scratch", "UUID": "0c5f1e2a-8b3d-4e55-a7f0-3c2d1b0a9e8f"}


def dgx(n: int = 8, signature: dict | None = None) -> list[Drive]:
    """A DGX H100's NVMe namespaces: nvme0n1 and nvme1n1 the OS RAID1 (partitioned, /, /boot), then n data drives."""
    os_disks = [Drive(f"/dev/nvme{i}n1", f"259:{i}", 1_920_383_410_176, partitions=True, holders=("md0",))
                for i in (0, 1)]
    return os_disks + [Drive(f"/dev/nvme{i}n1", f"259:{i + 10}", TB384, signature=dict(signature or {}))
                       for i in range(2, 2 + n)]


def choose(drives, *, count=8, listed=False, in_use=frozenset({"259:0", "259:1"}), md_active=False):
    return decide(drives, count=count, size_bytes=CATALOG_384, listed=listed, in_use=set(in_use), md_name="scratch",
                  label="scratch", md_active=md_active)


# --- which drives ------------------------------------------------------------------------------------------

def test_eight_blank_data_drives_of_a_dgx_become_a_new_raid0_and_the_os_disks_are_skipped():
    got = choose(dgx())
    assert got["devices"] == [f"/dev/nvme{i}n1" for i in range(2, 10)]
    assert (got["action"], got["raid0"]) == ("create", True)
    assert got["notes"] == ["/dev/nvme0n1 skipped: holds or backs a mounted file system (the OS disk?)",
                            "/dev/nvme1n1 skipped: holds or backs a mounted file system (the OS disk?)"]


def test_the_os_disk_listed_by_hand_is_refused():
    with pytest.raises(Refused, match=r"^/dev/nvme0n1 holds or backs a mounted file system \(the OS disk\?\): "
                                      r"not a data drive, left untouched$"):
        choose(dgx()[:1] + dgx()[2:3], listed=True)


def test_a_partitioned_drive_is_not_a_data_drive_even_when_nothing_is_mounted():
    with pytest.raises(Refused, match="^/dev/nvme0n1 has partitions"):
        choose(dgx()[:1], listed=True, in_use=frozenset())


def test_a_drive_of_another_size_class_is_not_counted():
    drives = dgx(7) + [Drive("/dev/nvme9n1", "259:19", 7_681_501_126_656)]  # 7.68 TB
    with pytest.raises(Refused, match=r"^found 7 data NVMe drive\(s\) .*/dev/nvme9n1 skipped: is 7681501126656 "
                                      r"bytes, not the catalog's 3840000000000"):
        choose(drives)


def test_a_missing_drive_stops_the_role_naming_what_it_found():
    with pytest.raises(Refused, match=r"^found 7 data NVMe drive\(s\) \(/dev/nvme2n1, .*, /dev/nvme8n1\), the "
                                      r"catalog says 8: .*; list the drives in local_scratch_devices$"):
        choose(dgx(7))


# --- never re-created --------------------------------------------------------------------------------------

def test_drives_carrying_the_scratch_array_are_assembled_never_created():
    assert choose(dgx(signature=MD))["action"] == "assemble"
    assert choose(dgx(signature=MD), md_active=True)["action"] == "keep"


def test_a_drive_with_any_other_signature_is_never_overwritten():
    drives = dgx()
    drives[4] = Drive("/dev/nvme4n1", "259:14", TB384, signature={"TYPE": "ext4", "LABEL": "data"})
    with pytest.raises(Refused, match=r"^/dev/nvme4n1 \(TYPE=ext4, LABEL=data\): a signature that is not the "
                                      r"scratch's; never overwritten"):
        choose(drives)


def test_another_array_on_the_drives_is_foreign():
    """DGX OS's own data array, or another cluster's: a RAID member whose array is not this scratch's."""
    with pytest.raises(Refused, match="TYPE=linux_raid_member, LABEL=dgx:1"):
        choose(dgx(signature={**MD, "LABEL": "dgx:1"}))


def test_a_replaced_drive_in_the_array_stops_the_role():
    drives = dgx(signature=MD)
    drives[3] = Drive("/dev/nvme3n1", "259:13", TB384)
    with pytest.raises(Refused, match=r"^some drives carry the scratch array and others are blank \(.*"
                                      r"/dev/nvme3n1: blank.*\): a replaced drive of a RAID0 loses the array"):
        choose(drives)


def test_one_drive_gets_the_file_system_itself_and_keeps_it():
    one = [Drive("/dev/nvme1n1", "259:1", 3_000_592_982_016)]  # XE9680 (hgx-h100-8gpu): one 3 TB drive
    args = dict(count=1, in_use=frozenset())
    assert decide(one, size_bytes=3_000_000_000_000, listed=False, md_name="scratch", label="scratch",
                  md_active=False, **args)["action"] == "create"
    kept = [Drive("/dev/nvme1n1", "259:1", 3_000_592_982_016, signature={"TYPE": "xfs", "LABEL": "scratch"})]
    got = decide(kept, size_bytes=3_000_000_000_000, listed=False, md_name="scratch", label="scratch",
                 md_active=False, **args)
    assert (got["action"], got["raid0"]) == ("keep", False)


# --- the role's commands, run for real against recording stand-ins ------------------------------------------

STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> {log}
case "$(basename "$0") $*" in
{cases}
esac
exit 0
"""


def _flat(tasks):
    for t in tasks or []:
        if "block" in t:
            yield from _flat(t["block"])
        else:
            yield t


def _role_tasks(*files: str) -> list[dict]:
    return [t for f in files for t in _flat(yaml.safe_load((ROLE / "tasks" / f).read_text()))
            if not t.get("ansible.builtin.apt") and "program" not in t["name"]]


def _converge(tmp: Path, plan: dict, blkid_fs: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """assemble.yml's and mount.yml's tasks with mdadm, mkfs.xfs, blkid and mount recording their arguments;
    blkid answers ``blkid_fs`` (export lines; '' = nothing found) for the scratch device."""
    bin_dir, log = tmp / "bin", tmp / "commands.log"
    bin_dir.mkdir()
    cases = {
        "mdadm": '"mdadm --detail --brief /dev/md/scratch") echo "ARRAY /dev/md/scratch metadata=1.2 '
                 'name=gpu01:scratch UUID=0c5f1e2a:8b3d4e55:a7f03c2d:1b0a9e8f" ;;',
        "blkid": f'"blkid -p -o export "*) [ -n "{blkid_fs}" ] || exit 2; printf "%s\\n" {blkid_fs} ;;\n'
                 '"blkid -p -s UUID -o value "*) echo 5e1f0c3a-2b4d-4c6e-9f80-1a2b3c4d5e6f ;;',
        "mkfs.xfs": "", "mount": "", "systemctl": "",
    }
    for name, case in cases.items():
        (bin_dir / name).write_text(STUB.format(log=log, cases=case))
        (bin_dir / name).chmod(0o755)
    finder = bin_dir / "finder"
    finder.write_text(f"#!/bin/sh\necho '{json.dumps(plan)}'\n")
    finder.chmod(0o755)
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    variables = {**defaults, **yaml.safe_load((ROLE / "vars" / "main.yml").read_text()),
                 "local_scratch_mount": str(tmp / "raid"), "local_scratch_device_count": len(plan["devices"]),
                 "local_scratch_device_size_bytes": CATALOG_384, "local_scratch_program": str(finder),
                 "local_scratch_fstab": str(tmp / "fstab"), "local_scratch_mdadm_conf": str(tmp / "mdadm.conf"),
                 "local_scratch_unit_dir": str(tmp / "system"), "local_scratch__mounted": {"rc": 1, "stdout": ""},
                 "local_scratch_manage_services": False}
    (tmp / "fstab").write_text("UUID=1111 / ext4 defaults 0 1\n")
    (tmp / "templates").symlink_to(ROLE / "templates")  # the play's own templates/: the role's
    playbook = tmp / "play.yml"
    playbook.write_text(yamlout.dump([{"name": "local_scratch tasks", "hosts": "localhost", "connection": "local",
                                       "gather_facts": False, "vars": variables,
                                       "tasks": _role_tasks("assemble.yml", "mount.yml"),
                                       "handlers": yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())}]))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    r = subprocess.run([require_tool("ansible-playbook"), "-i", "localhost,", "-e",
                        f"ansible_python_interpreter={sys.executable}", str(playbook)], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=300)
    return r, log.read_text().splitlines() if log.exists() else []


EIGHT = [f"/dev/nvme{i}n1" for i in range(2, 10)]


def test_raid0_of_eight_blank_drives_exact_commands_mdadm_conf_fstab_and_dropin(tmp_path):
    """mdadm(8) --create RAID0, metadata 1.2, chunk 512 KiB; mkfs.xfs(8) with the stripe unit the chunk and the
    stripe width the drive count (su=512k,sw=8), labelled; fstab by UUID with nofail and x-systemd.before=slurmd;
    slurmd's RequiresMountsFor= drop-in (systemd.unit(5))."""
    r, log = _converge(tmp_path, {"devices": EIGHT, "action": "create", "raid0": True, "notes": []}, "")
    assert r.returncode == 0, r.stdout[-2000:]
    raid = str(tmp_path / "raid")
    assert log == [
        "mdadm --create /dev/md/scratch --run --level=0 --metadata=1.2 --chunk=512 --name=scratch --raid-devices=8 "
        + " ".join(EIGHT),
        "mdadm --detail --brief /dev/md/scratch",
        "blkid -p -o export /dev/md/scratch",
        "mkfs.xfs -L scratch -d su=512k,sw=8 /dev/md/scratch",
        "blkid -p -s UUID -o value /dev/md/scratch",
        f"mount -t xfs -o noatime /dev/md/scratch {raid}",
    ]
    assert (tmp_path / "mdadm.conf").read_text() == (
        "ARRAY /dev/md/scratch metadata=1.2 name=gpu01:scratch UUID=0c5f1e2a:8b3d4e55:a7f03c2d:1b0a9e8f\n")
    assert (tmp_path / "fstab").read_text() == (
        "UUID=1111 / ext4 defaults 0 1\n"
        f"UUID=5e1f0c3a-2b4d-4c6e-9f80-1a2b3c4d5e6f {raid} xfs defaults,noatime,nofail,x-systemd.device-timeout=30s,"
        "x-systemd.before=slurmd.service 0 0\n")
    dropin = (tmp_path / "system" / "slurmd.service.d" / "local-scratch.conf").read_text()
    assert dropin.endswith(f"[Unit]\nRequiresMountsFor={raid}\n")
    assert oct((tmp_path / "raid").stat().st_mode & 0o7777) == "0o1777"


def test_a_foreign_file_system_on_the_device_stops_before_mkfs(tmp_path):
    r, log = _converge(tmp_path, {"devices": ["/dev/nvme1n1"], "action": "create", "raid0": False, "notes": []},
                       "TYPE=ext4 LABEL=home")
    assert r.returncode != 0
    assert "carries TYPE=ext4 LABEL=home, not the scratch's XFS labelled scratch: never overwritten" in r.stdout
    assert not [c for c in log if c.startswith(("mkfs", "mount"))]


# --- what the plan puts on the scratch ----------------------------------------------------------------------

def test_lab_scratch_job_tmp_enroot_and_health_threshold_in_the_rendered_files():
    """lab-2node: one 3 TB data drive per hgx-h100-8gpu (the catalog's XE9680 entry), the local tier at /raid."""
    files = render_targets(plan_of(lab()))
    gpu = yaml.safe_load(files["ansible/group_vars/gpu.yml"])
    assert {k: gpu[k] for k in gpu if k.startswith("local_scratch_")} == {
        "local_scratch_mount": "/raid", "local_scratch_device_count": 1,
        "local_scratch_device_size_bytes": 3_000_000_000_000}
    assert gpu["enroot_pyxis_data_path"] == "/raid/enroot/data/user-$(id -u)"
    assert gpu["enroot_pyxis_cache_path"] == "/raid/enroot/cache/group-$(id -g)"
    assert (gpu["node_health_scratch_mount"], gpu["node_health_scratch_min_free_percent"]) == ("/raid", 10)
    assert "BasePath=/raid/slurm-job-tmp\n" in files["slurm/job_container.conf"]
    head = yaml.safe_load(files["ansible/group_vars/head.yml"])
    assert not [k for k in head if k.startswith(("local_scratch_", "node_health_scratch"))]


def test_the_scratch_play_runs_before_enroot_and_slurmd():
    site = yaml.safe_load(render_targets(plan_of(lab()))["ansible/site.yml"])
    names = [p["name"] for p in site]
    scratch = names.index("Node-local scratch on the data NVMe")
    assert site[scratch]["hosts"] == "compute" and site[scratch]["roles"] == [
        {"role": "local_scratch", "tags": ["local_scratch"]}]
    assert scratch < names.index("Accelerator and fabric stack of node group gpu") < names.index("Compute nodes")


def test_min_free_percent_from_the_blueprint():
    data = lab()
    data["storage"][1]["min_free_percent"] = 25
    gpu = yaml.safe_load(render_targets(plan_of(data))["ansible/group_vars/gpu.yml"])
    assert gpu["node_health_scratch_min_free_percent"] == 25


def test_a_cloud_instance_store_is_not_assembled():
    """aws-p5: instance NVMe has no catalog drive count; the tier stays a directory (no local_scratch play)."""
    files = render_targets(plan_of(shipped("aws-p5")))
    assert "Node-local scratch" not in files["ansible/site.yml"]


# --- the free-space health check ----------------------------------------------------------------------------

def _scratch_check(tmp: Path, size_kib: int, avail_kib: int, mounted: bool = True):
    from tests.test_node_health_check import run_check

    bin_ = tmp / "bin"
    bin_.mkdir(parents=True)
    source, on = ("/dev/md127", "/raid") if mounted else ("overlay", "/")  # unmounted: the root file system's
    (bin_ / "df").write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                             f"echo '{source} {size_kib} {size_kib - avail_kib} {avail_kib} 50% {on}'\n")
    return run_check(tmp, 2, "IDLE", "", extra_conf="NODE_HEALTH_SCRATCH_MOUNT=/raid\nNODE_HEALTH_SCRATCH_MOUNTED=1\n"
                                                     "NODE_HEALTH_SCRATCH_MIN_FREE_PERCENT=10\nNODE_HEALTH_DCGM=0\n")


def test_a_scratch_with_less_free_space_than_the_threshold_drains(tmp_path):
    """df -P -k: 30,000,000,000 KiB, 2,000,000,000 available = 6 % free, under 10 %."""
    rc, calls, err = _scratch_check(tmp_path, 30_000_000_000, 2_000_000_000)
    assert rc == 1
    assert calls == ["update NodeName=n1 State=DRAIN Reason=node-health: scratch /raid has 6 % free, less than 10 %"]


def test_a_scratch_at_the_threshold_passes_and_an_unmounted_one_drains(tmp_path):
    assert _scratch_check(tmp_path / "a", 30_000_000_000, 3_000_000_000)[:2] == (0, [])
    rc, calls, _ = _scratch_check(tmp_path / "b", 30_000_000_000, 3_000_000_000, mounted=False)
    assert (rc, calls) == (1, ["update NodeName=n1 State=DRAIN Reason=node-health: scratch /raid is not mounted"])


def test_the_program_and_the_plan_hold_the_same_size_tolerance():
    """The role's program runs on the node with the standard library alone, so it keeps its own copy."""
    from clusterctl.plan import scratch as plan_scratch

    assert devices.SIZE_TOLERANCE == plan_scratch.SIZE_TOLERANCE == 0.02
