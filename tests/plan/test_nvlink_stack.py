"""Which NVLink software each node group runs (clusterctl.plan.nvlink.nvlink_stack): Fabric Manager on NVSwitch
baseboards, NVLSM with it on Blackwell HGX (fourth-generation NVSwitch, NVIDIA Fabric Manager user guide), IMEX
and no Fabric Manager on NVL72 trays; the node_health fabric checks follow."""

from __future__ import annotations

import pytest

from clusterctl.plan.nvlink import NvlinkStack, nvlink_domains, nvlink_stack
from tests.helpers import lab, plan_of, shipped


def stack_of(data: dict, group: str) -> NvlinkStack:
    return nvlink_stack(plan_of(data).group(group))


@pytest.mark.parametrize("server, expected", [
    ("hgx-h100-8gpu", NvlinkStack(fabric_manager=True, nvlsm=False, imex=False, fabric_state=True, clique=False)),
    ("hgx-h200-8gpu", NvlinkStack(fabric_manager=True, nvlsm=False, imex=False, fabric_state=True, clique=False)),
    ("hgx-b200-8gpu", NvlinkStack(fabric_manager=True, nvlsm=True, imex=False, fabric_state=True, clique=False)),
    ("dgx-b200", NvlinkStack(fabric_manager=True, nvlsm=True, imex=False, fabric_state=True, clique=False)),
    ("hgx-b300-8gpu", NvlinkStack(fabric_manager=True, nvlsm=True, imex=False, fabric_state=True, clique=False)),
    ("dgx-a100", NvlinkStack(fabric_manager=True, nvlsm=False, imex=False, fabric_state=False, clique=False)),
    ("gb200-nvl72-tray", NvlinkStack(fabric_manager=False, nvlsm=False, imex=True, fabric_state=True, clique=True)),
    ("gb300-nvl72-tray", NvlinkStack(fabric_manager=False, nvlsm=False, imex=True, fabric_state=True, clique=True)),
])
def test_each_server_runs_its_vendors_nvlink_stack(server, expected):
    data = lab()
    data["node_types"]["hgx"] = {"server": server}
    if server.endswith("-tray"):  # 18 trays fill one NVL72 domain
        data["node_groups"][0].update(count=18, hostnames="gpu[01-18]")
    assert stack_of(data, "gpu") == expected


def test_cpu_nodes_and_cloud_vms():
    assert stack_of(lab(), "head") == NvlinkStack(False, False, False, False, False)
    # a p5 VM (full passthrough) runs Fabric Manager in the guest; its fabric state is not checked
    assert stack_of(shipped("aws-p5"), "gpu") == NvlinkStack(True, False, False, False, False)


def test_nvl72_domains_are_18_trays_each():
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    domains = nvlink_domains(plan)
    assert len(domains) == 8
    name, g, hosts = domains[0]
    assert (name, g.name, len(hosts)) == ("nvlink_gb200_1", "gb200", 18)
