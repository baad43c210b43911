"""Issue 13 "Also fix": the report shows validation findings, states no figure without a network path,
counts data-loading bytes per token as Megatron-LM stores token ids, and lists model presets whole."""

from __future__ import annotations

from clusterctl.report.workload import presets
from tests.helpers import cli


def test_list_models_needs_no_blueprint_and_prints_whole_sources():
    r = cli("report", "--list-models")
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    text = " ".join(words)
    for name, entry in presets().items():
        assert name in words
        # every source appears whole: the words of the output, joined, contain the source's words joined
        assert " ".join(entry["source"].split()) in text, name
    assert all(len(line) <= 100 for line in r.stdout.splitlines())


def test_report_without_blueprint_is_misuse():
    r = cli("report")
    assert r.returncode == 2 and "BLUEPRINT" in r.stderr and "--list-models" in r.stderr
