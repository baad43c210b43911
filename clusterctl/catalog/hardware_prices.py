"""Prices of on-premises hardware, energy and space: the shipped catalog (``hardware_prices.yaml``) and a site's
own price sheet (``cost.price_sheet``), one model, one set of checks.

Every price names a key of its file's ``sources:`` (a line with an evidence tag: [P] primary, [Q] primary quoted
by a copy, [S] secondary, [D] derived) and ``as_of``, the date its source observed it. A price is a point
(``usd``), a range (``low`` and ``high``: the point is their midpoint) or both (``low <= usd <= high``). An item
without a price is unpriced: the report names it and leaves it out of every total, never guesses.

Items by section (the unit is the section's, docs/report.md "Cost of ownership"):

- ``servers``, ``rack_systems``, ``switches``, ``nics``: catalog keys, USD each. A server's price includes its
  NICs unless it says ``nics_included: false``; a rack system's price (GB200 NVL72) includes its compute and
  NVLink switch trays, power shelves and enclosure.
- ``transceivers``: the BOM's pluggable kinds (``price_item`` in ``clusterctl/catalog/optics.yaml``, or
  ``pluggable-<Gb/s>g``); ``cables``: ``cable-rj45``, ``cable-dac-<Gb/s>g``, ``cable-fibre-<Gb/s>g``; each.
- ``racks`` (an enclosure), ``pdu_feeds`` (one rack power feed and its PDU), ``cdus`` (one CDU): each.
- ``storage_tb`` and ``storage_gb_per_s``: per tier kind (``parallel``, ``nfs``, ``object``), USD per TB of
  capacity and per GB/s of write bandwidth; a tier priced both ways costs the sum.
- ``facility_kw``: building power and cooling per kW of IT load (capital, for ``cost.facility: owned``);
  ``colocation_kw_month``: rent per kW of IT load per month (``cost.facility: colocation``);
  ``energy_kwh``: USD per kWh at the meter; ``support``: a share of the hardware's capital per year.
"""

from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from clusterctl.catalog import CATALOG_DIR, Catalog, CatalogFileError
from clusterctl.catalog.optics import transceiver_price_items
from clusterctl.catalog.prices import EVIDENCE_TAG
from clusterctl.kinds import FreeText, Identifier
from clusterctl.strict import StrictModel

HARDWARE_PRICES_FILE = "hardware_prices.yaml"
HARDWARE_PRICES_REF = "clusterctl/catalog/hardware_prices.yaml"
MAX_USD = 1e10
"""the largest price of one item: ten billion dollars (a campus's facility per kW is far below)"""
STORAGE_KINDS = ("parallel", "nfs", "object")
CABLE_ITEM = re.compile(r"^cable-(rj45|dac-[0-9]+g|fibre-[0-9]+g)$")
GENERIC_PLUGGABLE = re.compile(r"^pluggable-[0-9]+g$")


class HardwarePrice(StrictModel):
    usd: float | None = Field(default=None, ge=0, le=MAX_USD)
    """the price (USD per the section's unit); absent: the midpoint of ``low`` and ``high``"""
    low: float | None = Field(default=None, ge=0, le=MAX_USD)
    high: float | None = Field(default=None, ge=0, le=MAX_USD)
    as_of: datetime.date
    """the date the source observed the price"""
    source: Identifier
    """a key of the file's ``sources:``"""
    quote: FreeText = ""
    """the source's words for the figure"""
    note: FreeText = ""
    nics_included: bool = True
    """servers only: the price includes the server's NICs (false: they are priced from ``nics``)"""

    @model_validator(mode="after")
    def _range(self) -> "HardwarePrice":
        if self.usd is None and (self.low is None or self.high is None):
            raise ValueError("a price needs usd, or low and high")
        if (self.low is None) != (self.high is None):
            raise ValueError("low and high come together")
        if self.low is not None and self.high is not None:
            if self.low > self.high:
                raise ValueError(f"low {self.low:g} is above high {self.high:g}")
            if self.usd is not None and not self.low <= self.usd <= self.high:
                raise ValueError(f"usd {self.usd:g} is outside low..high ({self.low:g}..{self.high:g})")
        return self

    @property
    def point(self) -> float:
        return self.usd if self.usd is not None else (self.low + self.high) / 2

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.low, self.high) if self.low is not None else (self.point, self.point)


class SupportShare(StrictModel):
    share: float = Field(ge=0, le=1)
    """support and maintenance per year, as a share of the hardware's capital cost"""
    low: float | None = Field(default=None, ge=0, le=1)
    high: float | None = Field(default=None, ge=0, le=1)
    as_of: datetime.date
    source: Identifier
    quote: FreeText = ""
    note: FreeText = ""

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.low if self.low is not None else self.share, self.high if self.high is not None else self.share)


class HardwarePriceList(StrictModel):
    currency: str
    """USD: clusterctl converts no currency"""
    sources: dict[Identifier, FreeText] = Field(min_length=1, max_length=10_000)
    servers: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    rack_systems: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    switches: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    nics: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    transceivers: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    cables: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=10_000)
    racks: HardwarePrice | None = None
    pdu_feeds: HardwarePrice | None = None
    cdus: HardwarePrice | None = None
    storage_tb: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=len(STORAGE_KINDS))
    storage_gb_per_s: dict[Identifier, HardwarePrice] = Field(default_factory=dict, max_length=len(STORAGE_KINDS))
    facility_kw: HardwarePrice | None = None
    colocation_kw_month: HardwarePrice | None = None
    energy_kwh: HardwarePrice | None = None
    support: SupportShare | None = None
    not_priced: list[FreeText] = Field(default_factory=list, max_length=10_000)
    """items searched for and not found, with what was searched (the shipped catalog's honesty list)"""

    @field_validator("currency")
    @classmethod
    def _usd(cls, v: str) -> str:
        if v != "USD":
            raise ValueError(f"the currency is {v!r}; clusterctl works in USD and converts nothing: convert the "
                             "prices, and name the rate and its date in each source")
        return v

    def entries(self) -> list[tuple[tuple[str, ...], HardwarePrice | SupportShare]]:
        """(path in the file, price) of every price, in file order of sections."""
        out: list[tuple[tuple[str, ...], HardwarePrice | SupportShare]] = []
        for section in ("servers", "rack_systems", "switches", "nics", "transceivers", "cables", "storage_tb",
                        "storage_gb_per_s"):
            out.extend(((section, k), p) for k, p in getattr(self, section).items())
        for section in ("racks", "pdu_feeds", "cdus", "facility_kw", "colocation_kw_month", "energy_kwh", "support"):
            p = getattr(self, section)
            if p is not None:
                out.append(((section,), p))
        return out


@dataclass(frozen=True)
class PriceProblem:
    path: tuple[str, ...]
    message: str
    hint: str = ""
    key: bool = False
    """locate the item's key (an unknown item), not its value"""


def check(prices: HardwarePriceList, catalog: Catalog, today: datetime.date | None = None) -> list[PriceProblem]:
    """What the model cannot check alone: sources resolve and carry an evidence tag, every item is one the
    catalog or the bill of materials knows, no price is dated in the future, no figure is not finite."""
    problems = []
    for key, text in prices.sources.items():
        if not EVIDENCE_TAG.search(text):
            problems.append(PriceProblem(("sources", key), f"source {key} has no [P]/[Q]/[S]/[D] evidence tag",
                                         "say what the figure rests on: [P] a primary text (a quote, an invoice), "
                                         "[Q] one quoted by a copy, [S] secondary, [D] derived"))
    known = {"servers": catalog.servers, "rack_systems": catalog.rack_systems, "switches": catalog.switches,
             "nics": catalog.nics}
    xcvrs = set(transceiver_price_items())
    today = today or datetime.date.today()
    for path, p in prices.entries():
        section, name = path[0], (path[1] if len(path) > 1 else None)
        if section in known and name not in known[section]:
            problems.append(PriceProblem(path, f"{section}.{name} is not in the catalog's {section}",
                                         _did_you_mean(name, known[section]), key=True))
        elif section == "transceivers" and name not in xcvrs and not GENERIC_PLUGGABLE.match(name):
            problems.append(PriceProblem(path, f"transceivers.{name} is not a pluggable the bill of materials counts",
                                         "one of " + ", ".join(sorted(xcvrs)) + ", or pluggable-<Gb/s>g", key=True))
        elif section == "cables" and not CABLE_ITEM.match(name):
            problems.append(PriceProblem(path, f"cables.{name} is not a cable kind",
                                         "cable-rj45, cable-dac-<Gb/s>g or cable-fibre-<Gb/s>g, e.g. cable-fibre-400g",
                                         key=True))
        elif section in ("storage_tb", "storage_gb_per_s") and name not in STORAGE_KINDS:
            problems.append(PriceProblem(path, f"{section}.{name} is not a storage tier kind",
                                         "one of " + ", ".join(STORAGE_KINDS), key=True))
        if p.source not in prices.sources:
            problems.append(PriceProblem(path + ("source",), f"unknown source {p.source!r}",
                                         "add it under sources: with its evidence tag"))
        if p.as_of > today:
            problems.append(PriceProblem(path + ("as_of",), f"as_of {p.as_of} is in the future",
                                         "the date the source observed the price"))
        if section != "servers" and isinstance(p, HardwarePrice) and not p.nics_included:
            problems.append(PriceProblem(path + ("nics_included",), "nics_included is a server's setting",
                                         "leave it out here"))
    return problems


def _did_you_mean(name: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}?" if close else "a key of the catalog (clusterctl catalog)"


def merged(shipped: HardwarePriceList, sheet: HardwarePriceList | None) -> HardwarePriceList:
    """The shipped prices with every item of the site's ``sheet`` in place of the shipped one; the sheet's sources
    are kept under ``sheet.<key>`` so a figure always names the file it came from."""
    if sheet is None:
        return shipped
    data = shipped.model_dump()
    sources = dict(shipped.sources) | {f"sheet.{k}": v for k, v in sheet.sources.items()}
    for path, p in sheet.entries():
        value = p.model_copy(update={"source": f"sheet.{p.source}"}).model_dump()
        if len(path) == 2:
            data[path[0]] = dict(data[path[0]]) | {path[1]: value}
        else:
            data[path[0]] = value
    data["sources"] = sources
    data["not_priced"] = []
    return HardwarePriceList.model_validate(data, strict=False)


def load_hardware_prices(path: Path = CATALOG_DIR / HARDWARE_PRICES_FILE,
                         catalog: Catalog | None = None) -> HardwarePriceList:
    """The shipped price catalog at ``path``, checked; a broken file is a CatalogFileError (a bug)."""
    from clusterctl.catalog import validate_file

    prices = validate_file(HardwarePriceList, path)
    problems = check(prices, catalog) if catalog is not None else []
    if problems:
        raise CatalogFileError("; ".join(f"{path.name}: {'.'.join(p.path)}: {p.message}" for p in problems))
    return prices


@functools.lru_cache(maxsize=1)
def shipped_hardware_prices() -> HardwarePriceList:
    from clusterctl.catalog import load_shipped_catalog

    return load_hardware_prices(catalog=load_shipped_catalog())
