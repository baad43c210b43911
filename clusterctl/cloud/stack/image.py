"""The machine image a cloud stack boots: which one is looked up when the stack configuration names none, and
the command that resolves it once and pins it in the stack configuration before the first ``pulumi up``
(docs/cloud.md, "AMI pinning"). A stack whose image floats would give a later ``pulumi up`` a newer image and
replace running instances with it; the Pulumi programs also ignore the image after creation
(``clusterctl.cloud.pulumi.aws.IMAGE_IGNORED``)."""

from __future__ import annotations

DLAMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
"""name filter of the AMI looked up when ``amiId`` is not set (AWS-owned, x86_64)"""

DLAMI_FILTERS = (("name", DLAMI_NAME), ("architecture", "x86_64"), ("state", "available"))
"""(filter, value) of the DLAMI lookup: the program's ``aws.ec2.get_ami`` and the pin command ask the same"""

AWS_PIN_COMMAND = (
    '"$(aws ec2 describe-images --region "$(pulumi config get aws:region)" --owners amazon --filters '
    + " ".join(f"'Name={name},Values={value}'" for name, value in DLAMI_FILTERS)
    + " --query 'sort_by(Images, &CreationDate)[-1].ImageId' --output text)\"")
"""the value of ``pulumi config set clusterctl:amiId``: the newest DLAMI, resolved once by the AWS CLI
(``describe-images`` with ``--owners``, ``--filters`` and a JMESPath ``--query``: AWS CLI reference,
ec2 describe-images), the same lookup the program makes without it"""
