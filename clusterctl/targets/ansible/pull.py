"""Pull mode (docs/ansible.md, "Pull mode"): the ansible_pull role's variables, the batches each node finds
itself in (ansible/pull/batches.yml) and the status collector playbook (ansible/pull-status.yml)."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.ansible.document import head_line, yaml_file
from clusterctl.targets.ansible.inventory import ansible_ranges
from clusterctl.yamlout import Flow, comment, comment_lines, unsafe

PULL_BATCHES = "ansible/pull/batches.yml"


PULL_STATUS_PLAYBOOK = "ansible/pull-status.yml"


PULL_STATUS_FILE = "/var/lib/clusterctl/pull-status.json"
"""where clusterctl-pull (roles/ansible_pull/files) writes each node's result"""


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


PULL_STATUS_YML = """\
# Collect every node's pull-status.json ({status}) and write a summary: which node applied which
# version, which failed and in which task. Run where site.yml runs (it reads the files over SSH; --limit works):
#   cd ansible && ansible-playbook pull-status.yml [-e clusterctl_pull_summary=/path/summary.json]
# A node without a status file has never pulled; one that cannot be reached is listed as unreachable.
---
- name: Collect the pull status of every node
  hosts: all
  gather_facts: false
  become: true
  tasks:
    - name: Read the pull status file
      ansible.builtin.slurp:
        src: {status}
      register: clusterctl_pull_status
      failed_when: false

    - name: Write the summary on the control host
      ansible.builtin.copy:
        dest: "{{{{ clusterctl_pull_summary | default(playbook_dir + '/../pull-summary.json') }}}}"
        mode: "0644"
        content: |
          {{%- set nodes = {{}} %}}{{% set versions = {{}} %}}{{% set failed = {{}} %}}
          {{%- for h in ansible_play_hosts_all | sort %}}
          {{%- set r = hostvars[h].clusterctl_pull_status | default({{}}) %}}
          {{%- set st = (r.content | b64decode | from_json) if r.content is defined
              else {{'result': 'never pulled' if r else 'unreachable'}} %}}
          {{%- set _ = nodes.update({{h: st}}) %}}
          {{%- set v = st.last_ok_version | default(none) or 'none' %}}
          {{%- set _ = versions.update({{v: versions.get(v, []) + [h]}}) %}}
          {{%- if st.result != 'ok' %}}
          {{%- set _ = failed.update({{h: {{'result': st.result, 'failed_task': st.failed_task | default(none),
              'message': st.message | default('')}}}}) %}}
          {{%- endif %}}
          {{%- endfor %}}
          {{{{ {{'nodes': nodes, 'versions': versions, 'failed': failed}} | to_nice_json }}}}
      delegate_to: localhost
      run_once: true
      become: false
"""


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
            PULL_STATUS_PLAYBOOK: comment_lines([head_line(plan)]) + PULL_STATUS_YML.format(status=PULL_STATUS_FILE)}
