"""Reading ansible-runner's event stream after a run: ``artifacts/<ident>/job_events/*.json``, one JSON object
per event ({"event": ..., "event_data": {"play": ..., "task": ..., "role": ...}, ...})."""

from __future__ import annotations

import json
from pathlib import Path


def roles_run(events_dir: Path) -> set[str]:
    """The roles of the tasks the run started: ``event_data.role`` of every ``playbook_on_task_start`` event.
    A task filtered out by ``--tags``/``--skip-tags`` never starts, so a role skipped by tag is absent (a task
    whose ``when`` is false on every host did start); play-level tasks (fact gathering) have no role. A missing
    directory or an unreadable event is an error, not an empty set."""
    events_dir = Path(events_dir)
    if not events_dir.is_dir():
        raise FileNotFoundError(f"no job_events directory: {events_dir}")
    roles = set()
    for path in sorted(events_dir.glob("*.json")):
        event = json.loads(path.read_text())
        if event.get("event") == "playbook_on_task_start":
            role = (event.get("event_data") or {}).get("role")
            if role:
                roles.add(role)
    return roles
