"""Codes defined once: the exit codes in clusterctl/exit_codes.py, the load-problem codes (BP...) and META001 in
:class:`clusterctl.errors.LoadCode`; docs/cli.md and every output format agree with them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from clusterctl import exit_codes
from clusterctl.errors import LoadCode, Problem
from clusterctl.location import SourceMap
from clusterctl.output import diagnostics as diag
from tests.helpers import REPO

PACKAGE = REPO / "clusterctl"
CLI_MD = (REPO / "docs" / "cli.md").read_text()
NODE_PROGRAMS = PACKAGE / "cloud" / "node"
"""programs of their own that run on cloud nodes (stdlib only, their own exit codes), not the clusterctl command"""


def _exit_codes() -> dict[str, int]:
    return {name: value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}


def _doc_table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table under ``## heading`` in docs/cli.md, without its header."""
    section = CLI_MD.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))
            if NODE_PROGRAMS not in p.parents]


def test_exit_code_table_lists_exactly_the_exit_codes():
    documented = [int(cells[0]) for cells in _doc_table("Exit codes")]
    assert len(documented) == len(set(documented))
    assert sorted(documented) == sorted(_exit_codes().values())
    assert len(set(_exit_codes().values())) == len(_exit_codes())  # no two names for one code


def test_exit_codes_keep_their_documented_values():
    assert _exit_codes() == {"EXIT_OK": 0, "EXIT_FINDINGS": 1, "EXIT_UNREADABLE": 2, "EXIT_INTERNAL": 3,
                             "EXIT_INTERRUPTED": 130}


def test_exit_codes_are_only_defined_and_used_by_name():
    """No other module defines an EXIT_ constant, and no exit (typer.Exit, sys.exit, SystemExit) takes a number."""
    found = []
    for path, tree in _sources():
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and path.name != "exit_codes.py":
                found += [f"{where}:{node.lineno} defines {t.id}" for t in node.targets
                          if isinstance(t, ast.Name) and t.id.startswith("EXIT_")]
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = ast.unparse(node.func)
                if func in ("typer.Exit", "Exit", "sys.exit", "SystemExit") and isinstance(node.args[0].value, int):
                    found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    assert not found, "use clusterctl/exit_codes.py:\n" + "\n".join(found)


def test_load_codes_are_strings_equal_to_their_code():
    assert [c.code for c in LoadCode] == ["BP001", "BP002", "BP003", "BP004", "BP005", "BP006", "BP007", "BP008", "BP009",
                                         "BP010", "META001", "META002", "META003"]
    for c in LoadCode:
        assert c == c.code and f"{c}" == str(c) == c.code and hash(c) == hash(c.code)
        assert json.dumps({"code": c}) == f'{{"code": "{c.code}"}}'
        assert LoadCode(c.code) is c and c.title and c.meaning
    assert [c for c in LoadCode if not c.unreadable] == [LoadCode.UNKNOWN_SUPPRESSION, LoadCode.ERROR_SUPPRESSION,
                                                         LoadCode.CATALOG_OVERRIDE]


def test_load_code_literals_appear_only_in_the_enum():
    """Call sites name LoadCode members; a "BP004" literal in the package is a second source."""
    pattern = re.compile(r"(BP|META)\d{3}")
    found = [f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}" for path, tree in _sources()
             if path.name != "errors.py" for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.fullmatch(node.value)]
    assert not found, "use clusterctl.errors.LoadCode:\n" + "\n".join(found)


def test_docs_describe_every_load_code_as_the_enum_does():
    text = " ".join(CLI_MD.split())  # the prose wraps lines
    for c in LoadCode:
        if c.unreadable:
            assert f"`{c.code}` {c.meaning}" in text, c
        else:
            assert f"`{c.code}`" in text, c
    unreadable = [c.code for c in LoadCode if c.unreadable]
    (row,) = [cells for cells in _doc_table("Exit codes") if cells[0] == str(exit_codes.EXIT_UNREADABLE)]
    assert f"(`{unreadable[0]}`–`{unreadable[-1]}`)" in row[1]


def test_diagnostics_take_titles_from_the_enum():
    source = SourceMap("b.yaml", ["a: 1"])
    diags = diag.from_problems([Problem(("a",), "m", code=c) for c in LoadCode if c.unreadable], source)
    assert {d.code: d.title for d in diags} == {c.code: c.title for c in LoadCode if c.unreadable}
    sarif = json.loads(diag.to_sarif(diags, []))
    descriptors = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert [(r["id"], r["shortDescription"]["text"]) for r in descriptors] == \
        [(c.code, c.title) for c in LoadCode if c.unreadable]
    assert "error[BP003]: blueprint does not match the schema" in diag.to_text(diags, "summary")
