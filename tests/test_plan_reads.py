"""Consumers ask the plan; they do not walk the blueprint (docs/architecture.md, "plan").

Outside ``plan/`` (which builds the plan from the blueprint) and ``rules/`` (which judge the blueprint and
locate findings in it), a module reads ``.blueprint`` only if it is listed in :data:`ALLOWED` with the number of
reads it makes and why. The list only shrinks: a module that reads more than its number fails, and so does
one that reads fewer (lower its number, or drop it). Settings the plan carries unchanged are its properties
(``plan.name``, ``plan.slurm``, ``plan.storage``, ...); facts computed from them are functions in plan/.

Read with :mod:`ast` from the source: every attribute access named ``blueprint`` counts (``plan.blueprint``,
``self.blueprint``, ``ctx.plan.blueprint``), and so does a ``blueprint`` keyword of a call.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "clusterctl"
JUDGES = ("plan/", "rules/")
"""packages that read the blueprint by design: the one that plans it, the ones that judge it"""

ALLOWED: dict[str, tuple[int, str]] = {
    "cli.py": (1, "`clusterctl catalog BLUEPRINT` lists the blueprint's own catalog entries; it builds no plan"),
    "validate.py": (1, "the blueprint's suppression entries are judged against the rules before any plan exists"),
}
"""module -> (reads, why it needs the blueprint itself)"""


def blueprint_reads(source: str) -> int:
    """How many times ``source`` reads an attribute named ``blueprint``."""
    return sum(1 for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Attribute) and node.attr == "blueprint" and isinstance(node.ctx, ast.Load))


def _reads() -> dict[str, int]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(JUDGES):
            continue
        n = blueprint_reads(path.read_text())
        if n:
            found[rel] = n
    return found


def test_only_listed_modules_read_the_blueprint():
    reads = _reads()
    unlisted = {m: n for m, n in reads.items() if m not in ALLOWED}
    assert unlisted == {}, ("ask the plan (plan.<setting> or a function in plan/) instead of reading "
                            f"plan.blueprint in: {unlisted}")


def test_the_list_only_shrinks():
    reads = _reads()
    changed = {m: (reads.get(m, 0), n) for m, (n, _) in ALLOWED.items() if reads.get(m, 0) != n}
    assert changed == {}, f"update ALLOWED (module: (reads now, listed)): {changed}"


def test_the_reader_counts_every_form():
    source = "x = plan.blueprint.name\nbp = self.plan.blueprint\ny = plan.name\nplan.blueprint_id = 1\n"
    assert blueprint_reads(source) == 2
