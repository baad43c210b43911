"""The validate pipeline as a library call: load -> expand -> rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterctl.blueprint.load import LoadedBlueprint
from clusterctl.catalog import Catalog
from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import ClusterPlan, expand
from clusterctl.errors import BlueprintError
from clusterctl.rules import RunResult, all_rules, run_rules
from clusterctl.rules.suppression import unsuppressible_entries


@dataclass(frozen=True)
class Validation:
    loaded: LoadedBlueprint
    plan: ClusterPlan
    result: RunResult


def validate_loaded(loaded: LoadedBlueprint, suppress: dict[str, str] | None = None,
                    catalog: Catalog | None = None) -> Validation:
    """Raises :class:`clusterctl.errors.BlueprintError` when the blueprint cannot be expanded, or when its
    ``validation.suppress`` names a rule that cannot be suppressed."""
    refused = unsuppressible_entries(loaded.blueprint.validation.suppress, all_rules())
    if refused:
        raise BlueprintError(loaded.source, refused)
    plan = expand(loaded, catalog)
    return Validation(loaded, plan, run_rules(plan, suppress))


def validate_file(path: str | Path, suppress: dict[str, str] | None = None) -> Validation:
    return validate_loaded(load_blueprint(path), suppress)
