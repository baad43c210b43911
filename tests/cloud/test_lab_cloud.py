"""blueprints/lab-cloud.yaml, the blueprint the elastic rehearsal runs, as a shipped cloud blueprint under Pulumi
mocks: a static head node instance, and an elastic GPU group that `pulumi up` does not create (Slurm power saving
creates its instances from the group's launch template)."""

from __future__ import annotations

from clusterctl.cloud.stack.spec import cloud_spec
from tests.cloud.mocks import run_program
from tests.helpers import plan_of, shipped

CONFIG = {"clusterctl:keyName": "ops"}
SECRETS = {"clusterctl:mungeKey": "bXVuZ2Uta2V5LWZvci10ZXN0cw==", "clusterctl:slurmdbdPassword": "db-pass-for-tests"}
INSTANCE = "aws:ec2/instance:Instance"


def test_lab_cloud_spec_has_a_static_head_and_an_elastic_gpu_group():
    spec = cloud_spec(plan_of(shipped("lab-cloud")))
    assert spec.provider == "aws" and spec.controllers == ("head01",) and spec.accounting == ("head01",)
    groups = {g.name: g for g in spec.groups}
    assert (groups["gpu"].elastic, groups["gpu"].hostnames, groups["gpu"].instance_type) == (
        True, ("gpu01", "gpu02"), "p5.48xlarge")
    assert (groups["head"].elastic, groups["head"].hostnames) == (False, ("head01",))


def test_lab_cloud_stack_creates_the_head_instance_only():
    rec = run_program(cloud_spec(plan_of(shipped("lab-cloud"))), config=CONFIG, secrets=SECRETS)
    assert sorted(r.name for r in rec.of_type(INSTANCE)) == ["head01"]
