"""InfiniBand: every subnet needs a subnet manager, placed where it can run and cabled where it takes ports.

The placement, priorities and ports are decided in :mod:`clusterctl.plan.subnet_manager`; these rules judge
them, so a finding and the rendered ``subnet_manager/`` files never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.subnet_manager import EMBEDDED_SM_MAX_NODES, appliance_ports, misplaced, subnet_managers
from clusterctl.rules.base import Hit, Severity, rule


@rule("IB001", "infiniband", Severity.WARNING, "InfiniBand fabric without a subnet manager")
def no_subnet_manager(plan: ClusterPlan) -> Iterator[Hit]:
    """An InfiniBand subnet forwards nothing until a subnet manager has swept it: it assigns the LIDs, writes
    every switch's forwarding tables and moves each port from INIT to ACTIVE. A fabric that names none
    (``subnet_manager``) leaves that to something outside the blueprint, and the rendered files carry no SM
    configuration to apply; until one runs, every node's health check sees its ports INIT and drains it."""
    for sm in subnet_managers(plan):
        if sm.declared or plan.fabric_spec(sm.fabric).subnet_manager is not None:  # a misplaced one is IB002's
            continue
        fp = sm.fabric
        leaf = fp.tier("leaf")
        first = f"{fp.name}-leaf01" if leaf is not None else f"{fp.name}-spine01"
        embedded = (f", {{kind: opensm, switches: {first}}} (a managed switch's embedded SM, up to "
                    f"{EMBEDDED_SM_MAX_NODES:,} nodes)" if sm.ib_nodes <= EMBEDDED_SM_MAX_NODES else "")
        yield Hit(fp.path + ("name",),
                  f"InfiniBand fabric {fp.name} ({fp.endpoints:,} endpoints) names no subnet manager: its ports stay "
                  f"INIT and nothing is forwarded until one runs",
                  f"add subnet_manager: {{kind: opensm, hosts: <two hosts on the fabric>}}{embedded} or {{kind: ufm, "
                  f"hosts: \"ufm[01-02]\"}} with extra_endpoints for the appliances' ports")


@rule("IB002", "infiniband", Severity.ERROR, "subnet manager placed where it cannot run")
def misplaced_subnet_manager(plan: ClusterPlan) -> Iterator[Hit]:
    """OpenSM runs on a host with a port on the fabric it manages, or as the embedded SM of one of the fabric's
    own managed switches; UFM runs on its own appliances, which are not hosts of the plan (their ports are the
    fabric's extra endpoints). The subnet manager needs exactly one of ``hosts`` and ``switches``, and the
    embedded SM is an OpenSM (``kind: ufm`` with ``switches`` has no meaning). The embedded SM of MLNX-OS manages
    at most 2,048 nodes (NVIDIA MLNX-OS User Manual, "Subnet Manager")."""
    for sm in subnet_managers(plan):
        fp = sm.fabric
        spec = plan.fabric_spec(fp).subnet_manager
        if spec is None:
            continue
        base = fp.path + ("subnet_manager",)
        if (spec.hosts is None) == (spec.switches is None):
            yield Hit(base, f"the subnet manager of fabric {fp.name} names "
                            f"{'both hosts and switches' if spec.hosts else 'neither hosts nor switches'}",
                      "give hosts (OpenSM or UFM appliances) or switches (the embedded SM), one of them")
            continue
        if spec.kind == "ufm" and spec.switches is not None:
            yield Hit(base + ("switches",), f"fabric {fp.name}: UFM runs on its own appliances, not on switches",
                      "use kind: opensm for a switch's embedded SM, or name the UFM appliances in hosts")
            continue
        bad = misplaced(plan, sm)
        if bad:
            key, why, hint = {
                "hosts": ("hosts", f"are not hosts of the plan with a port on fabric {fp.name}",
                          f"name hosts attached to {fp.name}, or run the SM on its switches (switches: ...)"),
                "switches": ("switches", f"are not switches of fabric {fp.name}",
                             f"name switches of the fabric (e.g. {fp.name}-leaf01)"),
                "appliances": ("hosts", "are hosts of the plan, not UFM appliances",
                               "give the appliances names of their own (e.g. ufm[01-02]), or use kind: opensm"),
            }[sm.placement]
            yield Hit(base + (key,), f"subnet manager {', '.join(bad)} {why}", hint)
        elif sm.placement == "switches" and sm.ib_nodes > EMBEDDED_SM_MAX_NODES:
            yield Hit(base + ("switches",),
                      f"fabric {fp.name} has {sm.ib_nodes:,} InfiniBand nodes ({fp.endpoints:,} ports, "
                      f"{fp.switch_count:,} switches); a switch's embedded SM manages at most "
                      f"{EMBEDDED_SM_MAX_NODES:,}", "run OpenSM on hosts or UFM on appliances")


@rule("IB003", "infiniband", Severity.ERROR, "no leaf ports for the subnet manager appliances")
def appliance_ports_missing(plan: ClusterPlan) -> Iterator[Hit]:
    """UFM appliances are cabled to the fabric's leaves like nodes (the DGX SuperPOD H100 RA's 4-SU design gives
    the 128th DGX's ports to UFM: "Compute and UFM" cables). The plan cables ``extra_endpoints`` to the least
    loaded leaves, so the appliances must be among them: fewer extra endpoints than appliances leaves an
    appliance without a port."""
    for sm in subnet_managers(plan):
        need = appliance_ports(sm)
        have = plan.fabric_spec(sm.fabric).extra_endpoints
        if need > have:
            yield Hit(sm.fabric.path + ("extra_endpoints",) if have else sm.fabric.path + ("subnet_manager", "hosts"),
                      f"fabric {sm.fabric.name} has {need} UFM appliance(s) of one port each but {have} extra "
                      f"endpoint(s) on its leaves", f"set extra_endpoints to at least {need}")
