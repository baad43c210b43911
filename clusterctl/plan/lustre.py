"""Lustre client facts the storage rules and the Ansible target share: the LNet networks a tier's MGS NIDs are
on (Lustre manual, "Configuring LNet") and the interfaces a node type's LNet binds to (its storage ports'
netdev names, clusterctl/plan/interfaces.py)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from clusterctl.plan.interfaces import netdevs, role_ports
from clusterctl.plan.model import ClusterPlan, NodeTypePlan


def nid_networks(servers: str) -> list[str]:
    """The LNet network of every NID of a Lustre source, as written, in order:
    ``10.0.0.1@o2ib,10.1.0.1@tcp:/fs`` -> ``["o2ib", "tcp"]``."""
    return [net for _, net in nids(servers)]


def nids(servers: str) -> list[tuple[str, str]]:
    """(address, network) of every NID of a Lustre source, as written, in order."""
    found = servers.split(":/")[0].replace(":", ",").split(",")
    return [(nid.rsplit("@", 1)[0], nid.rsplit("@", 1)[1]) for nid in found if "@" in nid]


def normalized(net: str) -> str:
    """``o2ib`` is ``o2ib0``, ``tcp`` is ``tcp0`` (LNet's network number defaults to 0)."""
    return net if net[-1].isdigit() else f"{net}0"


def lnet_networks(servers: str) -> list[str]:
    """The o2ib LNet networks a Lustre source's NIDs are on, normalized (``o2ib`` is ``o2ib0``), once each."""
    out: list[str] = []
    for net in nid_networks(servers):
        name = normalized(net)
        if name.startswith("o2ib") and name not in out:
            out.append(name)
    return out


def storage_interfaces(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[str, ...]:
    """The netdev names of a node type's storage ports (the blueprint's ``interfaces.storage`` or
    ``storage_interfaces``, or the catalog's vendor table); empty unless every storage port is named."""
    return netdevs(role_ports(plan, nt, "storage")) or ()


def in_storage_pool(plan: ClusterPlan, address: str) -> bool:
    """True when a NID's address lies in an address pool of role storage (the storage ports reach it)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a host name NID: which network it is on is not known here
        return False
    return any(p.role == "storage" and ip in ipaddress.ip_network(p.cidr) for p in plan.addresses)


def lnet_option(plan: ClusterPlan, nt: NodeTypePlan, sources: Sequence[str]) -> str:
    """``options lnet networks=`` of a node type mounting Lustre tiers with these ``servers`` sources; empty for
    LNet's default (tcp0 on the first interface). o2ib networks (InfiniBand, or RoCE on VPI storage ports) are
    written when the node type has an RDMA-capable storage NIC, qualified with every storage port (multi-rail,
    Lustre manual "LNet Multi-Rail"); a tcp network only when its NID is in the storage pool and the storage
    ports are named. Unqualified o2ib binds to ``ib0``, a name Ubuntu's predictable naming never gives
    (STORAGE012 warns)."""
    names = storage_interfaces(plan, nt)
    rdma = any("infiniband" in n.protocols for n in nt.nics_of("storage"))
    nets: list[str] = []
    for servers in sources:
        for address, net in nids(servers):
            name = normalized(net)
            wanted = (rdma if name.startswith("o2ib") else
                      bool(names) and name.startswith("tcp") and in_storage_pool(plan, address))
            if wanted and name not in nets:
                nets.append(name)
    suffix = f"({','.join(names)})" if names else ""
    return ",".join(f"{n}{suffix}" for n in nets)
