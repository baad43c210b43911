"""Google Cloud's naming rules: label keys and values, Compute Engine resource names, service account ids."""

from __future__ import annotations

import re

from clusterctl.cloud.stack.spec import CloudSpec


def label_key(key: str) -> str:
    """A GCP label key: lower case letters, digits, ``_`` and ``-``, starting with a letter, <= 63 chars
    (``clusterctl:cluster`` -> ``clusterctl_cluster``)."""
    k = re.sub(r"[^a-z0-9_-]", "_", key.lower())
    if not k or not k[0].isalpha():
        k = "k" + k
    return k[:63]


def label_value(value: str) -> str:
    """A GCP label value: lower case letters, digits, ``_`` and ``-``, <= 63 chars (may be empty)."""
    return re.sub(r"[^a-z0-9_-]", "_", str(value).lower())[:63]


def labels(spec: CloudSpec, **extra: str) -> dict[str, str]:
    out = {label_key(k): label_value(v) for k, v in sorted(spec.tags.items())}
    out[label_key("cluster")] = label_value(spec.cluster)
    out.update({label_key(k): label_value(v) for k, v in sorted(extra.items())})
    return out


def resource_name(*parts: str) -> str:
    """A Compute Engine name: ``[a-z]([-a-z0-9]*[a-z0-9])?``, <= 63 chars."""
    n = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    if not n or not n[0].isalpha():
        n = "c-" + n
    return n[:63].rstrip("-")


def account_id(cluster: str, role: str) -> str:
    """A service account id (6-30 characters, ``[a-z]([-a-z0-9]*[a-z0-9])``): ``<cluster>-<role>``, the
    cluster part shortened to fit."""
    role = resource_name(role)
    return resource_name(resource_name(cluster)[:29 - len(role)].rstrip("-"), role)
