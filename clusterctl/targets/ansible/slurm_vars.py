"""The Slurm roles' variables: install source and pinned packages (slurm.install), the QOS as sacctmgr shows
them (slurm.qos), the release slurm.conf was rendered for, and the elastic groups of power saving."""

from __future__ import annotations

from clusterctl.plan.cloud import elastic_groups
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.slurm import pmix_packages, sacctmgr_wall, slurm_dev_package, slurm_release
from clusterctl.targets import RenderError
from clusterctl.targets.ansible.document import Section
from clusterctl.yamlout import Flow, FlowMap, Unsafe, unsafe

SLURM_PACKAGES = {
    "debian": {"slurm_controller_packages": ["slurmctld", "slurm-client"],
               "slurm_compute_packages": ["slurmd", "slurm-client"], "slurm_login_packages": ["slurm-client"],
               "slurmdbd_packages": ["slurmdbd"], "slurm_preflight_package": "slurmd",
               "slurm_compute_pam_adopt_packages": ["libpam-slurm-adopt"]},
    "schedmd": {"slurm_controller_packages": ["slurm-smd-slurmctld", "slurm-smd-client"],
                "slurm_compute_packages": ["slurm-smd-slurmd", "slurm-smd-client"],
                "slurm_login_packages": ["slurm-smd-client"], "slurmdbd_packages": ["slurm-smd-slurmdbd"],
                "slurm_preflight_package": "slurm-smd-slurmd",
                "slurm_compute_pam_adopt_packages": ["slurm-smd-libpam-slurm-adopt"]},
}
"""the Slurm roles' packages by naming: Debian's slurm-wlm, or SchedMD's debian/ directory (slurm-smd-*)"""
NVML_PLUGIN_PACKAGE = "slurm-wlm-nvml-plugin"
"""Debian contrib / Ubuntu multiverse: gpu/nvml for the distribution's slurm-wlm (rules.slurm.DISTRO_NVML_PLUGIN)"""


def sacctmgr_minutes(text: str) -> str:
    """A Slurm time as sacctmgr shows a limit in minutes (MaxWall), decided by
    :func:`clusterctl.plan.slurm.sacctmgr_wall` (rule SLURM012 reports the times it cannot write first)."""
    wall = sacctmgr_wall(text)
    if wall is None:
        raise RenderError(f"slurm.qos max_wall {text!r} is not a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, "
                          "D-HH:MM, D-HH:MM:SS)")
    return wall


def qos_vars(qos) -> list[dict[str, object]]:
    """slurm.qos as the slurm_controller role compares it with ``sacctmgr show qos format=Name,Priority,MaxWall,
    MaxTRESPU``: exact strings, empty for no limit."""
    return [{"name": q.name, "priority": q.priority,
             "max_wall": sacctmgr_minutes(q.max_wall) if q.max_wall else "",
             "max_tres_per_user": f"gres/gpu={q.max_gpus_per_user}" if q.max_gpus_per_user else ""} for q in qos]


def slurm_install_vars(plan: ClusterPlan) -> dict[str, object]:
    """The slurm_preflight role's install source (slurm.install) and the Slurm roles' packages, each pinned to
    the declared version with ``name=version`` (the apt module installs exactly that version)."""
    install = plan.slurm.install
    out: dict[str, object] = {"slurm_preflight_install_source": install.kind,
                              "slurm_preflight_install_version": install.version or ""}
    if install.kind == "repo":
        out.update(slurm_preflight_repo_url=install.url, slurm_preflight_repo_key=install.key,
                   slurm_preflight_repo_key_fingerprint=install.key_fingerprint or "",
                   slurm_preflight_repo_suite=install.suite,
                   slurm_preflight_repo_components=Flow(list(install.components)))
    elif install.kind == "debs":
        out["slurm_preflight_debs_dir"] = install.path
    pin = f"={install.version}" if install.version else ""
    naming = getattr(install, "packages", "debian")
    if naming not in SLURM_PACKAGES:  # the model allows only these; a value set behind its back is refused
        raise RenderError(f"slurm.install.packages is '{naming}', not one of {', '.join(SLURM_PACKAGES)}")
    for var, names in SLURM_PACKAGES[naming].items():
        if isinstance(names, str):
            out[var] = names
            continue
        if var == "slurm_compute_packages" and install.kind == "distro" and install.gpu_nvml:
            names = [*names, NVML_PLUGIN_PACKAGE]
        out[var] = Flow([n + pin for n in names])
    return out


def slurm_host_vars(plan: ClusterPlan) -> dict[str, object]:
    """What every Slurm host gets besides the Slurm packages: the slurm and munge accounts' ids (slurm_accounts
    creates them before any package), the PMIx package the mpi/pmix plugin loads (:func:`pmix_packages`; the
    slurm_compute, slurm_login and slurm_controller roles install it) and the Slurm headers a SPANK plugin is
    built against (:func:`slurm_dev_package`; enroot_pyxis)."""
    slurm = plan.slurm
    return {"slurm_accounts_slurm_uid": slurm.user.uid, "slurm_accounts_slurm_gid": slurm.user.gid,
            "slurm_accounts_munge_uid": slurm.munge_user.uid, "slurm_accounts_munge_gid": slurm.munge_user.gid,
            "slurm_pmix_packages": Flow(pmix_packages(plan)),
            "slurm_dev_package": slurm_dev_package(slurm.install)}


def slurm_version_var(plan: ClusterPlan) -> str:
    """major.minor of the plan's Slurm release ("24.05.3" -> "24.05"): what slurm.conf was rendered for, and what
    the slurm_preflight role compares with the installed release. A plain string (digits and a dot, nothing to
    template): ansible-core 2.19 reads ``!unsafe "24.05"`` as the float 24.05; anything else stays !unsafe."""
    v = slurm_release(plan)
    return str(v) if v else Unsafe(plan.slurm.version)



def power_save_vars(plan: ClusterPlan) -> list[Section]:
    """slurm_power_save's variables: the provider and the elastic groups as host ranges (none without them)."""
    groups = elastic_groups(plan)
    if not groups:
        return []
    return [(["slurm_power_save: the elastic node groups whose instances slurm.conf's ResumeProgram and SuspendProgram "
              "create and delete (docs/ansible.md, \"Power saving\")"],
             unsafe({"slurm_power_save_provider": plan.cloud.provider,
                     "slurm_power_save_elastic_groups": [FlowMap({"name": g.name, "hosts": g.hostlist})
                                                         for g in groups]}))]
