"""Lustre client facts the storage rules and the Ansible target share: the LNet networks a tier's MGS NIDs are
on (Lustre manual, "Configuring LNet") and the interfaces a node type's LNet binds to."""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, NodeTypePlan


def nid_networks(servers: str) -> list[str]:
    """The LNet network of every NID of a Lustre source, as written, in order:
    ``10.0.0.1@o2ib,10.1.0.1@tcp:/fs`` -> ``["o2ib", "tcp"]``."""
    nids = servers.split(":/")[0].replace(":", ",").split(",")
    return [nid.rsplit("@", 1)[1] for nid in nids if "@" in nid]


def lnet_networks(servers: str) -> list[str]:
    """The o2ib LNet networks a Lustre source's NIDs are on, normalized (``o2ib`` is ``o2ib0``), once each."""
    out: list[str] = []
    for net in nid_networks(servers):
        name = net if net[-1].isdigit() else f"{net}0"
        if name.startswith("o2ib") and name not in out:
            out.append(name)
    return out


def storage_interfaces(plan: ClusterPlan, nt: NodeTypePlan) -> tuple[str, ...]:
    """The interface names of a node type's storage NICs (``node_types.<t>.storage_interfaces``); empty when the
    blueprint names none (LNet then uses its default)."""
    return tuple(plan.node_type_spec(nt).storage_interfaces or ())
