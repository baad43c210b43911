"""The blueprint as rehearsed: what a rehearsal must change so the rendered files run on its nodes.

A rehearsal node boots a clean Debian image (:mod:`clusterctl.rehearse.image`) on this machine's CPUs and
memory, with no GPU, no NVML and no RDMA. Rendered exactly as written, a blueprint would name packages the
image cannot carry and node lines with 104 cores and 2 TB that slurmd here cannot report (slurmctld drains such
a node). So the rehearsal renders a *variant*, keeping the blueprint's Slurm wherever the image can carry it
(:func:`slurm_as_rehearsed`):

- ``slurm.install``: SchedMD's packages (``debs``, or a ``repo`` of them, unreachable here) are built from the
  release tarball of the blueprint's major.minor when one is reachable and placed in the blueprint's directory;
  ``distro`` (and Debian-named packages) is the image's own slurm-wlm; ``slurm.version`` follows;
- ``software.os``: the image's (the plan's per-OS facts, such as the PMIx package name, are the node's);
- ``slurm.gres_autodetect: off``: no NVML in a node; gres.conf's File= lines then name the GPU stand-ins;
- every compute node type: this machine's sockets, cores, threads and memory (:func:`machine_hardware`, as
  ``slurmd -C`` reports them), the rest of its server spec (GPUs, NICs) unchanged; ``slurm.memory_reserve_gb:
  1``. A cloud instance type has no CPU layout a blueprint can write (the plan derives one from its vCPUs): its
  groups keep the instance type (the cloud stack, the elastic groups' launch templates) and the plan of the
  variant gets this machine's CPUs and memory for them (:func:`with_machine_hardware`).

Each change is listed in :class:`Variant` with why, and in the JSON summary (``rehearsed_as``), so a reader sees
exactly how the rehearsed files differ from the ones the blueprint renders for production.
"""

from __future__ import annotations

from collections.abc import Callable

import copy
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from clusterctl import yamlout
from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.plan.model import ClusterPlan
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.catalog import DEFAULT_IMAGE, IMAGES, SCHEDMD_TARBALLS, Image, schedmd_version
from clusterctl.source import load_yaml_file


@dataclass(frozen=True)
class Hardware:
    """What slurmd reports for this machine (and so for every rehearsal node: they share its CPUs)."""

    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_mib: int


@dataclass
class Variant:
    """The rehearsal's blueprint data and what was changed, as {what: {blueprint: ..., rehearsed: ...}}."""

    data: dict
    changes: dict[str, dict[str, object]] = field(default_factory=dict)
    instance_hardware: dict[str, Hardware] = field(default_factory=dict)
    """cloud instance node types of compute groups -> the hardware their plan gets (this machine's)"""
    image: Image = IMAGES[DEFAULT_IMAGE]
    """the image the nodes boot from"""
    slurm: SlurmAsRehearsed | None = None
    """the Slurm the nodes run (None: the blueprint has no slurm section)"""

    def summary(self) -> dict:
        """For the JSON summary: ``slurm_version`` (blueprint vs rehearsed) and every change."""
        version = self.changes.get("slurm.version")
        rehearsed = (self.data.get("slurm") or {}).get("version")
        return {"slurm_version": {"blueprint": version["blueprint"] if version else rehearsed,
                                  "rehearsed": rehearsed},
                "slurm_install": None if self.slurm is None else self.slurm.install,
                "rehearsed_as": self.changes}

    def describe(self) -> str:
        """One line for the progress output: what the rehearsal renders differently."""
        return "; ".join(f"{k} {c['blueprint']} -> {c['rehearsed']}" for k, c in self.changes.items()
                         if not k.startswith("node_types.")) or "as written"


SYSFS_CPU = Path("/sys/devices/system/cpu")
MEMINFO = Path("/proc/meminfo")


def machine_hardware(sysfs_cpu: Path = SYSFS_CPU, meminfo: Path = MEMINFO) -> Hardware:
    """This machine as ``slurmd -C`` reports it, read where slurmd's hwloc reads it: the online CPUs' package
    and core ids in sysfs, and MemTotal in MiB as RealMemory. Every node shares these CPUs and this memory,
    and no Slurm need be installed on the machine for it."""
    try:
        online = _cpu_list((sysfs_cpu / "online").read_text())
        ids = {c: (int((sysfs_cpu / f"cpu{c}/topology/physical_package_id").read_text()),
                   int((sysfs_cpu / f"cpu{c}/topology/core_id").read_text())) for c in online}
        mem_kib = int(re.search(r"^MemTotal:\s+(\d+) kB", meminfo.read_text(), re.M).group(1))
    except (OSError, ValueError, AttributeError) as exc:
        raise RehearsalError(f"cannot read this machine's CPUs and memory ({sysfs_cpu}, {meminfo}): {exc}") from None
    sockets = len({pkg for pkg, _ in ids.values()})
    cores = len(set(ids.values()))
    return Hardware(sockets, cores // sockets, len(ids) // cores, mem_kib // 1024)


def _cpu_list(text: str) -> list[int]:
    """``0-3,8`` -> [0, 1, 2, 3, 8] (the kernel's cpulist format)."""
    out: list[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


@dataclass(frozen=True)
class SlurmAsRehearsed:
    """The Slurm the nodes of a rehearsal run: its release, its install source and why either differs."""

    version: str
    """major.minor"""
    install: dict
    """``slurm.install`` as rehearsed"""
    why: str = ""
    """why the version or the install source differs from the blueprint's ('' when neither does)"""


DEBS_PATH = "/srv/slurm-debs"
"""where a rehearsal puts the SchedMD packages it built when the blueprint names a repository instead"""


def slurm_as_rehearsed(slurm: dict, image: Image) -> SlurmAsRehearsed:
    """What the image can carry of the blueprint's Slurm: SchedMD's packages (``debs``, or a ``repo`` of them) are
    built from the release tarball of the same major.minor when one is reachable (the newest otherwise) and placed
    in the blueprint's directory; Debian-named packages and ``distro`` are the image's own slurm-wlm."""
    install = slurm.get("install") or {"kind": "distro"}
    version = str(slurm.get("version"))
    if install.get("kind") in ("debs", "repo") and install.get("packages", "schedmd") == "schedmd":
        release = version if version in SCHEDMD_TARBALLS else max(SCHEDMD_TARBALLS)
        rehearsed = {"kind": "debs", "path": install.get("path", DEBS_PATH), "version": schedmd_version(release),
                     "packages": "schedmd", "gpu_nvml": False}
        why = []
        if install["kind"] == "repo":
            why.append(f"the repository {install.get('url')} is not reachable from a rehearsal: the same slurm-smd "
                       f"packages are built from SchedMD's release tarball and placed in {rehearsed['path']}")
        if release != version:
            why.append(f"no SchedMD release tarball of {version} is reachable here (Debian's archive carries "
                       f"{', '.join(SCHEDMD_TARBALLS[r][0] for r in sorted(SCHEDMD_TARBALLS))}): built {release}")
        if install.get("version") != rehearsed["version"] and release == version:
            why.append(f"{SCHEDMD_TARBALLS[release][0]} is the {release} tarball a rehearsal can build")
        if install.get("gpu_nvml", True):
            why.append("built without NVML (no NVIDIA driver in the build root): gres.conf lists the GPUs")
        return SlurmAsRehearsed(release, rehearsed, "; ".join(why))
    why = "" if version == image.slurm else (
        f"{image.name}'s own Slurm is {image.slurm} (Debian {image.suite}'s slurm-wlm)")
    if install.get("kind") != "distro":
        why = "; ".join(w for w in (f"{install['kind']} of Debian-named packages: {image.name}'s own slurm-wlm",
                                    why) if w)
    return SlurmAsRehearsed(image.slurm, {"kind": "distro"}, why)


def rehearsal_variant(data: dict, plan: ClusterPlan, image: Image, hw: Hardware) -> Variant:
    """The blueprint data the rehearsal renders on ``image`` (see the module docstring); ``data`` is not modified."""
    out = copy.deepcopy(data)
    v = Variant(out, image=image)
    slurm = out.get("slurm")
    if isinstance(slurm, dict):
        runs = slurm_as_rehearsed(slurm, image)
        v.slurm = runs
        if str(slurm.get("version")) != runs.version:
            v.changes["slurm.version"] = {"blueprint": slurm.get("version"), "rehearsed": runs.version,
                                          "why": runs.why}
        slurm["version"] = runs.version
        if slurm.get("gres_autodetect", "nvml") != "off":
            v.changes["slurm.gres_autodetect"] = {
                "blueprint": slurm.get("gres_autodetect", "nvml"), "rehearsed": "off",
                "why": "no GPU and no NVML in a rehearsal node: gres.conf's File= lines name the GPU stand-ins"}
        slurm["gres_autodetect"] = "off"
        install = slurm.get("install") or {"kind": "distro"}
        if install != runs.install:
            v.changes["slurm.install"] = {"blueprint": install, "rehearsed": runs.install, "why": runs.why}
        slurm["install"] = runs.install
        slurm["memory_reserve_gb"] = 1.0
    software = out.get("software")
    if isinstance(software, dict) and software.get("os", "ubuntu-22.04") != image.name:
        v.changes["software.os"] = {"blueprint": software.get("os", "ubuntu-22.04"), "rehearsed": image.name,
                                    "why": f"the nodes boot the {image.name} image: the plan's per-OS facts (the PMIx "
                                           "package, the distribution's Slurm) must be the image's"}
        software["os"] = image.name
    memory_gb = max(1, hw.memory_mib // 1024)
    types = out.get("node_types", {})
    for g in plan.groups:
        if g.role == "compute" and g.type.name in types and g.type.instance is not None:
            v.instance_hardware[g.type.name] = Hardware(hw.sockets, hw.cores_per_socket, hw.threads_per_core,
                                                        memory_gb * 1024)
            v.changes[f"node_types.{g.type.name}"] = {
                "blueprint": {"instance": g.type.instance_name, "sockets": g.type.sockets,
                              "cores_per_socket": g.type.cores_per_socket,
                              "threads_per_core": g.type.threads_per_core, "memory_gb": g.type.memory_gb},
                "rehearsed": {"instance": g.type.instance_name, "sockets": hw.sockets,
                              "cores_per_socket": hw.cores_per_socket, "threads_per_core": hw.threads_per_core,
                              "memory_gb": memory_gb}}
            continue
        if g.role != "compute" or g.type.name not in types or g.type.server is None:
            continue
        spec = g.type.server.model_dump(mode="json", exclude_none=True)
        spec.pop("sources", None)
        before = {"sockets": g.type.sockets, "cores_per_socket": g.type.cores_per_socket,
                  "threads_per_core": g.type.threads_per_core, "memory_gb": g.type.memory_gb}
        spec["cpu"] = {"sockets": hw.sockets, "cores_per_socket": hw.cores_per_socket,
                       "threads_per_core": hw.threads_per_core}
        spec["memory_gb"] = memory_gb
        entry = {k: val for k, val in types[g.type.name].items() if k != "server"}
        entry["spec"] = spec
        types[g.type.name] = entry
        v.changes[f"node_types.{g.type.name}"] = {
            "blueprint": before, "rehearsed": {**spec["cpu"], "memory_gb": memory_gb}}
    return v


def with_machine_hardware(plan: ClusterPlan, hardware: dict[str, Hardware]) -> ClusterPlan:
    """``plan`` with the CPUs and memory of ``hardware`` (node type name -> Hardware) in those node types' plans
    (cloud instance types: the instance, its GPUs and network stay as the catalog has them)."""
    if not hardware:
        return plan

    def hw(t):
        h = hardware.get(t.name)
        return t if h is None else replace(t, sockets=h.sockets, cores_per_socket=h.cores_per_socket,
                                           threads_per_core=h.threads_per_core, memory_gb=h.memory_mib / 1024)
    return replace(plan, node_types={k: hw(t) for k, t in plan.node_types.items()},
                   groups=tuple(replace(g, type=hw(g.type)) for g in plan.groups))


def rehearsed_plan(path: Path, plan: ClusterPlan, image: Image,
                   adjust: Callable[[Variant], None] | None = None) -> tuple[ClusterPlan, Variant]:
    """The plan of the blueprint at ``path`` (already validated as ``plan``) as ``image`` on this machine rehearses
    it; ``adjust`` changes the variant first (a scenario's own change, e.g. version-guard's other release)."""
    variant = rehearsal_variant(load_yaml_file(path)[0], plan, image, machine_hardware())
    if adjust is not None:
        adjust(variant)
    try:
        rehearsed = expand(load_blueprint_text(yamlout.body(variant.data, dumper=yamlout.PureDumper),
                                               f"{path} (as rehearsed)", path.parent))
    except BlueprintError as exc:
        raise RehearsalError(f"{path}: cannot be rehearsed on this machine: {exc}",
                             "see docs/rehearse.md, 'The blueprint as rehearsed'") from None
    return with_machine_hardware(rehearsed, variant.instance_hardware), variant
