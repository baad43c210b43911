"""Point-to-point cables between rehearsal nodes: a veth pair with one end in each node's network namespace,
each end named as its node names the port (``swp3`` on a switch, the rail's netdev ``enp27s0np0`` on a host).

The nodes' ``eth0`` (the rehearsal bridge) stays what it is: a switch's management port, a host's SSH path. A
cable is created after every node of the rehearsal is launched (both namespaces exist by then), directly inside
the two namespaces (``ip link add NAME netns A type veth peer name PEER netns B``): no end ever exists in the
machine's namespace under a temporary name, so a crash between two commands leaves nothing outside the nodes'
namespaces, and deleting a node's namespace (``down``) destroys its ends and, with them, their peers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clusterctl.rehearse import RehearsalError

IFNAME_MAX = 15
"""the kernel's IFNAMSIZ less its NUL"""
IFNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")
RESERVED = ("lo", "eth0")
"""names a node already has: the loopback and its port on the rehearsal bridge"""


@dataclass(frozen=True, order=True)
class Link:
    """One cable: node ``a``'s port ``a_port`` to node ``b``'s port ``b_port``, both ends at ``mtu``."""

    a: str
    a_port: str
    b: str
    b_port: str
    mtu: int = 1500

    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return (self.a, self.a_port), (self.b, self.b_port)


def check_links(links: Sequence[Link], nodes: Iterable[str]) -> None:
    """Refuse cables whose names the kernel would refuse, that end at a node not booted, or that use one port
    twice."""
    known = set(nodes)
    seen: set[tuple[str, str]] = set()
    for link in links:
        for node, port in link.ends():
            if node not in known:
                raise RehearsalError(f"cable {link.a}:{link.a_port} - {link.b}:{link.b_port} ends at {node}, "
                                     "which is not a rehearsal node", "boot the node, or drop the cable")
            if not IFNAME.match(port) or port in RESERVED:
                raise RehearsalError(f"port name {port!r} of {node} cannot be a Linux interface name "
                                     f"(at most {IFNAME_MAX} characters of letters, digits, '_', '.', '-'; "
                                     f"not {' or '.join(RESERVED)})", "name the port as its node names it")
            if (node, port) in seen:
                raise RehearsalError(f"port {port} of {node} has two cables", "one cable per port")
            seen.add((node, port))
        if link.a == link.b:
            raise RehearsalError(f"cable {link.a}:{link.a_port} - {link.b_port} loops back to its node",
                                 "a cable joins two nodes")
        if not 68 <= link.mtu <= 65535:
            raise RehearsalError(f"cable {link.a}:{link.a_port} MTU {link.mtu} is out of 68..65535",
                                 "a real MTU (9216, 9000, 1500)")


def link_commands(link: Link, netns_of: dict[str, str]) -> list[list[str]]:
    """The ``ip`` commands that create ``link`` between the nodes' namespaces and bring both ends up."""
    ns_a, ns_b = netns_of[link.a], netns_of[link.b]
    return [
        ["ip", "link", "add", link.a_port, "netns", ns_a, "mtu", str(link.mtu), "type", "veth",
         "peer", "name", link.b_port, "netns", ns_b, "mtu", str(link.mtu)],
        ["ip", "-n", ns_a, "link", "set", link.a_port, "up"],
        ["ip", "-n", ns_b, "link", "set", link.b_port, "up"],
    ]
