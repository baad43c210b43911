"""Host networking rules: the OS names of the ports (NET001, NET002) and LNet's storage interfaces (STORAGE012),
on the lab and DGX blueprints changed one thing at a time."""

from __future__ import annotations

from tests.helpers import codes, hits, lab, shipped


def test_net001_compute_rdma_names_unknown():
    data = lab()
    assert hits(data, "NET001") == []  # the lab declares its HGX node type's interfaces
    del data["node_types"]["hgx"]["interfaces"]
    (h,) = hits(data, "NET001")
    assert h.path == ("node_types", "hgx")
    assert h.message == ("node type hgx (hgx-h100-8gpu) has 8 compute RDMA NICs whose device names neither the "
                         "catalog nor the blueprint gives: NCCL_IB_HCA is not written and the RoCE rails cannot be "
                         "addressed")
    assert "node_types.hgx.interfaces.compute" in h.hint


def test_net001_is_quiet_with_the_catalogs_vendor_table_or_the_older_override():
    data = lab()
    data["node_types"]["hgx"] = {"server": "dgx-h100"}  # the DGX H100 user guide names the compute ports
    assert "NET001" not in codes(data)
    data["node_types"]["hgx"] = {"server": "hgx-h100-8gpu", "nccl": {"ib_hca": [f"mlx5_{k}" for k in range(8)]}}
    assert "NET001" not in codes(data)


def test_net002_declared_names_must_cover_the_ports():
    data = lab()
    assert hits(data, "NET002") == []
    data["node_types"]["hgx"]["interfaces"]["compute"].pop()
    (h,) = hits(data, "NET002")
    assert h.path == ("node_types", "hgx", "interfaces", "compute")
    assert h.message == "node type hgx declares 7 compute port name(s) but has 8 compute port(s)"
    data = lab()
    data["node_types"]["hgx"]["interfaces"]["storage"] = [{"netdev": "ibp41s0f0"}]  # a dual-port card: 2 ports
    assert hits(data, "NET002")[0].message == "node type hgx declares 1 storage port name(s) but has 2 storage port(s)"


def test_storage012_o2ib_without_storage_interface_names():
    data = shipped("dgx-h100-superpod-1su")
    assert hits(data, "STORAGE012") == []  # its dgx node type declares the storage ports' names
    del data["node_types"]["dgx"]["interfaces"]
    (h,) = hits(data, "STORAGE012")
    assert h.message == (
        "Lustre tier lustre is reached over o2ib (10.31.1.250@o2ib,10.20.3.250@tcp:/lustre) but the storage ports of "
        "node type dgx (group dgx) have no interface names: LNet's o2ib0 would bind to ib0, which Ubuntu's "
        "interface naming does not create")
    data["node_types"]["dgx"]["storage_interfaces"] = ["ibp41s0f0", "ibp170s0f0"]  # the older field counts too
    assert "STORAGE012" not in codes(data)
