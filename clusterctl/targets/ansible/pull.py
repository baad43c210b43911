"""Pull mode (docs/ansible.md, "Pull mode"): the ansible_pull role's variables, the batches each node finds
itself in (ansible/pull/batches.yml) and the status collector playbook (ansible/pull-status.yml)."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.ansible.document import head_line, yaml_file
from clusterctl.targets.ansible.inventory import ansible_ranges
from clusterctl.targets.common import render_template
from clusterctl.yamlout import Flow, comment, comment_lines, unsafe

PULL_BATCHES = "ansible/pull/batches.yml"
PULL_STATUS_PLAYBOOK = "ansible/pull-status.yml"
PULL_STATUS_FILE = "/var/lib/clusterctl/pull-status.json"
"""where clusterctl-pull (roles/ansible_pull/files) writes each node's result"""
PULL_STATUS_TEMPLATE = "ansible/pull-status.yml.j2"
"""the collector playbook: static but for the header and PULL_STATUS_FILE; the Ansible templates in it are kept
as they are by a raw block"""


def pull_settings(plan: ClusterPlan):
    """The blueprint's slurm.rollout.pull, or None."""
    s = plan.slurm
    return s.rollout.pull if s is not None else None


def pull_vars(pull) -> dict:
    return {**unsafe({"ansible_pull_source": pull.source, "ansible_pull_ref": pull.ref}),
            "ansible_pull_interval_minutes": pull.interval_minutes, "ansible_pull_splay_minutes": pull.splay_minutes}


def pull_batches(plan: ClusterPlan) -> tuple[list[str], list[list[str]]]:
    """(control hosts, compute batches) as inventory host patterns: the batches the push's compute play makes
    with ``serial: batch_percent%`` (Ansible: int(N * percent / 100), at least 1 host, in inventory order), so a
    node finds its batch by matching its name. Every other host is in batch 0, released first (as the push
    changes the controllers before the compute nodes). O(hosts), written as ranges."""
    percent = plan.slurm.rollout.batch_percent
    compute = [h for g in plan.groups if g.role == "compute" for h in g.hosts]
    size = int(percent / 100.0 * len(compute)) or 1
    control = [h for g in plan.groups if g.role != "compute" for h in g.hosts]
    return (ansible_ranges(control),
            [ansible_ranges(compute[i:i + size]) for i in range(0, len(compute), size)])


def pull_files(plan: ClusterPlan) -> dict[str, str]:
    """ansible/pull/batches.yml (which batch each host is in) and ansible/pull-status.yml (the collector)."""
    pull = pull_settings(plan)
    control, batches = pull_batches(plan)
    batches_yml = yaml_file(plan, [
        f"Pull mode batches: {plan.slurm.rollout.batch_percent} % of the compute nodes each "
        "(slurm.rollout.batch_percent), in inventory order, as site.yml's compute play batches them.",
        "clusterctl-pull finds its host's batch here at the tip of the pull ref (0: 'control', every node that is "
        "not a compute node; 1..n: 'batches'),",
        f"then applies the version that rollout.yml at the root of the tip of {comment(pull.ref)} releases to that "
        "batch:",
        "  versions: {0: <commit or tag>, 1: <commit or tag>, '*': <commit or tag>}",
        "without rollout.yml (or an entry for the batch, or '*'): the tip itself (docs/ansible.md, \"Pull mode\")."],
        [([], {"batch_percent": plan.slurm.rollout.batch_percent,
               "control": Flow(control), "batches": [Flow(b) for b in batches]})])
    return {PULL_BATCHES: batches_yml,
            PULL_STATUS_PLAYBOOK: render_template(PULL_STATUS_TEMPLATE, status_file=PULL_STATUS_FILE,
                                                  header=comment_lines([head_line(plan)]).rstrip("\n"))}
