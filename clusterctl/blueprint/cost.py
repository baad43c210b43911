"""``cost:``: how the report prices the cluster it owns (docs/report.md, "Cost of ownership").

The prices themselves are data: the shipped catalog (``clusterctl/catalog/hardware_prices.yaml``) and the site's
own price sheet named here, read beside the blueprint when it is loaded. What stays here is the owner's policy:
how long the hardware is written off over, how the building is paid for, how much of the year the GPUs work.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterctl.kinds import RelativeFile
from clusterctl.strict import StrictModel


class Cost(StrictModel):
    price_sheet: RelativeFile | None = None
    """the site's price sheet (the shape of clusterctl/catalog/hardware_prices.yaml: currency, sources, prices by
    section), a path relative to the blueprint's directory; its items replace the shipped ones. Absent: the shipped
    prices only"""
    life_years: float = Field(default=5.0, gt=0, le=30)
    """straight-line depreciation of the hardware (servers, network, racks, storage), years"""
    facility: Literal["colocation", "owned"] = "colocation"
    """colocation: space, power and cooling rented per kW of IT load per month (``colocation_kw_month``);
    owned: built per kW of IT load (``facility_kw``) and written off over ``facility_life_years``"""
    facility_life_years: float = Field(default=20.0, gt=0, le=60)
    """straight-line depreciation of an owned facility's power and cooling build-out, years"""
    utilisation: float = Field(default=1.0, gt=0, le=1)
    """share of the year's hours the GPUs do paid work: GPU-hours and tokens per year, energy drawn at the
    planning maximum for those hours"""
