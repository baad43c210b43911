"""What clusterctl prints for a person never carries a blueprint's control, bidi or invisible characters raw
(issue 24: "raw escape bytes and RTL overrides from the blueprint reach the terminal in human output"), and
SARIF locations are URIs.

A double-quoted YAML escape (``"\\e[2J"``, ``"\\u202e"``) puts such a character into a key or a value while the
file itself stays plain ASCII (so the reader's BP008 check does not apply). Every value kind refuses it, and
the message that says so quotes the value escaped; but paths, unknown keys and tags were quoted raw. Now every
line the command line prints goes through one helper (clusterctl/hidden_chars.py: ``escape_hidden``), and
text diagnostics escape their source excerpts with the caret under the escape. Rich markup in blueprint
text is printed literally. These tests run the real command line and fail on the commit before.
"""

from __future__ import annotations

import io
import json
from urllib.parse import unquote

import pytest
from rich.console import Console

from clusterctl.hidden_chars import escape_hidden
from clusterctl.rehearse.steps import HostOutcome, StepResult
from clusterctl.rehearse.ui import RichProgress
from tests.helpers import BLUEPRINTS, cli

LAB = (BLUEPRINTS / "lab-2node.yaml").read_text()
RAW = ("\x1b", "\u202e", "\x07", "\x9b", "\u2066", "\u200b")
"""no byte of these may reach stdout or stderr"""
HOSTILE = "\\e[2J\\u202e\\a[bold red]x[/bold red][link=https://evil.example]y[/link]\\e]8;;https://evil.example\\a"
"""a double-quoted YAML scalar body: clear screen, RLO, a bell, rich markup and an OSC 8 hyperlink"""
SHOWN = ("\\x1b[2J\\u202e\\x07[bold red]x[/bold red][link=https://evil.example]y[/link]"
         "\\x1b]8;;https://evil.example\\x07")
"""the same text as a person sees it printed"""


def _lab(old: str, new: str) -> str:
    assert old in LAB, old
    return LAB.replace(old, new, 1)


CASES = {
    "unknown-top-level-key": _lab("site: {", f'"{HOSTILE}": 1\nsite: {{'),
    "key-on-a-path": _lab("  head: {server: cpu-1u}", f'  head: {{server: cpu-1u}}\n  "n{HOSTILE}": {{server: cpu-1u, '
                                                       f'bogus: 1}}'),
    "fabric-kind-tag": _lab("    kind: ethernet", f'    kind: "{HOSTILE}"'),
    "duplicate-key": _lab("site: {", f'"d{HOSTILE}": 1\n"d{HOSTILE}": 2\nsite: {{'),
    "free-text": _lab("description: Two HGX H100 nodes and a head node in one rack; the smallest useful training "
                      "cluster.", f'description: "{HOSTILE}"'),
    "catalog-vendor-and-name": LAB + (f'catalog:\n  accelerators:\n    "g{HOSTILE}": {{vendor: "{HOSTILE}", '
                                      f'generation: hopper, bf16_dense_tflops: 1, hbm_gb: 1, hbm_tb_per_s: 1, '
                                      f'tdp_w: 1}}\n'),
}
COMMANDS = {"validate": ("validate", "{}"), "render": ("render", "{}", "-o", "{out}"),
            "report": ("report", "{}"), "catalog": ("catalog", "accelerators", "--blueprint", "{}")}


def _run(tmp_path, text: str, command: str, *extra: str):
    path = tmp_path / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    assert all(c not in text for c in RAW), "the file itself is plain: the characters come from escapes"
    args = [a.format(path, out=tmp_path / "out") for a in COMMANDS[command]]
    return cli(*args, *extra)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(CASES))
def test_no_raw_escape_or_bidi_character_reaches_the_terminal(tmp_path, case, command):
    r = _run(tmp_path, CASES[case], command)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    printed = r.stdout + r.stderr
    assert "Traceback" not in printed and "internal error" not in printed
    assert [c for c in RAW if c in printed] == []
    assert SHOWN[:60] in printed, printed[-3000:]  # quoted escaped, rich markup as the characters it is
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_machine_formats_keep_the_characters_as_json_escapes(tmp_path, fmt):
    r = _run(tmp_path, CASES["unknown-top-level-key"], "validate", "--format", fmt)
    assert r.returncode == 2
    assert [c for c in RAW if c in r.stdout + r.stderr] == []
    doc = json.loads(r.stdout)
    messages = ([f["message"] for f in doc["findings"]] if fmt == "json"
                else [res["message"]["text"] for res in doc["runs"][0]["results"]])
    assert any("unknown key '\x1b[2J\u202e\x07[bold red]" in m for m in messages), messages


def test_the_pulumi_outputs_quote_a_hostile_host_name_escaped(tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"nodes": {"gpu\x1b[2J\u202e": {"private_ip": "10.100.0.10"}}}), encoding="utf-8")
    assert "\x1b" not in outputs.read_text()  # escaped in the JSON text
    r = cli("inventory", "blueprints/aws-p5.yaml", "--from-pulumi", str(outputs), "-o", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert [c for c in RAW if c in r.stdout + r.stderr] == []
    assert "'gpu\\x1b[2J\\u202e'" in r.stderr  # escaped by clusterctl.hidden_chars.shown


def test_escape_hidden_writes_each_hidden_character_as_an_escape():
    assert escape_hidden("a\x1b[31mb\u202ec\rd\x85e\u2028f\U000e0041g\x00h\x7f") == \
        "a\\x1b[31mb\\u202ec\\rd\\x85e\\u2028f\\U000e0041g\\x00h\\x7f"
    text = "Zürich 東京 🚀 tab\there\nnext line [bold]x[/bold]"
    assert escape_hidden(text) == text
    assert escape_hidden(escape_hidden("\x1b\u202e")) == "\\x1b\\u202e"


def test_rehearsal_progress_prints_markup_and_escapes_literally():
    buf = io.StringIO()
    progress = RichProgress(Console(file=buf, force_terminal=False, color_system=None, width=400, highlight=False))
    hostile = "[bold red]x[/bold red] [link=https://evil.example]y[/link] \x1b[2J\u202e"
    progress.note(f"note {hostile}")
    progress.step_started(f"step {hostile}", ["gpu01"])
    progress.host_done("step", f"gpu01{hostile}", HostOutcome("ok", 1.0, detail=f"detail {hostile}"))
    progress.step_done(StepResult(f"done {hostile}", "failed", 2.0, error=f"error {hostile}"))
    printed = buf.getvalue()
    assert [c for c in RAW if c in printed] == []
    literal = "[bold red]x[/bold red] [link=https://evil.example]y[/link] \\x1b[2J\\u202e"
    for label in ("note", "step", "gpu01", "detail", "done", "error"):
        assert f"{label} {literal}" in printed or f"{label}{literal}" in printed, (label, printed)


# --- SARIF: artifactLocation.uri is a URI reference (RFC 3986) ------------------------------------------------

URI_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/%")


@pytest.mark.parametrize(("folder", "name", "uri"), [
    ("", "my bp #1 ä.yaml", "my%20bp%20%231%20%C3%A4.yaml"),
    ("dir with space", "a%b?c.yaml", "dir%20with%20space/a%25b%3Fc.yaml"),
], ids=["space-hash-umlaut", "folder-percent-question"])
def test_sarif_uri_is_percent_encoded(tmp_path, folder, name, uri):
    (tmp_path / folder).mkdir(exist_ok=True)
    relative = f"{folder}/{name}" if folder else name
    (tmp_path / relative).write_text(_lab("site: {", "sight: 1\nsite: {"), encoding="utf-8")
    r = cli("validate", "--format", "sarif", relative, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    locations = [res["locations"][0]["physicalLocation"] for res in json.loads(r.stdout)["runs"][0]["results"]]
    assert [(loc["artifactLocation"]["uri"], loc["region"]["startLine"]) for loc in locations] == [(uri, 5)]
    assert set(uri) <= URI_CHARS and unquote(uri) == relative
