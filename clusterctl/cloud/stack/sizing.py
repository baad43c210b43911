"""How big a managed file system must be, one policy for every provider, each provider's sourced tiers in a table.

The policy (:func:`sized`): the capacity the data needs, rounded up to the tier's increments, at the slowest tier
whose throughput at that capacity meets ``max(read, write)``; when no tier gets there, the fastest tier with the
capacity grown until it does (and the result says so: :attr:`StorageSize.grown`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

GIB_PER_TB = 1e12 / 2**30
TIB_PER_TB = 1e12 / 2**40
MIB_PER_MB = 1e6 / 2**20


def step_up(value: float, minimum: float, step: float) -> int:
    """The smallest size of ``minimum``, then multiples of ``step``, that holds ``value`` (a float a hair above a
    multiple, from a unit conversion, still rounds to that multiple)."""
    if value <= minimum:
        return int(minimum)
    return int(math.ceil(value / step - 1e-9) * step)


@dataclass(frozen=True)
class Tier:
    """One throughput tier (SKU, service level) of a storage service and its capacity increments."""
    name: str
    """what the provider calls it: the per-unit throughput, SKU or service level"""
    throughput_per_tib: int
    """MB/s per TiB of capacity (MiB/s for Azure NetApp Files, as the service states it)"""
    minimum: int
    step: int
    """capacity increments, in the table's unit: ``minimum``, then multiples of ``step``"""


class SizingTable(NamedTuple):
    """A storage service's tiers, slowest first, with the source of their figures."""
    service: str
    unit: str
    """GiB or TiB: the unit the service's capacity is given in"""
    tiers: tuple[Tier, ...]
    """slowest first"""
    source: str
    throughput_unit: str = "MB/s"


FSX_LUSTRE = SizingTable("FSx for Lustre PERSISTENT_2", "GiB", tuple(
    Tier(str(unit), unit, 1200, 2400) for unit in (125, 250, 500, 1000)),
    "FSx for Lustre: SSD capacity 1,200 GiB, 2,400 GiB, then multiples of 2,400 GiB; per-unit storage "
    "throughput 125, 250, 500 or 1,000 MB/s per TiB")
MANAGED_LUSTRE = SizingTable("Managed Lustre", "GiB", (
    Tier("125", 125, 72_000, 72_000), Tier("250", 250, 36_000, 36_000), Tier("500", 500, 18_000, 18_000),
    Tier("1000", 1000, 9_000, 9_000)),
    "cloud.google.com/managed-lustre/docs/performance-tiers (1000: 9,000 GiB minimum and step; 500: 18,000; "
    "250: 36,000; 125: 72,000)")
AZURE_MANAGED_LUSTRE = SizingTable("Azure Managed Lustre", "TiB", tuple(
    Tier(f"AMLFS-Durable-Premium-{unit}", unit, size, size)
    for unit, size in ((40, 48), (125, 16), (250, 8), (500, 4))),
    "MicrosoftDocs azure-managed-lustre create-file-system-portal.md, \"Throughput configurations\" (40: 48/48 "
    "TiB, 125: 16/16, 250: 8/8, 500: 4/4)")
AZURE_NETAPP_FILES = SizingTable("Azure NetApp Files", "TiB", (
    Tier("Standard", 16, 1, 1), Tier("Premium", 64, 1, 1), Tier("Ultra", 128, 1, 1)),
    "Azure NetApp Files service levels: 16, 64, 128 MiB/s per TiB of capacity-pool quota, 1 TiB steps",
    throughput_unit="MiB/s")

TABLES = {("aws", "parallel"): FSX_LUSTRE, ("gcp", "parallel"): MANAGED_LUSTRE,
          ("azure", "parallel"): AZURE_MANAGED_LUSTRE, ("azure", "nfs"): AZURE_NETAPP_FILES}
"""(provider, storage tier) -> the service that holds it and its sizes (GCP's Filestore has one throughput per
capacity: clusterctl.cloud.pulumi.gcp.filestore_capacity_gib)"""


@dataclass(frozen=True)
class StorageSize:
    table: SizingTable
    tier: Tier
    capacity: int
    """in ``table.unit``"""
    requested: int
    """the capacity the data alone needs at this tier"""
    required: float
    """the throughput the storage tier asks for, in ``table.throughput_unit``"""

    @property
    def grown(self) -> bool:
        return self.capacity > self.requested

    @property
    def throughput(self) -> float:
        return self.capacity * (1 if self.table.unit == "TiB" else 1 / 1024) * self.tier.throughput_per_tib

    @property
    def note(self) -> str:
        t = self.table
        text = (f"{self.capacity} {t.unit} at {self.tier.throughput_per_tib} {t.throughput_unit}/TiB = "
                f"{self.throughput:.0f} {t.throughput_unit} (tier needs {self.required:.0f} {t.throughput_unit})")
        if self.grown:
            text += (f"; capacity grown from {self.requested} {t.unit} because even "
                     f"{self.tier.throughput_per_tib} {t.throughput_unit}/TiB cannot reach the tier's bandwidth "
                     f"at the requested size")
        return text


def sized(table: SizingTable, capacity_tb: float, read_gb_per_s: float, write_gb_per_s: float) -> StorageSize:
    """The size of a storage tier of ``capacity_tb`` that must read and write at the given rates (the policy of
    the module's docstring)."""
    data = capacity_tb * (TIB_PER_TB if table.unit == "TiB" else GIB_PER_TB)
    required = max(read_gb_per_s, write_gb_per_s) * 1000 * (MIB_PER_MB if table.throughput_unit == "MiB/s" else 1)
    for tier in table.tiers:
        size = StorageSize(table, tier, step_up(data, tier.minimum, tier.step), 0, required)
        if size.throughput >= required:
            return StorageSize(table, tier, size.capacity, size.capacity, required)
    tier = table.tiers[-1]
    per_unit = tier.throughput_per_tib * (1 if table.unit == "TiB" else 1 / 1024)
    return StorageSize(table, tier, step_up(max(data, required / per_unit), tier.minimum, tier.step),
                       step_up(data, tier.minimum, tier.step), required)
