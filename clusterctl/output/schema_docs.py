"""The blueprint reference (docs/blueprint.md), generated from the models' fields and docstrings."""

from __future__ import annotations

import typing

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from clusterctl.blueprint.model import Blueprint
from clusterctl.kinds import ALL_KINDS, Kind
from clusterctl.resources import data_dir

EXAMPLES = "docs/examples/blueprint-sections"
"""One YAML fragment per top-level section (``<key>.yaml``), shown above the section's table. Each says in its
first line which shipped blueprint it comes from or is added to; tests/test_first_blueprint.py validates it there."""


def _type_name(ann) -> str:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Annotated:
        kind = next((m for m in args[1:] if isinstance(m, Kind)), None)
        return f"[{kind.name}](#{kind.name.lower()})" if kind else _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, __import__("types").UnionType):
        parts = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" (optional)" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping of name → {_type_name(args[1])}"
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return f"[{ann.__name__}](#{ann.__name__.lower()})"
    return getattr(ann, "__name__", str(ann))


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(ann):
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if ann not in seen:
                seen.append(ann)
                for f in ann.model_fields.values():
                    visit(f.annotation)
            return
        for a in typing.get_args(ann):
            visit(a)

    visit(root)
    return seen


def blueprint_markdown() -> str:
    lines = ["# Blueprint reference", "",
             "Generated from the models by `clusterctl schema --markdown > docs/blueprint.md`; do not edit by hand.",
             "Every mapping is strict: unknown keys are errors. Units are in the field names "
             "(`_kw`, `_lpm`, `_gbps` = gigabits/s, `_gb_per_s` = gigabytes/s, `_tb` = terabytes).",
             "A blueprint file is UTF-8 YAML that reads in a diff as it is parsed: lines end at LF or CRLF, and a "
             "lone CR, NEL, U+2028/U+2029, a bidirectional control, a control character (but tab) or an invisible "
             "format character is refused anywhere in the file, comments included (`BP008`; docs/cli.md, \"What a "
             "reviewer reads\").",
             "New to blueprints? [Your first blueprint](first-blueprint.md) builds one step by step. Each section "
             "below starts with an example: a fragment of a shipped blueprint (`docs/examples/blueprint-sections/`, "
             "each validated there by a test).", ""]
    examples = _section_examples()
    for model in _models(Blueprint):
        lines += [f"## {model.__name__}", ""]
        doc = (model.__doc__ or "").strip()
        if doc and not doc.startswith("!!!") and "BaseModel" not in doc:
            lines += [doc, ""]
        for key, text in examples.get(model, []):
            lines += [f"Example (`{key}`):", "", "```yaml", text.rstrip("\n"), "```", ""]
        lines += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, f in model.model_fields.items():
            if f.is_required():
                default = "**required**"
            elif f.default_factory is not None:
                default = "empty"
            elif f.default is PydanticUndefined or f.default is None:
                default = "—"
            elif f.default == "":
                default = '`""`'
            else:
                default = f"`{f.default}`"
            desc = (f.description or "").replace("\n", " ").replace("|", "\\|")
            kind = next((m for m in f.metadata if isinstance(m, Kind)), None)  # pydantic moves Annotated[str, K] here
            type_name = f"[{kind.name}](#{kind.name.lower()})" if kind else _type_name(f.annotation)
            lines.append(f"| `{name}` | {type_name} | {default} | {desc} |")
        lines.append("")
    return "\n".join(lines + _kinds_markdown())


def _section_examples() -> dict[type[BaseModel], list[tuple[str, str]]]:
    """model -> [(top-level key, example text)]: each example sits above the table of the first model its
    top-level key holds (``name`` and ``description``: the Blueprint itself)."""
    found: dict[type[BaseModel], list[tuple[str, str]]] = {}
    folder = data_dir(EXAMPLES)
    for key, field in Blueprint.model_fields.items():
        path = folder / f"{key}.yaml"
        if path.is_file():
            held = [m for m in _models(field.annotation) if m is not Blueprint]
            found.setdefault(held[0] if held else Blueprint, []).append((key, path.read_text()))
    return found


def _kinds_markdown() -> list[str]:
    """The string kinds: what each allows. Every string of a blueprint has one (docs/security.md)."""
    lines = ["# String kinds", "",
             "Every string is checked when the blueprint is loaded; a value outside its kind is an error (exit 2) "
             "that names the field and says what is allowed. No kind but FreeText admits whitespace, quotes, `$`, "
             "backticks, `{`, `;`, `&`, `|`, `<`, `>`, `\\` or control characters, and none starts with `-`.", ""]
    for kind in ALL_KINDS:
        allowed = kind.allowed.replace("|", "\\|")
        lines += [f"## {kind.name}", "", f"{allowed[0].upper()}{allowed[1:]}; at most {kind.max_length:,} characters, "
                  f"e.g. `{kind.example}`.", ""]
    return lines
