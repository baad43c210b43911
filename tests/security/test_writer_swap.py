"""Issue 24, from reading the code: a directory swapped for a symbolic link between the writer's check and its
write. The writer resolves every path below the output directory through directory file descriptors opened
without following links, so a directory that becomes a link after it was checked cannot redirect a write, a
rename or a delete outside the output directory.

Each test runs the writer with one system call wrapped (the way tests/test_write.py interrupts it): at the
instant the writer is about to create, rename or delete a file by name, the directory holding it is moved
away and a link to a directory outside takes its place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterctl import write
from clusterctl.write import OutputDirError, write_tree

OLD = {"slurm/slurm.conf": "ClusterName=old\n", "slurm/gres.conf": "Name=gpu\n", "nccl/a.conf": "A\n"}
NEW = {"slurm/slurm.conf": "ClusterName=new\n", "nccl/a.conf": "A\n", "fresh/new.conf": "N\n"}


def _snapshot(root: Path) -> dict[str, bytes | str]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            found[rel] = "dir" if path.is_dir() else path.read_bytes()
    return found


def _swap_when(monkeypatch, calls: tuple[str, ...], name: str, directory: Path, outside: Path) -> list[str]:
    """Wrap ``calls`` of ``os``: the first one whose first argument ends with ``name`` first replaces
    ``directory`` by a link to ``outside`` (the real directory moves beside it). Returns the record of swaps."""
    rename, symlink = os.rename, os.symlink
    swapped: list[str] = []

    def wrap(call_name: str, real):
        def call(*args, **kwargs):
            if not swapped and args and str(args[0]).endswith(name):
                rename(directory, directory.with_name(directory.name + ".moved"))
                symlink(outside, directory)
                swapped.append(call_name)
            return real(*args, **kwargs)
        return call

    for call_name in calls:
        monkeypatch.setattr(os, call_name, wrap(call_name, getattr(os, call_name)))
    return swapped


@pytest.fixture
def scene(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    write_tree(OLD, out)
    outside.mkdir()
    (outside / "slurm.conf").write_text("the real /etc/slurm/slurm.conf\n")
    (outside / "gres.conf").write_text("Name=gpu\n")  # the bytes the render wrote: a delete would take it
    (outside / "new.conf").write_text("N0\n")
    return out, outside, _snapshot(outside)


def _write_ignoring_refusal(files, out):
    try:
        write_tree(files, out)
    except OutputDirError:
        pass  # refusing is fine; writing outside is not


@pytest.mark.parametrize("calls, name, directory", [
    (("open",), f".slurm.conf{write.STAGED}", "slurm"),  # staging the changed file
    (("replace", "rename"), f".slurm.conf{write.STAGED}", "slurm"),  # renaming it into place
    (("unlink",), "gres.conf", "slurm"),  # deleting a file no longer rendered
    (("open",), f".new.conf{write.STAGED}", "fresh"),  # staging into a directory the writer just created
])
def test_a_directory_swapped_for_a_link_between_check_and_write_redirects_nothing(scene, monkeypatch, calls, name,
                                                                                 directory):
    out, outside, before = scene
    swapped = _swap_when(monkeypatch, calls, name, out / directory, outside)
    _write_ignoring_refusal(NEW, out)
    monkeypatch.undo()
    assert swapped, "the writer never made the call the test swaps at"
    assert _snapshot(outside) == before
    assert (out / directory).is_symlink()  # the link is left alone too


def test_an_output_directory_swapped_after_its_check_for_a_link_to_someone_elses_directory_is_refused(tmp_path,
                                                                                                    monkeypatch):
    """The output directory itself may be a link, so the writer follows it once, when it opens it; it then asks
    again of the directory it opened whether it is one clusterctl rendered."""
    out, home = tmp_path / "out", tmp_path / "home"
    write_tree(OLD, out)
    home.mkdir()
    (home / "thesis.tex").write_text("years of work\n")
    real_open, rename, symlink = os.open, os.rename, os.symlink
    swapped = []

    def open_after_swap(path, *args, **kwargs):
        if not swapped and str(path) == str(out):
            rename(out, tmp_path / "out.moved")
            symlink(home, out)
            swapped.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_after_swap)
    with pytest.raises(OutputDirError, match="not rendered by clusterctl"):
        write_tree(NEW, out)
    monkeypatch.undo()
    assert swapped and sorted(p.name for p in home.iterdir()) == ["thesis.tex"]
