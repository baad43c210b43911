"""Names that differ only in case (or, for racks, in the punctuation Ansible folds) are one name to their
reader: refused, unsuppressibly (NAME006); and the slurmdbd account host carries no MySQL wildcard (NAME007)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import BLUEPRINTS, cli, hits, lab, run
from tests.security.files import LAB
from tests.security.files import line_of as _line
from tests.security.files import write_blueprint as _write


def test_login_node_in_upper_case_before_the_head_node_is_an_error(tmp_path):
    """The reproducer: HEAD01 listed before head01 took head01's name in every /etc/hosts (only a warning)."""
    text = LAB.replace("  - {name: head, type: head,",
                       "  - {name: login, type: head, role: login, count: 1, hostnames: HEAD01, racks: lab01}\n"
                       "  - {name: head, type: head,")
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 1
    assert "error[NAME006]" in out.stderr and f"{bp}:{_line(text, 'hostnames: head01')}:" in out.stderr
    assert "1 name(s) of node group head differ only in case from names of node group login (head01 / HEAD01)" \
        in out.stderr
    suppressed = cli("validate", str(bp), "--suppress", "NAME006")
    assert suppressed.returncode == 2 and "cannot be suppressed" in suppressed.stderr


def test_a_blueprint_cannot_suppress_a_case_collision():
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu01,GPU01"
    data["validation"] = {"suppress": [{"rule": "NAME006", "reason": "trust me"}]}
    (f,) = [f for f in run(data).findings if f.code == "NAME006"]
    assert f.suppressed is None and str(f.severity) == "error"
    assert "1 name(s) of node group gpu differ only in case from names of each other (GPU01 / gpu01)" in f.message


def test_host_named_like_a_switch_in_another_case():
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu01,IB-LEAF01"
    (h,) = hits(data, "NAME006")
    assert h.path == ("fabrics", 0, "name")
    assert "leaf switches of fabric ib differ only in case from names of node group gpu (ib-leaf01 / IB-LEAF01)" \
        in h.message


def test_partitions_and_node_types_differing_only_in_case():
    data = lab()
    data["slurm"]["partitions"].append({"name": "GPU", "groups": ["gpu"]})
    data["node_types"]["HGX"] = data["node_types"]["hgx"]
    found = {h.path: h.message for h in hits(data, "NAME006")}
    assert found == {
        ("node_types", "HGX"): "node type name 'HGX' differs only in case from 'hgx' (at node_types.hgx)",
        ("slurm", "partitions", 1, "name"):
            "partition name 'GPU' differs only in case from 'gpu' (at slurm.partitions[0].name)"}


def test_qos_names_are_lower_case_when_loaded(tmp_path):
    """sacctmgr stores QOS names in lower case: 'Urgent' (next to 'urgent' or alone) was added again and modified
    on every converge, as the role compared 'Urgent' with the 'urgent' sacctmgr shows."""
    text = LAB.replace("- {name: urgent, priority: 1000", "- {name: Urgent, priority: 1000")
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 2
    assert f"{bp}:{_line(text, 'name: Urgent')}:" in out.stderr
    assert "slurm.qos[0].name is 'Urgent' (text): a QOS name may not contain 'U'" in out.stderr
    assert "sacctmgr stores QOS names in lower case" in out.stderr


def _two_racks(second: str) -> str:
    return (LAB.replace("  - {names: lab01, profile: lab}", f"  - {{names: r-1, profile: lab}}\n"
                                                           f"  - {{names: \"{second}\", profile: lab}}")
            .replace('hostnames: "gpu[01-02]", racks: lab01', f'hostnames: "gpu[01-02]", racks: "r-1,{second}"')
            .replace("lab01", "r-1"))


def test_rack_names_one_ansible_group_apart_fail_validate_as_render_refused(tmp_path):
    """validate passed r-1 and r.1 while render refused them (both are the Ansible group rack_r_1)."""
    text = _two_racks("r.1")
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 1
    where = _line(text, 'names: "r.1"')
    assert "error[NAME006]" in out.stderr and f"{bp}:{where}:" in out.stderr
    assert "differ only in case, '-', '.' or '_' from names of racks[0] (r.1 / r-1)" in out.stderr
    rendered = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 1 and "NAME006" in rendered.stderr and "cannot render" not in rendered.stderr


def test_rack_names_with_dashes_and_dots_render(tmp_path):
    """One rack r-1 and one r.2: valid names, distinct groups; render writes them (rack_r_1, rack_r_2)."""
    bp = _write(tmp_path, _two_racks("r.2"))
    assert cli("validate", str(bp)).returncode == 0
    out = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    inventory = (tmp_path / "out" / "ansible" / "inventory.yml").read_text()
    assert "rack_r_1:" in inventory and "rack_r_2:" in inventory


def test_node_group_named_like_a_rack_group():
    data = lab()
    data["node_groups"][0]["name"] = "rack_lab01"
    data["slurm"]["partitions"][0]["groups"] = ["rack_lab01"]
    data["fabrics"][0]["attach"][0]["group"] = "rack_lab01"
    (h,) = hits(data, "NAME008")  # the inventory's group names are decided in plan/inventory_groups.py
    assert h.path == ("node_groups", 0, "name")
    assert h.message == "node group rack_lab01 has the name of the Ansible group of rack lab01"


def test_lower_case_names_are_quiet():
    assert hits(lab(), "NAME006") == [] and hits(lab(), "NAME007") == []


# --- the slurmdbd account host ------------------------------------------------------------------------------

def _underscore_accounting(tmp_path: Path) -> tuple[Path, str]:
    text = (LAB.replace("hostnames: head01", "hostnames: head_01").replace("controllers: head01",
                                                                          "controllers: head_01")
            .replace('"head01:/export/home"', '"head_01:/export/home"')
            .replace("  partitions:", "  accounting_host: head_01\n  partitions:"))
    return _write(tmp_path, text), text


def test_underscore_in_the_slurmdbd_host_is_a_mysql_wildcard(tmp_path):
    """'slurm'@'head_01' admits headx01: even with NAME002 (invalid host names) suppressed, NAME007 refuses."""
    bp, text = _underscore_accounting(tmp_path)
    out = cli("validate", str(bp), "--suppress", "NAME002")
    assert out.returncode == 1
    assert "error[NAME007]" in out.stderr and f"{bp}:{_line(text, 'accounting_host: head_01')}:" in out.stderr
    assert "'slurm'@'head_01'" in out.stderr
    assert cli("validate", str(bp), "--suppress", "NAME007").returncode == 2


def test_underscore_in_the_first_controller_is_located_at_the_controllers():
    data = lab()
    data["node_groups"][1]["hostnames"] = "head_01"
    data["slurm"]["controllers"] = "head_01"
    data["storage"][0]["export"] = "head_01:/export/home"
    (h,) = hits(data, "NAME007")
    assert h.path == ("slurm", "controllers") and "slurmdbd host head_01" in h.message


def test_the_slurmdbd_role_refuses_wildcards_before_any_grant():
    """The role reads DbdHost/DbdBackupHost from the rendered slurmdbd.conf: it asserts they are literal names."""
    tasks = (BLUEPRINTS.parent / "roles" / "slurmdbd" / "tasks" / "database.yml").read_text()
    check = tasks.index("reject('match', '^[A-Za-z0-9.-]+$')")
    assert check < tasks.index("GRANT ALL")
