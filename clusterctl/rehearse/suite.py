"""What one ``clusterctl rehearse`` run renders, boots and runs: one scenario, or all of them on one boot.

``--scenario all`` (the default) runs every scenario that applies to the blueprint on one set of nodes, in an
order where each leaves the cluster as the next expects it:

1. ``version-guard`` on fresh nodes: the files rendered for another Slurm release are written, site.yml must
   stop at its preflight; then the files as rehearsed are written back;
2. ``deploy``: converge, converge again (changed=0), testinfra, srun;
3. ``node-failure``: the health check drains a node that lost a GPU, and returns it;
4. ``failover`` (blueprints with a backup controller and shared StateSaveLocation);
5. ``pull``: every node applies the rendered tree itself from a git remote, gated by rollout.yml;
6. ``elastic`` (cloud blueprints with elastic node groups, and then alone: their compute nodes come up only
   through it): the bootstrap from user data and Slurm's power-saving cycle (clusterctl/rehearse/scenario/elastic.py);
7. ``rolling``: last, because it re-renders the changed blueprint over the rehearsal's own adjustments.

A scenario that does not apply (failover with one controller) is listed with the reason in the summary's
``scenarios``; it is not counted as passed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from clusterctl.rehearse import RehearsalError
from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.steps import Record

ALL = "all"
ORDER = ("version-guard", "deploy", "node-failure", "failover", "pull", "elastic", "rolling")
"""the scenarios of ``--scenario all``, in the order they run"""


@dataclass
class Named:
    """A step under another name (``deploy: converge``), so that a run of every scenario names each step
    with its scenario."""

    step: object
    name: str

    def run(self, state: State, record: Record) -> None:
        self.step.run(state, record)


@dataclass
class WriteRender:
    """Write rendered files into the rehearsal directory (the writer's lock, journal and atomic replace)."""

    files: dict[str, str]
    name: str = "render"

    def run(self, state: State, record: Record) -> None:
        write_render(self.files, Path(state.dir))


def write_render(files: dict[str, str], out: Path) -> None:
    from clusterctl.write import RENDER_SEALED, write_tree

    write_tree(files, out, executable={p for p in files if p.endswith(".sh")}, sealed=RENDER_SEALED)


@dataclass
class Rehearsal:
    """What the CLI boots and runs, and what the summary says about it."""

    files: dict[str, str]
    """the files as rehearsed, written into the output directory by :func:`build`"""
    specs: list
    steps: list
    info: dict = field(default_factory=dict)
    describe: str = ""


def failover_applies(plan) -> str:
    """'' when the failover scenario can run on ``plan``, else why not."""
    from clusterctl.plan.roles import slurm_roles
    from clusterctl.plan.slurm import state_tier

    if not slurm_roles(plan).has_backup_controller:
        return "one Slurm controller (slurm.controllers names no backup)"
    if state_tier(plan) is None:
        return "StateSaveLocation is not on a shared storage tier"
    return ""


def build(scenario: str | Sequence[str], blueprint: Path, plan, output: Path, per_group: int,
          render: Callable[[object], dict[str, str]]) -> Rehearsal:
    """The rehearsal of ``scenario`` (a name of :data:`ORDER`, ``all`` or ``nodes``, or several names of
    :data:`ORDER`, run in that order on one boot like ``all`` but without its applicability filter: a named
    scenario that cannot run is an error) for the validated ``plan`` of ``blueprint``; ``render`` turns a plan
    into files. Writes the files as rehearsed into ``output``."""
    from clusterctl.rehearse.node import lifecycle
    from clusterctl.rehearse.scenario.deploy import SHARED_STORAGE, Converge, cluster_of, deploy_steps
    from clusterctl.rehearse.scenario.rolling import Rolling, change_blueprint
    from clusterctl.rehearse.scenario.checks import (
        Failover,
        FailoverTimeout,
        HealthSetup,
        NodeFailure,
        PrologFailure,
        VersionGuard,
        adjust_variant,
        scenario_specs,
    )
    from clusterctl.rehearse.select import node_specs
    from clusterctl.rehearse.steps import default_steps
    from clusterctl.rehearse.variant import installed_slurm, rehearsed_plan

    from clusterctl.rehearse.scenario import elastic as el

    installed = installed_slurm()
    names = [scenario] if isinstance(scenario, str) else list(dict.fromkeys(scenario))
    if len(names) > 1 and not set(names) <= set(ORDER):
        raise RehearsalError(f"scenarios {', '.join(names)}: 'all' and 'nodes' are not combined with others",
                             "name several scenarios of: " + ", ".join(ORDER))
    scenario = names[0] if len(names) == 1 else ""  # the one scenario named (of ORDER, all, nodes); '' for several
    wanted = list(ORDER) if scenario == ALL else [] if scenario == "nodes" else [n for n in ORDER if n in names]
    # several scenarios on one boot: steps are named with their scenario, version-guard writes the files back
    combined = scenario in (ALL, "")
    if not scenario and "elastic" in wanted:
        raise RehearsalError("the elastic scenario runs alone (its compute nodes come up only through it)",
                             "rehearse --scenario elastic, or --scenario all")
    skipped: dict[str, str] = {}
    no_elastic = el.applies(plan)
    if scenario == "elastic" and no_elastic:
        raise RehearsalError(f"the elastic scenario needs a cloud blueprint with an elastic node group: {no_elastic}",
                             "rehearse blueprints/lab-cloud.yaml, or set cloud.elastic: true on a compute group")
    if scenario == ALL and no_elastic:
        wanted.remove("elastic")
        skipped["elastic"] = f"not applicable: {no_elastic}"
    elif scenario == ALL:
        for name in [w for w in wanted if w != "elastic"]:
            wanted.remove(name)
            skipped[name] = ("not applicable: the compute nodes are elastic (State=CLOUD): they come up through the "
                             "elastic scenario")
    if scenario == ALL:
        why = failover_applies(plan)
        if why and "failover" in wanted:
            wanted.remove("failover")
            skipped["failover"] = f"not applicable: {why}"
        if plan.blueprint.slurm is None or not any(g.role == "compute" for g in plan.groups):
            for name in ("node-failure", "failover", "rolling", "version-guard", "pull"):
                if name in wanted:
                    wanted.remove(name)
                    skipped[name] = "not applicable: no Slurm or no compute nodes"
    alone = scenario if scenario == "version-guard" else ""
    from clusterctl.rehearse.scenario.pull import adjust_pull, host_batches, pull_source, pull_steps
    source = pull_source(plan) if "pull" in wanted else ""

    def adjust(var, v2: bool = False) -> None:
        adjust_variant(alone, var, installed)
        if source:
            adjust_pull(var, source, v2)
        if "elastic" in wanted:
            el.adjust_elastic(var)
    base, variant = rehearsed_plan(blueprint, plan, adjust=adjust)
    files = render(base)
    rid = lifecycle.rehearsal_id(output)
    specs = node_specs(base, per_group, rid)
    elastic = {h: g for h, g in el.elastic_hosts(base).items() if h in {s.name for s in specs}}
    if "elastic" in wanted:  # the stack the Pulumi program would write, and the elastic nodes' rehearsal variables
        files = {**files, "cloud/stack.json": json.dumps(el.rehearsal_stack(base), indent=1, sort_keys=True) + "\n",
                 **el.host_vars(elastic)}
    write_render(files, output)  # first: the directory must be empty or a render before .rehearsal/ is made
    if "elastic" in wanted:  # the "bucket", bind-mounted in every elastic node
        bucket = el.bucket_dir(output)
        bucket.mkdir(parents=True, exist_ok=True)
        specs = [replace(s, binds=tuple(s.binds) + ((str(bucket), el.BUCKET),)) if s.name in elastic else s
                 for s in specs]
    info = variant.summary()
    after_plan = change = None
    if "rolling" in wanted:
        holder: dict = {}

        def changed(var) -> None:
            adjust(var)
            var.data, holder["change"] = change_blueprint(var.data, base)
        after_plan, _ = rehearsed_plan(blueprint, plan, adjust=changed)
        change = holder["change"]
        grown = node_specs(after_plan, per_group, rid)
        moved = {s.name: (s.address, a.address) for s in specs for a in grown if a.name == s.name
                 and a.address != s.address}
        if moved:
            raise RehearsalError(f"the rolling change would move hosts to other addresses: {moved}",
                                 "docs/rehearse.md, 'rolling'")
        specs = grown
        info["rolling_change"] = change.summary()
    if "failover" in wanted:
        specs = scenario_specs("failover", base, specs, output)
    names = [s.name for s in specs]
    cluster = cluster_of(base, [n for n in names if after_plan is None or n != change.new_host])
    everyone = cluster_of(after_plan, names) if after_plan is not None else cluster

    def label(s, scenario_name: str):
        return Named(s, f"{scenario_name}: {s.name}") if combined else s

    steps: list = default_steps()
    if "version-guard" in wanted:
        if combined:
            other_plan, other = rehearsed_plan(blueprint, plan, adjust=lambda var: adjust_variant(
                "version-guard", var, installed))
            steps.append(Named(WriteRender(render(other_plan)), "version-guard: render"))
            rendered = str(other.data["slurm"]["version"])
            steps.append(label(VersionGuard(cluster, rendered, installed), "version-guard"))
            steps.append(Named(WriteRender(files), "version-guard: render back"))
            info["version_guard"] = other.changes.get("slurm.version")
        else:
            steps.append(VersionGuard(cluster, str(base.blueprint.slurm.version), installed))
    needs_converge = [w for w in wanted if w not in ("version-guard", "elastic")]  # elastic: its own converge
    if "failover" in wanted:
        steps.append(label(FailoverTimeout(), "failover"))
    if "deploy" in wanted:
        steps += [label(s, "deploy") for s in deploy_steps(cluster, prepare=everyone)]
        info["shared_storage"] = SHARED_STORAGE
    elif needs_converge:
        steps += [label(deploy_steps(cluster, prepare=everyone)[0], needs_converge[0])]
    if "node-failure" in wanted:
        steps += [label(HealthSetup(cluster), "node-failure"), label(NodeFailure(cluster), "node-failure"),
                  label(PrologFailure(cluster), "node-failure")]
    if "failover" in wanted:
        steps.append(label(Failover(cluster), "failover"))
    if "pull" in wanted:
        v2_plan, _ = rehearsed_plan(blueprint, plan, adjust=lambda var: adjust(var, v2=True))
        steps += [label(s, "pull") for s in pull_steps(cluster, files, render(v2_plan), host_batches(files))]
    if "elastic" in wanted:
        addresses = {s.name: s.address for s in specs}
        setup, after = el.elastic_steps(base, cluster, addresses)
        static = tuple(h for h in cluster.groups if h not in elastic)
        steps += [label(s, "elastic") for s in setup]
        steps.append(label(Converge(cluster, hosts=static), "elastic"))
        steps += [label(s, "elastic") for s in after]
        info["elastic"] = {"hosts": dict(elastic), "static": list(static), "provider": base.blueprint.cloud.provider,
                           "no_cloud_init": "the rehearsal applies the user data's keys itself (no cloud-init)"}
    if "rolling" in wanted:
        after_files = render(after_plan)
        steps.append(label(Rolling(cluster, everyone, lambda: write_render(after_files, output), change),
                           "rolling"))
    info["scenarios"] = {**{w: "run" for w in wanted}, **skipped}
    return Rehearsal(files, specs, steps, info, variant.describe())

