"""Every cable of one fabric, port by port, derived from its scalable units and switch tiers.

The plan keeps a fabric as tiers and link bundles (docs/architecture.md, "expand"); a cabling check needs each
cable: which port of which switch goes to which host port or switch port. This module unfolds the same numbers
the fabric builder planned (plan/fabric.py), so the count of cables always equals the plan's link bundles:

- **node links**: in a rail-optimized scalable unit, NIC *k* of every node goes to the SU's leaf *k*; otherwise
  the SU's NIC ports fill its leaves in order, each leaf taking its share (the builder's even split). A leaf
  numbers its node ports from 1 (with a breakout, ``P<port>/<lane>``); the extra endpoints (subnet manager
  appliances first, then e.g. storage controllers) take the next ports of the leaves the builder gave them;
- **uplinks**: a leaf's uplinks follow its downlink ports; uplink *u* goes to spine *u mod spines* (of its pod
  with three tiers), so every leaf reaches every spine; a pod spine's uplinks go to the cores the same way.

Each cable is listed once, under its lower switch (a leaf holds its node cables and its uplinks, a spine its
core uplinks). Host ports are named by the order of the host's ports on the fabric (``U1/P1`` for the first).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.fabric import _spine_uplinks, ports_at
from clusterctl.plan.model import ClusterPlan, FabricPlan, SwitchTier


@dataclass(frozen=True, slots=True)
class Cable:
    switch: str
    """the lower switch, which lists the cable"""
    port: str
    peer_kind: str
    """``host`` (a node of the plan), ``endpoint`` (an extra endpoint: appliance, storage controller) or ``switch``"""
    peer: str
    peer_port: str
    peer_ports: int
    """ports the peer has on the fabric (hosts and endpoints), 0 for a switch"""
    gbps: float


def _port(slot: int, breakout: int) -> str:
    """the panel name of node slot ``slot`` (0-based) on a switch whose native ports carry ``breakout`` links"""
    if breakout <= 1:
        return f"P{slot + 1}"
    return f"P{slot // breakout + 1}/{slot % breakout + 1}"


def _host_ports(plan: ClusterPlan, fp: FabricPlan) -> dict[str, int]:
    per_group: dict[int, int] = {}
    for gi, role in dict.fromkeys(fp.attached):
        per_group[gi] = per_group.get(gi, 0) + plan.groups[gi].type.nic_count(role)
    return {h: n for gi, n in per_group.items() if n for h in plan.groups[gi].hosts}


def node_ports(plan: ClusterPlan, fp: FabricPlan) -> Iterator[tuple[str, int, int, str]]:
    """(host, its port number on ``fp``, its ports on ``fp``, the leaf the port is cabled to) for every node port, in
    cabling order: NIC *k* of a rail-optimized unit's nodes to the unit's leaf *k*, otherwise the unit's ports
    filling its leaves in order, each leaf taking its share."""
    ports = _host_ports(plan, fp)
    for su in fp.sus:
        leaves = hostlist.expand(su.leaves) if su.leaves else []
        if not leaves:
            continue
        pairs = [(h, k, ports.get(h, 0)) for h in hostlist.expand(su.hostlist) for k in range(ports.get(h, 0))]
        if fp.rail_optimized:
            targets = [leaves[k] if k < len(leaves) else leaves[-1] for _, k, _ in pairs]
        else:
            n = len(leaves)
            q, r = divmod(len(pairs), n)
            targets = [name for i, name in enumerate(leaves) for _ in range(q + (1 if i < r else 0))]
        for (host, k, n), name in zip(pairs, targets):
            yield host, k, n, name


def _node_cables(plan: ClusterPlan, fp: FabricPlan, leaf: SwitchTier, slots: dict[str, int]) -> Iterator[Cable]:
    for host, k, n, name in node_ports(plan, fp):
        slot = slots.get(name, 0)
        slots[name] = slot + 1
        yield Cable(name, _port(slot, leaf.down_breakout), "host", host, f"U{k + 1}/P1", n, leaf.down_gbps)


def _extra_cables(fp: FabricPlan, leaf: SwitchTier, leaves: Sequence[str], named: Sequence[str],
                  slots: dict[str, int]) -> Iterator[Cable]:
    width = max(2, len(str(len(fp.extra_leaves))))
    for i, li in enumerate(fp.extra_leaves):
        name = leaves[li]
        slot = slots.get(name, 0)
        slots[name] = slot + 1
        peer = named[i] if i < len(named) else f"{fp.name}-endpoint{i + 1 - len(named):0{width}d}"
        yield Cable(name, _port(slot, leaf.down_breakout), "endpoint", peer, "U1/P1", 1, leaf.down_gbps)


def _up_cables(lower: Sequence[str], first_port: dict[str, int], ups: dict[str, int], upper: Sequence[str],
               pod: int, gbps: float, upper_slots: dict[str, int]) -> Iterator[Cable]:
    """Uplinks of the ``lower`` switches, ``ups[name]`` each from port ``first_port[name]`` on. ``pod``: that many
    lower switches share their own slice of ``upper`` (leaves and the spines of their pod); 0: all share all of
    ``upper``, switch *j* of a pod starting at upper ``j * uplinks`` so the cores are used evenly."""
    pods = -(-len(lower) // pod) if pod else 1
    per_pod = max(1, len(upper) // pods)
    for i, name in enumerate(lower):
        pool = upper[(i // pod) * per_pod:(i // pod + 1) * per_pod] if pod else upper
        pool = pool or upper
        start = 0 if pod else i * ups[name]
        for u in range(ups[name]):
            peer = pool[(start + u) % len(pool)]
            slot = upper_slots.get(peer, 0)
            upper_slots[peer] = slot + 1
            yield Cable(name, f"P{first_port[name] + u}", "switch", peer, f"P{slot + 1}", 0, gbps)


def fabric_cables(plan: ClusterPlan, fp: FabricPlan, named_endpoints: Sequence[str] = ()) -> list[Cable]:
    """Every cable of ``fp``; ``named_endpoints`` name the first extra endpoints (subnet manager appliances)."""
    leaf = fp.tier("leaf")
    if leaf is None:
        return []
    leaves = hostlist.expand(leaf.names)
    slots: dict[str, int] = {}
    cables = list(_node_cables(plan, fp, leaf, slots))
    cables += _extra_cables(fp, leaf, leaves, named_endpoints, slots)
    spine, core = fp.tier("spine"), fp.tier("core")
    if spine is None or not leaf.up_links:
        return cables
    spines = hostlist.expand(spine.names)
    spine_slots: dict[str, int] = {}
    cables += _up_cables(leaves, {n: leaf.down_ports + 1 for n in leaves}, {n: leaf.up_links for n in leaves},
                         spines, fp.leaves_per_pod if core is not None else len(leaves), leaf.up_gbps, spine_slots)
    if core is None:
        return cables
    native, breakout, _ = ports_at(spine.switch, spine.down_gbps)
    down = {n: spine_slots.get(n, 0) for n in spines}
    ups = {n: _spine_uplinks(d, native * breakout) if d else 0 for n, d in down.items()}
    spine_pod = max(1, spine.count // max(1, fp.pods))
    ordered = [spines[p * spine_pod + j] for j in range(spine_pod) for p in range(fp.pods)
               if p * spine_pod + j < len(spines)]
    return cables + list(_up_cables(ordered, {n: down[n] + 1 for n in spines}, ups, hostlist.expand(core.names),
                                    0, spine.up_gbps, {}))
