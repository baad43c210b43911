"""No import inside a function of clusterctl/rehearse/ but the optional dependencies of the ``rehearse`` extra,
which validate and render do without: ansible_runner (and ansible's vault for the day0 scenario's vault file),
sushy-tools with werkzeug, bcrypt and cryptography for the emulated BMCs (docs/bmc.md), cryptography for the users
scenario's directory certificates and its user's key. Module and function sizes are held for the whole package by
tests/test_code_shape.py."""

from __future__ import annotations

import ast
from pathlib import Path

REHEARSE = Path(__file__).resolve().parents[1] / "clusterctl" / "rehearse"
LOCAL_IMPORTS = {("scenario/deploy.py", "run_playbook", "ansible_runner"),
                 ("scenario/day0_bmc.py", "write_vault", "ansible.parsing.vault"),
                 ("fake/redfish.py", "_write_htpasswd", "bcrypt"),
                 *(("fake/redfish.py", "_write_certificate", m) for m in (
                     "cryptography", "cryptography.hazmat.primitives", "cryptography.hazmat.primitives.asymmetric",
                     "cryptography.x509.oid")),
                 *(("scenario/users.py", "_certificates", m) for m in (
                     "cryptography", "cryptography.hazmat.primitives", "cryptography.hazmat.primitives.asymmetric",
                     "cryptography.x509.oid")),
                 *(("scenario/users.py", "user_key", m) for m in (
                     "cryptography.hazmat.primitives", "cryptography.hazmat.primitives.asymmetric")),
                 *(("fake/redfish_bmc.py", "serve", m) for m in (
                     "sushy_tools", "sushy_tools.emulator", "sushy_tools.emulator.resources.systems",
                     "werkzeug.serving"))}


def _modules():
    for path in sorted(REHEARSE.rglob("*.py")):
        yield path.relative_to(REHEARSE).as_posix(), path.read_text()


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_imports_inside_functions_but_the_optional_dependency():
    found = {(rel, f.name, alias.name if isinstance(node, ast.Import) else node.module)
             for rel, text in _modules() for f in _functions(ast.parse(text)) for node in ast.walk(f)
             if isinstance(node, (ast.Import, ast.ImportFrom))
             for alias in (node.names if isinstance(node, ast.Import) else node.names[:1])}
    assert found == LOCAL_IMPORTS
