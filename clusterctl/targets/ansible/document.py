"""How the target's YAML files are laid out: the header and comments, ``---``, then sections, each a complete
top-level mapping written by the one YAML emitter (clusterctl.yamlout), so no value is ever pasted into text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from clusterctl.plan.model import ClusterPlan
from clusterctl.targets.common import header
from clusterctl.yamlout import PureDumper, body, comment_lines

Section = tuple[Sequence[str], dict]
"""(comment lines, top-level keys) of one part of a YAML file"""


def yaml_file(plan: ClusterPlan, comments: Sequence[str], sections: Iterable[Section]) -> str:
    """Header and comments, ``---``, then each section's comment lines and keys. Every section is a complete
    top-level block mapping written by the emitter, so joining them is one mapping with the comments kept
    where an operator reads them; no value is ever pasted into text."""
    parts = [comment_lines([head_line(plan), *comments]), "---\n"]
    for notes, data in sections:
        if data:
            parts += [comment_lines(notes), body(data, dumper=PureDumper)]
    return "".join(parts)


def head_line(plan: ClusterPlan) -> str:
    return header(plan).removeprefix("# ").rstrip("\n")
