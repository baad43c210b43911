"""Model presets: published transformer shapes by name (``models.yaml``, each with its source).

``--model llama3-405b`` or ``workload.model: llama3-405b`` names one of them.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from clusterctl.perf.job import ModelShape, TrainingConfigError


@functools.cache
def presets() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((Path(__file__).resolve().parent / "models.yaml").read_text())
    return data["models"]


def preset(name: str) -> tuple[ModelShape, str]:
    table = presets()
    if name not in table:
        raise TrainingConfigError(f"unknown model preset {name!r}; presets: {', '.join(sorted(table))}")
    entry = dict(table[name])
    source = entry.pop("source")
    return ModelShape(name=name, **entry), source


__all__ = ["preset", "presets"]
