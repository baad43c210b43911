"""The one base model every blueprint and catalog model derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors (a typo is never a silent default); instances are frozen; no coercion
    of strings to numbers (``count: "4"`` is a mistake worth reporting, not guessing); no ``.inf`` or
    ``.nan`` in any number (they pass every ``gt``/``le`` test or none, and crash the report later)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=False,
                              use_attribute_docstrings=True, allow_inf_nan=False)


def listed_once(names: list[str], what: str = "") -> None:
    """A list field's entries may each appear once: a ValueError naming the repeated ones (after ``what``,
    e.g. "QOS ") otherwise."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{what}{', '.join(twice)} listed more than once")
