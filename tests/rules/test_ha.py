"""HA rules: a backup that is not independent of what it backs up. Each triggered by today's lab-ha layout (the
backup slurmdbd on head01's database, /home exported by head01) and quiet on the shipped lab-ha."""

from __future__ import annotations

from tests.helpers import hits, lab, shipped


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
