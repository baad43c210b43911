"""Issue 24, the writer's record of what it wrote: a render removes or replaces a file it rendered before only
while the file still holds the bytes whose sha256 ``.clusterctl-manifest`` records, and only a regular file
inside the output directory. Lines added to the manifest (by hand, by a pull request of a committed render)
cannot make it delete a user's file, a directory or a link."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from clusterctl.write import MANIFEST, OutputDirError, compare, write_tree
from tests.helpers import cli

LAB = "blueprints/lab-2node.yaml"
FILES = {"slurm/slurm.conf": "ClusterName=lab\n", "nccl/nccl.conf": "NCCL_IB_HCA=mlx5\n"}
BOGUS = "0" * 64


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_three_lines_appended_to_the_manifest_delete_none_of_the_users_files(tmp_path):
    """The reproducer: render, let the user keep a Pulumi stack file, a venv and outputs.json beside the render,
    append three lines naming them to the manifest, render again: all three survive, each with a warning."""
    out, real_venv = tmp_path / "out", tmp_path / "venv-real"
    assert cli("render", LAB, "-o", str(out)).returncode == 0
    (out / "pulumi").mkdir()
    (out / "pulumi" / "Pulumi.dev.yaml").write_text("config:\n  clusterctl:mungeKey: {secure: v1:abc}\n")
    (out / "venv" / "bin").mkdir(parents=True)
    (out / "venv" / "bin" / "python").write_text("#!")
    (out / "outputs.json").write_text('{"nodes": {}}\n')
    real_venv.mkdir()
    (real_venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (out / "pulumi" / "venv").symlink_to(real_venv)
    with open(out / MANIFEST, "a") as manifest:
        manifest.write(f"pulumi/Pulumi.dev.yaml {BOGUS}\nvenv 00\noutputs.json\npulumi/venv {BOGUS}\n")
    check = cli("render", LAB, "-o", str(out), "--check")
    assert check.returncode == 1  # the manifest says more than this render wrote: drift, nothing deleted
    r = cli("render", LAB, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "pulumi" / "Pulumi.dev.yaml").read_text() == "config:\n  clusterctl:mungeKey: {secure: v1:abc}\n"
    assert (out / "venv" / "bin" / "python").read_text() == "#!"
    assert (out / "outputs.json").read_text() == '{"nodes": {}}\n'
    assert os.readlink(out / "pulumi" / "venv") == str(real_venv)
    assert (real_venv / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert "0 removed" in r.stderr
    assert f"warning: {out / 'pulumi' / 'Pulumi.dev.yaml'}: changed since clusterctl wrote it" in r.stderr
    assert f"warning: {out / 'pulumi' / 'venv'}: listed in {MANIFEST} but a symbolic link" in r.stderr
    assert f"warning: {out / MANIFEST}:" in r.stderr and "venv 00" in r.stderr and "outputs.json" in r.stderr
    assert "pulumi/Pulumi.dev.yaml" not in (out / MANIFEST).read_text()  # forgotten: the file is the user's
    assert cli("render", LAB, "-o", str(out), "--check").returncode == 0


def test_a_rendered_file_changed_since_it_was_written_is_kept_when_no_longer_rendered(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "nccl" / "nccl.conf").write_text("NCCL_IB_HCA=mlx5\n# my tuning\n")
    check = compare({"slurm/slurm.conf": FILES["slurm/slurm.conf"]}, out)
    assert check.removed == [] and check.kept == ["nccl/nccl.conf"] and check.drift
    assert f"extra: {out}/nccl/nccl.conf (changed since clusterctl wrote it: render keeps it)" in check.drift_lines(out)
    r = write_tree({"slurm/slurm.conf": FILES["slurm/slurm.conf"]}, out)
    assert r.removed == [] and r.kept == ["nccl/nccl.conf"]
    assert (out / "nccl" / "nccl.conf").read_text() == "NCCL_IB_HCA=mlx5\n# my tuning\n"
    assert any("nccl.conf: changed since clusterctl wrote it" in w for w in r.warnings)
    assert "nccl/nccl.conf" not in (out / MANIFEST).read_text()


def test_an_unchanged_rendered_file_no_longer_rendered_is_removed(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    r = write_tree({"slurm/slurm.conf": FILES["slurm/slurm.conf"]}, out)
    assert r.removed == ["nccl/nccl.conf"] and r.kept == [] and r.warnings == []
    assert not (out / "nccl").exists()


def test_a_rendered_file_edited_by_hand_is_not_overwritten(tmp_path):
    out = tmp_path / "out"
    assert cli("render", LAB, "-o", str(out)).returncode == 0
    conf = out / "slurm" / "slurm.conf"
    original = conf.read_text()
    conf.write_text(original + "SchedulerType=sched/builtin\n")
    (out / MANIFEST).write_text((out / MANIFEST).read_text().replace(_sha(original), BOGUS))  # as if edited
    check = cli("render", LAB, "-o", str(out), "--check")
    assert check.returncode == 1
    assert f"changed: {conf} (changed since clusterctl wrote it: render will not overwrite it)" in check.stderr
    r = cli("render", LAB, "-o", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{conf} was changed since clusterctl wrote it" in r.stderr and "move it away" in r.stderr
    assert conf.read_text() == original + "SchedulerType=sched/builtin\n"
    conf.rename(tmp_path / "slurm.conf.mine")  # the way out the hint gives
    assert cli("render", LAB, "-o", str(out)).returncode == 0 and conf.read_text() == original


def test_a_manifest_entry_without_a_hash_is_not_ours(tmp_path):
    """An entry without a sha256 (hand-written): never deleted, and at a path the render writes the file is
    adopted only when it already holds the rendered bytes."""
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "notes.txt").write_text("mine\n")
    (out / "extra.conf").write_text("x=1\n")
    with open(out / MANIFEST, "a") as manifest:
        manifest.write("notes.txt\nextra.conf\n")
    with pytest.raises(OutputDirError, match="notes.txt exists and was not written by clusterctl"):
        write_tree(FILES | {"notes.txt": "rendered\n"}, out)
    assert (out / "notes.txt").read_text() == "mine\n"
    r = write_tree(FILES | {"extra.conf": "x=1\n"}, out)
    assert r.unchanged == ["extra.conf", "nccl/nccl.conf", "slurm/slurm.conf"]
    assert f"extra.conf {_sha('x=1' + chr(10))}" in (out / MANIFEST).read_text()
    assert (out / "notes.txt").read_text() == "mine\n" and "notes.txt" not in (out / MANIFEST).read_text()


def test_manifest_lines_naming_paths_outside_the_directory_are_ignored_with_a_warning(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_text("secret\n")
    (tmp_path / "victim.txt").write_text("keep\n")
    write_tree(FILES, out)
    (out / "private").symlink_to(outside)
    with open(out / MANIFEST, "a") as manifest:
        manifest.write(f"../victim.txt {_sha('keep' + chr(10))}\n/etc/hostname {BOGUS}\n"
                       f"private/key {_sha('secret' + chr(10))}\nslurm/./x {BOGUS}\n")
    r = write_tree(FILES, out)
    assert (tmp_path / "victim.txt").read_text() == "keep\n" and (outside / "key").read_text() == "secret\n"
    assert os.readlink(out / "private") == str(outside)
    text = "\n".join(r.warnings)
    assert f"{out / MANIFEST}:4: ignored: '../victim.txt' is not a path inside the directory" in text
    assert f"{out / MANIFEST}:5: ignored: '/etc/hostname' is not a path inside the directory" in text
    assert f"{out / MANIFEST}:7: ignored: 'slurm/./x' is not a path inside the directory" in text
    assert f"{out / 'private' / 'key'}: listed in {MANIFEST} but {out / 'private'} is a symbolic link" in text
    assert r.removed == []


def test_a_directory_listed_in_the_manifest_is_never_removed(tmp_path):
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "venv" / "bin").mkdir(parents=True)
    (out / "venv" / "bin" / "python").write_text("#!")
    with open(out / MANIFEST, "a") as manifest:
        manifest.write(f"venv {BOGUS}\nvenv/bin {BOGUS}\n")
    r = write_tree(FILES, out)
    assert r.kept == ["venv", "venv/bin"] and r.removed == []
    assert f"{out / 'venv'}: listed in {MANIFEST} but a directory: left in place" in "\n".join(r.warnings)
    assert (out / "venv" / "bin" / "python").read_text() == "#!"


def test_a_journal_read_from_disk_cannot_delete_a_file_whose_bytes_it_does_not_record(tmp_path):
    """A journal in state 'apply' (as a killed writer leaves it) is rolled forward by the next write; the files
    it deletes must still hold the bytes it records."""
    out = tmp_path / "out"
    write_tree(FILES, out)
    (out / "notes.txt").write_text("mine\n")
    manifest = (out / MANIFEST).read_text()
    (out / ".clusterctl-journal").write_text(json.dumps({
        "state": "apply", "manifest": manifest, "install": {}, "chmod": {}, "remove": {"notes.txt": BOGUS},
        "mkdirs": [], "rmdirs": []}))
    r = write_tree(FILES, out)
    assert r.recovered == "rolled forward"
    assert (out / "notes.txt").read_text() == "mine\n"
