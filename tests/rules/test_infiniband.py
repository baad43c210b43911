"""InfiniBand rules: each triggered by a small change to the lab blueprint, quiet on the original."""

from __future__ import annotations

from tests.helpers import hits, lab
from tests.rules.test_fabric import superpod


def without_sm(data):
    del data["fabrics"][0]["subnet_manager"]
    return data


def test_ib_fabric_without_a_subnet_manager_warns_at_the_fabric():
    (h,) = hits(without_sm(lab()), "IB001")
    assert h.path == ("fabrics", 0, "name")
    assert h.message == ("InfiniBand fabric ib (16 endpoints) names no subnet manager: its ports stay INIT and "
                         "nothing is forwarded until one runs")
    assert "switches: ib-leaf01" in h.hint and "kind: ufm" in h.hint


def test_a_fabric_too_big_for_an_embedded_sm_is_not_told_to_use_one():
    # 320 DGX x 8 rails = 2,560 ports: over the 2,048 nodes MLNX-OS's embedded SM manages
    (h,) = hits(superpod(320, 3), "IB001")
    assert "switches:" not in h.hint and "kind: ufm" in h.hint


def test_a_placed_subnet_manager_is_quiet():
    assert hits(lab(), "IB001") == [] and hits(lab(), "IB002") == [] and hits(lab(), "IB003") == []


def test_opensm_on_a_host_without_a_port_on_the_fabric():
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"hosts": "head01"}
    (h,) = hits(data, "IB002")
    assert h.path == ("fabrics", 0, "subnet_manager", "hosts")
    assert h.message == "subnet manager head01 are not hosts of the plan with a port on fabric ib"


def test_embedded_sm_on_a_switch_of_another_fabric():
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"switches": "mgmt-leaf01"}
    (h,) = hits(data, "IB002")
    assert h.path == ("fabrics", 0, "subnet_manager", "switches")
    assert h.message == "subnet manager mgmt-leaf01 are not switches of fabric ib"


def test_subnet_manager_needs_hosts_or_switches():
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"kind": "opensm"}
    (h,) = hits(data, "IB002")
    assert h.message == "the subnet manager of fabric ib names neither hosts nor switches"
    assert hits(data, "IB001") == []  # declared, only misplaced


def test_ufm_on_switches_is_misplaced():
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"kind": "ufm", "switches": "ib-leaf01"}
    (h,) = hits(data, "IB002")
    assert h.path == ("fabrics", 0, "subnet_manager", "switches")
    assert h.message == "fabric ib: UFM runs on its own appliances, not on switches"


def test_ufm_appliances_need_extra_endpoints():
    data = lab()
    data["fabrics"][0]["subnet_manager"] = {"kind": "ufm", "hosts": "ufm[01-02]"}
    (h,) = hits(data, "IB003")
    assert h.path == ("fabrics", 0, "subnet_manager", "hosts")
    assert h.message == "fabric ib has 2 UFM appliance(s) of one port each but 0 extra endpoint(s) on its leaves"
    assert h.hint == "set extra_endpoints to at least 2"
    data["fabrics"][0]["extra_endpoints"] = 2
    assert hits(data, "IB003") == []


def test_full_leaves_with_appliances_get_a_hint_that_does_the_arithmetic():
    # 256 DGX in 8 full SUs of 32 fill every leaf port; 4 UFM ports more cannot fit, and su_nodes is already 32
    data = superpod(256, 3, extra_endpoints=4, subnet_manager={"kind": "ufm", "hosts": "ufm[01-04]"})
    (h,) = hits(data, "FABRIC001")
    assert h.message == "leaf compute-leaf61 (qm9700) needs 33 downlinks + 33 uplinks = 66 ports of 64"
    assert "lower su_nodes to 32" not in h.hint and "lower su_nodes to 31" in h.hint
    assert "leave the 4 extra endpoint(s) room" in h.hint


def test_embedded_sm_over_its_size_limit():
    data = superpod(320, 3, subnet_manager={"switches": "compute-spine01"})
    (h,) = hits(data, "IB002")
    assert h.path == ("fabrics", 0, "subnet_manager", "switches")
    assert h.message == ("fabric compute has 2,776 InfiniBand nodes (2,560 ports, 216 switches); a switch's "
                         "embedded SM manages at most 2,048")
