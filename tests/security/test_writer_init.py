"""Issue 24: `clusterctl init -o FILE` writes one new file, never through a symbolic link: a missing parent
directory is bad input (exit 2 with a hint, not exit 3), a link at FILE - dangling or not - is refused (exit
2) with or without --force, and an existing file is replaced only with --force."""

from __future__ import annotations

import os

import pytest

from tests.helpers import cli

STARTS = [("lab-2node",), ("--gpus", "64", "--gpu", "b200", "--fabric", "roce")]


@pytest.mark.parametrize("start", STARTS, ids=["preset", "gpus"])
def test_init_into_a_missing_directory_exits_2_with_a_hint(tmp_path, start):
    target = tmp_path / "missing" / "dir" / "x.yaml"
    r = cli("init", *start, "-o", str(target))
    assert r.returncode == 2, r.stderr
    assert f"error: {target}: the directory {tmp_path / 'missing' / 'dir'} does not exist" in r.stderr
    assert "hint: create it first" in r.stderr and "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["", "force"])
@pytest.mark.parametrize("start", STARTS, ids=["preset", "gpus"])
def test_init_refuses_a_dangling_symlink_and_creates_nothing_where_it_points(tmp_path, start, force):
    link, pointed = tmp_path / "blueprint.yaml", tmp_path / "elsewhere" / "planted.yaml"
    pointed.parent.mkdir()
    link.symlink_to(pointed)
    r = cli("init", *start, *force, "-o", str(link))
    assert r.returncode == 2, r.stderr
    assert f"error: {link} is a symbolic link" in r.stderr and "Traceback" not in r.stderr
    assert not pointed.exists() and os.readlink(link) == str(pointed)


def test_init_force_does_not_write_through_a_link_to_an_existing_file(tmp_path):
    victim, link = tmp_path / "victim.conf", tmp_path / "blueprint.yaml"
    victim.write_text("keep\n")
    link.symlink_to(victim)
    r = cli("init", "lab-2node", "--force", "-o", str(link))
    assert r.returncode == 2 and f"error: {link} is a symbolic link" in r.stderr
    assert victim.read_text() == "keep\n" and link.is_symlink()


def test_init_overwrites_an_existing_file_only_with_force(tmp_path):
    target = tmp_path / "blueprint.yaml"
    target.write_text("mine\n")
    r = cli("init", "lab-2node", "-o", str(target))
    assert r.returncode == 2 and f"error: {target} exists" in r.stderr and target.read_text() == "mine\n"
    r = cli("init", "lab-2node", "--force", "-o", str(target))
    assert r.returncode == 0, r.stderr
    assert target.read_text().startswith(open("blueprints/lab-2node.yaml").read()[:40]) and not target.is_symlink()


def test_init_refuses_a_directory_even_with_force(tmp_path):
    r = cli("init", "lab-2node", "--force", "-o", str(tmp_path))
    assert r.returncode == 2 and f"error: {tmp_path} is a directory" in r.stderr and "Traceback" not in r.stderr
