"""A rehearsal node's bind mount points are made inside the node's root, never through its symlinks on the host.

Stage 1 of a node (clusterctl/rehearse/node/lifecycle.py, STAGE1) still sees the host's mount tree. It used to run
``mkdir -p "$root$2"``: with the node's ``/var/run -> /run`` (an absolute symlink, as on Debian), that made
``/run/<mount>`` on the host and bound the share there. No node is booted here: a directory stands for the
node's root, and its absolute symlink points at a directory of the test that stands for the host's.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from clusterctl.rehearse.node import lifecycle


def _node_root(tmp_path):
    """(root, host_run): a node root whose var/run is the absolute symlink to host_run's path."""
    host_run = tmp_path / "host" / "run"
    host_run.mkdir(parents=True)
    root = tmp_path / "node"
    (root / "var").mkdir(parents=True)
    (root / "var" / "run").symlink_to(host_run)  # absolute: /<tmp>/host/run
    return root, host_run


def _bind_loop() -> str:
    """The lines of STAGE1 that make the bind mount points and mount them."""
    lines = lifecycle.STAGE1.splitlines()
    start = lines.index("while [ $# -ge 2 ]; do")
    return "\n".join(lines[start:lines.index("done", start) + 1])


def test_stage1_makes_a_mount_point_under_an_absolute_symlink_inside_the_node(tmp_path):
    root, host_run = _node_root(tmp_path)
    share = tmp_path / "share"
    share.mkdir()
    log = tmp_path / "mounts"
    from clusterctl.rehearse.node import path as node_path

    script = ("set -eu\nmount() { echo \"$@\" >> \"$LOG\"; }\n"
              + f'root="$ROOT" python="{sys.executable}" node_path="{node_path.__file__}"\n'
              + _bind_loop())
    r = subprocess.run(["/bin/sh", "-c", script, "stage1", str(share), "/var/run/scratch"], capture_output=True,
                       text=True, env={**os.environ, "ROOT": str(root), "LOG": str(log)}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not (host_run / "scratch").exists()  # nothing on the "host"
    inside = root / str(host_run).lstrip("/") / "scratch"  # the symlink's target, read inside the node
    assert inside.is_dir() and not inside.is_symlink()
    assert log.read_text() == f"--bind {share} {inside}\n"


def test_an_absolute_symlink_is_resolved_from_the_node_root(tmp_path):
    from clusterctl.rehearse.node.path import resolve_in_root

    root, host_run = _node_root(tmp_path)
    got = resolve_in_root(str(root), "/var/run/a/b")
    assert got == str(root / str(host_run).lstrip("/") / "a" / "b")
    assert os.path.isdir(got)
    assert list(host_run.iterdir()) == []


def test_dot_dot_and_relative_symlinks_never_climb_above_the_node_root(tmp_path):
    from clusterctl.rehearse.node.path import resolve_in_root

    root = tmp_path / "node"
    (root / "srv").mkdir(parents=True)
    (root / "srv" / "up").symlink_to("../../../../../..")
    assert resolve_in_root(str(root), "/../../escape") == str(root / "escape")
    assert resolve_in_root(str(root), "/srv/up/escape2") == str(root / "escape2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node"]


def test_a_symlink_loop_or_a_file_in_the_path_is_refused(tmp_path):
    from clusterctl.rehearse.node.path import resolve_in_root

    root = tmp_path / "node"
    root.mkdir()
    (root / "loop").symlink_to("/loop")
    (root / "file").write_text("")
    with pytest.raises(OSError) as loop:
        resolve_in_root(str(root), "/loop/x")
    assert loop.value.errno == errno.ELOOP
    with pytest.raises(NotADirectoryError):
        resolve_in_root(str(root), "/file/x")
    with pytest.raises(FileNotFoundError):
        resolve_in_root(str(root), "/missing", create=False)
    assert not (root / "missing").exists()


def test_the_helper_as_stage1_runs_it_prints_the_path_or_fails(tmp_path):
    from clusterctl.rehearse.node import path as node_path

    root, host_run = _node_root(tmp_path)
    (root / "file").write_text("")
    ok = subprocess.run([sys.executable, "-I", node_path.__file__, str(root), "/var/run/x"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout == f"{root}{host_run}/x\n"
    bad = subprocess.run([sys.executable, "-I", node_path.__file__, str(root), "/file/x"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stdout == "" and "not a directory in the node" in bad.stderr
