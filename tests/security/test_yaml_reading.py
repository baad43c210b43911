"""The YAML a reviewer reads is the YAML clusterctl parses (issue 24, docs/security.md, Layer 6).

A reviewer reads a blueprint as ``git diff`` or an editor shows it: a line ends at LF (a CRLF pair is one
line end). PyYAML and libyaml follow YAML 1.1, where a lone CR, NEL (U+0085), LINE SEPARATOR (U+2028) and
PARAGRAPH SEPARATOR (U+2029) end a line too: inside a comment one of them makes the rest of the "comment" a
new line of YAML the diff never showed. Bidirectional controls reorder what is displayed ("Trojan Source"),
zero-width and other format characters are invisible, and control characters drive the terminal. Every
one of them is refused anywhere in the file (comments included) before the YAML is parsed: exit 2, code
BP008, at the line and column the diff shows, naming the character. These tests fail on the commit before.
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from clusterctl.blueprint.load import load_blueprint_text
from clusterctl.errors import BlueprintError
from clusterctl.kinds import ALL_KINDS
from tests.helpers import BLUEPRINTS, cli

LAB = (BLUEPRINTS / "lab-2node.yaml").read_text()
SCRATCH = "  - {name: scratch, tier: local, mount: /raid}\n"
HIDDEN_ETC = ('  - {name: cfg, tier: nfs, export: "head01:/export/etc", mount: /etc, capacity_tb: 1, read_gb_per_s: 1, '
              'write_gb_per_s: 1}')


def with_hidden_mount(char: str) -> str:
    """The reproducer of issue 24: one "comment" line in the diff, after the scratch tier (line 45), that YAML
    1.1 reads as a comment and a new storage entry mounting an NFS export over /etc."""
    assert SCRATCH in LAB
    return LAB.replace(SCRATCH, SCRATCH + "  # scratch is node-local" + char + HIDDEN_ETC + "\n", 1)


def write(tmp_path, text: str, name: str = "bp.yaml"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


LINE_BREAKS = [("\u2028", "U+2028 LINE SEPARATOR"), ("\u2029", "U+2029 PARAGRAPH SEPARATOR"),
               ("\x85", "U+0085 NEXT LINE (NEL)"), ("\r", "U+000D CARRIAGE RETURN")]


@pytest.mark.parametrize(("char", "name"), LINE_BREAKS, ids=["LS", "PS", "NEL", "lone-CR"])
def test_a_line_break_the_diff_does_not_show_is_refused_where_the_diff_shows_it(tmp_path, char, name):
    text = with_hidden_mount(char)
    # what the reviewer sees: one added line, the 46th, that is a comment
    diff_lines = text.split("\n")
    assert diff_lines[45].lstrip().startswith("# scratch is node-local") and len(diff_lines) == len(LAB.split("\n")) + 1
    path = write(tmp_path, text)
    r = cli("validate", str(path))
    assert r.returncode == 2, r.stderr
    assert f"error[BP008]: blueprint contains a character a reviewer cannot see\n  --> {path}:46:26\n" in r.stderr
    assert f"= {name}: YAML 1.1 ends a line here, a diff does not:" in r.stderr
    assert "= hint: delete it" in r.stderr
    # the excerpt shows the character escaped, the caret under it
    escaped = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\x85", "\r": "\\r"}[char]
    assert f"46 |   # scratch is node-local{escaped}  - {{name: cfg, tier: nfs," in r.stderr
    assert "   |                          ^\n" in r.stderr
    assert char not in r.stderr and char not in r.stdout
    machine = json.loads(cli("validate", "--format", "json", str(path)).stdout)
    assert [(f["code"], f["location"]["line"], f["location"]["column"]) for f in machine["findings"]] == \
        [("BP008", 46, 26)]
    assert machine["status"] == "unreadable"


def test_render_refuses_the_hidden_mount_and_writes_nothing(tmp_path):
    path = write(tmp_path, with_hidden_mount("\u2028"))
    out = tmp_path / "out"
    r = cli("render", str(path), "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert f"{path}:46:26" in r.stderr
    assert not out.exists()


def test_crlf_line_ends_are_one_line_end(tmp_path):
    path = write(tmp_path, LAB.replace("\n", "\r\n"))
    r = cli("validate", str(path))
    assert r.returncode == 0, r.stderr
    broken = write(tmp_path, LAB.replace("site: {", "sight: 1\nsite: {", 1).replace("\n", "\r\n"), "broken.yaml")
    r = cli("validate", str(broken))
    assert r.returncode == 2
    assert f"{broken}:5:1" in r.stderr and "unknown key 'sight'" in r.stderr
    assert "\r" not in r.stderr


def test_a_leading_byte_order_mark_is_read_as_before_and_one_elsewhere_is_refused(tmp_path):
    assert cli("validate", str(write(tmp_path, "\ufeff" + LAB))).returncode == 0
    path = write(tmp_path, "\ufeff" + LAB.replace("name: lab-2node", "name: lab\ufeff-2node", 1), "inner.yaml")
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert f"{path}:3:10" in r.stderr and "U+FEFF ZERO WIDTH NO-BREAK SPACE: an invisible format character" in r.stderr


@pytest.mark.parametrize("char", ["\ufffe", "\uffff"])
def test_a_character_yaml_itself_refuses_is_located_too(tmp_path, char):
    """U+FFFE and U+FFFF are not hidden (an editor shows a box) but YAML refuses them: at their place, not 1:1."""
    path = write(tmp_path, "\ufeff" + LAB.replace("# one NDR", f"# one{char} NDR", 1))
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert f"error[BP001]: blueprint is not valid YAML\n --> {path}:2:6\n" in r.stderr
    assert f"the character U+{ord(char):04X} is not allowed in YAML" in r.stderr


# --- bidi, invisible and control characters: one file, one run, every place reported -------------------------

BIDI = [("\u202a", "U+202A LEFT-TO-RIGHT EMBEDDING"), ("\u202b", "U+202B RIGHT-TO-LEFT EMBEDDING"),
        ("\u202c", "U+202C POP DIRECTIONAL FORMATTING"), ("\u202d", "U+202D LEFT-TO-RIGHT OVERRIDE"),
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("\u2067", "U+2067 RIGHT-TO-LEFT ISOLATE"), ("\u2068", "U+2068 FIRST STRONG ISOLATE"),
        ("\u2069", "U+2069 POP DIRECTIONAL ISOLATE"), ("\u200e", "U+200E LEFT-TO-RIGHT MARK"),
        ("\u200f", "U+200F RIGHT-TO-LEFT MARK"), ("\u061c", "U+061C ARABIC LETTER MARK")]
INVISIBLE = [("\u200b", "U+200B ZERO WIDTH SPACE"), ("\u200c", "U+200C ZERO WIDTH NON-JOINER"),
             ("\u200d", "U+200D ZERO WIDTH JOINER"), ("\u2060", "U+2060 WORD JOINER"),
             ("\u00ad", "U+00AD SOFT HYPHEN"), ("\U000e0041", "U+E0041 TAG LATIN CAPITAL LETTER A")]
CONTROLS = [("\x1b", "U+001B ESCAPE"), ("\x00", "U+0000 NULL"), ("\x07", "U+0007 BELL"), ("\x08", "U+0008 BACKSPACE"),
            ("\x0b", "U+000B LINE TABULATION"), ("\x0c", "U+000C FORM FEED"), ("\x1c", "U+001C FILE SEPARATOR"),
            ("\x7f", "U+007F DELETE"), ("\x80", "U+0080 (a C1 control character)"),
            ("\x9b", "U+009B (a C1 control character)")]
WHY = {"bidi": "a bidirectional control: it reorders how the text around it is shown",
       "invisible": "an invisible format character", "control": "a control character: a terminal acts on it"}


def _places(chars: list[tuple[str, str]]) -> tuple[str, list[tuple[int, int]]]:
    """lab-2node with each character in another place: a comment, a plain value, a double-quoted value, a key
    (in turn); and the (line, column) of each as a diff shows it."""
    lines = LAB.split("\n")
    extra, where = [], []
    for i, (char, _) in enumerate(chars):
        line = len(lines) - 1 + len(extra)  # 0-based index of the line added now
        kind = i % 4
        if kind == 0:
            extra.append(f"# reviewed{char} and approved")
            where.append((line + 1, 11))
        elif kind == 1:
            extra.append(f"x_plain_{i}: ab{char}c")
            where.append((line + 1, len(f"x_plain_{i}: ab") + 1))
        elif kind == 2:
            extra.append(f'x_quoted_{i}: "ab{char}c"')
            where.append((line + 1, len(f'x_quoted_{i}: "ab') + 1))
        else:
            extra.append(f"x_key{char}_{i}: 1")
            where.append((line + 1, len("x_key") + 1))
    return "\n".join(lines[:-1] + extra) + "\n", where


@pytest.mark.parametrize(("chars", "why"), [(BIDI, "bidi"), (INVISIBLE, "invisible"), (CONTROLS, "control")],
                         ids=["bidi", "invisible", "control"])
def test_bidi_invisible_and_control_characters_are_refused_anywhere(tmp_path, chars, why):
    text, where = _places(chars)
    path = write(tmp_path, text)
    r = cli("validate", "--format", "json", str(path))
    assert r.returncode == 2, r.stdout
    findings = json.loads(r.stdout)["findings"]
    assert [(f["code"], f["location"]["line"], f["location"]["column"]) for f in findings] == \
        [("BP008", line, col) for line, col in where]
    assert [f["message"].split(": ", 1)[0] for f in findings] == [name for _, name in chars]
    assert all(WHY[why] in f["message"] for f in findings)
    human = cli("validate", str(path))
    assert human.returncode == 2
    assert not any(char in human.stderr + human.stdout for char, _ in chars)
    assert f"{path}:{where[0][0]}:{where[0][1]}" in human.stderr


def test_more_than_twenty_are_counted_not_listed(tmp_path):
    text = LAB + "".join(f"# comment {i}\u202e\n" for i in range(1000))
    path = write(tmp_path, text)
    r = cli("validate", "--format", "json", str(path))
    findings = json.loads(r.stdout)["findings"]
    assert len(findings) == 21
    assert findings[-1]["message"] == "... and 980 more characters a reviewer cannot see, the first here"
    first_extra = len(LAB.split("\n"))
    assert (findings[0]["location"]["line"], findings[-1]["location"]["line"]) == (first_extra, first_extra + 20)


def test_printable_text_tabs_and_line_ends_are_read_as_before(tmp_path):
    text = LAB.replace("description: Two HGX", "# Zürich\u00a0東京 🚀\tnote\ndescription: Zürich 東京 🚀 Two HGX", 1)
    path = write(tmp_path, text)
    r = cli("validate", str(path))
    assert r.returncode == 0, r.stderr


def test_every_line_break_control_and_format_character_of_unicode_is_refused():
    """Every character this Python's Unicode database calls a control (Cc), format (Cf), line (Zl) or paragraph
    (Zp) separator, except tab and LF (and CR in CRLF), is refused inside a comment."""
    from clusterctl.hidden_chars import find_hidden

    kept = {"\t", "\n", "\r"}
    chars = [chr(cp) for cp in range(0x110000)
             if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zl", "Zp") and chr(cp) not in kept]
    assert len(chars) > 200
    text = "".join(f"# {c}\n" for c in chars)
    found = find_hidden(text, limit=len(chars))
    assert [(h.line, h.col) for h in found] == [(i + 1, 3) for i in range(len(chars))]
    assert find_hidden("a: 1\r\n# x\r\n") == [] and [(h.line, h.col) for h in find_hidden("a: 1\r\r\nb")] == [(1, 5)]


# --- every reader of user YAML/JSON ---------------------------------------------------------------------------

def test_a_blueprint_catalog_section_is_read_the_same_way(tmp_path):
    text = LAB + ("catalog:\n  accelerators:\n    # a test part\u2028    x-gpu: {generation: hopper, "
                  "bf16_dense_tflops: 1, hbm_gb: 1, hbm_tb_per_s: 1, tdp_w: 1}\n")
    path = write(tmp_path, text)
    r = cli("catalog", "accelerators", "--blueprint", str(path))
    assert r.returncode == 2, r.stdout
    line = len(LAB.split("\n")) + 2
    assert f"{path}:{line}:18" in r.stderr and "U+2028 LINE SEPARATOR" in r.stderr


def test_pulumi_outputs_with_a_hidden_character_are_refused_at_its_place(tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text('{\n  "nodes": {},\n  "bucket_name": "data\u202e-x"\n}\n', encoding="utf-8")
    r = cli("inventory", "blueprints/aws-p5.yaml", "--from-pulumi", str(outputs), "-o", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert f"{outputs}:3:23: U+202E RIGHT-TO-LEFT OVERRIDE" in r.stderr
    assert "\u202e" not in r.stderr


# --- values: a double-quoted escape makes the character; no kind accepts it ---------------------------------------

ESCAPED = ["\x1b[2J", "\u202e", "\u2028", "\x85", "\u200b", "\ufeff", "\r", "\x00", "\x9b", "\u2066", "\U000e0041"]


@pytest.mark.parametrize("kind", ALL_KINDS, ids=[k.name for k in ALL_KINDS])
def test_no_kind_accepts_a_hidden_character_in_a_value(kind):
    for char in ESCAPED:
        value = kind.example[:1] + char + kind.example[1:]
        assert kind.explain(value) is not None, (kind.name, char)


def test_a_double_quoted_escape_in_free_text_is_refused_at_the_value(tmp_path):
    old = next(line for line in LAB.split("\n") if line.startswith("description: "))
    path = write(tmp_path, LAB.replace(old, 'description: "Two \\u202e HGX\\e[2J"', 1))
    assert "\\u202e" in path.read_text()  # the file itself is plain ASCII there
    with pytest.raises(BlueprintError):
        load_blueprint_text(path.read_text())
    r = cli("validate", str(path))
    assert r.returncode == 2
    assert f"{path}:4:14" in r.stderr
    assert ("description is 'Two \\u202e HGX\\x1b[2J' (text): free text may not contain the control character U+202E "
            "(right-to-left override)") in r.stderr
