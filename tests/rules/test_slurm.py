"""Slurm rules: each triggered by a small change to the lab blueprint, and quiet on the original."""

from __future__ import annotations

import pytest

from clusterctl.errors import BlueprintError
from tests.helpers import hits, lab, shipped

CODES = ("SLURM001", "SLURM002", "SLURM003", "SLURM004", "SLURM005", "SLURM006", "SLURM007", "SLURM008",
         "SLURM009")


def mi300x_lab():
    data = lab()
    data["node_types"]["amd"] = {"server": "mi300x-8gpu"}
    data["node_groups"][0]["type"] = "amd"
    return data


def test_no_slurm_section_is_quiet():
    data = lab()
    del data["slurm"]
    for code in CODES:
        assert hits(data, code) == []


def test_partition_names_unknown_group():
    data = lab()
    data["slurm"]["partitions"][0]["groups"] = ["gpus"]
    (h,) = hits(data, "SLURM001")
    assert h.path == ("slurm", "partitions", 0, "groups", 0)
    assert "partition gpu names node group 'gpus'" in h.message and h.hint == "did you mean 'gpu'?"


def test_controller_not_a_host():
    data = lab()
    data["slurm"]["controllers"] = "head1"
    (h,) = hits(data, "SLURM002")
    assert str(h.severity) == "error" and h.path == ("slurm", "controllers")
    assert "controller head1 is not a host" in h.message and "head01" in h.hint


def test_controller_on_a_gpu_node_warns():
    data = lab()
    data["slurm"]["controllers"] = "gpu01"
    (h,) = hits(data, "SLURM002")
    assert str(h.severity) == "warning" and "8 × h100-sxm" in h.message


def test_controller_in_a_partition_warns():
    data = lab()
    data["slurm"]["partitions"].append({"name": "cpu", "groups": ["head"]})
    (h,) = hits(data, "SLURM002")
    assert str(h.severity) == "warning" and "is in a partition" in h.message


def test_single_controller_above_64_nodes_warns():
    data = lab()
    for g in data["node_groups"]:
        g.pop("racks", None)
    data["node_groups"][0].update(count=65, hostnames="gpu[01-65]")
    (h,) = hits(data, "SLURM002")
    assert str(h.severity) == "warning" and "one controller (head01) for 66 nodes" in h.message
    data["node_groups"][1].update(count=2, hostnames="head[01-02]")
    data["slurm"]["controllers"] = "head[01-02]"
    assert hits(data, "SLURM002") == []


def test_unparseable_version_is_an_error():
    data = lab()
    data["slurm"]["version"] = "24.1"
    (h,) = hits(data, "SLURM003")
    assert str(h.severity) == "error" and h.path == ("slurm", "version") and "'24.1'" in h.message


def test_old_version_warns():
    data = lab()
    data["slurm"]["version"] = "23.02"
    (h,) = hits(data, "SLURM003")
    assert str(h.severity) == "warning" and "23.02 is older than 23.11" in h.message


def test_topology_features_need_their_release():
    data = lab()
    data["slurm"].update(version="23.11", topology="block", block_sizes=[18, 36])
    (h,) = hits(data, "SLURM003")
    assert h.path == ("slurm", "block_sizes") and "BlockSizes needs Slurm 24.05" in h.message
    data["slurm"].update(version="23.02", block_sizes=[])
    found = {h.path: h for h in hits(data, "SLURM003")}
    assert "topology/block needs Slurm 23.11 or newer; version is 23.02" in found[("slurm", "topology")].message
    data["slurm"].update(version="24.11", topology="yaml")
    (h,) = hits(data, "SLURM003")
    assert h.path == ("slurm", "topology") and "topology.yaml needs Slurm 25.05 or newer; version is 24.11" in h.message
    data["slurm"]["version"] = "25.05"
    assert hits(data, "SLURM003") == []


def test_block_sizes_without_block_topology_warn():
    data = lab()
    data["slurm"].update(version="24.11", topology="tree", block_sizes=[18, 36])
    (h,) = hits(data, "SLURM003")
    assert str(h.severity) == "warning" and "topology is tree" in h.message


def test_partition_mixing_gpu_counts_warns():
    data = lab()
    data["node_types"]["gb"] = {"server": "gb200-nvl72-tray"}
    data["node_groups"].append({"name": "gb", "type": "gb", "count": 1, "hostnames": "gb01"})
    data["slurm"]["partitions"][0]["groups"] = ["gpu", "gb"]
    (h,) = hits(data, "SLURM004")
    assert str(h.severity) == "warning" and h.path == ("slurm", "partitions", 0, "groups")
    assert "mixes GPU counts per node: gpu (8 × h100-sxm), gb (4 × gb200)" in h.message


def test_nvidia_autodetect_on_amd_is_an_error():
    data = mi300x_lab()
    (h,) = hits(data, "SLURM004")
    assert str(h.severity) == "error" and h.path == ("slurm", "gres_autodetect")
    assert "gres_autodetect: nvml finds NVIDIA GPUs only" in h.message and "mi300x" in h.message
    data["slurm"]["gres_autodetect"] = "off"
    assert hits(data, "SLURM004") == []
    data["slurm"]["gres_autodetect"] = "rsmi"
    assert hits(data, "SLURM004") == []


def test_rsmi_autodetect_on_nvidia_is_an_error():
    data = lab()
    data["slurm"]["gres_autodetect"] = "rsmi"
    (h,) = hits(data, "SLURM004")
    assert "rsmi finds AMD GPUs only, but group gpu has 8 × h100-sxm" in h.message


def test_autodetect_nvidia_needs_24_11():
    data = lab()
    data["slurm"]["gres_autodetect"] = "nvidia"
    (h,) = hits(data, "SLURM004")
    assert "AutoDetect=nvidia needs Slurm 24.11 or newer; version is 24.05" in h.message
    data["slurm"]["version"] = "24.11"
    assert hits(data, "SLURM004") == []


def test_default_partition_none_and_several():
    data = lab()
    data["slurm"]["partitions"][0]["default"] = False
    (h,) = hits(data, "SLURM005")
    assert str(h.severity) == "warning" and h.path == ("slurm", "partitions")
    data["slurm"]["partitions"] = [{"name": "a", "groups": ["gpu"], "default": True},
                                   {"name": "b", "groups": ["gpu"], "default": True}]
    (h,) = hits(data, "SLURM005")
    assert str(h.severity) == "error" and h.path == ("slurm", "partitions", 1, "default")
    assert "2 partitions are marked default (a, b)" in h.message


def test_group_listed_twice_and_idle_compute_group():
    data = lab()
    data["slurm"]["partitions"][0]["groups"] = ["gpu", "gpu"]
    (h,) = hits(data, "SLURM006")
    assert h.path == ("slurm", "partitions", 0, "groups", 1) and "lists node group gpu twice" in h.message
    data["slurm"]["partitions"][0]["groups"] = ["head"]
    (h,) = hits(data, "SLURM006")
    assert str(h.severity) == "warning" and h.path == ("node_groups", 0, "name")
    assert "compute node group gpu (2 nodes, 16 GPUs) is in no partition" in h.message


def test_partition_names():
    data = lab()
    data["slurm"]["partitions"].append({"name": "gpu", "groups": ["gpu"]})
    (h,) = hits(data, "SLURM007")
    assert h.path == ("slurm", "partitions", 1, "name") and "'gpu' is used twice" in h.message
    data["slurm"]["partitions"][1]["name"] = "big gpu"  # refused when loaded (an Identifier), before the rule
    with pytest.raises(BlueprintError) as exc:
        hits(data, "SLURM007")
    (p,) = exc.value.problems
    assert p.path == ("slurm", "partitions", 1, "name") and "a name may not contain a space" in p.message
    data["slurm"]["partitions"][1]["name"] = "Default"  # Slurm's keyword in any case: refused when loaded too
    with pytest.raises(BlueprintError) as exc:
        hits(data, "SLURM007")
    (p,) = exc.value.problems
    assert p.path == ("slurm", "partitions", 1, "name") and "'Default' is a Slurm keyword" in p.message


def test_accounting_host_must_be_a_host():
    data = lab()
    data["slurm"]["accounting_host"] = "dbd01"
    (h,) = hits(data, "SLURM008")
    assert h.path == ("slurm", "accounting_host") and "accounting_host dbd01 is not a host" in h.message
    data["slurm"]["accounting_host"] = "head01"
    assert hits(data, "SLURM008") == []


def test_accounting_backup_host_must_be_another_host():
    data = lab()
    data["slurm"]["accounting_backup_host"] = "dbd02"
    (h,) = hits(data, "SLURM008")
    assert h.path == ("slurm", "accounting_backup_host") and "accounting_backup_host dbd02 is not a host" in h.message
    data["slurm"]["accounting_backup_host"] = "head01"  # the first controller is the primary slurmdbd here
    (h,) = hits(data, "SLURM008")
    assert h.path == ("slurm", "accounting_backup_host") and "is the primary slurmdbd host too" in h.message
    data["slurm"]["accounting_backup_host"] = "gpu01"
    assert hits(data, "SLURM008") == []


def ha_lab(state: str | None = None) -> dict:
    """The lab with a second controller (head[01-02]) and, when given, StateSaveLocation."""
    data = lab()
    data["node_groups"][1].update(count=2, hostnames="head[01-02]")
    data["slurm"]["controllers"] = "head[01-02]"
    if state is not None:
        data["slurm"]["state_save_location"] = state
    return data


def test_backup_controllers_need_state_on_shared_storage():
    (h,) = hits(ha_lab(), "SLURM009")  # the default /var/spool/slurmctld is each controller's own disk
    assert h.path == ("slurm", "state_save_location")
    assert "StateSaveLocation /var/spool/slurmctld is on no shared storage tier, but 2 controllers (head01, head02)" \
        in h.message
    assert "e.g. /home/slurmctld (home at /home)" in h.hint
    (h,) = hits(ha_lab("/srv/slurmctld"), "SLURM009")  # another directory of the controller's own disk
    assert "/srv/slurmctld is on no shared storage tier" in h.message
    (h,) = hits(ha_lab("/homework/state"), "SLURM009")  # a prefix of the name is not the mount
    assert "/homework/state" in h.message


def test_state_on_a_shared_tier_passes_and_one_controller_needs_none():
    assert hits(ha_lab("/pfs/state"), "SLURM009")
    data = ha_lab("/pfs/state")
    data["storage"].append({"name": "pfs", "tier": "parallel", "filesystem": "lustre", "mount": "/pfs",
                            "capacity_tb": 10, "read_gb_per_s": 1, "write_gb_per_s": 1, "servers": "mgs01@tcp"})
    assert hits(data, "SLURM009") == []
    assert hits(lab(), "SLURM009") == []  # one controller: local state is fine


def test_state_on_nfs_exported_by_a_controller_is_a_warning():
    (h,) = hits(ha_lab("/home/slurm/state"), "SLURM009")  # lab's home is head01:/export/home
    assert h.severity.name == "WARNING" and h.path == ("storage", 0, "export")
    assert "exported by controller head01" in h.message


def test_without_a_shared_tier_the_hint_asks_for_one():
    data = ha_lab()
    data["storage"] = [t for t in data["storage"] if t["tier"] == "local"]
    (h,) = hits(data, "SLURM009")
    assert h.hint.startswith("add an nfs (or parallel) storage tier")


def test_shipped_ha_lab_is_quiet():
    data = shipped("lab-ha")
    assert hits(data, "SLURM009") == [] and hits(data, "SLURM008") == []
    data["slurm"]["state_save_location"] = "/var/spool/slurmctld"
    assert [h.path for h in hits(data, "SLURM009")] == [("slurm", "state_save_location")]
