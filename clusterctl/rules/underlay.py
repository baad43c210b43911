"""Underlay: the routed Ethernet/RoCE fabrics have what their switch configurations need (clusterctl/plan/underlay.py)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl import hostlist
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.roles import slurm_roles
from clusterctl.plan.underlay import border_links, connected, loopback_pool, routed_fabrics
from clusterctl.rules.base import Hit, Severity, rule


@rule("UNDERLAY001", "underlay", Severity.WARNING, "routed fabric without switch loopbacks")
def no_loopback_pool(plan: ClusterPlan) -> Iterator[Hit]:
    """Every switch of a routed Ethernet/RoCE fabric needs a loopback address: it is the BGP router id and the
    address the switch is reached at over the fabric (Cumulus Linux user guide, "Border Gateway Protocol - BGP":
    the router id is the loopback). They come from an address pool of role ``loopback``, one /32 per switch;
    without one no switch startup configuration (FRR, NVUE) is rendered for these fabrics. Only blueprints
    that plan addresses at all (an ``addressing:`` section) are checked, and only fabrics of more than one
    switch (a single switch has no BGP peer)."""
    if not plan.blueprint.addressing or loopback_pool(plan) is not None:
        return
    # a fabric of one switch has no BGP peer: its file is optional
    fabrics = tuple(f for f in routed_fabrics(plan) if f.switch_count > 1)
    if not fabrics:
        return
    switches = sum(f.switch_count for f in fabrics)
    names = ", ".join(f.name for f in fabrics)
    yield Hit(("addressing",),
              f"no address pool of role loopback: the {switches:,} switches of fabrics {names} get no loopback or "
              "BGP router id, and no switch configuration is rendered for them",
              "add e.g. `loopback: {cidr: 10.255.0.0/22, role: loopback}` under addressing (a private range no "
              "other pool uses, one address per switch)")


@rule("UNDERLAY002", "underlay", Severity.ERROR, "switch loopbacks not IPv4")
def loopback_pool_ipv6(plan: ClusterPlan) -> Iterator[Hit]:
    """A switch's loopback is its BGP router id, and a BGP identifier is a 4-octet number written as an IPv4
    address (RFC 6286; FRR ``bgp router-id A.B.C.D``, NVUE ``router bgp router-id``): the pool of role loopback
    must be IPv4. (Host links may be IPv6: BGP unnumbered carries both address families.)"""
    pool = loopback_pool(plan)
    if pool is not None and pool.version != 4:
        yield Hit(pool.path + ("cidr",),
                  f"addressing.{pool.name} ({pool.cidr}) is IPv6: switch loopbacks are the BGP router ids, which are "
                  "IPv4 addresses", "use an IPv4 prefix, e.g. 10.255.0.0/22")


def _inband_fabrics(plan: ClusterPlan, groups) -> set[str]:
    return {f.name for f in plan.fabrics_on("inband", *groups)} if groups else set()


@rule("UNDERLAY003", "underlay", Severity.WARNING, "no declared path between in-band networks")
def no_path_between_inband(plan: ClusterPlan) -> Iterator[Hit]:
    """Slurm's controllers must reach every compute node's in-band address (slurmctld to slurmd, and back) and
    login nodes must reach them too (srun). When their in-band ports are cabled to different Ethernet/RoCE
    fabrics, the path between those fabrics is declared (``routes_to``: the fabrics' border leaves peer over
    BGP) rather than assumed. Checked: every pair of in-band fabrics of the controllers' and login nodes'
    groups on one side and the compute groups on the other is joined by declared paths, directly or through
    other fabrics. Storage servers are outside the blueprint (their network is the site's) and not checked."""
    roles = slurm_roles(plan)
    if not roles.controllers:
        return
    service = [g for g in plan.groups if g.role == "login" or any(h in roles.controllers for h in g.hosts[:64])]
    compute = [g for g in plan.groups if g.role == "compute"]
    for near in sorted(_inband_fabrics(plan, service)):
        for far in sorted(_inband_fabrics(plan, compute)):
            if connected(plan, near, far):
                continue
            fp = next(f for f in plan.fabrics if f.name == near)
            yield Hit(fp.path + ("routes_to",),
                      f"fabric {near} (in-band of the Slurm controllers or login nodes) and fabric {far} (in-band of "
                      f"the compute nodes) have no declared path between them: slurmctld, slurmd and srun would "
                      "rely on routing nobody configured",
                      f"add routes_to: [{far}] to fabric {near} (their border leaves peer over BGP)")


@rule("UNDERLAY004", "underlay", Severity.ERROR, "no port left for a path between fabrics")
def border_port_budget(plan: ClusterPlan) -> Iterator[Hit]:
    """A declared path (``routes_to``) takes one port at each end: on the fabric's last leaf (its border leaf)
    when that leaf has a port its downlinks and uplinks leave free, else on the first switch of its top tier or
    spine tier. A fabric whose switches use every port has no room for it."""
    fabrics = {f.name: f for f in routed_fabrics(plan)}
    for link in border_links(plan):
        fp = fabrics[link.fabric]
        tier = next(t for t in fp.tiers if link.leaf in hostlist.expand(t.names))
        ports = tier.native_ports + (tier.switch.uplinks.ports if tier.up_dedicated and tier.switch.uplinks else 0)
        if int(link.port[3:]) > ports:
            yield Hit(fp.path + ("routes_to",),
                      f"fabric {link.fabric}: the path to {link.peer_fabric} needs a free port, and its border leaf "
                      f"{link.leaf} and its top-tier switches use all theirs",
                      f"free a port: fewer leaf uplinks or downlinks on fabric {link.fabric} (leaf_uplinks, su_nodes)")
