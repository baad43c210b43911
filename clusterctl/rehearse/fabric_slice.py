"""The slice of a routed Ethernet/RoCE fabric the ``fabric`` scenario boots (docs/rehearse.md, "The fabric
scenario"): two leaves, two spines, and one host under each leaf, cabled as the plan cables them.

A slice is a plain description: the switches with their rendered FRR configuration (and the rendered interfaces
file that sets what FRR cannot: MTU, port addresses), the hosts' rails with the address, gateway and routing
table the plan gives them, and the cables (:class:`clusterctl.rehearse.node.links.Link`) between the nodes, each
end named as its node names the port (``swpN`` on a switch, the rail's netdev on a host). The scenario's steps
configure and check the nodes from it; :mod:`clusterctl.rehearse.fabric_plan` builds it from a plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterctl.rehearse.node.links import Link

FRR_DEFAULT_TIMERS = {"datacenter": (3, 9), "traditional": (60, 180)}
"""BGP keepalive and hold time (s) of FRR's ``frr defaults`` profiles when a configuration states none (FRR user
guide, "BGP": "timers bgp KEEPALIVE HOLDTIME"; the datacenter profile's 3/9 and the traditional 60/180)"""
TIMERS = re.compile(r"^\s*(?:timers bgp|neighbor \S+ timers) (\d+) (\d+)\s*$", re.M)
"""``timers bgp K H`` (the router's) and ``neighbor X timers K H`` (a peer's or peer group's)"""
DEFAULTS = re.compile(r"^\s*frr defaults (\S+)\s*$", re.M)
ROUTER_BGP = re.compile(r"^router bgp (\d+)\s*$", re.M)


@dataclass(frozen=True)
class SliceSwitch:
    """A switch of the slice and its rendered files."""

    name: str
    role: str
    """``leaf`` or ``spine``"""
    frr_conf: str
    """the rendered ``frr.conf`` (text)"""
    interfaces: str = ""
    """the rendered interfaces file (ifupdown2 syntax: ``iface swpN`` stanzas with ``mtu`` and ``address``)"""
    source: str = ""
    """the rendered path of ``frr_conf`` (for messages)"""

    @property
    def asn(self) -> int | None:
        m = ROUTER_BGP.search(self.frr_conf)
        return int(m.group(1)) if m else None

    def timers(self) -> tuple[int, int]:
        """(keepalive, hold) in seconds: the longest the configuration states (router or neighbor ``timers``), else
        its defaults profile's."""
        stated = TIMERS.findall(self.frr_conf)
        if stated:
            return max((int(k), int(h)) for k, h in stated)
        m = DEFAULTS.search(self.frr_conf)
        return FRR_DEFAULT_TIMERS.get(m.group(1) if m else "traditional", FRR_DEFAULT_TIMERS["traditional"])


@dataclass(frozen=True)
class SliceRail:
    """One rail of a host: the netdev the plan names, its address, the leaf port it is cabled to, the gateway
    and routing table of its source routing."""

    host: str
    rail: int
    netdev: str
    address: str
    """without prefix length"""
    prefix: int
    gateway: str
    table: int
    leaf: str
    role: str = "compute"
    """the NIC role of the port: ``compute`` (a RoCE rail, the roce_network role's) or ``storage`` (a storage port
    of a converged fabric, the host_network role's); ``rail`` is the port's index within its role"""


@dataclass(frozen=True)
class FabricSlice:
    """What the scenario boots of one fabric and what it expects of it."""

    fabric: str
    mtu: int
    """the host MTU of the fabric's rails (the largest packet a host sends)"""
    switches: tuple[SliceSwitch, ...]
    rails: tuple[SliceRail, ...]
    links: tuple[Link, ...]
    hosts_group: str = ""
    """the node group of the hosts (the roce_network role's group variables are that group's)"""
    loopbacks: tuple[tuple[str, str], ...] = ()
    """(leaf, loopback address) of the two leaves: what must reach each other when no host rail is addressed"""

    def switch(self, name: str) -> SliceSwitch:
        return next(s for s in self.switches if s.name == name)

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.switches if s.role == "leaf")

    @property
    def spines(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.switches if s.role == "spine")

    @property
    def endpoints(self) -> tuple[SliceRail, ...]:
        """The addresses that must reach each other: the hosts' rails, else the leaves' loopbacks (each as a
        "rail" of its leaf, ``lo``, with no gateway)."""
        if self.rails:
            return self.rails
        return tuple(SliceRail(leaf, 0, "lo", address, 32, "", 0, leaf) for leaf, address in self.loopbacks)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.host for r in self.rails))

    def hosts_of(self, role: str) -> tuple[str, ...]:
        """The hosts with addressed ports of ``role``."""
        return tuple(dict.fromkeys(r.host for r in self.rails if r.role == role))

    def hold_time(self) -> int:
        """The longest BGP hold time of the slice's switches: a silent spine is dropped within it."""
        return max(s.timers()[1] for s in self.switches)

    def peer_of(self, node: str, port: str) -> str | None:
        """The node at the other end of ``node``'s ``port``, if cabled."""
        for link in self.links:
            if (link.a, link.a_port) == (node, port):
                return link.b
            if (link.b, link.b_port) == (node, port):
                return link.a
        return None

    def ports_towards(self, node: str, peer: str) -> tuple[str, ...]:
        """``node``'s ports cabled to ``peer``."""
        out = [l.a_port for l in self.links if (l.a, l.b) == (node, peer)]
        out += [l.b_port for l in self.links if (l.b, l.a) == (node, peer)]
        return tuple(sorted(out))
