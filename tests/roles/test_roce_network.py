"""The roce_network role run for real (ansible-playbook, connection local) on the shipped RoCE blueprint's rendered
group variables, and its artefacts parsed and compared with the plan.

This machine has no RDMA NIC, no mlnx_qos and no netplan service, so the role writes its files into a temporary
directory (its path variables), finds the rails' interfaces in a sysfs tree made of directories
(``roce_network_sysfs_root``; the role reads ``class/infiniband/<device>/device/net/<interface>`` as on a host)
and applies nothing (``roce_network_apply: false``, ``roce_network_manage_services: false``). What is checked
exactly instead: the netplan file of four hosts of the 128-node group (first, last and both sides of the
gpu099/gpu100 boundary) holds, for each of the 8 rails, the address ``AddressPool.address`` and the underlay
plan (a /31 to its leaf, L3 to the host), the fabric MTU, a routing table per rail with the link and the
fabric's prefix via the leaf ``from`` that address, and a rule ``from`` that address to that table; netplan's
own generator accepts the file; the sysctl file the ARP/rp_filter settings on every rail; the QoS
settings file the DSCP, PFC vector, ECN and CNP values of the fabric, which are those NCCL_IB_TC and the
switch files carry. The same role on an IPv6 pool (the blueprint's rdma cidr changed to fd00:64::/64) writes
the plan's IPv6 addresses. A second run (on gpu100, which both plays reach) reports no change. (ansible-lint's production profile over every role:
tests/integration/test_ansible_real.py.)
"""

from __future__ import annotations

import re
import ipaddress
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand, underlay
from clusterctl.targets import render_targets
from tests.helpers import BLUEPRINTS, REPO, plan_of
from tests.conftest import require_root, require_tool

HOSTS = ("gpu001", "gpu099", "gpu100", "gpu128")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
           "ANSIBLE_LOCALHOST_WARNING": "0"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def plan():
    return expand(load_blueprint(BLUEPRINTS / "hgx-h200-roce-1024.yaml"))


@pytest.fixture(scope="module")
def converged(plan, tmp_path_factory):
    """The role on HOSTS, then again on gpu100; returns (work dir, first run, second run)."""
    require_root("the role writes root-owned files")
    playbook = require_tool("ansible-playbook")
    work = tmp_path_factory.mktemp("roce")
    (work / "gpu.yml").write_text(render_targets(plan, ["ansible"])["ansible/group_vars/gpu.yml"])
    (work / "gpu6.yml").write_text(render_targets(ipv6_plan(), ["ansible"])["ansible/group_vars/gpu.yml"])
    for k in range(8):  # the rails' RDMA devices and their network interfaces, as sysfs lists them
        (work / "sys" / "class" / "infiniband" / f"mlx5_{k}" / "device" / "net" / f"ens{k + 1}np0").mkdir(parents=True)
    (work / "inventory.yml").write_text(yaml.safe_dump(
        {"all": {"hosts": {h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                           for h in HOSTS}}}))
    def play(name: str, hosts: str, group_vars: str, out: str) -> dict:
        return {
            "name": name, "hosts": hosts, "gather_facts": False, "vars_files": [group_vars],
            "vars": {"roce_network_sysfs_root": "{{ playbook_dir }}/sys", "roce_network_apply": False,
                     "roce_network_manage_services": False,
                     "roce_network_netplan_path": out + "/netplan.yaml", "roce_network_sysctl_path": out + "/sysctl.conf",
                     "roce_network_qos_conf_path": out + "/roce-qos.conf",
                     "roce_network_qos_script_path": out + "/clusterctl-roce-qos",
                     "roce_network_qos_unit_path": out + "/clusterctl-roce-qos.service"},
            "pre_tasks": [{"name": "Output directory", "ansible.builtin.file": {"path": out, "state": "directory",
                                                                                 "mode": "0755"}}],
            "roles": ["roce_network"]}

    (work / "site.yml").write_text(yaml.safe_dump([
        play("RoCE hosts", "all", "gpu.yml", "{{ playbook_dir }}/out/{{ inventory_hostname }}"),
        play("RoCE hosts, IPv6 pool", "gpu100", "gpu6.yml", "{{ playbook_dir }}/out6/{{ inventory_hostname }}"),
    ], sort_keys=False))
    # the second run on one host of the group, the one both plays reach: the hosts run the same tasks with the same
    # group variables (only the host's index differs), as the rehearsal's second converge (deploy.one_per_group_set)
    runs = [_run([playbook, "-i", "inventory.yml", "site.yml", *limit], work) for limit in ([], ["--limit", "gpu100"])]
    for r in runs:
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    return work, *(_recap(r.stdout) for r in runs)


def ipv6_plan():
    data = yaml.safe_load((BLUEPRINTS / "hgx-h200-roce-1024.yaml").read_text())
    data["addressing"]["rdma"]["cidr"] = "fd00:64::/64"
    return plan_of(data)


def _recap(stdout: str) -> dict[str, dict[str, int]]:
    """PLAY RECAP: host -> {ok, changed, failed, ...}."""
    out = {}
    for m in re.finditer(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", stdout, re.MULTILINE):
        out[m.group(1)] = {k: int(v) for k, v in (kv.split("=") for kv in m.group(2).split())}
    return out


def test_addresses_are_the_planned_ones(plan, converged):
    work = converged[0]
    g = plan.group("gpu")
    pool = next(p for p in plan.addresses if p.role == "compute")
    for host in HOSTS:
        i = g.hosts.index(host)
        eth = yaml.safe_load((work / "out" / host / "netplan.yaml").read_text())["network"]["ethernets"]
        assert list(eth) == [f"ens{k + 1}np0" for k in range(8)]
        rails = underlay.host_rails(plan, host)
        for k, name in enumerate(eth):
            assert eth[name]["addresses"] == [f"{pool.address(g.index, i, k)}/31"] == [
                f"{rails[k].address}/{rails[k].prefix}"]
            assert eth[name]["mtu"] == 9000 and eth[name]["dhcp4"] is False
    first = yaml.safe_load((work / "out" / "gpu001" / "netplan.yaml").read_text())["network"]["ethernets"]
    last = yaml.safe_load((work / "out" / "gpu128" / "netplan.yaml").read_text())["network"]["ethernets"]
    # a /31 per NIC: 16 reserved after the network address, the pairs start on an even address (18, the leaf's)
    assert first["ens1np0"]["addresses"] == ["10.64.0.19/31"]
    assert last["ens8np0"]["addresses"] == ["10.64.8.17/31"]   # 18 + 127 x 16 + 2 x 7 + 1 = 2,065 = 8 x 256 + 17


def test_ipv6_pool_addresses(converged):
    work = converged[0]
    plan6 = ipv6_plan()
    g = plan6.group("gpu")
    pool = next(p for p in plan6.addresses if p.role == "compute")
    eth = yaml.safe_load((work / "out6" / "gpu100" / "netplan.yaml").read_text())["network"]["ethernets"]
    for k, nic in enumerate(eth.values()):
        ip, prefix = nic["addresses"][0].split("/")
        assert ipaddress.ip_address(ip) == ipaddress.ip_address(pool.address(g.index, 99, k)) and prefix == "127"
        gateway = str(ipaddress.ip_address(ip) - 1)
        assert nic["routes"][1]["to"] == "fd00:64::/64" and ipaddress.ip_address(nic["routes"][1]["via"]) == \
            ipaddress.ip_address(gateway)
        assert nic["routing-policy"][0]["from"] == ip


def test_source_routing_per_rail(plan, converged):
    work = converged[0]
    for host in HOSTS:
        eth = yaml.safe_load((work / "out" / host / "netplan.yaml").read_text())["network"]["ethernets"]
        tables = []
        for k, nic in enumerate(eth.values()):
            ip = nic["addresses"][0].split("/")[0]
            gateway = str(ipaddress.ip_address(ip) - 1)
            main = [{"to": "10.64.0.0/20", "via": gateway, "on-link": True}] if k == 0 else []
            assert nic["routes"] == [
                {"to": f"{gateway}/31", "scope": "link", "from": ip, "table": 101 + k},
                {"to": "10.64.0.0/20", "via": gateway, "from": ip, "on-link": True, "table": 101 + k}, *main]
            assert nic["routing-policy"] == [{"from": ip, "table": 101 + k, "priority": 1000 + k}]
            tables.append(101 + k)
        assert len(set(tables)) == 8
    gpu001 = yaml.safe_load((work / "out" / "gpu001" / "netplan.yaml").read_text())["network"]["ethernets"]
    assert gpu001["ens2np0"]["routes"][1] == {"to": "10.64.0.0/20", "via": "10.64.0.20", "from": "10.64.0.21",
                                              "on-link": True, "table": 102}
    sysctl = (work / "out" / "gpu001" / "sysctl.conf").read_text().splitlines()
    for key, value in (("arp_ignore", "1"), ("arp_announce", "2"), ("rp_filter", "2")):
        assert f"net.ipv4.conf.all.{key} = {value}" in sysctl
        for k in range(8):
            assert f"net.ipv4.conf.ens{k + 1}np0.{key} = {value}" in sysctl


def test_netplan_generate_accepts_the_file(converged, tmp_path):
    """netplan.io's own generator (Debian 12's netplan 0.106) reads the rendered file and writes systemd-networkd
    units: the rail's address, its routes in its table and the routing-policy rule reach the .network file."""
    netplan = require_tool("netplan")
    work = converged[0]
    (tmp_path / "etc" / "netplan").mkdir(parents=True)
    (tmp_path / "etc" / "netplan" / "60-clusterctl-roce.yaml").write_text(
        (work / "out" / "gpu001" / "netplan.yaml").read_text())
    (tmp_path / "etc" / "netplan" / "60-clusterctl-roce.yaml").chmod(0o600)
    r = subprocess.run([netplan, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    unit = (tmp_path / "run" / "systemd" / "network" / "10-netplan-ens2np0.network").read_text()
    assert "Address=10.64.0.21/31" in unit and "MTUBytes=9000" in unit
    assert "Destination=10.64.0.0/20" in unit and "Gateway=10.64.0.20" in unit and "Table=102" in unit
    assert "[RoutingPolicyRule]" in unit and "From=10.64.0.21" in unit and "Priority=1001" in unit


def test_host_qos_settings(plan, converged):
    work = converged[0]
    lines = [ln for ln in (work / "out" / "gpu100" / "roce-qos.conf").read_text().splitlines()
             if ln and not ln.startswith("#")]
    conf = dict(ln.split("=", 1) for ln in lines)
    assert {k: shlex.split(v)[0] if k != "INTERFACES" else shlex.split(v) for k, v in conf.items()} == {
        "INTERFACES": [" ".join(f"ens{k + 1}np0" for k in range(8))], "DSCP": "26", "PRIORITY": "3",
        "PFC": "0,0,0,1,0,0,0,0", "ECN": "1", "CNP_DSCP": "48", "CNP_PRIORITY": "6"}
    script = work / "out" / "gpu100" / "clusterctl-roce-qos"
    assert os.access(script, os.X_OK)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_second_run_changes_nothing(converged):
    _, first, second = converged
    assert set(first) == set(HOSTS) and all(s["changed"] > 0 for s in first.values()), first
    assert set(second) == {"gpu100"}
    assert all(s["changed"] == 0 and s["failed"] == 0 for s in second.values()), second
