"""RoCE: one QoS declaration per fabric reaches NCCL_IB_TC, the hosts' group variables and the switch files with
the same numbers; the per-group RDMA address tables stay compact; the NVUE files parse and hold every port."""

from __future__ import annotations

import yaml

from clusterctl.targets import render_targets
from clusterctl.targets.host_runs import host_runs
from clusterctl.targets.roce import address, host_index, rails
from tests.helpers import plan_of, shipped

BP = "hgx-h200-roce-1024"


def files(data: dict) -> dict[str, str]:
    return render_targets(plan_of(data))


def nccl_tc(out: dict[str, str]) -> int:
    line = next(ln for ln in out["nccl/hgx.conf"].splitlines() if ln.startswith("NCCL_IB_TC="))
    return int(line.split("=", 1)[1])


def group_vars(out: dict[str, str], group: str = "gpu") -> dict:
    return yaml.safe_load(out[f"ansible/group_vars/{group}.yml"])


def nvue(out: dict[str, str], name: str) -> dict:
    """The ``set`` document of switch ``name``'s NVUE file (``roce-leaf01``)."""
    fabric = name.rsplit("-", 1)[0]
    doc = yaml.safe_load(out[f"switches/{fabric}/{name}/nvue.yaml"])
    assert isinstance(doc, list) and len(doc) == 1 and list(doc[0]) == ["set"]
    return doc[0]["set"]


def test_one_qos_declaration_reaches_nccl_hosts_and_switches():
    data = shipped(BP)
    data["fabrics"][0].update(traffic_class=98, pfc_priority=4, cnp_dscp=40)  # DSCP 24 | ECT(0), priority 4
    out = files(data)
    assert nccl_tc(out) == 98
    qos = group_vars(out)["roce_network_qos"]
    assert qos == {"traffic_class": 98, "dscp": 24, "pfc_priority": 4, "pfc": "0,0,0,0,1,0,0,0", "ecn": True,
                   "cnp_dscp": 40, "cnp_priority": 5}
    for switch in ("roce-leaf01", "roce-spine08"):
        sw = nvue(out, switch)["qos"]
        assert sw["roce"] == {"enable": "on", "mode": "lossless"}
        assert sw["mapping"] == {"default-global": {"trust": "l3", "dscp": {24: {"switch-priority": 4},
                                                                             40: {"switch-priority": 5}}}}
        assert sw["pfc"] == {"default-global": {"switch-priority": {4: {}}}}
        assert sw["congestion-control"] == {"default-global": {"traffic-class": {4: {"ecn": "enable"}}}}


def test_shipped_blueprint_numbers():
    out = files(shipped(BP))
    gv = group_vars(out)
    assert nccl_tc(out) == 106 and nccl_tc(out) >> 2 == gv["roce_network_qos"]["dscp"] == 26
    assert list(nvue(out, "roce-leaf01")["qos"]["mapping"]["default-global"]["dscp"]) == [26, 48]
    assert gv["roce_network_mtu"] == 9000 and gv["roce_network_cidr"] == "10.64.0.0/20"
    # L3 to the host: a /31 per NIC (two addresses), the fabric's prefix routed via each rail's leaf
    assert gv["roce_network_stride"] == 16 and gv["roce_network_hosts"] == [["gpu", 3, 1, 128, 0]]
    assert gv["roce_network_prefix"] == 31 and gv["roce_network_routes"] == ["10.64.0.0/20"]
    assert [r["device"] for r in gv["roce_network_rails"]] == [f"mlx5_{k}" for k in range(8)]
    assert [(r["table"], r["priority"]) for r in gv["roce_network_rails"]] == [(101 + k, 1000 + k) for k in range(8)]
    # the NCCL_IB_HCA devices are the rails' devices, in the same order
    hca = next(ln for ln in out["nccl/hgx.conf"].splitlines() if ln.startswith("NCCL_IB_HCA="))
    assert hca == "NCCL_IB_HCA==" + ",".join(f"{r['device']}:1" for r in gv["roce_network_rails"])
    # only the group on the RoCE fabric gets the role
    assert "roce_network" not in out["ansible/group_vars/head.yml"]
    site = yaml.safe_load(out["ansible/site.yml"])
    with_role = [p["hosts"] for p in site if any(r["role"] == "roce_network" for r in p["roles"])]
    assert with_role == ["gpu"]


def test_lab_has_no_roce():
    out = files(shipped("lab-2node"))
    assert not [p for p in out if "roce_network" in p]
    # its one management switch (a plain Ethernet fabric) gets startup files, without RoCE QoS
    assert [p for p in out if p.startswith("switches/")] == [
        "switches/mgmt/mgmt-leaf01/frr.conf", "switches/mgmt/mgmt-leaf01/interfaces", "switches/mgmt/mgmt-leaf01/nvue.yaml"]
    assert "qos" not in nvue(out, "mgmt-leaf01")
    assert "roce_network" not in out["ansible/site.yml"]


def test_rail_addresses_match_the_pool_for_every_host():
    plan = plan_of(shipped(BP))
    g = plan.group("gpu")
    pool = next(p for p in plan.addresses if p.role == "compute")
    cidr, rail_list, stride = rails(plan, g, ())
    runs = host_runs(g.hosts)
    for i, host in enumerate(g.hosts):
        assert host_index(runs, host) == i
        for r in rail_list:
            assert address(cidr, r, stride, i) == pool.address(g.index, i, r.index)


def test_host_runs_stay_compact_and_exact():
    names = [f"gpu{n:06d}" for n in range(1, 128_001)]
    assert host_runs(names) == [["gpu", 6, 1, 128_000, 0]]
    mixed = ["n9", "n10", "n11", "a08", "a09", "a10", "b", "c007"]
    runs = host_runs(mixed)
    assert runs == [["n", 0, 9, 11, 0], ["a", 2, 8, 10, 3], ["b", -1, 0, 0, 6], ["c", 3, 7, 7, 7]]
    assert [host_index(runs, n) for n in mixed] == list(range(8))
    assert host_index(runs, "a8") == -1 and host_index(runs, "n09") == -1 and host_index(runs, "x1") == -1


def test_100k_gpu_blueprint_stays_compact():
    out = files(shipped("frontier-3tier-100k"))
    gv = group_vars(out)
    assert len(gv["roce_network_hosts"]) == 1
    switch_files = sorted(p for p in out if p.startswith("switches/"))
    # ~8,400 switches: one table per tier, not a directory per switch (docs/roce.md, Switches)
    assert switch_files == [f"switches/{f}/{t}.tsv" for f, tiers in (
        ("frontend", ("core", "leaf", "spine")), ("oob", ("core", "leaf", "spine")), ("roce", ("core", "leaf", "spine")),
        ("svc", ("leaf",))) for t in tiers]
    assert sum(len(out[p]) for p in switch_files) < 1_000_000


def test_leaf_ports_breakout_and_mtu():
    out = files(shipped(BP))
    leaf = nvue(out, "roce-leaf01")["interface"]
    # SN5600: 64 x 800G; 64 nodes x 400G on 32 ports split 2x, 32 x 800G uplinks
    for n in range(1, 33):
        assert leaf[f"swp{n}"] == {"link": {"breakout": "2x"}}
        assert leaf[f"swp{n}s0"]["link"] == leaf[f"swp{n}s1"]["link"] == {"mtu": 9216}
    for n in range(33, 65):
        assert leaf[f"swp{n}"] == {"type": "swp", "link": {"mtu": 9216}}
    assert len(leaf) == 1 + 32 * 3 + 32
    spine = nvue(out, "roce-spine01")["interface"]
    assert len(spine) == 1 + 64 and all(v == {"type": "swp", "link": {"mtu": 9216}} for k, v in spine.items() if k != "lo")
    # ECN off: no congestion-control entry
    data = shipped(BP)
    data["fabrics"][0]["ecn"] = False
    assert "congestion-control" not in nvue(files(data), "roce-leaf01")["qos"]
