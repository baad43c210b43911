"""tests/e2e/events.py on a small literal job_events directory (no rehearsal: this runs everywhere)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.events import roles_run

EVENTS = [
    {"event": "playbook_on_start", "event_data": {}},
    {"event": "playbook_on_play_start", "event_data": {"play": "Base configuration of every node"}},
    {"event": "playbook_on_task_start", "event_data": {"play": "Base configuration of every node",
                                                       "task": "Gathering Facts"}},
    {"event": "runner_on_ok", "event_data": {"play": "Base configuration of every node", "task": "Gathering Facts",
                                             "host": "gpu01"}},
    {"event": "playbook_on_task_start", "event_data": {"play": "Base configuration of every node",
                                                       "task": "Install the base packages", "role": "common"}},
    {"event": "runner_on_ok", "event_data": {"play": "Base configuration of every node", "role": "common",
                                             "task": "Install the base packages", "host": "gpu01"}},
    {"event": "playbook_on_task_start", "event_data": {"play": "MUNGE authentication on every Slurm node",
                                                       "task": "Install the MUNGE key from the vault",
                                                       "role": "munge"}},
    {"event": "runner_on_skipped", "event_data": {"play": "MUNGE authentication on every Slurm node",
                                                  "role": "munge", "task": "Install the MUNGE key file",
                                                  "host": "gpu01"}},
    # a host event of a role with no task start of its own (never the case in a real stream): not counted
    {"event": "runner_on_ok", "event_data": {"role": "nvidia_driver", "task": "Read the driver", "host": "gpu01"}},
    {"event": "playbook_on_task_start", "event_data": {"task": "Install the MUNGE key file", "role": "munge"}},
    {"event": "playbook_on_stats", "event_data": {}},
]


def write(directory, events):
    directory.mkdir(parents=True)
    for counter, event in enumerate(events, 1):
        (directory / f"{counter}-{counter:08x}.json").write_text(json.dumps({"counter": counter, **event}))
    return directory


def test_roles_of_started_tasks_only(tmp_path):
    events = write(tmp_path / "job_events", EVENTS)
    (events / "stdout.txt").write_text("not an event")  # only *.json files are events
    assert roles_run(events) == {"common", "munge"}


def test_a_run_without_role_tasks_ran_no_role(tmp_path):
    assert roles_run(write(tmp_path / "job_events", EVENTS[:4])) == set()


def test_a_missing_directory_or_a_broken_event_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        roles_run(tmp_path / "nowhere")
    events = write(tmp_path / "job_events", EVENTS)
    (events / "99-truncated.json").write_text('{"event": "playbook_on_task_start", "event_da')
    with pytest.raises(ValueError):
        roles_run(events)
