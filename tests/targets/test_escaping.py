"""Defence in depth: a string that reaches a target never becomes syntax of the output language.

The blueprint model refuses most of these payloads at load; here they are put into the loaded blueprint
behind its back (tests/targets/inject.py), so the targets' own escaping is what is tested. For every
field x payload, the render either refuses with a ConfigValueError naming the field (exit 2 in the CLI), or
every output still reads back to the same structure as the unmodified render: the same Key=Value keys in
slurm.conf/gres.conf/nccl.conf, the same YAML keys, Python that parses to the same top-level names, shell
that ``bash -n`` accepts, /etc/hosts with the same number of entries.
"""

from __future__ import annotations

import ast
import re
import subprocess

import pytest

from clusterctl.blueprint.compute import NcclNames
from clusterctl.targets import RenderError, render_targets
from clusterctl.targets.ansible.addresses import hosts_file
from clusterctl.targets.ansible.group_vars import all_vars_file
from clusterctl.targets.ansible.inventory import InventoryError, inventory_file, inventory_name
from clusterctl.targets.ansible.plays import plays, site_file
from clusterctl import yamlout
from clusterctl.targets.common import ConfigValueError, conf_value, jinja_literal, key_values
from tests.conftest import require_tool
from tests.helpers import cli, lab, to_yaml
from tests.targets.inject import lab_plan_with

PAYLOADS = {
    "newline": "x\nPrologSlurmctld=/tmp/evil",
    "cr": "x\rEvil=1",
    "hash": "x#comment",
    "equals": "x=Evil",
    "space": "x Evil=1",
    "quote": "x\"'q",
    "subst": "$(touch${IFS}/tmp/clusterctl-pwned)",
    "backtick": "`touch${IFS}/tmp/clusterctl-pwned`",
    "jinja": "{{lookup('pipe','touch${IFS}/tmp/clusterctl-pwned')}}",
    "jinja_block": "{%print(1)%}",
}
FIELDS = {
    # field: (path in the blueprint, what a refusal names; None: free text, never refused)
    "blueprint name": (("name",), r"blueprint name|ClusterName"),
    "description": (("description",), None),
    "os": (("software", "os"), None),
    "driver": (("software", "driver"), None),
    "cuda": (("software", "cuda"), None),
    "cluster name": (("slurm", "cluster_name"), r"ClusterName"),
    "partition name": (("slurm", "partitions", 0, "name"), r"PartitionName"),
    "partition max_time": (("slurm", "partitions", 0, "max_time"), r"partition gpu MaxTime"),
    "nfs export": (("storage", 0, "export"), r"storage tier home source"),
    "nfs mount": (("storage", 0, "mount"), r"storage tier home mount"),
    "storage name": (("storage", 0, "name"), None),
    "local mount": (("storage", 1, "mount"), r"storage mount point"),
    "node features": (("node_types", "hgx", "features"), r"node type hgx feature"),
    "socket ifname": (("node_types", "hgx", "nccl"), r"NCCL_SOCKET_IFNAME of node type hgx"),
    "ib hca": (("node_types", "hgx", "nccl"), r"NCCL_IB_HCA of node type hgx"),
}


def _value(field: str, payload: str) -> object:
    if field == "node features":
        return ["ok", payload]
    if field == "socket ifname":
        return NcclNames.model_construct(ib_hca=None, socket_ifname=payload)
    if field == "ib hca":
        return NcclNames.model_construct(ib_hca=["mlx5_0", payload], socket_ifname=None)
    if field in ("nfs mount", "local mount"):
        return "/data" + payload
    return payload


def kv_keys(text: str) -> list[tuple[str, ...]]:
    """The keys of every Key=Value line (slurm.conf, gres.conf, cgroup.conf, topology.conf, nccl.conf)."""
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(tuple(tok.split("=", 1)[0] for tok in line.split()) if " " in line.strip()
                       else (line.split("=", 1)[0],))
    return out


def nccl_keys(text: str) -> list[str]:
    """NCCL's own reader: every line with '=' sets the text before it (older NCCL has no comments)."""
    return [line.split("=", 1)[0] for line in text.splitlines() if "=" in line and not line.startswith("#")]


def shape(path: str, text: str) -> object:
    if path.endswith((".yml", ".yaml")) and not path.startswith("ansible/roles/"):
        data = yamlout.load(text)
        return _yaml_shape(data)
    if path.endswith(".py"):
        tree = ast.parse(text)
        return sorted(type(n).__name__ + ":" + getattr(n, "name", "") for n in tree.body)
    if path.startswith("nccl/") and path.endswith(".conf"):
        return nccl_keys(text)
    if path.startswith("slurm/") and path.endswith((".conf", ".conf.j2")):
        return kv_keys(text)
    if path == "hosts/hosts":
        return [len(line.split()) for line in text.splitlines() if not line.startswith("#")]
    if path == "ansible/ansible.cfg":
        return [line.split("=", 1)[0].strip() for line in text.splitlines() if line and not line.startswith("#")]
    return None


def _yaml_shape(data: object) -> object:
    if isinstance(data, dict):
        return {k: _yaml_shape(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_yaml_shape(v) for v in data]
    return type(data).__name__


def _key_paths(data: object, prefix: tuple = ()) -> set[tuple]:
    if isinstance(data, dict):
        return {prefix + (k,) for k in data} | {p for k, v in data.items() for p in _key_paths(v, prefix + (k,))}
    if isinstance(data, list):
        return {p for i, v in enumerate(data) for p in _key_paths(v, prefix + (i,))}
    return set()


@pytest.fixture(scope="module")
def baseline():
    return {p: shape(p, t) for p, t in render_targets(lab_plan_with(("name",), "lab-2node")).items()}


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("field", FIELDS)
def test_payload_is_refused_naming_the_field_or_stays_data(field, payload, baseline):
    value = _value(field, PAYLOADS[payload])
    path, named = FIELDS[field]
    try:
        files = render_targets(lab_plan_with(path, value))
    except RenderError as exc:  # ConfigValueError, or a Slurm limit (ClusterName longer than 40 characters)
        assert named is not None, f"free text refused: {exc}"
        assert re.search(named, str(exc)), str(exc)
        assert exc.hint or not isinstance(exc, ConfigValueError)
        return
    for path, text in files.items():
        expected = baseline.get(path)
        if expected is None:  # a file named after the payload (a partition's name is no file name) or a role
            continue
        got = shape(path, text)
        if path.endswith((".yml", ".yaml")):  # YAML: no key added anywhere (derived keys may drop out, e.g. a
            assert _key_paths(got) <= _key_paths(expected), (field, payload, path)  # driver branch)
        else:
            assert got == expected, (field, payload, path)
        if path.endswith(".sh"):
            assert subprocess.run([require_tool("bash"), "-n"], input=text, text=True).returncode == 0, path


@pytest.mark.parametrize("payload", ["a\nb", "a\rb", "a#b", "a=b", "a b", 'a"b', "a\tb", "a\x00b"])
def test_conf_value_refuses_what_key_value_files_cannot_hold(payload):
    with pytest.raises(ConfigValueError, match="partition gpu MaxTime"):
        key_values([("MaxTime", payload)], "partition gpu")


def test_conf_value_passes_ordinary_values_unchanged():
    assert conf_value("gpu[01-02]", "x") == "gpu[01-02]"
    assert conf_value("=mlx5_0:1,mlx5_3:1", "x", equals=True) == "=mlx5_0:1,mlx5_3:1"
    assert key_values([("Features", ["gpu", "h100"]), ("State", "UNKNOWN")]) == "Features=gpu,h100 State=UNKNOWN"
    with pytest.raises(ConfigValueError):  # a comma inside one list element would add another element
        key_values([("Features", ["a,b"])])


def test_jinja_literal_leaves_no_delimiter_for_ansible():
    import jinja2

    text = "DbdHost={{ lookup('pipe','id') }} {% x %} {# c #}"
    assert jinja2.Environment().from_string(jinja_literal(text)).render() == text


def test_slurmdbd_template_keeps_blueprint_braces_literal():
    plan = lab_plan_with(("slurm", "accounting_host"), "db{{x}}01")
    text = render_targets(plan, ["slurm"])["slurm/slurmdbd.conf.j2"]
    import jinja2

    out = jinja2.Environment().from_string(text).render(slurmdbd_storage_pass="pw")
    assert "DbdHost=db{{x}}01" in out and "StoragePass=pw" in out


def test_group_vars_carry_payloads_as_unsafe_data():
    payload = PAYLOADS["jinja"]
    plan = lab_plan_with(("storage", 0, "export"), "head01:/export/" + payload)
    text = render_targets(plan, ["ansible"])["ansible/group_vars/gpu.yml"]
    assert yamlout.load(text)["storage_clients_mounts"][0]["src"] == "head01:/export/" + payload
    assert re.search(r'src: !unsafe "head01:/export/\{\{lookup', text)


def test_testinfra_docstrings_hold_quotes_as_text():
    plan = lab_plan_with(("name",), 'x"""\nimport os; os.system("id")\n"""')
    text = render_targets(plan, ["testinfra"])["tests/conftest.py"]
    tree = ast.parse(text)
    assert ast.get_docstring(tree).startswith('Acceptance tests of cluster x"""\nimport os')
    assert not any(isinstance(n, ast.Import) and n.names[0].name == "os" for n in tree.body)


def test_comments_never_end_their_line():
    plan = lab_plan_with(("name",), "x\nNCCL_NET_PLUGIN=/tmp/evil.so\nPrologSlurmctld=/tmp/evil")
    files = render_targets(plan, ["nccl", "testinfra"])  # ansible.cfg refuses the name (a path part)
    files["ansible/group_vars/all.yml"] = all_vars_file(plan, ["head01"], ["head01"])
    files["ansible/site.yml"] = site_file(plan, plays(plan, ["common"]))
    files["ansible/inventory.yml"] = inventory_file(plan)
    for path, text in files.items():
        assert "\nPrologSlurmctld" not in text and "\nNCCL_NET_PLUGIN" not in text, path
    clean = render_targets(lab_plan_with(("name",), "lab-2node"), ["nccl"])["nccl/hgx.conf"]
    assert nccl_keys(files["nccl/hgx.conf"]) == nccl_keys(clean)


def test_cli_maps_a_refused_value_to_exit_2(tmp_path, monkeypatch):
    """The CLI's render path: a ConfigValueError is a located exit-2 message with the hint, no traceback.
    The model may refuse the value first (also exit 2); either way the output is not written."""
    data = lab()
    data["slurm"]["partitions"][0]["max_time"] = "1-00:00:00\nPrologSlurmctld=/tmp/evil"
    bp = tmp_path / "bp.yaml"
    bp.write_text(to_yaml(data))
    result = cli("render", str(bp), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "max_time" in result.stderr.replace("MaxTime", "max_time")
    assert f"{bp}:" in result.stderr  # located in the blueprint
    assert not (tmp_path / "out" / "slurm" / "slurm.conf").exists()


def test_refusals_carry_the_blueprint_path(tmp_path):
    """The targets' own refusal (whatever the model accepts) names the field and its place: the CLI prints
    FILE:LINE:COL from ``path``."""
    cases = {
        ("slurm", "partitions", 0, "max_time"): ("slurm", "partitions", 0),
        ("storage", 0, "mount"): ("storage", 0),
        ("slurm", "cluster_name"): ("slurm", "cluster_name"),
        ("node_types", "hgx", "features"): ("node_types", "hgx", "features"),
    }
    for field, where in cases.items():
        value = ["ok", "a\nb"] if field[-1] == "features" else ("/x\ny" if field[-1] == "mount" else "a\nb")
        with pytest.raises(ConfigValueError) as info:
            render_targets(lab_plan_with(field, value))
        assert info.value.path == where, field
    plan = lab_plan_with(("node_types", "hgx", "nccl"), NcclNames.model_construct(ib_hca=None, socket_ifname="a\nb"))
    with pytest.raises(ConfigValueError) as info:
        render_targets(plan, ["nccl"])
    assert info.value.path == ("node_types", "hgx", "nccl")


def test_an_addressing_key_with_a_newline_stays_in_its_hosts_comment():
    """issue 9: a newline in an ``addressing`` key added a line to /etc/hosts (the pool name is in a comment)."""
    import dataclasses

    plan = lab_plan_with(("name",), "lab-2node")
    evil = "inband\n6.6.6.6 head01"
    plan = dataclasses.replace(plan, addresses=tuple(
        dataclasses.replace(p, name=evil) if p.role == "inband" else p for p in plan.addresses))
    clean = hosts_file(lab_plan_with(("name",), "lab-2node"))
    text = hosts_file(plan)

    def entries(hosts: str) -> list[str]:
        return [line for line in hosts.splitlines() if not line.startswith("#")]

    assert entries(text) == entries(clean) and not any("6.6.6.6" in e for e in entries(text))
    assert "inband\\n6.6.6.6 head01" in text  # shown, escaped, in the comment


def test_a_quote_in_a_mount_path_is_python_data_in_the_acceptance_tests():
    """issue 9: a quote in a mount path became Python in the rendered testinfra tests."""
    mount = "/data'); import os; os.system('id'); ('"
    plan = lab_plan_with(("storage", 0, "mount"), mount.replace(" ", ""))
    text = render_targets(plan, ["testinfra"])["tests/test_gpu.py"]
    tree = ast.parse(text)
    assert not any(isinstance(n, ast.Import) for n in ast.walk(tree) if getattr(n, "names", [None])[0]
                   and n.names[0].name == "os")
    values = {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body
              if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id in
              ("FSTAB", "HEALTH_MOUNTS")}
    assert values["HEALTH_MOUNTS"] == [mount.replace(" ", "")]
    assert values["FSTAB"][0][1] == mount.replace(" ", "")


@pytest.mark.parametrize("name", ["gpu01:22", "gpu[01:02],evil", "a b", "x\ny", "[1:2]", "g*"])
def test_inventory_refuses_host_names_ansible_would_read_as_patterns(name):
    with pytest.raises(InventoryError):
        inventory_name(name, "host")


def test_inventory_keeps_ranges_and_plain_names():
    for name in ("gpu[0001:0128]", "head01", "ndv5-[001:002]", "n.example"):
        assert inventory_name(name, "host") == name
