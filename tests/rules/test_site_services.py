"""The services the controllers give the cluster from day 0: the provisioner's boot server DHCP hands out
(DHCP001) and the site's time servers (TIME001)."""

from __future__ import annotations

import pytest

from clusterctl.targets import RenderError
from clusterctl.targets.dhcp import render
from tests.helpers import codes, hits, lab, plan_of, shipped


def test_a_boot_server_without_an_address_is_refused_by_validate_and_render():
    data = shipped("lab-ha")
    data["site"]["provisioner"] = {"kind": "pxe", "server": "warewulf01"}
    (h,) = hits(data, "DHCP001")
    assert h.path == ("site", "provisioner", "server")
    assert h.message == ("site.provisioner.server 'warewulf01' is neither a host of the blueprint with an in-band "
                         "address nor an IPv4 address: DHCP cannot hand it out as the boot server (next-server)")
    with pytest.raises(RenderError):
        render(plan_of(data))
    data["site"]["provisioner"]["server"] = "head02"
    assert hits(data, "DHCP001") == []


def test_time001_warns_when_a_bare_metal_cluster_names_no_time_servers():
    data = lab()
    del data["site"]["time_servers"]
    (h,) = hits(data, "TIME001")
    assert h.path == ("site",)
    assert h.message == ("no site time servers: the cluster keeps its own time (the Slurm controllers serve their own "
                         "clock in orphan mode and drift from the world's)")
    data["site"]["time_servers"] = ["pool.ntp.org"]  # a public pool, written on purpose, is fine
    assert hits(data, "TIME001") == []
    assert "TIME001" not in codes(shipped("aws-p5"))  # a cloud follows the provider's time service
