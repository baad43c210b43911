"""The YAML emitter: quoting by construction, !unsafe for blueprint strings, C and pure-Python agree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from clusterctl import yamlout
from clusterctl.resources import data_dir
from clusterctl.yamlout import Flow, FlowMap, Unsafe
from tests.conftest import require

PAYLOADS = ["a\nb: injected", "x # not a comment", "k=v", "'quote\"", "$(touch /tmp/x)", "`id`",
            "{{ lookup('pipe', 'id') }}", "{% raw %}", "- item", "&anchor", "*alias", "!!python/object", "null",
            "true", "0x10", "1e3", "", " lead", "trail ", "tab\there", "\r", "\x00nul", "unicode \u2028 sep",
            "---", "...", "@at", "%TAG", "[flow]", "{map: 1}", "a: b", "#start"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_every_payload_reads_back_as_the_same_string(payload):
    data = {"key": Unsafe(payload), "list": Flow([Unsafe(payload)]), "map": [FlowMap(k=Unsafe(payload))],
            payload or "empty": None}
    text = yamlout.dump(data, ["comment with " + payload])
    assert yamlout.load(text) == {"key": payload, "list": [payload], "map": [{"k": payload}], payload or "empty": None}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_comments_stay_on_their_line(payload):
    text = yamlout.comment_lines([payload, "next"])
    assert text.count("\n") == 2 and all(line.startswith("#") for line in text.splitlines())


def test_blueprint_strings_are_tagged_unsafe_and_templates_are_not():
    text = yamlout.dump({"mine": "{{ playbook_dir }}", "theirs": Unsafe("{{ x }}"), "n": 3})
    assert "mine: '{{ playbook_dir }}'" in text
    assert 'theirs: !unsafe "{{ x }}"' in text
    assert "n: 3" in text


def test_unsafe_walks_containers_and_leaves_numbers():
    value = yamlout.unsafe({"a": ["x", 1, True, None], "b": Flow(["y"]), "c": FlowMap(z="w")})
    assert isinstance(value["a"][0], Unsafe) and value["a"][1:] == [1, True, None]
    assert isinstance(value["b"], Flow) and isinstance(value["b"][0], Unsafe)
    assert isinstance(value["c"], FlowMap) and isinstance(value["c"]["z"], Unsafe)


def test_plain_safe_load_refuses_the_tag_so_nothing_reads_it_silently_as_a_template():
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.safe_load(yamlout.dump({"k": Unsafe("{{ v }}")}))


def test_c_and_pure_python_emitters_write_the_same_text():
    require("" if hasattr(yaml, "CSafeDumper") else "PyYAML is built without libyaml",
            hint="PyPI's PyYAML wheels and Debian's python3-yaml have it")
    data = {"all": {"children": {"gpu": {"hosts": {"gpu[01:02]": None}}}},
            "vars": {"m": FlowMap(name=Unsafe(PAYLOADS[0]), n=1)}, "flow": Flow([Unsafe(p) for p in PAYLOADS]),
            "unsafe": {f"k{i}": Unsafe(p) for i, p in enumerate(PAYLOADS)},
            "keys": {p: None for p in PAYLOADS if p.isprintable() and p},  # inventory keys: printable (guarded)
            "templates": {"a": "{{ playbook_dir }}/..", "b": "{{ vault_munge_key | default('') }}"}}
    assert yamlout.Dumper.__mro__[1] is yaml.CSafeDumper
    assert yamlout.dump(data) == yamlout.dump(data, dumper=yamlout.PureDumper)


def test_pure_emitter_indents_sequences_inside_mappings():
    assert yamlout.body({"k": [1, {"a": [2]}]}, dumper=yamlout.PureDumper) == "k:\n  - 1\n  - a:\n      - 2\n"


def test_node_builder_writes_what_pyyaml_s_representer_writes():
    data = {"s": "x", "u": Unsafe("{{ y }}"), "n": None, "t": True, "f": False, "i": 12, "fl": 1.5, "e": 1e20,
            "neg": -3, "flow": Flow([1, "a", Unsafe("b")]), "fm": [FlowMap(a=1, b=Unsafe("c"))], "empty": [],
            "emptymap": {}, "nested": {"k": [{"a": None}]}, "quoted": ["1e3", "true", "null", "0x10", ""]}
    for dumper in (yamlout.Dumper, yamlout.PureDumper):
        assert yamlout.body(data, dumper=dumper) == yamlout.represented(data, dumper=dumper)


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), object()])
def test_values_an_output_cannot_hold_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        yamlout.body({"k": bad})


def test_only_strings_that_could_start_jinja_are_tagged_unsafe():
    """ansible-core 2.19 resolves an !unsafe scalar's value with YAML's implicit types (!unsafe "12.10" is the
    float 12.1): strings without '{' are written as plain quoted strings, which every YAML reader keeps."""
    from clusterctl.yamlout import Unsafe, dump

    text = dump({"cuda": Unsafe("12.10"), "driver": Unsafe("550"), "export": Unsafe("h:/x{{ lookup('pipe','id') }}")})
    assert 'cuda: "12.10"\n' in text and 'driver: "550"\n' in text
    assert "export: !unsafe \"h:/x{{ lookup('pipe','id') }}\"" in text
    import yaml
    assert yaml.safe_load(text.replace("!unsafe ", ""))["cuda"] == "12.10"


TARGETS = Path(__file__).resolve().parents[2] / "clusterctl" / "targets"
YAML_TEMPLATES = {
    "ansible/bmc.yml.j2": "a static playbook; clusterctl fills in only its header and the vars file's constant path",
    "ansible/pull-status.yml.j2": "a static playbook; clusterctl fills in only its header and a constant path",
    "pulumi/Pulumi.yaml.j2": "values quoted by yamlout.quoted (clusterctl/targets/pulumi.py)",
    "slurm/topology.yaml.j2": "values written with tojson (clusterctl/targets/slurm.py)",
}
"""the YAML files rendered from Jinja templates rather than by the emitter, each with why that is safe"""


def _target_modules() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(TARGETS)), ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted(TARGETS.rglob("*.py"))]


def test_no_target_module_writes_yaml_but_through_the_emitter():
    """Targets build data and clusterctl.yamlout writes it: none imports PyYAML, and none holds YAML text to
    fill in (a document with its ``---`` marker, or a ``str.format`` on text with a ``key:`` line)."""
    found = []
    for name, tree in _target_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "yaml" for a in node.names):
                found.append(f"{name}:{node.lineno} imports yaml")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "yaml":
                found.append(f"{name}:{node.lineno} imports from yaml")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value != "---\n" and (
                    node.value.startswith("---\n") or "\n---\n" in node.value):  # the bare marker joins emitted parts
                found.append(f"{name}:{node.lineno} holds a YAML document")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                    and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)
                    and re.search(r"^\s*[\w.-]+:", node.func.value.value, re.M)):
                found.append(f"{name}:{node.lineno} formats YAML text")
    assert found == []


def test_the_yaml_templates_are_the_known_ones():
    templates = data_dir("templates")
    names = {str(p.relative_to(templates)) for p in templates.rglob("*") if p.name.endswith((".yml.j2", ".yaml.j2"))}
    assert names == set(YAML_TEMPLATES)


def test_a_block_string_is_a_literal_block_in_every_emitter_and_reads_back_the_same():
    conf = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
    data = {"data": {"volcano-scheduler.conf": yamlout.Block(conf)}}
    expected = "data:\n  volcano-scheduler.conf: |\n" + "".join(f"    {line}\n" for line in conf.splitlines())
    for dumper in (yamlout.Dumper, yamlout.PureDumper, yamlout.StreamDumper):
        assert yamlout.body(data, dumper=dumper) == expected
        assert yamlout.represented(data, dumper=dumper) == expected
    assert yaml.safe_load(expected) == {"data": {"volcano-scheduler.conf": conf}}
    trailing = {"k": yamlout.Block("a \nb\n")}  # no literal block holds a trailing space: quoted, same value
    assert yaml.safe_load(yamlout.body(trailing)) == {"k": "a \nb\n"}
