"""Failure domains: every shared component of a plan and what its failure takes with it (docs/whatif.md).

A component is a rack power feed (``<rack>-pdu<k>``, as the site's DNS names them), a CDU, a rack, a switch of a
fabric tier (``leaf``, ``spine``, ``core``, by its planned name) or an NVLink switch tray of a rack-scale system
(``<rack>-nvsw<k>``). Its failure, from the plan alone:

* **feed**: the rack runs on its other feeds when they carry it: ``(feeds - 1) x feed_kw x continuous_load_factor``
  at least the rack's planning maximum (what POWER002 checks for the redundancy the blueprint states); otherwise
  the rack goes down, hosts and switches;
* **cdu**: the racks whose profile names it lose their liquid loop; every host that needs liquid
  (``liquid_fraction`` > 0) and every liquid-cooled switch in them stops (no other CDU is piped to them);
* **rack**: its hosts and the switches placed in it;
* **switch**: the switch itself: a leaf's node ports (the hosts lose those rails on that fabric) and uplinks, a
  spine's or core's links (the fabric's capacity falls by its share);
* **nvlink-tray**: one of the rack system's NVLink switch trays: the rack's NVLink domain keeps every GPU at
  ``(trays - 1) / trays`` of its NVLink bandwidth (each GPU's links are spread over all trays).

:class:`DomainIndex` is built once per plan (hosts by rack, switches by rack, each leaf's node ports); each
:func:`effect` then costs what it touches, so a sweep over every leaf of a 100,000-GPU plan stays in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from clusterctl import hostlist
from clusterctl.plan.cables import node_ports
from clusterctl.plan.fabric import tier_switch_names
from clusterctl.plan.model import ClusterPlan

KINDS = ("feed", "cdu", "rack", "leaf", "spine", "core", "nvlink-tray")
"""the component kinds ``clusterctl whatif`` knows, in the order its sweep and the blast-radius table list them"""
SWITCH_KINDS = ("leaf", "spine", "core")


@dataclass(frozen=True)
class Component:
    kind: str
    name: str
    path: tuple
    """the blueprint place to change to make its failure smaller (a rack profile, a fabric, a CDU)"""


@dataclass(frozen=True)
class Effect:
    component: Component
    hosts_down: tuple[str, ...] = ()
    """hosts without power or cooling"""
    switches_down: tuple[str, ...] = ()
    nvlink_trays: tuple[tuple[int, int], ...] = ()
    """(rack index, NVLink switch trays down in it)"""
    racks_down: tuple[int, ...] = ()
    power: dict | None = None
    """a feed failure: the rack's load and what its remaining feeds carry"""
    note: str = ""


@dataclass
class DomainIndex:
    """What :func:`effect` looks up, built once per plan."""

    plan: ClusterPlan
    hosts_by_rack: dict[int, list[str]] = field(default_factory=dict)
    host_group: dict[str, int] = field(default_factory=dict)
    switches_by_rack: dict[int, list[str]] = field(default_factory=dict)
    switch_kind: dict[str, tuple[int, str]] = field(default_factory=dict)
    """switch name -> (fabric index, tier role)"""
    rack_by_name: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: ClusterPlan) -> "DomainIndex":
        ix = cls(plan)
        ix.rack_by_name = {r.name: r.index for r in plan.racks}
        for g in plan.groups:
            for h, r in zip(g.hosts, g.rack_index):
                ix.host_group[h] = g.index
                if r >= 0:
                    ix.hosts_by_rack.setdefault(r, []).append(h)
        for name, r in plan.switch_rack.items():
            ix.switches_by_rack.setdefault(r, []).append(name)
        for fp in plan.fabrics:
            for t in fp.tiers:
                for name in tier_switch_names(fp, t):
                    ix.switch_kind[name] = (fp.index, t.role)
        return ix

    @cached_property
    def leaf_ports(self) -> dict[str, list[tuple[str, int]]]:
        """leaf name -> the (host, port number on that fabric) cabled to it, as plan/cables.py cables them"""
        out: dict[str, list[tuple[str, int]]] = {}
        for fp in self.plan.fabrics:
            for host, k, _, leaf in node_ports(self.plan, fp):
                out.setdefault(leaf, []).append((host, k))
        return out


def components(plan: ClusterPlan, kind: str) -> list[Component]:
    """Every component of ``kind`` in ``plan``, in plan order."""
    if kind == "feed":
        return [Component("feed", f"{r.name}-pdu{k}", ("rack_profiles", r.profile_name, "feeds"))
                for r in plan.racks if plan.rack_profile(r) is not None
                for k in range(1, plan.rack_profile(r).feeds + 1)]
    if kind == "cdu":
        return [Component("cdu", c.name, ("cooling", "cdus", i)) for i, c in enumerate(plan.cooling.cdus)]
    if kind == "rack":
        return [Component("rack", r.name, r.path) for r in plan.racks]
    if kind in SWITCH_KINDS:
        return [Component(kind, name, fp.path + ("tiers",)) for fp in plan.fabrics for t in fp.tiers
                if t.role == kind for name in tier_switch_names(fp, t)]
    if kind == "nvlink-tray":
        return [Component("nvlink-tray", f"{r.name}-nvsw{k}", ("rack_profiles", r.profile_name, "system"))
                for r in plan.racks if r.system is not None for k in range(1, r.system.nvlink_switch_trays + 1)]
    raise ValueError(f"unknown component kind {kind!r}")


def all_components(plan: ClusterPlan) -> dict[str, Component]:
    """name -> component, every kind (a name is unique across kinds: racks, their PDUs and trays, CDUs and
    switches are all DNS names of the site)."""
    return {c.name: c for kind in KINDS for c in components(plan, kind)}


def effect(ix: DomainIndex, c: Component) -> Effect:
    """What the failure of ``c`` alone takes down (hosts, switches) or degrades (NVLink trays)."""
    plan = ix.plan
    if c.kind == "rack":
        return _rack_down(ix, c, [ix.rack_by_name[c.name]], f"rack {c.name} down: its hosts and the switches in it")
    if c.kind == "feed":
        return _feed(ix, c)
    if c.kind == "cdu":
        return _cdu(ix, c)
    if c.kind in SWITCH_KINDS:
        return Effect(c, switches_down=(c.name,), note=f"{c.kind} {c.name} down")
    rack_name, _, k = c.name.rpartition("-nvsw")
    r = plan.racks[ix.rack_by_name[rack_name]]
    trays = r.system.nvlink_switch_trays
    return Effect(c, nvlink_trays=((r.index, 1),),
                  note=f"NVLink switch tray {k} of {trays} in {rack_name}: the rack's GPUs keep {trays - 1}/{trays} "
                       "of their NVLink bandwidth")


def _rack_down(ix: DomainIndex, c: Component, racks: list[int], note: str, power: dict | None = None) -> Effect:
    hosts = tuple(h for r in racks for h in ix.hosts_by_rack.get(r, []))
    switches = tuple(s for r in racks for s in ix.switches_by_rack.get(r, []))
    return Effect(c, hosts_down=hosts, switches_down=switches, racks_down=tuple(racks), power=power, note=note)


def _feed(ix: DomainIndex, c: Component) -> Effect:
    rack_name, _, _ = c.name.rpartition("-pdu")
    rack = ix.plan.racks[ix.rack_by_name[rack_name]]
    prof = ix.plan.rack_profile(rack)
    feed_kw = prof.feed_kw if prof.feed_kw is not None else prof.power_kw
    left = (prof.feeds - 1) * feed_kw * prof.continuous_load_factor
    power = {"rack": rack.name, "load_kw": round(rack.power_kw, 3), "feeds": prof.feeds,
             "redundancy": prof.redundancy, "feed_kw": feed_kw, "continuous_load_factor": prof.continuous_load_factor,
             "remaining_kw": round(left, 3), "carried": rack.power_kw <= left + 1e-9}
    if power["carried"]:
        return Effect(c, power=power, note=f"{rack.name} runs on its other {prof.feeds - 1} feed(s): "
                                           f"{left:,.1f} kW continuous for {rack.power_kw:,.1f} kW ({prof.redundancy})")
    return _rack_down(ix, c, [rack.index], f"{rack.name} loses power: {prof.feeds - 1} feed(s) carry {left:,.1f} kW "
                                           f"continuous, the rack draws {rack.power_kw:,.1f} kW ({prof.redundancy})",
                      power)


def _cdu(ix: DomainIndex, c: Component) -> Effect:
    plan = ix.plan
    racks = [r for r in plan.racks if (p := plan.rack_profile(r)) is not None and p.cdu == c.name]
    hosts, switches = [], []
    for r in racks:
        if r.system is not None:
            hosts += ix.hosts_by_rack.get(r.index, [])
            switches += ix.switches_by_rack.get(r.index, [])
            continue
        hosts += [h for h in ix.hosts_by_rack.get(r.index, [])
                  if plan.groups[ix.host_group[h]].type.liquid_fraction > 0]
        switches += [s for s in ix.switches_by_rack.get(r.index, [])
                     if plan.fabrics[ix.switch_kind[s][0]].tier(ix.switch_kind[s][1]).switch.cooling == "liquid"]
    return Effect(c, hosts_down=tuple(hosts), switches_down=tuple(switches),
                  racks_down=tuple(r.index for r in racks if r.system is not None),
                  note=f"CDU {c.name} stops: the liquid loop of {len(racks)} rack(s) "
                       f"({_short([r.name for r in racks])}); hosts and switches that need liquid stop")


def _short(names: list[str]) -> str:
    return hostlist.compress(names) if names else "none"
