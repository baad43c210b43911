"""Build the site mirror once into the cache: resolve, download, index and sign (docs/rehearse.md, "Site mirror").

The dependency closure of the packages is resolved by this machine's apt against the *image's* dpkg status
(``Dir::State::status=IMAGE/var/lib/dpkg/status``) with private lists, cache and source list, and the image's
own archive keyring: apt then downloads exactly what a node of that image lacks, without a chroot or a
throwaway overlay to set up (apt resolves a newer suite's index as well). A directory of local .deb files
(SchedMD's ``slurm-smd-*``) is a second, trusted source of the same resolution, so their Depends come from the
archive; apt uses them in place, so the mirror holds only what came from Debian. The result is a flat
repository (``Packages``, ``Release``, ``InRelease``) signed with a key generated once into the cache; a node gets
its public key (``Signed-By``). Keyed by image, package set and the local files' checksums; built in a temporary
directory and renamed under a lock (:func:`clusterctl.rehearse.image.build.build_atomically`).
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.build import build_atomically, exclusive, file_sha256, image_key
from clusterctl.rehearse.image.catalog import DEBIAN_ARCHIVE, Image, cache_root
from clusterctl.rehearse.node.command import run_command

BUILDER_VERSION = "1"
"""bumped when how a mirror is built changes"""
APT_TIMEOUT_S = 1200.0
KEY_NAME = "clusterctl rehearsal site mirror"


@dataclass(frozen=True)
class Mirror:
    """A built site mirror: the repository directory to serve and the public key that signs it."""

    repo: Path
    """a flat repository: ``pool/*.deb``, ``Packages(.gz)``, ``Release``, ``InRelease``, ``Release.gpg``"""
    key: Path
    """the signing key's public part (binary OpenPGP), what a node's ``Signed-By`` names"""
    packages: tuple[str, ...]
    """what it was built for"""


def _must(argv: Sequence[str], what: str, *, cwd: Path | None = None, timeout: float = 120.0) -> str:
    r = run_command(argv, timeout=timeout, cwd=cwd)
    if r.returncode != 0:
        raise RehearsalError(f"site mirror: {what} failed: {(r.stderr or r.stdout).strip()[-1500:]}",
                             f"check that {DEBIAN_ARCHIVE} is reachable, then rehearse again")
    return r.stdout


def _stop_agent(home: Path) -> None:
    """gpg starts an agent per home directory; stop it, so no process of the build outlives it."""
    run_command(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], timeout=30)


def signing_key() -> tuple[Path, Path]:
    """The mirror's signing key, generated once into ``cache_root()/mirror/key``: (GnuPG home, public key file)."""
    home = cache_root() / "mirror" / "key"

    def generate(tmp: Path) -> None:
        tmp.chmod(0o700)
        _must(["gpg", "--batch", "--homedir", str(tmp), "--passphrase", "", "--quick-gen-key", KEY_NAME,
               "ed25519", "sign", "never"], "generating the signing key")
        exported = run_command(["gpg", "--batch", "--homedir", str(tmp), "--export", KEY_NAME], timeout=60, text=False)
        _stop_agent(tmp)
        if exported.returncode != 0 or not exported.stdout:
            raise RehearsalError("site mirror: exporting the signing key failed", "rehearse again")
        (tmp / "public.gpg").write_bytes(exported.stdout)

    build_atomically(home, generate, "mirror key")
    return home, home / "public.gpg"


def mirror_key(image: Image, packages: Sequence[str], local_debs: Path | None) -> str:
    """What a mirror is built from, as a short hash: image, package set, local .deb files' checksums."""
    h = hashlib.sha256("\n".join([image_key(image), BUILDER_VERSION, *sorted(packages)]).encode())
    for deb in sorted(local_debs.glob("*.deb")) if local_debs else ():
        h.update(deb.name.encode() + bytes.fromhex(file_sha256(deb)))  # the same key as before, read in blocks
    return h.hexdigest()[:12]


def _apt_options(work: Path, image_root: Path) -> list[str]:
    """apt-get options for a private resolution against the image's installed packages."""
    return ["-o", f"Dir::State={work / 'state'}", "-o", f"Dir::State::status={image_root / 'var/lib/dpkg/status'}",
            "-o", f"Dir::Cache={work / 'cache'}", "-o", f"Dir::Etc::sourcelist={work / 'sources.list'}",
            "-o", "Dir::Etc::sourceparts=-", "-o", f"Dir::Etc::preferencesparts={work / 'preferences.d'}",
            "-o", "Debug::NoLocking=true", "-o", "APT::Install-Recommends=false",
            "-o", "APT::Install-Suggests=false", "-q"]


def _local_source(local_debs: Path, into: Path) -> str:
    """The local .deb files as a flat repository apt trusts (copied, then indexed): its sources.list line."""
    into.mkdir(parents=True)
    for deb in sorted(local_debs.glob("*.deb")):
        shutil.copy2(deb, into / deb.name)
    (into / "Packages").write_text(_must(["apt-ftparchive", "packages", "."], "indexing the local .debs", cwd=into))
    return f"deb [trusted=yes] file:{into} ./\n"


def _download(image: Image, image_root: Path, packages: Sequence[str], local_debs: Path | None, work: Path) -> Path:
    """Resolve and download what the image lacks for ``packages``; returns the directory of downloaded .debs."""
    for d in ("state/lists/partial", "cache/archives/partial", "preferences.d"):
        (work / d).mkdir(parents=True, exist_ok=True)
    keyring = image_root / "usr/share/keyrings/debian-archive-keyring.gpg"
    sources = f"deb [signed-by={keyring}] {DEBIAN_ARCHIVE} {image.suite} main\n"
    if local_debs is not None:
        sources += _local_source(local_debs, work / "local")
    (work / "sources.list").write_text(sources)
    opts = _apt_options(work, image_root)
    _must(["apt-get", *opts, "update"], f"apt-get update for {image.suite}", timeout=APT_TIMEOUT_S)
    _must(["apt-get", *opts, "install", "-y", "--download-only", *packages],
          f"resolving {len(packages)} packages against image {image.name}", timeout=APT_TIMEOUT_S)
    return work / "cache" / "archives"


def _index_and_sign(repo: Path, image: Image) -> None:
    packages = _must(["apt-ftparchive", "packages", "pool"], "indexing the mirror", cwd=repo)
    (repo / "Packages").write_text(packages)
    with gzip.open(repo / "Packages.gz", "wt") as f:
        f.write(packages)
    release = _must(["apt-ftparchive", "-o", "APT::FTPArchive::Release::Origin=clusterctl-rehearsal",
                     "-o", f"APT::FTPArchive::Release::Label=site mirror {image.name}",
                     "-o", f"APT::FTPArchive::Release::Suite={image.suite}", "release", "."], "the Release file",
                    cwd=repo)
    (repo / "Release").write_text(release)
    home, _ = signing_key()
    with exclusive(home.with_name("key.use.lock")):  # gpg-agent of one home: one signer at a time
        for args in (["--clearsign", "-o", "InRelease"], ["--detach-sign", "-o", "Release.gpg"]):
            _must(["gpg", "--batch", "--yes", "--homedir", str(home), "--local-user", KEY_NAME, "--digest-algo",
                   "SHA512", *args, "Release"], "signing the Release file", cwd=repo)
        _stop_agent(home)


def ensure_mirror(image: Image, image_root: Path, packages: Sequence[str], local_debs: Path | None = None) -> Mirror:
    """The site mirror for ``packages`` on ``image`` (plus ``local_debs``' dependencies), built now when absent."""
    packages = tuple(sorted(set(packages)))
    target = cache_root() / "mirror" / f"{image.name}-{mirror_key(image, packages, local_debs)}"

    def make(tmp: Path) -> None:
        archives = _download(image, image_root, packages, local_debs, tmp / "work")
        repo = tmp / "repo"
        (repo / "pool").mkdir(parents=True)
        for deb in archives.glob("*.deb"):
            deb.rename(repo / "pool" / deb.name)
        _index_and_sign(repo, image)
        shutil.rmtree(tmp / "work")

    _, key = signing_key()
    return Mirror(build_atomically(target, make, "site mirror") / "repo", key, packages)
