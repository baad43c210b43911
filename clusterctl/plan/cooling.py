"""Where each rack's heat goes, and what each CDU carries: decided once for the cooling rules and the report.

A rack's liquid heat is the liquid-cooled share of its hardware when its profile has a liquid loop
(``rack_profiles.X.liquid_kw`` > 0); without a loop, only liquid-only hardware's cold-plate share stays liquid
and the rest goes to air (COOL005 says that hardware cannot run there). A CDU carries the liquid heat of every
rack whose profile names it. The cooling rules judge these numbers; the bill of materials lists them.
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, RackPlan


def rack_heat(rack: RackPlan, prof) -> tuple[float, float]:
    """(liquid kW, air kW) the rack rejects under its profile ``prof``."""
    if prof.liquid_kw > 0:
        return rack.liquid_heat_kw, rack.air_heat_kw
    return rack.liquid_only_kw, rack.power_kw - rack.liquid_only_kw


def cdu_loads(plan: ClusterPlan) -> dict[str, tuple[float, int]]:
    """CDU name -> (liquid kW of the racks it feeds at full load, number of racks), in blueprint order."""
    loads = {c.name: (0.0, 0) for c in plan.cooling.cdus}
    for rack in plan.racks:
        prof = plan.rack_profile(rack)
        if prof is None or prof.cdu not in loads:
            continue
        kw, n = loads[prof.cdu]
        loads[prof.cdu] = (kw + rack_heat(rack, prof)[0], n + 1)
    return loads
