"""The fabric scenario's parts that need no node (docs/rehearse.md, "The fabric scenario"): cables and their names
(clusterctl/rehearse/node/links.py), which slice of each routed fabric boots (clusterctl/rehearse/fabric_plan.py),
what is read from the rendered switch files, and how the suite builds the scenario. The scenario itself, on real
FRR and kernel routing, is tests/e2e/test_fabric.py."""

from __future__ import annotations

import pytest

from clusterctl.rehearse import RehearsalError, suite
from clusterctl.rehearse.fabric_plan import fabric_slices, role_interfaces
from clusterctl.rehearse.fabric_slice import SliceSwitch
from clusterctl.rehearse.node.links import Link, check_links, link_commands
from clusterctl.rehearse.scenario.fabric_checks import covering, next_hop_devs, ping_command, spines_of
from clusterctl.rehearse.scenario.fabric_setup import daemons_script, interface_commands
from clusterctl.targets import render_targets
from tests.helpers import REPO, plan_of, shipped


def _slices(name: str):
    plan = plan_of(shipped(name))
    return plan, {sl.fabric: sl for sl in fabric_slices(plan, render_targets(plan))}


@pytest.fixture(scope="module")
def hgx():
    return _slices("hgx-h200-roce-1024")


def test_a_cable_is_made_inside_both_namespaces_at_its_mtu():
    assert link_commands(Link("leaf1", "swp1", "gpu001", "enp27s0np0", 9216), {"leaf1": "ns-a", "gpu001": "ns-b"}) == [
        ["ip", "link", "add", "swp1", "netns", "ns-a", "mtu", "9216", "type", "veth",
         "peer", "name", "enp27s0np0", "netns", "ns-b", "mtu", "9216"],
        ["ip", "-n", "ns-a", "link", "set", "swp1", "up"],
        ["ip", "-n", "ns-b", "link", "set", "enp27s0np0", "up"]]


@pytest.mark.parametrize("links, message", [
    ([Link("a", "swp1", "c", "swp1")], "ends at c, which is not a rehearsal node"),
    ([Link("a", "a-port-name-too-long", "b", "swp1")], "port name 'a-port-name-too-long' of a cannot be a Linux"),
    ([Link("a", "eth0", "b", "swp1")], "port name 'eth0' of a cannot be a Linux interface name"),
    ([Link("a", "swp1", "b", "swp1"), Link("a", "swp1", "b", "swp2")], "port swp1 of a has two cables"),
    ([Link("a", "swp1", "b", "swp1", 40)], "cable a:swp1 MTU 40 is out of 68..65535"),
])
def test_cables_the_kernel_would_refuse_are_refused_before_anything_boots(links, message):
    with pytest.raises(RehearsalError, match=message.replace("(", r"\(").replace(".", r"\.")):
        check_links(links, ["a", "b"])


def test_hgx_slices_cross_the_spines_on_the_same_rail_of_two_scalable_units(hgx):
    _, slices = hgx
    assert list(slices) == ["roce", "converged", "oob"]
    roce = slices["roce"]
    assert (roce.leaves, roce.spines, roce.hosts, roce.mtu) == (
        ("roce-leaf01", "roce-leaf09"), ("roce-spine01", "roce-spine02"), ("gpu001", "gpu065"), 9000)
    assert [(r.host, r.rail, r.netdev, r.address, r.prefix, r.gateway, r.table, r.leaf) for r in roce.rails] == [
        ("gpu001", 0, "enp24s0np0", "10.64.0.19", 31, "10.64.0.18", 101, "roce-leaf01"),
        ("gpu065", 0, "enp24s0np0", "10.64.4.19", 31, "10.64.4.18", 101, "roce-leaf09")]
    # four links from each leaf to each of the two spines, and each host's rail 0 to its leaf's first downlink
    assert roce.ports_towards("roce-leaf01", "roce-spine01") == ("swp33", "swp41", "swp49", "swp57")
    assert roce.ports_towards("roce-leaf09", "roce-spine02") == ("swp34", "swp42", "swp50", "swp58")
    assert [l for l in roce.links if "gpu" in l.a] == [Link("gpu001", "enp24s0np0", "roce-leaf01", "swp1s0"),
                                                      Link("gpu065", "enp24s0np0", "roce-leaf09", "swp1s0")]
    assert len(roce.links) == 18 and roce.hold_time() == 9
    assert [s.asn for s in roce.switches] == [4200010001, 4200010009, 4200000001, 4200000001]
    assert roce.switch("roce-leaf01").source == "switches/roce/roce-leaf01/frr.conf"


def test_a_fabric_without_addressed_host_ports_checks_its_leaves_loopbacks(hgx):
    _, slices = hgx
    oob = slices["oob"]  # BMC ports: L2 to the host, no address from the underlay
    assert oob.rails == () and oob.hosts == ()
    assert [(e.host, e.netdev, e.gateway, e.leaf) for e in oob.endpoints] == [
        ("oob-leaf01", "lo", "", "oob-leaf01"), ("oob-leaf34", "lo", "", "oob-leaf34")]


def test_a_converged_fabric_boots_hosts_with_their_storage_ports_l3_to_the_host(hgx):
    """The converged fabric's storage ports are /31s from the storage pool (10.63.0.0/22, 16 reserved: pairs from
    .18), the leaf side the gateway, tables 201.. (the host_network role's); in-band ports are not booted."""
    _, slices = hgx
    converged = slices["converged"]
    assert converged.hosts == ("gpu001", "gpu121") and converged.hosts_of("compute") == ()
    assert [(r.host, r.rail, r.netdev, r.address, r.prefix, r.gateway, r.table, r.leaf, r.role)
            for r in converged.rails] == [
        ("gpu001", 0, "enp41s0f0np0", "10.63.0.19", 31, "10.63.0.18", 201, "converged-leaf01", "storage"),
        ("gpu001", 1, "enp41s0f1np1", "10.63.0.21", 31, "10.63.0.20", 202, "converged-leaf01", "storage"),
        ("gpu121", 0, "enp41s0f0np0", "10.63.1.243", 31, "10.63.1.242", 201, "converged-leaf06", "storage"),
        ("gpu121", 1, "enp41s0f1np1", "10.63.1.245", 31, "10.63.1.244", 202, "converged-leaf06", "storage")]
    leaf = converged.switch("converged-leaf01")
    assert "iface swp1s0\n    address 10.63.0.18/31\n" in leaf.interfaces
    assert " match ip address prefix-list UNDERLAY" in leaf.frr_conf
    assert "ip prefix-list UNDERLAY seq 20 permit 10.63.0.0/22 ge 31" in leaf.frr_conf  # advertised


def test_gb200_slices_its_converged_and_oob_fabrics():
    _, slices = _slices("gb200-nvl72-8rack")
    assert {f: (sl.leaves, sl.spines, sl.mtu) for f, sl in slices.items()} == {
        "converged": (("converged-leaf01", "converged-leaf05"), ("converged-spine01", "converged-spine02"), 9000),
        "oob": (("oob-leaf01", "oob-leaf10"), ("oob-spine01", "oob-spine02"), 1500)}


def test_the_role_is_told_the_plans_rail_names(hgx):
    """HGX H200 8-GPU's ConnectX-7 ports as the catalog names them (plan/interfaces.py), in rail order."""
    plan, slices = hgx
    assert role_interfaces(plan, slices["roce"]) == [
        "enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0",
        "enp220s0np0"]
    assert role_interfaces(plan, slices["converged"]) is None


def test_timers_and_asn_come_from_the_rendered_frr_conf():
    conf = "frr defaults datacenter\nrouter bgp 4200010001\n timers bgp 3 9\n neighbor FABRIC timers 5 15\n"
    assert (SliceSwitch("s", "leaf", conf).asn, SliceSwitch("s", "leaf", conf).timers()) == (4200010001, (5, 15))
    assert SliceSwitch("s", "leaf", "frr defaults datacenter\n").timers() == (3, 9)
    assert SliceSwitch("s", "leaf", "router bgp 65000\n").timers() == (60, 180)


def test_the_interfaces_file_gives_present_ports_their_mtu_and_addresses_and_says_what_it_skips():
    text = ("# comment\nauto lo\niface lo inet loopback\n    address 10.65.0.17/32\n\nauto swp1s0\niface swp1s0\n"
            "    address 10.64.0.18/31\n    mtu 9216\n    link-speed 400000\n\nauto swp2\niface swp2\n    mtu 9216\n")
    assert interface_commands(text, {"lo", "swp1s0", "eth0"}) == (
        ["ip addr replace 10.65.0.17/32 dev lo", "ip link set dev swp1s0 mtu 9216",
         "ip addr replace 10.64.0.18/31 dev swp1s0", "ip link set dev swp1s0 up"],
        ["swp1s0: link-speed"])


def test_frr_daemons_are_enabled_for_what_the_configuration_uses():
    assert daemons_script("router bgp 65000\n neighbor swp1 bfd\n") == (
        "sed -i 's/^bgpd=no/bgpd=yes/' /etc/frr/daemons; sed -i 's/^bfdd=no/bfdd=yes/' /etc/frr/daemons")
    assert daemons_script("router bgp 65000\n") == "sed -i 's/^bgpd=no/bgpd=yes/' /etc/frr/daemons"


def test_ecmp_next_hops_are_mapped_to_spines_by_the_cables(hgx):
    _, slices = hgx
    roce = slices["roce"]
    routes = [{"dst": "10.64.4.18/31", "protocol": "bgp", "nexthops": [
        {"gateway": "fe80::1", "dev": "swp33"}, {"gateway": "fe80::2", "dev": "swp34"}]},
        {"dst": "10.64.0.0/20", "dev": "swp41"}]
    route = covering(routes, "10.64.4.19")
    assert next_hop_devs(route) == ["swp33", "swp34"]
    assert spines_of(roce, "roce-leaf01", route) == ["roce-spine01", "roce-spine02"]
    assert ping_command("10.64.0.19", "10.64.4.19", 8972) == (
        "ping -n -q -c 2 -i 0.2 -W 2 -M do -s 8972 -I 10.64.0.19 10.64.4.19")


def test_fabric_runs_alone_and_says_when_a_blueprint_has_no_routed_fabric():
    with pytest.raises(RehearsalError, match=r"^the fabric scenario runs alone \(it boots the fabric's switches"):
        suite.choose(["fabric", "deploy"], plan_of(shipped("lab-2node")))
    with pytest.raises(RehearsalError, match="^the fabric scenario needs a routed Ethernet/RoCE fabric .*: no "
                                             "Ethernet/RoCE fabric of two tiers or more with hosts attached$"):
        suite.choose("fabric", plan_of(shipped("lab-2node")))
    assert "fabric" not in [s.name for s in suite.choose("all", plan_of(shipped("hgx-h200-roce-1024")))[0]]


def test_the_fabric_rehearsal_boots_switches_and_hosts_and_installs_only_frr_and_netplan(tmp_path, hgx):
    plan, _ = hgx
    reh = suite.build("fabric", REPO / "blueprints" / "hgx-h200-roce-1024.yaml", plan, tmp_path / "r", 1,
                      render_targets)
    assert [s.name for s in reh.steps] == ["ssh-check", "mirror", "install", "switches", "rails", "ecmp", "reach",
                                           "mtu", "reroute"]
    mirror = reh.steps[1]
    assert (mirror.packages, mirror.debs) == (("frr", "netplan.io"), None)
    assert [s.name for s in reh.specs][:6] == ["roce-leaf01", "roce-leaf09", "roce-spine01", "roce-spine02",
                                               "gpu001", "gpu065"]
    assert len(reh.specs) == 15 and {s.init for s in reh.specs} == {"systemd"}  # gpu001 is on both fabrics
    assert len(reh.links) == 18 + 28 + 4  # converged: 24 leaf-spine cables and 4 storage ports
    assert (tmp_path / "r" / "ansible" / "rehearsal-fabric.yml").is_file()


def test_the_state_file_keeps_the_cables_for_down(tmp_path):
    """Cables are recorded before they are made, so ``down`` after a crash knows them (their ends die with the
    nodes' namespaces)."""
    from clusterctl.rehearse.node.state import State, load, save

    state = State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.254.1.254/24", prefix=24,
                  key="k", known_hosts="h", ssh_config="c", links=[["leaf1", "swp33", "spine1", "swp1", 1500]])
    save(state)
    assert load(tmp_path).links == [["leaf1", "swp33", "spine1", "swp1", 1500]]
