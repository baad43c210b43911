"""JSON that is JSON: no ``Infinity`` or ``NaN`` tokens, which Python's json module writes by default and
which strict parsers (jq, JavaScript's JSON.parse, Go) reject.

A non-finite float that reaches an output (a figure divided by a zero the rules did not catch) is written as
``null`` - "no finite value" - and the dump itself runs with ``allow_nan=False``, so nothing non-finite can
slip through another container type either.
"""

from __future__ import annotations

import json
import math


def finite(obj: object) -> object:
    """``obj`` with every non-finite float (at any depth of dicts, lists and tuples) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: object, **kwargs) -> str:
    """``json.dumps`` of :func:`finite` ``(obj)``, strict."""
    return json.dumps(finite(obj), allow_nan=False, **kwargs)
