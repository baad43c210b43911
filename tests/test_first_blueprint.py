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
