"""What a cloud blueprint costs per hour at list price (``clusterctl/catalog/prices.yaml``).

Instances per node group x the type's on-demand price in ``cloud.region``. Static groups run all the
time; elastic groups (``node_groups[].cloud.elastic``) run only while jobs need them, so they are
counted apart as an upper bound ("up to", every node up). A type without a price in the region is
listed as unpriced and counted in no total. AWS Capacity Blocks for ML rates, where the catalog has one
for the type and region, are given next to the on-demand price: they are what a Capacity Block
reservation (as the shipped AWS blueprint uses) is charged instead. Storage services, disks, network
traffic, IP addresses and support are not counted (no sourced prices for them in the catalog).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.catalog.prices import Price, PriceList, shipped_prices
from clusterctl.plan.cloud import is_elastic
from clusterctl.plan.model import ClusterPlan

EXCLUDED = ("storage services (FSx for Lustre, Managed Lustre, Filestore, Azure Managed Lustre, NetApp Files, "
            "buckets and storage accounts)", "boot and data disks", "network traffic, NAT gateways and IP "
            "addresses", "operating-system licences other than Linux", "support plans and taxes")


@dataclass(frozen=True)
class GroupCost:
    group: str
    instance_type: str
    count: int
    elastic: bool
    price: Price | None
    """on-demand price in the region, None when the catalog has none"""
    capacity_block: Price | None

    @property
    def usd_per_hour(self) -> float | None:
        return self.price.usd_per_hour * self.count if self.price is not None else None


@dataclass(frozen=True)
class HourlyCost:
    provider: str
    region: str
    groups: tuple[GroupCost, ...]
    prices: PriceList

    def _sum(self, elastic: bool) -> float:
        return sum(g.price.usd_per_hour * g.count for g in self.groups
                   if g.price is not None and g.elastic is elastic)

    @property
    def static_usd_per_hour(self) -> float:
        """every priced static group, all the time"""
        return self._sum(False)

    @property
    def elastic_usd_per_hour_max(self) -> float:
        """every priced elastic group at full size"""
        return self._sum(True)

    @property
    def full_usd_per_hour(self) -> float:
        return self.static_usd_per_hour + self.elastic_usd_per_hour_max

    @property
    def has_elastic(self) -> bool:
        return any(g.elastic for g in self.groups)

    @property
    def unpriced(self) -> tuple[GroupCost, ...]:
        return tuple(g for g in self.groups if g.price is None)

    def used_sources(self) -> dict[str, str]:
        keys = sorted({p.source for g in self.groups for p in (g.price, g.capacity_block) if p is not None})
        return {k: self.prices.sources[k] for k in keys}


def hourly_cost(plan: ClusterPlan, prices: PriceList | None = None) -> HourlyCost | None:
    """The list-price cost of ``plan``'s cloud instances, or None for a blueprint without ``cloud:``."""
    cloud = plan.cloud
    if cloud is None:
        return None
    prices = prices if prices is not None else shipped_prices()
    groups = []
    for g in plan.groups:
        nt = g.type
        if nt.instance is None:
            continue
        name = nt.instance_name
        groups.append(GroupCost(g.name, name, g.count, is_elastic(plan, g.index),
                                prices.price(name, cloud.region),
                                prices.price(name, cloud.region, "capacity_block")))
    return HourlyCost(cloud.provider, cloud.region, tuple(groups), prices)


def usd(x: float) -> str:
    """Dollars with cents and thousands separators: $1,234.56."""
    return f"${x:,.2f}"


def breakdown(cost: HourlyCost, elastic: bool) -> str:
    """'16 × p5.48xlarge at $55.04 (us-east-2), …' for the priced static or elastic groups."""
    return ", ".join(f"{g.count:,} × {g.instance_type} at {usd(g.price.usd_per_hour)}"
                     for g in cost.groups if g.price is not None and g.elastic is elastic)
