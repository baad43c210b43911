"""The nodes' in-band addresses (one network computation per group) and the static /etc/hosts block
(hosts/hosts) the common role installs."""

from __future__ import annotations

import ipaddress
from functools import partial

from clusterctl import hostlist
from clusterctl.plan.allocations import address_text, group_block
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.site_records import management_devices
from clusterctl.targets import RenderError
from clusterctl.targets.ansible.node_files import HOSTS_MARKER
from clusterctl.targets.common import at, conf_value, header
from clusterctl.yamlout import comment

def group_addresses(plan: ClusterPlan, g: GroupPlan) -> list[str] | None:
    """The in-band address of every host of the group, in host order; None for cloud groups and groups
    without an in-band pool. One network computation per group, not per host (87,500 nodes: 0.1 s)."""
    if g.type.instance is not None:
        return None
    block = group_block(plan, "inband", g)
    if block is None:
        return None
    pool, first, per_host = block
    if g.count and first + (g.count - 1) * per_host >= pool.capacity:
        raise RenderError(f"address pool {pool.name} ({pool.cidr}) has no in-band address for every "
                          f"node of group {g.name}")
    net = ipaddress.ip_network(pool.cidr)
    base = int(net.network_address) + pool.first_host_offset + first
    fmt = partial(address_text, net.version)
    return [fmt(base + i * per_host) for i in range(g.count)]


def hosts_file(plan: ClusterPlan) -> str:
    """``address name`` lines: in-band addresses of the nodes, management addresses of the switches.
    /etc/hosts has no quoting: a name that is not one word without '#' is refused (:func:`conf_value`)."""
    lines = [header(plan).rstrip("\n"), "# static name resolution for the cluster, installed into /etc/hosts by the "
             "common role (between its '" + HOSTS_MARKER + "' markers)"]
    cloud = [g.name for g in plan.groups if g.type.instance is not None]
    if cloud:
        lines.append(f"# cloud node groups ({comment(', '.join(cloud))}) resolve through the provider's DNS: "
                     "not listed")
    for g in plan.groups:
        if g.type.instance is not None:
            continue
        block = group_block(plan, "inband", g)
        if block is None:
            lines.append(f"# node group {comment(g.name)}: no in-band address pool")
            continue
        pool = block[0]
        lines.append(f"# node group {comment(g.name)}: in-band addresses from pool {comment(pool.name)} "
                     f"({comment(pool.cidr)})")
        what = f"host name in node group {g.name}"
        with at((*g.path, "hostnames")):
            lines.extend(f"{address} {conf_value(host, what)}"
                         for address, host in zip(group_addresses(plan, g) or (), g.hosts))
    mgmt = next((p for p in plan.addresses if p.role == "mgmt" and p.switch_offset >= 0), None)
    if mgmt is not None:
        lines.append(f"# switches: management addresses from pool {comment(mgmt.name)} ({comment(mgmt.cidr)})")
        fabric_of = {name: f.name for f in plan.fabrics for tier in f.tiers for name in hostlist.expand(tier.names)}
        lines.extend(f"{r.address} {conf_value(r.name, f'switch name in fabric {fabric_of[r.owner]}')}"
                     for r in management_devices(plan) if r.kind == "switch")
    return "\n".join(lines) + "\n"
