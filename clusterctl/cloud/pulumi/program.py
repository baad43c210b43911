"""The Pulumi program of a rendered project: read cluster.json and the stack configuration, build the provider's
components.

The rendered ``__main__.py`` is two lines that call :func:`run`; everything else is real Python in this
package, unit-tested with ``pulumi.runtime.set_mocks``. The stack configuration (namespace ``clusterctl``, and
``gcp:project``) is read here and only here (:func:`read_config`), into the provider's typed ``Settings`` and
the stack's secrets (:class:`~clusterctl.cloud.pulumi.component.StackSecrets`); the components take those in their
``XxxArgs`` (clusterctl.cloud.pulumi.component) and never read ``pulumi.Config``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pulumi
from pulumi import Config

from clusterctl.cloud.pulumi.component import StackSecrets
from clusterctl.cloud.stack.spec import CloudSpec


def _given(config: Config, **keys: str) -> dict[str, str]:
    """``{field: value}`` of the string settings ``keys`` (field -> config key) set to a non-empty value: the
    others keep the ``Settings`` default."""
    values = {field: config.get(key) for field, key in keys.items()}
    return {field: value for field, value in values.items() if value}


# Each reader imports its provider's components in the function: a stack loads only its own provider's SDK
# (pulumi-azure-native alone takes seconds and hundreds of MB to import).
def _aws_settings(spec: CloudSpec, config: Config, admin_cidr: str) -> Any:
    from clusterctl.cloud.pulumi import aws  # only this provider's SDK (above)

    capacity_block = config.get_bool("capacityBlock")
    return aws.Settings(admin_cidr=admin_cidr, subnet_ids=tuple(config.get_object("subnetIds") or ()),
                        capacity_block=True if capacity_block is None else capacity_block,
                        public_head=bool(config.get_bool("publicHead")),
                        root_volume_gb=config.get_int("rootVolumeGb") or 512,
                        **_given(config, key_name="keyName", vpc_id="vpcId", vpc_cidr="vpcCidr", ami_id="amiId"))


def _gcp_settings(spec: CloudSpec, config: Config, admin_cidr: str) -> Any:
    from clusterctl.cloud.pulumi import gcp  # only this provider's SDK (above)

    return gcp.Settings(admin_cidr=admin_cidr, project=pulumi.Config("gcp").get("project"),
                        **_given(config, ssh_public_key="sshPublicKey", ssh_user="sshUser", gpu_image="gpuImage",
                                 head_image="headImage", kms_key="kmsKey", service_account="serviceAccount",
                                 primary_cidr="primaryCidr", service_cidr="serviceCidr",
                                 gpu_cidr_base="gpuCidrBase"))


def _azure_settings(spec: CloudSpec, config: Config, admin_cidr: str) -> Any:
    from clusterctl.cloud.pulumi import azure  # only this provider's SDK (above)

    return azure.Settings(admin_cidr=admin_cidr, ssh_public_key=config.require("sshPublicKey"),
                          storage_account=config.get("storageAccountName") or azure.storage_account_name(spec.cluster),
                          config_account=(config.get("configStorageAccountName")
                                          or azure.config_account_name(spec.cluster)),
                          key_vault=config.get("keyVaultName") or azure.key_vault_name(spec.cluster),
                          **_given(config, admin_username="adminUsername", vnet_cidr="vnetCidr", gpu_image="gpuImage",
                                   head_image="headImage"))


SETTINGS = {"aws": _aws_settings, "gcp": _gcp_settings, "azure": _azure_settings}
"""provider -> the reader of its ``Settings`` (the keys: docs/cloud.md and the provider module's docstring)"""


def read_config(spec: CloudSpec, render_dir: Path | None = None) -> tuple[Any, StackSecrets]:
    """The stack configuration of ``spec``'s provider, read once: (its ``Settings``, the stack's secrets).

    ``adminCidr`` overrides the blueprint's ``cloud.admin_cidr`` on every provider. ``mungeKey`` is required;
    ``slurmdbdPassword`` is required when the cluster has accounting hosts (on Azure only with a render: the
    accounting hosts' bootstrap reads it) and otherwise taken when set."""
    config = pulumi.Config("clusterctl")
    settings = SETTINGS[spec.provider](spec, config, config.get("adminCidr") or spec.admin_cidr)
    munge_key = config.require_secret("mungeKey")
    needed = spec.accounting and (spec.provider != "azure" or render_dir is not None)
    # require_secret raises when it is not set: the accounting hosts need it
    slurmdbd_password = (config.require_secret if needed else config.get_secret)("slurmdbdPassword")
    return settings, StackSecrets(munge_key=munge_key, slurmdbd_password=slurmdbd_password)


def build(spec: CloudSpec, render_dir: Path | None = None):
    """Create the stack's resources for ``spec`` inside the running Pulumi program and export the cluster
    component's outputs as the stack outputs (``nodes`` among them, which ``clusterctl inventory`` reads).
    Every provider's top-level component keeps them in ``.outputs``.

    ``render_dir``: the render the project is part of (``OUT``, the parent of ``OUT/pulumi``); the program
    uploads its runtime files as the cluster's configuration object (clusterctl.cloud.stack.bundle) that every
    instance's bootstrap applies. None: no object and no bootstrap in the user data (unit tests of other
    pieces)."""
    module = importlib.import_module(f"clusterctl.cloud.pulumi.{spec.provider}")
    settings, secrets = read_config(spec, render_dir)
    cluster = module.build(module.ClusterArgs(spec=spec, settings=settings, secrets=secrets,
                                              render_dir=Path(render_dir) if render_dir is not None else None))
    for key, value in sorted(cluster.outputs.items()):
        pulumi.export(key, value)
    return cluster


def run(spec_file: str | Path = "cluster.json"):
    spec_file = Path(spec_file).resolve()
    return build(CloudSpec.from_json(spec_file.read_text()), render_dir=spec_file.parent.parent)
