"""Blueprint files the security tests write, and the line a reviewer finds a value on."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import BLUEPRINTS

LAB = (BLUEPRINTS / "lab-2node.yaml").read_text()
"""lab-2node as shipped, as text (comments and layout kept, so lines are the reviewer's)"""


def write_blueprint(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bp.yaml"
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    """The first line (1-based) that holds ``needle`` and is not a comment."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line and not line.startswith("#"))
