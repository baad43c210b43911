"""The writer: atomic swap, unchanged files keep bytes and timestamps, drift detection, ownership."""

from __future__ import annotations

import os

import pytest

from clusterctl import write
from clusterctl.write import MANIFEST, OutputDirError, compare, write_tree

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
