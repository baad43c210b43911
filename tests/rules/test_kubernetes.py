"""Kubernetes rules: K8S001 on the GB200 NVL72 blueprint (racks of 18 trays under scalable units of 32) and K8S002 on
names the Kubernetes API refuses (the lab with NVL72 racks, as tests/rules/test_nvlink.py builds it)."""

from __future__ import annotations

from tests.helpers import hits, shipped
from tests.rules.test_nvlink import nvl72

KUBERNETES = {"schedulers": ["volcano", "kueue", "kai"], "slinky": True}


def gb200() -> dict:
    """The shipped GB200 blueprint without its acknowledgement of K8S001."""
    data = shipped("gb200-nvl72-8rack")
    del data["validation"]
    return data


def test_racks_across_scalable_units():
    (h,) = hits(gb200(), "K8S001")
    assert h.path == ("fabrics", 0, "su_nodes")
    assert h.message == "group gb200: its NVLink domains straddle the leaf level; Kubernetes schedulers see spine, " \
                        "accelerator only"
    assert h.hint.startswith("set su_nodes of fabric ib to a multiple of 18")


def test_whole_racks_per_scalable_unit_are_quiet():
    data = gb200()
    data["fabrics"][0]["su_nodes"] = 36  # two racks per SU
    assert hits(data, "K8S001") == []
    assert hits(shipped("dgx-h100-superpod-4su"), "K8S001") == []


def test_quiet_without_a_kubernetes_section():
    data = gb200()
    del data["kubernetes"]
    assert hits(data, "K8S001") == []
    assert hits(data, "K8S002") == []


def test_shipped_names_are_quiet():
    for name in ("gb200-nvl72-8rack", "dgx-h100-superpod-4su", "hgx-h200-roce-1024"):
        assert hits(shipped(name), "K8S002") == [], name


def test_rack_name_too_long_for_a_label_value():
    data = nvl72()
    data["kubernetes"] = KUBERNETES
    data["racks"][1]["names"] = "r" * 61 + "[01-02]"  # 63 characters: the NVLink domains' names, label values
    data["node_groups"][0]["racks"] = "r" * 61 + "[01-02]"
    assert hits(data, "K8S002") == []
    data["racks"][1]["names"] = data["node_groups"][0]["racks"] = "r" * 62 + "[01-02]"  # 64
    (h,) = hits(data, "K8S002")  # one finding per place and use: both racks' domains
    assert h.path == ("racks", 1)
    assert h.message == (f"accelerator {'r' * 62}01 (a node-label value): '{'r' * 60}...' (64 characters) cannot be "
                         "a Kubernetes label value: a Kubernetes label value has at most 63 characters, this one has "
                         "64 (and 1 more)")


def test_upper_case_host_names_cannot_be_node_names():
    data = nvl72()
    data["kubernetes"] = KUBERNETES
    data["node_groups"][0]["hostnames"] = "GB[001-036]"
    (h,) = hits(data, "K8S002")
    assert h.path == ("node_groups", 0, "hostnames")
    assert h.message == "host GB001 (a Node's name): 'GB001' cannot be a Kubernetes object name: a Kubernetes " \
                        "object name may not contain 'G' (and 35 more)"


def _groups(n: int) -> dict:
    """The lab with Kueue chosen and ``n`` GPU worker groups: its own and n - 1 more of one node each."""
    data = shipped("lab-2node")
    data["kubernetes"] = {"schedulers": ["kueue"]}
    first = data["node_groups"][0]
    data["node_groups"] += [{**first, "name": f"g{i:02d}", "count": 1, "hostnames": f"g{i:02d}n[1-1]"}
                            for i in range(1, n)]
    return data


def test_more_gpu_groups_than_a_cluster_queue_holds_flavors():
    (h,) = hits(_groups(65), "K8S005")
    assert h.path == ("node_groups",)
    assert h.message == ("65 GPU worker node groups, but a Kueue ClusterQueue's resource group holds at most 64 "
                         "flavors (one ResourceFlavor per group)")


def test_sixty_four_gpu_groups_fit_one_cluster_queue():
    assert hits(_groups(64), "K8S005") == []
    data = _groups(65)
    data["kubernetes"] = {"schedulers": ["volcano"]}  # no Kueue: no ClusterQueue
    assert hits(data, "K8S005") == []


def test_slinky_without_a_slurm_section():
    data = shipped("dgx-h100-superpod-4su")
    del data["slurm"]
    (h,) = hits(data, "K8S006")
    assert h.path == ("kubernetes", "slinky")
    assert h.message == ("kubernetes.slinky is true, but the blueprint has no slurm section: no Slinky NodeSets, "
                         "Helm values or topology.yaml are written")


def test_slinky_with_its_slurm_section_is_quiet():
    assert hits(shipped("dgx-h100-superpod-4su"), "K8S006") == []
    data = shipped("dgx-h100-superpod-4su")
    del data["slurm"]
    data["kubernetes"]["slinky"] = False
    assert hits(data, "K8S006") == []
