"""The user data every cloud instance boots with: its host name and the bootstrap program with its settings.

    cfg = bootstrap_config("aws", region="us-east-2", config_url="s3://bucket/clusterctl/config.tar.gz",
                           secrets={"vault_munge_key": {"aws-ssm": "/clusterctl/c/munge-key"}})
    text = user_data("aws", "gpu001", cfg)      # cloud-config, checked against the provider's size limit

The settings name *where* the configuration object and each secret are (an object URL, an SSM parameter
name, a Secret Manager secret, a Key Vault secret URL), never a secret's value: the instance fetches the
values with its own identity (clusterctl.cloud.stack.identity). The text comes from the one generator,
clusterctl/cloud/node/cloud_config.py (cloud-config in JSON form; the power-saving resume program on the
controllers runs the same file for the instances it creates); this module adds the providers' own host-name
checks and the packaged bootstrap program.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources

from clusterctl.cloud.stack.hostname import check
from clusterctl.cloud.node.cloud_config import (BOOTSTRAP_CONFIG, BOOTSTRAP_PROGRAM, LIMITS, UserDataTooLarge,
                                                cloud_config)

__all__ = ["BOOTSTRAP_CONFIG", "BOOTSTRAP_PROGRAM", "LIMITS", "SECRET_KINDS", "UserDataTooLarge", "bootstrap_config",
           "program_text", "user_data"]

SECRET_KINDS = ("aws-ssm", "gcp-secret", "azure-keyvault", "file")
"""how a secret reference says where its value is: an SSM SecureString parameter name, a Secret Manager
secret (projects/P/secrets/S), a Key Vault secret URL, or a file on the node (the rehearsal's stand-in)"""


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


def user_data(provider: str, host: str, bootstrap: Mapping | None = None) -> str:
    """cloud-config naming the instance ``host`` and, with ``bootstrap``, installing and running the bootstrap
    program (write_files, gzip+base64; runcmd as an argument list). Raises UserDataTooLarge over LIMITS
    (clusterctl/cloud/node/cloud_config.py: the limits and their sources)."""
    check(provider, [host])
    return cloud_config(provider, host, dict(bootstrap) if bootstrap is not None else None,
                        program_text() if bootstrap is not None else None)
