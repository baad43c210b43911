"""Which hosts share a cloud identity (the identity classes) and what each must be allowed to do (the
capabilities), independent of provider: decided here once, for AWS, GCP and Azure alike.

A class is named after the Slurm daemons whose secrets and powers its hosts need (:data:`SLURM_CLASSES`:
``controller``, ``accounting``, ``controller-accounting``) or, for every other host, after its group's role
(``compute``, ``login``, ``head``, ...): a host that reads the database password never shares an identity with one
that must not, and the same cluster shape has the same classes on every provider. Each provider's components
map a class to their objects through a table: an IAM role and instance profile (AWS), a service account (GCP), a
user-assigned managed identity (Azure).

The provider programs map each capability to the narrowest permissions the provider has (an IAM policy
scoped to the cluster's parameter/object/tags, Secret Manager and bucket bindings on the one secret and
bucket, role assignments scoped to the one vault/container/resource group); rule CLOUD011 compares the
capabilities a blueprint needs with what an identity it names (``cloud.identities``) grants.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterctl.cloud.stack.spec import CloudSpec, GroupSpec, is_gpu_group

CAPABILITIES = {
    "read-config": "read the cluster's configuration object (bucket object / blob)",
    "read-secrets": "read the cluster's secrets this node uses (munge key; the database password on the "
                    "accounting host)",
    "manage-instances": "create and delete the instances of the cluster's elastic node groups (Slurm power "
                        "saving: ResumeProgram / SuspendProgram on the controllers)",
    "pass-identity": "give the instances it creates the compute nodes' identity",
    "write-dns": "add and remove the private DNS records of the instances it creates (AWS: Route 53)",
}


def needs(provider: str, *, controller: bool, elastic: bool) -> frozenset[str]:
    """The capabilities of a node's identity: every node reads the config object and its secrets; a Slurm
    controller of a cluster with elastic groups also creates and deletes instances (and on AWS writes their
    Route 53 records)."""
    caps = {"read-config", "read-secrets"}
    if controller and elastic:
        caps |= {"manage-instances", "pass-identity"}
        if provider == "aws":
            caps.add("write-dns")
    return frozenset(caps)


SLURM_CLASSES = {(True, False): "controller", (False, True): "accounting", (True, True): "controller-accounting"}
"""(runs slurmctld, runs slurmdbd) -> the class of such a host; a host that runs neither takes its group's role"""


@dataclass(frozen=True)
class IdentityClass:
    """The hosts that share one identity, and what it may do."""
    name: str
    hosts: tuple[str, ...]
    """every host that runs with it, static and elastic"""
    groups: tuple[str, ...]
    """the node groups whose own class it is: their launch template / instance template / elastic VM settings
    name it"""
    controller: bool
    """its hosts run slurmctld (they create the elastic instances)"""
    accounting: bool
    """its hosts run slurmdbd (they read the database password)"""

    def needs(self, provider: str, elastic: bool) -> frozenset[str]:
        return needs(provider, controller=self.controller, elastic=elastic)


def host_class(spec: CloudSpec, group: GroupSpec, host: str) -> str:
    return SLURM_CLASSES.get((host in spec.controllers, host in spec.accounting), group.role)


def identity_classes(spec: CloudSpec) -> dict[str, IdentityClass]:
    """class name -> :class:`IdentityClass`, sorted by name. A group's own class exists when one of its hosts
    takes it or when its instances are made from a template (an elastic or a GPU group), even if every host of
    the group is a Slurm controller or accounting host."""
    hosts: dict[str, list[str]] = {}
    groups: dict[str, list[str]] = {}
    for g in spec.groups:
        of_group = [host_class(spec, g, h) for h in g.hostnames]
        for host, name in zip(g.hostnames, of_group):
            hosts.setdefault(name, []).append(host)
        if g.role in of_group or g.elastic or is_gpu_group(g):
            groups.setdefault(g.role, []).append(g.name)
            hosts.setdefault(g.role, [])
    ctl, acct = set(spec.controllers), set(spec.accounting)
    return {name: IdentityClass(name, tuple(members), tuple(groups.get(name, ())),
                                controller=bool(ctl & set(members)), accounting=bool(acct & set(members)))
            for name, members in sorted(hosts.items())}


def class_of(spec: CloudSpec) -> dict[str, str]:
    """host -> the name of its identity class"""
    return {h: host_class(spec, g, h) for g in spec.groups for h in g.hostnames}
