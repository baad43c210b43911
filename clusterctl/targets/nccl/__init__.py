"""nccl target: ``nccl/<node_type>.conf`` for every node type with GPUs (installed as ``/etc/nccl.conf``),
plus ``nccl/<node_type>.env.sh`` where a cloud vendor ships its own NCCL profile (GCP GPUDirect), and
``nccl/<node_type>.enroot.env`` (the same settings for enroot/pyxis containers, :mod:`.enroot`) where jobs run
containers with enroot.

Every line of a ``.conf`` is ``KEY=VALUE`` preceded by comments saying why. The settings depend on the
compute fabric the node type's groups are attached to with ``nic_role: compute`` (bare metal) or on the
instance type's ``network.fabric`` (cloud):

- InfiniBand / RoCE: compute HCAs only, bootstrap interface, rail policy, QPs per connection on multi-tier
  fabrics, a longer IB timeout on very large fabrics; RoCE adds the traffic class and GID handling.
- NVLink: NVLink SHARP on Hopper+ NVSwitch domains, multi-node NVLink on NVL72 (needs IMEX).
- AWS EFA: nothing but the socket interface (the aws-ofi-nccl plugin needs no FI_* on current versions).
- GCP GPUDirect (TCPX/TCPXO/gIB): no constants; a companion shell file sources Google's profile and sets
  interface names only.
- Azure ND v5: the values the Azure HPC image writes to its own /etc/nccl.conf (which this file replaces).

Values and their sources: docs/nccl.md. Facts the plan does not hold yet (RDMA device and interface
names) are documented defaults that a per-node-type override replaces
(:func:`~clusterctl.targets.nccl.settings.overrides`).

This module writes the files and composes each node type's settings; the parts: :mod:`.settings` (what they
all shape), :mod:`.fabric` (InfiniBand, RoCE, sockets), :mod:`.nvlink`, and :mod:`.cloud`, which picks the
provider profile (:mod:`.aws_efa`, :mod:`.azure_nd`, :mod:`.gcp_gpudirect`) for a cloud instance type.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan, GroupPlan, NodeTypePlan
from clusterctl.catalog.models import accelerator_vendor
from clusterctl.targets.common import at, conf_value, header, path_part, render_template
from clusterctl.targets.nccl.cloud import cloud_settings, profile
from clusterctl.targets.nccl.enroot import enroot_env, uses_enroot
from clusterctl.targets.nccl.fabric import compute_fabric, fabric_line, rdma, sockets_only
from clusterctl.targets.nccl.nvlink import nvlink_settings
from clusterctl.targets.nccl.settings import ENV_PATH, Setting, ShellStep
from clusterctl.yamlout import comment


def render(plan: ClusterPlan) -> dict[str, str]:
    groups_of: dict[str, list[GroupPlan]] = {}
    for g in plan.groups:
        groups_of.setdefault(g.type.name, []).append(g)
    files: dict[str, str] = {}
    for name, nt in plan.node_types.items():
        groups = groups_of.get(name)
        if not groups or nt.gpus == 0:
            continue
        preamble, settings, steps = _node_type(plan, nt, groups)
        # Older NCCL parsers do not skip '#' lines: a comment holding '=' would become a variable.
        preamble = [_conf_comment(line) for line in preamble]  # user-chosen names
        file = path_part(name, "node type name")
        with at(("node_types", name, "nccl")):
            checked = [Setting(_wrap([_conf_comment(" ".join(s.why))]), s.key, _setting_value(s, name))
                       for s in settings]
        files[f"nccl/{file}.conf"] = render_template(
            "nccl/nccl.conf.j2", header=_conf_comment(header(plan).rstrip("\n")) + "\n", preamble=_wrap(preamble),
            settings=checked)
        if uses_enroot(plan) and not steps:  # a vendor profile is a script the job sources (docs/nccl.md)
            with at(("node_types", name, "nccl")):
                files[f"nccl/{file}.enroot.env"] = enroot_env(plan, nt, checked)
        if steps:
            files[f"nccl/{file}.env.sh"] = render_template(
                "nccl/env.sh.j2", header=header(plan), preamble=_wrap([comment(p) for p in _env_preamble(nt)]),
                steps=[ShellStep(_wrap([comment(" ".join(s.why))]), s.code) for s in steps])
    return files


def _conf_comment(line: str) -> str:
    """A comment line of nccl.conf: on one line, and without '=' (NCCL before 2.x does not skip comments, so
    ``# a=b`` would set the variable ``# a``)."""
    return comment(line).replace("=", "-")


def _setting_value(s: Setting, node_type: str) -> str:
    """NCCL reads ``KEY=VALUE`` up to the end of the line and takes everything after the first '=': a value
    must not hold a line break, '#', a quote or whitespace (interface and device lists never do); '=' is
    allowed (``NCCL_IB_HCA==mlx5_0:1`` is an exact-match list)."""
    return conf_value(s.value, f"{s.key} of node type {node_type}", equals=True) if s.key else s.value


def group_files(plan: ClusterPlan) -> dict[str, tuple[str, ...]]:
    """Node group -> the files this target renders for it, relative to the output directory:
    ``nccl/<node_type>.conf`` for every group with GPUs (installed as /etc/nccl.conf), and
    ``nccl/<node_type>.env.sh`` where the job must source a vendor profile (GCP GPUDirect), and
    ``nccl/<node_type>.enroot.env`` where jobs run enroot containers (not beside a vendor profile: that is a
    script the job sources, not values an environment file holds)."""
    out: dict[str, tuple[str, ...]] = {}
    for g in plan.groups:
        if g.type.gpus:
            env = (f"nccl/{g.type.name}.env.sh",) if _vendor_profile(g.type) else ()
            containers = (f"nccl/{g.type.name}.enroot.env",) if uses_enroot(plan) and not env else ()
            out[g.name] = (f"nccl/{g.type.name}.conf", *env, *containers)
    return out


def _vendor_profile(nt: NodeTypePlan) -> bool:
    """The job must source a vendor profile: the node type's cloud profile ships a companion env.sh."""
    prof = profile(nt)
    return prof is not None and prof.steps is not None


COMMENT_WIDTH = 98
"""comment text per line; with '# ' in front no line is wider than 100 characters"""


def _wrap(paragraphs: Sequence[str]) -> tuple[str, ...]:
    """Each paragraph wrapped to COMMENT_WIDTH on its own."""
    return tuple(part for p in paragraphs
                 for part in textwrap.wrap(p, COMMENT_WIDTH, break_long_words=False, break_on_hyphens=False))


def _env_preamble(nt: NodeTypePlan) -> list[str]:
    return [(f"NCCL environment for node type '{nt.name}' ({nt.instance_name}), installed as {ENV_PATH}: "
             "source it (bash) in the job before NCCL starts, e.g. at the top of the sbatch script. "
             "Sources: docs/nccl.md (clusterctl).")]


# --- one node type -------------------------------------------------------------------------------------

def _node_type(plan: ClusterPlan, nt: NodeTypePlan,
               groups: Sequence[GroupPlan]) -> tuple[list[str], list[Setting], list[ShellStep]]:
    what = nt.server_name or nt.instance_name or nt.name
    preamble = [
        (f"NCCL settings for node type '{nt.name}' ({what}, {nt.gpus} x {nt.gpu_model}); "
        f"node groups: {', '.join(g.name for g in groups)}."),
        ("Installed as /etc/nccl.conf: NCCL reads the variables below at init; a variable already set in the "
        "job's environment wins over the file. Every value and its source: docs/nccl.md (clusterctl)."),
    ]
    steps: list[ShellStep] = []
    acc = nt.accelerator
    if acc is not None and accelerator_vendor(acc) == "AMD":
        preamble.append("AMD GPUs: RCCL reads the same NCCL_* names but from /etc/rccl.conf (ROCm RCCL docs, "
                        "NCCL_CONF_FILE): install this file there.")
    if nt.instance is not None:
        settings, steps, line = cloud_settings(plan, nt, groups)
        preamble.append(line)
    else:
        comp = compute_fabric(plan, nt)
        if comp is not None and comp.kind in ("infiniband", "roce"):
            preamble.append(fabric_line(comp))
            settings = rdma(plan, nt, comp) + nvlink_settings(plan, nt, groups)
        else:
            preamble.append(fabric_line(comp) if comp else
                            "Compute fabric: none (no fabric attaches this node type's groups with nic_role compute).")
            settings = sockets_only(plan, nt, comp) + nvlink_settings(plan, nt, groups)
    settings.append(Setting((
        "NCCL_ALGO and NCCL_PROTO are not set: NCCL lists them under 'Debugging' (not for production).",)))
    return preamble, settings, steps
