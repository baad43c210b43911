"""Numbers on the command line: one check for every numeric option, before any file is read.

``typer`` turns ``--params-b nan``, ``inf`` or ``-1`` into floats without complaint; estimates built on them
print nonsense or crash. Every numeric option therefore takes a callback from :func:`bounded` (bounds written
here) or :func:`bounded_like` (the bounds of the blueprint field the option overrides, so the two cannot
drift apart). A value that is not finite or is out of range is a usage error naming the option: exit 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import typer
from pydantic import BaseModel


def _describe(low: float, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    return f"a finite number in {left}{_num(low)}, {_num(high) if high is not None else '∞'}{right}"


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def bounded(low: float, high: float | None = None, *, low_open: bool = False,
            high_open: bool = False) -> Callable:
    """A typer callback refusing None-less values that are nan, infinite, or outside ``low``..``high``
    (``low_open``: ``low`` itself is refused, e.g. a parameter count of 0)."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value):
        if value is None:
            return value
        ok = math.isfinite(value) and (value > low if low_open else value >= low)
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            raise typer.BadParameter(f"must be {_describe(low, high, low_open, high_open)}, got {value}")
        return value

    return check


def bounded_like(model: type[BaseModel], field: str) -> Callable:
    """:func:`bounded` with the ``gt``/``ge``/``lt``/``le`` bounds of ``model.field``."""
    low, high, low_open, high_open = -math.inf, None, False, False
    for m in model.model_fields[field].metadata:
        if getattr(m, "gt", None) is not None:
            low, low_open = m.gt, True
        if getattr(m, "ge", None) is not None:
            low, low_open = m.ge, False
        if getattr(m, "lt", None) is not None:
            high, high_open = m.lt, True
        if getattr(m, "le", None) is not None:
            high, high_open = m.le, False
    if not math.isfinite(low):
        raise ValueError(f"{model.__name__}.{field} has no lower bound: a command-line option needs one")
    return bounded(low, high, low_open=low_open, high_open=high_open)
