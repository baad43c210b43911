"""Underlay: the routed Ethernet/RoCE fabrics have what their switch configurations need (clusterctl/plan/underlay.py)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.underlay import loopback_pool, routed_fabrics
from clusterctl.rules.base import Hit, Severity, rule


@rule("UNDERLAY001", "fabric", Severity.WARNING, "routed fabric without switch loopbacks")
def no_loopback_pool(plan: ClusterPlan) -> Iterator[Hit]:
    """Every switch of a routed Ethernet/RoCE fabric needs a loopback address: it is the BGP router id and the
    address the switch is reached at over the fabric (Cumulus Linux user guide, "Border Gateway Protocol - BGP":
    the router id is the loopback). They come from an address pool of role ``loopback``, one /32 per switch;
    without one no switch startup configuration (FRR, NVUE) is rendered for these fabrics. Only blueprints
    that plan addresses at all (an ``addressing:`` section) are checked."""
    if not plan.blueprint.addressing or loopback_pool(plan) is not None:
        return
    fabrics = routed_fabrics(plan)
    if not fabrics:
        return
    switches = sum(f.switch_count for f in fabrics)
    names = ", ".join(f.name for f in fabrics)
    yield Hit(("addressing",),
              f"no address pool of role loopback: the {switches:,} switches of fabrics {names} get no loopback or "
              "BGP router id, and no switch configuration is rendered for them",
              "add e.g. `loopback: {cidr: 10.255.0.0/22, role: loopback}` under addressing (a private range no "
              "other pool uses, one address per switch)")
