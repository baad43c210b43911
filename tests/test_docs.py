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
