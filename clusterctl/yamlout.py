"""YAML outputs built as data and written by PyYAML's emitter, never by text templates.

A text template pastes a string between quotes and hopes it holds no quote, newline or ``{{``; the emitter
quotes every scalar for YAML by construction. Ansible adds a second language on top of YAML: every string it
reads from group_vars or a play is a Jinja template. A value that came from the blueprint is therefore wrapped
in :class:`Unsafe` and, when it holds a ``{`` (what every Jinja construct starts with), written with the
``!unsafe`` tag, which ansible-core (2.x, including the data-tagging 2.19) reads as "data, never templated": a
storage export holding ``{{ lookup('pipe', ...) }}`` reaches the role as those characters. Other blueprint
strings are written as double-quoted strings (see :func:`unsafe_tag` for why they are not tagged). Strings that *are* templates (``{{ playbook_dir }}/..``, vault references) are
plain ``str`` and are written untagged: the choice is explicit at the place the data is built.

libyaml's C emitter (``CSafeDumper``) writes the inventory (87,500 nodes: 1.3 MB of mappings) where PyYAML
was built with it; the pure-Python emitter writes the small files whose sequences ansible-lint wants
indented (libyaml cannot indent a sequence inside a mapping), and the inventory where libyaml is missing.
The two choose different quoting for some strings in flow collections, so :class:`Unsafe` strings are always
double-quoted (a style both honour for every string): for mappings they write the same bytes for the same
data (tests/targets/test_yamlout.py), so golden files hold on either.
"""

from __future__ import annotations

import textwrap

from collections.abc import Iterable, Mapping

import yaml

UNSAFE_TAG = "!unsafe"
WIDTH = 1 << 20
"""line width of the emitted YAML: no folding at all, so output is byte-identical across machines and between
libyaml's and the pure-Python emitter (they fold long double-quoted scalars at different places)"""

_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Unsafe(str):
    """A string from the blueprint: written as ``!unsafe`` so Ansible never evaluates it as a template."""

    __slots__ = ()


def unsafe_tag(value: str) -> str:
    """``!unsafe`` where the string could start a Jinja construct (it holds a ``{``: ``{{``, ``{%``, ``{#``),
    otherwise the plain string tag. Ansible templates only strings that contain a template start, so a
    string without ``{`` is data either way; and ansible-core 2.19 resolves the *value* of an ``!unsafe``
    scalar with YAML's implicit types, ignoring its quotes (``!unsafe "12.10"`` arrives as the float 12.1,
    ``!unsafe "550"`` as an int), so tagging a version string would change it. Found by the rehearsal's
    converge (issue 10); held by tests/integration/test_ansible_payloads.py."""
    return UNSAFE_TAG if "{" in value else _STR


class Flow(list):
    """A short sequence written on one line (``[a, b]``), as the hand-written files have it."""

    __slots__ = ()


class FlowMap(dict):
    """A small mapping written on one line (``{name: home, path: /home}``)."""

    __slots__ = ()


class Block(str):
    """A multi-line string written as a literal block (``key: |``), as a ConfigMap holding a configuration file
    is written by hand. Only for text this program built (a file it rendered through :func:`body`): the emitter
    falls back to a quoted scalar where a literal block cannot hold the text (trailing spaces, control
    characters), so the value read back is the same either way."""

    __slots__ = ()


def _null(dumper: yaml.SafeDumper, _value: None) -> yaml.ScalarNode:
    """``key:`` rather than ``key: null`` (inventory hosts and children are keys without a value)."""
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


def _make_dumper(base: type) -> type:
    class Dumper(base):  # type: ignore[misc, valid-type]
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            """Sequences inside mappings indented (``key:\n  - item``), as yamllint and ansible-lint want
            (pure-Python emitter only: libyaml always writes them indentless)."""
            return super().increase_indent(flow, False)

    Dumper.add_representer(Unsafe, lambda d, v: d.represent_scalar(unsafe_tag(v), str(v), style='"'))
    Dumper.add_representer(Flow, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))
    Dumper.add_representer(FlowMap, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
    Dumper.add_representer(Block, lambda d, v: d.represent_scalar(_STR, str(v), style="|"))
    Dumper.add_representer(type(None), _null)
    return Dumper


PureDumper = _make_dumper(yaml.SafeDumper)
"""the pure-Python emitter: block sequences inside mappings indented. For files that hold such sequences and
that ansible-lint reads (group_vars, site.yml: small)"""
Dumper = _make_dumper(_BaseDumper) if _BaseDumper is not yaml.SafeDumper else PureDumper
"""libyaml's C emitter where PyYAML has it: for the large file that holds mappings only (the inventory)"""


def _make_indentless_dumper(base: type) -> type:
    class IndentlessDumper(_make_dumper(base)):  # type: ignore[misc, valid-type]
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            """Sequences inside mappings written as libyaml writes them (``key:\n- item``)."""
            return yaml.SafeDumper.increase_indent(self, flow, indentless)

    return IndentlessDumper


StreamDumper = _make_dumper(_BaseDumper) if _BaseDumper is not yaml.SafeDumper else _make_indentless_dumper(_BaseDumper)
"""libyaml's C emitter where PyYAML has it, else the pure-Python one with libyaml's layout (sequences inside
mappings not indented, as kubectl also writes them): the same bytes either way, for large files that hold
sequences (the Kubernetes target's object streams: a Node per host)"""


def comment(text: str) -> str:
    """Text that stays on one comment line: control characters (newline, CR, tab, ...) become escapes, so
    a blueprint string shown in a comment can never end the comment and start a line of syntax."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


COMMENT_WIDTH = 156
"""comment text per line: with "# " within yamllint's and ansible-lint's 160 columns"""


def comment_lines(comments: Iterable[str]) -> str:
    """``# text`` lines (``#`` alone for an empty one), each kept on its line by :func:`comment` and wrapped
    at :data:`COMMENT_WIDTH` (ansible-lint's production profile refuses longer lines)."""
    out = []
    for c in comments:
        if not c:
            out.append("#\n")
            continue
        for part in textwrap.wrap(comment(c), COMMENT_WIDTH, break_long_words=False, break_on_hyphens=False) or [""]:
            out.append(f"# {part}\n")
    return "".join(out)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_NULL, _BOOL, _INT, _FLOAT = ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                              "tag:yaml.org,2002:float")


def _float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{value} is not a number an output may hold")
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def node(value: object) -> yaml.Node:
    """The YAML node of ``value``, as PyYAML's SafeRepresenter with the representers above would build it
    (without its per-object alias bookkeeping: an inventory of 87,500 nodes is 140,000 scalars)."""
    if isinstance(value, str):
        if isinstance(value, Unsafe):
            return yaml.ScalarNode(unsafe_tag(value), str(value), style='"')
        if isinstance(value, Block):
            return yaml.ScalarNode(_STR, str(value), style="|")
        return yaml.ScalarNode(_STR, value)
    if isinstance(value, Mapping):
        return yaml.MappingNode(_MAP, [(node(k), node(v)) for k, v in value.items()],
                                flow_style=isinstance(value, FlowMap))
    if isinstance(value, (list, tuple)):
        return yaml.SequenceNode(_SEQ, [node(v) for v in value], flow_style=isinstance(value, Flow))
    if value is None:
        return yaml.ScalarNode(_NULL, "")
    if isinstance(value, bool):
        return yaml.ScalarNode(_BOOL, "true" if value else "false")
    if isinstance(value, int):
        return yaml.ScalarNode(_INT, str(value))
    if isinstance(value, float):
        return yaml.ScalarNode(_FLOAT, _float(value))
    raise TypeError(f"cannot write a {type(value).__name__} as YAML")


def quoted(value: str) -> str:
    """``value`` as one double-quoted YAML scalar in ASCII, for a text template that writes a scalar: every
    character outside printable ASCII is a YAML escape (``\\xE9``, ``\\u2028`` as ``\\L``, ``\\U0001F680``),
    which libyaml, PyYAML and Go's yaml.v3 all read back as that character, and a reviewer sees as an escape.
    (``json.dumps`` is not YAML here: it writes a character beyond U+FFFF as a surrogate pair, which libyaml
    refuses and PyYAML turns into two lone surrogates.)"""
    text = yaml.serialize(yaml.ScalarNode(_STR, value, style='"'), Dumper=PureDumper, width=WIDTH,
                          allow_unicode=False)
    return text.rstrip("\n")


def body(data: object, *, dumper: type = Dumper) -> str:
    """``data`` as block YAML, keys in insertion order, without a document marker."""
    return yaml.serialize(node(data), Dumper=dumper, width=WIDTH, allow_unicode=True)


def documents(docs: Iterable[object], *, dumper: type = Dumper) -> str:
    """Each of ``docs`` as a block YAML document after ``---`` (what ``serialize_all(..., explicit_start=True)``
    writes), one document at a time: the nodes of 13,000 Kubernetes objects built at once cost the garbage
    collector more than 13,000 emitter runs (2.0 s against 0.8 s)."""
    return "".join("---\n" + body(d, dumper=dumper) for d in docs)


def represented(data: object, *, dumper: type = Dumper) -> str:
    """The same through PyYAML's own representer (the reference :func:`node` is tested against)."""
    return yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False, width=WIDTH,
                     allow_unicode=True)


def dump(data: object, comments: Iterable[str] = (), *, dumper: type = Dumper) -> str:
    """``# comment`` lines, then ``---`` and the data as block YAML."""
    return comment_lines(comments) + "---\n" + body(data, dumper=dumper)


def unsafe(value: object) -> object:
    """Every string inside ``value`` (recursively, mapping keys excepted) as :class:`Unsafe`; flow and
    plain containers keep their kind. Numbers, booleans and None are data already."""
    if isinstance(value, Unsafe):
        return value
    if isinstance(value, str):
        return Unsafe(value)
    if isinstance(value, FlowMap):
        return FlowMap((k, unsafe(v)) for k, v in value.items())
    if isinstance(value, Mapping):
        return {k: unsafe(v) for k, v in value.items()}
    if isinstance(value, Flow):
        return Flow(unsafe(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [unsafe(v) for v in value]
    return value


class Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Reads what :func:`dump` wrote back as plain data: ``!unsafe`` scalars become ``str``."""


Loader.add_constructor(UNSAFE_TAG, lambda loader, node: loader.construct_scalar(node))


def load(text: str) -> object:
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass with one string tag
