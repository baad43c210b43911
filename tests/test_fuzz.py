"""Property test: whatever a user does to a blueprint, `clusterctl validate` answers with a located message
and a documented exit code - never a traceback, never an internal error (exit 3), never a hang.

Shipped blueprints are mutated (a key deleted at any depth, a value replaced by one of another type, a
number set to something absurd, the YAML text itself corrupted), written to a file, and run through the
real entry point ``clusterctl.cli.main`` in-process with ``sys.argv`` patched (a few cases also through a
real subprocess). Exit 0 is allowed: some mutations are harmless (deleting an optional key).

Reproducible: ``derandomize=True`` and no example database, so CI runs the same ~150 examples every time.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import io
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterctl import cli
from tests.helpers import BLUEPRINTS, cli as run_subprocess

# the 100k-GPU example takes ~0.5 s per run; it is fuzzed in the subprocess sample only
FUZZED = ["lab-2node", "dgx-h100-superpod-1su", "dgx-h100-superpod-4su", "gb200-nvl72-8rack",
          "hgx-h200-roce-1024", "aws-p5", "gcp-a3-mega", "azure-nd-h100-v5"]
TEXTS = {name: (BLUEPRINTS / f"{name}.yaml").read_text() for name in FUZZED}
DOCS = {name: yaml.safe_load(text) for name, text in TEXTS.items()}
WORKDIR = Path(tempfile.mkdtemp(prefix="clusterctl-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, True)

FUZZ = settings(max_examples=38, deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- running the CLI -----------------------------------------------------------------------------------


def run_validate(path: Path) -> tuple[int, str]:
    """The real entry point in-process: (exit code, stdout + stderr)."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["clusterctl", "validate", str(path)]
    code: object = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = argv
    if code is None:
        code = 0
    return (code if isinstance(code, int) else -1), out.getvalue() + err.getvalue()


def check(text: str, what: str) -> None:
    path = WORKDIR / "mutant.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = run_validate(path)
    context = f"{what}\n--- exit {code}, output:\n{output[-3000:]}\n--- input:\n{text[:3000]}"
    assert code in (0, 1, 2), context
    assert "Traceback" not in output, context
    assert "internal error" not in output, context
    if code in (1, 2):
        assert re.search(re.escape(str(path)) + r":\d+:\d+", output), "no FILE:LINE:COL location\n" + context


# --- walking the data ------------------------------------------------------------------------------------


def all_paths(value, path=()):
    """Paths to every node below the root (dict keys and list indices), parents before children."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            yield from all_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield path + (i,)
            yield from all_paths(v, path + (i,))


def numeric_paths(doc) -> list[tuple]:
    out = []
    for p in all_paths(doc):
        v = get(doc, p)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(p)
    return out


def get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def put(doc, path, value):
    get(doc, path[:-1])[path[-1]] = value


def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


# --- strategies ---------------------------------------------------------------------------------------------

names = st.sampled_from(FUZZED)
any_value = st.one_of(
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.none(),
    st.booleans(),
    st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(-5, 5), st.text(max_size=4)), max_size=2),
)
absurd_numbers = st.one_of(
    st.sampled_from([0, -1, -0.5, 0.0, 1e-9, -10**9, 10**9, 10**12, 10**30, 2**63, 1e308, float("inf")]),
    st.integers(min_value=-10**20, max_value=10**20),
)


# --- the properties -----------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_delete_a_key(data):
    name = data.draw(names, label="blueprint")
    doc = copy.deepcopy(DOCS[name])
    keyed = [p for p in all_paths(doc) if isinstance(p[-1], str)]
    path = data.draw(st.sampled_from(keyed), label="deleted")
    del get(doc, path[:-1])[path[-1]]
    check(dump(doc), f"{name}: deleted {path}")


@FUZZ
@given(data=st.data())
def test_replace_a_value_with_another_type(data):
    name = data.draw(names, label="blueprint")
    doc = copy.deepcopy(DOCS[name])
    path = data.draw(st.sampled_from(list(all_paths(doc))), label="path")
    value = data.draw(any_value, label="value")
    put(doc, path, value)
    check(dump(doc), f"{name}: {path} = {value!r}")


@FUZZ
@given(data=st.data())
def test_set_an_absurd_number(data):
    name = data.draw(names, label="blueprint")
    doc = copy.deepcopy(DOCS[name])
    path = data.draw(st.sampled_from(numeric_paths(doc)), label="path")
    value = data.draw(absurd_numbers, label="value")
    put(doc, path, value)
    check(dump(doc), f"{name}: {path} = {value!r}")


def corrupt(text: str, op: str, where: float, char: str) -> str:
    """Damage the YAML text at a relative position ``where`` in [0, 1)."""
    lines = text.splitlines(keepends=True)
    if op == "truncate":
        return text[:int(len(text) * where)]
    if op == "insert":
        i = int(len(text) * where)
        return text[:i] + char + text[i:]
    if op == "duplicate-key":
        keyed = [i for i, line in enumerate(lines) if re.match(r"\s*[A-Za-z_][\w-]*:", line)]
        i = keyed[int(len(keyed) * where)]
        return "".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])
    if op == "drop-line":
        i = int(len(lines) * where)
        return "".join(lines[:i] + lines[i + 1:])
    raise AssertionError(op)


@settings(FUZZ, max_examples=40)
@given(name=names,
       op=st.sampled_from(["truncate", "insert", "insert", "duplicate-key", "drop-line"]),
       where=st.floats(min_value=0.0, max_value=0.999),
       char=st.sampled_from([":", "[", "\t", "{", "]", "- ", '"', "&a ", "*b ", "!!python/object "]))
def test_corrupt_the_text(name, op, where, char):
    check(corrupt(TEXTS[name], op, where, char), f"{name}: {op} at {where:.3f} ({char!r})")


# --- a small sample through a real subprocess (python -m clusterctl) --------------------------------------


@pytest.mark.parametrize(("name", "mutate", "expect"), [
    ("frontier-3tier-100k", lambda t: t.replace("su_nodes: 64", "su_nodes: 1000000000000", 1), 2),
    ("frontier-3tier-100k", lambda t: t.replace('hostnames: "gpu[00001-13312]"',
                                                'hostnames: "gpu[1-999999999999]"', 1), 2),
    ("dgx-h100-superpod-1su", lambda t: t.replace('controllers: "head[01-02]"',
                                                  'controllers: "head[1-999999999]"', 1), 2),
    ("lab-2node", lambda t: t[:len(t) // 2], 2),
    ("dgx-h100-superpod-4su", lambda t: t.replace("fabrics:\n", "fabrics:\nfabrics:\n", 1), 2),
    ("gb200-nvl72-8rack", lambda t: t.replace("per_rack: 18", "per_rack: -18", 1), 2),
], ids=["absurd-su-nodes", "absurd-host-range", "absurd-controller-range", "truncated", "duplicate-key", "negative-per-rack"])
def test_subprocess_sample(tmp_path, name, mutate, expect):
    text = mutate((BLUEPRINTS / f"{name}.yaml").read_text())
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    r = run_subprocess("validate", str(path))
    output = r.stdout + r.stderr
    assert r.returncode == expect, output[-2000:]
    assert "Traceback" not in output
    assert re.search(re.escape(str(path)) + r":\d+:\d+", output), output[-2000:]


# --- regressions found by this fuzzer ------------------------------------------------------------------------


def test_fabric_name_that_is_no_host_name():
    # ('fabrics', 3, 'name') = 'Ò' made expand re-parse the rack leaves' names and exit 3 (HostlistError)
    check(TEXTS["dgx-h100-superpod-4su"].replace("  - name: oob\n", "  - name: Ò\n", 1), "fabric named 'Ò'")


# --- hostile YAML structure: anchors, aliases, merge keys, tags, nesting (issue 9, bounded input) ------------------

_leaves = st.sampled_from(["x", "1", "-2.5", ".inf", "-.inf", ".nan", "~", "''", '"q\\n"', "2001-13-45", "0x1F",
                           "!!python/object:os.system x", "!!binary AAAA", "!!str 5", "!!int x", "*a", "*b", "*m",
                           "&a x", "&b [*a, *a, *a]", "&m {k: 1}", "<<", "?", "y" * 300])


def _flow(children: list[str], mapping: bool, anchor: str) -> str:
    if mapping:
        body = ", ".join(f"{'<<' if i % 3 == 2 else 'k' + str(i)}: {c}" for i, c in enumerate(children))
        return f"{anchor}{{{body}}}"
    return f"{anchor}[{', '.join(children)}]"


_nodes = st.recursive(
    _leaves,
    lambda inner: st.builds(_flow, st.lists(inner, max_size=5), st.booleans(),
                            st.sampled_from(["", "", "&a ", "&b ", "&m ", "&c "])),
    max_leaves=30)


@settings(FUZZ, max_examples=40)
@given(name=names, nodes=st.lists(_nodes, min_size=1, max_size=4),
       depth=st.sampled_from([0, 0, 10, 63, 64, 65, 500]), where=st.floats(min_value=0.0, max_value=0.999))
def test_hostile_yaml_structure_is_answered_within_bounds(name, nodes, depth, where):
    """Aliases (also of unfinished anchors), merge keys of anything, explicit tags and deep nesting spliced
    into a shipped blueprint: exit 0, 1 or 2 with a location, never exit 3, and bounded output."""
    lines = TEXTS[name].splitlines(keepends=True)
    at = int(len(lines) * where)
    extra = "".join(f"x_fuzz_{i}: {'[' * depth}{node}{']' * depth}\n" for i, node in enumerate(nodes))
    text = "".join(lines[:at]) + extra + "".join(lines[at:])
    path = WORKDIR / "mutant.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = run_validate(path)
    context = f"exit {code}\n{output[-3000:]}\n--- input:\n{extra[:3000]}"
    assert code in (0, 1, 2), context
    assert "Traceback" not in output and "internal error" not in output, context
    if code in (1, 2):
        assert re.search(re.escape(str(path)) + r":\d+:\d+", output), context
    assert len(output) < 200_000, context


# --- characters a reviewer cannot see (issue 24, docs/security.md "The YAML a reviewer reads") -----------------

_hidden = st.sampled_from(["\u2028", "\u2029", "\x85", "\r ", "\u202e", "\u202d", "\u2066", "\u2069", "\u200e",
                           "\u200f", "\u061c", "\u200b", "\u200d", "\ufeff", "\u00ad", "\U000e0041", "\x1b",
                           "\x1b[2J", "\x00", "\x07", "\x0b", "\x0c", "\x7f", "\x80", "\x9b"])


@settings(FUZZ, max_examples=40)
@given(name=names, chars=st.lists(st.tuples(_hidden, st.floats(min_value=0.0, max_value=0.999)), min_size=1,
                                  max_size=3))
def test_a_hidden_character_anywhere_is_refused_where_a_diff_shows_it(name, chars):
    """Line ends YAML 1.1 sees and a diff does not, bidi controls, control and invisible characters, inserted
    anywhere (comments, keys, values, indentation): exit 2 (BP008) at the first one's line and column as a
    diff counts them, never exit 0 with a structure the reviewer did not see, never a raw one printed."""
    text = TEXTS[name]
    for char, where in chars:
        i = 1 + int((len(text) - 1) * where)  # never before the first character (a leading BOM is allowed)
        text = text[:i] + char + text[i:]
    first = min(text.find(c[0]) for c, _ in chars if text.find(c[0]) > 0)
    line = text.count("\n", 0, first) + 1
    col = first - (text.rfind("\n", 0, first) + 1) + 1
    path = WORKDIR / "mutant.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = run_validate(path)
    context = f"exit {code}\n{output[-3000:]}\n--- inserted: {chars!r}"
    assert code == 2, context
    assert "error[BP008]: blueprint contains a character a reviewer cannot see\n" in output, context
    assert f"{path}:{line}:{col}\n" in output, context
    assert not any(c[0] in output for c, _ in chars), context
