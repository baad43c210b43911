"""Inventory: how much of the site's per-host inventory (``site.inventory``, docs/inventory.md) is filled in.

A site fills the file in stages (the serials from the delivery list, the MACs as racks are scanned), so the gaps
are warnings, each reported once for the whole cluster with the counts and a sample of the hosts: one finding
per host would be 100,000 lines. A blueprint that names no inventory gets no finding: it is optional, and the
DHCP reservations and BMC plays that need one say so themselves. The values' forms, duplicates and unknown
hosts are refused when the blueprint is loaded (clusterctl/blueprint/inventory_csv.py, exit 2).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl import hostlist
from clusterctl.plan.host_identity import device_macs, host_identities, on_prem_hosts
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.site_records import management_devices
from clusterctl.rules.base import Hit, Severity, rule

SAMPLE_HOSTS = 8
"""hosts a finding names (as a host list), in blueprint order"""
_PATH = ("site", "inventory")


def _sample(hosts: list[str]) -> str:
    shown = hostlist.compress(hosts[:SAMPLE_HOSTS])
    return shown + (f" and {len(hosts) - SAMPLE_HOSTS:,} more" if len(hosts) > SAMPLE_HOSTS else "")


@rule("INVENTORY001", "inventory", Severity.WARNING, "planned hosts missing from the inventory")
def hosts_without_row(plan: ClusterPlan) -> Iterator[Hit]:
    """When the blueprint names an inventory, every planned on-prem host should have a row: a host without one
    gets no DHCP reservation, no BMC entry and no provisioner record. One finding for all of them, with the
    count and the first hosts; ``clusterctl inventory template BLUEPRINT -o FILE`` adds the missing rows
    (keeping the rows already filled in)."""
    if not plan.inventory:
        return
    known = host_identities(plan)
    planned = on_prem_hosts(plan.groups)
    missing = [h for h in planned if h not in known]
    if missing:
        yield Hit(_PATH, f"{len(missing):,} of {len(planned):,} planned on-prem hosts have no inventory row: "
                         f"{_sample(missing)}",
                  "add their rows (clusterctl inventory template BLUEPRINT -o FILE keeps the rows you have and "
                  "adds the missing ones, empty)")


@rule("INVENTORY002", "inventory", Severity.WARNING, "inventory rows without a port's MAC")
def rows_without_macs(plan: ClusterPlan) -> Iterator[Hit]:
    """Every inventory row should give the host's in-band MAC (its DHCP reservation and network boot), and, for
    a host whose server has a BMC port (a NIC of role ``bmc``), the BMC's MAC (its management address); every
    management device with a planned management address (a switch, a PDU, a CDU) should have a row with its
    ``mgmt_mac`` (its DHCP reservation). One finding for all of them, each gap counted with the first hosts or
    devices."""
    if not plan.inventory:
        return
    known = host_identities(plan)
    with_bmc = {h for g in plan.groups if g.type.instance is None and g.type.nic_count("bmc") for h in g.hosts}
    no_inband = [h for h, ident in known.items() if ident.inband_mac is None]
    no_bmc = [h for h, ident in known.items() if ident.bmc_mac is None and h in with_bmc]
    gaps = [f"{len(hosts):,} without {what}: {_sample(hosts)}" for hosts, what in
            ((no_inband, "inband_mac"), (no_bmc, "bmc_mac")) if hosts]
    found = f"of {len(known):,} inventory rows, " + "; ".join(gaps) if gaps else ""
    macs = device_macs(plan)
    devices = [d.name for d in management_devices(plan)]
    no_mgmt = [d for d in devices if d not in macs]
    if no_mgmt:
        found += ("; " if found else "") + (f"{len(no_mgmt):,} of {len(devices):,} management devices without "
                                            f"mgmt_mac: {_sample(no_mgmt)}")
    if found:
        yield Hit(_PATH, found, "fill in the MACs printed on the ports (or read from the switch's MAC table): a host "
                                "or device without one gets no DHCP reservation on that network")
