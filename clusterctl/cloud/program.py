"""The Pulumi program of a rendered project: read cluster.json, build the provider's components.

The rendered ``__main__.py`` is two lines that call :func:`run`; everything else is real Python in this
package, unit-tested with ``pulumi.runtime.set_mocks``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from clusterctl.cloud.spec import CloudSpec


def build(spec: CloudSpec, render_dir: Path | None = None):
    """Create the stack's resources for ``spec`` inside the running Pulumi program and export the cluster
    component's outputs as the stack outputs (``nodes`` among them, which ``clusterctl inventory`` reads).
    Every provider's top-level component keeps them in ``.outputs``.

    ``render_dir``: the render the project is part of (``OUT``, the parent of ``OUT/pulumi``); the program
    uploads its runtime files as the cluster's configuration object (clusterctl.cloud.bundle) that every
    instance's bootstrap applies. None: no object and no bootstrap in the user data (unit tests of other
    pieces)."""
    import pulumi

    module = importlib.import_module(f"clusterctl.cloud.{spec.provider}")
    cluster = module.build(spec, render_dir=render_dir)
    for key, value in sorted(cluster.outputs.items()):
        pulumi.export(key, value)
    return cluster


def run(spec_file: str | Path = "cluster.json"):
    spec_file = Path(spec_file).resolve()
    return build(CloudSpec.from_json(spec_file.read_text()), render_dir=spec_file.parent.parent)
