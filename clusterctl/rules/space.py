"""Space: rack units, node groups that do not fit their racks, and rack-scale systems."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan, RackPlan
from clusterctl.rules.base import Hit, Severity, rule


def units_breakdown(plan: ClusterPlan, rack: RackPlan, reserved_u: int) -> str:
    """``2 × hgx-h100-8gpu at 6 U + 1 × qm9700 at 1 U + 2 U reserved``"""
    parts = []
    for item in rack.items:
        hw = plan.catalog.servers.get(item.label) or plan.catalog.switches.get(item.label)
        if hw is not None:
            parts.append(f"{item.count} × {item.label} at {hw.height_u} U")
    if reserved_u:
        parts.append(f"{reserved_u} U reserved")
    return " + ".join(parts)


@rule("SPACE001", "space", Severity.ERROR, "rack units exceeded")
def rack_units(plan: ClusterPlan) -> Iterator[Hit]:
    """The rack units of a rack's nodes and switches plus the profile's ``reserved_u`` (patch panels,
    cable management) must fit the profile's ``units``."""
    for rack in plan.racks:
        prof = plan.rack_profile(rack)
        if prof is None or rack.used_u <= prof.units:
            continue
        yield Hit(rack.path + ("profile",),
                  f"rack {rack.name} needs {rack.used_u} U of {prof.units} U "
                  f"({units_breakdown(plan, rack, prof.reserved_u)})",
                  f"lower per_rack, move switches (switch_racks) elsewhere, or raise "
                  f"rack_profiles.{rack.profile_name}.units",
                  subject=("rack", rack.name), summary=f"{rack.used_u} U of {prof.units} U")


@rule("SPACE002", "space", Severity.ERROR, "node group does not fit its racks")
def group_fits_racks(plan: ClusterPlan) -> Iterator[Hit]:
    """A bare-metal group placed ``per_rack`` nodes to a rack needs count / per_rack racks; the nodes that
    overflow the racks it names have no place, power or cooling."""
    for g in plan.groups:
        if g.type.server is None or not g.racks_requested or not g.unplaced:
            continue
        needed = -(-g.count // g.per_rack)
        yield Hit(g.path + ("racks",),
                  f"group {g.name} needs {needed} racks at {g.per_rack} per rack for {g.count} nodes, names "
                  f"{len(g.racks_requested)}; {g.unplaced} node(s) are left without a rack",
                  "name more racks, raise per_rack, or lower count")


@rule("SPACE003", "space", Severity.WARNING, "bare-metal group without racks")
def group_without_racks(plan: ClusterPlan) -> Iterator[Hit]:
    """A bare-metal (server) group that names no racks is counted in site power only: its rack power,
    cooling and space are not checked."""
    for g in plan.groups:
        if g.type.server is None or g.racks_requested:
            continue
        yield Hit(g.path,
                  f"group {g.name} ({g.count} × {g.type.server_name}, {g.count * g.type.power_kw:.1f} kW) names no "
                  f"racks: its power, cooling and space are unchecked",
                  "add racks: (and per_rack:) to the group")


@rule("SPACE004", "space", Severity.ERROR, "rack-scale system rack holds the wrong hardware")
def rack_system_contents(plan: ClusterPlan) -> Iterator[Hit]:
    """A rack whose profile is a rack-scale system (e.g. ``gb200-nvl72``) holds that system's compute trays
    and nothing else, and no more of them than the system has (18 on NVL72): the NVLink spine, power
    shelves and manifolds are built for exactly that."""
    for g in plan.groups:
        if g.type.server is None:
            continue
        for r in sorted(set(g.racks_requested)):
            system = plan.racks[r].system
            if system is not None and g.type.server_name != system.compute_tray:
                yield Hit(g.path + ("racks",),
                          f"group {g.name} ({g.type.server_name}) names rack {plan.racks[r].name}, a "
                          f"{plan.racks[r].profile_name} rack that takes only {system.compute_tray} trays",
                          f"place {g.name} in racks of another profile")
    for rack in plan.racks:
        system = rack.system
        if system is None:
            continue
        trays = sum(i.count for i in rack.items if i.label == system.compute_tray)
        if trays > system.compute_trays:
            yield Hit(rack.path + ("profile",),
                      f"rack {rack.name} holds {trays} {system.compute_tray} trays; a "
                      f"{plan.blueprint.rack_profiles[rack.profile_name].system} rack has {system.compute_trays}",
                      f"set per_rack to {system.compute_trays} or less",
                      subject=("rack", rack.name), summary=f"{trays} trays of {system.compute_trays}")
