"""pyproject.toml's extras name what the code imports: `pip install '.[rehearse]'` gives a rehearsal that can
run (the lab-cloud rehearsal imports the AWS Pulumi program, and the extra once lacked pulumi), and
`scripts/test`, which installs the `test` extra, installs every other extra too."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from tests.helpers import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (PEP 503: case and runs of -_. do not matter)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)).lower()


def _imports(path: Path) -> set[str]:
    """Every absolute module an import of ``path`` names (module level and inside functions alike)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def _third_party_imports_of(package: str) -> dict[str, set[str]]:
    """top-level third-party module -> the clusterctl files importing it, over every module under ``package``
    and every clusterctl module those import, transitively (the cloud modules the rehearsal uses, wherever
    they live)."""
    todo = sorted((REPO / package).rglob("*.py"))
    seen: set[Path] = set()
    third: dict[str, set[str]] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path):
            top = module.split(".")[0]
            if top == "clusterctl":
                base = REPO.joinpath(*module.split("."))
                todo += [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()]
            elif top not in sys.stdlib_module_names:
                third.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return third


def _with_their_requirements(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, transitively (pydantic brings pydantic-core)."""
    out, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return out


def test_the_rehearse_extra_holds_every_package_the_rehearsal_imports():
    installed_by = {_name(r) for r in PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["rehearse"]}
    provided = _with_their_requirements(installed_by)
    distributions = importlib.metadata.packages_distributions()
    imports = _third_party_imports_of("clusterctl/rehearse")
    assert {"pulumi", "pulumi_aws", "ansible_runner", "yaml"} <= set(imports), \
        "the walk finds the rehearsal's known imports (ansible-runner, PyYAML, and Pulumi through lab-cloud)"
    missing = {module: sorted(files) for module, files in imports.items()
               if not {_name(d) for d in distributions.get(module, [module])} & provided}
    assert not missing, f"imported under clusterctl/rehearse but in neither the rehearse extra nor the " \
        f"dependencies of pyproject.toml: {missing}"


def test_the_test_extra_that_scripts_test_installs_holds_every_other_extra():
    assert "'.[test]'" in (REPO / "scripts" / "test").read_text()
    extras = PYPROJECT["optional-dependencies"]
    test = set(extras["test"])
    for extra, requirements in extras.items():
        assert set(requirements) <= test, f"the {extra} extra's {sorted(set(requirements) - test)} are not in " \
            "the test extra (the same pins), so scripts/test would not install them"
