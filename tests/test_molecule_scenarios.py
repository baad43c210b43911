"""Molecule scenarios of the roles: one shared base config, per-role scenarios of a few lines, never
rendered into a cluster's roles; the create/destroy entry point's contract with Molecule's delegated
driver (the real boot is tests/e2e/test_molecule.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import yaml

from clusterctl.rehearse import molecule as entry
from clusterctl.rehearse.node.state import State, NodeRecord

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / ".config" / "molecule" / "config.yml"
SCENARIOS = sorted(REPO.glob("roles/*/molecule/default/molecule.yml"))


def interpolate(text: str, role_dir: Path) -> str:
    return (text.replace("${MOLECULE_PROJECT_DIRECTORY}", str(role_dir))
            .replace("${MOLECULE_EPHEMERAL_DIRECTORY}", "/eph"))


def test_the_base_config_uses_the_delegated_driver_and_shared_playbooks_that_exist():
    role_dir = REPO / "roles" / "munge"
    base = yaml.safe_load(interpolate(BASE.read_text(), role_dir))
    assert base["driver"]["name"] == "default"  # Molecule's built-in delegated driver
    for step in ("create", "destroy"):
        assert Path(base["ansible"]["playbooks"][step]).resolve().is_file()
    assert base["provisioner"]["inventory"]["group_vars"]["all"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert "idempotence" in base["scenario"]["test_sequence"]
    assert any("/.rehearsal/ssh_config" in o for o in base["driver"]["ssh_connection_options"])


def test_each_scenario_is_its_platform_only_and_has_converge_and_verify():
    assert {p.parts[-4] for p in SCENARIOS} >= {"munge", "node_health"}
    for p in SCENARIOS:
        data = yaml.safe_load(p.read_text())
        assert set(data) <= {"platforms", "provisioner"}, f"{p}: put shared settings in {BASE.relative_to(REPO)}"
        assert set(data.get("provisioner", {})) <= {"inventory"}, p
        assert (p.parent / "converge.yml").is_file() and (p.parent / "verify.yml").is_file(), p


def test_rendered_roles_never_contain_molecule_scenarios(tmp_path):
    from clusterctl.targets.ansible.shipped_roles import role_files

    files = role_files(p.parts[-4] for p in SCENARIOS)
    assert files, "no role copied"
    assert not [f for f in files if "/molecule/" in f]
    assert any(f.endswith("/tasks/main.yml") for f in files)


def test_secrets_are_generated_once_private_and_long_enough(tmp_path):
    path = tmp_path / "secrets.yml"
    entry.write_secrets(path)
    first = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = yaml.safe_load(first)
    assert len(data["munge_key"]) >= 1024 and len(data["slurmdbd_storage_pass"]) >= 32
    entry.write_secrets(path)
    assert path.read_text() == first  # kept: the second converge must see the same key


def test_instance_config_tells_molecule_how_to_reach_each_node(tmp_path):
    state = State(id="abc123", dir=str(tmp_path), bridge="rh-abc123", host_address="10.254.9.254/24", prefix=24,
                  key=str(tmp_path / "id"), known_hosts="k", ssh_config="c",
                  nodes=[NodeRecord("head01", "10.254.9.1", "n", "h", "v", str(tmp_path))])
    assert entry.instance_config(state) == [{"instance": "head01", "address": "10.254.9.1", "user": "root",
                                             "port": 22, "identity_file": str(tmp_path / "id")}]


def test_nodes_get_the_rehearsal_range_not_the_blueprint_s_addresses(tmp_path):
    specs = entry.specs_for(["head01", "gpu01"], tmp_path / "r")
    assert [s.name for s in specs] == ["head01", "gpu01"]
    assert all(s.address.startswith("10.254.") for s in specs)


def test_destroy_without_a_rehearsal_succeeds_and_empties_the_instance_config(tmp_path, capsys):
    config = tmp_path / "instance_config.yml"
    config.write_text("- {instance: head01}\n")
    assert entry.main(["destroy", "--ephemeral-dir", str(tmp_path), "--instance-config", str(config)]) == 0
    assert yaml.safe_load(config.read_text()) == []


def test_a_render_error_is_exit_2_with_a_hint(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    code = entry.main(["create", "--ephemeral-dir", str(tmp_path / "eph"), "--instance-config",
                       str(tmp_path / "ic.yml"), "--blueprint", str(bad), "head01"])
    err = capsys.readouterr().err
    assert code == 2
    assert "rendering" in err and "hint:" in err
    assert not (tmp_path / "eph" / "rehearsal").exists()
