"""What every provider's Pulumi components share: their typed arguments and the provider-neutral tail of a cluster.

Arguments. Every component takes ``(name, args, opts)``; ``args`` is an ``XxxArgs`` dataclass built by keyword,
and the same idea has the same field on every provider: ``spec`` (the :class:`~clusterctl.cloud.stack.spec.CloudSpec`),
``settings`` (the provider's ``Settings``: the stack configuration, read once by
:mod:`clusterctl.cloud.pulumi.program`),
``network``, ``group`` / ``groups``, ``boot`` (what an instance boots with: identity and user data),
``secrets`` (:class:`StackSecrets`), ``render_dir``. A provider module narrows ``settings`` to its own type and
adds what only it has (``image``, ``placement_group`` on AWS, ``resource_group`` on Azure, ...). Components never
read ``pulumi.Config``.

The tail. The ``nodes`` stack output (:func:`node`, :func:`nodes_output`), the secret references of the bootstrap
(:func:`secret_refs`), ``cloud/stack.json`` (:func:`stack_document`) and the configuration object's bytes and
file (:func:`config_object`, :func:`bundle_asset`): the same on AWS, GCP and Azure.

No provider SDK is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, make_dataclass
from pathlib import Path
from typing import Any

import pulumi

from clusterctl import hostlist
from clusterctl.cloud.stack import bundle
from clusterctl.cloud.stack.spec import CloudSpec, GroupSpec
from clusterctl.plan.ranges import WORLD_PREFIX, admin_range_problem, is_world, network

MUNGE_VAR = "vault_munge_key"
"""the Ansible variable the roles read the munge key from"""
DBD_VAR = "vault_slurmdbd_storage_pass"
"""the Ansible variable the roles read the slurmdbd database password from"""


# --- stack configuration --------------------------------------------------------------------------------------


def refuse_wide_admin_cidr(admin_cidr: str) -> None:
    """Raise ValueError when ``admin_cidr`` (the blueprint's, or ``clusterctl:adminCidr`` from the stack
    configuration, which never passes ``validate``) may not open SSH: the same decision as rule CLOUD005
    (:func:`clusterctl.plan.ranges.admin_range_problem`: private space, or at most a public IPv4 /16 or IPv6 /48).
    Every provider's ``Settings`` calls it."""
    problem = admin_range_problem(admin_cidr)
    if problem is not None:
        raise ValueError(f"admin CIDR {admin_cidr} opens SSH to the internet ({problem}); set clusterctl:adminCidr "
                         "to your office, VPN or bastion range")


@dataclass(frozen=True)
class StackSecrets:
    """The stack's secrets (``pulumi config set --secret clusterctl:...``), secret Outputs end to end."""
    munge_key: pulumi.Output[str]
    """``mungeKey``: the Slurm munge key (base64); every node reads it"""
    slurmdbd_password: pulumi.Output[str] | None = None
    """``slurmdbdPassword``: the slurmdbd database password; the accounting hosts read it"""


def refuse_world_network(setting: str, cidr: str) -> None:
    """Raise ValueError when the cluster network ``cidr`` (``clusterctl:vpcCidr``, ``primaryCidr``, ``vnetCidr``...,
    rendered from the blueprint's in-band pool or set on the stack) is the whole internet: the programs admit all
    traffic from the cluster's own ranges, so such a range would open every port to everyone. The decision of rule
    ADDR005 (:func:`clusterctl.plan.ranges.is_world`)."""
    net = network(cidr)
    if net is not None and is_world(net):
        raise ValueError(f"clusterctl:{setting} {cidr} is the whole internet (a public prefix shorter than "
                         f"/{WORLD_PREFIX[net.version]}); the cluster network must be a private range")


# --- component arguments --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ComponentArgs:
    """What every component takes: the cluster's spec and the provider's settings."""
    spec: CloudSpec
    settings: Any
    """the provider's ``Settings`` (a provider module's args narrow the type)"""


@dataclass(frozen=True, kw_only=True)
class ClusterArgs(ComponentArgs):
    """The top-level ``clusterctl:<provider>:Cluster`` component."""
    secrets: StackSecrets
    render_dir: Path | None = None
    """the render (``OUT``): with it the configuration object is uploaded and every instance boots into the
    bootstrap; without it neither (unit tests of other pieces)"""


@dataclass(frozen=True, kw_only=True)
class NetworkArgs(ComponentArgs):
    """The cluster's network."""


def provider_args(settings: type) -> type[ComponentArgs]:
    """A provider module's base of its ``XxxArgs``: :class:`ComponentArgs` with ``settings`` narrowed to the
    provider's ``Settings`` class; each ``XxxArgs`` derives from it and from the shared base of its idea."""
    return make_dataclass("Args", [("settings", settings)], bases=(ComponentArgs,), frozen=True, kw_only=True)


@dataclass(frozen=True, kw_only=True)
class NodeGroupArgs(ComponentArgs):
    """One group of (GPU) instances."""
    group: GroupSpec
    network: Any
    boot: Any
    """what the group's instances boot with (the provider's ``Boot``: identity and user data)"""


@dataclass(frozen=True, kw_only=True)
class HeadNodesArgs(ComponentArgs):
    """The CPU instances (head, login, service) of the groups ``groups``."""
    groups: tuple[GroupSpec, ...]
    network: Any
    boot: Any


@dataclass(frozen=True, kw_only=True)
class StorageArgs(ComponentArgs):
    """The file systems of the storage tiers and the checkpoint bucket / account."""
    network: Any


@dataclass(frozen=True, kw_only=True)
class ConfigStoreArgs(ComponentArgs):
    """The private bucket / container of the configuration object."""


@dataclass(frozen=True, kw_only=True)
class IdentityArgs(ComponentArgs):
    """The nodes' identities (one per role class) and what each may do."""


# --- the provider-neutral tail --------------------------------------------------------------------------------


def node(private_ip: pulumi.Input[str | None], group: GroupSpec) -> pulumi.Output[dict]:
    """One host's entry of the ``nodes`` stack output, which ``clusterctl inventory`` reads."""
    return pulumi.Output.from_input(private_ip).apply(lambda ip: {
        "private_ip": ip, "group": group.name, "role": group.role, "instance_type": group.instance_type})


def nodes_output(nodes: Mapping[str, pulumi.Output[dict]]) -> pulumi.Output[dict]:
    """The ``nodes`` stack output: ``{hostname: node(...)}`` sorted by host name."""
    return pulumi.Output.all(**dict(sorted(nodes.items()))) if nodes else pulumi.Output.from_input({})


def secret_refs(kind: str, munge_key: str, slurmdbd_password: str | None = None) -> dict[str, dict[str, str]]:
    """The ``secrets`` of a bootstrap configuration (clusterctl.cloud.stack.userdata.bootstrap_config): where the munge
    key and, for an accounting host, the database password are (``kind``: userdata.SECRET_KINDS)."""
    refs = {MUNGE_VAR: {kind: munge_key}}
    if slurmdbd_password:
        refs[DBD_VAR] = {kind: slurmdbd_password}
    return refs


def stack_document(spec: CloudSpec, provider: str, bootstrap: dict, elastic: Mapping[str, dict]) -> dict:
    """``cloud/stack.json`` of the configuration object (the issue 12 design): no secret and nothing that depends
    on an instance. ``bootstrap``: the compute nodes' bootstrap settings (no host); ``elastic``: per elastic group
    the provider's facts the resume program starts its instances from (under the key ``provider``)."""
    return {"version": 1, "cluster": spec.cluster, "provider": provider, "region": spec.region, "zone": spec.zone,
            "bootstrap": bootstrap,
            "elastic": {g.name: {"hostlist": hostlist.compress(g.hostnames), "instance_type": g.instance_type,
                                 provider: elastic[g.name]}
                        for g in spec.groups if g.elastic}}


def config_object(render_dir: Path, stack: pulumi.Output[dict]) -> pulumi.Output[bytes]:
    """The configuration object's bytes: the render's runtime files plus ``stack`` (bundle.config_bundle)."""
    return stack.apply(lambda st: bundle.config_bundle(Path(render_dir), st))


def bundle_asset(render_dir: Path, data: bytes) -> pulumi.FileAsset:
    """``data`` (the object's bytes) as a file asset: bundle.BUNDLE_FILE of the render (GCS objects and Azure blobs
    take binary content from a file)."""
    return pulumi.FileAsset(str(bundle.bundle_file(Path(render_dir), data)))
