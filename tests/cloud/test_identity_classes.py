"""Identity classes are decided once (clusterctl.cloud.stack.identity) and have one name per cluster shape on every
provider: the Pulumi program of each shipped cloud blueprint, run under the mocks, creates one identity per class
(an IAM role and instance profile, a service account, a user-assigned managed identity) and gives each static
instance its class's identity. The tables below are literal; a change of the shared decision changes all three
providers' stacks alike."""

from __future__ import annotations

import pytest

from clusterctl import hostlist
from clusterctl.cloud.stack import identity
from clusterctl.cloud.stack.spec import cloud_spec
from tests.cloud.mocks import run_program
from tests.helpers import plan_of, shipped

MUNGE = {"clusterctl:mungeKey": "bXVuZ2Uta2V5LWZvci10ZXN0cw==", "clusterctl:slurmdbdPassword": "ZGItcGFzcw=="}
CONFIG = {"aws": {"clusterctl:keyName": "ops"}, "gcp": {"gcp:project": "research-proj"},
          "azure": {"clusterctl:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAItest ops@example"}}


def _aws(rec, cluster: str) -> dict[str, str]:
    prefix = f"clusterctl-{cluster}-"
    classes = {r.inputs["name"][len(prefix):]: [] for r in rec.of_type("aws:iam/role:Role")}
    for inst in rec.of_type("aws:ec2/instance:Instance"):
        classes[inst.inputs["iamInstanceProfile"][len(prefix):]].append(inst.name)
    return classes


def _gcp(rec, cluster: str) -> dict[str, str]:
    accounts = {a.outputs["email"]: a.inputs["description"].split(" nodes of cluster ")[0]
                for a in rec.of_type("gcp:serviceaccount/account:Account")}
    classes = {name: [] for name in accounts.values()}
    for inst in rec.of_type("gcp:compute/instance:Instance"):
        classes[accounts[inst.inputs["serviceAccount"]["email"]]].append(inst.inputs["name"])
    return classes


def _azure(rec, cluster: str) -> dict[str, str]:
    idents = {i.outputs["id"]: i.inputs["tags"]["identity"]
              for i in rec.of_type("azure-native:managedidentity:UserAssignedIdentity")}
    classes = {name: [] for name in idents.values()}
    for vm in rec.of_type("azure-native:compute:VirtualMachine"):
        (ident,) = vm.inputs["identity"]["userAssignedIdentities"]
        classes[idents[ident]].append(vm.inputs["vmName"])
    return classes


READERS = {"aws": _aws, "gcp": _gcp, "azure": _azure}


def stack_classes(blueprint: str) -> tuple[str, dict[str, str]]:
    """(provider, identity class -> the static instances that run with it, as a host list) of a blueprint's
    stack under the mocks."""
    spec = cloud_spec(plan_of(shipped(blueprint)))
    rec = run_program(spec, config=CONFIG[spec.provider], secrets=MUNGE)
    found = READERS[spec.provider](rec, spec.cluster)
    return spec.provider, {name: hostlist.compress(sorted(hosts)) if hosts else ""
                           for name, hosts in sorted(found.items())}


SHIPPED = {
    "aws-p5": ("aws", {"compute": "gpu[001-016]", "controller-accounting": "head01"}),
    "gcp-a3-mega": ("gcp", {"compute": "a3mega-[001-032]", "controller-accounting": "ctl01", "login": "login01"}),
    "azure-nd-h100-v5": ("azure", {"compute": "ndv5-[001-032]", "controller-accounting": "scheduler01",
                                   "login": "login01"}),
    # the elastic GPU group has no instance at `pulumi up`; its launch template names the compute class
    "lab-cloud": ("aws", {"compute": "", "controller-accounting": "head01"}),
}
"""blueprint -> (provider, identity class -> its static instances): a head that runs slurmctld and slurmdbd is
``controller-accounting`` on every provider"""


@pytest.mark.parametrize("blueprint", sorted(SHIPPED))
def test_identity_classes_of_the_shipped_cloud_blueprints(blueprint):
    assert stack_classes(blueprint) == SHIPPED[blueprint]


RENAMED = {(True, False): "slurmctld", (False, True): "slurmdbd", (True, True): "slurm-head"}


def test_the_shared_decision_changes_every_provider_alike(monkeypatch):
    """Renaming the Slurm classes in the one table renames the identity of the head on all three providers."""
    monkeypatch.setattr(identity, "SLURM_CLASSES", RENAMED)
    assert {b: stack_classes(b) for b in ("aws-p5", "gcp-a3-mega", "azure-nd-h100-v5")} == {
        "aws-p5": ("aws", {"compute": "gpu[001-016]", "slurm-head": "head01"}),
        "gcp-a3-mega": ("gcp", {"compute": "a3mega-[001-032]", "login": "login01", "slurm-head": "ctl01"}),
        "azure-nd-h100-v5": ("azure", {"compute": "ndv5-[001-032]", "login": "login01", "slurm-head": "scheduler01"}),
    }
