"""cloud_node target: the programs that run on a cloud cluster's instances, for blueprints with a ``cloud:`` section.

    cloud/bin/clusterctl-bootstrap          first boot: host name, config object, secrets, local converge
                                            (clusterctl/cloud/node/bootstrap.py)
    cloud/bin/clusterctl-power-save         Slurm's Resume/Suspend/ResumeFailProgram for elastic node groups
                                            (clusterctl/cloud/node/power_save.py)
    cloud/bin/clusterctl_cloud_config.py    the one generator of cloud-config user data
                                            (clusterctl/cloud/node/cloud_config.py)

Each is the package's file, verbatim (no generated-file header: the user data carries the same bytes, and
the tests run these files), so a node runs exactly the code the tests ran. The two programs are written
executable (EXECUTABLE). The Pulumi programs put cloud/ into the configuration object; the role
slurm_power_save installs the three on the controllers (docs/cloud.md, "The programs on the instances").
"""

from __future__ import annotations

from importlib import resources

from clusterctl.plan.model import ClusterPlan

PROGRAMS = {
    "cloud/bin/clusterctl-bootstrap": "bootstrap.py",
    "cloud/bin/clusterctl-power-save": "power_save.py",
    "cloud/bin/clusterctl_cloud_config.py": "cloud_config.py",
}
"""rendered path -> module of clusterctl.cloud.node"""
EXECUTABLE = frozenset({"cloud/bin/clusterctl-bootstrap", "cloud/bin/clusterctl-power-save"})


def program(module: str) -> str:
    return resources.files("clusterctl.cloud.node").joinpath(module).read_text()


def render(plan: ClusterPlan) -> dict[str, str]:
    if plan.cloud is None:
        return {}
    return {path: program(module) for path, module in PROGRAMS.items()}
