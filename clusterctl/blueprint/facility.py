"""Site, power and cooling: what the building gives the cluster."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from clusterctl.blueprint.base import StrictModel


class Site(StrictModel):
    """The data centre (hall) the cluster lives in."""

    name: str
    it_power_kw: PositiveFloat
    """IT power the site can deliver to this cluster (after UPS), kW"""
    air_cooling_kw: PositiveFloat | None = None
    """room air-side heat removal capacity (CRAH/CRAC), kW; unchecked when absent"""
    pue: float = Field(default=1.3, ge=1.0, le=3.0)
    """power usage effectiveness, used for facility power estimates"""


class Cdu(StrictModel):
    """A coolant distribution unit feeding the liquid loop of some racks."""

    name: str
    capacity_kw: PositiveFloat
    """heat the CDU can move from the secondary loop to facility water, kW"""
    flow_lpm: PositiveFloat
    """maximum secondary-loop coolant flow, litres per minute"""
    supply_c: float = Field(ge=5, le=60)
    """secondary-loop supply temperature, deg C"""
    delta_t_c: float = Field(default=10.0, gt=0, le=30)
    """design temperature rise across the racks (return - supply), K"""
    coolant: Literal["water", "pg25"] = "water"
    """secondary-loop fluid: treated water or 25 % propylene glycol"""


class Cooling(StrictModel):
    """Liquid cooling plant: the CDUs that rack profiles refer to."""

    cdus: list[Cdu] = Field(default_factory=list)


class RackProfile(StrictModel):
    """Power, space and heat budget shared by a set of racks."""

    power_kw: PositiveFloat
    """contracted IT power budget of the rack, kW"""
    feeds: PositiveInt = 2
    """power feeds (PDUs / busway taps) into the rack"""
    feed_kw: PositiveFloat | None = None
    """capacity of one feed, kW; defaults to power_kw (each feed can carry the whole rack)"""
    redundancy: Literal["N", "N+1", "2N"] = "2N"
    """2N: either half of the feeds carries the rack; N+1: any one feed may fail; N: none may"""
    continuous_load_factor: float = Field(default=0.8, gt=0, le=1.0)
    """share of breaker/feed rating usable for continuous load (NEC 80 % rule; 1.0 for 100 %-rated gear)"""
    units: PositiveInt = 48
    """usable rack units"""
    reserved_u: int = Field(default=0, ge=0)
    """units kept free for patch panels, PDUs or cable management"""
    liquid_kw: float = Field(default=0.0, ge=0)
    """heat the rack's liquid loop (cold plates / rear door) can remove, kW"""
    air_kw: float = Field(default=0.0, ge=0)
    """heat the rack can reject to room air, kW"""
    cdu: str | None = None
    """CDU feeding this rack's liquid loop"""
    system: str | None = None
    """rack-scale system from the catalog (e.g. gb200-nvl72) that this rack is"""


class RackRange(StrictModel):
    """A range of racks sharing one profile."""

    names: str
    """rack names as a host list, e.g. r[01-32]"""
    profile: str
    """a key of rack_profiles"""
    row: str | None = None
    """data-hall row, for people and reports"""
