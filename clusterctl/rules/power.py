"""Power: rack budgets, feeds under redundancy, and the site's IT power."""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan, RackPlan
from clusterctl.rules.base import Hit, Severity, profiled_racks, rack_budget_hit, rule


def breakdown(rack: RackPlan) -> str:
    """``4 × dgx-h100 at 10.2 kW + 2 × qm9700 at 1.72 kW``"""
    return " + ".join(f"{i.count} × {i.label} at {i.kw_each:g} kW" for i in rack.items)


@rule("POWER001", "power", Severity.ERROR, "rack power over budget")
def rack_power_budget(plan: ClusterPlan) -> Iterator[Hit]:
    """Each rack's maximum draw (nodes at their maximum system power, switches, rack-system overhead)
    must fit the rack profile's ``power_kw``. Racks are budgeted at nameplate maximum, not typical, because
    synchronous training steps drive every GPU in the rack to its limit at the same moment."""
    for rack, prof in profiled_racks(plan):
        if rack.power_kw > prof.power_kw + 1e-9:
            yield rack_budget_hit(rack, "power_kw",
                                  f"rack {rack.name} draws {rack.power_kw:.1f} kW of a {prof.power_kw:.1f} kW budget "
                                  f"({breakdown(rack)})",
                                  f"raise rack_profiles.{rack.profile_name}.power_kw or move nodes to another rack "
                                  "(per_rack)",
                                  f"{rack.power_kw:.1f} kW of {prof.power_kw:.1f} kW")


def usable_feed_kw(prof) -> tuple[float, int]:
    """(kW the rack may draw continuously with the worst allowed feed failure, feeds that remain)."""
    feed_kw = prof.feed_kw if prof.feed_kw is not None else prof.power_kw
    if prof.redundancy == "2N":
        remaining = prof.feeds // 2
    elif prof.redundancy == "N+1":
        remaining = prof.feeds - 1
    else:
        remaining = prof.feeds
    return remaining * feed_kw * prof.continuous_load_factor, remaining


@rule("POWER002", "power", Severity.ERROR, "rack feeds cannot carry the rack under their redundancy")
def rack_feed_capacity(plan: ClusterPlan) -> Iterator[Hit]:
    """With A/B (2N) feeds, half of the feeds must carry the whole rack when the other side fails; with
    N+1, all but one. A breaker may carry only ``continuous_load_factor`` of its rating continuously (80 %
    under NEC 210.20 for standard breakers), and training is a continuous load."""
    seen = set()
    for rack, prof in profiled_racks(plan):
        usable, remaining = usable_feed_kw(prof)
        if remaining < 1:
            if rack.profile_name not in seen:
                seen.add(rack.profile_name)
                yield Hit(("rack_profiles", rack.profile_name, "redundancy"),
                          f"{prof.redundancy} redundancy with {prof.feeds} feed(s) leaves no feed after a failure",
                          "use at least 2 feeds for N+1 or 2N, or redundancy: N")
            continue
        if rack.power_kw > usable + 1e-9:
            feed_kw = prof.feed_kw if prof.feed_kw is not None else prof.power_kw
            field = "feed_kw" if prof.feed_kw is not None else "feeds"
            yield rack_budget_hit(rack, field,
                                  f"rack {rack.name} draws {rack.power_kw:.1f} kW but with {prof.redundancy} feeds "
                                  f"only {remaining} × {feed_kw:g} kW × {prof.continuous_load_factor:g} continuous = "
                                  f"{usable:.1f} kW survive a feed failure",
                                  f"raise rack_profiles.{rack.profile_name}.feed_kw, add feeds, or put fewer nodes in "
                                  "the rack",
                                  f"{rack.power_kw:.1f} kW, {usable:.1f} kW after a feed failure")


@rule("POWER003", "power", Severity.ERROR, "odd feed count for 2N")
def feeds_for_redundancy(plan: ClusterPlan) -> Iterator[Hit]:
    """2N (A/B) power needs an even number of feeds split across two independent sources."""
    for name, prof in sorted(plan.blueprint.rack_profiles.items()):
        if prof.redundancy == "2N" and prof.feeds % 2:
            yield Hit(("rack_profiles", name, "feeds"),
                      f"rack profile {name} declares 2N redundancy with {prof.feeds} feeds; A/B needs an even count",
                      "use 2 or 4 feeds, or redundancy: N+1")


@rule("POWER004", "power", Severity.ERROR, "site IT power exceeded")
def site_power(plan: ClusterPlan) -> Iterator[Hit]:
    """The sum of every rack's maximum draw plus switches outside racks must fit the site's IT power.
    Above 90 % a warning: there is no headroom for growth or for a second cluster phase."""
    site = plan.blueprint.site
    if site is None:
        return
    total = plan.it_power_kw
    share = total / site.it_power_kw
    detail = (f"{sum(r.power_kw for r in plan.racks):.1f} kW in racks"
              + (f" + {plan.unplaced_switch_kw:.1f} kW switches without a rack" if plan.unplaced_switch_kw else ""))
    if share > 1.0:
        yield Hit(("site", "it_power_kw"),
                  f"the cluster draws {total:.1f} kW ({detail}) of the site's {site.it_power_kw:g} kW IT power",
                  "reduce the node count or raise site.it_power_kw")
    elif share > 0.9:
        yield Hit(("site", "it_power_kw"),
                  f"the cluster draws {total:.1f} kW, {share:.0%} of the site's {site.it_power_kw:g} kW IT power",
                  "plan headroom for growth", Severity.WARNING)
