"""YAML text -> plain Python data, remembering where every value came from.

PyYAML's composer gives us nodes with marks; we build dicts and lists ourselves so that each value's
path (``("node_groups", 1, "count")``) maps to its ``line:col`` in the file. Findings and load errors
carry paths and are located only when printed. Duplicate keys, which PyYAML silently lets the last one
win, are errors here: in a cluster blueprint a repeated key is almost always a copy-paste mistake.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusterctl.errors import BlueprintError, LoadCode, Problem
from clusterctl.hidden_chars import count_hidden, find_hidden, lines_as_shown
from clusterctl.hidden_chars import hint as hidden_hint
from clusterctl.limits import ENV_VAR, InputLimits, input_limits
from clusterctl.location import Path_, Position, SourceMap

#: libyaml's parser when PyYAML was built with it (5-10x faster); same events and marks
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"


def _mark(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def _at(mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


class _Limit(Exception):
    """An input limit was reached while composing; carries the located problem."""

    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


@dataclass(slots=True)
class _Open:
    """A list or mapping being composed: its node, children so far, anchor, expanded size and height."""

    node: yaml.Node
    items: list
    anchor: str | None
    size: int = 1
    height: int = 1


class _Composer:
    """Events -> the node tree ``yaml.compose`` would give, without recursion and within the input limits.

    PyYAML's composers (the C one included) recurse once per nesting level, so a few thousand ``[`` crash
    the interpreter, and they keep aliases as shared nodes that our builder would expand without bound (a
    400-byte "billion laughs"). Here every node's size and height *after* alias expansion is known when it
    is closed, so an alias that would take the document past ``max_values`` or ``max_depth`` is refused at
    its own line before anything is expanded. An alias to an unfinished anchor (a cycle) is refused too.
    """

    def __init__(self, text: str, limits: InputLimits):
        self.parser = _PARSER(text)
        self.limits = limits
        self.anchors: dict[str, tuple[yaml.Node, int, int]] = {}  # anchor -> node, expanded size, height
        self.values = 0
        self.max_values = limits.max_values
        self._first_chars = self.parser.yaml_implicit_resolvers  # first characters that may make a non-string

    def compose(self) -> yaml.Node | None:
        p = self.parser
        p.get_event()  # stream start
        if p.check_event(yaml.StreamEndEvent):
            return None
        p.get_event()  # document start
        root = self._document()
        p.get_event()  # document end
        if not p.check_event(yaml.StreamEndEvent):
            extra = p.get_event()
            raise yaml.composer.ComposerError("expected a single document in the stream", root.start_mark,
                                              "but found another document", extra.start_mark)
        return root

    def _count(self, n: int, mark) -> None:
        self.values += n
        if self.values > self.max_values:
            raise _Limit(Problem((), f"more than {self.limits.max_values:,} YAML values (aliases expanded)",
                                 hint=_RAISE_HINT, code=LoadCode.INPUT_LIMIT, position=_at(mark)))

    def _too_deep(self, depth: int, mark, what: str) -> _Limit:
        return _Limit(Problem((), f"{what} nests deeper than {self.limits.max_depth} levels",
                              hint="flatten the structure; a blueprint needs a handful of levels",
                              code=LoadCode.INPUT_LIMIT, position=_at(mark)))

    def _document(self) -> yaml.Node:
        get, resolve, limits, first_chars = self.parser.get_event, self.parser.resolve, self.limits, self._first_chars
        stack: list[_Open] = []
        while True:
            ev = get()
            cls = type(ev)
            if cls is yaml.AliasEvent:
                entry = self.anchors.get(ev.anchor)
                if entry is None:
                    opening = any(o.anchor == ev.anchor for o in stack)
                    raise _Limit(Problem((), f"alias *{ev.anchor} refers to the list or mapping that contains it"
                                         if opening else f"alias *{ev.anchor} is not defined before this line",
                                         hint="define the anchor (&name) before and outside its aliases",
                                         code=LoadCode.YAML_SYNTAX, position=_at(ev.start_mark)))
                node, size, height = entry
                if len(stack) + height > limits.max_depth:
                    raise self._too_deep(len(stack) + height, ev.start_mark, f"alias *{ev.anchor}")
                self._count(size, ev.start_mark)
            elif cls is yaml.ScalarEvent:
                self._count(1, ev.start_mark)
                tag = ev.tag
                if tag is None or tag == "!":
                    value = ev.value
                    if not ev.implicit[0] or (value and value[0] not in first_chars and None not in first_chars):
                        tag = _STR  # quoted, or plain text no implicit resolver claims: what resolve() returns
                    else:
                        tag = resolve(yaml.ScalarNode, value, ev.implicit)
                node, size, height = yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, ev.style), 1, 1
                self._anchor(ev.anchor, node, 1, 1, ev.start_mark)
            elif cls is yaml.SequenceStartEvent or cls is yaml.MappingStartEvent:
                if len(stack) + 1 > limits.max_depth:
                    raise self._too_deep(len(stack) + 1, ev.start_mark, "this value")
                self._count(1, ev.start_mark)
                kind = yaml.SequenceNode if cls is yaml.SequenceStartEvent else yaml.MappingNode
                tag = ev.tag if ev.tag not in (None, "!") else resolve(kind, None, ev.implicit)
                stack.append(_Open(kind(tag, [], ev.start_mark, None, flow_style=ev.flow_style), [], ev.anchor))
                continue
            else:  # the end of a list or mapping
                done = stack.pop()
                node, size, height = done.node, done.size, done.height
                node.end_mark = ev.end_mark
                items = done.items
                node.value = items if cls is yaml.SequenceEndEvent else list(zip(items[::2], items[1::2]))
                self._anchor(done.anchor, node, size, height, node.start_mark)
            if not stack:
                return node
            parent = stack[-1]
            parent.items.append(node)
            parent.size += size
            if height >= parent.height:
                parent.height = height + 1

    def _anchor(self, anchor: str | None, node: yaml.Node, size: int, height: int, mark) -> None:
        if anchor is None:
            return
        if anchor in self.anchors:
            raise yaml.composer.ComposerError(f"found duplicate anchor {anchor!r}; first occurrence",
                                              self.anchors[anchor][0].start_mark, "second occurrence", mark)
        self.anchors[anchor] = (node, size, height)


_RAISE_HINT = (f"a blueprint needs a few hundred values (host ranges such as gpu[0001-8192] stand for many "
               f"hosts); to accept a larger file pass --max-input-size (or set {ENV_VAR})")


class _Builder:
    """Turns a composed node tree into dicts/lists/scalars plus a SourceMap."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.problems: list[Problem] = []
        self._scalar = yaml.SafeLoader("")  # only used for construct_scalar type resolution
        self._merged: dict[int, int] = {}  # id(mapping node) -> how many of its pairs came from merge keys

    def build(self, node: yaml.Node, path: Path_):
        self.smap.values[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            merged = self._flatten_merge(node)  # flatten_mapping puts merged (<<:) pairs first
            from_merge: set = set()
            for i, (knode, vnode) in enumerate(node.value):
                key = self.build_scalar(knode)
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    key = str(key)
                if key in out and key not in from_merge:
                    first = self.smap.keys[path + (key,)]
                    self.problems.append(Problem(
                        path + (key,), f"duplicate key '{key}' (first defined at line {first.line})",
                        hint="remove one of the two; YAML would silently keep only the last", key=True,
                        code=LoadCode.DUPLICATE_KEY, position=_mark(knode)))
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
            if node.tag == _STR:
                return node.value
            return self._scalar.construct_object(node, deep=True)
        # complex keys (mappings as keys) are not meaningful in a blueprint
        return str(node.value)

    def _flatten_merge(self, node: yaml.MappingNode) -> int:
        """Apply merge keys (<<: *anchor) the way PyYAML does; return how many leading pairs were merged.

        flatten_mapping rewrites the node in place, so an aliased mapping is flattened once and the count
        remembered: its second build must not mistake merged pairs for duplicate explicit keys."""
        if id(node) not in self._merged:
            explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
            self._scalar.flatten_mapping(node)
            self._merged[id(node)] = len(node.value) - explicit
        return self._merged[id(node)]


MAX_HIDDEN_LISTED = 20
"""hidden characters listed one by one; the rest are one summary problem at the first left out"""
MAX_HIDDEN_COUNTED = 100_000
"""the summary counts up to this many (a file of millions is refused as fast as one of a few)"""


def refuse_hidden(text: str, smap: SourceMap, what: str = "a blueprint") -> None:
    """Raise BP008 problems at every character of ``text`` a reviewer cannot see as it is parsed (a YAML 1.1
    line end other than LF or CRLF, a bidi control, a control or invisible format character), anywhere,
    comments included: clusterctl/hidden_chars.py. Positions are those of a diff (lines end at LF). ``what`` names
    the file in the hint ("an inventory file")."""
    found = find_hidden(text, MAX_HIDDEN_LISTED + 1)
    if not found:
        return
    problems = [Problem((), h.message, hint=hidden_hint(what), code=LoadCode.HIDDEN_CHARACTER,
                        position=Position(h.line, h.col)) for h in found[:MAX_HIDDEN_LISTED]]
    if len(found) > MAX_HIDDEN_LISTED:
        first = found[MAX_HIDDEN_LISTED]
        counted = count_hidden(text, MAX_HIDDEN_COUNTED)
        more = f"{counted - MAX_HIDDEN_LISTED:,}" if counted < MAX_HIDDEN_COUNTED else \
            f"at least {MAX_HIDDEN_COUNTED - MAX_HIDDEN_LISTED:,}"
        problems.append(Problem((), f"... and {more} more characters a reviewer cannot see, the first here",
                                hint=hidden_hint(what), code=LoadCode.HIDDEN_CHARACTER,
                                position=Position(first.line, first.col)))
    raise BlueprintError(smap, problems)


def load_yaml_text(text: str, file: str, limits: InputLimits | None = None) -> tuple[object, SourceMap]:
    """Parse ``text``; raise :class:`BlueprintError` with located problems for a character a reviewer cannot
    see (before parsing), broken YAML or input over the limits (nesting, values after alias expansion)."""
    limits = limits or input_limits()
    smap = SourceMap(file=file, lines=lines_as_shown(text))
    refuse_hidden(text, smap)
    try:
        root = _Composer(text, limits).compose()
    except _Limit as exc:
        raise BlueprintError(smap, [exc.problem]) from None
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
                                            position=pos, code=LoadCode.YAML_SYNTAX)]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not accept (U+FFFE, U+FFFF): locate it
        at = max(0, text.find(chr(exc.character)))  # its first occurrence is where the reader stopped
        line_start = text.rfind("\n", 0, at) + 1 or (1 if text.startswith("\ufeff") else 0)
        pos = Position(text.count("\n", 0, at) + 1, at - line_start + 1)
        raise BlueprintError(smap, [Problem((), f"not valid YAML: the character U+{exc.character:04X} is not "
                                                f"allowed in YAML ({exc.reason})", hint="delete it",
                                            position=pos, code=LoadCode.YAML_SYNTAX)]) from None
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked YAML errors are rare
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc}", code=LoadCode.YAML_SYNTAX)]) from None
    if root is None:
        return None, smap
    builder = _Builder(smap)
    try:
        data = builder.build(root, ())
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        pos = Position(mark.line + 1, mark.column + 1) if mark else Position(1, 1)
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc.problem}", position=pos,
                                            code=LoadCode.YAML_SYNTAX)]) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # e.g. a timestamp-looking scalar PyYAML cannot convert
        raise BlueprintError(smap, [Problem((), f"not valid YAML: {exc}", hint="quote values that are meant as text",
                                            code=LoadCode.YAML_SYNTAX)]) from None
    if builder.problems:
        raise BlueprintError(smap, builder.problems)
    return data, smap


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_input(path: str | Path, limits: InputLimits | None = None, what: str = "blueprint",
               too_big_hint: str = "") -> bytes:
    """The bytes of a regular file of at most ``limits.max_bytes``; a located BP006 problem otherwise.

    The file is opened without blocking (a FIFO with no writer would hang ``open``), checked to be a regular
    file on the open descriptor (no race with a rename), and read up to limit + 1 bytes, never more: a
    growing file or one whose size the kernel misreports is cut off, not slurped. ``too_big_hint`` replaces the
    hint of a file over the limit (another kind of input has its own limit and remedy)."""
    limits = limits or input_limits()
    smap = SourceMap(file=str(path), lines=[])

    def refuse(message: str, hint: str) -> BlueprintError:
        return BlueprintError(smap, [Problem((), message, hint=hint, code=LoadCode.UNREADABLE_FILE,
                                             position=Position(1, 1))])

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise refuse(f"cannot read {what}: {exc.strerror or exc}", "check the path") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
            raise refuse(f"cannot read {what}: {path} is {kind}, not a regular file",
                         f"pass the {what} file itself; clusterctl reads only regular files")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= limits.max_bytes:
            chunk = os.read(fd, min(1 << 20, limits.max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise refuse(f"cannot read {what}: {exc.strerror or exc}", "check the file") from None
    finally:
        os.close(fd)
    if total > limits.max_bytes:
        raise refuse(f"{what} is larger than the input limit of {limits.max_bytes:,} bytes",
                     too_big_hint or f"a blueprint is a few KB; to read a larger file pass --max-input-size (or "
                                     f"set {ENV_VAR})")
    return b"".join(chunks)


def load_yaml_file(path: str | Path, limits: InputLimits | None = None) -> tuple[object, SourceMap]:
    raw = read_input(path, limits)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        smap = SourceMap(file=str(path), lines=[])
        raise BlueprintError(smap, [Problem((), f"not UTF-8 text (byte {exc.start})",
                                            hint="save the blueprint as UTF-8",
                                            code=LoadCode.UNREADABLE_FILE)]) from None
    return load_yaml_text(text, str(path), limits)
