"""Build a clean node image once into the cache and say what it holds (docs/rehearse.md, "Images").

An image is a Debian root filesystem made by ``mmdebstrap --variant=minbase`` from :data:`catalog.DEBIAN_ARCHIVE`
with :data:`BASE_PACKAGES`, the minimal set a site's OS image gives a node before any role runs. It lives in
``cache_root()/images/<name>-<key>/root`` (key: suite, package set, :data:`BUILDER_VERSION`), is built in a
temporary directory beside it and renamed into place under an exclusive lock (two rehearsals or two pytest
workers may ask at once), reused when present and rebuilt when absent. Nodes mount it read-only as the lower
layer of their overlay, so a node sees nothing of this machine's root. The image carries no apt source: a node
gets the site mirror's source at prep (:mod:`clusterctl.rehearse.mirror`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.catalog import DEBIAN_ARCHIVE, Image, cache_root
from clusterctl.rehearse.node.command import CommandTimeout, run_command

BASE_PACKAGES: dict[str, str] = {
    "openssh-server": "the rehearsal reaches every node over SSH (the node's init runs sshd)",
    "openssh-sftp-server": "sshd_config's sftp subsystem: Ansible and testinfra copy files with sftp",
    "python3": "the node's init (node/pid1.py) and every Ansible module run on the node's /usr/bin/python3",
    "python3-apt": "Ansible's apt module imports apt_pkg",
    "iproute2": "Ansible's network facts (ansible_default_ipv4) read `ip addr` and `ip route`",
    "iputils-ping": "the tests ping between nodes",
    "procps": "ps, pgrep and pkill: the scenarios and the rendered tests look for daemons with them",
    "ca-certificates": "as a site image has it (TLS to the site's own services)",
    "systemd": "the init a site's node boots (and the systemd-as-PID-1 rehearsal: docs/rehearse.md)",
    "systemd-sysv": "/sbin/init and the sysvinit compatibility links of a booted Debian node",
    "dbus": "systemctl talks to systemd over D-Bus on a booted node",
}
"""the packages an image holds besides minbase's Essential/required set, each with why a node needs it"""

BUILDER_VERSION = "1"
"""bumped when how an image is built changes, so the cache key changes and images are rebuilt"""
BUILD_TIMEOUT_S = 1800.0
"""one mmdebstrap run (downloads and unpacks about 150 packages)"""


def image_key(image: Image) -> str:
    """What an image is built from (suite, archive, package set, builder version) as a short hash."""
    what = "\n".join([image.suite, DEBIAN_ARCHIVE, BUILDER_VERSION, *sorted(BASE_PACKAGES)])
    return hashlib.sha256(what.encode()).hexdigest()[:12]


def image_dir(image: Image) -> Path:
    """``cache_root()/images/<name>-<key>``: holds ``root/`` once built."""
    return cache_root() / "images" / f"{image.name}-{image_key(image)}"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in blocks (a tarball or a .deb is tens of MB): what the cache checks files by."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created) for the block: one builder of a cache entry at a time."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_atomically(target: Path, build: Callable[[Path], None], what: str = "") -> Path:
    """``target`` (a directory), made by ``build(temporary directory beside it)`` and renamed into place when
    absent, under the exclusive lock ``target``.lock: the one way every cache entry (an image, a mirror, its key,
    a SchedMD build root or package set) is made. An existing ``target`` is reused as it is; a failed build leaves
    nothing behind, and what a killed one left (``.target.*``, only ever written under this lock) is removed
    first. ``what`` names the entry for the reader."""
    if target.is_dir():
        return target
    with exclusive(target.with_name(target.name + ".lock")):
        if target.is_dir():  # another process built it while this one waited
            return target
        for stale in target.parent.glob(f".{target.name}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            build(tmp)
            os.chmod(tmp, 0o755)
            tmp.rename(target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _mmdebstrap(image: Image, into: Path) -> None:
    root = into / "root"
    argv = ["mmdebstrap", "--variant=minbase", "--mode=root", "--format=directory", "--quiet",
            f"--include={','.join(sorted(BASE_PACKAGES))}",
            # no apt source in the image: a node gets the site mirror's at prep, as a site's provisioning does
            "--customize-hook=rm -f \"$1/etc/apt/sources.list\" \"$1\"/etc/apt/sources.list.d/*",
            "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*.bin",
            image.suite, str(root), DEBIAN_ARCHIVE]
    try:
        r = run_command(argv, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError:
        raise RehearsalError("building a node image needs mmdebstrap",
                             "apt-get install -y --no-install-recommends mmdebstrap") from None
    except CommandTimeout:
        raise RehearsalError(f"building image {image.name} took over {BUILD_TIMEOUT_S:.0f} s",
                             f"check that {DEBIAN_ARCHIVE} is reachable, then rehearse again") from None
    if r.returncode != 0:
        raise RehearsalError(f"building image {image.name} ({image.suite}) failed: "
                             f"{(r.stderr or r.stdout).strip()[-1500:]}",
                             f"check that {DEBIAN_ARCHIVE} is reachable, then rehearse again")


def ensure_image(image: Image) -> Path:
    """The root directory of ``image``, built now when the cache does not hold it."""
    return build_atomically(image_dir(image), lambda tmp: _mmdebstrap(image, tmp), image.name) / "root"


def installed_packages(root: Path) -> dict[str, str]:
    """Package -> version of every package installed in the root filesystem ``root`` (its dpkg status file)."""
    out: dict[str, str] = {}
    fields: dict[str, str] = {}
    native = native_arch()
    text = (Path(root) / "var/lib/dpkg/status").read_text(encoding="utf-8", errors="replace")
    for stanza in text.split("\n\n"):
        fields.clear()
        for line in stanza.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            arch = fields.get("Architecture", "")
            name = fields["Package"] if arch in ("all", "", native) else f"{fields['Package']}:{arch}"
            out[name] = fields.get("Version", "")
    return out


def native_arch() -> str:
    """This machine's dpkg architecture (images are built for it)."""
    return run_command(["dpkg", "--print-architecture"], timeout=30).stdout.strip()
