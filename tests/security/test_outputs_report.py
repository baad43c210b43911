"""report.md shows blueprint and catalog free text as text: no HTML, image, link or autolink of its own.

A blueprint's ``catalog:`` sets descriptions, vendors and ``sources`` lines; validation messages quote them.
report.md is parsed here with markdown-it-py (CommonMark, tables on; rich depends on it, so it is always
installed): its only links are the contents' anchors and its only images the report's own pictures.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from markdown_it import MarkdownIt

from clusterctl.report.markdown import Markup, text
from clusterctl.report.section import md_table
from tests.helpers import REPO, cli, shipped, to_yaml

HTML = "<img src=x onerror=alert(1)>"
IMAGE = "![x](https://evil/p.png)"
LINK = "[click](javascript:alert(1))"
PAYLOAD = (f"{HTML} {IMAGE} {LINK} https://evil.example/a www.evil.example *b* _c_ `d` | e ~~f~~ $g$ &amp; "
           "x@evil.example")


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _inline_tokens(md: str):
    for block in _parser().parse(md):
        yield block
        for child in block.children or ():
            yield child


def _catalog_entry(section: str, name: str) -> dict:
    data = yaml.safe_load((REPO / "clusterctl" / "catalog" / f"{section}.yaml").read_text())[section]
    entry = copy.deepcopy(data[name])
    entry.update(description=PAYLOAD, vendor=PAYLOAD)
    entry["sources"] = {field: PAYLOAD for field in entry.get("sources", {})}
    return entry


def _hostile_blueprint(tmp_path):
    """lab-2node on its own catalog entries (GPU, NIC, switch, server), every free-text field the payload."""
    data = shipped("lab-2node")
    server = _catalog_entry("servers", "hgx-h100-8gpu")
    server["gpus"]["model"] = "lab-gpu"
    server["nics"][0]["model"] = "lab-nic"
    data["catalog"] = {"accelerators": {"lab-gpu": _catalog_entry("accelerators", "h100-sxm")},
                       "nics": {"lab-nic": _catalog_entry("nics", "cx7-400g")},
                       "switches": {"lab-switch": _catalog_entry("switches", "qm9700")},
                       "servers": {"lab-server": server}}
    data["node_types"]["hgx"]["server"] = "lab-server"
    data["fabrics"][0]["switch"] = "lab-switch"
    data["description"] = PAYLOAD
    path = tmp_path / "hostile.yaml"
    path.write_text(to_yaml(data))
    return path


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("report")
    r = cli("report", str(_hostile_blueprint(tmp)), "-o", str(tmp / "out"), "--model", "llama3-70b")
    assert r.returncode == 0, r.stderr
    return (tmp / "out" / "report.md").read_text()


def test_catalog_free_text_opens_no_html_in_the_report(hostile_report):
    kinds = {t.type for t in _inline_tokens(hostile_report)}
    assert "html_inline" not in kinds and "html_block" not in kinds
    assert "<img" not in hostile_report


def test_catalog_free_text_makes_no_image_or_link_in_the_report(hostile_report):
    links = [t.attrGet("href") for t in _inline_tokens(hostile_report) if t.type == "link_open"]
    images = [t.attrGet("src") for t in _inline_tokens(hostile_report) if t.type == "image"]
    assert links and all(href.startswith("#") for href in links), links
    assert images and all(src.startswith("pictures/") for src in images), images
    # GitHub also links bare addresses (its autolink extension, not in markdown-it's CommonMark)
    assert "https://evil" not in hostile_report and "www.evil" not in hostile_report
    assert "x@evil" not in hostile_report


def test_catalog_free_text_is_shown_as_written_in_the_report(hostile_report):
    """The vendor quoted by SW003 (validation findings, a table cell) and a sources line (a list item)."""
    escaped = (r"&lt;img src=x onerror=alert(1)> !\[x\](https\://evil/p.png) \[click\](javascript:alert(1)) "
               r"https\://evil.example/a www\.evil.example \*b\* \_c\_ \`d\` \| e \~\~f\~\~ \$g\$ &amp;amp; "
               r"x\@evil.example")
    assert f"but the GPUs are {escaped} (lab-gpu)" in hostile_report
    assert f"1. `accelerators.lab-gpu.bf16_dense_tflops`: {escaped}\n" in hostile_report
    shown = "".join(t.content for t in _inline_tokens(hostile_report) if t.type == "text")
    assert PAYLOAD in shown


@pytest.mark.parametrize("value", [
    PAYLOAD, HTML, IMAGE, LINK, "a\\", "\\[x]", "`` x ``", "**bold**", "<https://evil>", "[a]: https://evil",
    "&lt;", "&#60;script&#62;", "snake_case_name", "_lead", "trail_", "a_ b", "WWW.Evil.example", "ftp://evil",
    "pricing.<region>.onDemand", "1. not a list", "# not a heading",
])
def test_escaped_text_renders_as_exactly_itself_inline(value):
    tokens = _parser().parseInline(text(value))[0].children
    assert [t.type for t in tokens] == ["text"] * len(tokens)
    assert "".join(t.content for t in tokens) == value


def test_a_table_escapes_its_cells_unless_the_report_marks_them_as_markdown():
    table = md_table(["a", "b"], [[IMAGE, Markup("**total**")]], "ll")
    assert table.splitlines()[2] == r"| !\[x\](https\://evil/p.png) | **total** |"
