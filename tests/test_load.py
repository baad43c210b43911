"""Loading: every problem located (line:col) and worded for people, all of them in one run."""

from __future__ import annotations

import pytest

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand

TEXT = """\
name: lab
sitee: {name: x}
node_types: {dgx: {server: dgx-h100}}
node_groups:
  - {name: gpu, type: dgx, count: "4", hostnames: "gpu[01-04]"}
  - {name: gpu2, type: dgx, hostnames: "gpu[05-08]"}
fabrics:
  - {name: f, kind: infinband, switch: qm9700, attach: [{group: gpu, nic_role: compute}]}
  - {name: g, kind: roce, switch: sn5600, tiers: 4, mtux: 1, attach: [{group: gpu, nic_role: compute}]}
slurm: {version: 24.05, controllers: h, partitions: [{name: p, groups: [gpu]}]}
"""


def problems(text: str):
    with pytest.raises(BlueprintError) as exc:
        expand(load_blueprint_text(text, "bp.yaml"))
    err = exc.value
    return [(p.position or err.source.locate(p.path, key=p.key), p.message, p.hint) for p in err.problems]


def test_all_shape_problems_in_one_run_with_positions_and_hints():
    got = {(pos.line, pos.col): (msg, hint) for pos, msg, hint in problems(TEXT)}
    assert got[(2, 1)] == ("unknown key 'sitee' in (top level)", "did you mean 'site'?")
    assert got[(5, 35)] == ("node_groups[0].count must be a whole number, got '4' (text)",
                            "write the number without quotes")
    assert got[(6, 5)][0] == "node_groups[1] needs the key 'count'"
    assert got[(8, 21)] == ("fabrics[0].kind is 'infinband', expected one of infiniband, roce, ethernet",
                            "did you mean 'infiniband'?")
    assert got[(9, 53)] == ("unknown key 'mtux' in fabrics[1]", "did you mean 'mtu'?")
    assert got[(9, 50)][0] == "fabrics[1].tiers is 4 (a number), expected one of 1, 2, 3"
    assert got[(10, 18)] == ("slurm.version must be text, got 24.05 (a number)",
                             'quote it: "24.05" (YAML reads 24.10 as the number 24.1)')


def test_duplicate_keys_are_errors():
    text = "name: a\nname: b\nnode_types: {}\nnode_groups: []\n"
    ((pos, msg, hint),) = problems(text)
    assert (pos.line, pos.col) == (2, 1)
    assert msg == "duplicate key 'name' (first defined at line 1)"


def test_yaml_syntax_error_is_located():
    ((pos, msg, _),) = problems("name: a\nnode_types: [\n  b: c\n")
    assert msg.startswith("not valid YAML") and pos.line == 3


def test_unknown_references_are_collected_with_did_you_mean():
    text = """\
name: lab
node_types: {dgx: {server: dgx-h10}, cpu: {server: cpu-1u}}
node_groups:
  - {name: gpu, type: dgxx, count: 1, hostnames: gpu01, racks: r9}
racks: [{names: "r[1-2]", profile: gpuu}]
rack_profiles: {gpu: {power_kw: 40}}
"""
    got = {msg: hint for _, msg, hint in problems(text)}
    assert got["unknown server model 'dgx-h10'"].startswith("did you mean 'dgx-h100'?")
    assert got["unknown node type 'dgxx'"] == "did you mean 'dgx'?"
    assert got["unknown rack profile 'gpuu'"] == "did you mean 'gpu'?"
    assert "unknown rack 'r9'" in got


def test_yaml_merge_keys_work():
    text = """\
name: lab
rack_profiles:
  base: &base {power_kw: 40, units: 42}
  big: {<<: *base, power_kw: 60}
node_types: {cpu: {server: cpu-1u}}
node_groups: [{name: cpu, type: cpu, count: 1, hostnames: c01}]
"""
    bp = load_blueprint_text(text).blueprint
    assert bp.rack_profiles["big"].power_kw == 60 and bp.rack_profiles["big"].units == 42


def test_node_type_described_inline():
    text = """\
name: lab
node_types:
  box:
    spec:
      gpus: {model: h100-sxm, count: 4}
      cpu: {sockets: 1, cores_per_socket: 32, threads_per_core: 2}
      memory_gb: 1024
      nics: [{model: cx7-400g, count: 4, role: compute}, {model: eth-1g-bmc, count: 1, role: bmc}]
      power_kw: 5.6
      height_u: 4
node_groups: [{name: gpu, type: box, count: 2, hostnames: "g[1-2]"}]
"""
    plan = expand(load_blueprint_text(text))
    nt = plan.node_types["box"]
    assert (nt.gpus, nt.gpu_model, nt.power_kw, nt.server_name) == (4, "h100-sxm", 5.6, "box")
    assert nt.nic_count("compute") == 4 and plan.gpus == 8


def test_node_type_needs_exactly_one_source():
    text = """\
name: lab
node_types: {box: {server: cpu-1u, instance: p5.48xlarge}}
node_groups: [{name: gpu, type: box, count: 1, hostnames: g1}]
"""
    ((pos, msg, hint),) = problems(text)
    assert msg == "node type 'box' needs exactly one of server:, spec: or instance:" and pos.line == 2
    bad_nic = text.replace("{server: cpu-1u, instance: p5.48xlarge}",
                           "{spec: {cpu: {sockets: 1, cores_per_socket: 8}, memory_gb: 64, power_kw: 0.3, "
                           "height_u: 1, nics: [{model: cx7-40g, count: 1, role: compute}]}}")
    ((pos, msg, hint),) = problems(bad_nic)
    assert msg == "unknown NIC model (in server box) 'cx7-40g'" and hint.startswith("did you mean 'cx7-400g'?")


def test_our_composer_reads_every_shipped_yaml_file_as_pyyaml_does():
    """The bounded, non-recursive composer is a drop-in: same data for blueprints, catalog and test files."""
    import yaml

    from clusterctl.source import load_yaml_text
    from tests.helpers import REPO

    files = [*(REPO / "blueprints").glob("*.yaml"), *(REPO / "clusterctl" / "catalog").glob("*.yaml"),
             *(REPO / "tests" / "blueprints").rglob("*.yaml")]
    assert len(files) >= 19
    for f in files:
        text = f.read_text()
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        try:
            data, _ = load_yaml_text(text, str(f))
        except BlueprintError as exc:  # only our duplicate-key check may refuse what PyYAML reads
            assert all(p.code == "BP002" for p in exc.problems), (f, exc)
            continue
        assert data == expected, f


def test_an_aliased_mapping_with_merge_keys_can_be_used_twice():
    """flatten_mapping rewrites the node in place; the second use must not see its merged keys as duplicates."""
    from clusterctl.source import load_yaml_text

    text = "base: &b {a: 1, c: 3}\nx: &x {<<: *b, a: 2}\ny: [*x, *x]\n"
    data, _ = load_yaml_text(text, "m.yaml")
    assert data["y"] == [{"a": 2, "c": 3}, {"a": 2, "c": 3}] == [data["x"]] * 2


def test_limits_are_counted_after_alias_expansion():
    from clusterctl.limits import InputLimits
    from clusterctl.source import load_yaml_text

    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*a, *a, *a]\n"
    data, _ = load_yaml_text(text, "ok.yaml", InputLimits(max_bytes=10**9))
    assert len(data["b"]) == 3
    tight = InputLimits(max_bytes=1000)  # 10,000 values at least
    load_yaml_text("a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 8) + "]\n", "ok", tight)
    with pytest.raises(BlueprintError) as exc:
        load_yaml_text("a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 10) + "]\n", "x", tight)
    (p,) = exc.value.problems
    assert p.code == "BP007" and p.position.line == 2 and "more than 10,000 YAML values" in p.message


def test_size_parsing():
    from clusterctl.limits import parse_size

    assert parse_size("4MiB") == 4 * 1024**2 and parse_size("64M") == 64_000_000 and parse_size("5000") == 5000
    assert parse_size("2 gib") == 2 * 1024**3
    for bad in ("", "lots", "-1M", "10Q", "999"):
        with pytest.raises(ValueError):
            parse_size(bad)


@pytest.mark.parametrize("parser", ["CSafeLoader", "SafeLoader"])
def test_limits_hold_with_libyaml_and_the_pure_python_parser(monkeypatch, parser):
    import yaml

    import clusterctl.source as source
    from tests.helpers import REPO

    if not hasattr(yaml, parser):
        pytest.fail(f"PyYAML here has no {parser}")  # CI's PyYAML is built with libyaml; say so if not
    monkeypatch.setattr(source, "_PARSER", getattr(yaml, parser))
    lab = (REPO / "blueprints" / "lab-2node.yaml").read_text()
    assert source.load_yaml_text(lab, "lab.yaml")[0] == yaml.safe_load(lab)
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9))
    for text, code, line in ((bomb, "BP007", 6), ("n: " + "[" * 10_000 + "]" * 10_000 + "\n", "BP007", 1),
                             ("a: &a {b: *a}\n", "BP001", 1)):
        with pytest.raises(BlueprintError) as exc:
            source.load_yaml_text(text, "bad.yaml")
        (p,) = exc.value.problems
        assert (p.code, p.position.line) == (code, line)
