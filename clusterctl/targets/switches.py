"""switches target: ``switches/<fabric>-<tier>.nvue.yaml`` for every tier (leaf, spine, core) of a RoCE fabric built
of NVIDIA Spectrum switches (Cumulus Linux, configured with NVUE), so the lossless path is declared once: the
DSCP, PFC priority, ECN and MTU come from the same :func:`clusterctl.targets.roce.fabric_qos` as NCCL_IB_TC
and the hosts' QoS.

One file per tier, not per switch: every switch of a tier is built the same way (same model, same ports in
use), and the header names the switches it applies to as a host list. A 100,000-GPU RoCE fabric has ~4,800
switches; a file each would be ~40 MB of identical text. The switch's own identity (hostname, management
address, routing) comes from its provisioning (ZTP), which this file does not replace.

Each file is an NVUE configuration (a list with one ``set`` document) that ``nv config patch FILE`` then
``nv config apply`` loads: RoCE lossless mode (``nv set qos roce mode lossless``); the DSCP to switch-priority
map with L3 trust, PFC on the lossless priority and ECN on its traffic class, spelled out with the fabric's
numbers; and every port the plan uses at the switch MTU, with breakouts where one native port carries several
node links (an 800G SN5600 port feeding two 400G NICs).

What it does not hold: hostname and routing (BGP/EVPN or VLANs), port descriptions per cable and buffer
tuning; see docs/roce.md. Sources: Cumulus Linux user guide "RDMA over Converged Ethernet - RoCE" and
"Quality of Service" (NVUE), "Switch Port Attributes" (breakout, MTU).
"""

from __future__ import annotations

from clusterctl.plan.model import ClusterPlan, FabricPlan, SwitchTier
from clusterctl.targets.common import header, path_part
from clusterctl.targets.roce import RoceQos, fabric_qos
from clusterctl.yamlout import PureDumper, body, comment_lines

NVUE_VENDORS = ("NVIDIA",)
"""catalog vendors whose Ethernet switches run Cumulus Linux (NVUE): Spectrum SN2xxx-SN5xxx"""


def nvue_switch(tier: SwitchTier) -> bool:
    return tier.switch.vendor.upper() in NVUE_VENDORS and "ethernet" in tier.switch.protocols


def ports(tier: SwitchTier) -> list[tuple[str, int, str]]:
    """(first native port, how many, what) runs of the ports the plan uses on every switch of ``tier``:
    downlinks first (split ``down_breakout`` ways), then uplinks (one native port each)."""
    out = []
    if tier.down_ports:
        what = {"leaf": "node", "spine": "leaf", "core": "spine"}.get(tier.role, "down")
        out.append((1, tier.down_ports, f"down to {what}s"))
    if tier.up_links and not tier.up_dedicated:
        up = {"leaf": "spines", "spine": "cores"}.get(tier.role, "up")
        out.append((tier.down_ports + 1, tier.up_links, f"up to {up}"))
    return out


def interfaces(tier: SwitchTier, mtu: int) -> dict[str, dict]:
    """NVUE ``interface`` entries: swpN at the switch MTU, or swpN split (``link breakout Nx``) and its
    subports swpNs0.. at the MTU."""
    out: dict[str, dict] = {}
    for first, count, _what in ports(tier):
        split = tier.down_breakout if first == 1 and tier.down_breakout > 1 else 1
        for n in range(first, first + count):
            if split > 1:
                out[f"swp{n}"] = {"link": {"breakout": f"{split}x"}}
                for s in range(split):
                    out[f"swp{n}s{s}"] = {"type": "swp", "link": {"mtu": mtu}}
            else:
                out[f"swp{n}"] = {"type": "swp", "link": {"mtu": mtu}}
    return out


def qos_config(qos: RoceQos) -> dict:
    """The NVUE ``qos`` subtree of a RoCE lossless fabric, with the fabric's numbers."""
    config: dict = {
        "roce": {"enable": "on", "mode": "lossless"},
        "mapping": {"default-global": {"trust": "l3", "dscp": {
            qos.dscp: {"switch-priority": qos.pfc_priority},
            qos.cnp_dscp: {"switch-priority": qos.cnp_priority}}}},
        "pfc": {"default-global": {"switch-priority": {qos.pfc_priority: {}}}},
    }
    if qos.ecn:
        config["congestion-control"] = {"default-global": {"traffic-class": {qos.pfc_priority: {
            "ecn": "enable"}}}}
    return config


def _comments(plan: ClusterPlan, fp: FabricPlan, tier: SwitchTier, qos: RoceQos) -> list[str]:
    return [
        header(plan).rstrip("\n")[2:],
        f"NVUE configuration of the {tier.count:,} {tier.role} switch{'es' if tier.count != 1 else ''} of RoCE "
        f"fabric {fp.name}: {tier.names} ({tier.model}, Cumulus Linux). On each: `nv config patch FILE`, review "
        "`nv config diff`, then `nv config apply`. Hostname, management address and routing come from provisioning.",
        f"Lossless RoCE, the numbers of the hosts and NCCL (one source, the fabric's QoS): RDMA DSCP {qos.dscp} "
        f"(NCCL_IB_TC {qos.traffic_class} = DSCP << 2 | ECN bits {qos.ecn_bits}) to switch priority "
        f"{qos.pfc_priority}, PFC on priority {qos.pfc_priority}, ECN "
        f"{f'marked on traffic class {qos.pfc_priority}' if qos.ecn else 'off'}, CNPs DSCP {qos.cnp_dscp} to priority "
        f"{qos.cnp_priority}.",
        "qos.roce: `nv set qos roce enable on` / `mode lossless` (Cumulus Linux user guide, RDMA over Converged "
        "Ethernet - RoCE: trust L3, DSCP 26 to priority 3 with PFC and ECN, CNP priority 6 strict). qos.mapping, "
        "qos.pfc, qos.congestion-control: `nv set qos mapping default-global dscp D switch-priority P`, `nv set qos "
        "pfc default-global switch-priority P`, `nv set qos congestion-control default-global traffic-class P ecn "
        "enable` (user guide, Quality of Service) state the same numbers explicitly.",
        f"Ports: MTU {qos.switch_mtu} (jumbo, above the hosts' {qos.mtu}); "
        + "; ".join(f"swp{a}-swp{a + n - 1} {what}" for a, n, what in ports(tier))
        + (f"; downlink ports split {tier.down_breakout} ways (`nv set interface swpN link breakout "
           f"{tier.down_breakout}x`, Switch Port Attributes): {tier.down_gbps:g}G per node link"
           if tier.down_breakout > 1 else "") + ".",
        "Not in this file: hostname, routing (BGP, VLANs), port descriptions, buffer tuning (docs/roce.md).",
    ]


def render(plan: ClusterPlan) -> dict[str, str]:
    files: dict[str, str] = {}
    for fp in plan.fabrics:
        qos = fabric_qos(plan, fp)
        if qos is None:
            continue
        for tier in fp.tiers:
            if not nvue_switch(tier) or not tier.count:
                continue
            data = [{"set": {"qos": qos_config(qos), "interface": interfaces(tier, qos.switch_mtu)}}]
            name = path_part(f"{fp.name}-{tier.role}", "switch tier")
            files[f"switches/{name}.nvue.yaml"] = comment_lines(_comments(plan, fp, tier, qos)) + body(
                data, dumper=PureDumper)
    return files
