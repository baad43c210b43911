"""Issue 24: every numeric command-line option refuses nan, inf, negative (and zero where it means nothing)
with exit 2 and a message naming the option. Through the real command line, one case per option and value."""

from __future__ import annotations

import re

import pytest

from tests.helpers import cli

LAB = "blueprints/lab-2node.yaml"

REPORT_FLOATS = ["--params-b", "--mfu", "--restart-min", "--checkpoint-interval-min", "--pue"]
"""float options of ``report``: all of them must be finite and positive (0 minutes, 0 parameters, MFU 0 and
PUE 1 or less are no figures to estimate with)"""
REPORT_INTS = ["--layers", "--hidden", "--heads", "--kv-heads", "--ffn-hidden", "--vocab", "--seq-len",
               "--global-batch", "--tp", "--pp", "--dp", "--cp", "--ep", "--micro-batch", "--virtual-stages",
               "--gpus", "--ranks"]


def _message(r) -> str:
    """stderr without the frame typer draws around a usage error, its lines joined."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", r.stderr).split())


def _refused(r, option: str, value: str) -> None:
    assert r.returncode == 2, (option, value, r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert f"Invalid value for '{option}'" in _message(r), r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
@pytest.mark.parametrize("option", REPORT_FLOATS)
def test_report_float_options_refuse_non_finite_negative_and_zero(option, value):
    r = cli("report", LAB, "--format", "json", f"{option}={value}")
    _refused(r, option, value)
    assert r.stdout == ""


@pytest.mark.parametrize("value", ["-1", "0"])
@pytest.mark.parametrize("option", REPORT_INTS)
def test_report_integer_options_refuse_negative_and_zero(option, value):
    _refused(cli("report", LAB, "--format", "json", f"{option}={value}"), option, value)


def test_the_reproducers_name_the_option_and_the_range():
    assert "Invalid value for '--params-b': must be a finite number in (0, 1,000,000], got nan" in \
        _message(cli("report", LAB, "--params-b", "nan"))
    assert "Invalid value for '--params-b': must be a finite number in (0, 1,000,000], got inf" in \
        _message(cli("report", LAB, "--params-b", "inf"))
    assert "Invalid value for '--params-b': must be a finite number in (0, 1,000,000], got -1.0" in \
        _message(cli("report", LAB, "--params-b", "-1"))
    assert "Invalid value for '--ranks': must be a finite number in [2, 100,000,000], got 1" in \
        _message(cli("report", LAB, "--ranks", "1"))


def test_report_accepts_numbers_in_range():
    r = cli("report", LAB, "--format", "json", "--params-b", "8", "--mfu", "0.4", "--pue", "1.2", "--ranks", "16",
            "--checkpoint-interval-min", "30", "--restart-min", "10")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args", [
    ("rehearse", LAB, "--nodes-per-group", "0"),
    ("rehearse", LAB, "--nodes-per-group", "-1"),
    ("rehearse", LAB, "--nodes-per-group", "nan"),
    ("init", "--gpus", "-8", "-o", "never-written.yaml"),
    ("init", "--gpus", "0", "-o", "never-written.yaml"),
    ("init", "--gpus", "nan", "-o", "never-written.yaml"),
    ("--max-input-size", "nan", "validate", LAB),
    ("--max-input-size", "-1", "validate", LAB),
    ("--max-input-size", "inf", "validate", LAB),
])
def test_the_other_numeric_options_refuse_bad_numbers(args, tmp_path):
    r = cli(*args, cwd=tmp_path) if args[0] == "init" else cli(*args)
    assert r.returncode == 2, (args, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert not (tmp_path / "never-written.yaml").exists()
