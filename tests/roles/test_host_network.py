"""The host_network_preflight and host_network roles run for real (ansible-playbook, connection local) on the
shipped blueprints' rendered group variables, in a sysfs tree made of directories (the preflight reads
``class/net/<netdev>`` and ``class/infiniband/<rdma>/device/net/<netdev>`` as on a host); the netplan file they
write is checked by netplan itself (``netplan generate --root-dir``, netplan.io 0.106 from Debian 12) and its
addresses compared with literal ones. A host whose names differ is refused before the first play that changes
anything, as site.yml orders them. Nothing is applied (``host_network_apply: false``): this machine's network is
not the cluster's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.targets import render_targets
from tests.conftest import require_root, require_tool
from tests.helpers import BLUEPRINTS, REPO

NETPLAN = "etc/netplan/50-clusterctl-host.yaml"
DHCP_NETWORK = "etc/systemd/network/40-clusterctl-inband.network"


def group_vars(blueprint: str, group: str) -> str:
    return render_targets(expand(load_blueprint(BLUEPRINTS / f"{blueprint}.yaml")), ["ansible"])[
        f"ansible/group_vars/{group}.yml"]


def fake_sysfs(root: Path, ports: list[dict]) -> None:
    """class/net/<netdev> and class/infiniband/<rdma>/device/net/<netdev> for every port."""
    for p in ports:
        if p["rdma"]:
            (root / "class" / "infiniband" / p["rdma"] / "device" / "net" / p["netdev"]).mkdir(parents=True)
        (root / "class" / "net" / p["netdev"]).mkdir(parents=True, exist_ok=True)


def play(name: str, host: str, vars_file: str, roles: list[str], **extra) -> dict:
    out = "{{ playbook_dir }}/out/{{ inventory_hostname }}"
    return {"name": name, "hosts": host, "gather_facts": False, "vars_files": [vars_file],
            "vars": {"host_network_preflight_sysfs_root": "{{ playbook_dir }}/sys/{{ inventory_hostname }}",
                     "host_network_apply": False, "host_network_netplan_path": f"{out}/{NETPLAN}",
                     "host_network_dhcp_network_path": f"{out}/{DHCP_NETWORK}",
                     "host_network_sysctl_path": f"{out}/sysctl.conf",
                     "host_network_tos_unit_path": f"{out}/clusterctl-rdma-cm-tos.service"},
            "pre_tasks": [{"name": "Output directory", "ansible.builtin.file": {
                "path": out + "/{{ d }}", "state": "directory", "mode": "0755"},
                "loop": ["etc/netplan", "etc/systemd/network"], "loop_control": {"loop_var": "d"}}],
            "roles": roles, **extra}


def run(work: Path, plays: list[dict], hosts: list[str]) -> subprocess.CompletedProcess:
    (work / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": {
        h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable} for h in hosts}}}))
    (work / "site.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
           "ANSIBLE_LOCALHOST_WARNING": "0"}
    return subprocess.run([require_tool("ansible-playbook"), "-i", "inventory.yml", "site.yml"], cwd=work,
                          capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def converged(tmp_path_factory) -> Path:
    """dgx003 of the DGX H100 SuperPOD (in-band bond, IPoIB on 8 ports, 2 InfiniBand storage ports) and gpu128 of
    the RoCE blueprint (bond, 2 RoCE storage ports), and head02 of lab-ha (no named port: its in-band port by DHCP,
    matched by the inventory's MAC), converged with their rendered group variables."""
    require_root("the roles write root-owned files")
    work = tmp_path_factory.mktemp("host_network")
    (work / "dgx.yml").write_text(group_vars("dgx-h100-superpod-1su", "dgx"))
    (work / "gpu.yml").write_text(group_vars("hgx-h200-roce-1024", "gpu"))
    (work / "head.yml").write_text(group_vars("lab-ha", "head"))
    fake_sysfs(work / "sys" / "dgx003", yaml.safe_load((work / "dgx.yml").read_text())["host_network_ports"])
    fake_sysfs(work / "sys" / "gpu128", yaml.safe_load((work / "gpu.yml").read_text())["host_network_ports"])
    r = run(work, [play("DGX", "dgx003", "dgx.yml", ["host_network"]),
                   play("HGX RoCE", "gpu128", "gpu.yml", ["host_network"]),
                   play("lab-ha head", "head02", "head.yml", ["host_network"])], ["dgx003", "gpu128", "head02"])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    return work


def netplan(work: Path, host: str) -> dict:
    return yaml.safe_load((work / "out" / host / NETPLAN).read_text())["network"]


def test_netplan_accepts_the_rendered_files(converged):
    tool = require_tool("netplan")
    for host in ("dgx003", "gpu128"):
        root = converged / "out" / host
        r = subprocess.run([tool, "generate", "--root-dir", str(root)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        netdev = (root / "run" / "systemd" / "network" / "10-netplan-bond0.netdev").read_text()
        assert "Kind=bond" in netdev and "Mode=802.3ad" in netdev and "TransmitHashPolicy=layer3+4" in netdev


def test_a_port_with_an_inventory_mac_takes_its_address_by_dhcp_at_the_next_boot(converged):
    out = converged / "out" / "head02"
    assert not (out / NETPLAN).exists()  # nothing static: the plan does not name lab-ha's in-band port
    text = (out / DHCP_NETWORK).read_text()
    assert text.split("\n[Match]\n", 1)[1] == (
        "MACAddress=02:00:0a:0a:00:04\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n"
        "KeepConfiguration=yes\n\n[DHCPv4]\nClientIdentifier=mac\nUseDomains=yes\n")
    assert not (converged / "out" / "dgx003" / DHCP_NETWORK).exists()  # the DGX's in-band bond stays static


def test_dgx_bond_ipoib_and_storage_addresses(converged):
    net = netplan(converged, "dgx003")  # host 2 of dgx[001-032]
    assert net["bonds"]["bond0"]["interfaces"] == ["enp41s0f1np1", "enp170s0f1np1"]
    assert net["bonds"]["bond0"]["addresses"] == ["10.20.0.19/22"]  # network + 16 reserved = .17, + host 2
    assert net["bonds"]["bond0"]["parameters"] == {"mode": "802.3ad", "lacp-rate": "fast",
                                                   "mii-monitor-interval": 100, "transmit-hash-policy": "layer3+4"}
    eth = net["ethernets"]
    # IPoIB: 8 addresses per host from 10.30.0.0/22 on the DGX H100 user guide's compute netdevs, in rail order
    assert [(name, eth[name]["addresses"]) for name in
            ("ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0")] == [
        ("ibp24s0", ["10.30.0.33/22"]), ("ibp64s0", ["10.30.0.34/22"]), ("ibp79s0", ["10.30.0.35/22"]),
        ("ibp94s0", ["10.30.0.36/22"]), ("ibp154s0", ["10.30.0.37/22"]), ("ibp192s0", ["10.30.0.38/22"]),
        ("ibp206s0", ["10.30.0.39/22"]), ("ibp220s0", ["10.30.0.40/22"])]
    assert eth["ibp24s0"]["routing-policy"] == [{"from": "10.30.0.33", "table": 301, "priority": 3000}]
    # storage: two ports, two addresses per host from 10.31.0.0/23, each with its own table and rule
    assert eth["ibp41s0f0"]["addresses"] == ["10.31.0.21/23"] and eth["ibp170s0f0"]["addresses"] == ["10.31.0.22/23"]
    assert eth["ibp170s0f0"]["routes"] == [{"to": "10.31.0.0/23", "scope": "link", "from": "10.31.0.22",
                                            "table": 202}]
    assert eth["enp41s0f1np1"] == {"dhcp4": False, "dhcp6": False, "accept-ra": False}  # a bond member only


def test_roce_storage_ports_are_l3_to_the_host_with_the_fabric_mtu_and_no_rail_is_touched(converged):
    """The converged RoCE fabric is routed: each storage port is the host side of a /31 whose leaf side is its
    gateway, with its own table and ``from`` rule, the storage pool via the leaf (the first port's in main too)."""
    net = netplan(converged, "gpu128")  # host 127 of gpu[001-128]
    eth = net["ethernets"]
    assert sorted(eth) == ["enp170s0f0np0", "enp170s0f1np1", "enp41s0f0np0", "enp41s0f1np1"]  # rails: roce_network
    # /31 pairs from 10.63.0.18 (network + 16 reserved = .17, rounded up to even), 4 per host (2 ports x 2):
    # 18 + 127 x 4 = 526 = 2 x 256 + 14: leaf side 10.63.2.14, host side .15; port 1: .16 / .17
    assert eth["enp41s0f0np0"]["addresses"] == ["10.63.2.15/31"]
    assert eth["enp41s0f1np1"]["addresses"] == ["10.63.2.17/31"]
    assert eth["enp41s0f1np1"]["routes"] == [
        {"to": "10.63.2.16/31", "scope": "link", "from": "10.63.2.17", "table": 202},
        {"to": "10.63.0.0/22", "via": "10.63.2.16", "from": "10.63.2.17", "on-link": True, "table": 202}]
    assert eth["enp41s0f1np1"]["routing-policy"] == [{"from": "10.63.2.17", "table": 202, "priority": 2001}]
    assert eth["enp41s0f0np0"]["routes"][-1] == {"to": "10.63.0.0/22", "via": "10.63.2.14", "on-link": True}
    assert eth["enp41s0f0np0"]["mtu"] == 9000  # the converged RoCE fabric's mtu
    assert net["bonds"]["bond0"]["addresses"] == ["10.60.0.144/22"]  # in-band stays L2: 17 + 127


def test_lnet_on_roce_storage_ports_takes_the_fabric_traffic_class(converged):
    """LNet's o2ib connections are RDMA-CM connections: the unit sets each RoCE storage port's default ToS to the
    converged fabric's traffic class (106: DSCP 26, ECN capable), the value NCCL_IB_TC carries on the rails."""
    unit = (converged / "out" / "gpu128" / "clusterctl-rdma-cm-tos.service").read_text()
    assert ("ExecStart=/bin/sh -c 'echo 106 > /sys/kernel/config/rdma_cm/mlx5_8/ports/1/default_roce_tos'\n"
            in unit)
    assert "ExecStart=/bin/mkdir -p /sys/kernel/config/rdma_cm/mlx5_9\n" in unit
    assert not (converged / "out" / "dgx003" / "clusterctl-rdma-cm-tos.service").exists()  # InfiniBand storage


def test_a_host_with_other_names_is_refused_before_anything_is_written(tmp_path):
    require_root("the roles write root-owned files")
    (tmp_path / "dgx.yml").write_text(group_vars("dgx-h100-superpod-1su", "dgx"))
    ports = yaml.safe_load((tmp_path / "dgx.yml").read_text())["host_network_ports"]
    ports[0] = {**ports[0], "netdev": "ibp25s0"}  # the host's mlx5_0 carries another interface
    fake_sysfs(tmp_path / "sys" / "dgx003", ports)
    marker = "{{ playbook_dir }}/out/{{ inventory_hostname }}/first-change"
    guard = {**play("Interface names preflight, before anything is written", "all", "dgx.yml",
                    ["host_network_preflight"]), "any_errors_fatal": True}
    guard.pop("pre_tasks")
    base = play("Base configuration (the first play that changes a host)", "all", "dgx.yml", [])
    base["tasks"] = [{"name": "Change something", "ansible.builtin.copy": {"content": "x", "dest": marker,
                                                                         "mode": "0644"}}]
    r = run(tmp_path, [guard, base, play("Fabric stack", "all", "dgx.yml", ["host_network"])], ["dgx003"])
    assert r.returncode != 0
    assert ("compute port 0: expected mlx5_0 -> ibp24s0, found mlx5_0 -> ibp25s0" in r.stdout), r.stdout[-3000:]
    assert "so nothing was changed" in r.stdout
    assert not (tmp_path / "out").exists()  # neither the first play's change nor the netplan file


def test_the_role_alone_refuses_too(tmp_path):
    require_root("the roles write root-owned files")
    (tmp_path / "gpu.yml").write_text(group_vars("hgx-h200-roce-1024", "gpu"))
    ports = yaml.safe_load((tmp_path / "gpu.yml").read_text())["host_network_ports"]
    fake_sysfs(tmp_path / "sys" / "gpu001", [p for p in ports if p["rdma"] != "mlx5_9"])  # a storage port missing
    r = run(tmp_path, [play("Fabric stack", "gpu001", "gpu.yml", ["host_network"])], ["gpu001"])
    assert r.returncode != 0
    assert "storage port 1: expected RDMA device mlx5_9, not found" in r.stdout, r.stdout[-3000:]
    assert not (tmp_path / "out" / "gpu001" / NETPLAN).exists()
