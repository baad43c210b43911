"""clusterctl_pull_status: an Ansible callback that writes the run's per-host counts and first failed task as JSON
to $CLUSTERCTL_PULL_RESULT; clusterctl-pull (role ansible_pull) turns it into pull-status.json."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: clusterctl_pull_status
    type: aggregate
    short_description: per-host counts and the first failed task, as JSON, for clusterctl-pull
    description:
      - Writes the recap counts of every host and the first failed task of each host, as JSON, to the file named
        by the CLUSTERCTL_PULL_RESULT environment variable when the playbook ends.
    requirements:
      - enabled in ANSIBLE_CALLBACKS_ENABLED
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "clusterctl_pull_status"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._failed = {}

    def _fail(self, result, what):
        host = result._host.get_name()
        if host not in self._failed:
            msg = str(result._result.get("msg", ""))[:300]
            self._failed[host] = f"{result._task.get_name()}: {what}{': ' + msg if msg else ''}"

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._fail(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._fail(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("CLUSTERCTL_PULL_RESULT")
        if not path:
            return
        hosts = {h: {k: v for k, v in stats.summarize(h).items()} for h in sorted(stats.processed)}
        with open(path, "w") as f:
            json.dump({"hosts": hosts, "failed": self._failed}, f, sort_keys=True)
