"""The managed devices of the site that are neither hosts nor switches: each rack's PDUs and each CDU.

Every rack has ``feeds`` power feeds (``rack_profiles.<name>.feeds``: PDUs or busway taps, docs/blueprint.md); a
metered or switched rack PDU has a network management port, and so does a coolant distribution unit (its
controller). They take management addresses from the ``mgmt`` pool after the switches' (plan/expand.py sizes the
pool for them, so ADDR001 reports a pool too small for them as it does for switches) and DNS names
(plan/site_records.py): ``<rack>-pdu<k>`` (k = 1..feeds, in rack order) and the CDU's own name, each with '.' and
'_' written as '-' (a rack ``r.2`` is a valid name, ``r.2-pdu1`` no DNS label; NAME006 already refuses two racks that
differ only in '-', '.' or '_', so the labels stay distinct).

Not counted: the power shelves of a rack-scale system (GB200 NVL72): the catalog has no sourced count of them nor
of their management ports, so the plan does not invent one (docs/network.md, "Names").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from clusterctl import hostlist
from clusterctl.blueprint.facility import Cdu, RackProfile
from clusterctl.plan.model import ClusterPlan, FabricPlan, RackPlan


def _label(name: str) -> str:
    """A rack's or CDU's name as a DNS label's stem: '.' and '_' written as '-'."""
    return name.replace(".", "-").replace("_", "-")


def management_devices_of(racks: Sequence[RackPlan], rack_profiles: Mapping[str, RackProfile],
                          cdus: Sequence[Cdu]) -> Iterator[tuple[str, str, str]]:
    """(name, kind, owner) of every PDU (kind ``pdu``, owner its rack) and CDU (kind ``cdu``, owner itself), in the
    order the management pool numbers them: racks in plan order, feeds 1..n, then CDUs in blueprint order."""
    for rack in racks:
        profile = rack_profiles.get(rack.profile_name)
        for k in range(1, (profile.feeds if profile is not None else 0) + 1):
            yield f"{_label(rack.name)}-pdu{k}", "pdu", rack.name
    for cdu in cdus:
        yield _label(cdu.name), "cdu", cdu.name


def management_device_count(racks: Sequence[RackPlan], rack_profiles: Mapping[str, RackProfile],
                            cdus: Sequence[Cdu]) -> int:
    """How many management addresses :func:`management_devices_of` needs."""
    return sum(rack_profiles[r.profile_name].feeds for r in racks if r.profile_name in rack_profiles) + len(cdus)


def device_names(fabrics: Sequence[FabricPlan], racks: Sequence[RackPlan], rack_profiles: Mapping[str, RackProfile],
                 cdus: Sequence[Cdu]) -> Iterator[str]:
    """The DNS name of every device with a management port an inventory row may name (docs/inventory.md): each
    switch (its planned name), then each PDU and CDU as :func:`management_devices_of` names them."""
    for f in fabrics:
        for tier in f.tiers:
            try:
                yield from hostlist.expand(tier.names)
            except hostlist.HostlistError:  # no switch names: rules NAME/FABRIC report it, nothing to match here
                continue
    for name, _, _ in management_devices_of(racks, rack_profiles, cdus):
        yield name


def planned_device_names(plan: ClusterPlan) -> list[str]:
    """:func:`device_names` of a built plan (the rack profiles are the blueprint's, read here, in plan/)."""
    return list(device_names(plan.fabrics, plan.racks, plan.blueprint.rack_profiles, plan.cooling.cdus))
