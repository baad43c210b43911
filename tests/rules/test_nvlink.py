"""NVLink rules: a GB200 NVL72 fragment built on the lab blueprint, and the lab itself (8-GPU HGX domains)."""

from __future__ import annotations

from tests.helpers import hits, shipped

NVLINK = ("NVLINK001", "NVLINK002", "NVLINK003", "NVLINK004")


def nvl72(racks: int = 2, per_rack: int = 18, count: int = 36) -> dict:
    """The lab with its GPU group replaced by GB200 NVL72 racks (18 trays × 4 GPUs each, one CDU); head node,
    switches and storage stay in rack lab01. Slurm uses topology/block with one block per rack."""
    data = shipped("lab-2node")
    data["site"] = {"name": "dc", "it_power_kw": 1000, "air_cooling_kw": 400}
    data["cooling"] = {"cdus": [{"name": "cdu-a", "capacity_kw": 1200, "flow_lpm": 2000, "supply_c": 32}]}
    data["rack_profiles"]["nvl"] = {"power_kw": 132, "feed_kw": 170, "liquid_kw": 100, "air_kw": 30,
                                    "cdu": "cdu-a", "system": "gb200-nvl72"}
    data["racks"].append({"names": f"nv[01-{racks:02d}]", "profile": "nvl"})
    data["node_types"]["gb"] = {"server": "gb200-nvl72-tray"}
    data["node_groups"][0] = {"name": "gpu", "type": "gb", "count": count, "hostnames": f"gb[001-{count:03d}]",
                              "racks": f"nv[01-{racks:02d}]", "per_rack": per_rack}
    data["slurm"].update(topology="block", block_sizes=[18, 36])
    return data


def test_nvl72_and_lab_are_quiet():
    for data in (nvl72(), shipped("lab-2node")):
        for code in NVLINK:
            assert hits(data, code) == [], code


def test_rack_with_a_partial_domain():
    data = nvl72(count=32, per_rack=16)
    found = hits(data, "NVLINK001")
    msgs = [h.message for h in found]
    assert "rack nv01 holds 16 trays = 64 GPUs; NVL72 domains need 72" in msgs
    assert "rack nv02 holds 16 trays = 64 GPUs; NVL72 domains need 72" in msgs
    assert any("group gpu has 32 trays = 128 GPUs, not a whole number of NVL72 domains" in m for m in msgs)
    assert {h.path for h in found} == {("node_groups", 0, "per_rack"), ("node_groups", 0, "count")}


def test_last_rack_half_filled():
    data = nvl72(count=27)
    msgs = [h.message for h in hits(data, "NVLINK001")]
    assert "rack nv02 holds 9 trays = 36 GPUs; NVL72 domains need 72" in msgs
    assert not any("rack nv01" in m for m in msgs)


def test_domain_not_a_whole_number_of_nodes():
    data = nvl72()
    data["node_groups"][0]["nvlink_domain_gpus"] = 70
    (h,) = hits(data, "NVLINK001")
    assert h.path == ("node_groups", 0, "nvlink_domain_gpus")
    assert "a 70-GPU NVLink domain is not a whole number of 4-GPU gb200-nvl72-tray trays" in h.message


def test_domain_larger_than_the_baseboard():
    data = shipped("lab-2node")
    data["node_groups"][0]["nvlink_domain_gpus"] = 16
    (h,) = hits(data, "NVLINK002")
    assert h.path == ("node_groups", 0, "nvlink_domain_gpus")
    assert "declares 16-GPU NVLink domains but h100-sxm connects at most 8" in h.message
    data["node_groups"][0]["nvlink_domain_gpus"] = 8
    assert hits(data, "NVLINK002") == []


def test_block_sizes_start_at_one_domain():
    data = nvl72()
    data["slurm"]["block_sizes"] = [36, 72]  # base larger than a rack's 18 trays: no block is usable
    found = hits(data, "NVLINK003")
    assert [str(h.severity) for h in found] == ["error", "error"]
    assert found[0].path == ("slurm", "block_sizes", 0)
    assert "starts with 36 nodes but group gpu's NVL72 domain is 18 nodes (72 GPUs / 4 per node)" in found[0].message
    assert "block size 72 exceeds the 36 nodes of the largest NVLink group gpu" in found[1].message
    data["slurm"]["block_sizes"] = [16, 32]  # smaller base: legal in Slurm, but jobs may take partial domains
    (h,) = hits(data, "NVLINK003")
    assert str(h.severity) == "warning" and "starts with 16 nodes" in h.message
    data["slurm"]["block_sizes"] = []
    assert hits(data, "NVLINK003") == []


def test_block_sizes_grow_by_powers_of_two():
    data = nvl72(racks=4, count=72)
    data["slurm"]["block_sizes"] = [18, 54]
    (h,) = hits(data, "NVLINK003")
    assert h.path == ("slurm", "block_sizes", 1)
    assert "block size 54 is not a power-of-two multiple of the previous size 18" in h.message
    data["slurm"]["block_sizes"] = [18, 72]
    assert hits(data, "NVLINK003") == []


def test_block_topology_without_multi_node_domains():
    data = shipped("lab-2node")
    data["slurm"]["topology"] = "block"
    (h,) = hits(data, "NVLINK003")
    assert str(h.severity) == "warning" and h.path == ("slurm", "topology")
    assert "no node group has a multi-node NVLink domain" in h.message


def test_nvl72_with_tree_topology():
    data = nvl72()
    data["slurm"]["topology"] = "tree"
    (h,) = hits(data, "NVLINK004")
    assert str(h.severity) == "warning" and h.path == ("slurm", "topology")
    assert "group gpu has NVL72 domains but slurm.topology is tree" in h.message and "18" in h.hint
    data["slurm"]["topology"] = "yaml"
    assert hits(data, "NVLINK004") == []


def test_multi_node_nvlink_needs_slurm_24_05_for_imex_channels():
    data = nvl72()
    data["slurm"]["version"] = "23.11"
    (h,) = hits(data, "NVLINK005")
    assert h.path == ("slurm", "version")
    assert h.message == ("group gpu has NVL72 domains but Slurm 23.11 predates switch/nvidia_imex (24.05): "
                         "jobs get no IMEX channel")
    data["slurm"]["version"] = "24.05"
    assert hits(data, "NVLINK005") == []
    assert hits(shipped("lab-2node") | {"slurm": {**shipped("lab-2node")["slurm"], "version": "23.11"}},
                "NVLINK005") == []  # 8-GPU domains inside one node: no IMEX


def test_imex_needs_an_in_band_pool_for_its_peer_list():
    data = nvl72()
    assert hits(data, "NVLINK006") == []
    del data["addressing"]["inband"]
    (h,) = hits(data, "NVLINK006")
    assert h.path == ("node_groups", 0)
    assert "no IMEX peer list (nodes_config.cfg) can be rendered" in h.message
