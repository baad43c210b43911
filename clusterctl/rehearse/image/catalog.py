"""The rehearsal images and what each can carry: one table, asked by the image builder, the site mirror, the
SchedMD package build, the blueprint-as-rehearsed variant and the CLI (docs/rehearse.md, "Images").

Every fact here is Debian's: a suite's Slurm is the ``slurm-wlm`` version in that suite's archive
(packages.debian.org/bookworm/slurm-wlm: 22.05.8; packages.debian.org/trixie/slurm-wlm: 24.11.5), and the
SchedMD release tarballs a rehearsal can build from are the ``slurm-wlm_*.orig.tar.*`` files of Debian's archive
(unmodified SchedMD tarballs, carrying SchedMD's own ``debian/`` directory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEBIAN_ARCHIVE = "http://deb.debian.org/debian"
"""where images, the site mirror and the SchedMD build's dependencies come from (the machine's Debian registry)"""


@dataclass(frozen=True)
class Image:
    """A clean root filesystem a rehearsal node boots from."""

    name: str
    """what ``clusterctl rehearse --image`` takes"""
    suite: str
    """the Debian suite it is built from"""
    slurm: str
    """the suite's own Slurm release (major.minor): what ``slurm.install: {kind: distro}`` installs there"""


IMAGES: dict[str, Image] = {
    "debian-12": Image("debian-12", "bookworm", "22.05"),
    "debian-13": Image("debian-13", "trixie", "24.11"),
}

NEAREST_IMAGE: dict[str, str] = {
    "debian-12": "debian-12",
    "debian-13": "debian-13",
    "ubuntu-22.04": "debian-12",  # glibc 2.35/2.36, systemd 249/252, OpenSSL 3.0: the same generation
    "ubuntu-24.04": "debian-13",  # glibc 2.39/2.41, systemd 255/257, OpenSSL 3.0/3.5
}
"""software.os -> the image a rehearsal boots by default (stated in the summary); an OS not listed gets
DEFAULT_IMAGE"""
DEFAULT_IMAGE = "debian-12"

SCHEDMD_TARBALLS: dict[str, tuple[str, str]] = {
    "24.11": ("24.11.5", "e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332"),
}
"""Slurm major.minor -> (release, SHA-256) of the SchedMD tarball in Debian's archive
(pool/main/s/slurm-wlm/slurm-wlm_RELEASE.orig.tar.gz; the checksum from trixie's Sources index): the releases a
``slurm.install: {kind: debs}`` rehearsal can build ``slurm-smd-*`` packages from"""


SCHEDMD_REVISION = "1"
"""the Debian revision SchedMD's ``debian/changelog`` gives its packages (``slurm-smd 24.11.5-1``)"""


def schedmd_version(major_minor: str) -> str:
    """The package version of the ``slurm-smd-*`` packages a rehearsal builds for ``major_minor``, e.g. 24.11.5-1."""
    return f"{SCHEDMD_TARBALLS[major_minor][0]}-{SCHEDMD_REVISION}"


def cache_root() -> Path:
    """Where images, the mirror and built packages are kept between rehearsals and CI runs on this machine:
    ``$CLUSTERCTL_CACHE``, else ``$XDG_CACHE_HOME/clusterctl``, else ``~/.cache/clusterctl`` (never in a clone)."""
    explicit = os.environ.get("CLUSTERCTL_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "clusterctl"


def choose_image(os_name: str | None, asked: str | None) -> tuple[Image, str]:
    """The image a rehearsal boots and why: ``asked`` (``--image``), else the one nearest the blueprint's
    ``software.os`` (:data:`NEAREST_IMAGE`), else :data:`DEFAULT_IMAGE`."""
    if asked is not None:
        return IMAGES[asked], "--image"
    if os_name in NEAREST_IMAGE:
        return IMAGES[NEAREST_IMAGE[os_name]], f"nearest to software.os {os_name}"
    if os_name is None:
        return IMAGES[DEFAULT_IMAGE], "the default: the blueprint names no software.os"
    return IMAGES[DEFAULT_IMAGE], f"the default: no image is near software.os {os_name}"
