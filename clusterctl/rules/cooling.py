"""Cooling: CDU capacity and coolant flow, rack liquid and air budgets, and the site's room air."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.cooling import COOLANTS, cdu_loads, flow_needed_lpm, rack_heat
from clusterctl.plan.model import ClusterPlan
from clusterctl.rules.base import Hit, Severity, profiled_racks, rack_budget_hit, rule


@rule("COOL001", "cooling", Severity.ERROR, "CDU capacity exceeded")
def cdu_capacity(plan: ClusterPlan) -> Iterator[Hit]:
    """The liquid heat of every rack whose profile names a CDU (``rack_profiles.X.cdu``; an equal share of it for
    each of ``cdus`` in parallel) must fit that CDU's ``capacity_kw``. Liquid heat is each rack's maximum draw times the liquid fraction of its hardware: a
    CDU that cannot carry the racks at full load lets the supply temperature climb until the GPUs throttle."""
    loads = cdu_loads(plan)
    for i, cdu in enumerate(plan.blueprint.cooling.cdus):
        kw, racks = loads[cdu.name]
        if kw > cdu.capacity_kw + 1e-9:
            yield Hit(("cooling", "cdus", i, "capacity_kw"),
                      f"CDU {cdu.name} must remove {kw:.1f} kW of liquid heat from {racks} rack(s) "
                      f"but is rated {cdu.capacity_kw:g} kW",
                      "add a CDU and move rack profiles to it, or raise capacity_kw to the unit's rating")


@rule("COOL002", "cooling", Severity.ERROR, "CDU coolant flow too low")
def cdu_flow(plan: ClusterPlan) -> Iterator[Hit]:
    """The secondary loop must move enough coolant to carry the racks' liquid heat at the design temperature
    rise: flow = P / (rho × c × dT), in L/min. Water: rho 0.997 kg/L (25 °C), c 4.18 kJ/(kg·K). PG25 (25 %
    propylene glycol): rho 1.02 kg/L, c 3.85 kJ/(kg·K). Source: the propylene glycol design tables of the
    Airedale DeltaChill chiller manual (easymanua.ls/airedale/deltachill/manual?p=53) give 1019-1024 kg/m³
    and 3.91-3.94 kJ/(kg·K) for 25 % at 20-30 °C (3.85 is its 30 % / 20 °C figure, so the check asks for
    about 2 % more flow than the 25 % row: conservative); a handbook antifreeze table (table 5.13,
    yumpu.com "preface to fifteenth edition" p. 5.85) gives specific gravity 1.020 for 25 % by volume.
    Too little flow raises the return temperature beyond the design rise."""
    loads = cdu_loads(plan)
    for i, cdu in enumerate(plan.blueprint.cooling.cdus):
        kw, racks = loads[cdu.name]
        rho, c = COOLANTS[cdu.coolant]
        need = flow_needed_lpm(cdu, kw)
        if need > cdu.flow_lpm + 1e-9:
            yield Hit(("cooling", "cdus", i, "flow_lpm"),
                      f"CDU {cdu.name} needs {need:.1f} L/min to carry {kw:.1f} kW at a {cdu.delta_t_c:g} K rise "
                      f"({kw:.1f} kW / ({rho:g} kg/L × {c:g} kJ/(kg·K) × {cdu.delta_t_c:g} K) × 60 s/min, "
                      f"{cdu.coolant}) but delivers {cdu.flow_lpm:g} L/min",
                      "raise flow_lpm to the pump's rating, design for a larger delta_t_c, or split the racks "
                      "over more CDUs")


@rule("COOL003", "cooling", Severity.ERROR, "rack liquid heat over the loop's capacity")
def rack_liquid(plan: ClusterPlan) -> Iterator[Hit]:
    """Each rack's liquid heat (maximum draw times the liquid fraction of its hardware) must fit the rack
    profile's ``liquid_kw``, what its cold-plate manifold or rear-door heat exchanger can remove. Racks
    without a liquid loop are left to COOL005."""
    for rack, prof in profiled_racks(plan):
        liquid, _ = rack_heat(rack, prof)
        if prof.liquid_kw > 0 and liquid > prof.liquid_kw + 1e-9:
            yield rack_budget_hit(rack, "liquid_kw",
                                  f"rack {rack.name} sends {liquid:.1f} kW to its liquid loop of {prof.liquid_kw:g} kW "
                                  f"({rack.power_kw:.1f} kW draw)",
                                  f"raise rack_profiles.{rack.profile_name}.liquid_kw or put fewer nodes in the rack",
                                  f"{liquid:.1f} kW of {prof.liquid_kw:g} kW liquid")


@rule("COOL004", "cooling", Severity.ERROR, "rack air heat over the rack's air budget")
def rack_air(plan: ClusterPlan) -> Iterator[Hit]:
    """Each rack's air heat (everything not removed by liquid: air-cooled servers and switches, the air
    share of liquid-cooled trays) must fit the profile's ``air_kw``. Hybrid hardware in a rack without a
    liquid loop counts as air. Profiles that declare neither ``air_kw`` nor ``liquid_kw`` are not checked
    (COOL007 warns about them)."""
    for rack, prof in profiled_racks(plan):
        _, air = rack_heat(rack, prof)
        if (prof.air_kw > 0 or prof.liquid_kw > 0) and air > prof.air_kw + 1e-9:
            to_liquid = f", {rack.power_kw - air:.1f} kW to liquid)" if rack.power_kw - air > 1e-9 else ")"
            yield rack_budget_hit(rack, "air_kw",
                                  f"rack {rack.name} rejects {air:.1f} kW to air of a {prof.air_kw:g} kW air budget "
                                  f"({rack.power_kw:.1f} kW draw{to_liquid}",
                                  f"raise rack_profiles.{rack.profile_name}.air_kw (rear-door heat exchanger, "
                                  "containment) or put fewer air-cooled nodes in the rack",
                                  f"{air:.1f} kW of {prof.air_kw:g} kW air")


@rule("COOL005", "cooling", Severity.ERROR, "liquid-only hardware in a rack without a liquid loop")
def liquid_only_hardware(plan: ClusterPlan) -> Iterator[Hit]:
    """Hardware that can only be liquid-cooled (servers with cooling ``liquid``, rack systems such as
    NVL72, liquid-cooled switches) needs a rack profile with ``liquid_kw`` and a ``cdu``: without a loop
    its cold plates have nothing to reject heat to and it cannot run at all."""
    for rack, prof in profiled_racks(plan):
        if rack.liquid_only_kw <= 0 or (prof.liquid_kw > 0 and prof.loop_cdus):
            continue
        missing = " and ".join(m for m, bad in (("liquid_kw", prof.liquid_kw <= 0), ("cdu", not prof.loop_cdus))
                               if bad)
        yield rack_budget_hit(rack, "liquid_kw",
                              f"rack {rack.name} holds {rack.liquid_only_kw:.1f} kW of liquid-only heat but rack "
                              f"profile {rack.profile_name} has no {missing}",
                              f"set rack_profiles.{rack.profile_name}.liquid_kw and cdu, or use air-cooled hardware",
                              f"{rack.liquid_only_kw:.1f} kW liquid-only, no {missing}")


@rule("COOL006", "cooling", Severity.ERROR, "site air cooling exceeded")
def site_air(plan: ClusterPlan) -> Iterator[Hit]:
    """The air heat of every rack, of switches outside racks and of bare-metal nodes without a rack must fit
    the room's air-side cooling (``site.air_cooling_kw``, CRAH/CRAC capacity) when it is given. Above 90 % a
    warning: a failed CRAH unit or a hot day leaves no margin."""
    site = plan.blueprint.site
    if site is None or site.air_cooling_kw is None:
        return
    racks = 0.0
    for rack in plan.racks:
        prof = plan.rack_profile(rack)
        racks += rack_heat(rack, prof)[1] if prof is not None else rack.air_heat_kw
    loose = sum(g.unplaced * g.type.power_kw * (1 - g.type.liquid_fraction)
                for g in plan.groups if g.type.server is not None)
    total = racks + plan.unplaced_switch_kw + loose
    detail = f"{racks:.1f} kW from racks" + (
        f" + {plan.unplaced_switch_kw:.1f} kW switches without a rack" if plan.unplaced_switch_kw else "") + (
        f" + {loose:.1f} kW nodes without a rack" if loose else "")
    share = total / site.air_cooling_kw
    if share > 1.0:
        yield Hit(("site", "air_cooling_kw"),
                  f"the cluster rejects {total:.1f} kW to room air ({detail}) of the site's "
                  f"{site.air_cooling_kw:g} kW air cooling",
                  "move heat to liquid (liquid-cooled hardware, rear-door heat exchangers) or add CRAH capacity")
    elif share > 0.9:
        yield Hit(("site", "air_cooling_kw"),
                  f"the cluster rejects {total:.1f} kW to room air, {share:.0%} of the site's "
                  f"{site.air_cooling_kw:g} kW air cooling ({detail})",
                  "plan headroom for a failed CRAH unit", Severity.WARNING)


@rule("COOL007", "cooling", Severity.WARNING, "cooling declaration incomplete")
def cooling_declared(plan: ClusterPlan) -> Iterator[Hit]:
    """A rack profile with ``liquid_kw`` but no ``cdu`` leaves the CDU capacity and flow unchecked; one with
    neither ``air_kw`` nor ``liquid_kw`` leaves its racks' heat unchecked. A CDU that feeds no rack is
    reported as info (spare, or a profile forgot its ``cdu``)."""
    bp = plan.blueprint
    for name, prof in sorted(bp.rack_profiles.items()):
        if prof.liquid_kw > 0 and not prof.loop_cdus:
            yield Hit(("rack_profiles", name, "liquid_kw"),
                      f"rack profile {name} removes {prof.liquid_kw:g} kW by liquid but names no cdu; "
                      f"CDU capacity and coolant flow are unchecked",
                      f"add cooling.cdus and set rack_profiles.{name}.cdu")
        elif prof.liquid_kw <= 0 and prof.air_kw <= 0:
            yield Hit(("rack_profiles", name),
                      f"rack profile {name} declares neither air_kw nor liquid_kw; its racks' heat is unchecked",
                      f"set rack_profiles.{name}.air_kw (and liquid_kw for liquid-cooled racks)")
    loads = cdu_loads(plan)
    for i, cdu in enumerate(bp.cooling.cdus):
        if loads[cdu.name][1] == 0:
            yield Hit(("cooling", "cdus", i, "name"), f"CDU {cdu.name} feeds no rack",
                      "set cdu in the rack profiles it serves, or remove it", Severity.INFO)
