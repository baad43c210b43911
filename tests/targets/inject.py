"""Put a string into a loaded blueprint behind the model's back, to test the targets' own escaping.

The model refuses most payloads at load (typed strings); the targets must still never turn a string that
reaches them into syntax. ``inject(loaded, ("storage", 0, "mount"), "$(id)")`` returns a copy of the
blueprint with that one value replaced, without validation (pydantic ``model_copy``).
"""

from __future__ import annotations

import dataclasses

from pydantic import BaseModel

from clusterctl.blueprint.load import LoadedBlueprint, load_blueprint
from clusterctl.plan import expand
from tests.helpers import BLUEPRINTS


def _replace(obj: object, path: tuple, value: object) -> object:
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(obj, BaseModel):
        return obj.model_copy(update={key: _replace(getattr(obj, key), rest, value)})
    if isinstance(obj, dict):
        return {**obj, key: _replace(obj[key], rest, value)}
    if isinstance(obj, (list, tuple)):
        items = list(obj)
        items[key] = _replace(items[key], rest, value)
        return type(obj)(items)
    raise TypeError(f"cannot descend into {type(obj).__name__} at {key!r}")


def inject(loaded: LoadedBlueprint, path: tuple, value: object) -> LoadedBlueprint:
    return dataclasses.replace(loaded, blueprint=_replace(loaded.blueprint, path, value))


def lab_plan_with(path: tuple, value: object, name: str = "lab-2node"):
    return expand(inject(load_blueprint(BLUEPRINTS / f"{name}.yaml"), path, value))
