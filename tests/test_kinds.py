"""String kinds and number bounds: what each kind allows, how a refusal is worded and located, and that
every number of the schema is finite and bounded."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel, ValidationError

from clusterctl import kinds
from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.hidden_chars import shown
from clusterctl.blueprint.model import Blueprint
from clusterctl.blueprint.schema import blueprint_schema
from clusterctl.errors import BlueprintError
from clusterctl.output.schema_docs import _models
from tests.helpers import lab, to_yaml

SYNTAX = "\n\r\t $`'\"{};&|<>\\#*?!()"
"""characters that mean something to a shell, Jinja, YAML, Slurm or Python: no kind but free text has them"""


def problems_of(data: dict) -> list:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(to_yaml(data), "bp.yaml")
    err = exc.value
    return [(p, err.source.locate(p.path, key=p.key)) for p in err.problems]


@pytest.mark.parametrize("kind", [k for k in kinds.ALL_KINDS if k is not kinds.FREE_TEXT], ids=lambda k: k.name)
def test_each_kind_accepts_its_example_and_no_syntax(kind):
    assert kind.explain(kind.example) is None
    middle = len(kind.example) // 2
    for ch in SYNTAX:
        for value in (kind.example + ch, ch + kind.example, kind.example[:middle] + ch + kind.example[middle:]):
            assert kind.explain(value) is not None, f"{kind.name} accepts {value!r}"
    assert kind.explain("-" + kind.example) is not None, "a leading dash is an option to a command"
    assert kind.explain("") is not None
    assert kind.explain("a" * (kind.max_length + 1)) is not None


def test_free_text_is_one_printable_line():
    ok = "Intel Xeon 8480C (2 x 56 cores) # 'quoted' {{ braces }} $HOME"
    assert kinds.FREE_TEXT.explain(ok) is None and kinds.FREE_TEXT.explain("") is None
    for bad in ("a\nb", "a\rb", "a\x1b[31mb", "a\u202eb", "a\x00b", "a\u2028b"):
        assert kinds.FREE_TEXT.explain(bad) is not None, repr(bad)


@pytest.mark.parametrize("value", ["60", "30:00", "01:00:00", "7-00", "7-12:30", "14-00:00:00", "UNLIMITED",
                                   "INFINITE", "unlimited"])
def test_slurm_time_accepts_the_maxtime_forms(value):
    assert kinds.SLURM_TIME.explain(value) is None


@pytest.mark.parametrize("value", ["1:2:3:4", "1-", "-1", "1d", "Unlimited forever", "1-00:00:00:00", "1.5"])
def test_slurm_time_refuses_other_forms(value):
    assert kinds.SLURM_TIME.explain(value) is not None


def test_paths_exports_and_prefixes():
    path, export, cidr = kinds.ABSOLUTE_PATH, kinds.NFS_EXPORT, kinds.CIDR
    assert path.explain("/mnt/data-v1.2/x+y@z") is None
    assert "starts with '/'" in path.explain("data")
    assert "'..'" in path.explain("/data/../etc")
    assert export.explain("[fd00::2]:/export/home") is None and export.explain("10.2.1.4:/home") is None
    assert export.explain("nas01:/export/../etc") is not None and export.explain("nas01:relative") is not None
    assert cidr.explain("10.0.0.1/24") is None  # host bits: a rule's error with a hint, not a load error
    assert cidr.explain("fd00:10::/64") is None
    for bad in ("10.0.0.0/33", "fe80::1%eth0/64", "10.0.0.0/8 ", "300.0.0.0/8"):
        assert cidr.explain(bad) is not None, bad


def test_nccl_names():
    ifname, hca = kinds.NCCL_SOCKET_IFNAME, kinds.HCA_NAME
    for ok in ("=bond0", "^lo,docker", "^=docker0", "eth", "ib0,ib1"):
        assert ifname.explain(ok) is None, ok
    for bad in ("=bond0=", "bond0,", "a" * 16, "=", "^^lo"):
        assert ifname.explain(bad) is not None, bad
    assert hca.explain("mlx5_0") is None and hca.explain("mlx5_10:1") is None
    assert hca.explain("mlx5_0:1:2") is not None


def test_a_refused_value_names_the_field_and_what_is_allowed():
    data = lab()
    data["storage"][1]["mount"] = "/raid$(reboot)"
    ((p, pos),) = problems_of(data)
    assert p.path == ("storage", 1, "mount") and p.code == "BP003"
    assert p.message == "storage[1].mount is '/raid$(reboot)' (text): an absolute path may not contain '$'"
    assert p.hint.startswith("allowed: an absolute POSIX path") and "e.g. /mnt/data" in p.hint
    assert "mount" in to_yaml(data).splitlines()[pos.line - 1]


def test_a_refused_mapping_key_is_located_at_the_key():
    data = lab()
    data["node_types"] = {("gpu node" if k == "hgx" else k): v for k, v in data["node_types"].items()}
    found = problems_of(data)
    (p, pos) = next((p, pos) for p, pos in found if p.key)
    assert p.path == ("node_types", "gpu node")
    assert p.message == "node_types has the key 'gpu node' (text): a name may not contain a space"
    line = to_yaml(data).splitlines()[pos.line - 1]
    assert line[pos.col - 1:].startswith("gpu node:")


def test_messages_never_print_control_characters_or_huge_values():
    assert shown("a\nb\x1bc", what="text") == "'a\\nb\\x1bc' (text)"
    long = shown("x" * 50_000_000, what="text")
    assert len(long) < 120 and "50,000,000 characters" in long
    data = lab()
    data["slurm"]["partitions"][0]["max_time"] = "1:00:00\nProlog=/tmp/x"
    ((p, _),) = problems_of(data)
    assert "\n" not in p.message and "\\nProlog" in p.message and "may not contain a line break" in p.message


def test_every_string_and_mapping_key_of_the_models_has_a_kind():
    """No ``str`` without a kind anywhere in the Blueprint and CatalogData models (values, list items,
    mapping keys): the schema's string nodes all carry a pattern."""
    schema = blueprint_schema()
    unpatterned = []

    def visit(node: object, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node and "const" not in node and "pattern" not in node:
                unpatterned.append(where)
            if node.get("type") == "object" and "additionalProperties" in node and "properties" not in node:
                if "pattern" not in node.get("propertyNames", {}):
                    unpatterned.append(where + "{key}")
            for k, v in node.items():
                visit(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                visit(v, f"{where}/{i}")

    visit(schema, "#")
    assert unpatterned == []


def _number_fields() -> list[tuple[type[BaseModel], str, bool]]:
    out = []
    for model in _models(Blueprint):
        for name, field in model.model_fields.items():
            args = typing.get_args(field.annotation) or (field.annotation,)
            if float in args or field.annotation is float:
                out.append((model, name, True))
            elif (int in args or field.annotation is int) and bool not in args:
                out.append((model, name, False))
    return out


@pytest.mark.parametrize("model,name,is_float", _number_fields(), ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_number_is_finite_and_bounded(model, name, is_float):
    """.inf and .nan are refused in every float; every number has an upper bound (10**18 is over it)."""
    values = [float("inf"), float("nan"), 1e18] if is_float else [10**18]
    for value in values:
        with pytest.raises(ValidationError) as exc:
            model.model_validate({name: value})
        mine = [e for e in exc.value.errors() if e["loc"] == (name,)]
        assert mine and mine[0]["type"] in ("finite_number", "less_than_equal", "less_than"), (name, value, mine)


def test_rack_units_are_bounded_where_the_report_would_loop():
    data = lab()
    data["rack_profiles"]["lab"]["units"] = 10_000_000
    ((p, _),) = problems_of(data)
    assert p.path == ("rack_profiles", "lab", "units") and "less than or equal to 60" in p.message
