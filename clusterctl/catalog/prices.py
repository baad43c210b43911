"""List prices of cloud instance types (``clusterctl/catalog/prices.yaml``): the model, the loader, the checks.

A price is USD per instance-hour with the date its source observed it (``as_of``) and the key of a
``sources:`` line naming where it comes from (with an evidence tag, as the hardware catalog's sources).
On-demand prices are per region; AWS Capacity Blocks for ML reservation rates are kept apart
(``capacity_block``). A type or region without a sourced price has none: callers say so, never guess.
"""

from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from clusterctl.catalog import CATALOG_DIR, Catalog, CatalogFileError, validate_file
from clusterctl.kinds import CloudRegion, FreeText, Identifier
from clusterctl.strict import StrictModel

PRICES_FILE = "prices.yaml"
PRICES_REF = "clusterctl/catalog/prices.yaml"
EVIDENCE_TAG = re.compile(r"\[(P|Q|S|D)\]")
PriceKind = Literal["on_demand", "capacity_block"]


class Price(StrictModel):
    usd_per_hour: float = Field(gt=0, le=100_000)  # 100,000 USD per instance-hour: 200x a p6-b200
    as_of: datetime.date
    """the date the source observed the price"""
    source: Identifier
    """a key of the file's ``sources:``"""


class InstancePrices(StrictModel):
    on_demand: dict[CloudRegion, Price] = Field(default_factory=dict)
    """pay-as-you-go (Linux) per region"""
    capacity_block: dict[CloudRegion, Price] = Field(default_factory=dict)
    """AWS Capacity Blocks for ML: the reservation fee's effective instance-hourly rate per region"""


class PriceList(StrictModel):
    currency: Literal["USD"]
    sources: dict[Identifier, FreeText] = Field(min_length=1)
    prices: dict[Identifier, InstancePrices] = Field(default_factory=dict)

    def price(self, instance_type: str, region: str, kind: PriceKind = "on_demand") -> Price | None:
        entry = self.prices.get(instance_type)
        return getattr(entry, kind).get(region) if entry is not None else None

    def regions(self, instance_type: str, kind: PriceKind = "on_demand") -> list[str]:
        """Regions with a price for the type (sorted), for hints."""
        entry = self.prices.get(instance_type)
        return sorted(getattr(entry, kind)) if entry is not None else []

    def unknown_types(self, catalog: Catalog) -> list[str]:
        """Priced types the catalog has no instance entry for."""
        return sorted(name for name in self.prices if name not in catalog.instances)


@dataclass(frozen=True)
class PriceProblem:
    where: str
    message: str


def check(prices: PriceList, catalog: Catalog) -> list[PriceProblem]:
    """Cross-checks the model cannot do alone: sources resolve and carry an evidence tag, every priced type
    is a catalog instance type, no price is dated in the future."""
    problems = []
    for key, text in prices.sources.items():
        if not EVIDENCE_TAG.search(text):
            problems.append(PriceProblem(f"sources.{key}", "no [P]/[Q]/[S]/[D] evidence tag"))
    for name in prices.unknown_types(catalog):
        problems.append(PriceProblem(f"prices.{name}", "not an instance type of the catalog"))
    today = datetime.date.today()
    for name, entry in prices.prices.items():
        for kind in ("on_demand", "capacity_block"):
            for region, p in getattr(entry, kind).items():
                where = f"prices.{name}.{kind}.{region}"
                if p.source not in prices.sources:
                    problems.append(PriceProblem(where, f"unknown source {p.source!r}"))
                if p.as_of > today:
                    problems.append(PriceProblem(where, f"as_of {p.as_of} is in the future"))
    return problems


def load_prices(path: Path = CATALOG_DIR / PRICES_FILE, catalog: Catalog | None = None) -> PriceList:
    """The price list at ``path``, checked against ``catalog`` when given; a broken file is a
    CatalogFileError with its location (shape errors) or the entry at fault (cross-checks)."""
    prices = validate_file(PriceList, path)
    problems = check(prices, catalog) if catalog is not None else []
    if problems:
        raise CatalogFileError("; ".join(f"{path.name}: {p.where}: {p.message}" for p in problems))
    return prices


@functools.lru_cache(maxsize=1)
def shipped_prices() -> PriceList:
    """The shipped price list, checked against the shipped catalog (loaded once)."""
    from clusterctl.catalog import load_shipped_catalog

    return load_prices(catalog=load_shipped_catalog())
