"""The writer: never a user's file lost, complete old or new render after any interruption, one writer at a
time, no link followed, unchanged files keep bytes and timestamps, drift detection, ownership."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import stat
import threading
import time
from pathlib import Path

import pytest

from clusterctl import write
from clusterctl.write import (JOURNAL, LOCK, MANIFEST, RENDER_SEALED, STAGED, OutputDirError, OutputLockedError,
                              compare, recover, update_files, write_tree)

FILES = {"slurm/slurm.conf": "ClusterName=lab\n", "nccl/nccl.conf": "NCCL_IB_HCA=mlx5\n"}


def test_write_then_rewrite_keeps_unchanged_timestamps(tmp_path):
    out = tmp_path / "out"
    r = write_tree(FILES, out)
    assert sorted(r.added) == sorted(FILES) and (out / "slurm/slurm.conf").read_text() == "ClusterName=lab\n"
    old = out / "nccl/nccl.conf"
    os.utime(old, (1_000_000, 1_000_000))
    r = write_tree(FILES | {"slurm/slurm.conf": "ClusterName=lab2\n"}, out)
    assert r.changed == ["slurm/slurm.conf"] and r.unchanged == ["nccl/nccl.conf"]
    assert (out / "nccl/nccl.conf").stat().st_mtime == 1_000_000
    assert (out / "slurm/slurm.conf").read_text() == "ClusterName=lab2\n"


def test_files_no_longer_rendered_are_removed(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    r = write_tree({"slurm/slurm.conf": "ClusterName=lab\n"}, out)
    assert r.removed == ["nccl/nccl.conf"] and not (out / "nccl/nccl.conf").exists()


def test_compare_reports_hand_edits_and_missing_files(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "slurm/slurm.conf").write_text("ClusterName=edited\n")
    (out / "nccl/nccl.conf").unlink()
    r = compare(FILES, out)
    assert r.changed == ["slurm/slurm.conf"] and r.added == ["nccl/nccl.conf"] and r.drift


def test_a_failed_render_leaves_the_previous_output(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_tree(FILES, out)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(write, "_manifest_text", boom)
    with pytest.raises(OutputDirError, match="disk full"):
        write_tree({"slurm/slurm.conf": "half\n"}, out)
    assert (out / "slurm/slurm.conf").read_text() == "ClusterName=lab\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary directory left behind


def test_refuses_a_directory_it_does_not_own(tmp_path):
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputDirError):
        write_tree(FILES, out)
    assert (out / "thesis.tex").exists() and not (out / MANIFEST).exists()


def test_unsafe_paths_are_refused(tmp_path):
    with pytest.raises(ValueError):
        write_tree({"../escape": "x"}, tmp_path / "out")


def test_files_clusterctl_did_not_render_survive_a_rerender(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES | {"pulumi/Pulumi.yaml": "name: x\n"}, out)
    (out / "pulumi" / "Pulumi.prod.yaml").write_text("config: {secure: v1:abc}\n")  # pulumi config set --secret
    (out / "pulumi" / "venv" / "bin").mkdir(parents=True)
    (out / "pulumi" / "venv" / "bin" / "python").write_text("#!")
    (out / "outputs.json").write_text("{}")
    r = write_tree(FILES | {"pulumi/Pulumi.yaml": "name: y\n"}, out)
    assert r.changed == ["pulumi/Pulumi.yaml"]
    assert (out / "pulumi" / "Pulumi.prod.yaml").read_text() == "config: {secure: v1:abc}\n"
    assert (out / "pulumi" / "venv" / "bin" / "python").read_text() == "#!"
    assert (out / "outputs.json").read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# --- never a user's file lost, complete old or complete new after any interruption ---------------------------
#
# A render owns the paths in its files dict; everything else under the output directory belongs to the user.
# The tests below write version OLD over version NEW (and back) and interrupt the writer: at every mutating
# system call in turn (exhaustive, deterministic), and at random instants (seeded) with SIGKILL and SIGINT.

OLD = {
    "slurm/slurm.conf": "ClusterName=old\n", "slurm/gres.conf": "Name=gpu\n",
    "nccl/a.conf": "NCCL_IB_HCA=mlx5_0\n", "nccl/b.conf": "NCCL_IB_HCA=mlx5_1\n",
    "ansible/roles/common/tasks/main.yml": "- debug: msg=hi\n", "ansible/roles/common/files/check.sh": "#!/bin/sh\n",
    "ansible/site.yml": "- hosts: all\n", "pulumi/Pulumi.yaml": "name: old\n", "old-only/deep/x.conf": "x\n",
    "top.txt": "top\n",
}
NEW = {
    "slurm/slurm.conf": "ClusterName=new\n", "slurm/gres.conf": "Name=gpu\n", "nccl/a.conf": "NCCL_IB_HCA=mlx5_2\n",
    "ansible/roles/common/tasks/main.yml": "- debug: msg=hi\n", "ansible/roles/common/files/check.sh": "#!/bin/sh\n",
    "ansible/site.yml": "- hosts: all\n  roles: [common]\n", "pulumi/Pulumi.yaml": "name: new\n",
    "new-only/deep/y.conf": "y\n", "top.txt": "top\n",
}
EXECUTABLE = {id(OLD): {"ansible/roles/common/files/check.sh"}, id(NEW): set()}  # NEW only flips a mode


def _executable(files: dict) -> set[str]:
    return EXECUTABLE.get(id(files), {p for p in files if p.endswith(".sh")})


def _user_files(out: Path, outside: Path) -> None:
    """What an operator keeps in a render directory: stack settings with secrets, a venv with links, a vault
    file, notes at the top, a file in a rendered directory, and a link to a private directory elsewhere."""
    (out / "notes.txt").write_text("mine\n")
    (out / "pulumi" / "Pulumi.prod.yaml").write_text("config: {secure: v1:abc}\n")
    (out / "pulumi" / "venv" / "bin").mkdir(parents=True)
    (out / "pulumi" / "venv" / "lib").mkdir()
    (out / "pulumi" / "venv" / "lib" / "site.py").write_text("# site\n")
    (out / "pulumi" / "venv" / "lib64").symlink_to("lib")
    (out / "pulumi" / "venv" / "bin" / "python").write_text("#!")
    (out / "pulumi" / "venv" / "bin" / "python").chmod(0o700)
    (out / "pulumi" / "venv").chmod(0o700)
    (out / "ansible" / "group_vars").mkdir(parents=True, exist_ok=True)
    (out / "ansible" / "group_vars" / "vault.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n")
    (out / "ansible" / "group_vars" / "vault.yml").chmod(0o600)
    (out / "slurm" / "local.conf").write_text("# site-local include\n")
    outside.mkdir()
    (outside / "key").write_text("secret")
    (outside / "key").chmod(0o600)
    outside.chmod(0o700)
    (out / "pulumi" / "private").symlink_to(outside)


def _walk(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (links not followed): relative path -> (kind, content or target, mode)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path), 0)
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", None, stat.S_IMODE(st.st_mode))
            else:
                found[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return found


def _split(out: Path, versions: list[dict]) -> tuple[dict, dict]:
    """(the user's entries, the rendered files as path -> bytes) of ``out``."""
    rendered_paths = {p for v in versions for p in v}
    rendered_dirs = {p.rsplit("/", i)[0] for p in rendered_paths for i in range(1, p.count("/") + 1)}
    user, rendered = {}, {}
    for rel, entry in _walk(out).items():
        name = rel.rsplit("/", 1)[-1]
        if rel in rendered_paths:
            rendered[rel] = entry
        elif rel not in rendered_dirs and name not in write.RESERVED and not name.endswith(STAGED):
            user[rel] = entry
    return user, rendered


def _assert_complete(out: Path, versions: list[dict], user_before: dict, outside: Path, outside_before: dict):
    """After recovery: the user's entries exactly as they were, the rendered files exactly one version with
    its modes and manifest, no leftovers of the writer. Returns the version found."""
    user, rendered = _split(out, versions)
    assert user == user_before
    assert _walk(outside) == outside_before and stat.S_IMODE(outside.stat().st_mode) == 0o700
    matches = [v for v in versions if {p: e[1] for p, e in rendered.items()} == {p: t.encode() for p, t in v.items()}]
    assert len(matches) == 1, sorted(rendered)
    version = matches[0]
    for p in version:
        assert rendered[p][2] == (0o755 if p in _executable(version) else 0o644), p
    r = compare(version, out, executable=_executable(version))
    assert not r.drift, r
    leftovers = [p for p in _walk(out) if p.rsplit("/", 1)[-1].endswith((STAGED, ".part")) or p == JOURNAL]
    assert leftovers == []
    return version


@pytest.fixture
def scene(tmp_path):
    """OLD rendered into out/ with the user's files around it."""
    out, outside = tmp_path / "out", tmp_path / "outside"
    write_tree(OLD, out, executable=_executable(OLD))
    _user_files(out, outside)
    user, _ = _split(out, [OLD, NEW])
    return out, outside, user, _walk(outside)


MUTATIONS = ("replace", "unlink", "rmdir", "mkdir", "write", "fchmod", "rename")


def _interrupted_child(files: dict, out: Path, at: int, sig: int) -> int:
    """Fork a writer of ``files`` that sends itself ``sig`` just before its ``at``-th mutating system call
    (at < 0: never). Returns the number of mutating calls it made, or -1 if it was interrupted."""
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count, and die (or be interrupted) at the chosen call
        os.close(read)
        calls = [0]

        def counted(real):
            def call(*args, **kwargs):
                if calls[0] == at:
                    os.kill(os.getpid(), sig)
                calls[0] += 1
                return real(*args, **kwargs)
            return call

        for name in MUTATIONS:
            setattr(os, name, counted(getattr(os, name)))
        try:
            write_tree(files, out, executable=_executable(files))
        except BaseException:  # KeyboardInterrupt from SIGINT: the writer rolled back
            pass
        finally:
            os.close(write_end) if at >= 0 else os.write(write_end, str(calls[0]).encode())
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read, 64):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return int(data) if data else -1


def test_an_interruption_at_every_step_leaves_the_old_or_the_new_render_and_every_user_file(scene, monkeypatch):
    out, outside, user, outside_before = scene
    monkeypatch.setattr(write, "DURABLE", False)  # fsync only matters for power cuts, not for killed processes
    steps = {}
    for source, target in ((OLD, NEW), (NEW, OLD)):
        write_tree(source, out, executable=_executable(source))
        steps[id(target)] = _interrupted_child(target, out, -1, 0)
    assert min(steps.values()) > 20  # staging, commit, install, chmod, delete, manifest: all counted
    seen = {"old": 0, "new": 0, "recovered": 0}
    runs = [(signal.SIGKILL, OLD, NEW), (signal.SIGKILL, NEW, OLD), (signal.SIGINT, OLD, NEW)]
    for sig, source, target in runs:  # SIGINT one way only: its paths (roll back, held back) are symmetric
        for at in range(steps[id(target)] + 1):
            write_tree(source, out, executable=_executable(source))
            _interrupted_child(target, out, at, sig)
            assert _split(out, [OLD, NEW])[0] == user  # even before recovery: nothing of the user's moved
            if sig == signal.SIGINT:  # rolled back at once while staging, held back while applying
                assert not (out / JOURNAL).exists(), at
            seen["recovered"] += bool(recover(out))
            found = _assert_complete(out, [OLD, NEW], user, outside, outside_before)
            seen["old" if found is source else "new"] += 1
    # both outcomes happen: killed while staging is rolled back, killed after the commit is rolled forward
    assert seen["old"] > 5 and seen["new"] > 5 and seen["recovered"] > 5, seen


def _version(tag: str, n: int = 90) -> dict[str, str]:
    """A larger tree: a third of the files change between versions, some appear, some go, directories too."""
    dirs = ["slurm", "nccl", "ansible/group_vars", "ansible/roles/r{}/tasks", "pulumi", f"only-{tag}/sub"]
    files = {}
    for i in range(n):
        if tag == "B" and i % 11 == 0:
            continue
        body = f"{tag if i % 3 == 0 else 'same'} {i}\n" * 100
        files[f"{dirs[i % 6].format(i % 7)}/f{i:04}.conf"] = body
    return files


def _replaces_in_one_write(target: dict[str, str], out: Path) -> int:
    """How many ``os.replace`` calls one write of ``target`` over the render in ``out`` makes."""
    real, calls, writer = os.replace, [], threading.get_ident()

    def counting(*args, **kwargs):
        if threading.get_ident() == writer:  # not another thread's replace (a test's leftover in this worker)
            calls.append(args)
        return real(*args, **kwargs)
    os.replace = counting
    try:
        write_tree(target, out)
    finally:
        os.replace = real
    return len(calls)


def test_kill_loop_at_seeded_points_of_the_write_never_loses_a_file(tmp_path):
    """SIGKILL and SIGINT, alternating, each landing at a seeded point of a write of ~90 files: the writer (a
    forked child) stops itself at its N-th ``os.replace`` and tells the parent, which then kills it - so every
    kill lands where the seed says, whatever the machine's speed, and the outcome of each kill is the same on
    every run. The first two kills land before the commit point (a SIGKILL before the journal says 'apply', a
    SIGINT before the journal is first written), so both outcomes are asked for whatever the seed draws."""
    out, outside = tmp_path / "out", tmp_path / "outside"
    a, b = _version("A"), _version("B")
    write_tree(a, out)
    _user_files(out, outside)
    user, _ = _split(out, [a, b])
    outside_before = _walk(outside)
    total = max(_replaces_in_one_write(b, out), _replaces_in_one_write(a, out))
    rng = random.Random(9)
    points = [2, 1] + [rng.randint(1, total) for _ in range(18)]
    current, interrupted, outcomes = a, 0, set()
    for i, point in enumerate(points):
        target = b if current is a else a
        ready, stopped = os.pipe()
        go_on, go = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            os.close(go)
            real, seen = os.replace, []

            def stop_at_point(*args, **kwargs):
                seen.append(args)
                if len(seen) == point:
                    os.write(stopped, b"x")  # stopped before this replace: the parent signals now
                    # SIGKILL ends the writer here; SIGINT raises KeyboardInterrupt here, or - where the writer
                    # defers an interrupt until its files are consistent - lets it go on when told
                    os.read(go_on, 1)
                return real(*args, **kwargs)
            os.replace = stop_at_point
            try:
                write_tree(target, out)
            except BaseException:
                pass
            finally:
                os._exit(0)
        os.close(stopped)
        os.close(go_on)
        if os.read(ready, 1) == b"x":  # else this write replaced fewer files than ``point`` and finished
            os.kill(pid, signal.SIGKILL if i % 2 == 0 else signal.SIGINT)
            try:
                os.write(go, b"x")
            except BrokenPipeError:  # the writer is gone already
                pass
        os.close(ready)
        os.close(go)
        os.waitpid(pid, 0)
        assert _split(out, [a, b])[0] == user
        interrupted += (out / JOURNAL).exists()
        recover(out)
        current = _assert_complete(out, [a, b], user, outside, outside_before)
        outcomes.add("new" if current is target else "old")
    assert interrupted >= 3, interrupted  # kills in the middle of the replacements (a journal to recover)
    assert outcomes == {"old", "new"}


def test_concurrent_writers_leave_one_complete_render(tmp_path):
    """Four writers of two versions at once, three rounds: each round ends with one complete render."""
    out, outside = tmp_path / "out", tmp_path / "outside"
    a, b = _version("A", 60), _version("B", 60)
    write_tree(a, out)
    _user_files(out, outside)
    user, _ = _split(out, [a, b])
    outside_before = _walk(outside)
    for _ in range(3):
        pids = []
        for k in range(4):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    write_tree(b if k % 2 else a, out, lock_timeout=60)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        codes = [os.waitpid(pid, 0)[1] for pid in pids]
        assert codes == [0, 0, 0, 0]  # each waited for the lock and wrote a complete render
        assert not (out / JOURNAL).exists()
        _assert_complete(out, [a, b], user, outside, outside_before)


def test_a_second_writer_gives_up_with_the_holders_pid(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    assert not (out / LOCK).exists()  # only while a write holds it
    with open(out / LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(f"{os.getpid()}\n")
        held.flush()
        started = time.monotonic()
        with pytest.raises(OutputLockedError, match=rf"pid {os.getpid()}\) is writing this directory"):
            write_tree(FILES | {"slurm/slurm.conf": "x\n"}, out, lock_timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 30  # waited its timeout, then gave up (a busy runner is slow)
        with pytest.raises(OutputLockedError):  # --check does not read a directory being written either
            compare(FILES, out, lock_timeout=0.1)
    assert (out / "slurm/slurm.conf").read_text() == "ClusterName=lab\n"
    write_tree(FILES | {"slurm/slurm.conf": "x\n"}, out, lock_timeout=0.3)  # free again (the stale file is reused)
    assert not (out / LOCK).exists()  # removed by its holder on release: renders stay byte-identical


# --- symlinks and modes ---------------------------------------------------------------------------------------

def test_a_symlinked_output_directory_is_written_through(tmp_path):
    real = tmp_path / "real"
    link = tmp_path / "out"
    real.mkdir()
    link.symlink_to(real)
    write_tree(FILES, link)
    write_tree(FILES | {"slurm/slurm.conf": "ClusterName=lab2\n"}, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (real / "slurm/slurm.conf").read_text() == "ClusterName=lab2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "real"]  # nothing beside it


def test_a_dangling_symlink_output_directory_is_refused(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(OutputDirError, match="which does not exist"):
        write_tree(FILES, link)
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_modes_are_set_only_on_rendered_files_never_through_links(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    write_tree(FILES | {"tools/run.sh": "#!/bin/sh\n"}, out, executable={"tools/run.sh"})
    outside.mkdir()
    (outside / "private").write_text("x")
    (outside / "private").chmod(0o600)
    outside.chmod(0o700)
    (out / "slurm" / "elsewhere").symlink_to(outside)  # a link in the output to a directory outside
    (out / "pulumi").mkdir()
    (out / "pulumi" / "venv").mkdir(mode=0o700)
    (out / "pulumi" / "venv").chmod(0o700)
    (out / "tools").chmod(0o750)  # the user tightened a rendered directory: kept
    (out / "tools" / "run.sh").chmod(0o644)  # lost its executable bit: --check says so, render fixes it
    r = compare(FILES | {"tools/run.sh": "#!/bin/sh\n"}, out, executable={"tools/run.sh"})
    assert r.modes == ["tools/run.sh"] and r.drift
    os.utime(out / "tools" / "run.sh", (1_000_000, 1_000_000))
    r = write_tree(FILES | {"tools/run.sh": "#!/bin/sh\n"}, out, executable={"tools/run.sh"})
    assert r.modes == ["tools/run.sh"] and r.unchanged == ["nccl/nccl.conf", "slurm/slurm.conf", "tools/run.sh"]
    assert stat.S_IMODE((out / "tools" / "run.sh").stat().st_mode) == 0o755
    assert (out / "tools" / "run.sh").stat().st_mtime == 1_000_000
    assert stat.S_IMODE(outside.stat().st_mode) == 0o700
    assert stat.S_IMODE((outside / "private").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "pulumi" / "venv").stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "tools").stat().st_mode) == 0o750
    assert stat.S_IMODE((out / "slurm" / "slurm.conf").stat().st_mode) == 0o644


def test_a_symlinked_directory_on_a_rendered_path_is_refused_and_nothing_is_written_through_it(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "etc-slurm"
    write_tree(FILES, out)
    outside.mkdir()
    (outside / "slurm.conf").write_text("the real one\n")
    (out / "slurm" / "slurm.conf").unlink()
    (out / "slurm").rmdir()
    (out / "slurm").symlink_to(outside)
    with pytest.raises(OutputDirError, match="is a symbolic link") as exc:
        write_tree(FILES | {"slurm/slurm.conf": "ClusterName=evil\n"}, out)
    assert "follows no link" in exc.value.hint
    assert (outside / "slurm.conf").read_text() == "the real one\n"
    assert "changed" in str(compare(FILES, out))  # --check reports the path instead of reading through the link


def test_a_user_file_where_the_render_now_writes_is_refused_not_overwritten(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "pulumi").mkdir()
    (out / "pulumi" / "Pulumi.yaml").write_text("name: mine\n")
    with pytest.raises(OutputDirError, match="was not written by clusterctl"):
        write_tree(FILES | {"pulumi/Pulumi.yaml": "name: rendered\n"}, out)
    assert (out / "pulumi" / "Pulumi.yaml").read_text() == "name: mine\n"
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "nccl", "pulumi", "slurm"]  # no lock, no journal
    write_tree(FILES | {"pulumi/Pulumi.yaml": "name: mine\n"}, out)  # the same bytes: adopted


def test_a_tampered_manifest_cannot_delete_outside_the_directory(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    victim.write_text("keep")
    write_tree(FILES, out)
    manifest = out / MANIFEST
    manifest.write_text(manifest.read_text() + "../victim.txt 00\n/etc/hostname 00\n")
    write_tree({"slurm/slurm.conf": "x\n"}, out)
    assert victim.read_text() == "keep" and not (out / "nccl").exists()


# --- --check: modes, untracked files, manifest, interrupted writes -------------------------------------------

def test_check_reports_untracked_files_only_in_wholly_rendered_directories(tmp_path):
    out = tmp_path / "out"
    files = FILES | {"ansible/roles/common/tasks/main.yml": "-\n", "ansible/group_vars/all.yml": "a: 1\n",
                     "pulumi/Pulumi.yaml": "name: x\n"}
    write_tree(files, out, sealed=RENDER_SEALED)
    (out / "slurm" / "plugstack.conf").write_text("added by hand\n")
    (out / "ansible" / "roles" / "common" / "tasks" / "extra.yml").write_text("-\n")
    (out / "ansible" / "roles" / "mine").mkdir()  # a role of the user's own: not a rendered role
    (out / "ansible" / "roles" / "mine" / "main.yml").write_text("-\n")
    (out / "ansible" / "group_vars" / "vault.yml").write_text("v\n")
    (out / "pulumi" / "venv").mkdir()
    (out / "pulumi" / "venv" / "python").write_text("#!")
    r = compare(files, out, sealed=RENDER_SEALED)
    assert r.extra == ["ansible/roles/common/tasks/extra.yml", "slurm/plugstack.conf"] and r.drift
    assert [line for line in r.drift_lines(out) if line.startswith("extra:")] == [
        f"extra: {out}/ansible/roles/common/tasks/extra.yml (not rendered, in a directory clusterctl renders)",
        f"extra: {out}/slurm/plugstack.conf (not rendered, in a directory clusterctl renders)"]
    w = write_tree(files, out, sealed=RENDER_SEALED)  # reported, never deleted
    assert w.extra == r.extra and (out / "slurm" / "plugstack.conf").exists()


def test_check_reports_a_missing_manifest_and_an_interrupted_write(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    assert not compare(FILES, out).drift
    saved = (out / MANIFEST).read_bytes()
    (out / MANIFEST).unlink()
    r = compare(FILES, out)
    assert r.manifest_missing and r.drift and f"missing: {out / MANIFEST} (the list of rendered files)" in r.drift_lines(out)
    with pytest.raises(OutputDirError, match="not rendered by clusterctl"):  # files, no manifest: not ours
        write_tree(FILES, out)
    (out / MANIFEST).write_bytes(saved)
    _interrupted_child(FILES | {"slurm/slurm.conf": "new\n"}, out, 12, signal.SIGKILL)
    assert (out / JOURNAL).exists()
    r = compare(FILES, out)
    assert r.interrupted and any(line.startswith("interrupted: ") for line in r.drift_lines(out))
    assert (out / JOURNAL).exists()  # --check writes nothing
    w = write_tree(FILES, out)
    assert w.recovered in ("rolled back", "rolled forward") and not compare(FILES, out).drift


def test_leftovers_of_the_old_swapping_writer_are_pointed_out_not_deleted(tmp_path):
    out = tmp_path / "out"
    stranded = tmp_path / ".out.render-abc123"
    (stranded / "pulumi").mkdir(parents=True)
    (stranded / "pulumi" / "Pulumi.prod.yaml").write_text("secrets\n")
    r = write_tree(FILES, out)
    assert len(r.warnings) == 1 and str(stranded) in r.warnings[0] and "may hold files of yours" in r.warnings[0]
    assert (stranded / "pulumi" / "Pulumi.prod.yaml").read_text() == "secrets\n"


def test_update_files_replaces_some_files_and_keeps_the_rest_of_the_manifest(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    os.utime(out / "nccl/nccl.conf", (1_000_000, 1_000_000))
    r = update_files({"slurm/slurm.conf": "ClusterName=cloud\n", "nccl/nccl.conf": FILES["nccl/nccl.conf"]}, out)
    assert r.changed == ["slurm/slurm.conf"] and r.unchanged == ["nccl/nccl.conf"] and r.removed == []
    assert (out / "nccl/nccl.conf").stat().st_mtime == 1_000_000
    assert not compare(FILES | {"slurm/slurm.conf": "ClusterName=cloud\n"}, out).drift
    with pytest.raises(OutputDirError, match="has no .clusterctl-manifest") as exc:
        update_files(FILES, tmp_path / "fresh")
    assert exc.value.hint == "render into it first" and not (tmp_path / "fresh").exists()


def test_staged_files_without_a_journal_are_swept(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    orphan = out / "slurm" / f".slurm.conf{STAGED}"
    orphan.write_text("half a file\n")
    r = write_tree(FILES, out)
    assert not orphan.exists() and r.unchanged == sorted(FILES)


def test_a_tampered_journal_is_refused_and_nothing_outside_is_touched(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    victim.write_text("keep")
    write_tree(FILES, out)
    (out / JOURNAL).write_text('{"state": "apply", "manifest": "", "install": [], "chmod": {}, '
                               '"remove": ["../victim.txt"], "mkdirs": [], "rmdirs": []}')
    with pytest.raises(OutputDirError, match="not a journal clusterctl wrote") as exc:
        write_tree(FILES, out)
    assert "remove" in exc.value.hint and victim.read_text() == "keep"
    assert compare(FILES, out).interrupted  # --check says so too
