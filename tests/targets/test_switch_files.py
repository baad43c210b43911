"""The switch startup files of the routed fabrics (clusterctl/targets/switches.py, frr.py, nvue.py): FRR's frr.conf
and the interfaces file written out by hand for a small slice of the RoCE blueprint, every rendered frr.conf
accepted by FRR itself (``vtysh --dryrun -f``), and every NVUE key used listed with its documentation source."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from clusterctl.targets import render_targets, switches
from tests.conftest import require_tool
from tests.helpers import plan_of, roce_slice, shipped

PER_SWITCH_BLUEPRINTS = ("hgx-h200-roce-1024", "gb200-nvl72-8rack", "dgx-h100-superpod-1su", "dgx-h100-superpod-4su",
                         "lab-2node", "lab-ha")

NVUE_KEYS = {
    # key path (<name> any switch/port/prefix name, <n> any number): where NVIDIA documents it
    "system.hostname": "Cumulus Linux user guide, Quick Start Guide (nv set system hostname)",
    "system.forwarding.ecmp-hash.<name>": "NVUE command reference, System Forwarding (nv set system forwarding "
                                          "ecmp-hash source-port)",
    "interface.<name>.type": "user guide, Border Gateway Protocol - BGP, Configuration Example (startup.yaml)",
    "interface.<name>.ip.address.<name>": "user guide, Configuration Example (startup.yaml: lo, vlan10 ip address)",
    "interface.<name>.link.mtu": "user guide, Switch Port Attributes (MTU)",
    "interface.<name>.link.breakout": "user guide, Switch Port Attributes (Breakout Ports)",
    "router.bgp.enable": "user guide, Configuration Example (startup.yaml router.bgp)",
    "router.bgp.autonomous-system": "user guide, Configuration Example (nv set router bgp autonomous-system)",
    "router.bgp.router-id": "user guide, Configuration Example (nv set router bgp router-id)",
    "vrf.default.router.bgp.enable": "user guide, Configuration Example (startup.yaml vrf.default.router.bgp)",
    "vrf.default.router.bgp.neighbor.<name>.type": "user guide, BGP unnumbered (type unnumbered)",
    "vrf.default.router.bgp.neighbor.<name>.remote-as": "user guide, Basic BGP Configuration (remote-as external)",
    "vrf.default.router.bgp.neighbor.<name>.timers.keepalive": "user guide, Optional BGP Configuration, BGP Timers",
    "vrf.default.router.bgp.neighbor.<name>.timers.hold": "user guide, Optional BGP Configuration, BGP Timers",
    "vrf.default.router.bgp.address-family.ipv4-unicast.enable": "user guide, Configuration Example",
    "vrf.default.router.bgp.address-family.ipv4-unicast.redistribute.connected.enable":
        "user guide, Route Redistribution (nv set vrf default router bgp address-family ipv4-unicast redistribute "
        "connected)",
    "vrf.default.router.bgp.path-selection.multipath.aspath-ignore": "NVIDIA DOCA HBN Service Guide (startup.yaml)",
    "qos.roce.enable": "user guide, RDMA over Converged Ethernet - RoCE (nv set qos roce enable on)",
    "qos.roce.mode": "user guide, RDMA over Converged Ethernet - RoCE (nv set qos roce mode lossless)",
    "qos.mapping.default-global.trust": "user guide, Quality of Service (trust l3)",
    "qos.mapping.default-global.dscp.<n>.switch-priority": "user guide, Quality of Service (dscp switch-priority)",
    "qos.pfc.default-global.switch-priority.<n>": "user guide, Quality of Service (pfc switch-priority)",
    "qos.congestion-control.default-global.traffic-class.<n>.ecn": "user guide, Quality of Service (ECN)",
}


@pytest.fixture(scope="module")
def small_files() -> dict[str, str]:
    return switches.render(plan_of(roce_slice()))


def _body(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if not ln.startswith(("!", "#"))]


def test_leaf_frr_conf(small_files):
    assert _body(small_files["switches/roce/roce-leaf01/frr.conf"]) == [
        "frr version 8.4", "frr defaults datacenter", "hostname roce-leaf01", "log syslog informational",
        "service integrated-vtysh-config",
        "router bgp 4200010001",
        " bgp router-id 10.65.0.17",
        " bgp bestpath as-path multipath-relax",
        " no bgp ebgp-requires-policy",
        " timers bgp 3 9",
        " neighbor FABRIC peer-group",
        " neighbor FABRIC remote-as external",
        " neighbor FABRIC timers 3 9",
        " neighbor FABRIC timers connect 10",
        " neighbor swp2 interface peer-group FABRIC",
        " neighbor swp3 interface peer-group FABRIC",
        " !",
        " address-family ipv4 unicast",
        "  redistribute connected route-map UNDERLAY",
        "  maximum-paths 64",
        " exit-address-family",
        "exit",
        "ip prefix-list UNDERLAY seq 10 permit 10.65.0.0/24 ge 32",
        "ip prefix-list UNDERLAY seq 20 permit 10.64.0.0/20 ge 31",
        "route-map UNDERLAY permit 10",
        " match ip address prefix-list UNDERLAY",
        "exit"]
    spine = _body(small_files["switches/roce/roce-spine02/frr.conf"])
    assert "router bgp 4200000001" in spine and " bgp router-id 10.65.0.34" in spine
    assert [ln for ln in spine if ln.startswith(" neighbor swp")] == [
        f" neighbor swp{n} interface peer-group FABRIC" for n in range(1, 17)]


def test_leaf_interfaces_file(small_files):
    text = "\n".join(_body(small_files["switches/roce/roce-leaf09/interfaces"])).rstrip()
    assert text == "\n".join([
        "auto lo", "iface lo inet loopback", "    address 10.65.0.25/32", "",
        "auto swp1s0", "iface swp1s0", "    address 10.64.0.50/31", "    mtu 9216", "",
        "auto swp1s1", "iface swp1s1", "    address 10.64.0.66/31", "    mtu 9216", "",
        "auto swp2", "iface swp2", "    mtu 9216", "",
        "auto swp3", "iface swp3", "    mtu 9216"])


def test_leaf_nvue(small_files):
    doc = yaml.safe_load(small_files["switches/roce/roce-leaf01/nvue.yaml"])
    assert isinstance(doc, list) and len(doc) == 1 and list(doc[0]) == ["set"]
    top = doc[0]["set"]
    assert top["system"]["hostname"] == "roce-leaf01"
    assert top["router"] == {"bgp": {"enable": "on", "autonomous-system": 4200010001, "router-id": "10.65.0.17"}}
    assert top["interface"]["lo"] == {"type": "loopback", "ip": {"address": {"10.65.0.17/32": {}}}}
    assert top["interface"]["swp1"] == {"link": {"breakout": "2x"}}
    assert top["interface"]["swp1s0"] == {"type": "swp", "link": {"mtu": 9216}, "ip": {"address": {"10.64.0.18/31": {}}}}
    assert top["interface"]["swp1s1"]["ip"] == {"address": {"10.64.0.34/31": {}}}
    bgp = top["vrf"]["default"]["router"]["bgp"]
    assert bgp["neighbor"] == {p: {"type": "unnumbered", "remote-as": "external", "timers": {"keepalive": 3, "hold": 9}}
                               for p in ("swp2", "swp3")}
    assert bgp["path-selection"] == {"multipath": {"aspath-ignore": "on"}}
    assert top["system"]["forwarding"]["ecmp-hash"] == {k: "on" for k in (
        "source-ip", "destination-ip", "ip-protocol", "source-port", "destination-port")}


def _paths(node, prefix=()):
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    else:
        yield prefix


def _pattern(path: tuple) -> str:
    """A key path with names and numbers replaced by the placeholders NVUE_KEYS uses."""
    out = []
    for i, key in enumerate(path):
        parent = path[i - 1] if i else ""
        if isinstance(key, int):
            out.append("<n>")
        elif parent in ("interface", "neighbor", "address", "ecmp-hash") or (parent == "switch-priority" and i > 3):
            out.append("<name>")
        else:
            out.append(str(key))
    return ".".join(out)


def test_every_nvue_key_is_documented():
    for name in PER_SWITCH_BLUEPRINTS:
        out = render_targets(plan_of(shipped(name)), ["switches"])
        docs = [p for p in out if p.endswith("nvue.yaml")]
        assert docs, name
        for path in docs:
            top = yaml.safe_load(out[path])[0]["set"]
            used = {_pattern(p) for p in _paths(top)}
            assert used <= set(NVUE_KEYS), (path, sorted(used - set(NVUE_KEYS)))


def test_frr_accepts_every_tier_file():
    """``vtysh --dryrun -f`` (FRR 8.4, Debian's frr) on the first and last switch of every tier of every shipped
    blueprint that renders per-switch files: the switches of a tier differ only in names and numbers, and one
    dry run costs about 60 ms, so 40-odd of them prove the syntax of all ~150."""
    vtysh = require_tool("vtysh")
    checked = 0
    for name in PER_SWITCH_BLUEPRINTS:
        out = switches.render(plan_of(shipped(name)))
        by_tier: dict[str, list[str]] = {}
        for path in sorted(p for p in out if p.endswith("frr.conf")):
            by_tier.setdefault(path.split("/")[1] + "-" + path.split("/")[2].rstrip("0123456789"), []).append(path)
        for paths in by_tier.values():
            for path in {paths[0], paths[-1]}:
                r = subprocess.run([vtysh, "--dryrun", "-f", "/dev/stdin"], input=out[path], capture_output=True,
                                   text=True, timeout=60)
                assert r.returncode == 0, (name, path, r.stdout + r.stderr)
                checked += 1
    assert checked >= 30


def test_frr_refuses_a_broken_file(small_files):
    vtysh = require_tool("vtysh")
    broken = small_files["switches/roce/roce-leaf01/frr.conf"].replace("multipath-relax", "multipath-relaxed")
    r = subprocess.run([vtysh, "--dryrun", "-f", "/dev/stdin"], input=broken, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0


def test_large_blueprint_tables_and_on_demand_files(tmp_path):
    plan = plan_of(shipped("frontier-3tier-100k"))
    out = switches.render(plan)
    leaf = out["switches/roce/leaf.tsv"].splitlines()
    assert leaf[1] == "# switch\tasn\tloopback\tfabric_ports\thost_links\tfirst_host_link"
    # rdma 10.16.0.0/12, 16 reserved (+1 to an even start): gpu00001 rail 0's link is 10.16.0.18/31
    assert leaf[2] == "roce-leaf0001\t4200010001\t10.36.0.17\t32\t64\t10.16.0.18/31"
    assert len(leaf) == 2 + 1664
    one = switches.render(plan, frozenset({"roce-leaf0001"}))
    assert sorted(one) == [f"switches/roce/roce-leaf0001/{f}" for f in ("frr.conf", "interfaces", "nvue.yaml")]
    assert "router bgp 4200010001\n bgp router-id 10.36.0.17\n" in one["switches/roce/roce-leaf0001/frr.conf"]


def test_path_between_fabrics_is_a_bgp_session_at_both_ends():
    out = switches.render(plan_of(shipped("hgx-h200-roce-1024")))
    svc = out["switches/svc/svc-leaf01/frr.conf"]
    assert "router bgp 4202010001\n" in svc and " neighbor swp5 interface peer-group FABRIC\n" in svc
    assert " neighbor swp49 interface peer-group FABRIC\n" in out["switches/converged/converged-leaf06/frr.conf"]
    nvue = yaml.safe_load(out["switches/svc/svc-leaf01/nvue.yaml"])[0]["set"]
    assert list(nvue["vrf"]["default"]["router"]["bgp"]["neighbor"]) == ["swp5"]
