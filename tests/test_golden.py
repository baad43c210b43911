"""Golden files: every shipped blueprint × every target, byte for byte.

Refresh after an intended change with:

    CLUSTERCTL_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

and review the diff like code. Under ``CI`` the variable fails the test instead (tests/conftest.py,
refresh_requested): CI only compares. The Ansible roles copied into ``ansible/roles/``, the node programs copied into
``cloud/bin/`` and the acceptance checker (``acceptance/check.py``) are not stored again here; separate tests check
they are byte-identical copies of the top-level ``roles/``, of ``clusterctl/cloud/node/`` and of
``clusterctl/targets/acceptance/checker.py`` (tests/targets/test_acceptance.py). The 100k-GPU blueprint's switch
files and DNS zones (tens of MB) are stored as sha256 manifests (``switches.sha256``, ``dns/zones.sha256``).
"""

from __future__ import annotations

import hashlib
import shutil

import pytest

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.resources import data_dir
from clusterctl.targets import TARGETS, render_targets
from tests.conftest import refresh_requested
from tests.helpers import BLUEPRINTS, REPO

GOLDEN = REPO / "tests" / "golden"
SHIPPED = sorted(p.stem for p in BLUEPRINTS.glob("*.yaml"))


def rendered(name: str) -> dict[str, str]:
    return render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")))


HASHED = ("frontier-3tier-100k",)
"""blueprints whose switches/ files and DNS zones are stored as sha256 manifests (the module docstring)"""
HASHED_DIRS = {"switches/": "switches.sha256", "dns/zones/": "dns/zones.sha256"}
"""the directories of a HASHED blueprint stored as a manifest (17 MB of zones for the 100k-GPU blueprint)"""


def stored(files: dict[str, str], name: str = "") -> dict[str, str]:
    out = {p: t for p, t in files.items()
           if not p.startswith(("ansible/roles/", "cloud/bin/")) and p != "acceptance/check.py"}
    if name in HASHED:
        for prefix, manifest in HASHED_DIRS.items():
            hashed = sorted(p for p in out if p.startswith(prefix))
            lines = [f"{hashlib.sha256(out.pop(p).encode()).hexdigest()}  {p}\n" for p in hashed]
            if lines:
                out[manifest] = "".join(lines)
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_golden(name):
    files = stored(rendered(name), name)
    base = GOLDEN / name
    if refresh_requested("CLUSTERCTL_UPDATE_GOLDEN"):
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
    name = "aws-p5" if target in ("pulumi", "cloud_node") else "lab-2node"  # cloud blueprints only
    name = "hgx-h200-roce-1024" if target == "switches" else name  # switch files for RoCE fabrics only
    name = "gb200-nvl72-8rack" if target == "nvlink" else name  # hand-off files for multi-node NVLink only
    name = "gb200-nvl72-8rack" if target == "kubernetes" else name  # blueprints with a kubernetes: section only
    assert render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")), [target])


def test_copied_roles_are_the_shipped_roles():
    files = rendered("lab-2node")
    roles = {p: t for p, t in files.items() if p.startswith("ansible/roles/")}
    assert roles
    src = data_dir("roles")
    for path, text in roles.items():
        assert (src / path.removeprefix("ansible/roles/")).read_text() == text, path


def test_copied_node_programs_are_the_package_files():
    from clusterctl.targets.cloud_node import PROGRAMS

    for name in ("aws-p5", "gcp-a3-mega", "azure-nd-h100-v5"):
        files = rendered(name)
        assert {p for p in files if p.startswith("cloud/bin/")} == set(PROGRAMS)
        for path, module in PROGRAMS.items():
            assert (REPO / "clusterctl" / "cloud" / "node" / module).read_text() == files[path], path
    assert not [p for p in rendered("lab-2node") if p.startswith("cloud/")]  # bare metal: none
