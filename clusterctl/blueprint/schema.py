"""JSON Schema of the blueprint, for editors (yaml-language-server) and for checking shipped files."""

from __future__ import annotations

from clusterctl import __version__
from clusterctl.blueprint.model import Blueprint


def blueprint_schema() -> dict:
    schema = Blueprint.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://clusterctl.dev/schema/blueprint-{__version__}.json"
    schema["title"] = "clusterctl blueprint"
    return schema
