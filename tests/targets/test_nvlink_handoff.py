"""nvlink/<domain>.yaml: the hand-off of each multi-node NVLink domain to the tool that manages the NVLink switch
trays (clusterctl configures none of them; docs/nvlink.md), stating what Slurm's blocks, IMEX and the health
check assume of it."""

from __future__ import annotations

from clusterctl import yamlout
from clusterctl.targets import nvlink
from tests.helpers import lab, plan_of, shipped


def test_each_nvl72_rack_gets_one_file_with_its_trays_gpus_block_and_imex_domain():
    files = nvlink.render(plan_of(shipped("gb200-nvl72-8rack")))
    assert sorted(files) == [f"nvlink/nvlink_gb200_{n}.yaml" for n in range(1, 9)]
    last = yamlout.load(files["nvlink/nvlink_gb200_8.yaml"])
    assert last == {
        "nvlink_domain": "nvlink_gb200_8", "racks": ["nvl08"], "rack_system": "gb200-nvl72",
        "nvlink_switch_trays": 9, "node_group": "gb200", "compute_trays": 18, "gpus_per_tray": 4,
        "expected_gpus": 72, "hosts": [f"gb{n:03d}" for n in range(127, 145)],
        "partition": {"nvlink_partition": "default", "gpus": 72, "slurm_block": "nvl08",
                      "imex_domain": "nvlink_gb200_8", "imex_peers_file": "ansible/group_vars/nvlink_gb200_8.yml"},
        "node_health": {"node_health_nvlink_cluster_uuid": "", "node_health_nvlink_clique_id": ""},
    }
    text = files["nvlink/nvlink_gb200_8.yaml"]
    assert "clusterctl configures none of the switch trays" in text
    assert "NMX-M, or NVIDIA Mission Control / Base Command Manager" in text


def test_no_multi_node_nvlink_no_file():
    assert nvlink.render(plan_of(lab())) == {}
    assert nvlink.render(plan_of(shipped("frontier-3tier-100k"))) == {}  # HGX B200: NVLink inside each node
