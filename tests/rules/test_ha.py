"""HA rules: a backup that is not independent of what it backs up. Each triggered by today's lab-ha layout (the
backup slurmdbd on head01's database, /home exported by head01) and quiet on the shipped lab-ha."""

from __future__ import annotations

import pytest

from tests.helpers import hits, lab, shipped, superpod_one_network_rack


def lab_ha() -> dict:
    return shipped("lab-ha")


def test_shipped_lab_ha_is_quiet():
    data = lab_ha()
    assert hits(data, "HA001") == []
    assert hits(data, "HA002") == []


def test_backup_slurmdbd_on_the_primarys_database_warns():
    data = lab_ha()
    data["slurm"]["accounting_database"] = "primary"  # lab-ha before issue 30: "both use the database on head01"
    (h,) = hits(data, "HA001")
    assert h.path == ("slurm", "accounting_database")
    assert h.message == ("the backup slurmdbd head02 uses the accounting database on head01: losing head01 stops "
                         "both slurmdbd")
    assert "accounting_database: replicated" in h.hint


def test_database_host_on_a_slurmdbd_host_warns_and_elsewhere_is_quiet():
    data = lab_ha()
    data["slurm"].update(database_host="head02", database_ca="/etc/ssl/certs/db-ca.pem")
    (h,) = hits(data, "HA001")
    assert h.path == ("slurm", "database_host") and "on head02: losing head02 stops both" in h.message
    data["slurm"]["database_host"] = "db01"  # the site's server, on neither slurmdbd host
    assert hits(data, "HA001") == []


def test_one_slurmdbd_has_no_backup_to_judge():
    data = lab()  # one controller, one slurmdbd, its database on its own host
    data["slurm"]["accounting_database"] = "primary"
    assert hits(data, "HA001") == []


def test_home_served_by_a_head_of_the_ha_pair_warns():
    data = lab_ha()
    data["storage"][0]["export"] = "head01:/export/home"  # lab-ha before issue 30
    (h,) = hits(data, "HA002")
    assert h.path == ("storage", 0, "export")
    assert h.message.startswith("/home (hard NFS mounts) on storage tier home is served by head01, one of the HA heads")
    assert "outside the HA pair" in h.hint


def test_state_tier_served_by_the_backup_controller_warns():
    data = lab_ha()
    data["storage"][1]["export"] = "head02:/export/shared"
    (h,) = hits(data, "HA002")
    assert h.path == ("storage", 1, "export")
    assert h.message.startswith("StateSaveLocation on storage tier shared is served by head02")


def test_home_on_the_only_controller_is_not_an_ha_finding():
    data = lab()  # one controller: nothing to fail over to (lab-2node exports /home from head01)
    assert data["storage"][0]["export"] == "head01:/export/home"
    assert hits(data, "HA002") == []


# --- BLAST001: one component's failure takes too much of the cluster (docs/whatif.md) -------------------------

@pytest.mark.parametrize("name", ["dgx-h100-superpod-1su", "dgx-h100-superpod-4su", "gb200-nvl72-8rack",
                                  "hgx-h200-roce-1024", "frontier-3tier-100k", "lab-2node", "lab-ha"])
def test_shipped_designs_have_no_single_point_of_failure(name):
    assert hits(shipped(name), "BLAST001") == []


def test_a_rack_with_every_switch_or_both_controllers_warns():
    data = superpod_one_network_rack()
    msgs = {h.subject[1]: h.message for h in hits(data, "BLAST001")}
    # ib01's 8 rail leaves carry every compute port of the 32 DGX in r[01-08]: all 256 GPUs cut off
    assert msgs == {
        "ib01": "rack ib01 takes 256 of the 256 GPUs in other racks (100 %, over validation.max_blast_radius 25 %) "
                "with it",
        "mgmt01": "rack mgmt01 takes every Slurm controller (head01, head02) with it"}
    (ib01,) = [h for h in hits(data, "BLAST001") if h.subject[1] == "ib01"]
    assert ib01.path == ("racks", 1) and "switch_racks" in ib01.hint


def test_the_threshold_is_the_blueprints_and_a_backup_is_needed_to_judge_the_heads():
    data = superpod_one_network_rack()
    data["validation"] = {"max_blast_radius": 1.0}  # nothing can take more than all of it
    data["slurm"]["controllers"] = "head01"  # no backup: one controller's host is not judged here
    assert hits(data, "BLAST001") == []


def test_a_scalable_unit_on_one_leaf_warns_and_a_one_leaf_fabric_does_not():
    data = lab()
    assert hits(data, "BLAST001") == []  # one rack, one leaf: one failure domain by design
    ib = next(f for f in data["fabrics"] if f["name"] == "ib")
    ib.update(tiers=2, su_nodes=1)  # two units of one node, each on its own leaf
    found = hits(data, "BLAST001")
    assert [h.message for h in found] == [
        f"leaf ib-leaf0{k} takes 8 of the 16 GPUs (50 %, over validation.max_blast_radius 25 %) with it"
        for k in (1, 2)]


def test_the_server_of_statesavelocation_in_a_rack_warns_with_a_backup_controller():
    data = shipped("dgx-h100-superpod-1su")  # head01 in mgmt01, head02 in mgmt02; login01 in mgmt01
    data["storage"].append({"name": "state", "tier": "nfs", "export": "login01:/export/slurm", "mount": "/slurmstate",
                            "capacity_tb": 1, "read_gb_per_s": 1, "write_gb_per_s": 1})
    data["slurm"]["state_save_location"] = "/slurmstate/statesave"
    assert [h.message for h in hits(data, "BLAST001")] == [
        "rack mgmt01 takes StateSaveLocation's server login01 with it"]
