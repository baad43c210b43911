"""NVUE startup configuration of one NVIDIA Spectrum switch (Cumulus Linux): what ``nv config patch FILE`` then
``nv config apply`` loads, in NVUE's documented ``startup.yaml`` shape (a list with one ``set`` document).

Keys used, with where NVIDIA documents them (tests/targets/test_switch_files.py lists the same keys and checks
every rendered file uses no other):

- ``system.hostname``: Cumulus Linux user guide, "Quick Start Guide" (``nv set system hostname``);
- ``interface.lo.type: loopback``, ``interface.<if>.ip.address.<prefix>``: user guide "Border Gateway Protocol -
  BGP" / "Configuration Example" (its /etc/nvue.d/startup.yaml);
- ``interface.<swp>.type: swp``, ``interface.<swp>.link.mtu``, ``interface.<swp>.link.breakout``: "Switch Port
  Attributes" (MTU, breakout ports);
- ``router.bgp.enable/autonomous-system/router-id``; ``vrf.default.router.bgp.enable``,
  ``...bgp.neighbor.<swp>.type: unnumbered``, ``...neighbor.<swp>.remote-as: external``,
  ``...bgp.address-family.ipv4-unicast.enable``, ``...ipv4-unicast.redistribute.connected.enable``: "Border
  Gateway Protocol - BGP" (BGP unnumbered; Configuration Example);
- ``...neighbor.<swp>.timers.keepalive/hold``: "Optional BGP Configuration", BGP timers (``nv set vrf default
  router bgp neighbor swp51 timers keepalive 10``);
- ``...bgp.path-selection.multipath.aspath-ignore``: NVIDIA DOCA "HBN Service Guide" startup.yaml (ECMP over
  paths whose AS paths differ, as ``bgp bestpath as-path multipath-relax`` in FRR);
- ``system.forwarding.ecmp-hash.<field>``: NVUE command reference "System Forwarding" (``nv set system
  forwarding ecmp-hash source-port on``): RoCE-aware ECMP hashing on the 5-tuple, so the UDP source port that
  RoCEv2 varies per queue pair (destination port 4791 is fixed) spreads QPs over the spines ("Equal Cost
  Multipath Load Sharing", custom hashing);
- ``qos.*``: as before, "RDMA over Converged Ethernet - RoCE" and "Quality of Service" (:func:`qos_config`).

On/off values are written ``on`` as NVUE releases up to Cumulus Linux 5.14 take them (later releases spell
some ``state: enabled``). Not set: the BGP maximum paths (Cumulus Linux installs up to 64 eBGP paths by
default, "Equal Cost Multipath Load Sharing"), adaptive routing (Spectrum-4 only, a per-site choice), the
management VRF and address (ZTP's), buffer tuning, per-cable port descriptions.

Speed: a 100,000-GPU fabric has ~8,400 switches and ~330,000 ports. Each tier's file is emitted once by the
YAML emitter with placeholder names (:data:`TOKENS`); a switch's file is that text with its hostname, ASN and
loopback put in and its port blocks repeated from the emitted prototypes. Every value put in is a switch or
port name (checked at load: fabric names are identifiers), an integer or an address clusterctl formatted, all
plain YAML scalars; tests parse every file of the shipped blueprints.
"""

from __future__ import annotations

from clusterctl.plan import underlay
from clusterctl.targets.roce import RoceQos
from clusterctl.yamlout import FlowMap, PureDumper, body

TOKENS = {"host": "zzhostzz", "asn": 4_294_967_001, "lo": "zzlozz", "port": "zzportzz", "addr": "zzaddrzz",
          "peer": "zzpeerzz", "split": "zzsplitzz"}
"""placeholders the skeleton is emitted with; the ASN placeholder is an integer (an unquoted YAML int) no plan
uses (above the private range's top, 4294967294)"""
ON = "on"
ECMP_HASH = ("source-ip", "destination-ip", "ip-protocol", "source-port", "destination-port")


def qos_config(qos: RoceQos) -> dict:
    """The NVUE ``qos`` subtree of a RoCE lossless fabric, with the fabric's numbers."""
    config: dict = {
        "roce": {"enable": ON, "mode": "lossless"},
        "mapping": {"default-global": {"trust": "l3", "dscp": {
            qos.dscp: {"switch-priority": qos.pfc_priority},
            qos.cnp_dscp: {"switch-priority": qos.cnp_priority}}}},
        "pfc": {"default-global": {"switch-priority": {qos.pfc_priority: {}}}},
    }
    if qos.ecn:
        config["congestion-control"] = {"default-global": {"traffic-class": {qos.pfc_priority: {
            "ecn": "enable"}}}}
    return config


def _skeleton(qos: RoceQos | None, mtu: int, routed: bool) -> dict:
    t = TOKENS
    system: dict = {"hostname": t["host"]}
    if qos is not None:
        system["forwarding"] = {"ecmp-hash": {field: ON for field in ECMP_HASH}}
    interface = {  # ports on one line each (flow style): a 128-port leaf's file stays a few kilobytes
        "lo": {"type": "loopback", "ip": {"address": {f"{t['lo']}/32": {}}}},
        t["split"]: FlowMap({"link": FlowMap({"breakout": "zzbreakoutzz"})}),
        t["addr"]: FlowMap({"type": "swp", "link": FlowMap({"mtu": mtu}),
                            "ip": FlowMap({"address": FlowMap({"zzprefixzz": FlowMap()})})}),
        t["port"]: FlowMap({"type": "swp", "link": FlowMap({"mtu": mtu})}),
    }
    data: dict = {"system": system, "interface": interface}
    if routed:
        data["router"] = {"bgp": {"enable": ON, "autonomous-system": t["asn"], "router-id": t["lo"]}}
        data["vrf"] = {"default": {"router": {"bgp": {
            "enable": ON,
            "address-family": {"ipv4-unicast": {"enable": ON, "redistribute": {"connected": {"enable": ON}}}},
            "path-selection": {"multipath": {"aspath-ignore": ON}},
            "neighbor": {t["peer"]: FlowMap({"type": "unnumbered", "remote-as": "external", "timers": FlowMap({
                "keepalive": underlay.BGP_KEEPALIVE, "hold": underlay.BGP_HOLD})})}}}}}
    if qos is not None:
        data["qos"] = qos_config(qos)
    return data


def _block(lines: list[str], token: str) -> tuple[int, int]:
    """(first, end) line numbers of the mapping entry whose key is ``token``."""
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(token + ":"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
        end += 1
    return start, end


class Template:
    """One tier's NVUE file with the per-switch parts left open (the module docstring)."""

    def __init__(self, comments: str, qos: RoceQos | None, mtu: int, breakout: int, routed: bool = True):
        text = body([{"set": _skeleton(qos, mtu, routed)}], dumper=PureDumper)
        lines = text.splitlines(keepends=True)
        t = TOKENS
        blocks = {k: _block(lines, t[k]) for k in ("split", "addr", "port")}
        self.split = "".join(lines[slice(*blocks["split"])]).replace("zzbreakoutzz", f"{breakout}x")
        self.addr = "".join(lines[slice(*blocks["addr"])])
        self.port = "".join(lines[slice(*blocks["port"])])
        first, end = blocks["split"][0], blocks["port"][1]
        self.head = comments + "".join(lines[:first])
        if routed:
            n_first, n_end = _block(lines, t["peer"])
            self.neighbor = "".join(lines[n_first:n_end])
            self.middle = "".join(lines[end:n_first])
            self.tail = "".join(lines[n_end:])
        else:
            self.neighbor, self.middle, self.tail = "", "".join(lines[end:]), ""
        self.breakout = breakout

    def render(self, name: str, asn: int, loopback: str, host_ports: list[tuple[str, str]],
               fabric_ports: list[str]) -> str:
        t = TOKENS
        parts = [self.head.replace(t["host"], name).replace(t["lo"], loopback)]
        split, addr, port = self.split, self.addr, self.port
        for p, address in host_ports:
            if self.breakout > 1 and p.endswith("s0"):
                parts.append(split.replace(t["split"], p[:-2]))
            parts.append(addr.replace(t["addr"], p).replace("zzprefixzz", address) if address else
                         port.replace(t["port"], p))
        for p in fabric_ports:
            if self.breakout > 1 and p.endswith("s0"):
                parts.append(split.replace(t["split"], p[:-2]))
            parts.append(port.replace(t["port"], p))
        middle = self.middle if fabric_ports else self.middle[:self.middle.rstrip("\n").rfind("\n") + 1]
        parts.append(middle.replace(str(t["asn"]), str(asn)).replace(t["lo"], loopback))  # no peers: no neighbor key
        neighbor = self.neighbor
        for p in fabric_ports:
            parts.append(neighbor.replace(t["peer"], p))
        parts.append(self.tail)
        return "".join(parts)
