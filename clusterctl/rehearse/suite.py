"""What one ``clusterctl rehearse`` run renders, boots and runs: one scenario, or several of them on one boot.

``--scenario all`` (the default) runs every scenario of the registry (:mod:`.scenario.registry`, in its order)
whose needs the blueprint meets; one that does not apply (failover with one controller) is listed with the
reason in the summary's ``scenarios`` and not counted as passed. Naming scenarios runs those, in the registry's
order, without that filter: a named scenario that cannot run is an error. :func:`build` is a loop over the
scenarios' hooks (:class:`.scenario.base.Scenario`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.slurm import pmix_packages
from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.image.catalog import Image, choose_image
from clusterctl.rehearse.mirror.packages import mirror_packages
from clusterctl.rehearse.mirror.source import MirrorSource, SlurmDebs
from clusterctl.rehearse.node.lifecycle import rehearsal_id
from clusterctl.rehearse.scenario.base import Build, Scenario, write_render
from clusterctl.rehearse.scenario.deploy import Converge, DeployScenario, cluster_of
from clusterctl.rehearse.scenario.registry import ALONE, ORDER, SCENARIOS
from clusterctl.rehearse.select import node_specs
from clusterctl.rehearse.steps import default_steps
from clusterctl.rehearse.variant import slurm_as_rehearsed

ALL = "all"
NODES = "nodes"
"""boot the nodes and check SSH, no scenario"""


@dataclass
class Rehearsal:
    """What the CLI boots and runs, and what the summary says about it."""

    files: dict[str, str]
    """the files as rehearsed, written into the output directory by :func:`build`"""
    specs: list
    steps: list
    info: dict = field(default_factory=dict)
    describe: str = ""
    image: Image | None = None
    """the node image the nodes boot from"""
    links: list = field(default_factory=list)
    """cables between the nodes (:class:`clusterctl.rehearse.node.links.Link`), made at boot"""


def choose(scenario: str | Sequence[str], plan: ClusterPlan) -> tuple[list[Scenario], dict[str, str], str]:
    """The scenarios that run (in the registry's order), the ones ``all`` skips with why, and the one scenario
    named ('' for several). Raises :class:`RehearsalError` for a choice that cannot run."""
    names = [scenario] if isinstance(scenario, str) else list(dict.fromkeys(scenario))
    alone = [cls for cls in ALONE if cls.name in names]
    if alone:
        return [_alone(alone[0](), names, plan)], {}, alone[0].name
    if len(names) > 1 and not set(names) <= set(ORDER):
        raise RehearsalError(f"scenarios {', '.join(names)}: 'all' and 'nodes' are not combined with others",
                             "name several scenarios of: " + ", ".join(ORDER))
    one = names[0] if len(names) == 1 else ""
    everything = [cls() for cls in SCENARIOS]
    if one == ALL:
        unmet = {s.name: s.unmet(plan) for s in everything}
        return ([s for s in everything if unmet[s.name] is None],
                {n: f"not applicable: {u[1]}" for n, u in unmet.items() if u is not None}, one)
    chosen = [s for s in everything if s.name in names]
    for s in chosen:
        if s.runs_alone and len(chosen) > 1:
            raise RehearsalError(f"the {s.name} scenario runs alone ({s.runs_alone})",
                                 f"rehearse --scenario {s.name}, or --scenario all")
        missing = s.unmet(plan) if s.needs_checked_when_named else None
        if missing is not None:
            raise RehearsalError(f"the {s.name} scenario needs {missing[0].what}: {missing[1]}", missing[0].hint)
    return chosen, {}, one


def _alone(s: Scenario, names: list[str], plan: ClusterPlan) -> Scenario:
    """A scenario of :data:`ALONE`, named by itself, whose needs the blueprint meets."""
    if len(names) > 1:
        raise RehearsalError(f"the {s.name} scenario runs alone ({s.runs_alone})", f"rehearse --scenario {s.name}")
    missing = s.unmet(plan)
    if missing is not None:
        raise RehearsalError(f"the {s.name} scenario needs {missing[0].what}: {missing[1]}", missing[0].hint)
    return s


def build(scenario: str | Sequence[str], blueprint: Path, plan: ClusterPlan, output: Path, per_group: int,
          render: Callable[[ClusterPlan], dict[str, str]], image_name: str | None = None) -> Rehearsal:
    """The rehearsal of ``scenario`` (a name of :data:`ORDER`, ``all`` or ``nodes``, or several names of
    :data:`ORDER`, run in that order on one boot like ``all`` but without its applicability filter) for the
    validated ``plan`` of ``blueprint``; ``render`` turns a plan into files. Writes the files as rehearsed into
    ``output``. ``image_name`` is ``--image`` (None: the image nearest the blueprint's ``software.os``)."""
    chosen, skipped, one = choose(scenario, plan)
    image, why = choose_image(plan.software.os if plan.software is not None else None, image_name)
    runs = slurm_as_rehearsed(plan.slurm.model_dump(mode="json"), image).version if plan.slurm else image.slurm
    b = Build(blueprint, plan, output, per_group, render, image, runs, chosen, combined=one in (ALL, ""), alone=one)
    b.base, variant = b.rehearsed(b.adjust)
    b.files = render(b.base)
    b.rid = rehearsal_id(output)
    specs = node_specs(b.base, per_group, b.rid)
    for s in chosen:
        b.files = {**b.files, **s.files(b)}
    write_render(b.files, output)  # first: the directory must be empty or a render before .rehearsal/ is made
    b.info = {"image": {"name": image.name, "suite": image.suite, "reason": why}, **variant.summary()}
    for s in chosen:
        specs = s.nodes(b, specs)
    for s in chosen:
        specs = s.binds(b, specs)
    b.specs = specs
    names = [s.name for s in specs]
    b.cluster = cluster_of(b.base, [n for n in names if n not in b.booted_early])
    b.everyone = cluster_of(b.final_plan, names) if b.final_plan is not None else b.cluster
    for s in chosen:
        b.links += s.links(b)
    steps: list = default_steps()
    if chosen:  # every scenario installs packages: from the site mirror, served from the first step on
        steps.append(_mirror_step(b))
    for s in chosen:
        steps += s.before_converge(b)
    first = next((s for s in chosen if s.converged_first), None)
    if first is not None and not isinstance(first, DeployScenario):  # deploy (and install) converge first
        steps.append(b.label(Converge(b.everyone, hosts=tuple(b.cluster.groups)), first.name))
    for s in chosen:
        steps += s.steps(b)
    b.info["scenarios"] = {**{s.name: "run" for s in chosen}, **skipped}
    return Rehearsal(b.files, b.specs, steps, b.info, variant.describe(), image, b.links)


def _mirror_step(b: Build) -> MirrorSource:
    """The site mirror of what the chosen scenarios install: the roles' packages (Slurm's by install kind) when
    one of them converges the cluster, and each scenario's own :attr:`Scenario.packages`."""
    own = tuple(dict.fromkeys(p for s in b.scenarios for p in s.packages))
    if not any(s.installs_slurm for s in b.scenarios):
        return MirrorSource(b.image, own)
    install = b.base.slurm.install if b.base.slurm is not None else None
    debs = SlurmDebs(b.installed, install.path) if install is not None and install.kind == "debs" else None
    return MirrorSource(b.image, mirror_packages(install.kind if install else "distro", pmix_packages(b.base)) + own,
                        debs)
