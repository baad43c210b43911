"""The firewall target (docs/monitoring.md, "Host firewall"): lab-2node's rules, hand-read from its plan (in-band
10.10.0.0/24; gpu01 .17, gpu02 .18, head01 .19, which is the controller, the accounting host, the name and DHCP
server, the NFS server of /home and the monitoring server), accepted by nft -c; slurm.conf's SrunPortRange is the
range the rules open."""

from __future__ import annotations

import subprocess

from clusterctl.targets import slurm
from clusterctl.targets.firewall import render
from tests.conftest import require_tool
from tests.helpers import lab, plan_of


def _accepts(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().endswith(" accept")]


def test_lab_rules_open_only_what_each_role_needs():
    files = render(plan_of(lab()))
    assert sorted(files) == ["firewall/groups/gpu.nft", "firewall/groups/head.nft", "firewall/hosts/head01.nft"]
    gpu = files["firewall/groups/gpu.nft"]
    assert "policy drop;" in gpu
    assert "elements = { 10.10.0.17-10.10.0.18 }" in gpu  # the compute nodes, one range
    assert _accepts(gpu) == [
        "ct state established,related accept", 'iif "lo" accept', "meta l4proto { icmp, ipv6-icmp } accept",
        "tcp dport 22 accept",
        "ip saddr @cluster_v4 tcp dport 6818 accept",
        "ip saddr @compute_v4 meta l4proto tcp accept",
        "ip saddr @compute_v4 meta l4proto udp accept",
        "ip saddr @cluster_v4 tcp dport 60001-63000 accept",
        "ip saddr @monitoring_v4 tcp dport 9100 accept",
        "ip saddr @monitoring_v4 tcp dport 9400 accept",
    ]
    head = files["firewall/hosts/head01.nft"]
    assert _accepts(head)[3:] == [
        "tcp dport 22 accept",
        "ip saddr @cluster_v4 tcp dport 60001-63000 accept",
        "ip saddr @monitoring_v4 tcp dport 9100 accept",
        "ip saddr @cluster_v4 tcp dport 6817 accept",
        "ip saddr @cluster_v4 udp dport 123 accept",
        "ip saddr @cluster_v4 udp dport 53 accept",
        "ip saddr @cluster_v4 tcp dport 53 accept",
        "udp dport 67 accept",
        "ip saddr @cluster_v4 tcp dport 6819 accept",
        "ip saddr @accounting_v4 tcp dport 3306 accept",
        "ip saddr @cluster_v4 tcp dport 2049 accept",
        "ip saddr @cluster_v4 tcp dport 9090 accept",
    ]
    assert "elements = { 10.10.0.19 }" in head  # the accounting and monitoring sets: head01 alone


def test_the_rules_parse(tmp_path):
    nft = require_tool("nft")
    for path, text in render(plan_of(lab())).items():
        f = tmp_path / path.replace("/", "_")
        f.write_text(text)
        # in a network namespace of its own: nft -c checks against the kernel without touching the machine's rules
        r = subprocess.run(["unshare", "-n", nft, "-c", "-f", str(f)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"{path}: {r.stderr}"


def test_without_a_firewall_section_nothing_is_rendered_and_srun_ports_stay_ephemeral():
    data = lab()
    assert "SrunPortRange=60001-63000\n" in slurm.render(plan_of(data))["slurm/slurm.conf"]
    del data["firewall"]
    assert render(plan_of(data)) == {}
    assert "SrunPortRange" not in slurm.render(plan_of(data))["slurm/slurm.conf"]
    data["firewall"] = {"enabled": False}
    assert render(plan_of(data)) == {}
