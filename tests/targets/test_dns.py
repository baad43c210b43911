"""The dns target and the naming scheme it writes (plan/site_records.py): lab-ha's zones line by line, every rendered
zone of four shipped blueprints through BIND's named-checkzone, the rendered unbound.conf through unbound-checkconf,
reverse zones cut on octet and nibble boundaries, the management devices (PDUs, CDUs) addressed and counted."""

from __future__ import annotations

import ipaddress
import subprocess

import pytest

from clusterctl.plan.allocations import holder
from clusterctl.plan.site_records import dns_domain, management_devices, name_servers, site_records
from clusterctl.targets import RenderError
from clusterctl.targets import dns as target
from tests.conftest import require_tool
from tests.helpers import hits, lab, plan_of, rename_only_rack, shipped

CHECKED = ("lab-ha", "dgx-h100-superpod-1su", "gb200-nvl72-8rack", "hgx-h200-roce-1024")
"""named-checkzone runs on every zone of these (InfiniBand IPoIB and storage, CDUs, RoCE rails on /31s); the
100k-GPU blueprint's 87 zones take ~7 s more and add no kind of record these lack"""


@pytest.fixture(scope="module")
def lab_ha() -> dict[str, str]:
    return target.render(plan_of(shipped("lab-ha")))


def test_lab_ha_forward_zone(lab_ha):
    zone = lab_ha["dns/zones/lab-ha.internal.zone"].splitlines()
    assert zone[2:7] == ["$ORIGIN lab-ha.internal.", "$TTL 3600",
                         "@ IN SOA head01.lab-ha.internal. hostmaster.lab-ha.internal. "
                         "(376460994 3600 900 1209600 300)",
                         "@ IN NS head01.lab-ha.internal.", "@ IN NS head02.lab-ha.internal."]
    for line in ["gpu01 IN A 10.10.0.17", "login01 IN A 10.10.0.21", "gpu01-bmc IN A 10.11.0.17",
                 "head02-bmc IN A 10.11.0.20", "ib-leaf01 IN A 10.12.0.17", "mgmt-leaf01 IN A 10.12.0.18",
                 "lab01-pdu1 IN A 10.12.0.19", "lab01-pdu2 IN A 10.12.0.20", "ib-leaf01-lo IN A 10.13.0.17"]:
        assert line in zone
    assert len([x for x in zone if " IN A " in x]) == 16


def test_lab_ha_reverse_zones(lab_ha):
    assert sorted(p for p in lab_ha if p.endswith(".zone")) == [
        "dns/zones/0.10.10.in-addr.arpa.zone", "dns/zones/0.11.10.in-addr.arpa.zone",
        "dns/zones/0.12.10.in-addr.arpa.zone", "dns/zones/0.13.10.in-addr.arpa.zone",
        "dns/zones/lab-ha.internal.zone"]
    bmc = lab_ha["dns/zones/0.11.10.in-addr.arpa.zone"].splitlines()
    assert bmc[2] == "$ORIGIN 0.11.10.in-addr.arpa."
    assert bmc[7:] == ["17 IN PTR gpu01-bmc.lab-ha.internal.", "18 IN PTR gpu02-bmc.lab-ha.internal.",
                       "19 IN PTR head01-bmc.lab-ha.internal.", "20 IN PTR head02-bmc.lab-ha.internal.",
                       "21 IN PTR login01-bmc.lab-ha.internal."]
    assert "19 IN PTR lab01-pdu1.lab-ha.internal." in lab_ha["dns/zones/0.12.10.in-addr.arpa.zone"]


def test_lab_ha_role_data_and_unbound_conf(lab_ha):
    assert lab_ha["dns/dns.yml"].splitlines()[2:] == [
        "dns_domain: lab-ha.internal", "dns_name_servers:", "  head01: 10.10.0.19", "  head02: 10.10.0.20",
        "dns_zone_files:", "  - lab-ha.internal.zone", "  - 0.10.10.in-addr.arpa.zone", "  - 0.11.10.in-addr.arpa.zone",
        "  - 0.12.10.in-addr.arpa.zone", "  - 0.13.10.in-addr.arpa.zone"]
    conf = lab_ha["dns/unbound.conf"]
    for line in ["    access-control: 10.10.0.0/24 allow", "    access-control: 10.11.0.0/24 allow",
                 '    local-zone: "." refuse', '    local-zone: "lab-ha.internal." transparent',
                 '    name: "0.11.10.in-addr.arpa."', '    zonefile: "/etc/unbound/clusterctl/0.11.10.in-addr.arpa.zone"']:
        assert line + "\n" in conf
    assert "forward-zone" not in conf


def test_upstream_resolvers_and_own_domain():
    data = shipped("lab-ha")
    data["site"]["dns_servers"] = ["10.0.0.53", "10.0.1.53"]
    data["site"]["dns_domain"] = "gpu.example.com"
    out = target.render(plan_of(data))
    conf = out["dns/unbound.conf"]
    assert conf.endswith('forward-zone:\n    name: "."\n    forward-addr: 10.0.0.53\n    forward-addr: 10.0.1.53\n')
    assert "refuse" not in conf
    assert "gpu01 IN A 10.10.0.17" in out["dns/zones/gpu.example.com.zone"]
    assert "17 IN PTR gpu01.gpu.example.com." in out["dns/zones/0.10.10.in-addr.arpa.zone"]


@pytest.mark.parametrize("value", ["lab..internal", "Lab.internal", "lab.internal.", "-lab.internal", "a" * 64])
def test_domain_must_be_dns_labels(value):
    from clusterctl.errors import BlueprintError
    data = shipped("lab-ha")
    data["site"]["dns_domain"] = value
    with pytest.raises(BlueprintError):
        plan_of(data)


def test_default_domain_and_no_zones_without_controllers():
    assert dns_domain(plan_of(lab())) == "lab-2node.internal"
    data = lab()
    del data["slurm"]
    assert target.render(plan_of(data)) == {}  # nothing would serve them


@pytest.mark.parametrize("cidr,zones", [
    ("10.20.0.0/22", ["0.20.10.in-addr.arpa", "1.20.10.in-addr.arpa", "2.20.10.in-addr.arpa", "3.20.10.in-addr.arpa"]),
    ("10.20.4.64/26", ["4.20.10.in-addr.arpa"]),  # the enclosing /24: nothing is delegated (no RFC 2317 names)
    ("10.16.0.0/15", ["16.10.in-addr.arpa", "17.10.in-addr.arpa"]),
    ("10.0.0.0/8", ["10.in-addr.arpa"]),
])
def test_reverse_zones_on_octet_boundaries(cidr, zones):
    assert target.reverse_zone_names(ipaddress.ip_network(cidr)) == zones


def test_reverse_zones_on_nibble_boundaries():
    names = target.reverse_zone_names(ipaddress.ip_network("fd00:10::/62"))  # four /64 zones, 16 nibbles each
    assert names == [f"{k}.0.0.0.0.0.0.0.0.1.0.0.0.0.d.f.ip6.arpa" for k in range(4)]


def test_ipv6_pool_gets_aaaa_and_nibble_ptr():
    data = shipped("lab-ha")
    data["addressing"]["bmc"]["cidr"] = "fd00:11::/64"
    out = target.render(plan_of(data))
    assert "gpu01-bmc IN AAAA fd00:11::10" in out["dns/zones/lab-ha.internal.zone"]  # IPv6: 16 reserved, no network
    ptr = out["dns/zones/0.0.0.0.0.0.0.0.1.1.0.0.0.0.d.f.ip6.arpa.zone"]
    assert "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0 IN PTR gpu01-bmc.lab-ha.internal." in ptr
    assert "    interface: ::0\n" in out["dns/unbound.conf"]


def test_names_of_every_kind():
    """IPoIB and storage ports (InfiniBand SuperPOD), RoCE rails and storage on /31s (the host's odd side)."""
    ib = {r.name: r for r in site_records(plan_of(shipped("dgx-h100-superpod-1su")))}
    assert (ib["dgx001-ib0"].kind, ib["dgx001-ib7"].kind, ib["dgx001-stor1"].kind) == ("ipoib", "ipoib", "storage")
    roce = {r.name: r for r in site_records(plan_of(shipped("hgx-h200-roce-1024")))}
    first = next(r for r in roce.values() if r.kind == "rail")
    assert first.name.endswith("-rail0") and int(ipaddress.ip_address(first.address)) % 2 == 1
    assert ipaddress.ip_address(first.address) in ipaddress.ip_network("10.64.0.0/20")


def test_management_devices_pdus_and_cdus():
    plan = plan_of(shipped("gb200-nvl72-8rack"))
    devices = management_devices(plan)
    kinds = [d.kind for d in devices]
    # 58 switches; 42 PDUs: 8 NVL72 racks x 4 feeds + 3 network and 2 management racks x 2; the row's 3 CDUs
    assert (kinds.count("switch"), kinds.count("pdu"), kinds.count("cdu")) == (58, 42, 3)
    assert [(d.name, d.address, d.owner) for d in devices[-3:]] == [("cdu-a", "10.42.0.117", "cdu-a"),
                                                                    ("cdu-b", "10.42.0.118", "cdu-b"),
                                                                    ("cdu-c", "10.42.0.119", "cdu-c")]
    assert holder(plan, ipaddress.ip_address("10.42.0.117")).what == "CDU cdu-a (management port)"
    assert holder(plan, ipaddress.ip_address("10.42.0.116")).what == "PDU mgmt02-pdu2 of rack mgmt02 (management port)"
    mgmt = next(p for p in plan.addresses if p.role == "mgmt")
    assert (mgmt.needed, mgmt.device_offset) == (103, 58)
    assert [(s.name, s.address) for s in name_servers(plan)] == [("head01", "10.40.0.161"), ("head02", "10.40.0.162")]


def test_a_pool_too_small_for_the_pdus_is_addr001():
    data = shipped("lab-ha")
    data["addressing"]["mgmt"] = {"cidr": "10.12.0.0/29", "role": "mgmt", "reserved": 2}
    assert hits(data, "ADDR001") == []  # 4 usable: two switches, two PDUs
    data["addressing"]["mgmt"]["reserved"] = 3
    (h,) = hits(data, "ADDR001")
    assert h.message == ("mgmt 10.12.0.0/29 has 3 usable addresses (8 - network/broadcast - 3 reserved) for 4 "
                         "management ports (hosts, switches, rack PDUs and CDUs) (1 short)")


def test_render_refuses_what_name009_reports():
    data = shipped("lab-2node")  # no inventory naming the hosts
    data["node_groups"][0]["hostnames"] = "g" + "x" * 58 + "[01-02]"  # 61 characters: a label; with -bmc 65
    assert {h.path for h in hits(data, "NAME009")} == {("node_groups", 0, "hostnames")}
    with pytest.raises(RenderError, match=f"g{'x' * 58}01-bmc"):
        target.render(plan_of(data))


def zone_files(name: str) -> dict[str, str]:
    return {path.rsplit("/", 1)[1][:-len(".zone")]: text
            for path, text in target.render(plan_of(shipped(name))).items() if path.endswith(".zone")}


@pytest.mark.parametrize("name", CHECKED)
def test_named_checkzone_accepts_every_zone(name, tmp_path):
    checkzone = require_tool("named-checkzone", hint="apt-get install -y --no-install-recommends bind9-utils")
    for zone, text in zone_files(name).items():
        path = tmp_path / f"{zone}.zone"
        path.write_text(text)
        done = subprocess.run([checkzone, "-k", "fail", "-n", "fail", "-i", "full", zone, str(path)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.rstrip().endswith("OK")


def test_unbound_checkconf_accepts_the_rendered_conf(lab_ha, tmp_path):
    checkconf = require_tool("unbound-checkconf", hint="apt-get install -y --no-install-recommends unbound")
    conf = lab_ha["dns/unbound.conf"].replace(target.NODE_ZONE_DIR, str(tmp_path))
    for path, text in lab_ha.items():
        if path.endswith(".zone"):
            (tmp_path / path.rsplit("/", 1)[1]).write_text(text)
    (tmp_path / "unbound.conf").write_text(conf + f'\nserver:\n    chroot: ""\n    username: ""\n'
                                                  f'    directory: "{tmp_path}"\n')
    done = subprocess.run([checkconf, str(tmp_path / "unbound.conf")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
