"""Every string of a shipped blueprint, with every payload: refused, or the outputs keep their structure.

Hypothesis (derandomized: the same examples every run) picks a string anywhere in the loaded blueprint
(lab-2node, and aws-p5 for the Pulumi files) and appends a payload: a newline starting a Slurm, NCCL or
/etc/hosts line, ``#``, ``=``, quotes, ``$(...)``, backticks, ``{{ }}``. The value is put into the loaded
blueprint behind the model's back (tests/targets/inject.py), so this tests the targets whatever the model
accepts. Allowed outcomes: the plan refuses it (BlueprintError, located), a target refuses it
(RenderError, exit 2), or every output reads back with the same structure as the unmodified render: the
Key=Value lines with the same keys (Slurm, NCCL with NCCL's own reader), no YAML key, top-level Python
statement or /etc/hosts entry added (lines may drop out when a changed value no longer selects them: a
pool whose role is not ``inband`` any more), ``bash -n`` on shell files. Never another
exception (that would be exit 3). The union tags (``kind``, ``tier``) are left alone: they choose the model
class itself.
"""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from clusterctl.blueprint.load import load_blueprint
from clusterctl.errors import BlueprintError
from clusterctl.plan import expand
from clusterctl.targets import RenderError, render_targets
from tests.conftest import require_tool
from tests.helpers import BLUEPRINTS
from tests.targets.inject import inject
from tests.targets.test_escaping import PAYLOADS, _key_paths, nccl_keys, shape

BLUEPRINTS_USED = ("lab-2node", "aws-p5")
TAGS = {"kind", "tier", "role"}
"""choice fields (Literal: load accepts only the listed words), not text: a node group's role decides which plays
exist, so a payload there is a different cluster, not an escaped string"""


def string_leaves(obj: object, path: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, value) of every string in a loaded blueprint, mapping keys excepted."""
    out: list[tuple[tuple, str]] = []
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            if name not in TAGS:
                out += string_leaves(getattr(obj, name), path + (name,))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out += string_leaves(v, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += string_leaves(v, path + (i,))
    elif isinstance(obj, str):
        out.append((path, obj))
    return out


LOADED = {name: load_blueprint(BLUEPRINTS / f"{name}.yaml") for name in BLUEPRINTS_USED}
CASES = [(name, path, value) for name, lb in LOADED.items() for path, value in string_leaves(lb.blueprint)]
BASELINE = {name: {p: shape(p, t) for p, t in render_targets(expand(lb)).items()} for name, lb in LOADED.items()}


def test_the_walk_finds_the_strings_that_reach_outputs():
    paths = {path for _, path, _ in CASES}
    for expected in [("name",), ("description",), ("slurm", "partitions", 0, "max_time"), ("storage", 0, "mount"),
                     ("storage", 0, "export"), ("software", "driver"), ("cloud", "region")]:
        assert expected in paths, expected
    assert len(CASES) > 80


def _check(name: str, files: dict[str, str]) -> None:
    baseline = BASELINE[name]
    known_nccl = {k for p, v in baseline.items() if p.startswith("nccl/") and isinstance(v, list) for k in v}
    for path, text in files.items():
        got = shape(path, text)
        expected = baseline.get(path)
        if expected is None:  # a file named after the payload: it still parses, adds no NCCL variable
            if path.startswith("nccl/") and path.endswith(".conf"):
                assert set(nccl_keys(text)) <= known_nccl, path
            continue
        if path.endswith((".yml", ".yaml")):
            assert _key_paths(got) <= _key_paths(expected), path
        elif isinstance(expected, list):  # lines may drop out (a pool whose role no longer matches), never
            assert not Counter(got) - Counter(expected), path  # appear: a multiset inclusion
        else:
            assert got == expected, path
        if path.endswith(".sh"):
            assert subprocess.run([require_tool("bash"), "-n"], input=text, text=True).returncode == 0, path


@settings(derandomize=True, database=None, max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), payload=st.sampled_from(sorted(PAYLOADS.values())),
       at_start=st.booleans())
def test_every_string_with_every_payload(case, payload, at_start):
    name, path, value = case
    loaded = inject(LOADED[name], path, payload + value if at_start else value + payload)
    try:
        plan = expand(loaded)
    except BlueprintError:
        return  # refused by the plan, with a location
    try:
        files = render_targets(plan)
    except RenderError:
        return  # refused by a target: exit 2
    _check(name, files)


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_every_string_of_the_lab_with_one_payload(payload):
    """Exhaustive over the lab's strings for each payload (the property test samples)."""
    for name, path, value in CASES:
        if name != "lab-2node":
            continue
        try:
            files = render_targets(expand(inject(LOADED[name], path, value + PAYLOADS[payload])))
        except (BlueprintError, RenderError):
            continue
        _check(name, files)
