"""What a scenario is: a small unit that declares what it needs of the blueprint (:class:`Need`) and what it
proves, and contributes to the rehearsal being built (:class:`Build`) through a few hooks, each a no-op unless
the scenario has something to add: changes to the blueprint as rehearsed, extra files, the nodes to boot and
what is bound into them, and its steps before and after the cluster's first converge.

``clusterctl.rehearse.suite.build`` calls the hooks of the scenarios that run, in the registry's order
(:mod:`.registry`); a scenario never looks at which others run, only at the :class:`Build`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.slurm import state_tier
from clusterctl.rehearse.node.lifecycle import NodeSpec
from clusterctl.rehearse.node.links import Link
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import Record
from clusterctl.rehearse.image.catalog import Image
from clusterctl.rehearse.variant import rehearsed_plan
from clusterctl.write import RENDER_SEALED, write_tree


@dataclass(frozen=True)
class Need:
    """Something a scenario needs of the blueprint: ``unmet(plan)`` is '' when the plan has it, else why not
    (the summary lists the scenario as ``not applicable: <why>``)."""

    what: str
    """the need in a few words, as an error names it ("a backup Slurm controller")"""
    unmet: Callable[[ClusterPlan], str]
    hint: str = ""


def _slurm_and_compute(plan: ClusterPlan) -> str:
    if plan.slurm is None or not any(g.role == "compute" for g in plan.groups):
        return "no Slurm or no compute nodes"
    return ""


def _backup_controller(plan: ClusterPlan) -> str:
    return "" if slurm_roles(plan).has_backup_controller else "one Slurm controller (slurm.controllers names no backup)"


def _shared_state(plan: ClusterPlan) -> str:
    return "" if state_tier(plan) is not None else "StateSaveLocation is not on a shared storage tier"


SLURM_AND_COMPUTE = Need("Slurm and compute nodes", _slurm_and_compute)
BACKUP_CONTROLLER = Need("a blueprint with a backup controller", _backup_controller,
                         "rehearse blueprints/lab-ha.yaml, or name two hosts in slurm.controllers")
SHARED_STATE = Need("StateSaveLocation on a shared storage tier", _shared_state,
                    "set slurm.state_save_location under an nfs tier's mount (rule SLURM009)")


@dataclass
class Build:
    """The rehearsal being built: the inputs, then what the hooks and ``suite.build`` work out in turn."""

    blueprint_path: Path
    plan: ClusterPlan
    output: Path
    per_group: int
    render: Callable[[ClusterPlan], dict[str, str]]
    image: Image
    """the image the nodes boot from"""
    installed: str
    """the Slurm release (major.minor) the nodes run, as rehearsed"""
    scenarios: Sequence[Scenario]
    """the scenarios that run, in the registry's order"""
    combined: bool
    """several scenarios on one boot: steps are named with their scenario (``deploy: converge``)"""
    alone: str
    """the one scenario named on the command line, or '' (``all``, several, ``nodes``)"""
    base: ClusterPlan | None = None
    """the plan as rehearsed (every scenario's :meth:`Scenario.adjust` applied)"""
    files: dict[str, str] = field(default_factory=dict)
    rid: str = ""
    specs: list[NodeSpec] = field(default_factory=list)
    """the nodes to boot (after every scenario's :meth:`Scenario.nodes` and :meth:`Scenario.binds`)"""
    info: dict = field(default_factory=dict)
    cluster: object = None
    """the deploy view of the rendered inventory's hosts (``scenario.converge.Cluster``)"""
    everyone: object = None
    """the deploy view of every booted node (more than ``cluster`` when a scenario boots a host early)"""
    final_plan: ClusterPlan | None = None
    """the plan a scenario changes the cluster into while it runs (add-node), if any"""
    links: list[Link] = field(default_factory=list)
    """cables between the nodes (after every scenario's :meth:`Scenario.links`)"""
    booted_early: frozenset[str] = frozenset()
    """hosts booted but not yet in the rendered inventory"""

    def adjust(self, variant, v2: bool = False) -> None:
        """Every running scenario's change to the blueprint as rehearsed (``v2``: the pull's second version)."""
        for s in self.scenarios:
            s.adjust(variant, self, v2)

    def rehearsed(self, adjust: Callable[[object], None]) -> tuple[ClusterPlan, object]:
        """The plan (and the variant) of the blueprint as rehearsed with ``adjust`` alone."""
        return rehearsed_plan(self.blueprint_path, self.plan, self.image, adjust=adjust)

    def label(self, step, scenario: str):
        return Named(step, f"{scenario}: {step.name}") if self.combined else step


class Scenario:
    """One scenario. Subclasses set the class attributes and override the hooks they need."""

    name: ClassVar[str]
    proves: ClassVar[str]
    """what a passing run shows, in one sentence (docs/rehearse.md says it at length)"""
    needs: ClassVar[tuple[Need, ...]] = ()
    """checked in order by ``--scenario all``: the first unmet one skips the scenario"""
    runs_alone: ClassVar[str] = ""
    """why it cannot share a boot with other named scenarios, or ''"""
    needs_checked_when_named: ClassVar[bool] = False
    """whether naming it on a blueprint that lacks a need is an error before anything boots"""
    converged_first: ClassVar[bool] = True
    """its steps expect the cluster converged (deploy converges itself; the others get a converge step)"""
    installs_slurm: ClassVar[bool] = True
    """its nodes run the rendered roles, so the site mirror holds what they install (Slurm and the rest)"""
    packages: ClassVar[tuple[str, ...]] = ()
    """Debian packages the scenario itself installs on its nodes (from the site mirror)"""
    applies_again: ClassVar[bool] = False
    """its steps apply the rendered tree a second time to one host of each group set (the deploy scenario's
    :func:`~clusterctl.rehearse.scenario.deploy.again_hosts`) and require changed=0 of everything its own change
    does not touch: the deploy scenario then leaves its converge-again out (each claim shown once)"""

    def unmet(self, plan: ClusterPlan) -> tuple[Need, str] | None:
        """The first need ``plan`` does not meet, with why; None when it meets them all."""
        for need in self.needs:
            why = need.unmet(plan)
            if why:
                return need, why
        return None

    def adjust(self, variant, build: Build, v2: bool) -> None:
        """Change the blueprint as rehearsed (listed in the summary's ``rehearsed_as``)."""

    def files(self, build: Build) -> dict[str, str]:
        """Files the rehearsal writes beside the render."""
        return {}

    def nodes(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """The nodes to boot, when the scenario boots others than the render's."""
        return specs

    def binds(self, build: Build, specs: list[NodeSpec]) -> list[NodeSpec]:
        """The nodes with what the scenario binds into them (directories of the rehearsal)."""
        return specs

    def links(self, build: Build) -> list[Link]:
        """Cables between the nodes to boot (made at boot, after every node is launched)."""
        return []

    def before_converge(self, build: Build) -> list:
        """Steps on fresh nodes, or changes to the rendered files before the first converge."""
        return []

    def steps(self, build: Build) -> list:
        """The scenario's steps once the cluster is converged."""
        return []


@dataclass
class Named:
    """A step under another name (``deploy: converge``), so that a run of every scenario names each step
    with its scenario."""

    step: object
    name: str

    def run(self, state: State, record: Record) -> None:
        self.step.run(state, record)


def write_render(files: dict[str, str], out: Path) -> None:
    """Write rendered files into the rehearsal directory (the writer's lock, journal and atomic replace)."""
    write_tree(files, out, executable={p for p in files if p.endswith(".sh")}, sealed=RENDER_SEALED)


@dataclass
class WriteRender:
    """A step that writes rendered files into the rehearsal directory."""

    files: dict[str, str]
    name: str = "render"

    def run(self, state: State, record: Record) -> None:
        write_render(self.files, Path(state.dir))
