"""Generated references stay in step with the code (regenerate with the commands in their headers)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from clusterctl.output.rule_docs import rules_markdown
from clusterctl.perf.published.all_rows import rows as published_rows
from clusterctl.output.schema_docs import blueprint_markdown
from clusterctl.rules import all_rules
from tests.conftest import refresh_requested
from tests.helpers import BLUEPRINTS, REPO
from tests.test_imports import LAYERS


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


# --- counts the docs state, each held to a truth found independently of the sentence (README said 13 roles when
# 22 shipped, and 69 rules when 90 ran). CLUSTERCTL_UPDATE_DOCS=1 rewrites the numbers; read the prose after. ---

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


@dataclass(frozen=True)
class Count:
    """A number stated in ``doc``: ``pattern`` matches the statement once, its group ``n`` the number (digits,
    or a word up to twelve); ``truth`` counts what it states."""
    doc: str
    pattern: str
    truth: Callable[[], int]


def _shipped_roles() -> int:
    """roles a render copies: every directory of roles/ with tasks/main.yml (targets/ansible.py copies those)"""
    return sum(1 for p in (REPO / "roles").glob("*/tasks/main.yml"))


def _fuzzed_blueprints() -> int:
    """the blueprints tests/test_fuzz.py's FUZZED lists (read from its source: importing it makes a directory)"""
    tree = ast.parse((REPO / "tests" / "test_fuzz.py").read_text())
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "FUZZED"]
    return len(ast.literal_eval(value))


def _published_rows_of(family: str) -> Callable[[], int]:
    """rows of one family of the published measurements the performance model is judged by"""
    return lambda: sum(1 for r in published_rows() if r.family == family)


COUNTS = (
    Count("README.md", r"`site\.yml`, `ansible\.cfg` and (?P<n>\w+) roles;", _shipped_roles),
    Count("README.md", r"references, and (?P<n>\w+) rules for power,", lambda: len(all_rules())),
    Count("docs/architecture.md", r"The package is (?P<n>\w+) layers\.", lambda: len(set(LAYERS.values()))),
    Count("docs/security.md", r"anywhere in (?P<n>\w+) shipped blueprints,", _fuzzed_blueprints),
    Count("docs/report.md", r"\): (?P<n>\w+) dense Llama 3 rows on DGX-B200", _published_rows_of("blackwell-dense")),
    Count("docs/report.md", r"; (?P<n>\w+) Qwen3 MoE rows with EP", _published_rows_of("moe-ep")),
)


def _as_number(text: str) -> int:
    return WORDS.index(text) if text in WORDS else int(text.replace(",", ""))


def _written_like(old: str, n: int) -> str:
    return WORDS[n] if old in WORDS and n < len(WORDS) else f"{n:,}"


def test_counts_in_the_docs_are_true():
    update = refresh_requested("CLUSTERCTL_UPDATE_DOCS")
    wrong, texts = [], {}
    for count in COUNTS:
        text = texts.setdefault(count.doc, (REPO / count.doc).read_text())
        found = list(re.finditer(count.pattern, text))
        assert len(found) == 1, f"{count.doc}: the statement {count.pattern!r} is there once (found {len(found)}); " \
            "if the sentence was reworded, update COUNTS with it"
        stated, true = _as_number(found[0].group("n")), count.truth()
        if stated != true:
            wrong.append(f"{count.doc}: {found[0].group(0)!r} but there are {true}")
            start, end = found[0].span("n")
            texts[count.doc] = text[:start] + _written_like(found[0].group("n"), true) + text[end:]
    if update:
        for doc, text in texts.items():
            (REPO / doc).write_text(text)
    else:
        assert not wrong, "counts the docs state are wrong (CLUSTERCTL_UPDATE_DOCS=1 rewrites them):\n" + \
            "\n".join(wrong)


def test_readme_names_every_shipped_blueprint():
    readme = (REPO / "README.md").read_text()
    paragraph = readme[readme.index("Shipped blueprints (`blueprints/`"):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    named = set(re.findall(r"`([a-z0-9-]+)`", paragraph))
    assert named == {p.stem for p in BLUEPRINTS.glob("*.yaml")}, "README's list of shipped blueprints"
