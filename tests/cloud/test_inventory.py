"""`clusterctl inventory --from-pulumi`: the real CLI on recorded stack outputs of aws-p5, expanded by the real
``ansible-inventory``; and every way the outputs or the directory can be wrong (exit 2, no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import yaml

from tests.conftest import require_tool
from tests.helpers import REPO, cli

BLUEPRINT = "blueprints/aws-p5.yaml"
OUTPUTS = Path(__file__).resolve().parent / "data" / "aws-p5.outputs.json"


def ansible_inventory() -> str:
    return require_tool("ansible-inventory")


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
    assert_clean_error(r, "nodes.gpu002.private_ip: 'not-an-ip' is not a plain IP address",
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


# --- refusals (issue 9, item 5): exit 2, the outputs file and the host named, what was expected, a hint, and
# nothing written. They share one render: a refusal must leave it byte for byte and timestamp for timestamp.


@pytest.fixture(scope="module")
def shared_render(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shared") / "out"
    r = cli("render", BLUEPRINT, "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(out)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(out.rglob("*")) if p.is_file()}


def refused(out: Path, outputs_file: Path, *needles: str) -> str:
    """Run inventory, assert a clean exit 2 naming the file and ``needles``, and that nothing changed."""
    before = snapshot(out)
    r = inventory(out, outputs_file)
    assert_clean_error(r, str(outputs_file), *needles)
    assert "hint:" in r.stderr, r.stderr
    assert snapshot(out) == before, "a refused inventory changed the render directory"
    return r.stderr


def with_ip(tmp_path: Path, host: str, ip) -> Path:
    data = outputs()
    data["nodes"][host]["private_ip"] = ip
    return write(tmp_path, data)


NETWORK = "expected an address in the blueprint's vpc network 10.100.0.0/20"


def test_ipv6_scope_id_with_a_newline_lands_nowhere(shared_render, tmp_path):
    payload = "fe80::1%eth0\n10.100.0.99 evil"
    err = refused(shared_render, with_ip(tmp_path, "gpu001", payload),
                  "nodes.gpu001.private_ip: 'fe80::1%eth0\\n10.100.0.99 evil' is not a plain IP address", NETWORK)
    assert "\n10.100.0.99 evil" not in err  # escaped in the message too: no forged line on the terminal
    assert not any(b"evil" in data for data, _ in snapshot(shared_render).values())


def with_ips(tmp_path: Path, ips: list) -> tuple[Path, list[str]]:
    """Outputs with the i-th case as the address of gpu00(i+1); returns the file and those hosts."""
    data = outputs()
    hosts = [f"gpu{i:03d}" for i in range(1, len(ips) + 1)]
    for host, ip in zip(hosts, ips):
        data["nodes"][host]["private_ip"] = ip
    return write(tmp_path, data), hosts


def test_only_the_plain_address_text_is_accepted(shared_render, tmp_path):
    texts = ["fe80::1%eth0", " 10.100.0.5", "10.100.0.5\n", "10.100.0.5 # gpu", "10.100.0.5\x00", "10.100.0.5/20",
             "010.100.0.5", "0x0a.100.0.5", ""]
    path, hosts = with_ips(tmp_path, texts)
    err = refused(shared_render, path, f"({len(texts)} problem(s))")
    for host in hosts:
        assert f"nodes.{host}.private_ip: " in err and NETWORK in err, host
    assert err.count("is not a plain IP address") == 8 and err.count("is not an IP address") == 1


def test_an_address_must_be_a_string(shared_render, tmp_path):
    path, hosts = with_ips(tmp_path, [167772165, ["10.100.0.5"], {"ip": "10.100.0.5"}, True])
    err = refused(shared_render, path, "(4 problem(s))")
    for host in hosts:
        assert f"nodes.{host}.private_ip: expected an address string" in err, host


SPECIAL = [
    ("127.0.0.1", "a loopback address"), ("::1", "a loopback address"),
    ("169.254.169.254", "the instance metadata service (AWS, GCP, Azure)"),
    ("fd00:ec2::254", "AWS's IPv6 instance metadata service"),
    ("169.254.10.1", "a link-local address"), ("fe80::1", "a link-local address"),
    ("224.0.0.251", "a multicast address"), ("ff02::1", "a multicast address"),
    ("0.0.0.0", "the unspecified address"), ("::", "the unspecified address"),
    ("255.255.255.255", "the broadcast address"), ("240.0.0.7", "a reserved address"),
    ("::ffff:10.100.0.5", "an IPv4-mapped IPv6 address (write 10.100.0.5)"),
]


def test_special_addresses_are_refused(shared_render, tmp_path):
    """Loopback, metadata, link-local, multicast, unspecified, broadcast, reserved: one host each."""
    path, hosts = with_ips(tmp_path, [ip for ip, _ in SPECIAL])
    err = refused(shared_render, path, f"({len(SPECIAL)} problem(s))")
    for host, (ip, kind) in zip(hosts, SPECIAL):
        assert f"nodes.{host}.private_ip: {ip} is {kind}, not a node's private address; {NETWORK}" in err, host


OUTSIDE = [
    ("10.0.0.5", "10.0.0.5 is outside the blueprint's vpc network 10.100.0.0/20"),  # the old default vpcCidr
    ("8.8.8.8", "8.8.8.8 is outside the blueprint's vpc network 10.100.0.0/20"),  # public
    ("2001:db8::5", "2001:db8::5 is outside the blueprint's vpc network 10.100.0.0/20"),
    ("10.100.0.0", "10.100.0.0 is the network address of 10.100.0.0/20"),
    ("10.100.15.255", "10.100.15.255 is the broadcast address of 10.100.0.0/20"),
]


def test_address_outside_the_blueprints_network_is_an_error(shared_render, tmp_path):
    path, hosts = with_ips(tmp_path, [ip for ip, _ in OUTSIDE])
    err = refused(shared_render, path, f"({len(OUTSIDE)} problem(s))")
    for host, (_, problem) in zip(hosts, OUTSIDE):
        assert f"nodes.{host}.private_ip: {problem}" in err, host
    assert "clusterctl:vpcCidr" in err and "addressing.vpc" in err  # the hint says which setting to align
    assert "warning" not in err


def test_without_an_inband_pool_only_private_addresses(tmp_path):
    data = yaml.safe_load((REPO / BLUEPRINT).read_text())
    del data["addressing"]
    blueprint = tmp_path / "aws-no-pool.yaml"
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    nodes = outputs()
    nodes["nodes"]["gpu001"]["private_ip"] = "172.31.0.9"  # private, any range: accepted
    ok = cli("inventory", str(blueprint), "--from-pulumi", str(write(tmp_path, nodes)), "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    assert '"gpu001": {ansible_host: "172.31.0.9"}' in (out / "ansible" / "inventory.yml").read_text()
    nodes["nodes"]["gpu001"]["private_ip"] = "8.8.8.8"
    before = snapshot(out)
    r = cli("inventory", str(blueprint), "--from-pulumi", str(write(tmp_path, nodes, "public.json")), "-o", str(out))
    assert_clean_error(r, "nodes.gpu001.private_ip: 8.8.8.8 is not a private address",
                       "expected a private address (RFC 1918 or RFC 4193)", "role: inband")
    assert snapshot(out) == before


def test_host_names_must_be_the_blueprints_and_odd_ones_are_escaped(shared_render, tmp_path):
    data = outputs()
    data["nodes"]["gpu001\n10.1.1.1 evil"] = data["nodes"]["gpu001"]
    data["nodes"]["\x1b[2Jgpu999"] = data["nodes"]["gpu002"]
    err = refused(shared_render, write(tmp_path, data), "2 host(s) that blueprint 'aws-p5' does not have",
                  "'gpu001\\n10.1.1.1 evil'", "'\\x1b[2Jgpu999'", "expected only the hosts of its cloud node groups")
    assert "\x1b" not in err and "\n10.1.1.1" not in err


def test_duplicate_json_keys_are_refused(shared_render, tmp_path):
    text = OUTPUTS.read_text().replace('"private_ip": "10.100.0.37",',
                                       '"private_ip": "10.100.0.37",\n      "private_ip": "10.100.9.9",', 1)
    assert text != OUTPUTS.read_text()
    refused(shared_render, write(tmp_path, text), 'duplicate JSON key(s)', 'nodes.gpu001: "private_ip"',
            "pulumi stack output --json")
    top = '{"nodes": {}, ' + OUTPUTS.read_text().lstrip()[1:]  # a second, empty "nodes" before the real one
    refused(shared_render, write(tmp_path, top, "top.json"), '(top level): "nodes"')


def test_nan_and_infinity_are_not_json(shared_render, tmp_path):
    text = OUTPUTS.read_text().replace('"capacity_gib": 50400', '"capacity_gib": NaN')
    refused(shared_render, write(tmp_path, text), "NaN is not a JSON number")


def test_outputs_file_size_limit(shared_render, tmp_path):
    from clusterctl.cloud.stack.outputs_file import MAX_OUTPUTS_BYTES

    big = tmp_path / "big.json"
    with big.open("w") as f:  # valid JSON (whitespace), one byte over the limit
        f.write("{" + " " * (MAX_OUTPUTS_BYTES - 1) + "}")
    refused(shared_render, big, f"{MAX_OUTPUTS_BYTES + 1:,} bytes, more than the {MAX_OUTPUTS_BYTES:,} bytes")


@pytest.mark.parametrize("kind", ["directory", "named pipe", "character device"])
def test_outputs_must_be_a_regular_file(shared_render, tmp_path, kind):
    path = tmp_path / "special"
    if kind == "directory":
        path.mkdir()
    elif kind == "named pipe":
        os.mkfifo(path)  # no writer: a blocking open or read would hang the command
    else:
        path = Path("/dev/zero")
    refused(shared_render, path, f"must be a regular file, this is a {kind}")


def test_nesting_depth_limit(shared_render, tmp_path):
    refused(shared_render, write(tmp_path, "[" * 50_000, "bomb.json"), "nested more than 32 levels deep")
    data = outputs()
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    data["extra"] = deep  # valid JSON, parseable, but deeper than any stack output
    refused(shared_render, write(tmp_path, data, "deep.json"), "nested more than 32 levels deep")


def test_objects_and_arrays_are_counted_before_parsing(shared_render, tmp_path):
    from clusterctl.cloud.stack.outputs_file import MAX_CONTAINERS

    # ~3 MB of empty arrays: within the size limit, but millions of objects to build
    text = '{"nodes": {}, "x": [' + ",".join(["[]"] * (MAX_CONTAINERS * 10)) + "]}"
    refused(shared_render, write(tmp_path, text), f"{MAX_CONTAINERS * 10 + 3:,} JSON objects/arrays, more than the "
                                                  f"{MAX_CONTAINERS:,}")


def test_not_utf8(shared_render, tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"nodes": {}}\n{"x": "\xe9"}')
    refused(shared_render, path, ":2: not UTF-8 text")


def test_elastic_group_hosts_are_absent_by_design_but_static_ones_are_required():
    """An elastic group has no instance until Slurm resumes a node: the stack's nodes output lists only the
    static hosts, and that is complete; a missing static host is still an error."""
    from clusterctl.cloud.stack.inventory import OutputsError, cloud_nodes
    from tests.helpers import plan_of

    data = yaml.safe_load((REPO / BLUEPRINT).read_text())
    data["node_groups"][0]["cloud"] = {"elastic": True}
    plan = plan_of(data)
    recorded = outputs()
    static = {h: v for h, v in recorded["nodes"].items() if not h.startswith("gpu")}
    nodes = cloud_nodes(plan, {**recorded, "nodes": static}, "outputs.json")
    assert [(n.host, n.group) for n in nodes] == [("head01", "head")]
    with pytest.raises(OutputsError, match=r"1 host\(s\) of blueprint 'aws-p5' are missing: head01"):
        cloud_nodes(plan, {**recorded, "nodes": {}}, "outputs.json")
    # the static blueprint still requires every GPU host
    with pytest.raises(OutputsError, match=r"16 host\(s\) of blueprint 'aws-p5' are missing: gpu\[001-016\]"):
        cloud_nodes(plan_of(yaml.safe_load((REPO / BLUEPRINT).read_text())), {**recorded, "nodes": static}, "o")
