"""plan/interfaces.py: every host port's role, index, netdev and RDMA device, from the vendor tables the catalog
copies or from the blueprint, and never a guessed name in any rendered file."""

from __future__ import annotations

import pytest

from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.plan.interfaces import HostPort, compute_ports, host_ports, role_ports
from clusterctl.resources import shipped_blueprints
from clusterctl.targets import render_targets
from tests.helpers import BLUEPRINTS, plan_of, shipped

DGX_H100_SOURCE = "catalog server dgx-h100 (DGX H100/H200 User Guide, 1.2.3 Network Modules, Table 6)"


def test_dgx_h100_compute_ports_follow_the_user_guides_network_modules_table():
    plan = plan_of(shipped("dgx-h100-superpod-1su"))
    ports = compute_ports(plan, plan.node_types["dgx"])
    # DGX H100/H200 User Guide, Table 6 "Network Modules", in GPU order (GPU 0 = OSFP4P2 ... GPU 7 = OSFP1P1)
    assert [(p.role, p.index, p.netdev, p.rdma) for p in ports] == [
        ("compute", 0, "ibp24s0", "mlx5_0"), ("compute", 1, "ibp64s0", "mlx5_3"),
        ("compute", 2, "ibp79s0", "mlx5_4"), ("compute", 3, "ibp94s0", "mlx5_5"),
        ("compute", 4, "ibp154s0", "mlx5_6"), ("compute", 5, "ibp192s0", "mlx5_9"),
        ("compute", 6, "ibp206s0", "mlx5_10"), ("compute", 7, "ibp220s0", "mlx5_11")]
    assert {p.source for p in ports} == {DGX_H100_SOURCE}


def test_dgx_h100_storage_and_inband_names_are_not_invented():
    data = shipped("dgx-h100-superpod-1su")
    del data["node_types"]["dgx"]["interfaces"]  # the user guide's table names the compute ports only
    plan = plan_of(data)
    ports = role_ports(plan, plan.node_types["dgx"], "storage") + role_ports(plan, plan.node_types["dgx"], "inband")
    assert ports == (HostPort("storage", 0, None, None, ""), HostPort("storage", 1, None, None, ""),
                     HostPort("inband", 0, None, None, ""), HostPort("inband", 1, None, None, ""))


def test_gb200_tray_compute_ports_carry_the_tray_tables_rdma_devices_only():
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    ports = compute_ports(plan, plan.node_types["tray"])
    # Mission Control GB200 north-south guide, compute tray table: Left/Right Bay OSFP P3/P4
    assert [(p.netdev, p.rdma) for p in ports] == [(None, "mlx5_0"), (None, "mlx5_1"), (None, "mlx5_4"),
                                                    (None, "mlx5_5")]


def test_an_infiniband_netdev_name_is_dropped_on_an_ethernet_compute_fabric():
    data = shipped("hgx-h200-roce-1024")
    data["node_types"]["hgx"] = {"server": "dgx-h200"}  # the DGX table's ibp* names are the InfiniBand mode's
    plan = plan_of(data)
    ports = compute_ports(plan, plan.node_types["hgx"])
    assert [(p.netdev, p.rdma) for p in ports][:2] == [(None, "mlx5_0"), (None, "mlx5_3")]


def test_the_blueprint_declares_what_no_vendor_table_gives():
    plan = plan_of(shipped("hgx-h200-roce-1024"))
    ports = host_ports(plan, plan.node_types["hgx"])
    assert [(p.role, p.index, p.netdev) for p in ports][7:] == [
        ("compute", 7, "enp220s0np0"), ("storage", 0, "enp41s0f0np0"), ("storage", 1, "enp41s0f1np1"),
        ("inband", 0, "enp170s0f0np0"), ("inband", 1, "enp170s0f1np1")]
    assert {p.source for p in ports} == {"node_types.hgx.interfaces.compute", "node_types.hgx.interfaces.storage",
                                         "node_types.hgx.interfaces.inband"}


def test_cloud_instances_have_no_host_ports():
    plan = plan_of(shipped("aws-p5"))
    assert all(host_ports(plan, nt) == () for nt in plan.node_types.values())


@pytest.mark.parametrize("name", shipped_blueprints())
def test_no_rendered_file_says_assumed(name):
    files = render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")))
    assert [path for path, text in files.items() if "ASSUMED" in text] == []


# --- LNet (plan/lustre.py): interface-qualified networks from the storage ports' names ------------------------

@pytest.mark.parametrize("name,group,networks", [
    ("dgx-h100-superpod-1su", "dgx", "o2ib0(ibp41s0f0,ibp170s0f0)"),
    ("dgx-h100-superpod-4su", "dgx", "o2ib0(ibp41s0f0,ibp170s0f0)"),
    ("gb200-nvl72-8rack", "gb200", "o2ib0(enP6p3s0f0np0,enP6p3s0f1np1)"),  # o2ib over the RoCE storage ports
    ("frontier-3tier-100k", "gpu", "o2ib0(enp41s0f0np0,enp41s0f1np1)"),
])
def test_lnet_networks_of_every_shipped_blueprint_mounting_lustre_over_o2ib(name, group, networks):
    files = render_targets(expand(load_blueprint(BLUEPRINTS / f"{name}.yaml")), ["ansible"])
    assert f'storage_clients_lnet_networks: "{networks}"\n' in files[f"ansible/group_vars/{group}.yml"]


def test_lnet_tcp_is_qualified_only_when_its_nid_is_on_the_storage_pool():
    data = shipped("hgx-h200-roce-1024")
    data["storage"][0] = {"name": "lustre", "tier": "parallel", "filesystem": "lustre", "mount": "/lustre",
                          "capacity_tb": 4000, "read_gb_per_s": 500, "write_gb_per_s": 250, "checkpoint": True,
                          "servers": "10.63.3.250@tcp:/lustre"}  # in the storage pool 10.63.0.0/22
    files = render_targets(plan_of(data), ["ansible"])
    assert 'storage_clients_lnet_networks: "tcp0(enp41s0f0np0,enp41s0f1np1)"\n' in files["ansible/group_vars/gpu.yml"]
    data["storage"][0]["servers"] = "10.60.3.250@tcp:/lustre"  # the in-band pool: LNet's default tcp0
    files = render_targets(plan_of(data), ["ansible"])
    assert "storage_clients_lnet_networks" not in files["ansible/group_vars/gpu.yml"]
