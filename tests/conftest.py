"""The suite's markers and its one way to say "this test needs X" (docs/testing.md, "Skips and requirements").

A test that cannot run here calls :func:`require` (or :func:`require_tool`, :func:`require_module`,
:func:`require_root`) with what is missing. Locally that is a skip naming it; when ``CI`` is set it is a failure,
so nothing is skipped silently in CI. No other module of the suite skips, reads ``CI`` or uses ``skipif``
(tests/test_suite_rules.py holds the suite to that). :func:`refresh_requested` is the same rule for the variables
that rewrite expected files: refused in CI, so a changed expected file always fails there.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest

# Every ansible-playbook the suite starts on this machine (role converges and check-mode runs with a local
# connection, the pull script's runs) feeds its modules to Python on stdin instead of writing, chmod-ing and removing a
# file for each task: the rendered ansible.cfg's own setting (pipelining = true), set here for the test playbooks that
# carry their own configuration. About 8 % of the CPU of the hardware roles' check-mode runs (docs/testing.md).
os.environ.setdefault("ANSIBLE_PIPELINING", "True")

TESTS = Path(__file__).resolve().parent
INSTALL_HINT = "`bash scripts/test` installs it"
ROOT_HINT = "run the suite as root, as CI does"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e: boots rehearsal nodes on this machine (root; namespaces, overlay, bridge; Debian "
                   "openssh-client, iproute2, mmdebstrap, apt-utils, gpg, installed by scripts/test; the "
                   "node image and the site mirror are built from Debian's registry into the cache)")
    config.addinivalue_line(
        "markers", "integration: starts real daemons and tools on this machine (every test under "
                   "tests/integration carries it)")
    config.addinivalue_line(
        "markers", "slurm: starts real munged and slurmctld (and slurmd) from rendered files (root; Debian "
                   "slurm-wlm + munge + libpmix-dev, installed by scripts/test)")


XDIST_GROUPS = {"e2e": "rehearsals", "e2e/test_lab_ha.py": "rehearsals-2", "e2e/test_elastic.py": "rehearsals-2",
                "e2e/test_molecule.py": "rehearsals-2", "e2e/test_fabric.py": "rehearsals-2",
                "e2e/test_fabric_gb200.py": "rehearsals-2", "integration": "host-daemons"}
"""tests/<dir> or tests/<dir>/<module> (the longest match wins) -> the pytest-xdist group its tests run in
(scripts/test runs ``-n <cores + 1> --dist loadgroup``): a group runs on one worker, one test after another. The lab
rehearsal (a session fixture shared by test_deploy and test_scenarios) and the node boots that use the lab's
network or its compute host names (test_nodes, the SIGTERM test) are one group; lab-ha, lab-cloud's elastic cycle
(on the debian-13 image: tests/e2e/test_elastic.py; each with its own network and compute host names), the Molecule
node and the fabric slices of hgx-h200-roce-1024 and gb200-nvl72-8rack (no Slurm, their own networks and switch
names; about 3 minutes, back here since the debian-13 install is folded into the elastic cycle and the lab's group
became the longer) another, so two rehearsals run at
once on two workers; the tests that start daemons on this machine are a third. Rehearsals in different
groups must not share an in-band network or a compute host name (slurmd makes ``slurm_<node>`` cgroups in the
hierarchy every node shares). The other tests spread over every worker (docs/testing.md, "The budget")."""


def xdist_group(path: Path) -> str | None:
    """The XDIST_GROUPS group of the test module at ``path``, or None."""
    if TESTS not in path.parents:
        return None
    rel = path.relative_to(TESTS).as_posix()
    keys = sorted((k for k in XDIST_GROUPS if rel == k or rel.startswith(k + "/")), key=len)
    return XDIST_GROUPS[keys[-1]] if keys else None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    integration = TESTS / "integration"
    for item in items:
        if integration in item.path.parents:
            item.add_marker(pytest.mark.integration)
        group = xdist_group(item.path) or module_fixture_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


def module_fixture_group(item) -> str | None:
    """A group of its own (``module:<path>``) for a test of a module with a module-scoped fixture, so the module
    runs on one worker and its fixture once: ``--dist loadgroup`` spreads ungrouped tests one by one, and each
    worker that got one of them built the fixture again (three check-mode Ansible runs of the hardware roles, three
    converges of roce_network: about 5 CPU minutes of the suite). Such a group is not in XDIST_GROUPS, so its tests
    still run at BACKGROUND_NICE."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if any(d.scope == "module" and d.baseid and item.nodeid.startswith(d.baseid) for d in defs):
            return "module:" + item.nodeid.split("::")[0]
    return None


BACKGROUND_NICE = 10
"""the niceness of a pytest-xdist worker while it runs a test of no XDIST_GROUPS group (see below)"""


def pytest_runtest_setup(item):
    """Under pytest-xdist the rehearsals are the suite's critical path: two workers run them (their groups)
    while the other tests, CPU-bound and with no timing in them, fill the cores. A worker runs those other tests
    at niceness BACKGROUND_NICE and the rehearsals and host daemons (which wait for events with deadlines) at 0,
    so a converge is not slowed by a unit test beside it, and the unit tests take the cores whenever a rehearsal
    waits (a health-check interval, a drain, SuspendTime). Processes a test starts inherit its niceness.
    Raising the priority again needs root (CI and scripts/test run as root); elsewhere it stays as it is."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0 if xdist_group(item.path) else BACKGROUND_NICE)
    except PermissionError:
        pass


def in_ci() -> bool:
    """Whether this run is CI's (the environment variable ``CI`` is set and not empty)."""
    return bool(os.environ.get("CI"))


def require(problems: str | Iterable[str], *, hint: str = INSTALL_HINT) -> None:
    """Stop the calling test when ``problems`` (one, or a list; empty ones are ignored) name something missing:
    a skip locally, a failure when ``CI`` is set. ``hint`` says how to get it, appended in parentheses."""
    found = [problems] if isinstance(problems, str) else list(problems)
    found = [p for p in found if p]
    if not found:
        return
    reason = "; ".join(found) + (f" ({hint})" if hint else "")
    if in_ci():
        pytest.fail(f"{reason} [CI is set: this must not be skipped]", pytrace=False)
    pytest.skip(reason)


def find_tool(name: str) -> str | None:
    """The path of command ``name``: on PATH, or installed beside this Python (a venv that is not activated)."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def require_tool(name: str, *, hint: str = INSTALL_HINT) -> str:
    """The path of command ``name`` (see :func:`find_tool`); :func:`require` when there is none."""
    path = find_tool(name)
    if path is None:
        require(f"{name} is not installed", hint=hint)
    return path


def require_module(name: str, *, hint: str = INSTALL_HINT) -> ModuleType:
    """Python module ``name``, imported; :func:`require` when it cannot be."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        require(f"Python module {name} cannot be imported ({exc})", hint=hint)


def require_root(why: str) -> None:
    """:func:`require` running as root; ``why`` says what needs it."""
    if os.geteuid() != 0:
        require(f"not running as root ({why})", hint=ROOT_HINT)


def refresh_requested(variable: str) -> bool:
    """Whether environment variable ``variable`` (e.g. CLUSTERCTL_UPDATE_GOLDEN) is ``1``: the test rewrites its
    expected files. Under ``CI`` the variable set to anything fails the test instead: CI only compares."""
    value = os.environ.get(variable, "")
    if value and in_ci():
        pytest.fail(f"{variable}={value} is set: refreshing expected files is refused in CI (CI only compares; "
                    "refresh on a developer's machine and commit the reviewed diff)", pytrace=False)
    return value == "1"
