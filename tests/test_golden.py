"""Golden files: every shipped blueprint × every target, byte for byte.

Refresh after an intended change with:

    CLUSTERCTL_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

and review the diff like code. The Ansible roles copied into ``ansible/roles/`` are not stored again
here; a separate test checks they are byte-identical copies of the top-level ``roles/``.
"""

from __future__ import annotations

import os
import shutil

import pytest

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.resources import data_dir
from clusterctl.targets import TARGETS, render_targets
from tests.helpers import BLUEPRINTS, REPO

GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("CLUSTERCTL_UPDATE_GOLDEN") == "1"
SHIPPED = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))


def rendered(name: str) -> dict[str, str]:
    return render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")))


def stored(files: dict[str, str]) -> dict[str, str]:
    return {p: t for p, t in files.items() if not p.startswith("ansible/roles/")}


@pytest.mark.parametrize("name", SHIPPED)
def test_golden(name):
    files = stored(rendered(name))
    base = GOLDEN / name
    if UPDATE:
        shutil.rmtree(base, ignore_errors=True)
        for path, text in files.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text)
    on_disk = {p.relative_to(base).as_posix(): p.read_text() for p in base.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(files), "files differ: refresh with CLUSTERCTL_UPDATE_GOLDEN=1"
    for path, text in files.items():
        assert on_disk[path] == text, f"{name}/{path} differs from the golden file"


@pytest.mark.parametrize("target", TARGETS)
def test_every_target_renders_something(target):
    name = "aws-p5" if target == "pulumi" else "lab-2node"  # pulumi renders for cloud blueprints only
    name = "hgx-h200-roce-1024" if target == "switches" else name  # switch files for RoCE fabrics only
    assert render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")), [target])


def test_copied_roles_are_the_shipped_roles():
    files = rendered("lab-2node")
    roles = {p: t for p, t in files.items() if p.startswith("ansible/roles/")}
    assert roles
    src = data_dir("roles")
    for path, text in roles.items():
        assert (src / path.removeprefix("ansible/roles/")).read_text() == text, path
