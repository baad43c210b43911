"""clusterctl_pull_status: an Ansible callback that writes the run's per-host counts, the names of the tasks that
changed something and the first failed task as JSON to $CLUSTERCTL_PULL_RESULT; clusterctl-pull (role ansible_pull)
turns it into pull-status.json."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: clusterctl_pull_status
    type: aggregate
    short_description: per-host counts, changed tasks and the first failed task, as JSON, for clusterctl-pull
    description:
      - Writes the recap counts of every host, the names of the tasks that changed something on each host (the
        first MAX_CHANGED, in order) and the first failed task of each host, as JSON, to the file named by the
        CLUSTERCTL_PULL_RESULT environment variable when the playbook ends.
    requirements:
      - enabled in ANSIBLE_CALLBACKS_ENABLED
"""


MAX_CHANGED = 100
"""changed task names kept per host (the count in the recap is the whole number)"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "clusterctl_pull_status"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._failed = {}
        self._changed = {}

    def _fail(self, result, what):
        host = result._host.get_name()
        if host not in self._failed:
            msg = str(result._result.get("msg", ""))[:300]
            self._failed[host] = f"{result._task.get_name()}: {what}{': ' + msg if msg else ''}"

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._fail(result, "failed")

    def v2_runner_on_ok(self, result):
        if result._result.get("changed"):
            names = self._changed.setdefault(result._host.get_name(), [])
            if len(names) < MAX_CHANGED:
                task = result._task
                role = getattr(task, "_role", None)
                name = task.get_name()  # ansible-core before 2.17 names a role task "role : task" itself
                prefix = f"{role.get_name()} : " if role else ""
                names.append(name if name.startswith(prefix) else prefix + name)

    def v2_runner_on_unreachable(self, result):
        self._fail(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("CLUSTERCTL_PULL_RESULT")
        if not path:
            return
        hosts = {h: {k: v for k, v in stats.summarize(h).items()} for h in sorted(stats.processed)}
        with open(path, "w") as f:
            json.dump({"hosts": hosts, "failed": self._failed, "changed": self._changed}, f, sort_keys=True)
