"""What each node role's cloud identity must be allowed to do (the capabilities), independent of provider.

The provider programs map each capability to the narrowest permissions the provider has (an IAM policy
scoped to the cluster's parameter/object/tags, Secret Manager and bucket bindings on the one secret and
bucket, role assignments scoped to the one vault/container/resource group); rule CLOUD011 compares the
capabilities a blueprint needs with what an identity it names (``cloud.identities``) grants.
"""

from __future__ import annotations

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
