"""Another local user cannot stop elastic scaling by making clusterctl-power-save's HOME first.

When SlurmUser had no writable HOME, the program used ``$TMPDIR/clusterctl-power-save-<uid>``, a name anyone
can create first in a world-writable /tmp: a file, a symlink or a directory that is not private made the
program refuse to start (exit 2, "cannot start"), so no elastic node was ever created again. Now the CLIs'
HOME is inside the run's own ``mkdtemp`` directory. Runs the real program as
tests/cloud/test_power_save_program.py does (its ``controller`` fixture), with HOME unusable and TMPDIR a
directory of the test standing for /tmp.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cloud.test_power_save_program import controller, log_text, of, stack  # noqa: F401 - controller: a fixture

NOBODY = 65534


def _resume(root, state, bin_dir, tmpdir):
    env = {"CLUSTERCTL_POWER_SAVE_ROOT": str(root), "CLUSTERCTL_FAKE_CLOUD_DIR": str(state),
           "CLUSTERCTL_POWER_SAVE_PATH": f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": "/nonexistent", "TMPDIR": str(tmpdir)}
    return subprocess.run([str(root / "usr/local/sbin/clusterctl-resume"), "gpu001"], capture_output=True,
                          text=True, env=env, timeout=120)


def _file(path):
    path.write_text("not a directory\n")


def _symlink(path):
    elsewhere = path.parent.parent / "someone-elses"
    elsewhere.mkdir(mode=0o777)
    elsewhere.chmod(0o777)
    path.symlink_to(elsewhere)


def _open_directory(path):
    path.mkdir()
    path.chmod(0o777)


def _directory_of_another_user(path):
    path.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    else:
        path.chmod(0o777)


@pytest.mark.parametrize("plant", [_file, _symlink, _open_directory, _directory_of_another_user])
def test_a_precreated_home_in_tmp_does_not_stop_elastic_scaling(controller, tmp_path, plant):  # noqa: F811
    _, root, state, bin_dir = controller
    (root / "etc/clusterctl/stack.json").write_text(json.dumps(stack("aws")))
    tmpdir = tmp_path / "shared-tmp"
    tmpdir.mkdir()
    tmpdir.chmod(0o1777)
    planted = tmpdir / f"clusterctl-power-save-{os.getuid()}"
    plant(planted)
    before = sorted(p.name for p in tmpdir.iterdir())

    r = _resume(root, state, bin_dir, tmpdir)

    assert r.returncode == 0, log_text(root)
    assert "cannot start" not in log_text(root)
    assert [argv[:2] for argv in of(state, "gpu001")][:2] == [["ec2", "describe-instances"], ["ec2", "run-instances"]]
    assert sorted(p.name for p in tmpdir.iterdir()) == before  # the run's own directory is gone again
    assert planted.is_symlink() or planted.exists()
    if planted.is_dir() and not planted.is_symlink():
        assert list(planted.iterdir()) == []  # nothing written into the planted directory
    if plant is _symlink:
        assert list((tmp_path / "someone-elses").iterdir()) == []
