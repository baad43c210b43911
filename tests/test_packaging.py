"""The installed distribution ships the top-level templates/, roles/ and blueprints/ inside the wheel."""

from __future__ import annotations

import importlib.metadata as md

import pytest


def test_wheel_contains_shipped_folders():
    try:
        files = [str(f) for f in md.files("clusterctl") or []]
    except md.PackageNotFoundError:
        pytest.fail("clusterctl is not installed: run `bash scripts/test`, which installs it")
    for folder in ("templates", "roles", "blueprints", "docs/examples/blueprint-sections"):  # the last: schema --markdown
        assert any(f.startswith(f"clusterctl/_data/{folder}/") for f in files), folder
    assert any(f.startswith("clusterctl/catalog/") and f.endswith(".yaml") for f in files)
    for data in ("perf/models.yaml", "report/failure_rates.yaml", "report/optics.yaml"):  # data beside its modules
        assert f"clusterctl/{data}" in files, data
