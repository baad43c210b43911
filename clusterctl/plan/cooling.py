"""Where each rack's heat goes, and what each CDU carries: decided once for the cooling rules and the report.

A rack's liquid heat is the liquid-cooled share of its hardware when its profile has a liquid loop
(``rack_profiles.X.liquid_kw`` > 0); without a loop, only liquid-only hardware's cold-plate share stays liquid
and the rest goes to air (COOL005 says that hardware cannot run there). A CDU carries the liquid heat of every
rack whose profile names it; CDUs in parallel on a loop (``rack_profiles.X.cdus``) carry an equal share each. The
cooling rules judge these numbers; the bill of materials lists them; :class:`CoolingLoops` says whether the others
carry a loop when one of its CDUs stops.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from clusterctl.plan.model import ClusterPlan, RackPlan

COOLANTS = {
    # name: (density kg/L, specific heat kJ/(kg K))
    "water": (0.997, 4.18),
    "pg25": (1.02, 3.85),
}
"""Coolant properties for the flow check; sources in the docstring of rule COOL002 (rules/cooling.py)."""


def rack_heat(rack: RackPlan, prof) -> tuple[float, float]:
    """(liquid kW, air kW) the rack rejects under its profile ``prof``."""
    if prof.liquid_kw > 0:
        return rack.liquid_heat_kw, rack.air_heat_kw
    return rack.liquid_only_kw, rack.power_kw - rack.liquid_only_kw


def cdu_loads(plan: ClusterPlan) -> dict[str, tuple[float, int]]:
    """CDU name -> (liquid kW of the racks it feeds at full load, number of racks), in blueprint order; a loop
    with several CDUs gives each an equal share of its racks' heat."""
    loops = CoolingLoops.of(plan)
    return {name: (loops.loads[name], len(racks)) for name, racks in loops.racks_of.items()}


def flow_needed_lpm(cdu, kw: float) -> float:
    """Coolant flow, L/min, that carries ``kw`` across the CDU's design rise: kW / (density x heat x rise) x 60."""
    rho, c = COOLANTS[cdu.coolant]
    return kw / (rho * c * cdu.delta_t_c) * 60


@dataclass(frozen=True)
class CduAfter:
    """One CDU left on a loop after another stopped: what it must carry then."""

    name: str
    load_kw: float
    capacity_kw: float
    flow_needed_lpm: float
    flow_lpm: float

    @property
    def carries(self) -> bool:
        return self.load_kw <= self.capacity_kw + 1e-9 and self.flow_needed_lpm <= self.flow_lpm + 1e-9


@dataclass(frozen=True)
class CoolingLoops:
    """Each CDU's healthy load and the racks on the loops it serves, built once for many failures."""

    cdus: dict
    """name -> the blueprint's CDU"""
    loads: dict[str, float]
    """name -> liquid kW it carries healthy"""
    racks_of: dict[str, list[tuple[RackPlan, tuple[str, ...], float]]]
    """name -> (rack, the CDUs of its loop, its liquid kW) for every rack on a loop it serves"""

    @classmethod
    def of(cls, plan: ClusterPlan) -> "CoolingLoops":
        cdus = {c.name: c for c in plan.cooling.cdus}
        racks_of: dict[str, list] = {n: [] for n in cdus}
        loads = {n: 0.0 for n in cdus}
        for rack in plan.racks:
            prof = plan.rack_profile(rack)
            loop = tuple(c for c in prof.loop_cdus if c in cdus) if prof is not None else ()
            kw = rack_heat(rack, prof)[0] if loop else 0.0
            for name in loop:
                racks_of[name].append((rack, loop, kw))
                loads[name] += kw / len(loop)
        return cls(cdus, loads, racks_of)

    def failure(self, failed: Collection[str]) -> tuple[list[RackPlan], list[CduAfter], bool]:
        """With the CDUs ``failed`` stopped together: the racks on their loops, every CDU left on those loops with
        its load once each loop's heat is shared among its CDUs still running, and whether every one of those
        loops still has a CDU. The loops are carried when they all do and every CDU left ``carries``."""
        seen: dict[int, tuple[RackPlan, tuple[str, ...], float]] = {}
        for name in failed:
            for item in self.racks_of.get(name, []):
                seen.setdefault(item[0].index, item)
        loads, left, every_loop_kept = {}, set(), True
        for rack, loop, kw in seen.values():
            running = [c for c in loop if c not in failed]
            for name in running:
                loads[name] = loads.get(name, self.loads[name]) + kw / len(running) - kw / len(loop)
            left.update(running)
            every_loop_kept = every_loop_kept and bool(running)
        racks = [item[0] for _, item in sorted(seen.items())]
        return racks, [CduAfter(n, loads[n], c.capacity_kw, flow_needed_lpm(c, loads[n]), c.flow_lpm)
                       for n, c in self.cdus.items() if n in left], every_loop_kept
