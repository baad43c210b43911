"""Warewulf v4.6 node registry (``handoff/warewulf/nodes.conf``): a node profile per node group and a node per
planned bare-metal host, with its in-band interface (address, and MAC when the inventory gives it), IPoIB
interfaces and BMC address.

Format sources (Warewulf user guide for v4.6, the warewulf/warewulf repository's ``userdocs``):

- "Cluster Nodes" (``nodes/nodes.rst``): ``nodes.conf`` is a YAML document, "its internal structure is technically
  undocumented and subject to change between versions" (``wwctl upgrade nodes`` updates an older one), and
  warewulfd must be restarted after it is edited; the node import example gives a node's keys: ``profiles``,
  ``network devices`` (``type``, ``device``, ``hwaddr``, ``ipaddr``, ``netmask``, ``gateway``, ``tags``),
  ``primary network``; "Tags": key-value pairs on a node (``tags``);
- v4.6.0 release notes, "Profiles": the top-level ``nodeprofiles`` and ``nodes`` mappings, and profiles that
  include other profiles;
- "Network Interfaces" (``nodes/network.rst``): one interface per ``--netname``, an InfiniBand one with
  ``--type=infiniband``;
- "IPMI" (``nodes/ipmi.rst``) and the node data structure at tag v4.6.5 (``internal/pkg/node/datastructure.go``:
  the YAML keys of ``NodesYaml``, ``Profile``, ``IpmiConf`` and ``NetDev``; every key written here is one of them);
- the v4.6.5 NetworkManager overlay (``ww4-managed.ww``), which configures a network device of ``type: infiniband``
  as an InfiniBand connection.

Warewulf keeps the BMC user name and password in ``nodes.conf`` itself (``ipmi.username``/``ipmi.password``). They
are never written here: the site sets them from its vault with ``wwctl profile set <profile> --ipmiuser ...
--ipmipass ...`` (docs/handoff.md). No gateway is written either: the plan allocates none (the DHCP target's
routers option is the site's).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from clusterctl.plan.host_identity import HostIdentity, host_identities
from clusterctl.plan.interfaces import netdevs, role_ports
from clusterctl.plan.model import ClusterPlan, GroupPlan
from clusterctl.plan.site_records import site_records
from clusterctl.targets.common import header
from clusterctl.yamlout import comment, dump

BASE_PROFILE = "default"
"""the profile a Warewulf v4.6 installation creates with its defaults (overlays, kernel arguments; release notes
"The default profile"): every group's profile, named as the group, includes it (no group is named ``default``:
the loader refuses the Slurm keyword as a group name)"""
INBAND_NETNAME = "default"
"""Warewulf's name of a node's first network (``wwctl node set`` without ``--netname``)"""


class _Records:
    """The addresses of every host by kind, each with its pool's name, from plan/site_records.py (the names DNS
    serves, so the registry and the zones agree): in-band and BMC (the first pool's), IPoIB per port."""

    def __init__(self, plan: ClusterPlan):
        self.inband: dict[str, tuple[str, str]] = {}
        self.bmc: dict[str, tuple[str, str]] = {}
        self.ipoib: dict[str, list[tuple[str, str]]] = {}
        for r in site_records(plan):
            if r.kind == "host":
                self.inband.setdefault(r.owner, (r.address, r.pool))
            elif r.kind == "bmc":
                self.bmc.setdefault(r.owner, (r.address, r.pool))
            elif r.kind == "ipoib":
                self.ipoib.setdefault(r.owner, []).append((r.address, r.pool))


def _netmasks(plan: ClusterPlan) -> dict[str, str]:
    return {p.name: str(ipaddress.ip_network(p.cidr).netmask) for p in plan.addresses if p.version == 4}


def _profile(plan: ClusterPlan, g: GroupPlan, records: _Records, masks: Mapping[str, str]) -> dict:
    """The group's profile: a comment, the base profile, the netmasks of its networks (its first host's pools)."""
    profile: dict = {"comment": comment(f"node group {g.name} ({g.type.name}, {g.count} node"
                                        f"{'s' if g.count != 1 else ''}) of blueprint {plan.name}"),
                     "profiles": [BASE_PROFILE]}
    first = g.hosts[0]
    devices: dict = {}
    if first in records.inband and records.inband[first][1] in masks:
        devices[INBAND_NETNAME] = {"netmask": masks[records.inband[first][1]]}
    for k, (_, pool) in enumerate(records.ipoib.get(first, ())):
        devices[f"ib{k}"] = {"type": "infiniband", **({"netmask": masks[pool]} if pool in masks else {})}
    if devices:
        profile["network devices"] = devices
    if first in records.bmc and records.bmc[first][1] in masks:
        profile["ipmi"] = {"netmask": masks[records.bmc[first][1]]}
    return profile


def _node(g: GroupPlan, host: str, records: _Records, identity: HostIdentity | None,
          inband_device: str | None, ib_devices: tuple[str, ...]) -> dict:
    node: dict = {"profiles": [g.name]}
    devices: dict = {}
    if host in records.inband:
        default: dict = {}
        if inband_device:
            default["device"] = inband_device
        if identity is not None and identity.inband_mac:
            default["hwaddr"] = identity.inband_mac
        default["ipaddr"] = records.inband[host][0]
        devices[INBAND_NETNAME] = default
    for k, (address, _) in enumerate(records.ipoib.get(host, ())):
        ib: dict = {"device": ib_devices[k]} if k < len(ib_devices) and ib_devices[k] else {}
        ib["ipaddr"] = address
        devices[f"ib{k}"] = ib
    if devices:
        node["network devices"] = devices
        if INBAND_NETNAME in devices:
            node["primary network"] = INBAND_NETNAME
    if host in records.bmc:
        node["ipmi"] = {"ipaddr": records.bmc[host][0]}
    if identity is not None and identity.serial:
        node["tags"] = {"serial": identity.serial}
    return node


def nodes_conf(plan: ClusterPlan) -> str:
    records = _Records(plan)
    masks = _netmasks(plan)
    identities = host_identities(plan)
    groups = [g for g in plan.groups if g.type.instance is None and g.count]
    profiles: dict = {}
    nodes: dict = {}
    for g in groups:
        profiles[g.name] = _profile(plan, g, records, masks)
        inband = netdevs(role_ports(plan, g.type, "inband"))
        inband_device = inband[0] if inband and len(inband) == 1 else None
        ib_devices = tuple(p.netdev or "" for p in role_ports(plan, g.type, "compute"))
        for host in g.hosts:
            nodes[host] = _node(g, host, records, identities.get(host), inband_device, ib_devices)
    with_mac = sum(1 for h in nodes if (i := identities.get(h)) is not None and i.inband_mac)
    notes = [header(plan).rstrip("\n")[2:],
             "Warewulf v4.6 node registry (nodes.conf): a profile per node group (including the installation's "
             "'default' profile), a node per planned bare-metal host (docs/handoff.md; format: Warewulf user "
             "guide 'Cluster Nodes', 'Network Interfaces', 'IPMI', v4.6.0 release notes 'Profiles').",
             "Merge its nodeprofiles and nodes into /etc/warewulf/nodes.conf, which holds the installation's "
             "'default' profile the profiles here include, then restart warewulfd. Warewulf documents this "
             "structure as subject to change between versions: run 'wwctl upgrade nodes' on a newer Warewulf.",
             f"In-band MAC addresses from the blueprint's inventory: {with_mac} of {len(nodes)} nodes; a node "
             "without one needs 'wwctl node set NODE --hwaddr MAC' (or --discoverable).",
             "BMC credentials are not in this file (Warewulf would store them here in clear): set ipmi.username "
             "and ipmi.password from the site's vault with 'wwctl profile edit PROFILE' (--ipmipass would put "
             "the password on a command line).",
             "No gateway is set: the blueprint plans none."]
    return dump({"nodeprofiles": profiles, "nodes": nodes}, [comment(n) for n in notes])
