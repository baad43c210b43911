"""Pulumi.yaml is YAML every reader accepts, whatever free text the blueprint's ``description`` holds.

It used to write the description with ``json.dumps``: a character beyond U+FFFF became a surrogate pair
(``\\ud83d\\ude80``), which libyaml refuses ("invalid Unicode character escape code") and PyYAML's
pure-Python loader turns into two lone surrogates.
"""

from __future__ import annotations

import yaml

from tests.helpers import REPO, cli, shipped, to_yaml

DESCRIPTION = ("Launch \U0001F680 cluster: caf\u00e9 \U0001D538 \u4e2d\u6587 "
               "\"quoted\" \\back {{ x }} # not a comment")


def _render(tmp_path, description: str):
    data = shipped("lab-cloud")
    data["description"] = description
    bp = tmp_path / "cloud.yaml"
    bp.write_text(to_yaml(data))
    out = tmp_path / "out"
    r = cli("render", str(bp), "-o", str(out))
    assert r.returncode == 0, r.stderr
    return (out / "pulumi" / "Pulumi.yaml").read_text(encoding="utf-8")


def test_a_description_beyond_the_basic_plane_renders_a_pulumi_yaml_libyaml_reads(tmp_path):
    text = _render(tmp_path, DESCRIPTION)
    for loader in (yaml.CSafeLoader, yaml.SafeLoader):
        assert yaml.load(text, Loader=loader)["description"] == DESCRIPTION  # noqa: S506 - safe loaders
    assert text.isascii()  # every character outside printable ASCII is an escape a reviewer sees
    assert ('description: "Launch \\U0001F680 cluster: caf\\xE9 \\U0001D538 \\u4E2D\\u6587 '
            '\\"quoted\\" \\\\back {{ x }} # not a comment"\n') in text


def test_the_shipped_cloud_blueprints_keep_their_pulumi_yaml(tmp_path):
    """The ASCII descriptions of the shipped blueprints are written as before (the golden file)."""
    text = _render(tmp_path, shipped("lab-cloud")["description"])
    assert text == (REPO / "tests" / "golden" / "lab-cloud" / "pulumi" / "Pulumi.yaml").read_text()
