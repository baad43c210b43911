"""The wheel built from this checkout ships everything clusterctl reads, and works installed away from the checkout.

Once per module: ``pip wheel --no-deps --no-build-isolation`` of the repository (hatchling, the build backend,
is in the test extra, so nothing is downloaded), a fresh venv in a temporary directory
(``--system-site-packages``: the dependencies come from the running Python; the wheel is installed with
``--no-deps --ignore-installed``, so the venv's copy shadows any clusterctl installed there), and the venv's
``clusterctl`` run with that temporary directory as working directory and no PYTHONPATH, so the checkout cannot
be imported. Then:

- the wheel holds every file of templates/, roles/, blueprints/ and docs/examples/blueprint-sections/ under
  ``clusterctl/_data/`` and every file of the package (its YAML data too) at its own path;
- ``clusterctl init --list`` offers every shipped blueprint; ``render`` of bundled blueprints that together use
  every target writes exactly what the checkout renders; ``schema --markdown`` is docs/blueprint.md (it reads
  docs/examples/blueprint-sections); ``report`` writes docs/examples/report-dgx-h100-superpod-1su (it reads
  perf/models.yaml and report/*.yaml).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.targets import TARGETS, render_targets
from tests.conftest import require_module
from tests.helpers import BLUEPRINTS, REPO

DATA_FOLDERS = {  # checkout folder -> where the wheel must hold it (pyproject's force-include)
    "templates": "clusterctl/_data/templates",
    "roles": "clusterctl/_data/roles",
    "blueprints": "clusterctl/_data/blueprints",
    "docs/examples/blueprint-sections": "clusterctl/_data/docs/examples/blueprint-sections",
}
NOT_SHIPPED = {"__pycache__", ".pytest_cache", ".hypothesis"}
RENDERED = ("lab-2node", "aws-p5", "hgx-h200-roce-1024", "gb200-nvl72-8rack")
"""bundled blueprints rendered by the installed CLI: together they use every target"""
EXAMPLE_REPORT = "dgx-h100-superpod-1su"
TIMEOUT_S = 300


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    work: Path
    """the working directory of every command: outside the checkout"""

    @property
    def data(self) -> Path:
        return self.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / \
            "clusterctl" / "_data"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        return subprocess.run(args, cwd=self.work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)

    def clusterctl(self, *args: str) -> subprocess.CompletedProcess:
        result = self.run(str(self.venv / "bin" / "clusterctl"), *args)
        assert result.returncode == 0, f"clusterctl {' '.join(args)}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
        return result


def _step(args: list[str], cwd: Path) -> None:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"{' '.join(args)}: {result.stdout[-2000:]}{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    require_module("hatchling", hint="the test extra installs it: pip install '.[test]'")
    base = tmp_path_factory.mktemp("packaging")
    quiet = ["-q", "--disable-pip-version-check", "--no-index"]
    _step([sys.executable, "-m", "pip", "wheel", *quiet, "--no-deps", "--no-build-isolation", "-w", str(base / "dist"),
           str(REPO)], cwd=base)
    (wheel,) = (base / "dist").glob("clusterctl-*.whl")
    venv = base / "venv"
    _step([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], cwd=base)
    _step([str(venv / "bin" / "python"), "-m", "pip", "install", *quiet, "--root-user-action=ignore", "--no-deps",
           "--ignore-installed", str(wheel)], cwd=base)
    work = base / "work"
    work.mkdir()
    return Installed(wheel, venv, work)


def checkout_files() -> dict[str, Path]:
    """Where the wheel must hold each shipped file of the checkout -> that file."""
    expected = {}
    for folder, inside in {**DATA_FOLDERS, "clusterctl": "clusterctl"}.items():
        for path in sorted((REPO / folder).rglob("*")):
            rel = path.relative_to(REPO / folder)
            if path.is_file() and not NOT_SHIPPED & set(rel.parts) and path.suffix != ".pyc":
                expected[f"{inside}/{rel.as_posix()}"] = path
    return expected


def test_the_wheel_holds_every_shipped_file_at_its_place(installed):
    expected = checkout_files()
    assert len([p for p in expected if p.startswith("clusterctl/_data/roles/")]) > 100  # the walk found them
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        missing = sorted(p for p in expected if p not in names)
        assert not missing, f"{len(missing)} shipped files are not in the wheel (pyproject force-include?): " \
            f"{missing[:20]}"
        changed = [p for p, path in expected.items() if wheel.read(p) != path.read_bytes()]
    assert not changed, changed[:20]


def test_the_venv_imports_its_own_copy_and_not_the_checkout(installed):
    result = installed.run(str(installed.venv / "bin" / "python"), "-c",
                           "import clusterctl; print(clusterctl.__file__)")
    assert result.returncode == 0, result.stderr
    module = Path(result.stdout.strip())
    assert module.is_relative_to(installed.venv), module
    assert not module.is_relative_to(REPO)
    assert (installed.venv / "bin" / "clusterctl").read_text().startswith(f"#!{installed.venv}/bin/python")


def test_init_lists_every_shipped_blueprint(installed):
    out = installed.clusterctl("init", "--list").stdout
    listed = {line.split()[0] for line in out.splitlines()[1:] if line.startswith("  ")}
    assert listed == {p.stem for p in BLUEPRINTS.glob("*.yaml")}, out


def test_the_installed_lab_ha_reads_its_inventory_and_init_copies_it(installed):
    """lab-ha names an inventory CSV beside it (docs/inventory.md): the installed copy validates, reading the
    installed CSV, and ``init lab-ha`` writes the CSV beside the blueprint it writes."""
    installed.clusterctl("validate", str(installed.data / "blueprints" / "lab-ha.yaml"))
    (installed.work / "ha").mkdir()
    installed.clusterctl("init", "lab-ha", "-o", str(installed.work / "ha" / "site.yaml"))
    copied = installed.work / "ha" / "lab-ha-inventory.csv"
    assert copied.read_bytes() == (BLUEPRINTS / "lab-ha-inventory.csv").read_bytes()
    template = installed.clusterctl("inventory", "template", str(installed.work / "ha" / "site.yaml")).stdout
    assert template.splitlines()[5] == "gpu01,LABHA-GPU01,02:00:0a:0a:00:01,02:00:0a:0b:00:01,vault_bmc_lab,"
    assert template.splitlines()[-1] == "lab01-pdu2,LABHA-PDU2,,,,02:00:0a:0c:00:04"  # the devices after the hosts


def test_the_rendered_blueprints_use_every_target():
    used = {t for name in RENDERED for t in TARGETS
            if render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")), [t])}
    assert used == set(TARGETS)


def written_files(out: Path) -> dict[str, Path]:
    """What a command wrote under ``out`` (its own bookkeeping files, ``.clusterctl-*``, left out)."""
    return {p.relative_to(out).as_posix(): p for p in sorted(out.rglob("*"))
            if p.is_file() and not p.relative_to(out).as_posix().startswith(".clusterctl-")}


@pytest.mark.parametrize("name", RENDERED)
def test_render_of_a_bundled_blueprint_is_the_checkouts(installed, name):
    out = installed.work / f"render-{name}"
    installed.clusterctl("render", str(installed.data / "blueprints" / f"{name}.yaml"), "-o", str(out))
    expected = render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")))
    written = written_files(out)
    assert sorted(written) == sorted(expected)
    different = [path for path, text in expected.items() if written[path].read_text() != text]
    assert not different, different[:20]


def test_schema_markdown_is_the_blueprint_reference(installed):
    text = installed.clusterctl("schema", "--markdown").stdout
    assert text.rstrip("\n") == (REPO / "docs" / "blueprint.md").read_text().rstrip("\n")


def test_report_is_the_example_report(installed):
    out = installed.work / "report"
    installed.clusterctl("report", str(installed.data / "blueprints" / f"{EXAMPLE_REPORT}.yaml"), "-o", str(out))
    example = REPO / "docs" / "examples" / f"report-{EXAMPLE_REPORT}"
    written = written_files(out)
    assert sorted(written) == sorted(p.relative_to(example).as_posix() for p in example.rglob("*")
                                     if p.suffix in (".md", ".json", ".svg"))  # PNG copies only with --png
    for rel, path in written.items():
        assert path.read_bytes() == (example / rel).read_bytes(), rel
