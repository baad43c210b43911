"""The ``pull`` scenario: a node applies its released version of the rendered tree to itself.

The git remote is served from the Slurm controller node: a bare repository ``/srv/clusterctl/pull.git`` on it,
which this machine pushes each version to over SSH, and which every node (the controller too) fetches from
as ``ssh://root@CONTROLLER/srv/clusterctl/pull.git`` over the rehearsal network, with a deploy key and the
controller's pinned host key in ``/etc/clusterctl/pull-ssh/`` (the rehearsal's own key stands in for a deploy
key). A directory of the rehearsal would not do: each node has its own tmpfs ``/tmp``. The blueprint as rehearsed
has ``slurm.rollout.pull.source`` pointing there (listed in ``rehearsed_as``). The timer is not started (a pull it
fired between rounds would race the scenario): each round runs the service's command, ``/usr/local/sbin/clusterctl-pull``,
on each pulling node over SSH at once (the on-demand path, ``systemctl start clusterctl-pull`` on a real node),
then the rendered collector ``ansible/pull-status.yml`` reads their ``pull-status.json``.

One round, a step (``pull-batch``), on one node of each group set (the deploy scenario's ``again_hosts``: the lab's
head01 and gpu01; compute nodes of one set of groups run the same tasks with the same variables): ``v1`` is the
tree as rehearsed, ``v2`` the render of the blueprint with another ``slurm.rollout.pull.interval_minutes`` (the
timer unit every node writes changes, nothing of Slurm does); both are published, and ``rollout.yml`` releases
``v2`` to batch 0 (the control hosts) only. Those nodes apply ``v2``: changed > 0, and every changed task is the
ansible_pull role's (the status callback names them); the others apply ``v1``, the version they run, with
changed=0. The timer unit in each node says which version it runs, and the rendered collector's summary has every
node on the version released to its batch and none failed.

The round is the tree's second application to those hosts, after the converge and the scenarios between: the
deploy scenario leaves its converge-again out when this scenario runs with it (``applies_again``). Releasing ``v2``
to the rest (``"*": v2``) is the same rollout.yml key a batch is held back by; a tree without ``rollout.yml``
applying the tip and a first boot without the callback are the script's behaviours, shown where it runs alone
(tests/test_rehearse_pull.py, with Debian's ansible-playbook). A second round here (release to all) took 80-190 s
of the suite: a full ``site.yml`` on every node.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterctl import hostlist, yamlout
from clusterctl.rehearse.scenario.deploy import (VARS_SUFFIX, Cluster, again_hosts, rehearsal_files,
                                                run_playbook, vars_file)
from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.command import CommandTimeout, run_command
from clusterctl.rehearse.node.ssh import ssh, write_file
from clusterctl.plan.roles import slurm_roles
from clusterctl.rehearse.scenario.base import SLURM_AND_COMPUTE, Build, Scenario
from clusterctl.rehearse.scenario.needs import STATIC_COMPUTE
from clusterctl.rehearse.node.state import State, state_dir
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

REMOTE_PATH = "/srv/clusterctl/pull.git"
"""the bare repository on the controller node (the nodes' git remote)"""
WORK = "pull-work"
"""the work tree in the state directory each version is committed in and pushed from"""
SSH_DIR = "/etc/clusterctl/pull-ssh"
SSH_CONF = "/etc/ssh/ssh_config.d/clusterctl-pull.conf"
PULL_SCRIPT = "/usr/local/sbin/clusterctl-pull"
"""ExecStart of clusterctl-pull.service (roles/ansible_pull)"""
STATUS_FILE = "/var/lib/clusterctl/pull-status.json"
TIMER_UNIT = "/etc/systemd/system/clusterctl-pull.timer"
VARS_DIR = "/etc/clusterctl/pull-vars.d"
"""where a node finds its site variables (the push's secrets and rehearsal variables, 0600)"""
PULL_TIMEOUT_S = 900
V2_INTERVAL = (15, 20)
"""v2's slurm.rollout.pull.interval_minutes: the first that differs from the blueprint's"""
GIT_TIMEOUT_S = 120.0
"""how long one git command of the pull scenario may take (commit, push over SSH to the controller)"""
GIT_ID = ("-c", "user.name=clusterctl rehearsal", "-c", "user.email=rehearsal@localhost")


def pull_source(plan) -> str:
    """The git remote on the first Slurm controller."""
    return f"ssh://root@{slurm_roles(plan).primary_controller}{REMOTE_PATH}"


def adjust_pull(variant, source: str, v2: bool = False) -> None:
    """Point the variant's slurm.rollout.pull at the rehearsal's repository (``v2``: and change its interval)."""
    slurm = variant.data.get("slurm")
    if not isinstance(slurm, dict):
        return
    rollout = slurm.setdefault("rollout", {})
    pull = dict(rollout.get("pull") or {})
    before = pull.get("source")
    pull["source"] = source
    if v2:
        current = int(pull.get("interval_minutes", 30))
        pull["interval_minutes"] = next(v for v in V2_INTERVAL if v != current)
    rollout["pull"] = pull
    variant.changes["slurm.rollout.pull.source"] = {"blueprint": before, "rehearsed": source}


def v2_interval(files: dict[str, str]) -> int:
    """The interval_minutes a render's group_vars/all.yml gives the pull."""
    data = yaml.safe_load(files["ansible/group_vars/all.yml"].replace("!unsafe", ""))
    return int(data["ansible_pull_interval_minutes"])


def _git(cwd: Path, *args: str, env: dict | None = None) -> str:
    r = run_command(["git", *GIT_ID, *args], cwd=cwd, env=env, timeout=GIT_TIMEOUT_S)
    if r.returncode != 0:
        raise StepFailed(f"git {args[0]}: {r.stderr.strip()[-400:]}")
    return r.stdout.strip()


def put(state: State, host: str, path: str, text: str, mode: str = "0600") -> None:
    """Write ``text`` to ``path`` on ``host`` (private directories made on the way)."""
    write_file(state, host, path, text, mode=mode, dir_mode="0700")


def scenario_vars(state: State) -> list[Path]:
    """The variables files earlier scenarios passed to their runs of the tree (``deploy.vars_file``, the deploy's
    own aside), in name order: the node-failure scenario's health check expectations (no RDMA, no mounts a
    rehearsal node can meet)."""
    own = vars_file(state, "deploy")
    return sorted(p for p in own.parent.glob(f"*{VARS_SUFFIX}") if p != own)


def give_access(state: State, hosts: list[str], controller: str) -> None:
    """What a real node gets from its image or cloud-init: the site variables of the push (the rehearsal
    variables, those of the scenarios' runs and the secrets, 0600, in pull-vars.d) and a deploy key with the
    remote's pinned host key."""
    vars_path, secrets_path = rehearsal_files(state)
    more = [(f"{VARS_DIR}/55-{p.name}", p.read_text()) for p in scenario_vars(state)]
    known = [line for line in Path(state.known_hosts).read_text().splitlines()
             if line.split(",")[0] == controller]
    conf = (f"# clusterctl pull rehearsal: the git remote on {controller}\nHost {controller}\n"
            f"  IdentityFile {SSH_DIR}/id_ed25519\n  IdentitiesOnly yes\n  UserKnownHostsFile {SSH_DIR}/known_hosts\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n")
    for h in hosts:
        put(state, h, f"{VARS_DIR}/50-rehearsal.yml", vars_path.read_text())
        put(state, h, f"{VARS_DIR}/60-secrets.yml", secrets_path.read_text())
        for path, text in more:
            put(state, h, path, text)
        put(state, h, f"{SSH_DIR}/id_ed25519", Path(state.key).read_text())
        put(state, h, f"{SSH_DIR}/known_hosts", "\n".join(known) + "\n", "0644")
        put(state, h, SSH_CONF, conf, "0644")


@dataclass
class PullRepo:
    """The rehearsal's git remote: a bare repository on the controller node, and a work tree in the state
    directory that each version is committed in and pushed from."""

    controller: str
    v1: dict[str, str]
    v2: dict[str, str]
    commits: dict[str, str] = field(default_factory=dict)
    edited: list[str] = field(default_factory=list)
    """files of the tree the scenarios rewrote in the rehearsal directory before the converge (shorter intervals)"""

    def as_rehearsed(self, out: Path) -> None:
        """v1 as the nodes run it: the render's files as the rehearsal directory holds them now (the scenarios'
        edits in: a node applying v1 must find what the converge installed); v2: v1 with the files the v2 render
        changes. A file both edited and changed by v2 is an error (v2 would undo the edit)."""
        current = {rel: (out / rel).read_text() for rel in self.v1}
        self.edited = sorted(rel for rel, text in current.items() if text != self.v1[rel])
        changed = {rel: text for rel, text in self.v2.items() if self.v1.get(rel) != text}
        both = sorted(set(self.edited) & set(changed))
        if both:
            raise StepFailed(f"v2 changes files the rehearsal edited: {both}")
        self.v1, self.v2 = current, {**current, **changed}

    def commit(self, state: State, message: str, files: dict[str, str] | None = None,
               rollout: dict | None = None, tag: str = "") -> str:
        """Replace the work tree's files with ``files`` (when given), write or remove rollout.yml, commit, push."""
        work = state_dir(Path(state.dir)) / WORK
        env = {**os.environ, "GIT_SSH_COMMAND": f"ssh -F {shlex.quote(state.ssh_config)}"}
        if not work.exists():
            r = ssh(state, self.controller, f"git init --bare --quiet -b main {REMOTE_PATH}")
            if r.returncode != 0:
                raise StepFailed(f"{self.controller}: git init: {r.stderr.strip()[-300:]}")
            work.mkdir(parents=True)
            _git(work, "init", "--quiet", "-b", "main")
            _git(work, "remote", "add", "origin", f"ssh://root@{self.controller}{REMOTE_PATH}")
        if files is not None:
            for old in _git(work, "ls-files", "-z").split("\0"):
                if old and old != "rollout.yml" and old not in files:
                    (work / old).unlink(missing_ok=True)
            for rel, text in files.items():
                write_text_atomic(work / rel, text, 0o755 if rel.endswith(".sh") else 0o644)
        rfile = work / "rollout.yml"
        if rollout is None:
            rfile.unlink(missing_ok=True)
        else:
            write_text_atomic(rfile, yamlout.comment_lines(["which version each pull batch may apply "
                                                            "(ansible/pull/batches.yml)"])
                              + yamlout.body({"versions": rollout}, dumper=yamlout.PureDumper))
        _git(work, "add", "-A", ".")
        _git(work, "commit", "--quiet", "--allow-empty", "-m", message)
        if tag:
            _git(work, "tag", "-f", tag)
        _git(work, "push", "--quiet", "--force", "--tags", "origin", "main", env=env)
        head = _git(work, "rev-parse", "HEAD")
        if tag:
            self.commits[tag] = head
        return head


def pull_on(state: State, host: str) -> dict:
    """Run the pull service's command on ``host``; its JSON status (the last line it prints)."""
    try:
        r = ssh(state, host, PULL_SCRIPT, timeout=PULL_TIMEOUT_S)
    except CommandTimeout:
        return {"result": "failed", "message": f"no result after {PULL_TIMEOUT_S} s"}
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"result": "failed", "message": f"exit {r.returncode}: {(r.stdout + r.stderr).strip()[-400:]}"}


def collect(state: State, hosts: list[str], ident: str) -> dict:
    """The rendered collector (ansible/pull-status.yml) over SSH; its summary JSON."""
    summary = state_dir(Path(state.dir)) / f"{ident}.json"
    summary.unlink(missing_ok=True)
    run = run_playbook(state, hosts, ident=ident, playbook="pull-status.yml",
                       extra_args=["-e", f"clusterctl_pull_summary={summary}"])
    if run.rc != 0 or not summary.exists():
        raise StepFailed(f"ansible-playbook pull-status.yml exited {run.rc}: {dict(run.failed)}"[:600])
    return json.loads(summary.read_text())


@dataclass
class PullRound:
    """Publish a version (and rollout.yml), pull on every node at once, collect the statuses and check them."""

    cluster: Cluster
    repo: PullRepo
    name: str
    release: dict | None
    """rollout.yml's versions (tags); None: no rollout.yml (every node applies the tip)"""
    hosts: tuple[str, ...] = ()
    """the nodes that pull (default: every host of the cluster)"""
    expect: dict[str, str] = field(default_factory=dict)
    """host -> tag it must be on afterwards (default: every host on v1)"""
    unchanged: tuple[str, ...] = ()
    """hosts that must report changed=0: they apply the version they already run"""
    changed: tuple[str, ...] = ()
    """hosts that must report changed > 0, every changed task of role ``changes_only`` (they apply v2: its timer
    unit differs, and nothing else may change)"""
    changes_only: str = "ansible_pull"
    publish: tuple[str, ...] = ()
    """'v1', 'v2': commit those renders first, in order (each tagged so)"""
    intervals: dict[str, int] = field(default_factory=dict)

    def run(self, state: State, record: Record) -> None:
        hosts = list(self.hosts or self.cluster.groups)
        if "v1" in self.publish:
            give_access(state, hosts, self.repo.controller)
            self.repo.as_rehearsed(Path(state.dir))
        for tag in self.publish:
            self.repo.commit(state, f"render {tag}", getattr(self.repo, tag), tag=tag)
        tags = {c: t for t, c in self.repo.commits.items()}
        if self.release is not None:
            self.repo.commit(state, f"rollout: {self.release}", rollout=self.release)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(hosts) or 1) as pool:
            statuses = dict(zip(hosts, pool.map(lambda h: pull_on(state, h), hosts)))
        wall = time.monotonic() - t0
        summary = collect(state, hosts, self.name)
        for h in hosts:
            st = statuses[h]
            collected = (summary.get("nodes") or {}).get(h, {})
            tag = tags.get(st.get("version") or "", "?")
            want = self.expect.get(h, "v1")
            counts = {"ok": int(st.get("ok") or 0), "changed": int(st.get("changed") or 0),
                      "batch": st.get("batch") if st.get("batch") is not None else -1,
                      "pull_seconds": round(float(st.get("seconds") or 0), 1)}
            problems = []
            if st.get("result") != "ok":
                problems.append(f"{st.get('result')}: {st.get('failed_task') or st.get('message')}")
            elif st.get("changed") is None:
                problems.append("no counts from the status callback")
            if tag != want:
                problems.append(f"applied {tag} ({st.get('version')}), expected {want}")
            if collected.get("version") != st.get("version") or collected.get("result") != st.get("result"):
                problems.append(f"the collector read {collected.get('result')} {collected.get('version')}")
            names = st.get("changed_tasks") or []
            if h in self.unchanged and counts["changed"]:
                problems.append(f"changed={counts['changed']} applying the version it runs, expected 0: {names[:8]}")
            if h in self.changed and not counts["changed"]:
                problems.append(f"applied {want} with changed=0 (its timer unit differs)")
            other = [n for n in names if not n.startswith(f"{self.changes_only} : ")]
            if h in self.changed and (other or len(names) != counts["changed"]):
                problems.append(f"applied {want}: changed tasks outside role {self.changes_only} "
                                f"(or not named: {len(names)} of {counts['changed']}): {other[:8]}")
            counts["changed_tasks"] = names
            counts["v1_edited_files"] = self.repo.edited
            interval = self.intervals.get(want)
            if interval:
                unit = ssh(state, h, f"cat {TIMER_UNIT}").stdout
                if f"OnUnitActiveSec={interval}min" not in unit:
                    problems.append(f"{TIMER_UNIT} lacks OnUnitActiveSec={interval}min")
            record(h, HostOutcome(FAILED if problems else OK, float(st.get("seconds") or wall),
                                  "; ".join(problems) or f"{tag}, batch {counts['batch']}, changed={counts['changed']}",
                                  counts))
        on = {tags.get(v, v): sorted(hs) for v, hs in (summary.get("versions") or {}).items()}
        wanted = {}
        for h in hosts:
            wanted.setdefault(self.expect.get(h, "v1"), []).append(h)
        if on != {t: sorted(hs) for t, hs in wanted.items()} or summary.get("failed"):
            raise StepFailed(f"collector summary: versions {on}, failed {summary.get('failed')}; expected {wanted}")


def pull_steps(cluster: Cluster, v1: dict[str, str], v2: dict[str, str], batches: dict[str, int],
               hosts: Sequence[str]) -> list:
    """The scenario's round (module docstring) on ``hosts``; ``batches``: host -> pull batch (from the v1 render)."""
    repo = PullRepo(cluster.controllers[0], v1, v2)
    first = tuple(h for h in hosts if batches.get(h, 99) == 0)
    held = tuple(h for h in hosts if h not in first)
    intervals = {"v1": v2_interval(v1), "v2": v2_interval(v2)}
    return [
        PullRound(cluster, repo, "pull-batch", {0: "v2", "*": "v1"}, hosts=tuple(hosts), publish=("v1", "v2"),
                  expect={h: "v2" if h in first else "v1" for h in hosts}, changed=first, unchanged=held,
                  intervals=intervals),
    ]


def host_batches(files: dict[str, str]) -> dict[str, int]:
    """host -> batch, from a render's ansible/pull/batches.yml (the rehearsal's few hosts: names, not ranges)."""
    data = yaml.safe_load(files["ansible/pull/batches.yml"])
    out = {}

    def names(pattern: str) -> list[str]:
        return hostlist.expand(pattern.replace(":", "-"))

    for p in data.get("control") or []:
        for h in names(p):
            out[h] = 0
    for n, patterns in enumerate(data.get("batches") or [], 1):
        for p in patterns:
            for h in names(p):
                out[h] = n
    return out


class PullScenario(Scenario):
    name = "pull"
    applies_again = True
    proves = ("a node of each group set applies its released version of the rendered tree itself from a git "
              "remote, batch by batch as rollout.yml releases it: a held node changes nothing, a released one only "
              "its pull timer")
    needs = (STATIC_COMPUTE, SLURM_AND_COMPUTE)

    def adjust(self, variant, build: Build, v2: bool) -> None:
        adjust_pull(variant, pull_source(build.plan), v2)

    def steps(self, build: Build) -> list:
        v2_plan, _ = build.rehearsed(lambda var: build.adjust(var, v2=True))
        return [build.label(s, self.name) for s in
                pull_steps(build.cluster, build.files, build.render(v2_plan), host_batches(build.files),
                           again_hosts(build))]
