"""pulumi target: a self-contained Pulumi project for blueprints with a ``cloud:`` section.

    pulumi/Pulumi.yaml           project (python runtime) with project-level config defaults (region,
                                 admin CIDR, the network range of the blueprint's in-band pool) and, as
                                 comments, the ``pulumi config set`` commands for the secrets (read from a
                                 file on stdin, never a command-line argument) and per-stack settings. The stack file (Pulumi.<stack>.yaml) is NOT
                                 rendered: ``pulumi config set --secret`` writes encrypted values into it,
                                 so it belongs to the user and survives re-renders.
    pulumi/__main__.py           three fixed lines: run clusterctl.cloud.pulumi.program on cluster.json
    pulumi/requirements.txt      clusterctl[cloud] pinned to the rendering version, the provider SDK
    pulumi/cluster.json          CloudSpec.to_json(): everything the program builds from

The program itself is real Python in :mod:`clusterctl.cloud`, never generated. Bare-metal blueprints
render nothing.
"""

from __future__ import annotations


from clusterctl import __version__
from clusterctl.cloud.stack.image import AWS_PIN_COMMAND
from clusterctl.cloud.stack.spec import CloudSpec, cloud_network, cloud_spec
from clusterctl.plan.model import ClusterPlan
from clusterctl.targets import RenderError
from clusterctl.targets.common import header, render_template
from clusterctl.yamlout import quoted

MAIN = 'from clusterctl.cloud.pulumi.program import run\nrun("cluster.json")\n'
"""the program: the same for every cluster (after the generated-file header)"""

PROVIDERS = {
    # provider: (region config key, provider SDK requirement, per-stack settings to set: (key, example))
    "aws": ("aws:region", "pulumi-aws>=7,<8", (("clusterctl:keyName", "my-ec2-key-pair"),
                                               ("clusterctl:amiId", AWS_PIN_COMMAND))),
    "gcp": ("gcp:region", "pulumi-gcp>=7", (("gcp:project", "my-gcp-project"),)),
    "azure": ("azure-native:location", "pulumi-azure-native>=2", (("clusterctl:sshPublicKey", '"$(cat ~/.ssh/id_ed25519.pub)"'),)),
}

SECRETS = (
    ("clusterctl:mungeKey", "../../secrets/munge.key.b64",
     "dd if=/dev/urandom bs=1 count=1024 2>/dev/null | base64 -w0"),
    ("clusterctl:slurmdbdPassword", "../../secrets/slurmdbd.pass",
     "dd if=/dev/urandom bs=1 count=32 2>/dev/null | base64 -w0 | tr -d '/+='"),
)
"""(key, file holding the value, command writing that file) of every secret the programs require. The value
goes to ``pulumi config set --secret KEY < FILE``: Pulumi reads it from stdin when no value is on the command
line (pulumi.com/docs/iac/cli/commands/pulumi_config_set), so it never appears in ``ps`` or shell history."""

NETWORK_KEY = {"aws": "clusterctl:vpcCidr", "gcp": "clusterctl:primaryCidr", "azure": "clusterctl:vnetCidr"}
"""the stack setting holding the range the nodes' private addresses come from (VPC, primary subnet, VNet)"""

OPTIONAL = {
    "aws": ("clusterctl:vpcId", "clusterctl:subnetIds", "clusterctl:vpcCidr", "clusterctl:amiId",
            "clusterctl:capacityBlock", "clusterctl:publicHead", "clusterctl:rootVolumeGb"),
}
"""optional stack settings each provider's program reads, listed in a comment"""


def _q(value: str) -> str:
    """A YAML scalar that stays a string, double-quoted and ASCII (:func:`clusterctl.yamlout.quoted`)."""
    return quoted(value)


def project_config(spec: CloudSpec, plan: ClusterPlan) -> list[tuple[str, str]]:
    """Project-level config defaults (a stack's own ``pulumi config set`` overrides them). The network range is
    the blueprint's in-band pool, so the addresses the cloud assigns are the ones ``clusterctl inventory``
    accepts (it refuses an address outside that pool)."""
    region_key = PROVIDERS[spec.provider][0]
    config = [(region_key, _q(spec.region)), ("clusterctl:adminCidr", _q(spec.admin_cidr))]
    pool = cloud_network(plan)
    if pool is not None:
        config.append((NETWORK_KEY[spec.provider], _q(pool.cidr)))
    return config


def render(plan: ClusterPlan) -> dict[str, str]:
    try:
        spec = cloud_spec(plan)
    except ValueError as exc:  # a host name the provider cannot give an instance (rule CLOUD009, suppressed)
        error = RenderError(str(exc))
        error.hint = "rename the hosts (rule CLOUD009)"
        raise error from None
    if spec is None:
        return {}
    if spec.provider not in PROVIDERS:
        return {}
    head = header(plan)
    _, sdk, _ = PROVIDERS[spec.provider]
    description = plan.description or f"clusterctl cluster {spec.cluster}"
    return {
        "pulumi/Pulumi.yaml": render_template(
            "pulumi/Pulumi.yaml.j2", header=head, provider=spec.provider, project=_q(spec.cluster),
            description=_q(description), stack=spec.cluster, secrets=SECRETS, settings=PROVIDERS[spec.provider][2],
            optional=OPTIONAL.get(spec.provider, ()), config=project_config(spec, plan)),
        "pulumi/__main__.py": head + MAIN,
        "pulumi/requirements.txt": render_template("pulumi/requirements.txt.j2", header=head,
                                                   version=__version__, sdks=[sdk]),
        "pulumi/cluster.json": spec.to_json(),
    }
