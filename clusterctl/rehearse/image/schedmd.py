"""SchedMD's own Debian packages (``slurm-smd-*``), built once per image suite and Slurm release into the cache:
what ``slurm.install: {kind: debs}`` installs on a rehearsal node (docs/rehearse.md, "SchedMD packages").

The build is SchedMD's (quickstart_admin.html, "Debian Packages"): the release tarball unpacked, ``mk-build-deps -i
debian/control``, ``debuild -b -uc -us``. The tarball is Debian's ``slurm-wlm_RELEASE.orig.tar.gz`` (SchedMD's
unmodified release, with SchedMD's ``debian/``), checked against the catalog's SHA-256. It is built in a clean
``mmdebstrap --variant=buildd`` root of the image's suite (cached, never changed by a build: each build runs on
an overlay of it, in a private mount namespace with /proc and /dev bound; apt fetches the build dependencies
from Debian's archive through this machine's network). Every cache entry is built in a temporary directory next
to its target and renamed into place under an exclusive lock, so two rehearsals or test workers asking at once
build it once; an entry is reused while present and rebuilt when removed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image import catalog
from clusterctl.rehearse.image.build import build_atomically, exclusive, file_sha256
from clusterctl.rehearse.node.command import CommandTimeout, run_command
from clusterctl.rehearse.node.path import resolve_in_root
from clusterctl.rehearse.node.state import State

BUILD_ROOT_PACKAGES = ("build-essential", "fakeroot", "devscripts", "equivs")
"""what SchedMD's quickstart installs before building (``--variant=buildd`` already has build-essential)"""

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy")
"""what the build keeps of this machine's environment (either case), so apt reaches the archive as urllib does"""

FETCH_TIMEOUT = 300
BUILD_ROOT_TIMEOUT = 1800
BUILD_TIMEOUT = 3 * 3600
"""a cold build on 2 cores takes tens of minutes (benchmarks/README.md); three hours means something hangs"""

# Run by ``unshare --mount --propagation private``: the build root's overlay and the binds exist only in that
# namespace and vanish with it. Arguments: lower (the cached build root), upper, work, merged, build (host
# directory seen as /build, holding the tarball; the .deb files land there), the tarball's name. The tarball's
# top directory is a tag name (slurm-slurm-24-11-5-1), so it is unpacked into /build/src whatever it is called.
BUILD_SCRIPT = r"""set -eu
lower=$1 upper=$2 work=$3 root=$4 build=$5 tarball=$6
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$root"
mount --bind /proc "$root/proc"
mount --rbind /dev "$root/dev"
mkdir -p "$root/build"
mount --bind "$build" "$root/build"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
exec chroot "$root" /bin/sh -euxc '
mkdir /build/src
tar -xaf "/build/$1" -C /build/src --strip-components=1
cd /build/src
apt-get update
mk-build-deps -i -r -t "apt-get -y --no-install-recommends" debian/control
debuild -b -uc -us
' build "$tarball"
"""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def debs_root() -> Path:
    """Where the SchedMD tarballs, build roots and built packages are kept."""
    return catalog.cache_root() / "slurm-debs"


def tarball_release(major_minor: str) -> tuple[str, str]:
    """(release, SHA-256) of the SchedMD tarball for ``major_minor``; refused when the catalog has none."""
    if major_minor not in catalog.SCHEDMD_TARBALLS:
        known = ", ".join(sorted(catalog.SCHEDMD_TARBALLS))
        raise RehearsalError(
            f"no SchedMD release tarball for Slurm {major_minor} in Debian's archive: slurm-smd packages can be "
            f"built here for {known} only",
            f"set slurm.install.version to a {known} release in a copy of the blueprint, or rehearse "
            f"slurm.install: {{kind: distro}}")
    return catalog.SCHEDMD_TARBALLS[major_minor]


def tarball_url(release: str) -> str:
    return f"{catalog.DEBIAN_ARCHIVE}/pool/main/s/slurm-wlm/slurm-wlm_{release}.orig.tar.gz"


def _download(url: str, dest: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError) as exc:
        raise RehearsalError(f"cannot fetch the SchedMD tarball {url}: {exc}",
                             "check that this machine reaches deb.debian.org, then run the rehearsal again") from None


def ensure_tarball(major_minor: str) -> Path:
    """The SchedMD tarball for ``major_minor``, fetched once into the cache and checked against the catalog's
    SHA-256 on every use: a cached copy that does not match is fetched again, a fetched one that does not
    match is refused."""
    release, sha256 = tarball_release(major_minor)
    url = tarball_url(release)
    path = debs_root() / "tarballs" / url.rsplit("/", 1)[1]
    with exclusive(path.with_name(path.name + ".lock")):
        if path.is_file() and file_sha256(path) == sha256:
            return path
        path.unlink(missing_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            _download(url, tmp)
            got = file_sha256(tmp)
            if got != sha256:
                raise RehearsalError(
                    f"{url}: SHA-256 {got}, but clusterctl's catalog expects {sha256} for Slurm {release}; "
                    "it was not used",
                    "a proxy or mirror changed the file: fetch it from deb.debian.org directly, then run the "
                    "rehearsal again")
            tmp.rename(path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def _run_or_refuse(argv: Sequence[str], timeout: float, what: str, log: Path) -> float:
    """Run ``argv``, its output into ``log``; the seconds it took. A failure is a RehearsalError naming the log."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
           "DEBIAN_FRONTEND": "noninteractive", "DEB_BUILD_OPTIONS": f"parallel={os.cpu_count() or 1}",
           **{k: v for k, v in os.environ.items() if k.lower() in PROXY_VARIABLES}}
    try:
        r = run_command(argv, timeout=timeout, env=env)
    except CommandTimeout as exc:
        log.write_text(f"{exc}\n{exc.stdout}{exc.stderr}")
        raise RehearsalError(f"{what}: {exc}", f"its output: {_kept(log)}") from None
    log.write_text(f"{r.stdout}{r.stderr}")
    if r.returncode != 0:
        tail = "\n".join(f"{r.stdout}{r.stderr}".strip().splitlines()[-15:])
        raise RehearsalError(f"{what} failed (exit {r.returncode}):\n{tail}", f"the whole output: {_kept(log)}")
    return r.elapsed


def _kept(log: Path) -> Path:
    """A copy of ``log`` (in a build's temporary directory, removed when the build fails) beside that directory:
    ``<entry>.<random>.failed.log``."""
    kept = log.parent.parent / f"{log.parent.name.lstrip('.')}.failed.log"
    shutil.copyfile(log, kept)
    return kept


def ensure_build_root(suite: str) -> Path:
    """A clean ``mmdebstrap --variant=buildd`` root of ``suite`` with SchedMD's build tools, built once."""
    key = _digest(suite, catalog.DEBIAN_ARCHIVE, *BUILD_ROOT_PACKAGES)
    target = debs_root() / f"buildroot-{suite}-{key}"

    def build(tmp: Path) -> None:
        root = tmp / "root"
        _run_or_refuse(["mmdebstrap", "--variant=buildd", "--include=" + ",".join(BUILD_ROOT_PACKAGES),
                        suite, str(root), catalog.DEBIAN_ARCHIVE],
                       BUILD_ROOT_TIMEOUT, f"mmdebstrap of the {suite} build root", tmp / "mmdebstrap.log")

    return build_atomically(target, build) / "root"


def debs_dir(image: catalog.Image, major_minor: str) -> Path:
    """Where :func:`ensure_slurm_debs` keeps the packages of ``major_minor`` built for ``image``."""
    release, sha256 = tarball_release(major_minor)
    key = _digest(sha256, BUILD_SCRIPT, *BUILD_ROOT_PACKAGES)
    return debs_root() / f"{image.suite}-{release}-{key}"


def ensure_slurm_debs(image: catalog.Image, major_minor: str) -> Path:
    """The directory of ``slurm-smd*.deb`` files of Slurm ``major_minor`` built for ``image``'s suite (and
    ``build.log``, ``build-seconds``), built once; refused when the catalog has no tarball for it."""
    target = debs_dir(image, major_minor)
    if target.is_dir():
        return target
    tarball = ensure_tarball(major_minor)
    lower = ensure_build_root(image.suite)
    release = tarball_release(major_minor)[0]

    def build(tmp: Path) -> None:
        work = tmp / ".work"
        dirs = {name: work / name for name in ("upper", "work", "merged", "build")}
        for d in dirs.values():
            d.mkdir(parents=True)
        shutil.copyfile(tarball, dirs["build"] / tarball.name)
        try:
            seconds = _run_or_refuse(
                ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", BUILD_SCRIPT, "build",
                 str(lower), str(dirs["upper"]), str(dirs["work"]), str(dirs["merged"]), str(dirs["build"]),
                 tarball.name],
                BUILD_TIMEOUT, f"the slurm-smd {release} build for {image.suite}", tmp / "build.log")
            debs = sorted(dirs["build"].glob("*.deb"))
            if not any(d.name.startswith("slurm-smd_") for d in debs):
                raise RehearsalError(f"the slurm-smd {release} build for {image.suite} made no slurm-smd package",
                                     f"its output: {_kept(tmp / 'build.log')}")
            for deb in debs:
                deb.rename(tmp / deb.name)
            (tmp / "build-seconds").write_text(f"{seconds:.0f}\n")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return build_atomically(target, build)


def place_debs(state: State, node_names: Sequence[str], path_in_node: str, debs_dir: Path) -> None:
    """Copy the ``.deb`` files of ``debs_dir`` into each named node at ``path_in_node`` (the blueprint's
    ``slurm.install.path``), as a site puts them there before Ansible runs: a root-owned 0755 directory of
    root-owned 0644 files, written through the node's root as the node sees it (its PID 1's ``/proc/PID/root``,
    symlinks resolved inside the node)."""
    debs = sorted(debs_dir.glob("*.deb"))
    if not debs:
        raise RehearsalError(f"{debs_dir} holds no .deb files", "remove it; the next rehearsal builds it again")
    for name in node_names:
        node = state.node(name)
        if node.init is None:
            raise RehearsalError(f"node {name} is not running", "boot the rehearsal again")
        where = Path(resolve_in_root(f"/proc/{node.init.pid}/root", path_in_node))
        os.chown(where, 0, 0)
        os.chmod(where, 0o755)
        for deb in debs:
            dest = where / deb.name
            shutil.copyfile(deb, dest)
            os.chown(dest, 0, 0)
            os.chmod(dest, 0o644)


def build_seconds(debs: Path) -> float:
    """How long the build of ``debs`` (a directory from :func:`ensure_slurm_debs`) took, in seconds."""
    return float((debs / "build-seconds").read_text())

