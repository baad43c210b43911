"""The blueprint as rehearsed: what a rehearsal must change so the rendered files run on this machine.

A rehearsal node runs the Slurm that is installed here (Debian's slurm-wlm) on this machine's CPUs and
memory, with no GPU, no NVML and no RDMA. Rendering the blueprint as written would give a slurm.conf for
another Slurm release (the version preflight stops the playbook) and node lines with 104 cores and 2 TB
that slurmd here cannot report (slurmctld drains such a node). So the rehearsal renders a *variant*:

- ``slurm.version``: the installed major.minor (``slurmd -V``);
- ``slurm.install: {kind: distro}``: the nodes run the slurm-wlm installed here (a repo or .deb directory the
  blueprint names for production is not on this machine);
- ``slurm.gres_autodetect: off``: Debian builds Slurm without NVML (slurmd is fatal on AutoDetect=nvml);
  gres.conf's File= lines then point at the GPU stand-in devices the rehearsal creates;
- ``slurm.user``, ``slurm.munge_user``: the ids of the slurm and munge accounts this machine has (a node's
  root is an overlay of this machine's, and the slurm_accounts role never renumbers an account);
- every compute node type: this machine's sockets, cores, threads and memory (``slurmd -C``), the rest
  of its server spec (GPUs, NICs) unchanged; ``slurm.memory_reserve_gb: 1``. A cloud instance type has no CPU
  layout a blueprint can write (the plan derives one from its vCPUs): its groups keep the instance type (the
  cloud stack, the elastic groups' launch templates) and the plan of the variant gets this machine's CPUs and
  memory for them (:func:`with_machine_hardware`).

Each change is listed in :class:`Variant` and in the JSON summary (``rehearsed_as``), so a reader sees
exactly how the rehearsed files differ from the ones the blueprint renders for production.
"""

from __future__ import annotations

from collections.abc import Callable

import copy
import grp
import pwd
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from clusterctl import yamlout
from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.plan.model import ClusterPlan
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.command import run_command
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

    def summary(self) -> dict:
        """For the JSON summary: ``slurm_version`` (blueprint vs rehearsed) and every change."""
        version = self.changes.get("slurm.version")
        rehearsed = (self.data.get("slurm") or {}).get("version")
        return {"slurm_version": {"blueprint": version["blueprint"] if version else rehearsed,
                                  "rehearsed": rehearsed},
                "rehearsed_as": self.changes}

    def describe(self) -> str:
        """One line for the progress output: what the rehearsal renders differently."""
        return "; ".join(f"{k} {c['blueprint']} -> {c['rehearsed']}" for k, c in self.changes.items()
                         if not k.startswith("node_types.")) or "as written"


def _run(*args: str) -> str:
    if shutil.which(args[0]) is None:
        raise RehearsalError(f"{args[0]} is not installed: a rehearsal runs the Slurm installed on this machine",
                             "apt-get install -y slurm-wlm munge (scripts/test installs them)")
    r = run_command(args, timeout=30)
    if r.returncode != 0:
        raise RehearsalError(f"`{' '.join(args)}` failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return r.stdout


def installed_slurm() -> str:
    """``slurm-wlm 22.05.8`` -> ``22.05``: the only Slurm a rehearsal can run."""
    out = _run("slurmd", "-V")
    m = re.search(r"(\d{2})\.(\d{2})", out)
    if not m:
        raise RehearsalError(f"cannot read the Slurm version from `slurmd -V`: {out.strip()!r}")
    return f"{m.group(1)}.{m.group(2)}"


def machine_hardware() -> Hardware:
    """This machine as ``slurmd -C`` sees it."""
    kv = dict(re.findall(r"(\w+)=(\S+)", _run("slurmd", "-C")))
    try:
        boards = int(kv.get("Boards", "1"))
        return Hardware(int(kv["SocketsPerBoard"]) * boards, int(kv["CoresPerSocket"]),
                        int(kv["ThreadsPerCore"]), int(kv["RealMemory"]))
    except (KeyError, ValueError):
        raise RehearsalError(f"cannot read this machine's CPUs and memory from `slurmd -C`: {kv}") from None


ACCOUNT_FIELDS = {"user": "slurm", "munge_user": "munge"}
"""slurm.user and slurm.munge_user -> the account name (roles/slurm_accounts)"""


def machine_accounts() -> dict[str, dict[str, int]]:
    """The slurm and munge accounts this machine has, as slurm.user / slurm.munge_user ids: a node whose root is an
    overlay of this machine's has them too, and the slurm_accounts role never renumbers an account."""
    found = {}
    for field_name, name in ACCOUNT_FIELDS.items():
        try:
            found[field_name] = {"uid": pwd.getpwnam(name).pw_uid, "gid": grp.getgrnam(name).gr_gid}
        except KeyError:
            continue
    return found


def rehearsal_variant(data: dict, plan: ClusterPlan, version: str, hw: Hardware,
                      accounts: dict[str, dict[str, int]] | None = None) -> Variant:
    """The blueprint data the rehearsal renders (see the module docstring); ``data`` is not modified.
    ``accounts``: the slurm and munge ids the nodes already have (:func:`machine_accounts`), rehearsed instead of
    the blueprint's."""
    out = copy.deepcopy(data)
    v = Variant(out)
    slurm = out.get("slurm")
    if isinstance(slurm, dict):
        for field_name, ids in (accounts or {}).items():
            written = slurm.get(field_name)
            if written != ids:
                v.changes[f"slurm.{field_name}"] = {"blueprint": written or "default", "rehearsed": ids}
            slurm[field_name] = dict(ids)
        if str(slurm.get("version")) != version:
            v.changes["slurm.version"] = {"blueprint": slurm.get("version"), "rehearsed": version}
        slurm["version"] = version
        if slurm.get("gres_autodetect", "nvml") != "off":
            v.changes["slurm.gres_autodetect"] = {"blueprint": slurm.get("gres_autodetect", "nvml"), "rehearsed": "off"}
        slurm["gres_autodetect"] = "off"
        install = slurm.get("install") or {"kind": "distro"}
        if install != {"kind": "distro"}:  # the nodes run this machine's slurm-wlm: no repository, no .deb directory
            v.changes["slurm.install"] = {"blueprint": install, "rehearsed": {"kind": "distro"}}
        slurm["install"] = {"kind": "distro"}
        slurm["memory_reserve_gb"] = 1.0
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


def rehearsed_plan(path: Path, plan: ClusterPlan,
                   adjust: Callable[[Variant], None] | None = None) -> tuple[ClusterPlan, Variant]:
    """The plan of the blueprint at ``path`` (already validated as ``plan``) as this machine rehearses it;
    ``adjust`` changes the variant first (a scenario's own change, e.g. version-guard's other release)."""
    variant = rehearsal_variant(load_yaml_file(path)[0], plan, installed_slurm(), machine_hardware(),
                                machine_accounts())
    if adjust is not None:
        adjust(variant)
    try:
        rehearsed = expand(load_blueprint_text(yamlout.body(variant.data, dumper=yamlout.PureDumper),
                                               f"{path} (as rehearsed)"))
    except BlueprintError as exc:
        raise RehearsalError(f"{path}: cannot be rehearsed on this machine: {exc}",
                             "see docs/rehearse.md, 'The blueprint as rehearsed'") from None
    return with_machine_hardware(rehearsed, variant.instance_hardware), variant
