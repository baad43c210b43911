"""The admission checks beyond the OpenAPI schema that need no cluster: a CRD's CEL rules and the static part of
its project's validating webhook. tests/kubernetes_schema.py calls both for every custom resource.

- :func:`cel_problems`: the ``x-kubernetes-validations`` rules of the CRD's schema, evaluated with ``cel-python``
  (a pure-Python CEL) where the object has the field that carries them, as the API server evaluates them on
  create. Rules that compare with the stored object (``oldSelf``: immutability) apply only to updates and are
  not run.
- :func:`webhook_problems`: what a project's webhook refuses on create without looking at the cluster, for the
  kinds clusterctl writes whose webhook checks more than the schema (each function cites its source). What needs
  the cluster (a NIC present on some node, a Node's existence) is left to ``kubectl apply --dry-run=server``
  (docs/kubernetes.md, "What cannot be checked here").
"""

from __future__ import annotations

import functools
import ipaddress
import re


# --- CEL rules -----------------------------------------------------------------------------------------------------

@functools.cache
def _program(rule: str):
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(rule))


def _cel_value(value):
    import celpy

    return celpy.json_to_cel(value)


def _rule_holds(rule: str, value) -> bool | str:
    """True when the rule holds for ``self`` = value, else False, or the evaluation error as text."""
    import celpy

    try:
        result = _program(rule).evaluate({"self": _cel_value(value)})
    except celpy.CELEvalError as error:  # the API server refuses an object whose rule errs
        return str(error)
    if isinstance(result, celpy.CELEvalError):
        return str(result)
    return bool(result)


def _rules_at(schema: dict, value, path: str) -> list[str]:
    out = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            continue  # a transition rule: only on update
        held = _rule_holds(rule["rule"], value)
        if held is not True:
            why = rule.get("message") or f"failed rule: {rule['rule']}"
            out.append(f"{path or '(object)'}: {why}" + ("" if held is False else f" (evaluation error: {held})"))
    return out


def cel_problems(schema: dict, value, path: str = "") -> list[str]:
    """Every failed create-time CEL rule of ``schema`` (an openAPIV3Schema as vendored) on ``value``."""
    if not isinstance(schema, dict) or value is None:
        return []
    out = _rules_at(schema, value, path)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                out += cel_problems(sub, item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            out += cel_problems(schema["items"], item, f"{path}[{index}]")
    return out


# --- validating webhooks, the static part --------------------------------------------------------------------------

_CNI_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.\-]*")
"""containernetworking/cni pkg/utils/utils.go cniValidNameChars: a CNI network name"""


def _possible_ips(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    """nvidia-k8s-ipam v0.4.0 api/v1alpha1/helpers.go GetPossibleIPCount: a /32 (/128) 1, a point-to-point /31
    (/127) 2, else the size less network and broadcast (IPv6: less one)."""
    host_bits = network.max_prefixlen - network.prefixlen
    if host_bits <= 1:
        return host_bits + 1
    return 2 ** host_bits - (2 if network.version == 4 else 1)


def ippool_problems(obj: dict) -> list[str]:
    """nvidia-k8s-ipam v0.4.0 api/v1alpha1/ippool_validate.go ``IPPool.Validate`` (the exclusion, route and node
    selector details are not repeated here)."""
    spec, name = obj.get("spec") or {}, (obj.get("metadata") or {}).get("name", "")
    out = [] if _CNI_NAME.fullmatch(name) else [
        f"metadata.name: {name!r} invalid IP pool name, should be compatible with CNI network name"]
    try:
        network = ipaddress.ip_network(spec.get("subnet", ""), strict=False)
    except ValueError:
        network = None
        out.append(f"spec.subnet: {spec.get('subnet')!r} is invalid subnet")
    block = spec.get("perNodeBlockSize", 0)
    if block < 1:
        out.append(f"spec.perNodeBlockSize: {block} must be at least 1")
    elif network is not None and _possible_ips(network) < block:
        out.append(f"spec.perNodeBlockSize: {block} is larger then amount of IPs available in the subnet")
    gateway = spec.get("gateway", "")
    if gateway:
        try:
            address = ipaddress.ip_address(gateway)
            if network is not None and address not in network:
                out.append(f"spec.gateway: {gateway!r} is not part of the subnet")
        except ValueError:
            out.append(f"spec.gateway: {gateway!r} is invalid IP address")
    else:
        out += ["spec.defaultGateway: cannot be true if spec.gateway is not set"] * bool(spec.get("defaultGateway"))
        out += ["spec.routes: cannot be set if spec.gateway is not set"] * bool(spec.get("routes"))
    return out


_SRIOV_RESOURCE_NAME = re.compile(r"[a-zA-Z0-9_]+")
_NIC_SELECTOR_FIELDS = ("vendor", "deviceID", "pfNames", "rootDevices", "netFilter")


def sriov_policy_problems(obj: dict) -> list[str]:
    """sriov-network-operator v1.6.0 pkg/webhook/validate.go ``staticValidateSriovNetworkNodePolicy`` (the
    supported-NIC table and PF-name ranges are not repeated here)."""
    spec = obj.get("spec") or {}
    out = []
    if not _SRIOV_RESOURCE_NAME.fullmatch(str(spec.get("resourceName", ""))):
        out.append(f"spec.resourceName: {spec.get('resourceName')!r} contains invalid characters "
                   f"(^[a-zA-Z0-9_]+$)")
    if not any((spec.get("nicSelector") or {}).get(k) for k in _NIC_SELECTOR_FIELDS):
        out.append("spec.nicSelector: at least one of vendor, deviceID, pfNames, rootDevices or netFilter")
    if spec.get("deviceType") == "vfio-pci" and spec.get("isRdma"):
        out.append("spec.deviceType: 'vfio-pci' conflicts with 'isRdma: true'")
    link = str(spec.get("linkType", ""))
    if spec.get("eSwitchMode") == "switchdev" and link and link.lower() != "eth":
        out.append("spec.eSwitchMode: 'switchdev' can be used only with ethernet links")
    return out


def hypernode_problems(obj: dict) -> list[str]:
    """volcano v1.15.1 pkg/webhooks/admission/hypernodes/validate/admit_hypernode.go: at least one member; a
    regexMatch pattern compiles (Go RE2 there, Python's ``re`` here: the common syntax)."""
    members = (obj.get("spec") or {}).get("members") or []
    out = [] if members else ["spec.members: member must have at least one member"]
    for index, member in enumerate(members):
        pattern = ((member.get("selector") or {}).get("regexMatch") or {}).get("pattern")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as error:
                out.append(f"spec.members[{index}].selector.regexMatch.pattern: invalid: {error}")
    return out


def nodeset_problems(obj: dict) -> list[str]:
    """slurm-operator v1.2.1 internal/webhook/nodeset_webhook.go: controllerRef.name must not be empty."""
    ref = (obj.get("spec") or {}).get("controllerRef") or {}
    return [] if ref.get("name") else ["spec.controllerRef.name: must not be empty"]


WEBHOOKS = {
    ("nv-ipam.nvidia.com", "IPPool"): ippool_problems,
    ("sriovnetwork.openshift.io", "SriovNetworkNodePolicy"): sriov_policy_problems,
    ("topology.volcano.sh", "HyperNode"): hypernode_problems,
    ("slinky.slurm.net", "NodeSet"): nodeset_problems,
}
"""(group, kind) -> the static checks of its validating webhook"""


def webhook_problems(group: str, kind: str, obj: dict) -> list[str]:
    check = WEBHOOKS.get((group, kind))
    return check(obj) if check else []
