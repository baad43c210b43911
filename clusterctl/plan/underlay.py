"""The routed underlay of the Ethernet and RoCE fabrics: every switch's ASN, loopback and ports, every host rail's
address, gateway and routing table. One place; the switch files (targets/switches.py, targets/frr.py), the
roce_network role's group variables (targets/roce.py) and the rehearsal's ``fabric`` scenario ask it.

**Design** (a routed leaf-spine(-core) with BGP unnumbered, as NVIDIA's Spectrum-X and DGX SuperPOD Ethernet
fabrics run on Cumulus Linux):

- **ASNs** (RFC 7938 "Use of BGP for Routing in Large-Scale Data Centers", section 5.2.1 "BGP Autonomous System
  Numbering Scheme"; private 4-byte ASNs of RFC 6996, 4200000000-4294967294): every leaf (RFC 7938's Tier 3,
  ToR) has its own ASN; the spines of one pod share one ASN (Tier 2); the top tier shares one ASN (Tier 1: the
  spines of a two-tier fabric, the cores of a three-tier one). Sharing an ASN per tier is what stops "path
  hunting": a route a spine learns from a leaf never comes back to another spine of the same ASN. Fabric
  number ``i`` (its index in ``fabrics:``) owns the block ``ASN_FIRST + i * ASN_BLOCK``: top tier ``+ 1``,
  pod ``p`` spines ``+ 1000 + p`` (three tiers), leaf ``n`` (1-based) ``+ 10000 + n``.
- **Loopbacks** (Cumulus Linux user guide, "Border Gateway Protocol - BGP", "BGP unnumbered": the router id is
  the loopback address): one /32 per switch from the blueprint's pool of role ``loopback``, in the order the
  management pool numbers switches (fabrics, then tiers, then names). Without a loopback pool the fabric has no
  router ids and no switch files (rule FABRIC030 says so); ADDR001 checks the pool is big enough.
- **Fabric ports**: BGP unnumbered (RFC 5549 IPv4 routes over IPv6 link-local next hops; Cumulus "BGP
  unnumbered") on every leaf-spine and spine-core link, so no link needs an address. A leaf's downlinks come
  first (``swp1``.., split ``swpNs0``.. where one native port carries several host links), its uplinks after
  them (or on the dedicated uplink ports, ``swp49``.. of an SN2201). Leaf uplink ``u`` goes to spine ``u mod S``
  of its pod (S spines per pod), so every leaf reaches every spine of its pod with the same number of links.
  Spine uplinks are numbered across the tier and go to core ``g mod C`` (g the link's number), which gives every
  core the same number of links and every pod a path to every core.
- **L3 to the host** (/31 per host link, as the rail-optimized GPU back-end designs address them: Juniper
  Validated Design "AI Data Center Network with Juniper Apstra", GPU server to leaf nodes: "each server to leaf
  node link is configured with a /31 IPv4 address"; the NVIDIA Spectrum-X RA's text on host addressing is not
  in the sources this was written from, so it is not cited): every compute NIC port on a RoCE fabric takes a /31
  from the compute pool (AddressPool.point_to_point), the leaf's side even, the host's odd; the host's gateway
  is the leaf's side. The leaf advertises its connected /31s and loopback into BGP. The host gives each rail its
  own routing table and a ``from <address>`` rule so traffic of a QP bound to rail k leaves through rail k
  (TABLE_BASE, RULE_PRIORITY_BASE). Storage ports on a RoCE fabric (a converged storage/in-band fabric) are L3
  to the host the same way: a /31 per port from the storage pool (point-to-point too, plan/expand.py
  routed_roles), their own tables and rules (STORAGE_TABLE_BASE), configured by the host_network role
  (:func:`routed_ports` gives both roles the same numbers). In-band ports on a converged RoCE fabric and the
  hosts of plain Ethernet fabrics get routed ports with the MTU but no host subnet here: the in-band pool is
  shared with the head and login nodes on the service fabric, so the in-band network stays one L2 subnet and its
  leaf SVI, MLAG or EVPN multihoming of the bond is not rendered (docs/network.md).

Which host sits on which leaf port: rail-optimized, leaf ``k`` of a scalable unit takes rail ``k`` of the
unit's ``j``-th host on its ``j``-th downlink; otherwise a unit's ports (host by host, each host's attached ports
in order) fill its leaves one after another in the counts the fabric builder planned. Extra endpoints (storage
appliance ports) take the downlinks after the hosts' and are not addressed here.

Everything here is integer arithmetic on the plan: a 100,000-GPU fabric's switch files are rendered without
building an object per port (:func:`leaf_host_links` yields tuples; :func:`switches` builds objects for the
rehearsal and the tests, which ask for small fabrics).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

from clusterctl import hostlist
from clusterctl.plan.allocations import address_text
from clusterctl.plan.model import AddressPool, ClusterPlan, FabricPlan, GroupPlan, SwitchTier
from clusterctl.plan.interfaces import role_ports

ASN_FIRST = 4_200_000_000
"""first private 4-byte ASN (RFC 6996)"""
ASN_LAST = 4_294_967_294
ASN_BLOCK = 1_000_000
"""ASNs per fabric"""
ASN_SPINE_POD = 1000
ASN_LEAF = 10_000
ROUTED_KINDS = ("roce", "ethernet")
TABLE_BASE = 100
"""rail k's routing table is TABLE_BASE + 1 + k (101 for the first rail): clear of main (254), local (255)"""
RULE_PRIORITY_BASE = 1000
"""rail k's ``from <address>`` rule has priority RULE_PRIORITY_BASE + k: before main's 32766"""
STORAGE_TABLE_BASE, STORAGE_PRIORITY_BASE = 200, 2000
"""storage port k's table and rule priority (201.., 2000..): clear of the rails' and of IPoIB's (host_network)"""
ROLE_TABLES = {"compute": (TABLE_BASE, RULE_PRIORITY_BASE), "storage": (STORAGE_TABLE_BASE, STORAGE_PRIORITY_BASE)}
BGP_KEEPALIVE, BGP_HOLD = 3, 9
"""BGP timers (seconds): a dead spine's routes are withdrawn within the hold time, 9 s (Cumulus Linux user guide,
"Optional BGP Configuration", BGP timers; RFC 4271 section 10: hold time 3 x keepalive)"""
BGP_CONNECT_RETRY = 10
MAXIMUM_PATHS = 64
"""ECMP next hops BGP installs (Cumulus Linux: maximum-paths 64 for eBGP by default)"""


@dataclass(frozen=True, slots=True)
class Port:
    """One port of a switch the plan uses."""

    name: str
    """``swp1``, ``swp1s0`` (breakout subport)"""
    kind: str
    """``fabric`` (BGP unnumbered to another switch), ``host`` (L3 to a host NIC) or ``endpoint`` (an extra
    endpoint such as a storage appliance port: MTU only)"""
    peer: str
    """the switch or host on the other end, empty for an extra endpoint"""
    peer_port: str
    """the peer's port: ``swpN`` of a switch, ``rail K`` / the role of a host port"""
    address: str = ""
    """host links on a RoCE compute fabric: the switch side with prefix (``10.64.0.0/31``)"""


@dataclass(frozen=True, slots=True)
class Switch:
    fabric: str
    name: str
    role: str
    """leaf, spine or core"""
    level: int
    asn: int
    loopback: str
    """``10.255.0.1`` (no prefix), empty without a loopback pool"""
    ports: tuple[Port, ...]


@dataclass(frozen=True, slots=True)
class HostRail:
    fabric: str
    rail: int
    device: str
    """RDMA device (``mlx5_0``)"""
    netdev: str
    address: str
    prefix: int
    gateway: str
    table: int
    priority: int
    leaf: str
    leaf_port: str


# --- fabrics, tiers, ASNs, loopbacks -----------------------------------------------------------------------

def routed(fp: FabricPlan) -> bool:
    """Ethernet and RoCE fabrics are routed leaf-spine(-core) underlays; InfiniBand is the subnet manager's."""
    return fp.kind in ROUTED_KINDS and bool(fp.tiers)


def routed_fabrics(plan: ClusterPlan) -> tuple[FabricPlan, ...]:
    return tuple(f for f in plan.fabrics if routed(f))


def pods(fp: FabricPlan) -> int:
    return max(1, fp.pods) if fp.tier("core") is not None else 1


def asn(fp: FabricPlan, role: str, index: int) -> int:
    """The ASN of switch ``index`` (0-based within its tier) of ``role`` (the module docstring)."""
    block = ASN_FIRST + fp.index * ASN_BLOCK
    top = "core" if fp.tier("core") is not None else "spine"
    if role == top:
        return block + 1
    if role == "spine":
        spine = fp.tier("spine")
        per_pod = max(1, spine.count // pods(fp)) if spine is not None else 1
        return block + ASN_SPINE_POD + index // per_pod
    return block + ASN_LEAF + index + 1


def loopback_pool(plan: ClusterPlan) -> AddressPool | None:
    return next((p for p in plan.addresses if p.role == "loopback" and p.switch_offset >= 0), None)


def switch_number(plan: ClusterPlan, fp: FabricPlan, role: str) -> int:
    """The number (in the management and loopback pools' order) of the first switch of ``fp``'s ``role`` tier."""
    n = 0
    for f in plan.fabrics:
        for t in f.tiers:
            if f.index == fp.index and t.role == role:
                return n
            n += t.count
    return n


def loopbacks(plan: ClusterPlan, fp: FabricPlan, role: str) -> list[str]:
    """The loopback address of every switch of a tier, in name order (empty strings without a loopback pool or
    when the pool runs out: ADDR001)."""
    tier = fp.tier(role)
    pool = loopback_pool(plan)
    if tier is None:
        return []
    if pool is None:
        return [""] * tier.count
    net = ipaddress.ip_network(pool.cidr)
    first = int(net.network_address) + pool.first_host_offset + pool.switch_offset + switch_number(plan, fp, role)
    last = int(net.network_address) + pool.first_host_offset + pool.capacity
    return [address_text(net.version, first + i) if first + i < last else "" for i in range(tier.count)]


# --- port names ----------------------------------------------------------------------------------------------

def down_port(tier: SwitchTier, j: int) -> str:
    """The name of downlink ``j`` (0-based): ``swpN``, or ``swpNsM`` when a native port is split."""
    b = tier.down_breakout
    return f"swp{j // b + 1}s{j % b}" if b > 1 else f"swp{j + 1}"


def up_port(tier: SwitchTier, u: int) -> str:
    """The name of uplink ``u`` (0-based): after the downlinks' native ports, or the dedicated uplink ports."""
    first = tier.native_ports if tier.up_dedicated else tier.down_ports
    return f"swp{first + u + 1}"


# --- leaf-spine-core cabling -----------------------------------------------------------------------------------

def _spread(links: int, targets: int, t: int) -> int:
    """Links of ``links`` dealt round-robin over ``targets`` that land on target ``t``."""
    return links // targets + (1 if t < links % targets else 0)


def leaf_uplink(fp: FabricPlan, leaf: int, u: int) -> tuple[int, int]:
    """(spine index, spine downlink index) of leaf ``leaf``'s uplink ``u`` (0-based)."""
    lt, st = fp.tier("leaf"), fp.tier("spine")
    spp = max(1, st.count // pods(fp))
    per_pod = fp.leaves_per_pod if fp.tier("core") is not None and fp.leaves_per_pod else lt.count
    pod, local = divmod(leaf, per_pod)
    s_local, r = u % spp, u // spp
    return pod * spp + s_local, local * _spread(lt.up_links, spp, s_local) + r


def spine_downlinks(fp: FabricPlan, spine: int) -> int:
    """Leaf links that reach spine ``spine``."""
    lt, st = fp.tier("leaf"), fp.tier("spine")
    spp = max(1, st.count // pods(fp))
    per_pod = fp.leaves_per_pod if fp.tier("core") is not None and fp.leaves_per_pod else lt.count
    pod, s_local = divmod(spine, spp)
    leaves = max(0, min(per_pod, lt.count - pod * per_pod))
    return leaves * _spread(lt.up_links, spp, s_local)


def spine_uplinks(fp: FabricPlan, spine: int) -> int:
    """Core links of spine ``spine``: as many as its downlinks (1:1) where its ports allow (plan/fabric.py)."""
    st = fp.tier("spine")
    if fp.tier("core") is None:
        return 0
    down = spine_downlinks(fp, spine)
    left = st.native_ports * st.down_breakout - down
    return min(down, left) if left >= 1 else down


def spine_uplink_starts(fp: FabricPlan) -> list[int]:
    """The number of each spine's first core link (links numbered across the spine tier)."""
    st = fp.tier("spine")
    starts, n = [], 0
    for s in range(st.count):
        starts.append(n)
        n += spine_uplinks(fp, s)
    return starts


# --- host links ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Block:
    """The ports of one NIC role of a group on a fabric and, when they are L3 to the host, their /31 block."""

    role: str
    ports: int
    pool: AddressPool | None
    """the point-to-point pool of the role (compute or storage on a RoCE fabric), None for an L2 port"""
    first: int = 0
    """the group's first slot in the pool"""
    per_host: int = 0


@dataclass(frozen=True, slots=True)
class _Member:
    group: GroupPlan
    roles: tuple[str, ...]
    ports: int
    blocks: tuple[_Block, ...]
    """one per role, in attach order"""

    @property
    def pool(self) -> AddressPool | None:
        """The compute rails' point-to-point pool (a group whose only role on the fabric is compute)."""
        return self.blocks[0].pool if self.roles == ("compute",) else None


def p2p_block(plan: ClusterPlan, fp: FabricPlan, g: GroupPlan, role: str) -> tuple[AddressPool, int, int] | None:
    """(pool, first slot, slots per host) of ``role``'s ports of ``g`` when they are L3 to the host on ``fp``: a
    RoCE fabric and a point-to-point pool of that role giving the group addresses (plan/expand.py routed_roles)."""
    if fp.kind != "roce":
        return None
    for p in plan.addresses:
        hit = next(((f, n) for gi, f, n in p.group_offsets if gi == g.index), None)
        if p.role == role and p.point_to_point and hit:
            return p, hit[0], hit[1]
    return None


def _members(plan: ClusterPlan, fp: FabricPlan) -> dict[str, tuple[_Member, int]]:
    """host name -> (its group's membership, its index in the group) for the fabric's hosts."""
    roles: dict[int, list[str]] = {}
    for gi, role in fp.attached:
        if role not in roles.setdefault(gi, []):
            roles[gi].append(role)
    out: dict[str, tuple[_Member, int]] = {}
    for g in plan.groups:
        if g.index not in roles:
            continue
        rs = tuple(roles[g.index])
        blocks = []
        for r in rs:
            found = p2p_block(plan, fp, g, r)
            blocks.append(_Block(r, g.type.nic_count(r), *found) if found else _Block(r, g.type.nic_count(r), None))
        m = _Member(g, rs, sum(b.ports for b in blocks), tuple(blocks))
        for i, h in enumerate(g.hosts):
            out[h] = (m, i)
    return out


def _su_leaf_ports(fp: FabricPlan, members: dict, su) -> Iterator[tuple[int, int, str, int]]:
    """(leaf index within the SU, downlink index, host, port of the host) for one scalable unit."""
    hosts = hostlist.expand(su.hostlist) if su.hostlist else []
    leaves = len(hostlist.expand(su.leaves)) if su.leaves else 0
    if not leaves:
        return
    if fp.rail_optimized:
        for j, h in enumerate(hosts):
            for k in range(min(members[h][0].ports, leaves)):
                yield k, j, h, k
        return
    eps = [(h, k) for h in hosts for k in range(members[h][0].ports)]
    leaf, j, cap = 0, 0, _spread(len(eps), leaves, 0)
    for h, k in eps:
        if j >= cap:
            leaf, j = leaf + 1, 0
            cap = _spread(len(eps), leaves, leaf)
        yield leaf, j, h, k
        j += 1


def host_slot(member: _Member, index: int, port: int) -> tuple[AddressPool, int] | None:
    """(pool, slot of the leaf side) of host ``index``'s ``port``-th attached port when it is L3 to the host (its
    role's point-to-point pool; the host side is slot + 1), None for an L2 port."""
    for b in member.blocks:
        if port < b.ports:
            return (b.pool, b.first + index * b.per_host + 2 * port) if b.pool is not None else None
        port -= b.ports
    return None


def leaf_host_links(plan: ClusterPlan, fp: FabricPlan) -> Iterator[tuple[int, int, str, int, int | None]]:
    """(leaf index, downlink index, host, host port, leaf-side address as an integer or None) of every host link
    of the fabric, leaf by leaf (the module docstring)."""
    members = _members(plan, fp)
    distinct = {id(m): m for m, _ in members.values()}.values()  # one per node group, not per host
    origin = {id(b.pool): int(ipaddress.ip_network(b.pool.cidr).network_address) + b.pool.first_host_offset
              for m in distinct for b in m.blocks if b.pool is not None}
    leaf0 = 0
    for su in fp.sus:
        n_leaves = len(hostlist.expand(su.leaves)) if su.leaves else 0
        for leaf, j, h, k in _su_leaf_ports(fp, members, su):
            m, i = members[h]
            found = host_slot(m, i, k)
            addr = None
            if found is not None and found[1] + 1 < found[0].capacity:
                addr = origin[id(found[0])] + found[1]
            yield leaf0 + leaf, j, h, k, addr
        leaf0 += n_leaves


def port_role(member_roles: tuple[str, ...], ports_of, k: int) -> str:
    """Which NIC role a host's ``k``-th attached port has (roles in attach order)."""
    for r in member_roles:
        n = ports_of(r)
        if k < n:
            return r
        k -= n
    return member_roles[-1] if member_roles else ""


# --- paths between fabrics ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BorderLink:
    """One cable between two routed fabrics (``routes_to``), a BGP-unnumbered session; ``leaf``/``peer_leaf``
    are the border switches (a leaf, or the top-tier switch where no leaf has a free port)."""

    fabric: str
    leaf: str
    port: str
    peer_fabric: str
    peer_leaf: str
    peer_port: str


def _border_candidates(fp: FabricPlan) -> list[tuple[str, int, int]]:
    """(switch, first free native port, free ports) where a fabric's border links may go, in preference order:
    its last leaf (a border leaf), then the first switch of its top tier and of its spine tier (a border leaf of
    the other fabric cabled in like one of this fabric's leaves). Ports in use are the tier's busiest switch's."""
    out = []
    lt = fp.tier("leaf")
    if lt.up_dedicated and lt.switch.uplinks is not None:
        out.append((hostlist.expand(lt.names)[-1], lt.native_ports + lt.up_links + 1,
                    lt.switch.uplinks.ports - lt.up_links))
    else:
        used = lt.down_ports + lt.up_links
        out.append((hostlist.expand(lt.names)[-1], used + 1, lt.native_ports - used))
    for role in ("core", "spine"):
        t = fp.tier(role)
        if t is not None and t.count:
            used = t.down_ports + -(-t.up_links // max(1, t.down_breakout))
            out.append((hostlist.expand(t.names)[0], used + 1, t.native_ports - used))
    return out


def border_end(fp: FabricPlan, n: int) -> tuple[str, str]:
    """Where fabric ``fp``'s ``n``-th border link ends: (switch, port); the port is past the switch's ports when
    none is free (UNDERLAY004)."""
    candidates = _border_candidates(fp)
    for name, first, free in candidates:
        if n < free:
            return name, f"swp{first + n}"
        n -= max(0, free)
    name, first, free = candidates[0]
    return name, f"swp{first + max(0, free) + n}"


def border_links(plan: ClusterPlan) -> tuple[BorderLink, ...]:
    """Both ends of every declared path between routed fabrics (each pair once, in blueprint order; a pair
    declared from both sides is one cable)."""
    fabrics = {f.name: f for f in routed_fabrics(plan)}
    pairs: list[tuple[str, str]] = []
    for fp in plan.fabrics:
        for other in getattr(plan.fabric_spec(fp), "routes_to", ()):  # Ethernet/RoCE only
            pair = (fp.name, other)
            if fp.name in fabrics and other in fabrics and other != fp.name and pair not in pairs \
                    and pair[::-1] not in pairs:
                pairs.append(pair)
    used: dict[str, int] = {}
    out = []
    for a, b in pairs:
        ends = []
        for name in (a, b):
            ends.append(border_end(fabrics[name], used.get(name, 0)))
            used[name] = used.get(name, 0) + 1
        out.append(BorderLink(a, ends[0][0], ends[0][1], b, ends[1][0], ends[1][1]))
        out.append(BorderLink(b, ends[1][0], ends[1][1], a, ends[0][0], ends[0][1]))
    return tuple(out)


def connected(plan: ClusterPlan, a: str, b: str) -> bool:
    """Whether fabrics ``a`` and ``b`` are the same or joined by declared paths (through others too)."""
    seen, todo = {a}, [a]
    links = border_links(plan)
    while todo:
        here = todo.pop()
        for link in links:
            if link.fabric == here and link.peer_fabric not in seen:
                seen.add(link.peer_fabric)
                todo.append(link.peer_fabric)
    return b in seen


# --- switches --------------------------------------------------------------------------------------------------

def _leaf_ports(plan: ClusterPlan, fp: FabricPlan) -> dict[int, list[Port]]:
    lt = fp.tier("leaf")
    members = _members(plan, fp)
    out: dict[int, list[Port]] = {i: [] for i in range(lt.count)}
    for leaf, j, h, k, addr in leaf_host_links(plan, fp):
        m = members[h][0]
        what = f"rail {k}" if m.roles == ("compute",) else port_role(m.roles, m.group.type.nic_count, k)
        address = ""
        if addr is not None:
            version = link_version(plan, fp)
            address = f"{address_text(version, addr)}/{31 if version == 4 else 127}"
        out[leaf].append(Port(down_port(lt, j), "host", h, what, address))
    return out


def switches(plan: ClusterPlan, fp: FabricPlan) -> tuple[Switch, ...]:
    """Every switch of a routed fabric with its ASN, loopback and the ports the plan uses (a small fabric's
    worth: the rehearsal and the tests; the renderers walk the same arithmetic without objects)."""
    if not routed(fp):
        return ()
    lt, st, ct = fp.tier("leaf"), fp.tier("spine"), fp.tier("core")
    names = {t.role: hostlist.expand(t.names) for t in fp.tiers}
    ports: dict[tuple[str, int], list[Port]] = {(t.role, i): [] for t in fp.tiers for i in range(t.count)}
    for leaf, lst in _leaf_ports(plan, fp).items():
        ports[("leaf", leaf)].extend(lst)
    if st is not None:
        spine_down: dict[int, list[Port]] = {s: [] for s in range(st.count)}
        for leaf in range(lt.count):
            for u in range(lt.up_links):
                s, m = leaf_uplink(fp, leaf, u)
                ports[("leaf", leaf)].append(Port(up_port(lt, u), "fabric", names["spine"][s], down_port(st, m)))
                spine_down[s].append(Port(down_port(st, m), "fabric", names["leaf"][leaf], up_port(lt, u)))
        for s in range(st.count):
            ports[("spine", s)].extend(sorted(spine_down[s], key=lambda p: _port_key(p.name)))
    if ct is not None:
        core_down: dict[int, list[Port]] = {c: [] for c in range(ct.count)}
        for s, start in enumerate(spine_uplink_starts(fp)):
            for v in range(spine_uplinks(fp, s)):
                c, m = divmod(start + v, ct.count)[::-1]
                ports[("spine", s)].append(Port(up_port(st, v), "fabric", names["core"][c], down_port(ct, m)))
                core_down[c].append(Port(down_port(ct, m), "fabric", names["spine"][s], up_port(st, v)))
        for c in range(ct.count):
            ports[("core", c)].extend(sorted(core_down[c], key=lambda p: _port_key(p.name)))
    index = {(t.role, n): i for t in fp.tiers for i, n in enumerate(names[t.role])}
    for link in border_links(plan):
        if link.fabric == fp.name:
            key = next(k for k in index if k[1] == link.leaf)
            ports[(key[0], index[key])].append(Port(link.port, "fabric", link.peer_leaf, link.peer_port))
    out = []
    for t in fp.tiers:
        los = loopbacks(plan, fp, t.role)
        for i, name in enumerate(names[t.role]):
            out.append(Switch(fp.name, name, t.role, t.level, asn(fp, t.role, i), los[i], tuple(ports[(t.role, i)])))
    return tuple(out)


def _port_key(name: str) -> tuple[int, int]:
    base, _, sub = name[3:].partition("s")
    return int(base), int(sub or 0)


def switch(plan: ClusterPlan, name: str) -> Switch | None:
    """One switch of any routed fabric, by name."""
    for fp in routed_fabrics(plan):
        for t in fp.tiers:
            if name in hostlist.expand(t.names):
                return next(s for s in switches(plan, fp) if s.name == name)
    return None


# --- the hosts' side --------------------------------------------------------------------------------------------

def link_version(plan: ClusterPlan, fp: FabricPlan) -> int:
    """The IP version of ``fp``'s host links (its point-to-point pools'; 4 when it has none)."""
    roles = {role for _, role in fp.attached}
    return next((p.version for p in plan.addresses if p.point_to_point and p.role in roles), 4)


def role_port_names(plan: ClusterPlan, g: GroupPlan, role: str) -> tuple[tuple[str, str], ...]:
    """(RDMA device, netdev) of each port of ``role`` from the host-interface plan (clusterctl/plan/interfaces.py);
    empty strings where no source names them."""
    return tuple((p.rdma or "", p.netdev or "") for p in role_ports(plan, g.type, role))


def rail_names(plan: ClusterPlan, g: GroupPlan) -> tuple[tuple[str, str], ...]:
    return role_port_names(plan, g, "compute")


@dataclass(frozen=True, slots=True)
class RoutedPort:
    """Port ``index`` of one NIC role of a node group, L3 to the host: the same for every host of the group but
    the address, which is ``base + host index x stride`` (the host side of its /31; the leaf side, its gateway,
    is one less)."""

    fabric: str
    index: int
    base: int
    """the address of the group's first host on this port, as an integer"""
    stride: int
    prefix: int
    """31 (IPv6: 127)"""
    table: int
    priority: int
    routes: tuple[str, ...]
    """the prefixes routed via the leaf in the port's table: the pool's (the other hosts' ports of the role and
    whatever else the site numbers from the pool, such as storage servers)"""


def routed_ports(plan: ClusterPlan, g: GroupPlan, role: str) -> tuple[RoutedPort, ...]:
    """Each port of ``role`` (compute or storage) of ``g`` that is L3 to the host on a routed RoCE fabric, in port
    order; empty when the group's ports of that role are not (L2, or no point-to-point pool). One place for the
    roce_network (rails) and host_network (storage) roles' variables and the rehearsal's addresses."""
    tables = ROLE_TABLES.get(role)
    for fp in routed_fabrics(plan):
        found = p2p_block(plan, fp, g, role) if (g.index, role) in fp.attached else None
        if found is None or tables is None:
            continue
        pool, first, per_host = found
        net = ipaddress.ip_network(pool.cidr)
        origin = int(net.network_address) + pool.first_host_offset + first
        prefix = 31 if net.version == 4 else 127
        return tuple(RoutedPort(fp.name, k, origin + 2 * k + 1, per_host, prefix, tables[0] + 1 + k, tables[1] + k,
                                (pool.cidr,)) for k in range(g.type.nic_count(role)))
    return ()


def host_links(plan: ClusterPlan, host: str, role: str) -> tuple[HostRail, ...]:
    """Each port of ``role`` of ``host`` that is L3 to the host: its /31 address, the leaf side as gateway, the
    routing table and rule priority, the leaf and port it is cabled to. Empty for hosts without such ports."""
    g = next((g for g in plan.groups if host in g.hosts), None)
    ports = routed_ports(plan, g, role) if g is not None else ()
    if not ports:
        return ()
    fp = next(f for f in plan.fabrics if f.name == ports[0].fabric)
    members = _members(plan, fp)
    m, i = members[host]
    before = sum(b.ports for b in m.blocks[:m.roles.index(role)])  # attached ports of earlier roles
    lt = fp.tier("leaf")
    leaf_names = hostlist.expand(lt.names)
    leaves = {k - before: (leaf_names[leaf], down_port(lt, j))
              for leaf, j, h, k, _addr in leaf_host_links(plan, fp) if h == host}
    names = role_port_names(plan, g, role)
    version = link_version(plan, fp)
    out = []
    for p in ports:
        n = p.base + i * p.stride
        leaf, port = leaves.get(p.index, ("", ""))
        device, netdev = names[p.index] if p.index < len(names) else ("", "")
        out.append(HostRail(fp.name, p.index, device, netdev, address_text(version, n), p.prefix,
                            address_text(version, n - 1), p.table, p.priority, leaf, port))
    return tuple(out)


def host_rails(plan: ClusterPlan, host: str) -> tuple[HostRail, ...]:
    """Each compute rail of ``host`` on a RoCE fabric (:func:`host_links`)."""
    return host_links(plan, host, "compute")
