"""Vendor-neutral switch startup files of a routed fabric: FRR's ``frr.conf`` and an ifupdown2 ``interfaces``
file per switch (what FRR does not set: addresses and MTU), from :mod:`clusterctl.plan.underlay`.

``frr.conf`` (FRR 8.4 syntax, the routing suite Cumulus Linux runs underneath NVUE; FRR user guide "BGP"):
``frr defaults datacenter``; ``router bgp <asn>`` with ``bgp router-id <loopback>``; ``bgp bestpath as-path
multipath-relax`` (ECMP over paths through different spines, whose AS paths differ in a three-tier fabric:
RFC 7938 section 6.3) and ``maximum-paths``; one peer group ``FABRIC`` with ``remote-as external`` and the BGP
timers (keepalive 3 s, hold 9 s: a dead spine is withdrawn within 9 s), every fabric port a BGP-unnumbered
neighbor (``neighbor swpN interface peer-group FABRIC``: Cumulus Linux user guide "Border Gateway Protocol -
BGP", BGP unnumbered); ``redistribute connected`` through a route map that lets through only the loopback
(/32 from the loopback pool) and the host links (/31 from the compute or storage pool): the hosts' subnets and the
loopback are advertised, nothing else the switch happens to be connected to.

``interfaces`` (ifupdown2, /etc/network/interfaces as Cumulus Linux writes it; Cumulus Linux user guide
"Interface Configuration and Management"): the loopback address, every used port with the switch MTU (9216),
host links with their /31. Breakouts are the switch's port configuration (NVUE ``link breakout``, on Cumulus
/etc/cumulus/ports.conf), named here only as subport names (``swp1s0``).
"""

from __future__ import annotations

from clusterctl.plan import underlay
from clusterctl.plan.model import ClusterPlan, FabricPlan

PEER_GROUP = "FABRIC"
ROUTE_MAP = "UNDERLAY"


def prefix_lists(plan: ClusterPlan, fp: FabricPlan) -> list[str]:
    """What a switch of ``fp`` advertises: its loopback (/32 of the loopback pool) and, on a RoCE fabric, the
    host links (/31 of the point-to-point pools of the roles it attaches: compute, storage)."""
    out = []
    lo = underlay.loopback_pool(plan)
    if lo is not None:
        out.append(f"{lo.cidr} ge {32 if lo.version == 4 else 128}")
    if fp.kind == "roce":
        roles = {role for _, role in fp.attached}
        out.extend(f"{p.cidr} ge {31 if p.version == 4 else 127}" for p in plan.addresses
                   if p.point_to_point and p.role in roles)
    return out


def frr_tail(plan: ClusterPlan, fp: FabricPlan) -> str:
    """What follows the neighbors in every ``frr.conf`` of ``fp``: address families, prefix lists, route map."""
    lists = prefix_lists(plan, fp)
    v4 = [p for p in lists if ":" not in p]
    v6 = [p for p in lists if ":" in p]
    tail = [" !", " address-family ipv4 unicast", f"  redistribute connected route-map {ROUTE_MAP}",
            f"  maximum-paths {underlay.MAXIMUM_PATHS}", " exit-address-family"]
    if v6:
        tail += [" !", " address-family ipv6 unicast", f"  neighbor {PEER_GROUP} activate",
                 f"  redistribute connected route-map {ROUTE_MAP}6",
                 f"  maximum-paths {underlay.MAXIMUM_PATHS}", " exit-address-family"]
    tail += ["exit", "!"]
    tail += [f"ip prefix-list {ROUTE_MAP} seq {10 * (k + 1)} permit {p}" for k, p in enumerate(v4)]
    tail += [f"ipv6 prefix-list {ROUTE_MAP}6 seq {10 * (k + 1)} permit {p}" for k, p in enumerate(v6)]
    tail += ["!", f"route-map {ROUTE_MAP} permit 10", f" match ip address prefix-list {ROUTE_MAP}", "exit", "!"]
    if v6:
        tail += [f"route-map {ROUTE_MAP}6 permit 10", f" match ipv6 address prefix-list {ROUTE_MAP}6", "exit", "!"]
    return "\n".join(tail) + "\n"


def frr_conf(comments: str, name: str, asn: int, loopback: str, fabric_ports: list[str], tail: str) -> str:
    """One switch's ``frr.conf`` (the module docstring)."""
    neighbors = "".join(f" neighbor {p} interface peer-group {PEER_GROUP}\n" for p in fabric_ports)
    return (f"{comments}frr version 8.4\nfrr defaults datacenter\nhostname {name}\nlog syslog informational\n"
            f"service integrated-vtysh-config\n!\nrouter bgp {asn}\n bgp router-id {loopback}\n"
            " bgp bestpath as-path multipath-relax\n no bgp ebgp-requires-policy\n"
            f" timers bgp {underlay.BGP_KEEPALIVE} {underlay.BGP_HOLD}\n"
            f" neighbor {PEER_GROUP} peer-group\n neighbor {PEER_GROUP} remote-as external\n"
            f" neighbor {PEER_GROUP} timers {underlay.BGP_KEEPALIVE} {underlay.BGP_HOLD}\n"
            f" neighbor {PEER_GROUP} timers connect {underlay.BGP_CONNECT_RETRY}\n{neighbors}{tail}")


def interfaces_file(comments: str, loopback: str, host_ports: list[tuple[str, str]], fabric_ports: list[str],
                    mtu: int) -> str:
    """One switch's ifupdown2 ``interfaces`` (the module docstring)."""
    lo_prefix = "/32" if ":" not in loopback else "/128"
    parts = [comments, "auto lo\niface lo inet loopback\n"]
    if loopback:
        parts.append(f"    address {loopback}{lo_prefix}\n")
    parts.append("\n")
    for port, address in host_ports:
        addr = f"    address {address}\n" if address else ""
        parts.append(f"auto {port}\niface {port}\n{addr}    mtu {mtu}\n\n")
    for port in fabric_ports:
        parts.append(f"auto {port}\niface {port}\n    mtu {mtu}\n\n")
    return "".join(parts)

