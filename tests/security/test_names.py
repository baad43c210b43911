"""Names are names (docs/security.md, "Layer 6"): a host, switch or rack name (as host lists expand them), a node
group, partition, QOS or node type name is never an address, a reserved word, or another name of its namespace in
another case, and neither the blueprint nor --suppress can switch that off."""

from __future__ import annotations

import pytest

from clusterctl.errors import BlueprintError
from tests.helpers import cli, hits, lab, rename_only_rack, run, to_yaml

from tests.security.files import LAB
from tests.security.files import line_of as _line
from tests.security.files import write_blueprint as _write


def _head_named(name: str) -> dict:
    """lab-2node with its head node (and controller) renamed."""
    data = lab()
    data["node_groups"][1]["hostnames"] = name
    data["slurm"]["controllers"] = "gpu01"
    data["storage"][0]["export"] = "gpu01:/export/home"
    return data


# --- addresses ---------------------------------------------------------------------------------------------

ADDRESSES = ["3405803781", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "10.1.2", "127.0.0.1", "0"]
RESERVED = ["localhost", "localhost.localdomain", "localhost6", "LOCALHOST", "ip6-localhost", "ip6-loopback",
            "ip6-allnodes", "all", "ALL", "default", "Default", "ungrouped"]


@pytest.mark.parametrize("name", ADDRESSES)
def test_host_names_that_parse_as_ipv4_addresses_are_refused_when_loaded(name):
    with pytest.raises(BlueprintError) as exc:
        run(_head_named(name))
    (p,) = exc.value.problems
    assert p.path == ("node_groups", 1, "hostnames") and f"'{name}' reads as an IPv4 address" in p.message


@pytest.mark.parametrize(("expr", "name"), [("340580378[1]", "3405803781"), ("[2130706433]", "2130706433"),
                                           ("0x7f00000[1]", "0x7f000001"), ("0177.0.0.[1]", "0177.0.0.1"),
                                           ("127.[1]", "127.1"), ("10.1.[2]", "10.1.2"), ("[0]", "0")])
def test_host_names_a_range_makes_addresses_of_are_errors(expr, name):
    """The same names made by a range: NAME005 sees them expanded."""
    (h,) = hits(_head_named(expr), "NAME005")
    assert str(h.severity) == "error" and h.path == ("node_groups", 1, "hostnames")
    assert f"'{name}' reads as an IPv4 address" in h.message


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_host_names_are_refused_when_loaded(name):
    with pytest.raises(BlueprintError) as exc:
        run(_head_named(name))
    (p,) = exc.value.problems
    assert p.path == ("node_groups", 1, "hostnames") and f"'{name}' is a" in p.message


@pytest.mark.parametrize("name", ["localhost[1]", "ip6-[1]", "localhost.[1]"])
def test_reserved_host_names_a_range_makes_are_errors(name):
    (h,) = hits(_head_named(name), "NAME005")
    assert h.path == ("node_groups", 1, "hostnames") and "is a loopback or multicast name" in h.message


def test_names_expanded_from_a_host_list_are_checked_one_finding_per_list():
    data = _head_named("[2130706433-2130706434]")
    data["node_groups"][1]["count"] = 2
    (h,) = hits(data, "NAME005")
    assert h.path == ("node_groups", 1, "hostnames")
    assert h.message.startswith("2 name(s) of node group head cannot be names: '2130706433' reads as an IPv4")
    assert "(also 2130706434)" in h.message


def test_numeric_host_range_is_refused_at_validate_not_at_render(tmp_path):
    """Render refused the inventory pattern '[01:02]' while validate passed: now validate says it, located."""
    text = LAB.replace('hostnames: "gpu[01-02]"', 'hostnames: "[01-02]"')
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 1, out.stderr
    assert "error[NAME005]" in out.stderr and f"{bp}:{_line(text, '[01-02]')}:" in out.stderr
    assert "'01' reads as an IPv4 address" in out.stderr
    rendered = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 1 and "NAME005" in rendered.stderr and "cannot render" not in rendered.stderr
    assert not (tmp_path / "out").exists()


def test_switch_names_made_from_a_fabric_name_are_checked():
    data = lab()
    data["fabrics"][0]["name"] = "localhost"
    data["fabrics"][0]["attach"] = [{"group": "gpu", "nic_role": "compute"}]
    (h,) = hits(data, "NAME005")
    assert h.path == ("fabrics", 0, "name") and "'localhost-leaf01' is a loopback" in h.message


def test_rack_names_are_checked():
    data = rename_only_rack(lab(), "localhost[1]")
    (h,) = hits(data, "NAME005")
    assert h.path == ("racks", 0, "names") and "'localhost1' is a loopback" in h.message
    data["racks"][0]["names"] = "localhost"  # written out: refused when read
    with pytest.raises(BlueprintError) as exc:
        run(data)
    assert exc.value.problems[0].path == ("racks", 0, "names")


def test_every_ipv6_form_is_an_address_and_refused_when_loaded():
    from clusterctl.names import address_reason  # here: the module is new, the other tests run without it

    for name in ("::1", "::ffff:127.0.0.1", "fe80::1%eth0", "0:0:0:0:0:0:0:1"):
        assert address_reason(name) == f"'{name}' is an IPv6 address"
    with pytest.raises(BlueprintError) as exc:
        run(_head_named("::1"))
    assert exc.value.problems[0].path == ("node_groups", 1, "hostnames")


def test_ordinary_names_are_names():
    from clusterctl.names import why_not_a_name

    for name in ("gpu01", "head01", "r07", "a0x1", "x7f000001", "allnodes", "defaults", "ip6", "local-host", "h100"):
        assert why_not_a_name(name) is None, name
    assert codes_of(lab()) == set()


def codes_of(data: dict) -> set[str]:
    return {f.code for f in run(data).active() if f.code.startswith("NAME")}


# --- not suppressible --------------------------------------------------------------------------------------

def test_a_blueprint_cannot_suppress_a_host_name_that_is_an_address():
    data = _head_named("[2130706433]")
    data["validation"] = {"suppress": [{"rule": "NAME005", "reason": "trust me"}]}
    (f,) = [f for f in run(data).findings if f.code == "NAME005"]
    assert f.suppressed is None


@pytest.mark.parametrize("code", ["NAME005", "NAME006", "NAME007"])
def test_the_command_line_cannot_suppress_the_name_rules(tmp_path, code):
    bp = _write(tmp_path, to_yaml(_head_named("[2130706433]")))
    out = cli("validate", str(bp), "--suppress", code)
    assert out.returncode == 2
    assert f"--suppress {code}: rule {code} (" in out.stderr and ") cannot be suppressed" in out.stderr


@pytest.mark.parametrize("name", ["localhost", "2130706433", "0x7f000001"])
def test_a_host_name_written_out_is_refused_through_the_cli_located(tmp_path, name):
    text = LAB.replace("hostnames: head01", f'hostnames: "{name}"').replace("controllers: head01",
                                                                           "controllers: gpu01")
    text = text.replace('"head01:/export/home"', '"gpu01:/export/home"')
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 2
    where = _line(text, f'hostnames: "{name}"')
    assert f"{bp}:{where}:" in out.stderr and f"node_groups[1].hostnames is '{name}' (text): '{name}'" in out.stderr
    assert "hint: allowed: a host list: names of letters" in out.stderr and "no name an address" in out.stderr


def test_a_host_name_a_range_makes_fails_validate_and_render_located(tmp_path):
    text = LAB.replace("hostnames: head01", 'hostnames: "[2130706433]"').replace("controllers: head01",
                                                                                 "controllers: gpu01")
    text = text.replace('"head01:/export/home"', '"gpu01:/export/home"')
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 1
    where = _line(text, 'hostnames: "[2130706433]"')
    assert "error[NAME005]" in out.stderr and f"{bp}:{where}:" in out.stderr and "hint: rename it" in out.stderr
    rendered = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 1 and "NAME005" in rendered.stderr
    assert not (tmp_path / "out").exists()


# --- single names refused when loaded ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["all", "ungrouped", "default", "localhost"])
def test_node_group_names_that_ansible_or_slurm_reserve_are_refused_when_loaded(tmp_path, name):
    text = LAB.replace("- {name: gpu, type: hgx", f"- {{name: {name}, type: hgx").replace(
        "groups: [gpu]", f"groups: [{name}]").replace("{group: gpu, nic_role: compute}",
                                                     f"{{group: {name}, nic_role: compute}}")
    bp = _write(tmp_path, text)
    out = cli("validate", str(bp))
    assert out.returncode == 2, out.stderr
    assert f"{bp}:{_line(text, f'name: {name}, type: hgx')}:" in out.stderr
    assert f"'{name}' is a" in out.stderr


@pytest.mark.parametrize(("where", "name"), [("partition", "DEFAULT"), ("partition", "2130706433"), ("qos", "default"),
                                             ("qos", "localhost"), ("node_type", "ip6-localhost"),
                                             ("node_type", "0x7f000001")])
def test_partition_qos_and_node_type_names_are_refused_when_loaded(where, name):
    data = lab()
    if where == "partition":
        data["slurm"]["partitions"][0]["name"] = name
        path = ("slurm", "partitions", 0, "name")
    elif where == "qos":
        data["slurm"]["qos"][0]["name"] = name
        path = ("slurm", "qos", 0, "name")
    else:
        data["node_types"] = {name if k == "hgx" else k: v for k, v in data["node_types"].items()}
        data["node_groups"][0]["type"] = name
        path = ("node_types", name)
    with pytest.raises(BlueprintError) as exc:
        run(data)
    (p,) = exc.value.problems
    assert p.path == path and f"'{name}'" in p.message


@pytest.mark.parametrize("name", ["all", "ALL", "ungrouped"])
def test_a_partition_may_not_be_called_all(name):
    """The issue's list: Slurm's ALL (Nodes=ALL, AllowGroups=ALL) and Ansible's all/ungrouped are refused for
    partitions too, so a reviewer never has to know in which field a keyword is harmless."""
    data = lab()
    data["slurm"]["partitions"][0]["name"] = name
    with pytest.raises(BlueprintError) as exc:
        run(data)
    (p,) = exc.value.problems
    assert p.path == ("slurm", "partitions", 0, "name") and f"'{name}'" in p.message
