"""JSON Schema of the blueprint, for editors (yaml-language-server) and for checking shipped files."""

from __future__ import annotations

from clusterctl import __version__
from clusterctl.blueprint.model import Blueprint


def _key_patterns_as_property_names(node: object) -> None:
    """Pydantic writes a mapping with constrained keys as ``patternProperties``, which lets keys that do
    not match through unchecked; rewrite it as ``propertyNames`` (every key must match) plus
    ``additionalProperties`` (the value schema), in place, everywhere in the schema."""
    if isinstance(node, list):
        for item in node:
            _key_patterns_as_property_names(item)
        return
    if not isinstance(node, dict):
        return
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
        (pattern, value), = patterns.items()
        del node["patternProperties"]
        node["propertyNames"] = {**node.get("propertyNames", {}), "pattern": pattern}
        node["additionalProperties"] = value
    for child in node.values():
        _key_patterns_as_property_names(child)


def blueprint_schema() -> dict:
    schema = Blueprint.model_json_schema(mode="validation")
    _key_patterns_as_property_names(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://clusterctl.dev/schema/blueprint-{__version__}.json"
    schema["title"] = "clusterctl blueprint"
    return schema
