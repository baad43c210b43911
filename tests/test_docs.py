"""Generated references stay in step with the code (regenerate with the commands in their headers)."""

from __future__ import annotations

from clusterctl.output.rule_docs import rules_markdown
from clusterctl.output.schema_docs import blueprint_markdown
from clusterctl.rules import all_rules
from tests.helpers import REPO


def test_blueprint_reference_is_current():
    text = blueprint_markdown()
    assert (REPO / "docs" / "blueprint.md").read_text() == (text if text.endswith("\n") else text + "\n"), \
        "run: clusterctl schema --markdown > docs/blueprint.md"


def test_rule_reference_is_current():
    assert (REPO / "docs" / "rules.md").read_text() == rules_markdown(all_rules()), \
        "run: clusterctl rules list --markdown > docs/rules.md"


def test_readme_commands_exist():
    readme = (REPO / "README.md").read_text()
    assert "python3 -m pip install . && clusterctl validate blueprints/dgx-h100-superpod-1su.yaml" in readme
    assert "bash scripts/test" in readme
    assert (REPO / ".ci" / "run").read_text().strip().endswith("exec bash scripts/test")


def test_example_report_is_current(tmp_path):
    """docs/examples/report-dgx-h100-superpod-1su is what `clusterctl report` writes today (PNG copies are
    not compared: their bytes depend on the Cairo version). Regenerate with:
    clusterctl report blueprints/dgx-h100-superpod-1su.yaml -o docs/examples/report-dgx-h100-superpod-1su --png"""
    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.output import diagnostics
    from clusterctl.report import document
    from clusterctl.validate import validate_loaded

    committed = REPO / "docs" / "examples" / "report-dgx-h100-superpod-1su"
    v = validate_loaded(load_blueprint(REPO / "blueprints" / "dgx-h100-superpod-1su.yaml"))
    rep = document.build(v.plan, findings=diagnostics.from_findings(v.result.findings, v.loaded.source))
    document.write(rep, tmp_path / "r")
    fresh = sorted(p.relative_to(tmp_path / "r") for p in (tmp_path / "r").rglob("*")
                   if p.suffix in (".md", ".json", ".svg"))
    assert fresh == sorted(p.relative_to(committed) for p in committed.rglob("*") if p.suffix in (".md", ".json", ".svg"))
    for rel in fresh:
        assert (committed / rel).read_bytes() == (tmp_path / "r" / rel).read_bytes(), f"{rel} is stale: regenerate"
    assert all((committed / f"{p.with_suffix('')}.png").is_file() for p in fresh if p.suffix == ".svg")


def test_every_option_docs_slurm_md_lists_for_slurm_conf_is_rendered():
    """docs/slurm.md's slurm.conf table says what the code does: each `Key` (or `Key=value`) it lists occurs
    in a rendered golden slurm.conf (enable_configless was listed but never rendered)."""
    import re

    text = (REPO / "docs" / "slurm.md").read_text()
    table = text[text.index("\n## slurm.conf\n"):]
    table = table[:table.index("\n## ", 1)]
    rendered = "\n".join(p.read_text() for p in (REPO / "tests" / "golden").glob("*/slurm/slurm.conf"))
    keys = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            for cell in re.findall(r"`([^`]+)`", row.split("|")[1]):
                key, _, value = cell.partition("=")
                keys.add((key.strip(), value.split()[0] if value and "<" not in value and " " not in value else ""))
    assert len(keys) > 15
    missing = [f"{k}={v}" if v else k for k, v in sorted(keys)
               if not re.search(rf"(?m)^{re.escape(k)}=" + (re.escape(v) if v else ""), rendered)]
    assert not missing, f"docs/slurm.md lists options no rendered slurm.conf has: {missing}"


def test_catalog_doc_local_server_example_validates(tmp_path):
    """docs/catalog.md's "Declaring a server in a blueprint" example is a whole blueprint whose GPU node type is
    described inline (node_types.<name>.spec); it validates clean through the CLI."""
    import re

    from tests.helpers import cli
    doc = (REPO / "docs" / "catalog.md").read_text()
    section = doc.split("## Declaring a server in a blueprint", 1)[1]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert "\n    spec:\n" in block and "type: b200dlc" in block
    path = tmp_path / "local-server.yaml"
    path.write_text(block)
    r = cli("validate", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 error(s), 0 warning(s)" in r.stdout + r.stderr
