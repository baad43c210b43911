"""Failure domains: every shared component of a plan and what its failure takes with it (docs/whatif.md).

A component is a rack power feed (``<rack>-pdu<k>``, as the site's DNS names them), a CDU, a rack, a switch of a
fabric tier (``leaf``, ``spine``, ``core``, by its planned name) or an NVLink switch tray of a rack-scale system
(``<rack>-nvsw<k>``). Its failure, from the plan alone:

* **feed**: the rack runs on its other feeds when they carry it: ``(feeds - 1) x feed_kw x continuous_load_factor``
  at least the rack's planning maximum (what POWER002 checks for the redundancy the blueprint states); otherwise
  the rack goes down, hosts and switches;
* **cdu**: the racks whose profile names it keep their liquid loop when the other CDUs of the loop
  (``rack_profiles.X.cdus``) carry its heat within their capacity and flow (N+1 cooling); otherwise, or with no
  other CDU, every host that needs liquid (``liquid_fraction`` > 0) and every liquid-cooled switch in them stops;
* **rack**: its hosts and the switches placed in it;
* **switch**: the switch itself: a leaf's node ports (the hosts lose those rails on that fabric) and uplinks, a
  spine's or core's links (the fabric's capacity falls by its share);
* **storage**: a building block of a shared storage tier (``storage[].building_blocks``): the tier keeps serving
  at the other blocks' share of its bandwidth while no more than ``blocks_tolerated`` are down, and stops beyond;
* **pump**: one of a CDU's pumps (``cooling.cdus[].pumps`` > 1): a standby pump takes over; without, the CDU runs
  on the others at their share of its flow, and stops (as above) when that is less than its load needs;
* **nvlink-tray**: one of the rack system's NVLink switch trays: the rack's NVLink domain keeps every GPU at
  ``(trays - 1) / trays`` of its NVLink bandwidth (each GPU's links are spread over all trays).

:class:`DomainIndex` is built once per plan (hosts by rack, switches by rack, each leaf's node ports); each
:func:`effect` then costs what it touches, so a sweep over every leaf of a 100,000-GPU plan stays in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from clusterctl import hostlist
from clusterctl.plan.cables import node_ports
from clusterctl.plan.cooling import CoolingLoops, flow_needed_lpm
from clusterctl.plan.fabric import tier_switch_names
from clusterctl.plan.model import ClusterPlan

KINDS = ("feed", "cdu", "pump", "rack", "leaf", "spine", "core", "nvlink-tray", "storage")
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
    storage_blocks: tuple[tuple[int, str], ...] = ()
    """(storage tier index, building block) down"""
    power: dict | None = None
    """a feed failure: the rack's load and what its remaining feeds carry"""
    cooling: dict | None = None
    """a CDU failure: its loops' racks and what each CDU left on them must carry"""
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
    def cooling(self) -> CoolingLoops:
        return CoolingLoops.of(self.plan)

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
    if kind == "pump":
        return [Component("pump", f"{c.name}-pump{k}", ("cooling", "cdus", i, "standby_pumps"))
                for i, c in enumerate(plan.cooling.cdus) if c.pumps > 1 for k in range(1, c.pumps + 1)]
    if kind == "rack":
        return [Component("rack", r.name, r.path) for r in plan.racks]
    if kind in SWITCH_KINDS:
        return [Component(kind, name, fp.path + ("tiers",)) for fp in plan.fabrics for t in fp.tiers
                if t.role == kind for name in tier_switch_names(fp, t)]
    if kind == "nvlink-tray":
        return [Component("nvlink-tray", f"{r.name}-nvsw{k}", ("rack_profiles", r.profile_name, "system"))
                for r in plan.racks if r.system is not None for k in range(1, r.system.nvlink_switch_trays + 1)]
    if kind == "storage":
        return [Component("storage", name, ("storage", i, "building_blocks"))
                for i, t in enumerate(plan.storage) for name in storage_blocks(t)]
    raise ValueError(f"unknown component kind {kind!r}")


def storage_blocks(tier) -> list[str]:
    """a shared storage tier's building blocks by name, ``<tier>-bb<k>`` (none when it does not give them)"""
    n = getattr(tier, "building_blocks", None) or 0
    width = max(2, len(str(n)))
    return [f"{tier.name}-bb{k:0{width}d}" for k in range(1, n + 1)]


def all_components(plan: ClusterPlan) -> dict[str, Component]:
    """name -> component, every kind (a name is unique across kinds: racks, their PDUs and trays, CDUs and
    switches are all DNS names of the site)."""
    return {c.name: c for kind in KINDS for c in components(plan, kind)}


def effect(ix: DomainIndex, c: Component, together: frozenset[str] = frozenset()) -> Effect:
    """What the failure of ``c`` takes down (hosts, switches) or degrades (NVLink trays), alone or with the
    components named ``together`` failed at the same time (a rack's other feeds, a loop's other CDUs: what its
    redundancy must then carry)."""
    plan = ix.plan
    if c.kind == "rack":
        return _rack_down(ix, c, [ix.rack_by_name[c.name]], f"rack {c.name} down: its hosts and the switches in it")
    if c.kind == "feed":
        return _feed(ix, c, together)
    if c.kind == "cdu":
        return _cdu(ix, c, together)
    if c.kind == "pump":
        return _pump(ix, c, together)
    if c.kind in SWITCH_KINDS:
        return Effect(c, switches_down=(c.name,), note=f"{c.kind} {c.name} down")
    if c.kind == "storage":
        return _storage(ix, c, together)
    rack_name, _, k = c.name.rpartition("-nvsw")
    r = plan.racks[ix.rack_by_name[rack_name]]
    trays = r.system.nvlink_switch_trays
    return Effect(c, nvlink_trays=((r.index, 1),),
                  note=f"NVLink switch tray {k} of {trays} in {rack_name}: the rack's GPUs keep {trays - 1}/{trays} "
                       "of their NVLink bandwidth")


def _rack_down(ix: DomainIndex, c: Component, racks: list[int], note: str, power: dict | None = None) -> Effect:
    hosts = tuple(h for r in racks for h in ix.hosts_by_rack.get(r, []))
    switches = tuple(s for r in racks for s in ix.switches_by_rack.get(r, []))
    return Effect(c, hosts_down=hosts, switches_down=switches, power=power, note=note)


def _feed(ix: DomainIndex, c: Component, together: frozenset[str]) -> Effect:
    rack_name, _, _ = c.name.rpartition("-pdu")
    rack = ix.plan.racks[ix.rack_by_name[rack_name]]
    prof = ix.plan.rack_profile(rack)
    feed_kw = prof.feed_kw if prof.feed_kw is not None else prof.power_kw
    down = len(({c.name} | together) & {f"{rack_name}-pdu{k}" for k in range(1, prof.feeds + 1)})
    left = (prof.feeds - down) * feed_kw * prof.continuous_load_factor
    power = {"rack": rack.name, "load_kw": round(rack.power_kw, 3), "feeds": prof.feeds, "feeds_down": down,
             "redundancy": prof.redundancy, "feed_kw": feed_kw, "continuous_load_factor": prof.continuous_load_factor,
             "remaining_kw": round(left, 3), "carried": rack.power_kw <= left + 1e-9}
    if power["carried"]:
        return Effect(c, power=power, note=f"{rack.name} runs on its other {prof.feeds - down} feed(s): "
                                           f"{left:,.1f} kW continuous for {rack.power_kw:,.1f} kW ({prof.redundancy})")
    return _rack_down(ix, c, [rack.index], f"{rack.name} loses power: {prof.feeds - down} feed(s) carry {left:,.1f} kW "
                                           f"continuous, the rack draws {rack.power_kw:,.1f} kW ({prof.redundancy})",
                      power)


def _cdu(ix: DomainIndex, c: Component, together: frozenset[str]) -> Effect:
    plan = ix.plan
    failed = ({c.name} | together) & ix.cooling.cdus.keys()
    racks, others, kept = ix.cooling.failure(failed)
    cooling = {"failed": [d.name for d in plan.cooling.cdus if d.name in failed], "racks": [r.name for r in racks],
               "cdus_left": [{"cdu": o.name, "load_kw": round(o.load_kw, 3), "capacity_kw": o.capacity_kw,
                              "flow_needed_lpm": round(o.flow_needed_lpm, 3), "flow_lpm": o.flow_lpm,
                              "carries": o.carries} for o in others],
               "carried": kept and all(o.carries for o in others)}
    if cooling["carried"]:
        return Effect(c, cooling=cooling,
                      note=f"CDU {c.name} stops: {_short([o.name for o in others])} carry the liquid loop of "
                           f"{len(racks)} rack(s) ({_short(cooling['racks'])}), at most "
                           f"{max(o.load_kw / o.capacity_kw for o in others):.0%} of a CDU's capacity and "
                           f"{max(o.flow_needed_lpm / o.flow_lpm for o in others):.0%} of its flow")
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
    why = ("no other CDU is piped to them" if not kept else
           "the CDUs left cannot carry them: " + ", ".join(
               f"{o.name} {o.load_kw:,.1f} of {o.capacity_kw:,g} kW, {o.flow_needed_lpm:,.0f} of {o.flow_lpm:,g} L/min"
               for o in others if not o.carries))
    return Effect(c, hosts_down=tuple(hosts), switches_down=tuple(switches), cooling=cooling,
                  note=f"CDU {c.name} stops: the liquid loop of {len(racks)} rack(s) "
                       f"({_short([r.name for r in racks])}) loses cooling ({why}); hosts and switches that need "
                       "liquid stop")


def _pump(ix: DomainIndex, c: Component, together: frozenset[str]) -> Effect:
    """A CDU's pump: a standby one takes over; without, the CDU runs on the pumps left at their share of its flow,
    and stops (as :func:`_cdu`) when that no longer carries its load."""
    name = c.name.rpartition("-pump")[0]
    i, cdu = next((i, d) for i, d in enumerate(ix.plan.cooling.cdus) if d.name == name)
    down = len(({c.name} | together) & {f"{name}-pump{k}" for k in range(1, cdu.pumps + 1)})
    duty, running = cdu.pumps - cdu.standby_pumps, cdu.pumps - down
    flow = cdu.flow_lpm * min(running, duty) / duty
    need = flow_needed_lpm(cdu, ix.cooling.loads[name])
    pumps = {"cdu": name, "pumps": cdu.pumps, "standby_pumps": cdu.standby_pumps, "down": down,
             "flow_lpm": round(flow, 3), "flow_needed_lpm": round(need, 3), "carried": running > 0 and need <= flow + 1e-9}
    if pumps["carried"]:
        how = "a standby pump takes over" if running >= duty else f"{running} of {duty} duty pumps run"
        return Effect(c, cooling={"pumps": pumps},
                      note=f"{down} of CDU {name}'s {cdu.pumps} pumps down: {how}, {flow:,.0f} L/min for the "
                           f"{need:,.0f} its load needs")
    stopped = _cdu(ix, Component("cdu", name, ("cooling", "cdus", i)), together | {name})
    return replace(stopped, component=c, cooling={**(stopped.cooling or {}), "pumps": pumps},
                   note=f"{down} of CDU {name}'s {cdu.pumps} pumps down: {flow:,.0f} L/min for the {need:,.0f} its "
                        f"load needs, so the CDU stops: " + stopped.note)


def _storage(ix: DomainIndex, c: Component, together: frozenset[str]) -> Effect:
    i = c.path[1]
    tier = ix.plan.storage[i]
    blocks = storage_blocks(tier)
    down = len(({c.name} | together) & set(blocks))
    tolerated = min(tier.blocks_tolerated, len(blocks) - 1)
    left = len(blocks) - down
    serving = down <= tolerated
    return Effect(c, storage_blocks=((i, c.name),),
                  note=f"storage tier {tier.name}: {down} of its {len(blocks)} building blocks down "
                       + (f"(it tolerates {tolerated}): it serves every file from the other {left}, at {left}/"
                          f"{len(blocks)} of its bandwidth" if serving else
                          f"(it tolerates {tolerated}): the files on them are unreachable and I/O to them hangs"))


def _short(names: list[str]) -> str:
    return hostlist.compress(names) if names else "none"


@dataclass(frozen=True)
class SinglePoint:
    """A component whose failure alone takes too much of the cluster (rule BLAST001, ``report --whatif``)."""

    component: Component
    takes: tuple[str, ...]
    """what it takes, in words"""
    gpus_out: int
    """GPUs out of service, a failed rack's own not counted"""

    @property
    def what(self) -> str:
        t = self.takes
        return t[0] if len(t) == 1 else ", ".join(t[:-1]) + " and " + t[-1]


def single_points(plan: ClusterPlan) -> list[SinglePoint]:
    """The single points of failure: a rack, feed, CDU, CDU pump or leaf whose failure takes more than
    ``validation.max_blast_radius`` of the GPUs out of service (lost, or cut off from the compute fabric when every
    leaf of their scalable unit is down; a failed rack's own GPUs not counted: its blast radius is what it takes
    from the other racks), or, where the blueprint has a backup, every Slurm controller or every slurmdbd host, or
    (with a backup controller) the server of StateSaveLocation's tier.

    Isolation is judged per scalable unit (exact for rail-optimized units, whose nodes reach every leaf of their
    unit), so the sweep stays linear in the racks and leaves; ``clusterctl whatif`` counts port by port. A cluster
    whose hosts are in one rack is not judged on that rack, its feeds and CDUs, nor a compute fabric of one leaf on
    that leaf: each is one failure domain by design (the fabric and power rules judge them)."""
    from clusterctl.plan.inventory_groups import served_nfs_tiers
    from clusterctl.plan.roles import slurm_roles
    from clusterctl.plan.slurm import state_tier

    ix = DomainIndex.of(plan)
    host_gpus = {h: g.type.gpus for g in plan.groups for h in g.hosts}
    su_of_leaf: dict[str, tuple[int, int]] = {}
    su_leaves: dict[tuple[int, int], int] = {}
    su_hosts: dict[tuple[int, int], set[str]] = {}
    for fp in plan.fabrics:
        leaf_tier = fp.tier("leaf")
        if not any(role == "compute" for _, role in fp.attached) or leaf_tier is None or leaf_tier.count <= 1:
            continue
        for su in fp.sus:
            leaves = hostlist.expand(su.leaves) if su.leaves else []
            key = (fp.index, su.index)
            su_leaves[key] = len(leaves)
            su_hosts[key] = set(hostlist.expand(su.hostlist))
            for leaf in leaves:
                su_of_leaf[leaf] = key
    roles = slurm_roles(plan)
    state = state_tier(plan)
    state_host = next((s.host for s in served_nfs_tiers(plan) if state is not None and s.index == state[0]), None)
    gpus = sum(g.gpus for g in plan.groups)
    limit = plan.max_blast_radius
    one_rack = len({r for g in plan.groups for r in g.rack_index if r >= 0}) <= 1
    out = []
    for kind in ("leaf",) if one_rack else ("rack", "feed", "cdu", "pump", "leaf"):
        for c in components(plan, kind):
            if kind == "leaf" and su_leaves.get(su_of_leaf.get(c.name), 0) != 1:
                continue  # a unit of several leaves keeps its hosts when one fails
            e = effect(ix, c)
            down = set(e.hosts_down)
            cut: dict[tuple[int, int], int] = {}
            for s in e.switches_down:
                if s in su_of_leaf:
                    cut[su_of_leaf[s]] = cut.get(su_of_leaf[s], 0) + 1
            out_of_service = down | {h for key, n in cut.items() if n >= su_leaves[key] for h in su_hosts[key]}
            if kind == "rack":
                out_of_service -= set(ix.hosts_by_rack.get(ix.rack_by_name[c.name], []))
            lost = sum(host_gpus.get(h, 0) for h in out_of_service)
            takes = []
            if gpus and lost / gpus > limit:
                where = " in other racks" if kind == "rack" else ""
                takes.append(f"{lost:,} of the {gpus:,} GPUs{where} ({100 * lost / gpus:.3g} %, over "
                             f"validation.max_blast_radius {100 * limit:g} %)")
            if len(roles.controllers) > 1 and all(h in down for h in roles.controllers):
                takes.append(f"every Slurm controller ({', '.join(roles.controllers)})")
            if len(roles.accounting) > 1 and all(h in down for h in roles.accounting):
                takes.append(f"every slurmdbd host ({', '.join(roles.accounting)})")
            if len(roles.controllers) > 1 and state_host in down:
                takes.append(f"StateSaveLocation's server {state_host}")
            if takes:
                out.append(SinglePoint(c, tuple(takes), lost))
    return out
