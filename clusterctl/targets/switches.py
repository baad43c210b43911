"""switches target: the startup configuration of every switch of the routed Ethernet and RoCE fabrics, one
directory per switch (what zero-touch provisioning serves that switch), from :mod:`clusterctl.plan.underlay`:

- ``switches/<fabric>/<switch>/frr.conf``: FRR (BGP unnumbered, ASN, router id, ECMP, the advertised loopback
  and host links; :mod:`clusterctl.targets.frr`), for any switch: the routing suite Cumulus Linux runs, and
  what the rehearsal's ``fabric`` scenario starts on its namespaced switches;
- ``switches/<fabric>/<switch>/interfaces``: ifupdown2 addresses and MTU (what FRR does not set);
- ``switches/<fabric>/<switch>/nvue.yaml``: for NVIDIA Spectrum switches (Cumulus Linux), the complete NVUE
  configuration: hostname, loopback, ports (MTU, breakouts, host-link addresses), BGP, RoCE-aware ECMP hashing
  and, on a RoCE fabric, the lossless QoS of :func:`clusterctl.targets.roce.fabric_qos` (:mod:`.nvue`).

A fabric gets no files without a loopback pool (rule UNDERLAY001). Layout and what is not in the files:
docs/roce.md, "Switches".
"""

from __future__ import annotations

from clusterctl import hostlist
from clusterctl.plan import underlay
from clusterctl.plan.model import ClusterPlan, FabricPlan, SwitchTier
from clusterctl.targets.common import header, path_part
from clusterctl.targets.frr import frr_conf, frr_tail, interfaces_file
from clusterctl.targets.nvue import Template
from clusterctl.targets.roce import SWITCH_MTU, RoceQos, fabric_qos
from clusterctl.targets.switch_ports import tier_ports
from clusterctl.yamlout import comment_lines

NVUE_VENDORS = ("NVIDIA",)
"""catalog vendors whose Ethernet switches run Cumulus Linux (NVUE): Spectrum SN2xxx-SN5xxx"""


def nvue_switch(tier: SwitchTier) -> bool:
    return tier.switch.vendor.upper() in NVUE_VENDORS and "ethernet" in tier.switch.protocols


def _comments(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier, qos: RoceQos | None, mark: str) -> str:
    lines = [
        header(plan).rstrip("\n")[2:],
        f"{tier.role} switch of {fp.kind} fabric {fp.name} ({tier.model}): {tier.count:,} switch"
        f"{'es' if tier.count != 1 else ''} {tier.names}. BGP unnumbered on every fabric port, ASNs per RFC 7938 "
        f"(leaves one each, spines one per pod, the top tier one), timers {underlay.BGP_KEEPALIVE}/"
        f"{underlay.BGP_HOLD} s (docs/roce.md, Switches).",
    ]
    if qos is not None and mark == "#":
        lines.append(f"Lossless RoCE (one source with NCCL_IB_TC and the hosts): DSCP {qos.dscp} to priority "
                     f"{qos.pfc_priority}, PFC on {qos.pfc_priority}, ECN {'on' if qos.ecn else 'off'}, CNPs DSCP "
                     f"{qos.cnp_dscp} to priority {qos.cnp_priority}; ports at MTU {qos.switch_mtu}.")
    text = comment_lines(lines)
    return text if mark == "#" else text.replace("# ", "! ").replace("#\n", "!\n")


def _tier_files(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier, qos: RoceQos | None,
                only: frozenset[str] | None = None) -> dict[str, str]:
    files: dict[str, str] = {}
    fabric = path_part(fp.name, "fabric")
    hash_comments, bang_comments = _comments(plan, fp, tier, qos, "#"), _comments(plan, fp, tier, qos, "!")
    tail = frr_tail(plan, fp)
    nvue = Template(hash_comments, qos, SWITCH_MTU, tier.down_breakout) if nvue_switch(tier) else None
    for _i, name, asn, loopback, host, fabric_ports in tier_ports(plan, fp, tier):
        if only is not None and name not in only:
            continue
        base = f"switches/{fabric}/{path_part(name, 'switch')}/"
        files[base + "frr.conf"] = frr_conf(bang_comments, name, asn, loopback, fabric_ports, tail)
        files[base + "interfaces"] = interfaces_file(hash_comments, loopback, host, fabric_ports, SWITCH_MTU)
        if nvue is not None:
            files[base + "nvue.yaml"] = nvue.render(name, asn, loopback, host, fabric_ports)
    return files


PER_SWITCH_LIMIT = 1024
"""a blueprint with more routed switches than this gets a table per tier instead of a directory per switch: a
file costs its creation on disk (about 0.25 ms here), and a 100,000-GPU cluster's ~8,400 switches' 25,000 files
(100 MB) would add seconds to every render; ``clusterctl render --switches`` writes them on demand"""
TABLE_COLUMNS = ("switch", "asn", "loopback", "fabric_ports", "host_links", "first_host_link")


def per_switch(plan: ClusterPlan) -> bool:
    return sum(f.switch_count for f in underlay.routed_fabrics(plan)) <= PER_SWITCH_LIMIT


def _tier_table(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier) -> str:
    """One line per switch of the tier: what differs from switch to switch (docs/roce.md, Switches)."""
    lines = [header(plan), "# " + "\t".join(TABLE_COLUMNS) + "\n"]
    for _i, name, asn, loopback, host, fabric_ports in tier_ports(plan, fp, tier):
        addressed = [a for _p, a in host if a]
        lines.append(f"{name}\t{asn}\t{loopback}\t{len(fabric_ports)}\t{len(addressed)}\t"
                     f"{addressed[0] if addressed else '-'}\n")
    return "".join(lines)


def routed_switches(plan: ClusterPlan) -> frozenset[str]:
    """Every switch of the routed fabrics, by name (what ``render --switches`` may ask for)."""
    return frozenset(n for fp in underlay.routed_fabrics(plan) for t in fp.tiers for n in hostlist.expand(t.names))


def render(plan: ClusterPlan, only: frozenset[str] | None = None) -> dict[str, str]:
    """The switch files (the module docstring); ``only``: these switches' directories, whatever the size."""
    files: dict[str, str] = {}
    if underlay.loopback_pool(plan) is None:
        return files
    whole = only is not None or per_switch(plan)
    for fp in underlay.routed_fabrics(plan):
        qos = fabric_qos(plan, fp)
        for tier in fp.tiers:
            if not tier.count:
                continue
            if whole:
                files.update(_tier_files(plan, fp, tier, qos, only))
            else:
                files[f"switches/{path_part(fp.name, 'fabric')}/{tier.role}.tsv"] = _tier_table(plan, fp, tier)
    return files
