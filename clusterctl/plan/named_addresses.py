"""Every address a blueprint writes as a literal, with the field it is in.

A blueprint names machines outside its node groups by host name or by address: storage servers (an NFS
``export``, a parallel file system's ``servers`` - Lustre NIDs, WEKA backends, a VAST VIP -, an object store's
``endpoint``, the Lustre client repository), the Slurm database and accounting hosts, the upstream time
servers, the Slurm package repository and the pull-mode git remote. A host name is resolved by the site's DNS
or the rendered /etc/hosts; an *address* goes wherever the network delivers it. This module lists the
addresses (names are left to the naming rules), so a rule can ask the plan who holds each one
(:func:`clusterctl.plan.allocations.holder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from clusterctl.blueprint.model import Blueprint
from clusterctl.plan.allocations import Address, parse_address
from clusterctl.plan.model import BPath
from clusterctl.plan.paths import server_names


@dataclass(frozen=True, slots=True)
class NamedAddress:
    path: BPath
    """the blueprint field that writes it"""
    field: str
    """what the field names, in words: ``storage tier home's NFS server``"""
    text: str
    """the address as written"""
    address: Address


def _url_host(url: str | None) -> list[str]:
    """The host of an http(s), ssh or git URL (``[v6]`` unbracketed); none for a path or no URL."""
    if not url or "://" not in url:
        return []
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return []
    return [host] if host else []


def _endpoint_host(endpoint: str) -> list[str]:
    """The host of an object store endpoint: a URL or host[:port][/path]."""
    return _url_host(endpoint if "://" in endpoint else "http://" + endpoint)


def named_hosts(bp: Blueprint):
    """(path, field in words, text) of every field that may hold an address."""
    for i, tier in enumerate(bp.storage):
        if tier.tier == "nfs":
            yield from ((("storage", i, "export"), f"storage tier {tier.name}'s NFS server", n)
                        for n in server_names(tier))
        elif tier.tier == "parallel":
            yield from ((("storage", i, "servers"), f"storage tier {tier.name}'s server", n) for n in server_names(tier))
            yield from ((("storage", i, "client_repo"), f"storage tier {tier.name}'s client repository", n)
                        for n in _url_host(tier.client_repo))
            yield from ((("storage", i, "client_repo_key"), f"storage tier {tier.name}'s client repository key", n)
                        for n in _url_host(tier.client_repo_key))
        elif tier.tier == "object":
            yield from ((("storage", i, "endpoint"), f"storage tier {tier.name}'s endpoint", n)
                        for n in _endpoint_host(tier.endpoint))
    slurm = bp.slurm
    if slurm is not None:
        for key, words in (("database_host", "the Slurm accounting database (StorageHost)"),
                           ("accounting_host", "the slurmdbd host"),
                           ("accounting_backup_host", "the backup slurmdbd host")):
            value = getattr(slurm, key)
            if value:
                yield ("slurm", key), words, value
        if slurm.install.kind == "repo":
            yield from ((("slurm", "install", "url"), "the Slurm package repository", n)
                        for n in _url_host(slurm.install.url))
            yield from ((("slurm", "install", "key"), "the Slurm repository key", n) for n in _url_host(slurm.install.key))
        if slurm.rollout.pull is not None:
            yield from ((("slurm", "rollout", "pull", "source"), "the pull-mode git remote", n)
                        for n in _url_host(slurm.rollout.pull.source))
    if bp.site is not None:
        for i, server in enumerate(bp.site.time_servers):
            yield ("site", "time_servers", i), "an upstream time server", server


def named_addresses(bp: Blueprint) -> list[NamedAddress]:
    """The literal addresses of the blueprint's fields (the module docstring), in document order."""
    out = []
    for path, field, text in named_hosts(bp):
        address = parse_address(text)
        if address is not None:
            out.append(NamedAddress(path, field, text, address))
    return out
