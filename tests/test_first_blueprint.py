"""The walkthrough docs/first-blueprint.md and the section examples of docs/blueprint.md, run through the real
command line: every step's YAML is appended to (or replaces a section of) first.yaml, validated, and its exit
code and output must be what the doc shows; every section example validates inside the shipped blueprint it
names. After a change to messages or rules, rewrite the doc's outputs with
CLUSTERCTL_UPDATE_DOCS=1 python3 -m pytest -q tests/test_first_blueprint.py, then read the diff and the prose
(refused under ``CI``: tests/conftest.py, refresh_requested)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from clusterctl.blueprint.model import Blueprint
from tests.conftest import refresh_requested
from tests.helpers import BLUEPRINTS, REPO

WALKTHROUGH = REPO / "docs" / "first-blueprint.md"
REFERENCE = REPO / "docs" / "blueprint.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
COMMAND = "$ clusterctl validate first.yaml"


def _sections(text: str) -> list[tuple[str, str]]:
    """(top-level key, its text with the comment lines above it) in file order."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines(keepends=True):
        m = re.match(r"([a-z_]+):", line)
        if m:
            out.append((m.group(1), pending + line))
            pending = ""
        elif out and not line.startswith("#") and line.strip():
            out[-1] = (out[-1][0], out[-1][1] + line)
        else:
            pending += line
    return out


def _compose(current: str, block: str) -> str:
    """Append the block's sections; a section already in the file is replaced where it is."""
    sections = dict(_sections(current))
    sections.update(_sections(block))
    return "".join(sections.values())


def _walkthrough():
    """(steps, whole file block): each step is (yaml block, its console block's match) in order."""
    fences = list(FENCE.finditer(WALKTHROUGH.read_text()))
    steps, whole = [], None
    for i, f in enumerate(fences):
        if f.group(1) != "yaml":
            continue
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        if nxt is not None and nxt.group(1) == "console":
            steps.append((f.group(2), nxt))
        else:
            assert whole is None, "one yaml block without a console block after it: the whole file"
            whole = f
    return steps, whole


def _validate_all(files: dict[str, str], tmp_path: Path) -> dict[str, tuple[int, str]]:
    """Validate each blueprint text as `first.yaml` in its own directory, all at once (the CPU is the limit)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    procs = {}
    for name, text in files.items():
        d = tmp_path / name
        d.mkdir()
        (d / "first.yaml").write_text(text)
        procs[name] = subprocess.Popen([sys.executable, "-m", "clusterctl", "validate", "first.yaml"], cwd=d,
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return {name: (p.wait(timeout=120), p.stdout.read()) for name, p in procs.items()}


def _console(rc: int, out: str) -> str:
    return f"{COMMAND}\n{out.rstrip()}\n$ echo $?\n{rc}\n".replace(f"{COMMAND}\n\n", f"{COMMAND}\n")


def _section_examples() -> dict[str, str]:
    """key -> example YAML, as docs/blueprint.md shows them."""
    return {m.group(1): m.group(2)
            for m in re.finditer(r"^Example \(`(\w+)`\):\n\n```yaml\n(.*?)^```\n", REFERENCE.read_text(), re.S | re.M)}


def test_walkthrough_and_section_examples_validate(tmp_path):
    update = refresh_requested("CLUSTERCTL_UPDATE_DOCS")
    steps, whole = _walkthrough()
    assert len(steps) >= 8, "the walkthrough has a step per section"
    files, text = {}, ""
    for n, (block, _) in enumerate(steps, 1):
        text = _compose(text, block)
        files[f"step{n:02d}"] = text

    examples = _section_examples()
    assert set(examples) == set(Blueprint.model_fields) - {"description"}, "an example for every top-level section"
    bases: dict[str, dict] = {}
    for key, example in examples.items():
        base = re.match(r"# (?:from|added to) blueprints/([\w-]+)\.yaml", example)
        assert base, f"the {key} example names the shipped blueprint it belongs to in its first line"
        data = bases.setdefault(base.group(1), yaml.safe_load((BLUEPRINTS / f"{base.group(1)}.yaml").read_text()))
        fragment = yaml.safe_load(example)
        assert key in fragment, f"the {key} example shows the {key} section"
        data.update(fragment)
    for name, data in bases.items():
        files[f"examples-{name}"] = yaml.safe_dump(data, sort_keys=False)

    results = _validate_all(files, tmp_path)

    doc = WALKTHROUGH.read_text()
    assert whole is not None, "the doc ends with the whole file"
    if update:  # from the end of the doc backwards, so that the offsets still hold
        doc = doc[:whole.start(2)] + text + doc[whole.end(2):]
    else:
        assert whole.group(2) == text, "'The whole file' is the steps put together"
    for n, (block, console) in reversed(list(enumerate(steps, 1))):
        rc, out = results[f"step{n:02d}"]
        shown = _console(rc, out)
        if update:
            doc = doc[:console.start(2)] + shown + doc[console.end(2):]
        else:
            assert console.group(2) == shown, f"step {n} of docs/first-blueprint.md shows other output than " \
                "clusterctl gives (CLUSTERCTL_UPDATE_DOCS=1 rewrites it)"
    if update:
        WALKTHROUGH.write_text(doc)
    last_rc, last_out = results[f"step{len(steps):02d}"]
    assert last_rc == 0 and last_out.startswith("first.yaml: valid: 0 error(s), 0 warning(s)"), last_out
    assert {rc for rc, _ in (results[k] for k in files if k.startswith("step"))} == {0, 1, 2}, \
        "the walkthrough shows a read error, a failing rule and a clean result"

    for name in bases:
        rc, out = results[f"examples-{name}"]
        assert rc == 0 and "valid: 0 error(s)" in out, f"the section examples break blueprints/{name}.yaml:\n{out}"


def test_walkthrough_is_linked():
    """A newcomer finds the walkthrough from the README and from the reference."""
    assert "(docs/first-blueprint.md)" in (REPO / "README.md").read_text()
    assert "(first-blueprint.md)" in REFERENCE.read_text()


# --- the walkthrough reads as prose with blocks between paragraphs (step 5 once had the whole final file pasted
# into the middle of a sentence, and every test above still passed) ---

YAML_LINE = re.compile(r"^(\s*-\s*)?\{?[a-z_][a-z0-9_]*:(\s|$)")
"""a line that looks like a blueprint line: `key:` or `- {key: ...`"""
SENTENCE_END = (".", ":", "?", "!")


def _blocks_and_prose(text: str) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """(fenced blocks as (opening line number, tag, body), prose lines as (line number, line)); a fence left open
    fails here, at its opening line."""
    blocks, prose = [], []
    opened: tuple[int, str, list[str]] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if opened is None:
                opened = (n, line[3:].strip(), [])
            else:
                assert line == "```", f"line {n}: a closing fence carries nothing after it, got {line!r}"
                blocks.append((opened[0], opened[1], "".join(opened[2])))
                opened = None
        elif opened is not None:
            opened[2].append(line + "\n")
        else:
            prose.append((n, line))
    assert opened is None, f"the fence opened at line {opened[0]} is never closed"
    return blocks, prose


def test_walkthrough_fences_are_closed_tagged_and_parse():
    blocks, _ = _blocks_and_prose(WALKTHROUGH.read_text())
    assert blocks, "the walkthrough shows its steps in fenced blocks"
    for start, tag, body in blocks:
        assert tag in ("yaml", "console", "sh"), f"line {start}: a fence says what it holds (yaml, console), got {tag!r}"
        if tag == "yaml":
            data = yaml.safe_load(body)
            assert isinstance(data, dict) and data, f"line {start}: a yaml block is a mapping of blueprint sections"
        if tag == "console":
            assert body.startswith("$ "), f"line {start}: a console block starts with the command typed"


def test_walkthrough_has_no_yaml_outside_its_fences():
    _, prose = _blocks_and_prose(WALKTHROUGH.read_text())
    stray = [f"line {n}: {line}" for n, line in prose if YAML_LINE.match(line)]
    assert not stray, "blueprint lines outside a ```yaml block:\n" + "\n".join(stray)


def test_no_paragraph_of_the_walkthrough_is_broken_by_a_block():
    """A block stands between paragraphs: a blank line on each side, the paragraph before it ends its sentence
    (with '.', ':', '?' or '!'), and the text after it starts a new one rather than continuing a word."""
    lines = WALKTHROUGH.read_text().splitlines()
    blocks, _ = _blocks_and_prose(WALKTHROUGH.read_text())
    for start, _, body in blocks:
        end = start + body.count("\n") + 1  # the closing fence's line number
        before, after = lines[start - 2], (lines[end] if end < len(lines) else "")
        assert before == "", f"line {start}: a blank line before the block, got {before!r}"
        assert after == "", f"line {end}: a blank line after the block, got {after!r}"
        previous = next(line for line in reversed(lines[:start - 1]) if line.strip())
        assert previous.startswith(("```", "#")) or previous.rstrip().endswith(SENTENCE_END), \
            f"line {start}: the paragraph before the block stops mid-sentence: {previous!r}"
        following = next((line for line in lines[end:] if line.strip()), "")
        assert not following[:1].islower(), f"after line {end}: the text after the block continues a " \
            f"sentence: {following!r}"


def test_the_whole_file_validates_as_the_walkthrough_says(tmp_path):
    """'The whole file' is a blueprint `clusterctl validate` passes clean (the walkthrough ends there)."""
    _, whole = _walkthrough()
    (rc, out), = _validate_all({"whole": whole.group(2)}, tmp_path).values()
    assert rc == 0 and out.startswith("first.yaml: valid: 0 error(s), 0 warning(s), 0 info from "), out
