"""``version-guard``: the blueprint is rendered for another Slurm release than the one installed; the rendered
``site.yml`` must stop at its preflight play, naming both releases, before any later play runs a task on any
host, and no Slurm daemon may run on any node afterwards.

It runs first, on fresh nodes. Alone, the whole rehearsal is rendered for the other release; with other
scenarios, the other release's files are written for its step and the files as rehearsed written back after.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from clusterctl.rehearse.node.state import State
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Scenario, WriteRender
from clusterctl.rehearse.scenario.deploy import Cluster, prepare_nodes, run_playbook
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.scenario.observe import PlayTrace, daemons_running, runner_events, trace
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

SLURM_RELEASES = ("21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11")
"""major releases, oldest first: version-guard renders for the release after the installed one when the
blueprint names the installed release itself"""

def other_release(blueprint: str | None, installed: str) -> str:
    """The release version-guard renders for: the blueprint's when it is not the installed one (the case an
    operator meets), otherwise the next release (or the previous one for the newest)."""
    if blueprint and str(blueprint)[:5] != installed:
        return str(blueprint)
    if installed in SLURM_RELEASES:
        i = SLURM_RELEASES.index(installed)
        return SLURM_RELEASES[i + 1] if i + 1 < len(SLURM_RELEASES) else SLURM_RELEASES[i - 1]
    return "24.05" if installed != "24.05" else "24.11"


def adjust_variant(scenario: str, variant, installed: str) -> None:
    """Change the rehearsal variant for ``scenario`` in place (only version-guard does: it renders for
    another release than ``installed``); the change is listed in the summary's ``rehearsed_as``."""
    if scenario != "version-guard":
        return
    slurm = variant.data.get("slurm")
    if not isinstance(slurm, dict):
        return
    before = variant.changes.get("slurm.version", {}).get("blueprint", slurm.get("version"))
    other = other_release(before, installed)
    slurm["version"] = other
    variant.changes["slurm.version"] = {"blueprint": before, "rehearsed": other, "installed": installed}

@dataclass
class VersionGuard:
    """site.yml rendered for ``rendered`` on nodes running ``installed``: it must stop in its first play."""

    cluster: Cluster
    rendered: str
    installed: str
    name: str = "version-guard"

    def run(self, state: State, record: Record) -> None:
        errors = prepare_nodes(state, replace(self.cluster, accounting=None))  # no database: nothing to touch
        for host, err in errors.items():
            record(host, HostOutcome(FAILED, 0.0, err))
        if errors:
            raise StepFailed("node preparation failed")
        hosts = list(self.cluster.groups)
        run = run_playbook(state, hosts, ident="version-guard")
        if run.rc == 0:
            raise StepFailed(f"site.yml rendered for Slurm {self.rendered} succeeded on Slurm {self.installed}")
        t = trace(runner_events(state, "version-guard"))
        if not t.plays:
            raise StepFailed("no play started (ansible-runner recorded no play_start event)")
        first = t.plays[0]
        if "preflight" not in first.lower():
            raise StepFailed(f"the first play of site.yml is {first!r}, not the Slurm release preflight")
        later = [(p, ev) for p, evs in t.tasks.items() if p != first for ev in evs]
        if len(t.plays) > 1 or later:
            raise StepFailed(f"plays after the preflight ran: {t.plays[1:]}; tasks: {later[:5]}")
        for h in hosts:
            record(h, self._host(state, h, run.seconds, t, first))

    def _host(self, state: State, host: str, seconds: float, t: PlayTrace, first: str) -> HostOutcome:
        fails = t.failures.get(host, [])
        named = [m for p, _, m in fails if p == first and self.rendered in m and self.installed in m]
        running = daemons_running(state, host)
        touched = [p for p in ("etc/slurm", "etc/munge/munge.key")
                   if (Path(next(n.upper for n in state.nodes if n.name == host)) / p).exists()]
        counts = {"preflight_failures": len(named), "later_tasks": 0, "daemons": len(running),
                  "files_written": len(touched)}
        if not named:
            return HostOutcome(FAILED, seconds, f"no preflight failure naming {self.rendered} and {self.installed}: "
                                                f"{fails[:2]}", counts)
        if running or touched:
            return HostOutcome(FAILED, seconds, f"daemons {running} running, files {touched} written", counts)
        return HostOutcome(OK, seconds, named[0][:300], counts)


class VersionGuardScenario(Scenario):
    name = "version-guard"
    proves = "site.yml rendered for another Slurm release stops at its preflight, before any host is touched"
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE)
    converged_first = False

    def adjust(self, variant, build: Build, v2: bool) -> None:
        if build.alone == self.name:
            adjust_variant(self.name, variant, build.installed)

    def before_converge(self, build: Build) -> list:
        if not build.combined:
            return [VersionGuard(build.cluster, str(build.base.slurm.version), build.installed)]
        other_plan, other = build.rehearsed(lambda var: adjust_variant(self.name, var, build.installed))
        build.info["version_guard"] = other.changes.get("slurm.version")
        return [build.label(WriteRender(build.render(other_plan)), self.name),
                build.label(VersionGuard(build.cluster, str(other.data["slurm"]["version"]), build.installed), self.name),
                build.label(WriteRender(build.files, name="render back"), self.name)]
