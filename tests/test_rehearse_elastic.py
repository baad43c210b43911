"""The elastic scenario's logic that needs no root: the cloud-init stand-in's reading of the rendered user data,
the rehearsal's stack and variant changes, and which scenarios apply (tests/e2e/test_elastic.py runs it)."""

from __future__ import annotations

import pytest

from clusterctl.rehearse.scenario import elastic
from clusterctl.rehearse.scenario.needs import elastic_unmet
from clusterctl.rehearse.steps import StepFailed
from tests.helpers import plan_of, shipped


def test_the_stand_in_reads_the_rendered_user_data_and_decodes_the_bootstrap_program():
    from clusterctl.cloud.stack.userdata import program_text, user_data

    plan = plan_of(shipped("lab-cloud"))
    stack = elastic.rehearsal_stack(plan)
    config = elastic.parse_cloud_config(user_data("aws", "gpu01", stack["bootstrap"]))
    assert config["hostname"] == "gpu01" and config["runcmd"] == [["/usr/local/sbin/clusterctl-bootstrap"]]
    program, settings = config["write_files"]
    assert elastic._decode(program).decode() == program_text() and program["permissions"] == "0755"
    assert b'"config_url": "file:///srv/clusterctl-bucket/clusterctl/config.tar.gz"' in elastic._decode(settings)


def test_user_data_compressed_by_another_zlib_is_the_same_user_data_and_other_content_is_not():
    """The head node's resume program renders the user data with its own Python: on debian-13 zlib 1.3 compresses
    the bootstrap program to other gzip bytes than this machine's zlib (a level-1 stream stands in for them here).
    cloud-init writes the decoded files, so the check compares those; a changed program or host name still fails."""
    import base64
    import zlib

    from clusterctl.cloud.stack.userdata import user_data

    stack = elastic.rehearsal_stack(plan_of(shipped("lab-cloud")))
    text = user_data("aws", "gpu01", stack["bootstrap"])
    program = elastic.parse_cloud_config(text)["write_files"][0]["content"]
    raw = elastic._decode({"content": program, "encoding": "gz+b64"})
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip framing, another deflate stream
    other = base64.b64encode(compressor.compress(raw) + compressor.flush()).decode()
    assert other != program
    assert elastic.decoded_cloud_config(text.replace(program, other)) == elastic.decoded_cloud_config(text)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    tampered = base64.b64encode(compressor.compress(raw + b"# more\n") + compressor.flush()).decode()
    assert elastic.decoded_cloud_config(text.replace(program, tampered)) != elastic.decoded_cloud_config(text)
    assert elastic.decoded_cloud_config(text.replace("gpu01", "gpu02")) != elastic.decoded_cloud_config(text)
    assert elastic.decoded_cloud_config("#!/bin/sh\necho hi\n") is None
    # a gzip header over a broken deflate stream: not the same user data, and no exception out of the check
    broken = base64.b64encode(bytes.fromhex("1f8b0800000000000003") + b"\xff\xff\xff\xff").decode()
    assert elastic.decoded_cloud_config(text.replace(program, broken)) is None


def test_the_stand_in_refuses_what_it_does_not_apply():
    with pytest.raises(StepFailed, match="packages"):
        elastic.parse_cloud_config("#cloud-config\nhostname: gpu01\npackages: [curl]\n")
    with pytest.raises(StepFailed, match="not cloud-config"):
        elastic.parse_cloud_config("#!/bin/sh\necho hi\n")
    with pytest.raises(StepFailed, match="encoding"):
        elastic._decode({"path": "/x", "content": "x", "encoding": "zstd"})


def test_the_rehearsal_stack_is_the_aws_programs_with_file_references():
    from clusterctl.cloud.pulumi.aws import stack_json
    from clusterctl.cloud.stack.spec import cloud_spec

    plan = plan_of(shipped("lab-cloud"))
    stack = elastic.rehearsal_stack(plan)
    assert stack == stack_json(cloud_spec(plan), elastic.bootstrap_settings(plan), {"gpu": "lt-00000000000000001"},
                               "Z0REHEARSAL0000000000", "lab-cloud.internal")
    assert stack["elastic"]["gpu"]["hostlist"] == "gpu[01-02]"
    assert stack["bootstrap"]["secrets"] == {"vault_munge_key": {"file": f"{elastic.SECRETS_DIR}/vault_munge_key"}}


def test_elastic_applies_to_lab_cloud_only_and_shortens_suspend_time():
    from clusterctl.rehearse.variant import Variant

    assert elastic_unmet(plan_of(shipped("lab-cloud"))) == ""
    assert elastic_unmet(plan_of(shipped("lab-2node"))) == "not a cloud blueprint with Slurm"
    assert elastic_unmet(plan_of(shipped("aws-p5"))).startswith("no elastic node group")
    v = Variant(shipped("lab-cloud"))
    elastic.adjust_elastic(v)
    assert v.data["slurm"]["power_save"] == {"suspend_time_s": 60, "suspend_timeout_s": 30}
    assert v.changes["slurm.power_save.suspend_time_s"] == {"blueprint": 600, "rehearsed": 60}
    # the rehearsal init and Debian's own Slurm (init scripts) for the elastic cycle's fresh-boot stand-in
    assert (v.data["slurm"]["install"], v.data["slurm"]["version"]) == ({"kind": "distro"}, "22.05")
    assert v.changes["slurm.install"]["rehearsed"] == {"kind": "distro"}
    assert "time namespace" in v.changes["slurm.version"]["why"]


def test_instance_types_get_this_machines_hardware_in_the_rehearsed_plan():
    from clusterctl.rehearse.image.catalog import IMAGES
    from clusterctl.rehearse.variant import Hardware, rehearsal_variant, with_machine_hardware

    plan = plan_of(shipped("lab-cloud"))
    hw = Hardware(1, 2, 1, 24105)
    v = rehearsal_variant(shipped("lab-cloud"), plan, IMAGES["debian-12"], hw)
    assert v.data["node_types"]["p5"] == {"instance": "p5.48xlarge", "features": ["h100", "efa"]}
    assert v.changes["node_types.p5"]["rehearsed"] == {"instance": "p5.48xlarge", "sockets": 1, "cores_per_socket": 2,
                                                       "threads_per_core": 1, "memory_gb": 23}
    p = with_machine_hardware(plan, v.instance_hardware)
    t = p.group("gpu").type
    assert (t.instance_name, t.gpus, t.sockets, t.cores_per_socket, t.threads_per_core, t.memory_gb) == (
        "p5.48xlarge", 8, 1, 2, 1, 23.0)
    assert p.group("head").type == plan.group("head").type


def test_call_host_reads_the_host_of_each_providers_create():
    aws = {"argv": ["ec2", "run-instances", "--tag-specifications",
                    '[{"ResourceType":"instance","Tags":[{"Key":"clusterctl:hostname","Value":"gpu02"}]}]']}
    assert elastic.call_host(aws, "create") == "gpu02" and elastic.call_host(aws, "delete") is None
    assert elastic.call_host({"argv": ["compute", "instances", "delete", "gpu01", "--quiet"]}, "delete") == "gpu01"
    assert elastic.call_host({"argv": ["vm", "create", "--name", "gpu01"]}, "create") == "gpu01"
