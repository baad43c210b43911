"""The ports of every switch of a routed fabric, tier by tier, as the switch files need them: names and the
host links' switch-side addresses, from :mod:`clusterctl.plan.underlay`'s arithmetic without an object per port
(a 100,000-GPU fabric has ~330,000 switch ports).

:func:`tier_ports` yields per switch of a tier ``(index, name, asn, loopback, host ports, fabric ports)``: host
ports are ``(port, address with prefix or "")`` for every downlink the plan reserves on a leaf (a host's, an
extra endpoint's or a spare of a partly filled scalable unit), fabric ports the BGP-unnumbered links in port
order (a leaf's uplinks; a spine's leaf links, then its core links; a core's spine links).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl import hostlist
from clusterctl.plan import underlay
from clusterctl.plan.allocations import address_text
from clusterctl.plan.model import ClusterPlan, FabricPlan, SwitchTier

SwitchPorts = tuple[int, str, int, str, list[tuple[str, str]], list[str]]


def _host_addresses(plan: ClusterPlan, fp: FabricPlan) -> dict[int, dict[int, str]]:
    """leaf index -> downlink index -> the leaf side of the host link with its prefix (addressed links only)."""
    out: dict[int, dict[int, str]] = {}
    if fp.kind != "roce" or not any(p.point_to_point for p in plan.addresses):
        return out  # only a RoCE fabric's compute and storage ports are addressed (underlay: the module docstring)
    v4 = underlay.link_version(plan, fp) == 4
    suffix = "/31" if v4 else "/127"
    for leaf, j, _host, _port, addr in underlay.leaf_host_links(plan, fp):
        if addr is None:
            continue
        out.setdefault(leaf, {})[j] = address_text(4 if v4 else 6, addr) + suffix
    return out


def _border_ports(plan: ClusterPlan, fp: FabricPlan) -> dict[str, list[str]]:
    """switch -> its ports on paths to other fabrics (``routes_to``): more BGP-unnumbered fabric ports."""
    out: dict[str, list[str]] = {}
    for link in underlay.border_links(plan):
        if link.fabric == fp.name:
            out.setdefault(link.leaf, []).append(link.port)
    return out


def _down_names(tier: SwitchTier, count: int) -> list[str]:
    return [underlay.down_port(tier, j) for j in range(count)]


def _up_names(tier: SwitchTier, count: int) -> list[str]:
    return [underlay.up_port(tier, u) for u in range(count)]


def tier_ports(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier) -> Iterator[SwitchPorts]:
    """Every switch of ``tier`` with its ASN, loopback, host ports and fabric ports (the module docstring)."""
    names = hostlist.expand(tier.names)
    loopbacks = underlay.loopbacks(plan, fp, tier.role)
    if tier.role == "leaf":
        addresses = _host_addresses(plan, fp)
        downs = _down_names(tier, tier.down_links)
        ups = _up_names(tier, tier.up_links) if fp.tier("spine") is not None else []
        border = _border_ports(plan, fp)
        for i, name in enumerate(names):
            mine = addresses.get(i, {})
            host = [(p, mine.get(j, "")) for j, p in enumerate(downs)]
            yield i, name, underlay.asn(fp, "leaf", i), loopbacks[i], host, ups + border.get(name, [])
        return
    border = _border_ports(plan, fp)
    if tier.role == "spine":
        downs = _down_names(tier, tier.down_links)
        ups = _up_names(tier, max(tier.up_links, 0)) if fp.tier("core") is not None else []
        for i, name in enumerate(names):
            d, u = underlay.spine_downlinks(fp, i), underlay.spine_uplinks(fp, i)
            yield i, name, underlay.asn(fp, "spine", i), loopbacks[i], [], downs[:d] + (
                ups[:u] if u <= len(ups) else _up_names(tier, u)) + border.get(name, [])
        return
    total = sum(underlay.spine_uplinks(fp, s) for s in range(fp.tier("spine").count))
    downs = _down_names(tier, tier.down_links)
    for i, name in enumerate(names):
        n = total // tier.count + (1 if i < total % tier.count else 0)
        yield i, name, underlay.asn(fp, tier.role, i), loopbacks[i], [], (downs[:n] if n <= len(downs) else
                                                                         _down_names(tier, n)) + border.get(name, [])
