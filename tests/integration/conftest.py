"""Integration tests start real daemons; their marker is registered here (pyproject is shared)."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slurm: starts real munged, slurmctld and two slurmd from rendered files (root; Debian "
                   "slurm-wlm + munge + libpmix-dev, installed by scripts/test); skipped without them, "
                   "failed without them when CI is set")
