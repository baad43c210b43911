"""cloud/ is split by job: the programs that run on instances (cloud/node/) use the standard library only, only the
Pulumi components (cloud/pulumi/) import Pulumi, and the stack facts (cloud/stack/) import neither components nor
Pulumi. Read from the source with ast, as tests/test_imports.py reads the graph."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

CLOUD = Path(__file__).resolve().parents[2] / "clusterctl" / "cloud"


def _imports(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (relative imports as ``.``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." if node.level else node.module)
    return out


def _by_file(package: str) -> dict[str, set[str]]:
    return {p.relative_to(CLOUD).as_posix(): _imports(p) for p in sorted((CLOUD / package).rglob("*.py"))}


def test_node_programs_import_the_standard_library_and_each_other_only():
    node_modules = {p.stem for p in (CLOUD / "node").glob("*.py")} | {"clusterctl_cloud_config"}
    outside = {f: sorted(m for m in mods if m.split(".")[0] not in sys.stdlib_module_names
                         and m.split(".")[0] not in node_modules and m != ".")
               for f, mods in _by_file("node").items()}
    assert {f: m for f, m in outside.items() if m} == {}


def test_only_the_pulumi_components_import_pulumi():
    importers = sorted(p.relative_to(CLOUD.parent).as_posix() for p in CLOUD.parent.rglob("*.py")
                       if any(m.split(".")[0].startswith("pulumi") for m in _imports(p)))
    assert importers and all(f.startswith("cloud/pulumi/") for f in importers), importers


def test_stack_facts_import_no_component():
    components = {f: sorted(m for m in mods if m.startswith("clusterctl.cloud.pulumi"))
                  for f, mods in _by_file("stack").items()}
    assert {f: m for f, m in components.items() if m} == {}


def test_the_layers_of_cloud_are_the_three_packages():
    assert sorted(p.name for p in CLOUD.iterdir() if p.suffix == ".py") == ["__init__.py"]
    assert sorted(p.name for p in CLOUD.iterdir() if p.is_dir() and p.name != "__pycache__") == [
        "node", "pulumi", "stack"]
