"""The SchedMD package build's cache and refusals, without building (clusterctl/rehearse/image/schedmd.py): the
tarball is checked against the catalog's SHA-256 (a corrupted cached copy is fetched again, a fetched file that
does not match is refused), a Slurm release with no tarball is refused before anything is fetched, and a cache
entry is built once and leaves nothing behind when its build fails. The archive is a local directory served
through ``file://``; the build itself is tested in tests/integration/test_slurm_smd.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.build import build_atomically
from clusterctl.rehearse.image import catalog, schedmd

TARBALL_BYTES = b"a stand-in for SchedMD's release tarball\n"
WRONG_SHA256 = "0b4ab1c5a5b4b07e5b2b0be2a5c8de6f61b1a4f0dc4e3e9c1b46bd1c1f2ad0a1"


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    """A Debian archive holding slurm-wlm_99.1.1.orig.tar.gz, a catalog whose 99.1 is that file, and an empty
    cache."""
    pool = tmp_path / "archive" / "pool" / "main" / "s" / "slurm-wlm"
    pool.mkdir(parents=True)
    (pool / "slurm-wlm_99.1.1.orig.tar.gz").write_bytes(TARBALL_BYTES)
    monkeypatch.setattr(catalog, "DEBIAN_ARCHIVE", (tmp_path / "archive").as_uri())
    monkeypatch.setattr(catalog, "SCHEDMD_TARBALLS", {"99.1": ("99.1.1", hashlib.sha256(TARBALL_BYTES).hexdigest())})
    monkeypatch.setenv("CLUSTERCTL_CACHE", str(tmp_path / "cache"))
    return pool


def test_the_catalog_tarball_is_debians_pool_file():
    assert schedmd.tarball_url("24.11.5") == \
        "http://deb.debian.org/debian/pool/main/s/slurm-wlm/slurm-wlm_24.11.5.orig.tar.gz"
    assert schedmd.tarball_release("24.11") == \
        ("24.11.5", "e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332")


def test_a_release_without_a_tarball_is_refused_with_the_ones_there_are(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUSTERCTL_CACHE", str(tmp_path))
    with pytest.raises(RehearsalError) as err:
        schedmd.ensure_slurm_debs(catalog.IMAGES["debian-12"], "24.05")
    assert str(err.value) == ("no SchedMD release tarball for Slurm 24.05 in Debian's archive: slurm-smd packages "
                              "can be built here for 24.11 only")
    assert err.value.hint == ("set slurm.install.version to a 24.11 release in a copy of the blueprint, or "
                              "rehearse slurm.install: {kind: distro}")
    assert list(tmp_path.iterdir()) == []


def test_the_tarball_is_fetched_once_into_the_cache(archive, tmp_path):
    path = schedmd.ensure_tarball("99.1")
    assert path == tmp_path / "cache" / "slurm-debs" / "tarballs" / "slurm-wlm_99.1.1.orig.tar.gz"
    assert path.read_bytes() == TARBALL_BYTES
    (archive / "slurm-wlm_99.1.1.orig.tar.gz").unlink()  # no second fetch: the archive is not asked again
    assert schedmd.ensure_tarball("99.1").read_bytes() == TARBALL_BYTES


def test_a_corrupted_cached_tarball_is_fetched_again(archive, tmp_path):
    path = schedmd.ensure_tarball("99.1")
    path.write_bytes(b"truncated")
    assert schedmd.ensure_tarball("99.1").read_bytes() == TARBALL_BYTES


def test_a_fetched_tarball_that_does_not_match_is_refused_and_not_kept(archive, tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "SCHEDMD_TARBALLS", {"99.1": ("99.1.1", WRONG_SHA256)})
    with pytest.raises(RehearsalError) as err:
        schedmd.ensure_tarball("99.1")
    assert str(err.value).endswith(f"slurm-wlm_99.1.1.orig.tar.gz: SHA-256 "
                                   f"{hashlib.sha256(TARBALL_BYTES).hexdigest()}, but clusterctl's catalog "
                                   f"expects {WRONG_SHA256} for Slurm 99.1.1; it was not used")
    assert sorted(p.name for p in (tmp_path / "cache" / "slurm-debs" / "tarballs").iterdir()) == \
        ["slurm-wlm_99.1.1.orig.tar.gz.lock"]


def test_a_missing_tarball_is_a_refusal_naming_the_url(archive, tmp_path):
    (archive / "slurm-wlm_99.1.1.orig.tar.gz").unlink()
    with pytest.raises(RehearsalError) as err:
        schedmd.ensure_tarball("99.1")
    assert str(err.value).startswith(f"cannot fetch the SchedMD tarball {archive.as_uri()}/"
                                     "slurm-wlm_99.1.1.orig.tar.gz: ")
    assert err.value.hint == "check that this machine reaches deb.debian.org, then run the rehearsal again"


def test_a_cache_entry_is_built_once_and_a_failed_build_leaves_nothing(tmp_path):
    calls = []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        (tmp / "made").write_text("1")

    def broken(tmp: Path) -> None:
        (tmp / "half").write_text("1")
        raise RehearsalError("the build failed")

    with pytest.raises(RehearsalError):
        build_atomically(tmp_path / "entry", broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.lock"]
    (tmp_path / ".entry.killed").mkdir()  # a build killed with SIGKILL leaves its temporary directory
    (tmp_path / ".entry.killed" / "half").write_text("1")
    assert build_atomically(tmp_path / "entry", build) == tmp_path / "entry"
    assert build_atomically(tmp_path / "entry", build) == tmp_path / "entry"
    assert len(calls) == 1
    assert (tmp_path / "entry" / "made").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry", "entry.lock"]


def test_the_packages_are_kept_by_suite_release_and_what_builds_them(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUSTERCTL_CACHE", str(tmp_path))
    name = schedmd.debs_dir(catalog.IMAGES["debian-13"], "24.11").name
    assert name.startswith("trixie-24.11.5-")
    assert schedmd.debs_dir(catalog.IMAGES["debian-12"], "24.11").name.startswith("bookworm-24.11.5-")
    monkeypatch.setattr(catalog, "SCHEDMD_TARBALLS", {"24.11": ("24.11.5", "1" * 64)})
    assert schedmd.debs_dir(catalog.IMAGES["debian-13"], "24.11").name != name


def test_a_failed_build_step_is_refused_with_its_tail_and_keeps_its_whole_output(tmp_path):
    def build(tmp: Path) -> None:
        schedmd._run_or_refuse(["/bin/sh", "-c", "echo configure; echo missing libpmix-dev >&2; exit 3"], 30,
                               "the test build", tmp / "build.log")

    with pytest.raises(RehearsalError) as err:
        build_atomically(tmp_path / "entry", build)
    assert str(err.value) == "the test build failed (exit 3):\nconfigure\nmissing libpmix-dev"
    kept = sorted(tmp_path.glob("entry.*.failed.log"))
    assert len(kept) == 1
    assert err.value.hint == f"the whole output: {kept[0]}"
    assert kept[0].read_text() == "configure\nmissing libpmix-dev\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["entry.lock", kept[0].name])
