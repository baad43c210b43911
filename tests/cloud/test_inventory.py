"""`clusterctl inventory --from-pulumi`: the real CLI on recorded stack outputs of aws-p5, expanded by the real
``ansible-inventory``; and every way the outputs or the directory can be wrong (exit 2, no traceback)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import cli

BLUEPRINT = "blueprints/aws-p5.yaml"
OUTPUTS = Path(__file__).resolve().parent / "data" / "aws-p5.outputs.json"
CI = bool(os.environ.get("CI"))


def ansible_inventory() -> str:
    path = shutil.which("ansible-inventory")
    if path is None:
        message = "ansible-inventory (ansible-core) is not installed"
        if CI:
            pytest.fail(message + "; CI must have it (scripts/test installs it)")
        pytest.skip(message)
    return path


def outputs() -> dict:
    return json.loads(OUTPUTS.read_text())


@pytest.fixture
def rendered(tmp_path) -> Path:
    out = tmp_path / "out"
    r = cli("render", BLUEPRINT, "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


def inventory(out: Path, outputs_file: Path = OUTPUTS):
    return cli("inventory", BLUEPRINT, "--from-pulumi", str(outputs_file), "-o", str(out))


def write(tmp_path: Path, data, name: str = "outputs.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def assert_clean_error(r, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


def test_recorded_outputs_cover_the_blueprint_in_its_vpc():
    import ipaddress

    data = outputs()
    assert len(data["nodes"]) == 17 and {"fsx_dns_name", "file_systems", "bucket_name"} <= set(data)
    vpc = ipaddress.ip_network("10.100.0.0/20")
    assert all(ipaddress.ip_address(n["private_ip"]) in vpc for n in data["nodes"].values())


def test_inventory_expands_with_ansible_inventory(rendered):
    tool = ansible_inventory()
    (rendered / "pulumi" / "venv").mkdir(parents=True)  # what the user created beside the render: kept
    r = inventory(rendered)
    assert r.returncode == 0, r.stderr
    assert "17 cloud hosts" in r.stderr
    assert (rendered / "pulumi" / "venv").is_dir()
    inv = rendered / "ansible" / "inventory.yml"
    listed = subprocess.run([tool, "-i", str(inv), "--list"], capture_output=True, text=True, timeout=120,
                            cwd=rendered / "ansible", check=False)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    hostvars = data["_meta"]["hostvars"]
    expected = {h: n["private_ip"] for h, n in outputs()["nodes"].items()}
    assert len(hostvars) == 17
    assert {h: v["ansible_host"] for h, v in hostvars.items()} == expected
    assert data["gpu"]["hosts"] == [f"gpu{i:03d}" for i in range(1, 17)]
    assert data["head"]["hosts"] == ["head01"]
    assert data["compute"]["children"] == ["gpu"]
    assert data["gpu_nodes"]["children"] == ["gpu"]
    assert data["slurm_controllers"]["hosts"] == ["head01"]
    assert {"compute", "head", "slurm_controllers", "slurm_accounting"} <= set(data["slurm_cluster"]["children"])
    assert data.get("ungrouped", {}).get("hosts", []) == []
    # group_vars of the render still apply to the cloud hosts
    # (blueprint strings are !unsafe: ansible-inventory --list shows them as {"__ansible_unsafe": value})
    assert hostvars["gpu001"]["clusterctl_node_group"] in ("gpu", {"__ansible_unsafe": "gpu"})
    # /etc/hosts block: the cloud hosts' addresses, for Slurm's names
    hosts = (rendered / "hosts" / "hosts").read_text()
    assert "10.100.0.37 gpu001\n" in hosts and "10.100.3.190 head01\n" in hosts


def test_manifest_stays_consistent_and_rerun_changes_nothing(rendered):
    import hashlib

    assert inventory(rendered).returncode == 0
    manifest = dict(line.rsplit(" ", 1) for line in (rendered / ".clusterctl-manifest").read_text().splitlines()
                    if line and not line.startswith("#"))
    for path in ("ansible/inventory.yml", "hosts/hosts"):
        assert manifest[path] == hashlib.sha256((rendered / path).read_bytes()).hexdigest(), path
    inv = rendered / "ansible" / "inventory.yml"
    os.utime(inv, (1_000_000, 1_000_000))
    r = inventory(rendered)
    assert r.returncode == 0 and "0 file(s) changed" in r.stderr
    assert inv.stat().st_mtime == 1_000_000
    # render --check names exactly the two files the inventory command owns
    check = cli("render", BLUEPRINT, "-o", str(rendered), "--check")
    assert check.returncode == 1
    changed = sorted(line for line in check.stderr.splitlines() if line.startswith(("changed:", "missing:", "extra:")))
    assert changed == [f"changed: {rendered / 'ansible/inventory.yml'}", f"changed: {rendered / 'hosts/hosts'}"]


def test_new_directory_gets_a_full_render(tmp_path):
    out = tmp_path / "new"
    r = inventory(out)
    assert r.returncode == 0, r.stderr
    assert (out / "ansible" / "site.yml").is_file() and (out / "slurm" / "slurm.conf").is_file()
    assert '"gpu016": {ansible_host: "10.100.2.33"}' in (out / "ansible" / "inventory.yml").read_text()


def test_unreadable_outputs(rendered, tmp_path):
    assert_clean_error(inventory(rendered, tmp_path / "nope.json"), "nope.json: cannot read the Pulumi outputs")


def test_outputs_not_json(rendered, tmp_path):
    path = write(tmp_path, "Current stack outputs (2):\n    OUTPUT  VALUE\n")
    assert_clean_error(inventory(rendered, path), f"{path}:1:1: not JSON", "pulumi stack output --json")


def test_outputs_not_an_object(rendered, tmp_path):
    assert_clean_error(inventory(rendered, write(tmp_path, [1, 2])), "expected a JSON object of stack outputs")


def test_outputs_without_nodes(rendered, tmp_path):
    data = outputs()
    del data["nodes"]
    assert_clean_error(inventory(rendered, write(tmp_path, data)), "no 'nodes' output (outputs: bucket_name, file_systems")


def test_secret_nodes_need_show_secrets(rendered, tmp_path):
    data = outputs()
    data["nodes"] = "[secret]"
    assert_clean_error(inventory(rendered, write(tmp_path, data)), "--show-secrets")


def test_hosts_the_blueprint_does_not_have_and_missing_ones(rendered, tmp_path):
    data = outputs()
    data["nodes"]["gpu017"] = dict(data["nodes"]["gpu016"], private_ip="10.100.3.77")
    del data["nodes"]["gpu015"], data["nodes"]["gpu016"]
    r = inventory(rendered, write(tmp_path, data))
    assert_clean_error(r, "1 host(s) that blueprint 'aws-p5' does not have: gpu017",
                       "2 host(s) of blueprint 'aws-p5' are missing: gpu[015-016]")
    assert "10.100.3.77" not in (rendered / "ansible" / "inventory.yml").read_text()  # nothing written


def test_bad_addresses_are_located(rendered, tmp_path):
    data = outputs()
    data["nodes"]["gpu002"]["private_ip"] = "not-an-ip"
    data["nodes"]["gpu003"]["private_ip"] = data["nodes"]["gpu004"]["private_ip"]
    del data["nodes"]["gpu005"]["private_ip"]
    data["nodes"]["gpu006"]["group"] = "head"
    r = inventory(rendered, write(tmp_path, data))
    assert_clean_error(r, "nodes.gpu002.private_ip: 'not-an-ip' is not an IP address",
                       "nodes.gpu004.private_ip: 10.100.0.59 is also the address of gpu003",
                       "nodes.gpu005.private_ip: missing",
                       "nodes.gpu006.group: 'head' but the blueprint has group 'gpu'")


def test_directory_not_rendered_by_clusterctl(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert_clean_error(inventory(out), "was not rendered by clusterctl", "clusterctl render")
    assert (out / "notes.txt").read_text() == "keep me"


def test_stale_render_is_refused(rendered):
    site = rendered / "ansible" / "site.yml"
    site.write_text(site.read_text() + "# edited\n")
    assert_clean_error(inventory(rendered), "is not the current render of blueprint 'aws-p5'", "ansible/site.yml")


def test_render_without_ansible_target_is_refused(tmp_path):
    out = tmp_path / "slurm-only"
    assert cli("render", BLUEPRINT, "-o", str(out), "--target", "slurm").returncode == 0
    assert_clean_error(inventory(out), "rendered without the ansible target")


def test_blueprint_without_cloud_groups(tmp_path):
    r = cli("inventory", "blueprints/lab-2node.yaml", "--from-pulumi", str(OUTPUTS), "-o", str(tmp_path / "o"))
    assert_clean_error(r, "has no cloud node groups")


def test_address_outside_the_blueprints_network_warns(rendered, tmp_path):
    data = outputs()
    data["nodes"]["gpu001"]["private_ip"] = "10.0.0.5"  # a stack created with the default clusterctl:vpcCidr
    r = inventory(rendered, write(tmp_path, data))
    assert r.returncode == 0, r.stderr
    assert "warning:" in r.stderr
    assert "nodes.gpu001.private_ip: 10.0.0.5 is outside the blueprint's vpc network 10.100.0.0/20" in r.stderr
    assert '"gpu001": {ansible_host: "10.0.0.5"}' in (rendered / "ansible" / "inventory.yml").read_text()
