"""End-to-end tests boot rehearsal nodes (namespaces, overlays, a bridge, sshd) as root; their marker is
registered here (pyproject is shared)."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "e2e: boots rehearsal nodes on this machine (root; namespaces, overlay, bridge; Debian "
                   "openssh-server, openssh-client, iproute2, installed by scripts/test); skipped without them, "
                   "failed without them when CI is set")


def require_rehearsal() -> None:
    """Skip when this machine cannot host rehearsal nodes; in CI that is a failure, not a skip."""
    from clusterctl.rehearse import probe

    found = probe.problems()
    if found:
        reason = "cannot boot rehearsal nodes: " + "; ".join(f"{m} ({h})" for m, h in found)
        if os.environ.get("CI"):
            pytest.fail(reason + " [CI is set: this must not be skipped]")
        pytest.skip(reason)
