"""Render targets: each turns a ClusterPlan into ``{relative path: text}``.

A target module defines ``render(plan: ClusterPlan) -> dict[str, str]``. Targets never re-derive facts
the plan holds and never do IO beyond reading templates and shipped roles; the writer
(:mod:`clusterctl.write`) puts the files on disk.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from clusterctl.hostlist import HostlistError
from clusterctl.plan.model import ClusterPlan

TARGETS = ("slurm", "nccl", "ansible", "bmc", "testinfra", "switches", "subnet_manager", "dns", "dhcp", "nvlink",
           "handoff", "cloud_node", "monitoring", "firewall", "acceptance", "kubernetes", "pulumi")
"""in render order; ``--target`` selects a subset"""


class UnknownTarget(ValueError):
    pass


class RenderError(ValueError):
    """The plan cannot be written as valid configuration for a target (a rule should catch it first;
    the CLI reports it as an unusable blueprint, exit 2, never a traceback). ``hint`` says what to change
    when the error is about the blueprint's own text rather than a missing rule."""

    hint: str | None = None
    path: tuple = ()
    """where in the blueprint the offending value is (``("slurm", "partitions", 0)``), when known: the CLI
    prints it as FILE:LINE:COL"""


def render_targets(plan: ClusterPlan, names: Iterable[str] | None = None,
                   switches: frozenset[str] | None = None, handoff_all: bool = False) -> dict[str, str]:
    """All files of the selected targets, keyed by their path relative to the output directory. ``switches``:
    the switches target writes these switches' directories whatever the blueprint's size (``render --switches``);
    ``handoff_all``: the handoff target writes its per-node and per-cable files whatever the blueprint's size
    (``render --handoff-all``)."""
    selected = list(names) if names else list(TARGETS)
    files: dict[str, str] = {}
    for name in selected:
        if name not in TARGETS:
            raise UnknownTarget(name)
        module = importlib.import_module(f"clusterctl.targets.{name}")
        try:
            if name == "switches" and switches:
                rendered = module.render(plan, switches)
            elif name == "handoff" and handoff_all:
                rendered = module.render(plan, full=True)
            else:
                rendered = module.render(plan)
        except HostlistError as exc:  # a name the model let through that no host list can hold
            raise RenderError(f"{name} target: {exc}") from None
        for path, text in rendered.items():
            if path in files and files[path] != text:
                raise RuntimeError(f"targets disagree about {path}")
            files[path] = text
    return dict(sorted(files.items()))
