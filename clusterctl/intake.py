"""Blueprint file -> :class:`LoadedBlueprint` for the command line, with the number of load problems bounded.

Pydantic reports every unknown key of a document, and turning each error into a sentence looks for a "did you
mean" among the allowed keys: 100,000 unknown keys took minutes. Only the first ``MAX_PROBLEMS_PER_KIND`` errors
of each pydantic error type (unknown key, wrong type, missing key, ...) become problems; the rest of a kind is
one summary problem at the first one left out, with the count. So text, JSON and SARIF all stay bounded, and a
problem of another kind is never hidden behind thousands of the same one.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from clusterctl.blueprint.load import LoadedBlueprint, parse_blueprint, problems_from_validation
from clusterctl.blueprint.model import Blueprint
from clusterctl.errors import BlueprintError, Problem
from clusterctl.source import SourceMap, load_yaml_file

MAX_PROBLEMS_PER_KIND = 20

_KIND_WORDS = {"extra_forbidden": "unknown key", "missing": "missing key"}


class _Errors:
    """A subset of a ValidationError's errors, shaped for ``problems_from_validation``."""

    def __init__(self, errors: list[dict]):
        self._errors = errors

    def errors(self, include_url: bool = False) -> list[dict]:
        return self._errors


def bounded_problems(exc: ValidationError, per_kind: int = MAX_PROBLEMS_PER_KIND) -> list[Problem]:
    """The problems of ``exc``, at most ``per_kind`` of each error type plus one summary per type cut."""
    kept: list[dict] = []
    left_out: dict[str, list] = {}  # type -> [first error left out, count]
    seen: dict[str, int] = {}
    for err in exc.errors(include_url=False):
        kind = err["type"]
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= per_kind:
            kept.append(err)
        elif kind in left_out:
            left_out[kind][1] += 1
        else:
            left_out[kind] = [err, 1]
    problems = problems_from_validation(_Errors(kept))  # type: ignore[arg-type]
    for kind, (first, count) in left_out.items():
        (where,) = problems_from_validation(_Errors([first]))  # type: ignore[arg-type]
        words = _KIND_WORDS.get(kind, kind.replace("_", " "))
        problems.append(Problem(where.path, f"... and {count:,} more problems of this kind ({words}), "
                                            f"the first here", hint="fix the ones above first; they are often "
                                            "one mistake repeated", code=where.code, key=where.key))
    return problems


def parse_bounded(data: object, source: SourceMap) -> LoadedBlueprint:
    """:func:`clusterctl.blueprint.load.parse_blueprint` with :func:`bounded_problems`."""
    if not isinstance(data, dict):
        return parse_blueprint(data, source)  # raises its own "a blueprint is a mapping" problem
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as exc:
        raise BlueprintError(source, bounded_problems(exc)) from None
    return LoadedBlueprint(bp, source)


def load_blueprint(path: str | Path) -> LoadedBlueprint:
    """Read (within the input limits), parse and validate the shape of a blueprint file."""
    data, source = load_yaml_file(path)
    return parse_bounded(data, source)
