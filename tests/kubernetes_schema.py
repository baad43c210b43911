"""Validate one Kubernetes object as an API server would on create, without an API server.

``validate_object(obj) -> list[str]``: the problems of one object (empty: valid). Three checks, each what the
server does (sources cited at each):

- **custom resources** against the ``openAPIV3Schema`` of the served version of their CRD, vendored unchanged in
  ``tests/data/kubernetes/crds/`` (``SOURCES.md``: repository, path, release tag, commit), with ``jsonschema``
  (Draft 7, the closest draft to the OpenAPI v3.0 subset of structural schemas) after the Kubernetes extensions
  are translated (:func:`to_jsonschema`);
- **core kinds** (``v1`` Node, ConfigMap, Namespace, ...) against Kubernetes' own OpenAPI schemas, as bundled by
  ``kubernetes-validate`` (PyPI), strict (unknown fields are errors), for :data:`KUBERNETES_VERSION`;
- **metadata** as ObjectMeta, by the rules of k8s.io/apimachinery (tag v0.34.0, commit
  b72d93d174332f952a8d431419fece5e6f044bcb, the library of Kubernetes 1.34), :func:`metadata_problems`.

An unknown apiVersion/kind, or a version the CRD does not serve, is a problem, never a pass. Unknown fields are
problems too: the server prunes them from a custom resource silently (or refuses them under
``kubectl --validate=strict``, kubectl's default since 1.27), so an emitted field the schema lacks never reaches the
operator. A custom resource the schema accepts then goes through the CRD's create-time CEL rules
(``x-kubernetes-validations``) and the static part of its project's validating webhook
(tests/kubernetes_admission.py), in the server's order. Defaulting, the webhooks' look at the cluster and update
rules are not done here (docs/kubernetes.md, "What cannot be checked here").
"""

from __future__ import annotations

import copy
import functools
import re
from datetime import datetime
from pathlib import Path

import jsonschema
import yaml

from tests import kubernetes_admission

CRD_DIR = Path(__file__).resolve().parent / "data" / "kubernetes" / "crds"
"""the newest release's CRD of every kind (SOURCES.md there)"""
RELEASE_CRD_DIR = CRD_DIR.parent / "crds-at-release"
"""``<project>/<release>/``: CRDs at the operator releases the shipped blueprints name (same SOURCES.md)"""

KUBERNETES_VERSION = "1.34"
"""the Kubernetes release core kinds are validated for: the first with Dynamic Resource Allocation GA
(resource.k8s.io/v1), which the DRA driver's ComputeDomains rely on"""

# k8s.io/apimachinery pkg/util/validation/validation.go (v0.34.0): qualifiedNameFmt, labelValueFmt,
# dns1123LabelFmt, dns1123SubdomainFmt and their maximum lengths
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_LABEL_MAX = 63
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_SUBDOMAIN_MAX = 253
TOTAL_ANNOTATION_SIZE_MAX = 256 * (1 << 10)
"""k8s.io/apimachinery pkg/api/validation/objectmeta.go TotalAnnotationSizeLimitB (v0.34.0)"""

OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences"})
"""the ObjectMeta fields a manifest may set (k8s.io/apimachinery pkg/apis/meta/v1/types.go ObjectMeta; the others
— uid, resourceVersion, creationTimestamp, ... — are the server's)"""

CORE_KINDS = {
    # (apiVersion, kind): (namespaced, name rule). Name rules: k8s.io/kubernetes pkg/apis/core/validation
    # (v1.34.0): ValidateNodeName and ValidateConfigMapName are NameIsDNSSubdomain, ValidateNamespaceName is
    # NameIsDNSLabel, Secret's is NameIsDNSSubdomain.
    ("v1", "Node"): (False, "subdomain"),
    ("v1", "Namespace"): (False, "label"),
    ("v1", "ConfigMap"): (True, "subdomain"),
    ("v1", "Secret"): (True, "subdomain"),
}
"""the core kinds the kubernetes target may emit; another core kind must be added here (scope and name rule)"""


# --- metadata (ObjectMeta) ---------------------------------------------------------------------------------------

def dns1123_label_problems(value: str) -> list[str]:
    """IsDNS1123Label (apimachinery pkg/util/validation/validation.go)."""
    out = [f"longer than {DNS1123_LABEL_MAX} characters"] if len(value) > DNS1123_LABEL_MAX else []
    if not _DNS1123_LABEL.fullmatch(value):
        out.append("not a lowercase RFC 1123 label (lower-case alphanumerics and '-', alphanumeric at both ends)")
    return out


def dns1123_subdomain_problems(value: str) -> list[str]:
    """IsDNS1123Subdomain (apimachinery pkg/util/validation/validation.go)."""
    out = [f"longer than {DNS1123_SUBDOMAIN_MAX} characters"] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        out.append("not a lowercase RFC 1123 subdomain (lower-case alphanumerics, '-' and '.', "
                   "alphanumeric at both ends)")
    return out


def qualified_name_problems(key: str) -> list[str]:
    """IsQualifiedName (apimachinery pkg/util/validation/validation.go): ``[prefix/]name``, the prefix a DNS-1123
    subdomain, the name at most 63 characters of ``qualifiedNameFmt``."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["more than one '/'"]
    out = []
    if len(parts) == 2:
        prefix = parts[0]
        out += ["empty prefix part"] if not prefix else [f"prefix part {p}"
                                                         for p in dns1123_subdomain_problems(prefix)]
    name = parts[-1]
    if not name:
        return out + ["empty name part"]
    if len(name) > QUALIFIED_NAME_MAX:
        out.append(f"name part longer than {QUALIFIED_NAME_MAX} characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        out.append("name part not alphanumerics, '-', '_' or '.' with alphanumerics at both ends")
    return out


def label_value_problems(value: object) -> list[str]:
    """IsValidLabelValue (apimachinery pkg/util/validation/validation.go): empty, or ≤63 of qualifiedNameFmt."""
    if not isinstance(value, str):
        return [f"not a string ({type(value).__name__})"]
    out = [f"longer than {LABEL_VALUE_MAX} characters"] if len(value) > LABEL_VALUE_MAX else []
    if value and not _QUALIFIED_NAME.fullmatch(value):
        out.append("not empty nor alphanumerics, '-', '_' or '.' with alphanumerics at both ends")
    return out


def _string_map(meta: dict, field: str) -> tuple[dict, list[str]]:
    value = meta.get(field, {})
    if not isinstance(value, dict):
        return {}, [f"metadata.{field}: not a map"]
    return value, []


def _labels_problems(meta: dict) -> list[str]:
    """ValidateLabels (apimachinery pkg/apis/meta/v1/validation/validation.go): keys qualified names, values label
    values."""
    labels, out = _string_map(meta, "labels")
    for key, value in labels.items():
        out += [f"metadata.labels[{key!r}]: key {p}" for p in qualified_name_problems(str(key))]
        out += [f"metadata.labels[{key!r}]: value {value!r} {p}" for p in label_value_problems(value)]
    return out


def _annotations_problems(meta: dict) -> list[str]:
    """ValidateAnnotations (apimachinery pkg/api/validation/objectmeta.go): keys qualified names (case-insensitive),
    values strings, keys and values together at most 256 KiB."""
    annotations, out = _string_map(meta, "annotations")
    for key, value in annotations.items():
        out += [f"metadata.annotations[{key!r}]: key {p}" for p in qualified_name_problems(str(key).lower())]
        if not isinstance(value, str):
            out.append(f"metadata.annotations[{key!r}]: value not a string ({type(value).__name__})")
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_MAX:
        out.append(f"metadata.annotations: {size} bytes, more than {TOTAL_ANNOTATION_SIZE_MAX}")
    return out


def metadata_problems(obj: dict, namespaced: bool, name_rule: str) -> list[str]:
    """ValidateObjectMetaAccessor (apimachinery pkg/api/validation/objectmeta.go): a name by the kind's rule
    (custom resources: NameIsDNSSubdomain, apiextensions-apiserver pkg/registry/customresource/validator.go), a
    namespace (a DNS-1123 label) exactly when the kind is namespaced, labels, annotations. A manifest clusterctl
    writes must name its object and, when namespaced, its namespace: applied unchanged, it lands where planned."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ["metadata: missing or not a map"]
    out = [f"metadata.{k}: not an ObjectMeta field a manifest sets" for k in sorted(set(meta) - OBJECT_META_FIELDS)]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        out.append("metadata.name: missing")
    else:
        check = dns1123_label_problems if name_rule == "label" else dns1123_subdomain_problems
        out += [f"metadata.name: {name!r} {p}" for p in check(name)]
    namespace = meta.get("namespace")
    if namespaced and not namespace:
        out.append("metadata.namespace: missing (the kind is namespaced)")
    elif not namespaced and namespace is not None:
        out.append("metadata.namespace: not allowed on a cluster-scoped kind")
    elif namespace is not None:
        out += [f"metadata.namespace: {namespace!r} {p}" for p in dns1123_label_problems(str(namespace))]
    return out + _labels_problems(meta) + _annotations_problems(meta)


# --- CRD schemas ---------------------------------------------------------------------------------------------------

_OPEN_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
"""ObjectMeta in a schema: checked by :func:`metadata_problems`, not by the CRD (which says only ``type: object``)"""


def to_jsonschema(node: object) -> object:
    """A structural schema (apiextensions.k8s.io/v1 JSONSchemaProps) as JSON Schema Draft 7, as the API server
    reads it (k8s.io/apiextensions-apiserver pkg/apiserver/schema):

    - ``nullable: true``: null is valid too;
    - ``x-kubernetes-int-or-string``: an integer or a string (the ``anyOf`` controller-gen writes beside it, added
      where missing);
    - ``x-kubernetes-preserve-unknown-fields``: fields the schema does not name are kept; everywhere else an object
      takes only its ``properties`` (or its ``additionalProperties`` map): the server prunes other fields;
    - ``x-kubernetes-embedded-resource``: an object with ``apiVersion``, ``kind`` and ``metadata`` besides its own
      properties;
    - ``x-kubernetes-list-type: set``: unique items; ``map``: unique ``x-kubernetes-list-map-keys``
      (the ``k8sListMapKeys`` keyword of :data:`StructuralValidator`).
    """
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            out[key] = to_jsonschema(node[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in node:
            out[key] = [to_jsonschema(n) for n in node[key]]
    if "properties" in node:
        out["properties"] = {k: to_jsonschema(v) for k, v in node["properties"].items()}
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("x-kubernetes-embedded-resource"):
        out.setdefault("properties", {}).update(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _OPEN_OBJECT})
    closed = (node.get("type") == "object" and "additionalProperties" not in node
              and not node.get("x-kubernetes-preserve-unknown-fields"))
    if closed:
        out["additionalProperties"] = False
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if node.get("x-kubernetes-list-type") == "map" and node.get("x-kubernetes-list-map-keys"):
        out["k8sListMapKeys"] = node["x-kubernetes-list-map-keys"]
    if node.get("nullable") and "type" in node:
        out["type"] = [node["type"], "null"]
    return out


def _list_map_keys(validator, keys, instance, schema):
    """``x-kubernetes-list-type: map``: no two items with the same values of the key fields."""
    if not isinstance(instance, list):
        return
    seen = set()
    for item in instance:
        if isinstance(item, dict):
            key = tuple(repr(item.get(k)) for k in keys)
            if key in seen:
                yield jsonschema.ValidationError(f"duplicate entry for list-map keys {keys}: {key}")
            seen.add(key)


_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("int32")
def _int32(value) -> bool:
    return not isinstance(value, int) or -(1 << 31) <= value < (1 << 31)


@_FORMATS.checks("int64")
def _int64(value) -> bool:
    return not isinstance(value, int) or -(1 << 63) <= value < (1 << 63)


@_FORMATS.checks("date-time", raises=ValueError)
def _date_time(value) -> bool:
    return not isinstance(value, str) or bool(datetime.fromisoformat(value))


StructuralValidator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"k8sListMapKeys": _list_map_keys})
"""JSON Schema Draft 7 and the ``k8sListMapKeys`` keyword: the validator of a schema :func:`to_jsonschema` wrote"""


@functools.cache
def crd_index(directory: Path = CRD_DIR) -> dict[tuple[str, str], dict]:
    """(group, kind) -> {"file", "scope", "versions": {name: (served, openAPIV3Schema)}} of every CRD vendored
    under ``directory``."""
    index = {}
    for path in sorted(directory.rglob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        spec = crd["spec"]
        index[(spec["group"], spec["names"]["kind"])] = {
            "file": str(path.relative_to(CRD_DIR.parent)), "scope": spec["scope"],
            "versions": {v["name"]: (v["served"], v["schema"]["openAPIV3Schema"]) for v in spec["versions"]}}
    return index


def release_crds(project: str, release: str) -> Path:
    """The directory of a project's CRDs at an operator release a blueprint names (``gpu-operator``, ``25.3.4``):
    an object written for that release is validated against them (:func:`validate_object` ``releases``)."""
    directory = RELEASE_CRD_DIR / project / release
    if not directory.is_dir():
        raise LookupError(f"no CRDs of {project} {release} vendored under {RELEASE_CRD_DIR}: add them (SOURCES.md)")
    return directory


def _find_crd(group: str, kind: str, releases: tuple[Path, ...]) -> dict | None:
    for directory in (*releases, CRD_DIR):
        if (group, kind) in crd_index(directory):
            return crd_index(directory)[(group, kind)]
    return None


_VALIDATORS: dict[tuple[str, str], StructuralValidator] = {}
"""(CRD file, version) -> its validator, made once"""


def _crd_validator(crd: dict, version: str) -> StructuralValidator:
    key = (crd["file"], version)
    if key not in _VALIDATORS:
        schema = copy.deepcopy(crd["versions"][version][1])
        schema.setdefault("properties", {})["metadata"] = _OPEN_OBJECT  # ObjectMeta: metadata_problems
        _VALIDATORS[key] = StructuralValidator(to_jsonschema(schema), format_checker=_FORMATS)
    return _VALIDATORS[key]


def _path(error: jsonschema.ValidationError) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(object)"


def schema_problems(validator, obj: dict) -> list[str]:
    """Every schema violation of ``obj``, as ``path: message``, in a stable order."""
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{_path(e)}: {e.message}" for e in errors]


def with_defaults(schema: dict, value: object) -> object:
    """``value`` with the schema's ``default`` values filled in where a field is missing (or null and not
    nullable) inside an object that is present, recursively: structural defaulting, which the API server applies
    before it validates (k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting/algorithm.go), so a
    required field with a default may be left out."""
    if isinstance(value, dict):
        out = dict(value)
        for key, sub in (schema.get("properties") or {}).items():
            if "default" in sub and (key not in out or (out[key] is None and not sub.get("nullable"))):
                out[key] = copy.deepcopy(sub["default"])
            if key in out:
                out[key] = with_defaults(sub, out[key])
        extra, named = schema.get("additionalProperties"), schema.get("properties") or {}
        if isinstance(extra, dict):
            out.update({k: with_defaults(extra, v) for k, v in out.items() if k not in named})
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(schema["items"], item) for item in value]
    return value


def _crd_problems(obj: dict, crd: dict, group: str, version: str, kind: str) -> list[str]:
    served, _ = crd["versions"].get(version, (False, None))
    if not served:
        return [f"apiVersion: {group}/{version} is not a served version of {kind} ({crd['file']} serves "
                f"{', '.join(v for v, (s, _) in crd['versions'].items() if s)})"]
    schema = crd["versions"][version][1]
    defaulted = with_defaults(schema, obj)
    problems = schema_problems(_crd_validator(crd, version), defaulted)
    if not problems:  # as the server: CEL rules on a well-typed object, then the validating webhooks
        problems = (kubernetes_admission.cel_problems(schema, defaulted)
                    or kubernetes_admission.webhook_problems(group, kind, defaulted))
    return problems + metadata_problems(obj, crd["scope"] == "Namespaced", "subdomain")


# --- core kinds ----------------------------------------------------------------------------------------------------

@functools.cache
def _core_validator(api_version: str, kind: str):
    """kubernetes-validate's strict schema of a core kind, for KUBERNETES_VERSION, as a reusable validator (its
    ``validate()`` reloads the schemas each call and stops at the first error); the file naming is its own
    (kubernetes_validate/utils.py ``validate``)."""
    import referencing
    from kubernetes_validate import utils

    version = [v for v in utils.all_versions() if utils.major_minor(v) == KUBERNETES_VERSION][-1]
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", KUBERNETES_VERSION)
    definitions = utils.schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION)
    registry = referencing.Resource.from_contents(definitions) @ (
        referencing.Resource.from_contents(schema) @ referencing.Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _core_problems(obj: dict, api_version: str, kind: str) -> list[str]:
    namespaced, name_rule = CORE_KINDS[(api_version, kind)]
    return schema_problems(_core_validator(api_version, kind), obj) + metadata_problems(obj, namespaced, name_rule)


# --- the entry point -----------------------------------------------------------------------------------------------

def object_id(obj: object) -> str:
    """``Kind/name`` of an object, for messages."""
    if not isinstance(obj, dict):
        return repr(obj)[:60]
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = str(meta.get("name", "?"))
    return f"{obj.get('kind', '?')}/{name if len(name) <= 80 else name[:77] + '...'}"


def validate_object(obj: object, releases: tuple[Path, ...] = ()) -> list[str]:
    """The problems of one object (empty: valid), each ``Kind/name: field.path: message``. ``releases``:
    directories of :func:`release_crds` whose CRDs stand before the newest ones vendored (the operator release the
    object is written for)."""
    if not isinstance(obj, dict):
        return [f"{object_id(obj)}: not a mapping"]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return [f"{object_id(obj)}: apiVersion and kind must both be strings"]
    group, _, version = api_version.rpartition("/")
    crd = _find_crd(group, kind, releases)
    if crd is not None:
        problems = _crd_problems(obj, crd, group, version, kind)
    elif (api_version, kind) in CORE_KINDS:
        problems = _core_problems(obj, api_version, kind)
    else:
        problems = [f"apiVersion/kind {api_version} {kind}: no vendored CRD and not a core kind this validator "
                    f"knows: unknown, never a pass"]
    return [f"{object_id(obj)}: {p}" for p in problems]


def validate_stream(text: str, releases: tuple[Path, ...] = ()) -> list[str]:
    """The problems of every object of a multi-document YAML stream (empty documents skipped)."""
    docs = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
    return [p for d in docs for p in validate_object(d, releases)] if docs else ["the stream holds no object"]
