"""A node's view of the site mirror: its apt source and key, as a site's provisioning gives an offline node, and
where each package a node installed came from.

The ``mirror`` step (after the boot, before any converge) starts the mirror's server (:mod:`.serve`), writes the
key to ``/etc/apt/keyrings/`` and a deb822 source whose ``Signed-By`` names it into every node, and runs ``apt-get
update`` there. The ``packages`` step (after the converge) lists per node every package the roles installed (the
node's dpkg list minus the image's) with the source ``apt-cache policy`` names for its installed version; a package
that came from anywhere but the mirror (or the blueprint's own .deb directory) fails the step.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.rehearse.image.build import installed_packages
from clusterctl.rehearse.image.catalog import Image
from clusterctl.rehearse.image.schedmd import ensure_slurm_debs, place_debs
from clusterctl.rehearse.mirror.build import ensure_mirror
from clusterctl.rehearse.mirror.serve import mirror_url, serve
from clusterctl.rehearse.node.ssh import RemoteWriteError, ssh, write_file
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

KEYRING = "/etc/apt/keyrings/clusterctl-site-mirror.gpg"
SOURCES = "/etc/apt/sources.list.d/clusterctl-site-mirror.sources"
APT_TIMEOUT_S = 300.0


def sources_text(url: str) -> str:
    """The deb822 source of the mirror (a flat repository) for a node."""
    return (f"# the site mirror of this clusterctl rehearsal (docs/rehearse.md, Site mirror)\n"
            f"Types: deb\nURIs: {url}/\nSuites: ./\nSigned-By: {KEYRING}\n")


def _parallel(state: State, one, hosts: tuple[str, ...] = ()) -> dict[str, object]:
    """``one(host)`` on each of ``hosts`` (default: every node) at once: host -> its result."""
    names = list(hosts) or [n.name for n in state.nodes]
    with ThreadPoolExecutor(max_workers=min(16, len(names) or 1)) as pool:
        return dict(zip(names, pool.map(one, names)))


@dataclass(frozen=True)
class SlurmDebs:
    """A ``slurm.install: {kind: debs}`` rehearsal: SchedMD's packages of ``release`` (major.minor), built here and
    placed in every node at ``path`` (the blueprint's directory), as a site puts them there."""

    release: str
    path: str


@dataclass
class MirrorSource:
    """Step ``mirror``: build the site mirror of ``packages`` for the nodes' image (once: the cache keeps it),
    serve it, and point every node's apt at it (and nothing else); with ``debs``, build SchedMD's packages first
    (once), resolve their dependencies into the mirror and put the packages in every node's ``debs.path``."""

    image: Image
    packages: tuple[str, ...]
    debs: SlurmDebs | None = None
    name: str = "mirror"

    def run(self, state: State, record: Record) -> None:
        local = ensure_slurm_debs(self.image, self.debs.release) if self.debs else None
        mirror = ensure_mirror(self.image, Path(state.image_root), self.packages, local)
        url = serve(state, mirror)
        key = mirror.key.read_bytes()
        if local is not None:
            place_debs(state, [n.name for n in state.nodes], self.debs.path, local)

        def one(host: str) -> HostOutcome:
            try:
                write_file(state, host, KEYRING, key, mode="0644")
                write_file(state, host, SOURCES, sources_text(url), mode="0644")
            except RemoteWriteError as exc:
                return HostOutcome(FAILED, 0.0, str(exc))
            r = ssh(state, host, "apt-get -q update", timeout=APT_TIMEOUT_S)
            if r.returncode != 0 or "W:" in r.stderr or "E:" in r.stderr:
                return HostOutcome(FAILED, r.elapsed, f"apt-get update: {(r.stderr or r.stdout).strip()[-400:]}")
            return HostOutcome(OK, r.elapsed, url)

        outcomes = _parallel(state, one)
        for host, outcome in outcomes.items():
            record(host, outcome)
        if any(o.status != OK for o in outcomes.values()):
            raise StepFailed("a node cannot use the site mirror")


POLICY_VERSION = re.compile(r"^ (\*\*\*| {3}) (\S+) (-?\d+)$")
POLICY_SOURCE = re.compile(r"^ {8}\s*-?\d+ (\S+)")


def origins(policy: str) -> dict[str, list[str]]:
    """``apt-cache policy P...`` output -> package -> the sources of its installed version (``/var/lib/dpkg/status``
    left out: every installed package is there)."""
    out: dict[str, list[str]] = {}
    package, installed = None, False
    for line in policy.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            package, installed = line[:-1], False
            out[package] = []
            continue
        m = POLICY_VERSION.match(line)
        if m:
            installed = m.group(1) == "***"
            continue
        s = POLICY_SOURCE.match(line)
        if s and installed and package is not None and s.group(1) != "/var/lib/dpkg/status":
            out[package].append(s.group(1))
    return out


@dataclass
class PackageOrigins:
    """Step ``packages``: every package the roles installed on each node, with its origin; one from anywhere but
    ``allowed`` (the mirror's URL, and the blueprint's .deb directory for ``slurm.install: debs``) fails."""

    hosts: tuple[str, ...] = ()
    """the hosts the converge ran on (default: every node; a node booted early for a later scenario has none)"""
    found: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    """host -> package -> {version, origin}: filled by :meth:`run`, shown in the JSON summary"""
    allowed_local: tuple[str, ...] = ()
    """``file:`` directories a package may come from besides the mirror (the blueprint's debs path)"""
    name: str = "packages"

    def run(self, state: State, record: Record) -> None:
        image = installed_packages(Path(state.image_root))
        url = mirror_url(state)

        def one(host: str) -> HostOutcome:
            r = ssh(state, host, "dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}\\n'", timeout=60)
            if r.returncode != 0:
                return HostOutcome(FAILED, r.elapsed, f"dpkg-query: {r.stderr.strip()[-300:]}")
            now = {f[0]: f[1] for f in (line.split() for line in r.stdout.splitlines()) if f[2:] == ["installed"]}
            added = sorted(p for p in now if image.get(p) != now[p])
            p = ssh(state, host, "apt-cache policy " + " ".join(added), timeout=120) if added else None
            where = origins(p.stdout) if p is not None else {}
            self.found[host] = {}
            wrong = []
            for pkg in added:
                srcs = where.get(pkg, [])
                ok = [s for s in srcs if s.startswith(url) or any(s == d or s.startswith(d.rstrip("/") + "/")
                                                                   for d in self.allowed_local)]
                self.found[host][pkg] = {"version": now[pkg], "origin": ok[0] if ok else " ".join(srcs) or "none"}
                if not ok:
                    wrong.append(f"{pkg} {now[pkg]} from {' '.join(srcs) or 'no source'}")
            detail = f"{len(added)} packages from the mirror" if not wrong else "not from the mirror: " + "; ".join(wrong)
            return HostOutcome(FAILED if wrong else OK, 0.0, detail[:600])

        outcomes = _parallel(state, one, self.hosts)
        for host, outcome in outcomes.items():
            record(host, outcome)
        if any(o.status != OK for o in outcomes.values()):
            raise StepFailed("a node installed a package from outside the site mirror")
