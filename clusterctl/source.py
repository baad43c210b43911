"""YAML text -> plain Python data, remembering where every value came from.

PyYAML's composer gives us nodes with marks; we build dicts and lists ourselves so that each value's
path (``("node_groups", 1, "count")``) maps to its ``line:col`` in the file. Findings and load errors
carry paths and are located only when printed. Duplicate keys, which PyYAML silently lets the last one
win, are errors here: in a cluster blueprint a repeated key is almost always a copy-paste mistake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterctl.errors import BlueprintError, Problem

Path_ = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 1-based
    col: int  # 1-based


@dataclass(slots=True)
class SourceMap:
    """Where each path of a loaded document sits in its file."""

    file: str
    lines: list[str]
    values: dict[Path_, Position] = field(default_factory=dict)
    keys: dict[Path_, Position] = field(default_factory=dict)

    def locate(self, path: Path_, *, key: bool = False) -> Position:
        """The position of ``path``; falls back to the nearest ancestor that exists."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if p in self.values:
                return self.values[p]
            p = p[:-1]
        return self.values.get((), Position(1, 1))

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


#: libyaml's composer when PyYAML was built with it (5-10x faster); same nodes and marks
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _mark(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    """Turns a composed node tree into dicts/lists/scalars plus a SourceMap."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.problems: list[Problem] = []
        self._scalar = yaml.SafeLoader("")  # only used for construct_scalar type resolution

    def build(self, node: yaml.Node, path: Path_):
        self.smap.values[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
            self._flatten_merge(node)
            merged = len(node.value) - explicit  # flatten_mapping puts merged (<<:) pairs first
            from_merge: set = set()
            for i, (knode, vnode) in enumerate(node.value):
                key = self.build_scalar(knode)
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    key = str(key)
                if key in out and key not in from_merge:
                    first = self.smap.keys[path + (key,)]
                    self.problems.append(Problem(
                        path + (key,), f"duplicate key '{key}' (first defined at line {first.line})",
                        hint="remove one of the two; YAML would silently keep only the last", key=True, code="BP002",
                        position=_mark(knode)))
                    continue
                if i < merged:
                    from_merge.add(key)
                else:
                    from_merge.discard(key)  # an explicit key overrides a merged one, as YAML specifies
                self.smap.keys[path + (key,)] = _mark(knode)
                out[key] = self.build(vnode, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, path + (i,)) for i, child in enumerate(node.value)]
        return self.build_scalar(node)

    def build_scalar(self, node: yaml.Node):
        if isinstance(node, yaml.ScalarNode):
            return self._scalar.construct_object(node, deep=True)
        # complex keys (mappings as keys) are not meaningful in a blueprint
        return str(node.value)

    def _flatten_merge(self, node: yaml.MappingNode) -> None:
        # support YAML merge keys (<<: *anchor) the way PyYAML does
        self._scalar.flatten_mapping(node)


def load_yaml_text(text: str, file: str) -> tuple[object, SourceMap]:
    """Parse ``text``; raise :class:`BlueprintError` with located problems for broken YAML."""
    smap = SourceMap(file=file, lines=text.splitlines())
    try:
        root = yaml.compose(text, Loader=_COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Position(mark.line + 1, mark.column + 1) if mark else Position(1, 1)
        if pos.line > max(1, len(smap.lines)):  # "end of input" errors: point at the last line
            last = max(1, len(smap.lines))
            pos = Position(last, len(smap.line_text(last)) + 1)
        msg = exc.problem or str(exc)
        if exc.context:
            msg = f"{exc.context}: {msg}"
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {msg}",
                                            hint="check indentation, colons and quoting on this line",
                                            position=pos, code="BP001")]) from None
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked YAML errors are rare
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc}", code="BP001")]) from None
    if root is None:
        return None, smap
    builder = _Builder(smap)
    try:
        data = builder.build(root, ())
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        pos = Position(mark.line + 1, mark.column + 1) if mark else Position(1, 1)
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc.problem}", position=pos, code="BP001")]) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # e.g. a timestamp-looking scalar PyYAML cannot convert
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc}",
                                            hint="quote values that are meant as text", code="BP001")]) from None
    if builder.problems:
        raise BlueprintError(smap, builder.problems)
    return data, smap


def load_yaml_file(path: str | Path) -> tuple[object, SourceMap]:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        smap = SourceMap(file=str(path), lines=[])
        raise BlueprintError(smap, [Problem((), f"cannot read blueprint: {exc.strerror or exc}",
                                            hint="check the path", code="BP006")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        smap = SourceMap(file=str(path), lines=[])
        raise BlueprintError(smap, [Problem((), f"not UTF-8 text (byte {exc.start})",
                                            hint="save the blueprint as UTF-8", code="BP006")]) from None
    return load_yaml_text(text, str(path))
