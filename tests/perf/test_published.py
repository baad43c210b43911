"""Every published row against the model, generically over ``rows()`` (all families, whoever added them).

Calibration rows are fits (a constant was set from them); validation rows are the holdout. Each family's band is
its observed spread plus a stated margin; every row must sit inside its band, no band may be looser than spread
+ margin, and each model constant is moved by +-5 % to see whether the validation rows can tell
(clusterctl/perf/published/constants.py). docs/report.md carries the generated tables.
"""

from __future__ import annotations

import importlib
import re

import pytest

from clusterctl.perf.published.all_rows import families, rows
from clusterctl.perf.published.constants import (
    CONSTANTS,
    CONSTRAINED,
    DEFINITIONS,
    MODULES,
    UNCONSTRAINED,
    sensitivity,
)
from clusterctl.perf.published.rows import (
    CALIBRATION,
    ROLES,
    VALIDATION,
    TrainingRow,
    evaluate,
)
from clusterctl.perf.published.tables import markdown, spreads
from tests.helpers import REPO

ROWS = rows()
FAMILIES = families()
TAG = re.compile(r"^\[(P|Q|S|D)\] \S")
BEGIN, END = "<!-- published-rows:begin -->", "<!-- published-rows:end -->"


def _ids(items):
    return [getattr(x, "id", None) or getattr(x, "ref", None) or getattr(x, "name") for x in items]


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_row_is_inside_its_family_band(row):
    band = FAMILIES[row.family].band
    res = evaluate(row)
    assert abs(res.error) <= band, (
        f"{row.id}: model {res.predicted:,.1f} vs published {res.published:,.1f} {row.unit} "
        f"({100 * res.error:+.1f} %), band of {row.family} ±{100 * band:.1f} %")


@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_band_is_no_looser_than_observed_spread_plus_stated_margin(family):
    assert family.margin is not None and 0 < family.margin <= 0.05, f"{family.name}: state the margin (0-5 points)"
    assert family.band_reason
    spread = spreads()[family.name]
    assert spread <= family.band <= spread + family.margin + 1e-9, (
        f"{family.name}: band ±{100 * family.band:.1f} %, observed spread {100 * spread:.2f} % + margin "
        f"{100 * family.margin:.1f} points")


def test_every_family_has_rows_and_every_row_a_family():
    assert {r.family for r in ROWS} == set(FAMILIES)


def test_rows_outside_15_percent_are_explained():
    unexplained = [r.id for r in ROWS if abs(evaluate(r).error) > 0.15 and not r.explanation.strip()]
    assert not unexplained


def test_every_row_has_a_tagged_source_a_role_and_a_unique_id():
    assert len({r.id for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert TAG.match(r.source), r.id
        assert r.role in ROLES, r.id


def test_calibration_and_validation_both_present_and_a_third_held_out():
    roles = [r.role for r in ROWS]
    assert roles.count(CALIBRATION) > 0
    assert roles.count(VALIDATION) >= len(ROWS) / 3


@pytest.mark.parametrize("row", [r for r in ROWS if isinstance(r, TrainingRow)],
                         ids=[r.id for r in ROWS if isinstance(r, TrainingRow)])
def test_training_row_uses_every_gpu_and_fits_in_memory(row):
    e = row.run()
    assert e.gpus == row.gpus  # the published layout uses every GPU it names
    # a published layout ran: the memory model must predict that it fits (clusterctl/perf/memory.py)
    assert e.fits_memory, f"{row.id}: {e.memory_gb}"


@pytest.mark.parametrize("constant", CONSTANTS, ids=[c.ref for c in CONSTANTS])
def test_constant_label_matches_what_the_validation_rows_can_tell(constant):
    lower, upper = sensitivity(constant).values()
    if constant.label == CONSTRAINED:
        assert lower and upper, f"{constant.ref}: -5 % moves {lower or 'no row'} out, +5 % {upper or 'no row'}"
    else:
        assert constant.label == UNCONSTRAINED
        # at least one direction leaves every validation row inside its band
        assert not lower or not upper, f"{constant.ref} is constrained: -5 % moves {lower}, +5 % {upper}"
        line = next(ln for ln in _docs_section().splitlines() if ln.startswith(f"| {constant.ref} |"))
        assert f"| {UNCONSTRAINED} |" in line
    assert constant.why


def test_every_model_constant_is_listed():
    listed = {(c.module, c.name, c.key) for c in CONSTANTS}
    for module in MODULES:
        mod = importlib.import_module(module)
        source = (REPO / (module.replace(".", "/") + ".py")).read_text()
        for name in re.findall(r"^([A-Z][A-Z0-9_]*)\s*(?::[^=]+)?=", source, flags=re.M):
            value = getattr(mod, name)
            if (module, name) in DEFINITIONS or isinstance(value, (str, tuple)):
                continue
            keys = list(value) if isinstance(value, dict) else [None]
            for key in keys:
                assert (module, name, key) in listed, f"{module}.{name}{'' if key is None else [key]} not listed"


def _docs_section() -> str:
    text = (REPO / "docs" / "report.md").read_text()
    assert BEGIN in text and END in text
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def test_docs_tables_are_generated_from_the_rows():
    assert _docs_section() == "\n" + markdown(), "run: python -m clusterctl.perf.published, paste between markers"
