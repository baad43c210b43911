"""Rules K8S003 (a ComputeDomain larger than an NVLink domain) and K8S004 (operator releases and the drivers they
support), on the GB200 NVL72 blueprint (8 racks of 18 trays, driver "570", DOCA "2.10.0") and the DGX H100
SuperPOD (driver "550", DOCA "2.7.0"). Expected versions are the component matrices' (clusterctl/catalog/
kubernetes_operators.yaml names the upstream file and commit of each list)."""

from __future__ import annotations

import pytest

from clusterctl.plan.kube_operators import doca_driver, gpu_driver
from clusterctl.rules.base import Severity
from tests.helpers import hits, plan_of, shipped


def gb200(**kubernetes) -> dict:
    data = shipped("gb200-nvl72-8rack")
    data["kubernetes"].update(kubernetes)
    return data


def test_compute_domain_within_an_nvl72_rack_is_quiet():
    for nodes in (None, 1, 18):
        data = gb200()
        if nodes is not None:
            data["kubernetes"]["compute_domain_nodes"] = nodes
        assert hits(data, "K8S003") == [], nodes


def test_compute_domain_larger_than_a_rack():
    (h,) = hits(gb200(compute_domain_nodes=19), "K8S003")
    assert h.severity is Severity.ERROR
    assert h.path == ("kubernetes", "compute_domain_nodes")
    assert h.message.startswith("kubernetes.compute_domain_nodes asks 19 nodes per ComputeDomain but NVLink "
                                "domain nvl01 has 18 trays")
    assert h.hint.startswith("set compute_domain_nodes to 18 or less")


def test_compute_domain_nodes_without_nvlink_domains_is_quiet():
    data = shipped("dgx-h100-superpod-4su")  # 8-GPU HGX nodes: no multi-node NVLink domain to exceed
    data["kubernetes"]["compute_domain_nodes"] = 4
    assert hits(data, "K8S003") == []


def test_supported_driver_and_doca_are_quiet():
    data = gb200(gpu_operator="26.3.3", network_operator="26.4.1")
    data["software"].update(driver="570", doca="3.4.1")  # 570.211.01 is in 26.3.3's matrix
    assert hits(data, "K8S004") == []


def test_unknown_release_is_an_error():
    (h,) = hits(gb200(network_operator="25.1.0"), "K8S004")
    assert h.severity is Severity.ERROR
    assert h.path == ("kubernetes", "network_operator")
    assert h.message == ("kubernetes.network_operator is Network Operator 25.1.0, a release clusterctl has no table "
                         "for (clusterctl/catalog/kubernetes_operators.yaml knows 26.4.1, 26.1.2, 25.10.0, 25.7.0)")


def test_driver_branch_the_gpu_operator_does_not_list():
    # GPU Operator 26.7.0's matrix: 610.57.04, 595.91.07, 580.173.02, 535.309.01 (no 570)
    data = gb200(gpu_operator="26.7.0")
    data["software"]["driver"] = "570"
    (h,) = [f for f in hits(data, "K8S004") if f.path == ("software", "driver")]
    assert h.severity is Severity.WARNING
    assert h.message == ("software.driver 570 is not in GPU Operator 26.7.0's component matrix (branches 610, 595, "
                         "580, 535): the ClusterPolicy leaves the driver to the host (driver.enabled: false)")


def test_doca_the_network_operator_ships_no_container_of_is_no_finding():
    # Network Operator 25.7.0 ships DOCA 3.1.0's doca-driver and the LTS 24.10 (DOCA 2.9.0) one; the GB200
    # blueprint pins DOCA 2.10.0, which stays the hosts' (the NicClusterPolicy says so; upstream states no limit on
    # a host's DOCA-OFED)
    data = gb200(gpu_operator="25.3.4", network_operator="25.7.0")
    data["software"].update(driver="570", doca="2.10.0")
    assert hits(data, "K8S004") == []


@pytest.mark.parametrize("release, driver, expected", [
    ("25.3.4", "570", "570.172.08"),      # 570.172.08, 570.158.01, 570.148.08 listed: the newest
    ("25.10.1", "550", "550.163.01"),
    ("25.10.1", "570.195.03", "570.195.03"),
    ("25.10.1", "570.86.15", None),       # a 570 driver the matrix does not list
    ("26.7.0", "580", "580.173.02"),
    ("26.7.0", "57", None),               # a branch is a whole number: 57 is not 570
])
def test_driver_version_the_cluster_policy_deploys(release, driver, expected):
    data = gb200(gpu_operator=release)
    data["software"]["driver"] = driver
    assert gpu_driver(plan_of(data)) == expected


@pytest.mark.parametrize("release, doca, expected", [
    ("26.4.1", "3.4.1", "doca3.4.1-26.04-1.1.0.0-1"),
    ("26.4.1", "3.2", "doca3.2.2-25.10-2.4.1.0-4"),   # the LTS container
    ("25.10.0", "2.9.0", "24.10-0.7.0.0-0"),
    ("25.10.0", "3.1.0", None),
])
def test_doca_driver_container_the_nic_cluster_policy_deploys(release, doca, expected):
    data = gb200(network_operator=release)
    data["software"]["doca"] = doca
    assert doca_driver(plan_of(data)) == expected
