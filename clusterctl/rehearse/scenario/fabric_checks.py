"""The fabric scenario's checks, each on the booted slice, each returning what is wrong ('' or [] when nothing):
the tests that break a rendered file (tests/e2e/test_fabric.py) call these same functions.

- :func:`wait_converged`: every leaf has a BGP route to every other leaf's host rails;
- :func:`check_ecmp`: that route has next hops through both spines (read from the leaf's kernel, ``ip -j route``);
- :func:`check_reach`: every rail address reaches the same rail of every other host with a packet of the fabric's
  MTU with DF set, from the rail's own address (so the host's source routing picks the rail), through the spines;
- :func:`check_mtu`: every cable carries the MTU with DF (whichever spine ECMP picks for a flow), and a packet of
  MTU + 1 with DF is refused;
- :func:`measure_reroute`: a spine that falls silent (its bgpd stopped with SIGSTOP and its forwarding off: no
  BGP NOTIFICATION and no link down tell the leaves) is routed around within the rendered BGP hold time.

Every node shares this machine's kernel clock, so a time read on a node (``date +%s.%N``) and here compare.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import time
from dataclasses import dataclass

from clusterctl.rehearse.fabric_slice import FabricSlice, SliceRail
from clusterctl.rehearse.node.links import Link
from clusterctl.rehearse.node.ssh import ssh
from clusterctl.rehearse.node.state import State

CONVERGE_TIMEOUT_S = 60.0
REROUTE_SLACK_S = 2.0
"""allowed beyond the hold time: the leaf's route update after the session drops, and the 0.1 s polling"""
RECOVER_TIMEOUT_S = 60.0


def _routes(state: State, node: str) -> list[dict]:
    r = ssh(state, node, "ip -j -4 route show")
    try:
        return json.loads(r.stdout or "[]")
    except ValueError:
        return []


def covering(routes: list[dict], address: str) -> dict | None:
    """The most specific route of ``routes`` (``ip -j route`` entries) containing ``address``."""
    best, best_len = None, -1
    addr = ipaddress.ip_address(address)
    for route in routes:
        dst = route.get("dst", "")
        net = ipaddress.ip_network("0.0.0.0/0" if dst == "default" else dst, strict=False)
        if addr in net and net.prefixlen > best_len:
            best, best_len = route, net.prefixlen
    return best


def next_hop_devs(route: dict) -> list[str]:
    hops = route.get("nexthops") or [route]
    return sorted(h.get("dev", "") for h in hops)


def remote_rails(sl: FabricSlice, leaf: str) -> list[SliceRail]:
    """The endpoints (rails, else loopbacks) of the slice under leaves other than ``leaf``."""
    return [r for r in sl.endpoints if r.leaf != leaf]


def spines_of(sl: FabricSlice, leaf: str, route: dict | None) -> list[str]:
    """The spines ``route`` on ``leaf`` leads to (by the cables of its next-hop ports)."""
    if route is None:
        return []
    return sorted({p for p in (sl.peer_of(leaf, d) for d in next_hop_devs(route)) if p in sl.spines})


def routes_problems(state: State, sl: FabricSlice, want_spines: int) -> list[str]:
    """For each leaf and each rail under another leaf: a missing route, or one through fewer than
    ``want_spines`` spines."""
    out = []
    for leaf in sl.leaves:
        routes = [r for r in _routes(state, leaf) if r.get("protocol") == "bgp"]
        for rail in remote_rails(sl, leaf):
            route = covering(routes, rail.address)
            spines = spines_of(sl, leaf, route)
            if len(spines) < want_spines:
                out.append(f"{leaf}: route to {rail.host} {rail.netdev} {rail.address}: "
                           + (f"{route.get('dst')} via {', '.join(spines) or 'no spine'}" if route else "no BGP route"))
    return out


def wait_converged(state: State, sl: FabricSlice, want_spines: int = 2, timeout: float = CONVERGE_TIMEOUT_S) -> list[str]:
    """Wait until every leaf has its BGP routes to the other leaves' rails through ``want_spines`` spines;
    what is still missing at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        problems = routes_problems(state, sl, want_spines)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.5)


def check_ecmp(state: State, sl: FabricSlice) -> list[str]:
    """Every leaf's route to each rail under another leaf has next hops through every spine of the slice."""
    return routes_problems(state, sl, len(sl.spines))


def ping_command(src: str, dst: str, size: int, count: int = 2) -> str:
    """``ping`` from ``src`` to ``dst`` with ``size`` bytes of ICMP payload and DF set (``-M do``)."""
    return f"ping -n -q -c {count} -i 0.2 -W 2 -M do -s {size} -I {shlex.quote(src)} {shlex.quote(dst)}"


def rail_pairs(sl: FabricSlice) -> list[tuple[SliceRail, SliceRail]]:
    """(from, to) for every rail and every other host's rail of the same rail index (else every pair of
    loopbacks)."""
    ends = sl.endpoints
    return [(a, b) for a in ends for b in ends if a.host != b.host and a.rail == b.rail]


def _source_routed(state: State, a: SliceRail, b: SliceRail) -> str:
    """'' when the host routes ``a.address -> b.address`` by ``a``'s own routing table, out of its netdev via
    its gateway (the per-rail source routing that keeps each rail's traffic on its NIC)."""
    r = ssh(state, a.host, f"ip -j route get {shlex.quote(b.address)} from {shlex.quote(a.address)}")
    try:
        got = (json.loads(r.stdout or "[]") or [{}])[0]
    except ValueError:
        got = {}
    want = (a.netdev, a.gateway, str(a.table))
    if (got.get("dev"), got.get("gateway"), str(got.get("table", "main"))) != want:
        return (f"{a.host}: {a.address} -> {b.address} leaves by {got.get('dev', '?')} via "
                f"{got.get('gateway', 'no gateway')} (table {got.get('table', 'main')}), not {a.netdev} via "
                f"{a.gateway} (table {a.table})")
    return ""


def check_reach(state: State, sl: FabricSlice, size: int | None = None) -> list[str]:
    """Every rail reaches every other host's same rail, from its own address and out of its own netdev, with
    ``size`` bytes of payload (default: the fabric MTU's worth, 28 bytes of IPv4 and ICMP headers less) and DF."""
    size = sl.mtu - 28 if size is None else size
    out = []
    for a, b in rail_pairs(sl):
        routed = _source_routed(state, a, b) if a.gateway else ""
        if routed:
            out.append(routed)
        r = ssh(state, a.host, ping_command(a.address, b.address, size))
        if r.returncode != 0:
            out.append(f"{a.host} {a.netdev} {a.address} -> {b.host} {b.address} ({size + 28} bytes, DF): "
                       + (r.stdout.strip().splitlines() or [r.stderr.strip()])[-1])
    return out


def _rail_at(sl: FabricSlice, node: str, port: str) -> SliceRail | None:
    return next((r for r in sl.rails if (r.host, r.netdev) == (node, port)), None)


def cable_ping(sl: FabricSlice, link: Link) -> tuple[str, str]:
    """(node, command) that sends one packet of the fabric MTU with DF across ``link`` and gets it answered:
    a host's rail pings its gateway; a switch pings all nodes (``ff02::1``, IPv6 link-local: the BGP unnumbered
    session's own addressing) out of its port, which only the switch at the other end hears."""
    rail = _rail_at(sl, link.a, link.a_port) or _rail_at(sl, link.b, link.b_port)
    if rail is not None:
        return rail.host, ping_command(rail.address, rail.gateway, sl.mtu - 28, count=1)
    return link.a, f"ping -6 -n -q -c 1 -W 2 -M do -s {sl.mtu - 48} ff02::1%{link.a_port}"


def check_cables(state: State, sl: FabricSlice) -> list[str]:
    """Every cable of the slice carries a packet of the fabric MTU with DF, whichever path ECMP hashes a flow to
    (one SSH session per node that sends: each line of its output is one cable's result)."""
    by_node: dict[str, list[tuple[Link, str]]] = {}
    for link in sl.links:
        node, command = cable_ping(sl, link)
        by_node.setdefault(node, []).append((link, command))
    out = []
    for node, pings in by_node.items():
        script = "; ".join(f"if {c} >/dev/null 2>&1; then echo ok; else echo failed; fi" for _, c in pings)
        said = ssh(state, node, script).stdout.split()
        for i, (link, _) in enumerate(pings):
            if i >= len(said) or said[i] != "ok":
                out.append(f"cable {link.a}:{link.a_port} - {link.b}:{link.b_port} does not carry {sl.mtu} bytes "
                           "with DF")
    return out


def check_mtu(state: State, sl: FabricSlice) -> list[str]:
    """The MTU holds end to end: every cable carries the fabric MTU with DF (:func:`check_cables`; the full-size
    end-to-end packets are :func:`check_reach`'s), and a packet of MTU + 1 bytes with DF does not get through."""
    out = check_cables(state, sl)
    for a, b in rail_pairs(sl) if sl.rails else ():  # switch ports run above the hosts' MTU
        r = ssh(state, a.host, ping_command(a.address, b.address, sl.mtu - 27, count=1).replace("-W 2", "-W 1"))
        if r.returncode == 0:
            out.append(f"{a.host} {a.address} -> {b.address}: {sl.mtu + 1} bytes with DF got through")
    return out


@dataclass
class Reroute:
    """What :func:`measure_reroute` saw."""

    spine: str
    hold_s: int
    seconds: float | None
    """from the spine falling silent until every leaf routes around it (None: not within the limit)"""
    recovered_s: float | None
    problems: list[str]


def _leaf_wait_script(sl: FabricSlice, leaf: str, spine: str, limit: float) -> str:
    """Shell run on ``leaf``: poll its routes until no route to a rail under another leaf uses a port towards
    ``spine``; print the time (``date +%s.%N``) then, or exit 1 after ``limit`` s."""
    ports = sl.ports_towards(leaf, spine)
    targets = " ".join(r.address for r in remote_rails(sl, leaf))
    uses = " || ".join(f"echo \"$r\" | grep -qw {shlex.quote(p)}" for p in ports) or "false"
    return (f"end=$(( $(date +%s) + {int(limit) + 1} )); "
            f"while :; do busy=0; for t in {targets}; do r=$(ip -4 route show match $t proto bgp); "
            f"if [ -z \"$r\" ] || {uses}; then busy=1; fi; done; "
            f"if [ $busy = 0 ]; then date +%s.%N; exit 0; fi; "
            f"[ $(date +%s) -ge $end ] && exit 1; sleep 0.1; done")


def measure_reroute(state: State, sl: FabricSlice) -> Reroute:
    """Make the first spine fall silent, time until every leaf routes around it (limit: the hold time and
    :data:`REROUTE_SLACK_S`), then bring it back and wait for both spines in every leaf's routes again."""
    spine = sl.spines[0]
    hold = sl.hold_time()
    limit = hold + REROUTE_SLACK_S
    problems: list[str] = []
    t0 = time.time()
    silence = ssh(state, spine, "pkill -STOP -x bgpd && sysctl -q -w net.ipv4.conf.all.forwarding=0")
    seconds: float | None = None
    if silence.returncode != 0:
        problems.append(f"{spine}: could not stop bgpd: {silence.stderr.strip()}")
    else:
        ends = []
        for leaf in sl.leaves:
            r = ssh(state, leaf, _leaf_wait_script(sl, leaf, spine, limit + 5), timeout=limit + 30)
            if r.returncode != 0:
                problems.append(f"{leaf}: still routes through {spine} {limit + 5:.0f} s after it fell silent")
            else:
                ends.append(float(r.stdout.strip()))
        if ends and not problems:
            seconds = max(ends) - t0
            if seconds > limit:
                problems.append(f"rerouted around {spine} after {seconds:.1f} s: more than the hold time {hold} s "
                                f"(+{REROUTE_SLACK_S:.0f} s)")
            problems += check_reach(state, sl)
    ssh(state, spine, "sysctl -q -w net.ipv4.conf.all.forwarding=1; pkill -CONT -x bgpd")
    t1 = time.monotonic()
    left = wait_converged(state, sl, len(sl.spines), RECOVER_TIMEOUT_S)
    recovered = None if left else time.monotonic() - t1
    problems += [f"after {spine} came back: {p}" for p in left]
    return Reroute(spine, hold, seconds, recovered, problems)
