"""The Pulumi program of a rendered project: read cluster.json, build the provider's components.

The rendered ``__main__.py`` is two lines that call :func:`run`; everything else is real Python in this
package, unit-tested with ``pulumi.runtime.set_mocks``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from clusterctl.cloud.spec import CloudSpec


def build(spec: CloudSpec):
    """Create the stack's resources for ``spec`` inside the running Pulumi program; returns the cluster
    component (whose outputs the program exports)."""
    module = importlib.import_module(f"clusterctl.cloud.{spec.provider}")
    return module.build(spec)


def run(spec_file: str | Path = "cluster.json"):
    return build(CloudSpec.from_json(Path(spec_file).read_text()))
