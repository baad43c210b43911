"""Blueprint file -> :class:`Blueprint`, with pydantic's errors turned into located, human problems."""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, Tag, ValidationError

from clusterctl.blueprint.inventory_csv import InventoryFile, read_inventories
from clusterctl.blueprint.model import Blueprint
from clusterctl.blueprint.path_relations import path_problems
from clusterctl.errors import BlueprintError, Problem
from clusterctl.hidden_chars import shown
from clusterctl.kinds import KIND_ERROR
from clusterctl.catalog.hardware_prices import HardwarePriceList
from clusterctl.location import SourceMap
from clusterctl.source import load_yaml_file, load_yaml_text


@dataclass(frozen=True)
class LoadedBlueprint:
    blueprint: Blueprint
    source: SourceMap
    inventory: tuple[InventoryFile, ...] = ()
    """the files ``site.inventory`` names, read and checked beside the blueprint (docs/inventory.md)"""
    price_sheet: HardwarePriceList | None = None
    """the site's price sheet ``cost.price_sheet`` names, read and checked beside the blueprint (docs/report.md)"""


def format_path(path: tuple) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def did_you_mean(word: object, choices) -> str:
    if not isinstance(word, str):
        return ""
    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:
        close = [c for c in choices if c.lower() == word.lower()]
    return f"did you mean '{close[0]}'?" if close else ""


# ---------------------------------------------------------------------------------------------------
# walking the model alongside an error location


def _unwrap(annotation):
    """Strip Optional/Annotated; return (origin, args, discriminated-union members or None)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(args) == 1:
                annotation = args[0]
                continue
            if models and len(models) == len(args):
                return "union", models
            tagged = dict(_explicit_tag(a) for a in args)
            if None not in tagged:
                return "union", tagged
            return None, None
        return annotation, None


def _explicit_tag(annotation) -> tuple[str | None, object]:
    """(tag, member) of a member of a union with a callable discriminator (``Annotated[X, Tag("t")]``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, Tag):
                return meta.tag, typing.get_args(annotation)[0]
    return None, annotation


def _tag_of(model: type[BaseModel]) -> str | None:
    for name in ("kind", "tier"):
        f = model.model_fields.get(name)
        if f is not None and typing.get_origin(f.annotation) is typing.Literal:
            return typing.get_args(f.annotation)[0]
    return None


def walk(loc: tuple, root: type[BaseModel] = Blueprint) -> tuple[tuple, type[BaseModel] | None]:
    """Error location -> (path into the data, model class at the end of the path or None).

    Pydantic puts discriminator tags into locations of tagged unions (``fabrics.0.roce.mtu``); those
    are not in the document and are dropped here.
    """
    path: list = []
    current: object = root
    i = 0
    while i < len(loc):
        part = loc[i]
        ann, members = (current, None) if not isinstance(current, tuple) else current
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            field = ann.model_fields.get(part)
            if field is None:
                path.append(part)
                return tuple(path + list(loc[i + 1:])), None
            path.append(part)
            current = _unwrap(field.annotation)
            current = current if current[0] != "union" else ("union", current[1])
            i += 1
            continue
        if ann == "union":
            tagged = members if isinstance(members, dict) else {_tag_of(m): m for m in members}
            if part in tagged:
                current = _unwrap(tagged[part])
                current = current if current[0] != "union" else ("union", current[1])
                i += 1
                continue
            return tuple(path + list(loc[i:])), None
        origin = typing.get_origin(ann)
        if origin in (list, dict):
            args = typing.get_args(ann)
            path.append(part)
            current = _unwrap(args[-1])
            current = current if current[0] != "union" else ("union", current[1])
            i += 1
            continue
        return tuple(path + list(loc[i:])), None
    ann = current[0] if isinstance(current, tuple) else current
    return tuple(path), ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


# ---------------------------------------------------------------------------------------------------
# pydantic error -> Problem

_TYPE_WORDS = {
    "int": "a whole number", "float": "a number", "string": "text", "bool": "true or false",
    "list": "a list", "dict": "a mapping (key: value)", "model": "a mapping (key: value)",
}


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, str):
        return shown(value, what="text")
    if isinstance(value, (int, float)):
        return f"{value} (a number)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "nothing (null)"
    return repr(value)


def _kind_problem(path: tuple, value: object, ctx: dict, *, key: bool) -> Problem:
    """A value (or a mapping key) that is not of its field's kind: what is wrong with it and what the
    kind allows, e.g. "storage[1].mount is '/data $(reboot)' (text): an absolute path may not contain
    a space"."""
    reason, hint = ctx.get("reason", "not allowed here"), f"allowed: {ctx.get('allowed', '')}"
    if ctx.get("example"):
        hint += f"; e.g. {ctx['example']}"
    if key:
        return Problem(path, f"{format_path(path[:-1])} has the key {_describe(value)}: {reason}", hint=hint, key=True)
    return Problem(path, f"{format_path(path)} is {_describe(value)}: {reason}", hint=hint)


def _typed_number(source: SourceMap | None, path: tuple, value: int | float) -> str:
    """The number at ``path`` as the user typed it (``24.10``), read from the file; ``str(value)`` when the
    file's text there is not that number (an alias, a flow we cannot read back)."""
    raw = source.plain_scalar(path) if source is not None else None
    try:
        if raw is not None and not isinstance(value, bool) and yaml.safe_load(raw) == value:
            return raw  # 24.10, 0755 (octal 493), 1:30 (sexagesimal 90) as written
    except yaml.YAMLError:
        pass
    return str(value)


def _problem(err: dict, source: SourceMap | None = None) -> Problem:
    etype = err["type"]
    loc = tuple(err["loc"])
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if loc and loc[-1] == "[key]":  # a mapping key: locate the key itself, name the mapping
        path, _ = walk(loc[:-1])
        if etype == KIND_ERROR:
            return _kind_problem(path, value, ctx, key=True)
        return Problem(path, f"{format_path(path[:-1])} has the key {_describe(value)}: {err['msg'].lower()}",
                       hint="write names as text: letters, digits, '.', '_' and '-'", key=True)
    if etype == KIND_ERROR:
        path, _ = walk(loc)
        return _kind_problem(path, value, ctx, key=False)
    if etype == "extra_forbidden":
        path, _ = walk(loc[:-1])
        _, parent = walk(loc[:-1])
        key = loc[-1]
        where = format_path(path)
        allowed = sorted(parent.model_fields) if parent else []
        hint = did_you_mean(key, allowed) or (f"allowed keys: {', '.join(allowed)}" if allowed else "")
        return Problem(path + (key,), f"unknown key '{key}' in {where}", hint=hint, key=True)
    path, model = walk(loc)
    where = format_path(path)
    if etype == "missing":
        parent_path, parent = walk(loc[:-1])
        desc = ""
        if parent is not None and loc[-1] in parent.model_fields:
            desc = parent.model_fields[loc[-1]].description or ""
        return Problem(parent_path, f"{format_path(parent_path)} needs the key '{loc[-1]}'",
                       hint=f"add {loc[-1]}: ..." + (f" ({desc})" if desc else ""), key=bool(parent_path))
    if etype == "union_tag_invalid":
        tags = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",")]
        disc = str(ctx.get("discriminator", "kind")).strip("'")
        return Problem(path + (disc,), f"{where}.{disc} is '{ctx.get('tag')}', expected one of {', '.join(tags)}",
                       hint=did_you_mean(ctx.get("tag"), tags))
    if etype == "union_tag_not_found":
        disc = str(ctx.get("discriminator", "kind")).strip("'")
        return Problem(path, f"{where} needs the key '{disc}'", hint=f"add {disc}: ...", key=bool(path))
    if etype == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ",").split(",") if c.strip()]
        return Problem(path, f"{where} is {_describe(value)}, expected one of {', '.join(choices)}",
                       hint=did_you_mean(value, choices))
    base = etype.split("_")[0]
    if etype.endswith("_type") and base in _TYPE_WORDS:
        expected = _TYPE_WORDS[base]
        hint = ""
        if isinstance(value, str) and base in ("int", "float"):
            hint = "write the number without quotes"
        elif isinstance(value, (int, float)) and base == "string":
            typed = _typed_number(source, path, value)
            if typed != str(value):  # 24.10 read as 24.1: quote what the user wrote
                return Problem(path, f"{where} must be text, got {typed}, which YAML reads as the number {value}",
                               hint=f'quote it: "{typed}"')
            hint = f'quote it: "{value}"' + (" (YAML reads 24.10 as the number 24.1)" if isinstance(value, float) else "")
        elif isinstance(value, str) and base == "bool":
            hint = "write true or false without quotes"
        return Problem(path, f"{where} must be {expected}, got {_describe(value)}", hint=hint)
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "multiple_of"):
        hint = ""
        bound = ctx.get("le", ctx.get("lt"))
        if isinstance(value, (int, float)) and isinstance(bound, (int, float)) and value > 10 * bound > 0:
            hint = "far over the bound, which is above any hardware built: check the unit and the number of zeros"
        return Problem(path, f"{where} is {_describe(value)}: {err['msg'].lower()}", hint=hint)
    if etype == "finite_number":
        return Problem(path, f"{where} is {_describe(value)}: a number must be finite",
                       hint=".inf and .nan are not quantities: write the number")
    if etype in ("too_short", "too_long"):
        return Problem(path, f"{where}: {err['msg'].lower()}")
    if etype == "string_pattern_mismatch":
        return Problem(path, f"{where} is {_describe(value)}, which does not match {ctx.get('pattern')}",
                       hint=(model and "") or "use lower case letters, digits and dashes")
    return Problem(path, f"{where}: {err['msg']} (got {_describe(value)})")


MAX_PROBLEMS_PER_KIND = 20
"""Pydantic reports every unknown key of a document, and turning each error into a sentence looks for a "did
you mean" among the allowed keys: 100,000 unknown keys took minutes. Only the first this many errors of each
pydantic error type (unknown key, wrong type, missing key, ...) become problems; the rest of a type is one
summary problem at the first one left out, with the count. So text, JSON and SARIF all stay bounded, and a
problem of another kind is never hidden behind thousands of the same one."""

_KIND_WORDS = {"extra_forbidden": "unknown key", "missing": "missing key"}


def _problems(errors: list[dict], source: SourceMap | None = None) -> list[Problem]:
    seen, out = set(), []
    for err in errors:
        prob = _problem(err, source)
        if (prob.path, prob.message) not in seen:
            seen.add((prob.path, prob.message))
            out.append(prob)
    return out


def problems_from_validation(exc: ValidationError, per_kind: int = MAX_PROBLEMS_PER_KIND,
                             source: SourceMap | None = None) -> list[Problem]:
    """The problems of ``exc``, at most ``per_kind`` of each error type plus one summary per type cut;
    ``source`` lets a message quote a value as the file spells it."""
    kept: list[dict] = []
    left_out: dict[str, list] = {}  # type -> [first error left out, count]
    seen: dict[str, int] = {}
    for err in exc.errors(include_url=False):
        kind = err["type"]
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= per_kind:
            kept.append(err)
        elif kind in left_out:
            left_out[kind][1] += 1
        else:
            left_out[kind] = [err, 1]
    problems = _problems(kept, source)
    for kind, (first, count) in left_out.items():
        (where,) = _problems([first], source)
        words = _KIND_WORDS.get(kind, kind.replace("_", " "))
        problems.append(Problem(where.path, f"... and {count:,} more problems of this kind ({words}), "
                                            f"the first here", hint="fix the ones above first; they are often "
                                            "one mistake repeated", code=where.code, key=where.key))
    return problems


def parse_blueprint(data: object, source: SourceMap, base: Path | None = None) -> LoadedBlueprint:
    """The blueprint ``data`` read from ``source``; ``base`` is the directory its ``site.inventory`` files are in
    (None for a blueprint that is not a file: one naming an inventory is refused)."""
    if not isinstance(data, dict):
        raise BlueprintError(source, [Problem((), "a blueprint is a mapping of sections (name:, node_types:, ...), "
                                                 f"got {_describe(data)}",
                                              hint="start from `clusterctl init` or blueprints/lab-2node.yaml")])
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as exc:
        raise BlueprintError(source, problems_from_validation(exc, source=source)) from None
    problems = path_problems(bp)  # privilege-bearing paths inside each other (docs/security.md)
    if problems:
        raise BlueprintError(source, problems)
    names = bp.site.inventory if bp.site is not None else []
    if names and base is None:
        raise BlueprintError(source, [Problem(("site", "inventory"), "site.inventory names files beside the "
                                              "blueprint, and this blueprint is not read from a file",
                                              hint="write the blueprint to a file next to its inventory")])
    sheet_name = bp.cost.price_sheet if bp.cost is not None else None
    if sheet_name and base is None:
        raise BlueprintError(source, [Problem(("cost", "price_sheet"), "cost.price_sheet names a file beside the "
                                              "blueprint, and this blueprint is not read from a file",
                                              hint="write the blueprint to a file next to its price sheet")])
    inventory = read_inventories(names, base, source) if names else ()
    return LoadedBlueprint(bp, source, inventory, _price_sheet(bp, sheet_name, base, source) if sheet_name else None)


def _price_sheet(bp: Blueprint, name: str, base: Path, source: SourceMap) -> HardwarePriceList:
    from clusterctl.blueprint.price_sheet import read_price_sheet
    from clusterctl.catalog import load_shipped_catalog

    return read_price_sheet(name, base, source, load_shipped_catalog().with_entries(bp.catalog),
                            lambda exc, smap: problems_from_validation(exc, source=smap))


def load_blueprint(path: str | Path) -> LoadedBlueprint:
    data, source = load_yaml_file(path)
    return parse_blueprint(data, source, Path(path).parent)


def load_blueprint_text(text: str, file: str = "<blueprint>", base: Path | None = None) -> LoadedBlueprint:
    """The blueprint in ``text``, reported as ``file``; ``base``: the directory of its inventory files."""
    data, source = load_yaml_text(text, file)
    return parse_blueprint(data, source, base)
