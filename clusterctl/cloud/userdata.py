"""The user data every cloud instance boots with: its host name and the bootstrap program with its settings.

    cfg = bootstrap_config("aws", region="us-east-2", config_url="s3://bucket/clusterctl/config.tar.gz",
                           secrets={"vault_munge_key": {"aws-ssm": "/clusterctl/c/munge-key"}})
    text = user_data("aws", "gpu001", cfg)      # cloud-config, checked against the provider's size limit

The settings name *where* the configuration object and each secret are (an object URL, an SSM parameter
name, a Secret Manager secret, a Key Vault secret URL), never a secret's value: the instance fetches the
values with its own identity (clusterctl.cloud.identity). The user data is written by a YAML emitter.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping
from importlib import resources

import yaml

from clusterctl.cloud.hostname import CLOUD_CONFIG_HEADER, check

BOOTSTRAP_PROGRAM = "/usr/local/sbin/clusterctl-bootstrap"
BOOTSTRAP_CONFIG = "/etc/clusterctl/bootstrap.json"

LIMITS = {"aws": 16384, "gcp": 262144, "azure": 65535}
"""bytes of user data each provider accepts (before its own base64 encoding); verified by the node-programs
work against each provider's documentation"""

SECRET_KINDS = ("aws-ssm", "gcp-secret", "azure-keyvault", "file")
"""how a secret reference says where its value is: an SSM SecureString parameter name, a Secret Manager
secret (projects/P/secrets/S), a Key Vault secret URL, or a file on the node (the rehearsal's stand-in)"""


class UserDataTooLarge(ValueError):
    pass


def bootstrap_config(provider: str, *, region: str, config_url: str, secrets: Mapping[str, Mapping[str, str]],
                     identity: str | None = None, timeout_s: int = 1800) -> dict:
    """The settings the bootstrap program reads from BOOTSTRAP_CONFIG (no host: the user data names it).

    ``secrets`` maps an Ansible variable the roles read (``vault_munge_key``, ``vault_slurmdbd_storage_pass``)
    to one reference ``{kind: where}`` (SECRET_KINDS). ``identity``: the client id of an Azure user-assigned
    managed identity (the instance may hold several)."""
    for var, ref in secrets.items():
        if len(ref) != 1 or next(iter(ref)) not in SECRET_KINDS:
            raise ValueError(f"secret {var}: one reference of {', '.join(SECRET_KINDS)} expected, got {dict(ref)}")
    config = {"version": 1, "provider": provider, "region": region, "config_url": config_url,
              "secrets": {k: dict(v) for k, v in sorted(secrets.items())}, "timeout_s": int(timeout_s)}
    if identity:
        config["identity"] = identity
    return config


def program_text() -> str:
    return resources.files("clusterctl.cloud.node").joinpath("bootstrap.py").read_text()


def _gz_b64(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def user_data(provider: str, host: str, bootstrap: Mapping | None = None) -> str:
    """cloud-config naming the instance ``host`` and, with ``bootstrap``, installing and running the bootstrap
    program (write_files, gzip+base64; runcmd as an argument list). Raises UserDataTooLarge over LIMITS."""
    check(provider, [host])
    config: dict = {"hostname": host, "fqdn": host, "prefer_fqdn_over_hostname": False, "preserve_hostname": False,
                    "manage_etc_hosts": "localhost"}
    if bootstrap is not None:
        settings = {**bootstrap, "host": host}
        config["write_files"] = [
            {"path": BOOTSTRAP_PROGRAM, "permissions": "0755", "owner": "root:root", "encoding": "gz+b64",
             "content": _gz_b64(program_text())},
            {"path": BOOTSTRAP_CONFIG, "permissions": "0644", "owner": "root:root",
             "content": json.dumps(settings, indent=1, sort_keys=True) + "\n"},
        ]
        config["runcmd"] = [[BOOTSTRAP_PROGRAM]]
    text = CLOUD_CONFIG_HEADER + yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=1 << 16)
    if len(text.encode()) > LIMITS[provider]:
        raise UserDataTooLarge(f"{provider} user data for {host} is {len(text.encode())} bytes; the limit is "
                               f"{LIMITS[provider]}")
    return text
