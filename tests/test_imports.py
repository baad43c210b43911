"""The package's import graph follows the layering of docs/architecture.md: no module imports itself round a
circle, no top-level package imports another that imports it back, and nothing imports a higher layer.

Every ``import`` statement counts, wherever it is (module level, inside a function, under ``TYPE_CHECKING``):
a lazy import hides a dependency from the reader, not from the design. The graph is read from the source
with :mod:`ast`, so it needs no import of the package and sees every branch.

A *unit* is the first component under ``clusterctl/``: a top-level package (``clusterctl/rules/``) or a
top-level module (``clusterctl/errors.py``; ``clusterctl/__init__.py`` is the unit ``__init__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "clusterctl"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

LAYERS = {
    # 0 foundation leaves
    "__init__": 0, "limits": 0, "location": 0, "exit_codes": 0, "resources": 0, "hostlist": 0, "write": 0,
    "manifest": 0, "outdir": 0, "yamlout": 0, "names": 0, "path_policy": 0, "hidden_chars": 0,
    "kinds": 0, "strict": 0, "errors": 0, "source": 0,
    "catalog": 1,  # hardware data
    "blueprint": 2,  # the pydantic model of the YAML
    "plan": 3,  # derived facts: expansion, fabrics, topology planning
    "perf": 4, "cloud": 4,  # the performance model; provider facts and Pulumi components
    "rules": 5, "validate": 5,  # judge the plan
    "targets": 6, "report": 6, "output": 6,  # render, present, print
    "rehearse": 7, "starter": 7,
    "cli": 8, "cli_numbers": 8, "cli_app": 8, "cli_design": 8, "__main__": 8,
}
"""unit -> layer: a unit may import units of its own layer or lower ones (docs/architecture.md)"""


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the package that importing ``name`` loads: ``name`` itself, or the nearest package or
    module above it (``clusterctl.errors.Problem`` -> ``clusterctl.errors``); None outside the package."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (any statement, anywhere in the file)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    assert base, f"{path}: relative import beyond the top-level package"
                    where = ".".join(base + ([node.module] if node.module else []))
                else:
                    where = node.module or ""
                # ``from a.b import c``: c may be a module (a.b.c) or a name in a.b
                names = [f"{where}.{alias.name}" if alias.name != "*" else where for alias in node.names]
            else:
                continue
            for target in names:
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    resolved = _resolve(target, modules)
                    if resolved is not None and resolved != name:
                        targets.add(resolved)
        graph[name] = targets
    return graph


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def module_cycle_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Module edges inside an import circle of modules."""
    out = set()
    for component in _cycles(graph):
        out |= {(a, b) for a in component for b in graph[a] if b in component}
    return out


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        units.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    return units


def package_cycle_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Module edges that close a circle of units: between two units of one circle, to the same or a higher layer.

    A circle always has such an edge (it cannot only go down), and the edges down a circle are the ones the
    layering wants, so these are the imports to move."""
    out = set()
    for component in _cycles(package_graph(graph)):
        out |= {(a, b) for a, targets in graph.items() for b in targets
                if unit(a) != unit(b) and unit(a) in component and unit(b) in component
                and LAYERS.get(unit(a), -1) <= LAYERS.get(unit(b), -1)}
    return out


def layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Module edges from a lower layer to a higher one."""
    return {(a, b) for a, targets in graph.items() for b in targets
            if LAYERS.get(unit(a), -1) < LAYERS.get(unit(b), -1)}


def _listing(edges: set[tuple[str, str]]) -> str:
    return "\n".join(f"  {a} -> {b}" for a, b in sorted(edges))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_graph_sees_every_kind_of_import(tmp_path):
    """The reader itself: absolute, relative, function-level and TYPE_CHECKING imports all become edges, to the
    module that is loaded (a name imported from a module is an edge to that module)."""
    pkg = tmp_path / PACKAGE
    files = {
        "__init__.py": "__version__ = '1'\n",
        "leaf.py": "import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from clusterctl.top import X\n",
        "top.py": "from clusterctl import __version__\nX = 1\n\ndef f():\n    import clusterctl.sub.deep as d\n",
        "sub/__init__.py": "from . import deep\nfrom .deep import name\n",
        "sub/deep.py": "from .. import leaf\nfrom ..top import X\nfrom clusterctl.sub import other\n",
        "sub/other.py": "import yaml\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert import_graph(pkg) == {
        "clusterctl": set(),
        "clusterctl.leaf": {"clusterctl.top"},  # under TYPE_CHECKING
        "clusterctl.top": {"clusterctl", "clusterctl.sub.deep"},  # a name of the package; inside a function
        "clusterctl.sub": {"clusterctl.sub.deep"},  # relative, a module and a name of it
        "clusterctl.sub.deep": {"clusterctl.leaf", "clusterctl.top", "clusterctl.sub.other"},
        "clusterctl.sub.other": set(),
    }


def test_checks_find_the_circles_this_layering_removed():
    """Each check on a small graph: errors <-> source (now both import location), catalog -> blueprint.base
    (StrictModel, now clusterctl.strict)."""
    graph = {
        "clusterctl.errors": {"clusterctl.source"}, "clusterctl.source": {"clusterctl.errors"},
        "clusterctl.catalog.models": {"clusterctl.blueprint.base"}, "clusterctl.blueprint.base": set(),
        "clusterctl.blueprint.model": {"clusterctl.catalog.models"}, "clusterctl.cli": {"clusterctl.blueprint.model"},
    }
    errors_source = {("clusterctl.errors", "clusterctl.source"), ("clusterctl.source", "clusterctl.errors")}
    upward = {("clusterctl.catalog.models", "clusterctl.blueprint.base")}
    assert module_cycle_edges(graph) == errors_source
    assert package_cycle_edges(graph) == errors_source | upward  # not blueprint.model -> catalog.models: down
    assert layer_violations(graph) == upward
    assert module_cycle_edges(import_graph()).isdisjoint(errors_source)


def test_every_unit_has_a_layer(graph):
    unknown = sorted({unit(m) for m in graph} - set(LAYERS))
    assert not unknown, (f"new top-level module(s) or package(s) {unknown}: add each to LAYERS in "
                         f"tests/test_imports.py at its layer (and to the layers in docs/architecture.md)")


def test_no_module_import_cycles(graph):
    new = module_cycle_edges(graph)
    assert not new, ("modules import each other round a circle (move what both need to a lower module):\n"
                     + _listing(new))


def test_no_package_import_cycles(graph):
    new = package_cycle_edges(graph)
    assert not new, ("top-level packages import each other round a circle; the imports that close it:\n"
                     + _listing(new))


def test_imports_go_to_the_same_or_a_lower_layer(graph):
    new = layer_violations(graph)
    assert not new, ("imports from a lower layer to a higher one (LAYERS in tests/test_imports.py, "
                     "docs/architecture.md):\n" + "\n".join(
                         f"  {a} (layer {LAYERS.get(unit(a))}) -> {b} (layer {LAYERS.get(unit(b))})"
                         for a, b in sorted(new)))

