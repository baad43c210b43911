"""The hardware catalog: shipped data files (``clusterctl/catalog/*.yaml``) plus a blueprint's own entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from clusterctl.catalog.models import (Accelerator, CatalogData, CloudInstance, Nic, RackSystem, Server,
                                       Switch)
from clusterctl.source import load_yaml_file

CATALOG_DIR = Path(__file__).parent
SECTIONS = ("accelerators", "nics", "switches", "servers", "rack_systems", "instances")
NOT_HARDWARE = ("prices.yaml", "hardware_prices.yaml", "optics.yaml", "kubernetes_operators.yaml")
"""catalog-directory files that are not hardware sections (loaded by clusterctl.catalog.prices,
clusterctl.catalog.hardware_prices, clusterctl.catalog.optics and clusterctl.catalog.kubernetes_operators)"""


M = TypeVar("M", bound=BaseModel)


class CatalogFileError(Exception):
    """A shipped catalog file is broken: a bug in clusterctl, reported with its location."""


@dataclass(frozen=True)
class Catalog:
    accelerators: dict[str, Accelerator]
    nics: dict[str, Nic]
    switches: dict[str, Switch]
    servers: dict[str, Server]
    rack_systems: dict[str, RackSystem]
    instances: dict[str, CloudInstance]
    origin: dict[tuple[str, str], str]
    """(section, name) -> "shipped:<file>" or "blueprint" """
    replaced: dict[tuple[str, str], BaseModel] = field(default_factory=dict)
    """(section, name) -> the shipped entry a blueprint's entry of that name replaced (clusterctl/catalog/
    overrides.py lists what changed, for the reviewer)"""

    def section(self, name: str) -> dict:
        return getattr(self, name)

    def with_entries(self, extra: CatalogData) -> "Catalog":
        """This catalog plus a blueprint's own entries (which win over shipped ones of the same name)."""
        merged = {s: dict(self.section(s)) for s in SECTIONS}
        origin = dict(self.origin)
        replaced = dict(self.replaced)
        for s in SECTIONS:
            for name, entry in getattr(extra, s).items():
                if name in merged[s] and origin.get((s, name), "").startswith("shipped:"):
                    replaced[(s, name)] = merged[s][name]
                merged[s][name] = entry
                origin[(s, name)] = "blueprint"
        return Catalog(**merged, origin=origin, replaced=replaced)


def validate_file(model: type[M], path: Path) -> M:
    """``path`` loaded and validated as ``model``; a broken file is a CatalogFileError at file:line:col."""
    data, smap = load_yaml_file(path)
    try:
        return model.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        pos = smap.locate(tuple(first["loc"]))
        raise CatalogFileError(f"{pos.where(path.name)}: {first['msg']}") from None


def load_shipped_catalog(directory: Path = CATALOG_DIR) -> Catalog:
    merged: dict[str, dict] = {s: {} for s in SECTIONS}
    origin: dict[tuple[str, str], str] = {}
    for path in sorted(p for p in directory.glob("*.yaml") if p.name not in NOT_HARDWARE):
        part = validate_file(CatalogData, path)
        for s in SECTIONS:
            for name, entry in getattr(part, s).items():
                if name in merged[s]:
                    raise CatalogFileError(f"{path.name}: {s}.{name} is defined twice")
                merged[s][name] = entry
                origin[(s, name)] = f"shipped:{path.name}"
    return Catalog(**merged, origin=origin)
